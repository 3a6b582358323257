// The IFDS bodies' encodings and the calls bitmap, checked on their own (the differential tests
// check the solver they make up).
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "sluice/base/interrupt.h"
#include "sluice/kernels/bodies/ifds.h"
#include "sluice/kernels/bodies/ifds_ranges.h"

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

// A launch on the CPU device whose interrupt has stopped (a cancelled request), or never
// does, as its threads see it.
struct Launch {
  explicit Launch(bool stopped) : cancelled(stopped) {}
  std::atomic<bool> cancelled;
  Interrupt interrupt{nullptr, &cancelled};
  CpuLaunch launch{&interrupt};
  // `a`, its threads part of this launch.
  KernelArgs Of(KernelArgs a) const {
    a.cpu_launch = &launch;
    a.looks_to_poll = 1;
    a.stopped = false;
    return a;
  }
};

// A graph of one node and one procedure whose data makes a thread loop: `intra` edges from the
// node to itself and `calls` call edges at it, all with flow 0, which has `gens` gens of the
// zero fact and `pairs` pairs (1, 0); two facts.
struct LoopingGraph {
  std::vector<uint32_t> words;
  LoopingGraph(uint32_t intra, uint32_t calls, uint32_t gens, uint32_t pairs) {
    std::vector<std::vector<uint32_t>> sections(GraphLayout::kNumSections);
    sections[GraphLayout::kIntraOffsets] = {0, intra};
    sections[GraphLayout::kIntraEdges].assign(2 * size_t{intra}, 0);
    sections[GraphLayout::kCallOffsets] = {0, calls};
    for (uint32_t e = 0; e < calls; ++e) {
      sections[GraphLayout::kCallEdges].insert(sections[GraphLayout::kCallEdges].end(),
                                               {0, 0, 0, 0, 0});
    }
    sections[GraphLayout::kProcStart] = {0};
    sections[GraphLayout::kExitProc] = {kNone};
    sections[GraphLayout::kReturnSite] = {0};
    sections[GraphLayout::kFlowHeaders] = {0, 0, 0, 0, gens, pairs};
    sections[GraphLayout::kGens].assign(gens, 0);
    sections[GraphLayout::kPairs].assign(pairs, GraphLayout::PackPair(1, 0));
    words.assign(GraphLayout::kHeaderWords, 0);
    words[GraphLayout::kMagic] = GraphLayout::kMagicValue;
    words[GraphLayout::kVersion] = GraphLayout::kVersionValue;
    words[GraphLayout::kFacts] = 2;
    words[GraphLayout::kNodes] = 1;
    words[GraphLayout::kProcedures] = 1;
    words[GraphLayout::kFlows] = 1;
    words[GraphLayout::kCallEdgeCount] = calls;
    words[GraphLayout::kSectionCount] = GraphLayout::kNumSections;
    for (uint32_t k = 0; k < GraphLayout::kNumSections; ++k) {
      words[GraphLayout::kSectionTable + 2 * k] = static_cast<uint32_t>(words.size());
      words[GraphLayout::kSectionTable + 2 * k + 1] = static_cast<uint32_t>(sections[k].size());
      words.insert(words.end(), sections[k].begin(), sections[k].end());
    }
  }
};

// The IFDS bodies' buffers for one path edge (0, 0, 0) in the current delta of PE.
struct LoopingBuffers {
  LoopingGraph graph;
  std::vector<uint32_t> state = std::vector<uint32_t>(State::kSlots, 0);
  std::vector<uint64_t> pe_list = {PackPe(0, 0, 0), kEmpty};
  KernelArgs args{};
  explicit LoopingBuffers(LoopingGraph g) : graph(std::move(g)) {
    args.binding[kGraph] =
        BindingView{reinterpret_cast<uint8_t*>(graph.words.data()), 4 * graph.words.size()};
    args.binding[kState] =
        BindingView{reinterpret_cast<uint8_t*>(state.data()), 4 * state.size()};
    args.binding[static_cast<int>(kDeltas) + kPe] =
        BindingView{reinterpret_cast<uint8_t*>(pe_list.data()), 8 * pe_list.size()};
  }
};

constexpr uint32_t kLong = 1 << 17;  // steps a loop takes if nothing stops it

TEST(IfdsBodiesStopTest, AFlowsGensAndPairsStopOnceTheLaunchHasStopped) {
  for (const bool stopped : {false, true}) {
    SCOPED_TRACE(stopped);
    LoopingBuffers b(LoopingGraph(0, 0, kLong, kLong));
    const Launch launch(stopped);
    const KernelArgs a = launch.Of(b.args);
    const Graph g = Graph::Open(a);
    ASSERT_TRUE(g.ok);
    uint64_t gens = 0, pairs = 0;
    ApplyFlow(a, g, 0, 0, [&](uint32_t) { ++gens; });     // the zero fact: its gens
    ApplyFlow(a, g, 0, 1, [&](uint32_t) { ++pairs; });    // fact 1: its pairs
    if (stopped) {
      EXPECT_LE(gens, kStopPollSteps * kStopPollLooks + 1);
      EXPECT_LE(pairs, kStopPollSteps) << "the launch was seen to stop: a loop ends at its look";
    } else {
      EXPECT_EQ(gens, kLong + 1);
      EXPECT_EQ(pairs, kLong);
    }
    EXPECT_EQ(b.state[State::kStatus], 0u);
  }
}

