// The IFDS bodies' encodings and the calls bitmap, checked on their own (the differential tests
// check the solver they make up).
#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "sluice/kernels/bodies/ifds.h"

namespace sluice::kernels::ifds {
namespace {

KernelArgs WithCalls(std::vector<uint32_t>& words) {
  KernelArgs a{};
  a.binding[kCalls] = BindingView{reinterpret_cast<uint8_t*>(words.data()), 4 * words.size()};
  return a;
}

TEST(IfdsBodiesTest, NoKeyOrGroupIsEmptySoZeroedBuffersNeedNoFill) {
  EXPECT_NE(Pack(0, 0, 0), kEmpty);
  EXPECT_NE(PackPe(0, 0, 0), kEmpty);
  EXPECT_NE(Group(0, 0), kEmpty);
  // The tag takes no field's bits.
  const uint64_t key = Pack(kMaxId, 0xffff, 0xfffe);
  EXPECT_EQ(Top(key), kMaxId);
  EXPECT_EQ(Mid(key), 0xffffu);
  EXPECT_EQ(Low(key), 0xfffeu);
  EXPECT_EQ(Top(Pack(0, 0, 0)), 0u);
}

TEST(IfdsBodiesTest, PopCountAndLowestBitCountAsABitAtATimeDoes) {
  std::mt19937 random(20261206);
  std::vector<uint32_t> words = {0u, 1u, 0x80000000u, 0xffffffffu, 0x55555555u, 0xaaaaaaaau,
                                 0x0f0f0f0fu, 0x01010101u};
  for (int k = 0; k < 32; ++k) words.push_back(uint32_t{1} << k);
  for (int k = 0; k < 1000; ++k) words.push_back(static_cast<uint32_t>(random()));
  for (const uint32_t word : words) {
    uint32_t bits = 0, lowest = 32;
    for (uint32_t b = 0; b < 32; ++b) {
      if ((word >> b) & 1) {
        ++bits;
        lowest = std::min(lowest, b);
      }
    }
    EXPECT_EQ(PopCount(word), bits) << word;
    if (word != 0) {
      EXPECT_EQ(LowestBit(word), lowest) << word;
    }
  }
}

TEST(IfdsBodiesTest, AKeysGroupIsItsTopAndMidAsAGroup) {
  const Graph no_graph{};
  for (int t : {kEs, kSum, kPec}) {
    EXPECT_EQ(GroupOfKey(no_graph, t, Pack(12345, 7, 9)), Group(12345, 7)) << t;
    EXPECT_EQ(GroupOfKey(no_graph, t, Pack(0, 0, 0)), Group(0, 0)) << t;
  }
}

TEST(IfdsBodiesTest, EachCallIsClaimedOnceAndClaimsAreIndependent) {
  constexpr uint32_t kFacts = 40;
  std::vector<uint32_t> words((3 * kFacts + 31) / 32, 0);
  const KernelArgs a = WithCalls(words);
  for (uint32_t e = 0; e < 3; ++e) {
    for (uint32_t d = 0; d < kFacts; ++d) {
      EXPECT_TRUE(ClaimCall(a, kFacts, e, d)) << e << " " << d;
      EXPECT_FALSE(ClaimCall(a, kFacts, e, d)) << e << " " << d;
    }
  }
  for (uint32_t word : words) EXPECT_NE(word, 0u);
}

TEST(IfdsBodiesTest, CallsPastTheBitmapAreMadeEveryTime) {
  constexpr uint32_t kFacts = 40;
  std::vector<uint32_t> words(1, 0);  // bits 0 to 31: edge 0, facts 0 to 31
  const KernelArgs a = WithCalls(words);
  EXPECT_TRUE(ClaimCall(a, kFacts, 0, 31));
  EXPECT_FALSE(ClaimCall(a, kFacts, 0, 31));
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(ClaimCall(a, kFacts, 0, 32));
    EXPECT_TRUE(ClaimCall(a, kFacts, 1, 0));
    EXPECT_TRUE(ClaimCall(a, kFacts, kMaxId, 0xffff)) << "no overflow of the bit index";
  }
  std::vector<uint32_t> none;
  const KernelArgs empty = WithCalls(none);
  EXPECT_TRUE(ClaimCall(empty, kFacts, 0, 0));
  EXPECT_TRUE(ClaimCall(empty, kFacts, 0, 0));
}

// Runs ifds_results' passes, then ifds_results_list's, on one index at a time (as a GPU's
// threads do), over the window `params` of `segment0` (the other segments empty); with
// `by_ranges` the marking pass runs as the CPU launcher runs it, in ranges of `range` indexes.
struct ResultsRun {
  std::vector<uint32_t> marks, counts, state = {0, 0};
  std::vector<uint64_t> out;

  ResultsRun(std::vector<uint64_t>& segment0, const std::vector<uint64_t>& params,
             bool by_ranges = false, uint64_t range = 1000) {
    const uint64_t words = params[ResultWindow::kNodes] * params[ResultWindow::kWordsPerNode];
    const uint64_t blocks = ResultWindow::Blocks(words);
    marks.assign(words, 0);
    counts.assign(blocks + 1, 0);
    KernelArgs a{};
    a.binding[Results::kSegment0] =
        BindingView{reinterpret_cast<uint8_t*>(segment0.data()), 8 * segment0.size()};
    a.binding[Results::kMarks] = BindingView{reinterpret_cast<uint8_t*>(marks.data()), 4 * words};
    a.binding[Results::kCounts] =
        BindingView{reinterpret_cast<uint8_t*>(counts.data()), 4 * counts.size()};
    a.binding[Results::kResultState] = BindingView{reinterpret_cast<uint8_t*>(state.data()), 8};
    for (size_t i = 0; i < params.size(); ++i) a.param[i] = params[i];
    if (by_ranges) {
      for (uint64_t t = 0; t < segment0.size(); t += range) {
        ResultsPass<0>::RunRange(a, t, std::min<uint64_t>(t + range, segment0.size()),
                                 segment0.size());
      }
    } else {
      for (uint64_t t = 0; t < segment0.size(); ++t) ResultsPass<0>::Run(a, t, segment0.size());
    }
    for (uint64_t b = 0; b < blocks; ++b) ResultsCount::Run(a, b, blocks);
    ResultsOffsets::Run(a, 0, 1);
    out.assign(state[1], 0);
    KernelArgs l{};
    l.binding[ResultsList::kMarks] = a.binding[Results::kMarks];
    l.binding[ResultsList::kCounts] = a.binding[Results::kCounts];
    l.binding[ResultsList::kOut] =
        BindingView{reinterpret_cast<uint8_t*>(out.data()), 8 * out.size()};
    for (size_t i = 0; i < params.size(); ++i) l.param[i] = params[i];
    for (uint64_t b = 0; b < blocks; ++b) ResultsList::Run(l, b, blocks);
  }
};

class IfdsResultsTest : public ::testing::TestWithParam<bool> {};

TEST_P(IfdsResultsTest, ResultsAreTheWindowsDistinctPairsInOrder) {
  // Rows of 3 words (facts up to 95), a window of nodes 10 to 1509: 4500 words, three blocks.
  std::vector<uint64_t> segment = {kEmpty,
                                   PackPe(1, 12, 95),
                                   PackPe(2, 12, 95),  // the same pair again
                                   PackPe(0, 10, 0),
                                   PackPe(0, 9, 5),     // before the window
                                   PackPe(0, 1510, 5),  // after it
                                   PackPe(3, 1509, 64),
                                   PackPe(0, 700, 31),
                                   PackPe(0, 700, 32),
                                   kEmpty};
  const ResultsRun run(segment, {10, 1500, 3}, GetParam(), 3);
  EXPECT_EQ(run.state[0], 0u) << "no fact past its row";
  EXPECT_EQ(run.state[1], 5u);
  EXPECT_EQ(run.counts.back(), 5u);
  const std::vector<uint64_t> expected = {10u << 16, (12u << 16) | 95, (700u << 16) | 31,
                                          (700u << 16) | 32, (1509u << 16) | 64};
  EXPECT_EQ(run.out, expected);
}

TEST_P(IfdsResultsTest, AFactPastItsRowIsReportedNotMarked) {
  std::vector<uint64_t> segment = {PackPe(0, 3, 32), PackPe(0, 4, 1)};  // rows of one word
  const ResultsRun run(segment, {0, 8, 1}, GetParam());
  EXPECT_EQ(run.state[0], kStatusIndexOutOfBounds);
  EXPECT_EQ(run.state[1], 1u);
  EXPECT_EQ(run.out, std::vector<uint64_t>{(4u << 16) | 1});
}

// The CPU's ranges mark each key many keys after they read it (its word fetched first): they
// must mark what the threads mark, and report what they report, whatever the ranges' edges.
TEST_P(IfdsResultsTest, ManyKeysInRangesMarkWhatOneThreadAKeyMarks) {
  std::mt19937_64 random(20261206);
  std::vector<uint64_t> segment(20000, kEmpty);
  for (uint64_t& key : segment) {
    if (random() % 4 == 0) continue;
    // Nodes 0 to 2999, the window 500 to 2499; facts up to 70, rows of 2 words (64 facts).
    key = PackPe(random() % 40, random() % 3000, random() % 71);
  }
  for (const uint64_t range : {1, 7, 31, 32, 33, 4096, 20000}) {
    const ResultsRun threads(segment, {500, 2000, 2});
    const ResultsRun ranges(segment, {500, 2000, 2}, GetParam(), range);
    EXPECT_EQ(ranges.state, threads.state) << range;
    EXPECT_EQ(ranges.marks, threads.marks) << range;
    EXPECT_EQ(ranges.out, threads.out) << range;
    EXPECT_EQ(threads.state[0], kStatusIndexOutOfBounds) << "facts 64 to 70 do not fit";
    EXPECT_GT(threads.out.size(), 5000u);
  }
}

INSTANTIATE_TEST_SUITE_P(ThreadsOrRanges, IfdsResultsTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "Ranges" : "Threads";
                         });

}  // namespace
}  // namespace sluice::kernels::ifds