TEST(IfdsBodiesStopTest, APathEdgesIntraAndCallEdgesStopOnceTheLaunchHasStopped) {
  for (const bool stopped : {false, true}) {
    for (const bool calls : {false, true}) {
      SCOPED_TRACE(::testing::Message() << stopped << " " << calls);
      LoopingBuffers b(calls ? LoopingGraph(0, kLong, 0, 0) : LoopingGraph(kLong, 0, 0, 0));
      const Launch launch(stopped);
      const KernelArgs a = launch.Of(b.args);
      const Graph g = Graph::Open(a);
      ASSERT_TRUE(g.ok);
      uint64_t inserts = 0;
      const auto insert = [&](int, uint64_t) { ++inserts; };
      const auto walk = [](uint64_t, WalkContext) {};
      PeDelta::Visit(a, g, 0, insert, walk);
      // Each edge inserts a path edge (a call edge an incoming call too), and a call node
      // indexes the path edge once more.
      const uint64_t all = calls ? 2 * uint64_t{kLong} + 1 : kLong;
      if (stopped) {
        EXPECT_LE(inserts, 2 * uint64_t{kStopPollSteps} * kStopPollLooks);
      } else {
        EXPECT_EQ(inserts, all);
      }
    }
  }
}

// A walk that counts the tuples it meets.
struct CountedWalk {
  static constexpr int kWalked = kEs;
  static void Each(const KernelArgs&, const Graph&, WalkContext, uint64_t, uint64_t& count) {
    ++count;
  }
};

// A chain of table ES whose one tuple links to itself: a walk of it ends at the table's slots
// (a corrupt link cannot loop for ever), or once the launch has stopped.
TEST(IfdsBodiesStopTest, AChainWalkStopsOnceTheLaunchHasStopped) {
  std::vector<std::vector<uint8_t>> segments(kSegments);
  segments[0].assign(12 * size_t{kLong}, 0);
  std::vector<uint8_t> heads(12 * 16, 0);
  std::vector<uint32_t> state(State::kSlots, 0);
  KernelArgs base{};
  for (uint32_t s = 0; s < kSegments; ++s) {
    base.binding[TableBinding(kEs, s)] = BindingView{segments[s].data(), segments[s].size()};
  }
  base.binding[HeadsBinding(kEs)] = BindingView{heads.data(), heads.size()};
  base.binding[kState] = BindingView{reinterpret_cast<uint8_t*>(state.data()), 4 * state.size()};
  const uint64_t group = Group(3, 4);
  const SlotView segment = Segment(base, kEs, 0);
  segment.keys[0] = Pack(3, 4, 5);
  segment.links[0] = Location(0, 0) + 1;
  *HeadOf(base, kEs, group, Mix(group), true) = Location(0, 0) + 1;
  for (const bool stopped : {false, true}) {
    SCOPED_TRACE(stopped);
    state[State::kStatus] = 0;
    const Launch launch(stopped);
    const KernelArgs a = launch.Of(base);
    uint64_t visits = 0;
    ForEachInGroup(a, kEs, group, [&](uint64_t) { ++visits; });
    // The same, as the CPU's ranges walk (several walks interleaved).
    uint64_t ranged = 0;
    const Graph g{};
    QueuedWalks<CountedWalk, uint64_t> walks(a, g, ranged);
    walks(group, WalkContext{1, 0});
    walks.Close();
    if (stopped) {
      EXPECT_LE(visits, kStopPollSteps * kStopPollLooks);
      EXPECT_LE(ranged, kStopPollSteps) << "the launch was seen to stop: a walk ends at its look";
      EXPECT_EQ(state[State::kStatus], 0u);
    } else {
      EXPECT_EQ(visits, kLong);
      EXPECT_EQ(ranged, kLong);
      EXPECT_EQ(state[State::kStatus], kStatusIndexOutOfBounds);
    }
  }
}

// A rehash into a segment with no empty slot probes every slot for every tuple, unless the
// launch has stopped.
TEST(IfdsBodiesStopTest, ARehashIntoAFullSegmentStopsOnceTheLaunchHasStopped) {
  std::vector<uint64_t> full(kLong, Pack(1, 2, 3));
  std::vector<uint32_t> status = {0};
  KernelArgs base{};
  base.binding[Rehash::kNew] =
      BindingView{reinterpret_cast<uint8_t*>(full.data()), 8 * full.size()};
  base.binding[Rehash::kRehashStatus] = BindingView{reinterpret_cast<uint8_t*>(status.data()), 4};
  base.param[Rehash::kTable] = kPe;
  const uint64_t v = Pack(7, 8, 9);
  const uint64_t hash = Mix(v);
  base.param[Rehash::kSegmentIndex] = SegmentOf(hash);
  for (const bool stopped : {false, true}) {
    SCOPED_TRACE(stopped);
    status[0] = 0;
    const Launch launch(stopped);
    const KernelArgs a = launch.Of(base);
    RehashPass::Place(a, RehashPass::Keys(a, Rehash::kNew), v, hash);
    // Every slot probed: no place, reported; stopped, it ends early and reports nothing.
    EXPECT_EQ(status[0], stopped ? 0u : kStatusIndexOutOfBounds);
  }
}

}  // namespace
}  // namespace sluice::kernels::ifds
