// The resident solver agrees exactly with the reference solver on generated problems of many
// shapes, repeatably, and through every growth path.
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sluice/client/local_dispatch.h"
#include "sluice/engine/cpu_device.h"
#include "sluice/ifds/compile.h"
#include "sluice/ifds/generator.h"
#include "sluice/ifds/output.h"
#include "sluice/ifds/reference_solver.h"
#include "sluice/ifds/resident_solver.h"
#include "sluice/ifds/staged_flows.h"
#include "sluice/ifds/text_format.h"
#include "sluice/kernels/ifds.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/unstructured_problem.h"

namespace sluice::ifds {
namespace {

using ::sluice::kernels::ifds::GraphLayout;
using ::sluice::testing::StatusIs;
using ::testing::HasSubstr;

// 240 shapes: sizes, call structure, recursion, unreachable code, several callees, empty and
// identity-heavy flows, single-node procedures.
std::vector<GeneratorOptions> Shapes() {
  std::vector<GeneratorOptions> shapes;
  for (uint64_t seed = 1; seed <= 240; ++seed) {
    GeneratorOptions o;
    o.seed = seed;
    const uint64_t k = seed % 12;
    o.procedures = 1 + static_cast<uint32_t>((seed * 7) % 24);
    o.nodes_per_procedure = 2 + static_cast<uint32_t>((seed * 5) % 16);
    o.facts = 2 + static_cast<uint32_t>((seed * 11) % 40);
    o.call_density = 0.1 + 0.05 * static_cast<double>(seed % 5);
    o.recursion = k < 4 ? 0.0 : k < 8 ? 0.3 : 0.9;
    o.max_callees = 1 + static_cast<uint32_t>(seed % 4);
    o.unreachable = (seed % 3 == 0) ? 0.3 : 0.0;
    o.seeds = 1 + static_cast<uint32_t>(seed % 3);
    switch (seed % 6) {
      case 0:  // empty flows: only the zero fact ever moves
        o.identity = 0.0;
        o.gen_rate = 0.0;
        o.pair_rate = 0.0;
        break;
      case 1:  // identity only
        o.identity = 1.0;
        o.kill_rate = 0.0;
        o.gen_rate = 0.02;
        o.pair_rate = 0.0;
        break;
      case 2:  // relation-heavy
        o.identity = 0.5;
        o.pair_rate = 0.3;
        break;
      case 3:  // a single node in total
        o.procedures = 1;
        o.nodes_per_procedure = 0;
        break;
      default:
        break;
    }
    shapes.push_back(o);
  }
  return shapes;
}

// Every test runs twice on the CPU device: with the passes that probe at random running whole
// ranges of thread indexes (prefetching, places in the delta lists reserved a chunk at a time),
// as the CPU device does by default, and with every body run one index at a time, as a GPU's
// threads run it.
class DifferentialTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    ASSERT_OK_AND_ASSIGN(std::shared_ptr<CpuDevice> device, CpuDevice::Create(DeviceOptions()));
    ASSERT_OK_AND_ASSIGN(dispatch_, LocalDispatch::Create({.device = device}));
  }
  CpuDevice::Options DeviceOptions(uint64_t memory_limit = 0) const {
    return {.memory_limit = memory_limit, .ranges = GetParam()};
  }
  std::unique_ptr<LocalDispatch> dispatch_;
};

INSTANTIATE_TEST_SUITE_P(Launch, DifferentialTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "Ranges" : "OneIndexAtATime";
                         });

// The flows are written a range per thread into one image: on any number of threads the
// image is the same, word for word.
TEST(CompileTest, TheImageIsTheSameOnAnyNumberOfThreads) {
  ASSERT_OK_AND_ASSIGN(Problem p,
                       Generate({.procedures = 40, .facts = 16, .front_end_shape = true}));
  ASSERT_GT(p.flows.size(), 100u);
  ASSERT_OK_AND_ASSIGN(CompiledProblem one, Compile(p, 1));
  for (const unsigned threads : {2u, 3u, 7u, 0u}) {
    ASSERT_OK_AND_ASSIGN(CompiledProblem many, Compile(p, threads));
    ASSERT_EQ(many.words().size(), one.words().size());
    EXPECT_TRUE(std::equal(one.words().begin(), one.words().end(), many.words().begin()))
        << threads << " threads";
  }
}

// A pair is one word of two 16-bit facts: a flow over the last fact there is keeps it (and
// its source) apart, and a problem with more facts than fit is refused, not packed wrong.
TEST(CompileTest, PairsOverTheLastFactKeepBothFactsAndMoreFactsAreRefused) {
  ASSERT_OK_AND_ASSIGN(Problem p, Generate({.procedures = 3, .facts = 4}));
  p.fact_names.resize(kMaxFacts);
  for (size_t d = 5; d < p.fact_names.size(); ++d) p.fact_names[d] = absl::StrCat("f", d);
  const uint32_t last = kMaxFacts - 1;
  Flow flow;
  flow.pairs = {{1, last}, {last, 2}, {last, last}};
  p.flows.push_back(flow);
  p.edges.push_back(Edge{p.procedures[0].start, p.procedures[0].start,
                         static_cast<uint32_t>(p.flows.size() - 1)});
  ASSERT_OK(Validate(p));
  ASSERT_OK_AND_ASSIGN(CompiledProblem image, Compile(p));
  const absl::Span<const uint32_t> w = image.words();
  const uint32_t pairs = w[GraphLayout::kSectionTable + 2 * GraphLayout::kPairs];
  const uint32_t count = w[GraphLayout::kSectionTable + 2 * GraphLayout::kPairs + 1];
  ASSERT_EQ(count, p.flows.pair_count());
  const std::vector<uint32_t> tail(w.begin() + pairs + count - 3, w.begin() + pairs + count);
  EXPECT_EQ(tail, (std::vector<uint32_t>{1u << 16 | last, last << 16 | 2, last << 16 | last}));

  p.fact_names.push_back("one_too_many");
  EXPECT_THAT(Compile(p).status(), StatusIs(absl::StatusCode::kResourceExhausted,
                                            HasSubstr("at most 65535 facts")));
}

// Compiling tells of each range of flows once it is in the image, on the threads that write
// it, and never reads those flows again: given back as they are told (their whole pages then
// read as zero), the image is the one a compile that keeps them writes, on any number of
// threads, and every flow is told once.
TEST(CompileTest, FlowsGivenBackAsTheyAreCompiledAreNotReadAgain) {
  ASSERT_OK_AND_ASSIGN(const Problem p, Generate({.procedures = 10000, .facts = 32,
                                                  .front_end_shape = true}));
  // Large enough that the flows' lists and ends are memory of their own (PageAllocator).
  ASSERT_GT(p.flows.size() * sizeof(uint64_t), PageAllocator<uint64_t>::kMinBytes);
  ASSERT_OK_AND_ASSIGN(CompiledProblem kept, Compile(p, 1));
  for (const unsigned threads : {1u, 2u, 5u}) {
    Problem given_back = p;
    absl::Mutex mu;
    std::vector<int> told(p.flows.size(), 0);
    ASSERT_OK_AND_ASSIGN(CompiledProblem image,
                         Compile(given_back, threads, [&](size_t first, size_t last) {
                           given_back.flows.Release(first, last);
                           absl::MutexLock lock(&mu);
                           for (size_t f = first; f < last; ++f) ++told[f];
                         }));
    EXPECT_TRUE(std::equal(kept.words().begin(), kept.words().end(), image.words().begin(),
                           image.words().end()))
        << threads << " threads";
    EXPECT_EQ(std::count(told.begin(), told.end(), 1), static_cast<ptrdiff_t>(told.size()));
    EXPECT_EQ(image.reach.intra, kept.reach.intra);
    EXPECT_EQ(image.reach.calls, kept.reach.calls);
    EXPECT_EQ(image.reach.returns, kept.reach.returns);
    EXPECT_EQ(image.reach.call_to_return, kept.reach.call_to_return);
    // The flows did go back: a flow in the middle has no pairs left.
    const FlowView middle = given_back.flows[p.flows.size() / 3 + 17];
    const FlowView before = p.flows[p.flows.size() / 3 + 17];
    ASSERT_FALSE(before.pairs.empty());
    EXPECT_TRUE(std::all_of(middle.pairs.begin(), middle.pairs.end(),
                            [](const auto& pair) { return pair.first == 0 && pair.second == 0; }));
  }
}

// What a flow can yield (CompiledProblem::Reach), from the problem itself.
uint64_t Yield(const Problem& p, uint32_t f) {
  const FlowView flow = p.flows[f];
  return (flow.identity ? std::min<uint64_t>(p.fact_count(), 64) : 0) + flow.gens.size() +
         flow.pairs.size();
}

// Compiling tells of each part of the structure once it is in the image, in order, and never
// reads it again: given back as it is told (and the flows as theirs are), the image is the one
// a compile that keeps them writes, on any number of threads. What each kind of edge yields,
// which it reads from the image, is what the problem's own edges yield.
TEST(CompileTest, PartsGivenBackAsTheyAreCompiledAreNotReadAgainAndTheirReachIsKept) {
  for (const bool front_end : {true, false}) {
    ASSERT_OK_AND_ASSIGN(const Problem p, Generate({.procedures = 2000, .facts = 32,
                                                    .front_end_shape = front_end}));
    ASSERT_FALSE(p.edges.empty());
    ASSERT_FALSE(p.call_sites.empty());
    CompiledProblem::Reach expected;
    for (const Edge& e : p.edges) expected.intra += Yield(p, e.flow);
    for (const CallSite& c : p.call_sites) {
      expected.call_to_return += Yield(p, c.call_to_return_flow);
    }
    for (const Callee& callee : p.callees) {
      expected.calls += Yield(p, callee.call_flow);
      expected.returns += Yield(p, callee.return_flow);
    }
    ASSERT_OK_AND_ASSIGN(const CompiledProblem kept, Compile(p, 1));
    EXPECT_EQ(kept.reach.intra, expected.intra);
    EXPECT_EQ(kept.reach.call_to_return, expected.call_to_return);
    EXPECT_EQ(kept.reach.calls, expected.calls);
    EXPECT_EQ(kept.reach.returns, expected.returns);
    for (const unsigned threads : {1u, 2u, 5u}) {
      Problem given_back = p;
      std::vector<ProblemPart> told;
      ASSERT_OK_AND_ASSIGN(
          const CompiledProblem image,
          Compile(
              given_back, threads,
              [&](size_t first, size_t last) { given_back.flows.Release(first, last); }, {},
              [&](ProblemPart part) {
                told.push_back(part);
                FreePart(&given_back, part);
              }));
      const std::string where = absl::StrCat(front_end ? "front-end shape, " : "", threads,
                                             " threads");
      EXPECT_TRUE(std::equal(kept.words().begin(), kept.words().end(), image.words().begin(),
                             image.words().end()))
          << where;
      EXPECT_THAT(told, ::testing::ElementsAre(ProblemPart::kEdges, ProblemPart::kCallSites,
                                               ProblemPart::kProcedures))
          << where;
      EXPECT_TRUE(given_back.edges.empty() && given_back.call_sites.empty() &&
                  given_back.callees.empty() &&
                  given_back.procedures.empty() && given_back.node_procedure.empty())
          << where;
      EXPECT_EQ(image.reach.intra, expected.intra) << where;
      EXPECT_EQ(image.reach.call_to_return, expected.call_to_return) << where;
      EXPECT_EQ(image.reach.calls, expected.calls) << where;
      EXPECT_EQ(image.reach.returns, expected.returns) << where;
    }
    // A compile that fails tells of nothing.
    std::vector<ProblemPart> told;
    EXPECT_THAT(Compile(p, 1, nullptr, {.count = p.flows.size() + 1},
                        [&](ProblemPart part) { told.push_back(part); })
                    .status(),
                StatusIs(absl::StatusCode::kInvalidArgument));
    EXPECT_TRUE(told.empty());
  }
}

// The kernels find a fact's pairs in words of two 16-bit facts: at the last fact there is,
// whose words are the largest, a flow's pairs from it and to it are all found.
TEST_P(DifferentialTest, PairsOfTheLastFactAreFoundOnTheDevice) {
  Problem p;
  p.fact_names.push_back("0");
  for (uint32_t d = 1; d < kMaxFacts; ++d) p.fact_names.push_back(absl::StrCat("f", d));
  const uint32_t last = kMaxFacts - 1;
  p.node_names = {"s", "n", "e"};
  p.node_procedure = {0, 0, 0};
  p.procedures.push_back(Procedure{"main", 0, 2});
  Flow generate;  // s -> n: the zero fact makes the last
  generate.gens = {last};
  Flow map;  // n -> e: the last to 2 and to itself; 1 (absent) to the last
  map.pairs = {{1, last}, {last, 2}, {last, last}};
  p.flows.push_back(generate);
  p.flows.push_back(map);
  p.edges = {Edge{0, 1, 0}, Edge{1, 2, 1}};
  p.seeds = {{0, kZeroFact}};
  ASSERT_OK(Validate(p));
  ASSERT_OK_AND_ASSIGN(Solution got, SolveResident(*dispatch_, p));
  EXPECT_EQ(got, SolveReference(p));
  const std::vector<std::pair<uint32_t, uint32_t>> at_exit(
      std::find_if(got.facts.begin(), got.facts.end(), [](const auto& f) { return f.first == 2; }),
      got.facts.end());
  EXPECT_EQ(at_exit, (std::vector<std::pair<uint32_t, uint32_t>>{{2, 0}, {2, 2}, {2, last}}));
}

TEST_P(DifferentialTest, ResidentAgreesWithReferenceOnGeneratedProblems) {
  uint64_t total_path_edges = 0;
  int with_calls = 0;
  for (const GeneratorOptions& o : Shapes()) {
    ASSERT_OK_AND_ASSIGN(Problem problem, Generate(o));
    ReferenceStats reference_stats;
    const Solution expected = SolveReference(problem, &reference_stats);
    ResidentStats stats;
    ASSERT_OK_AND_ASSIGN(Solution got, SolveResident(*dispatch_, problem, {}, &stats));
    ASSERT_EQ(got, expected) << "seed " << o.seed;
    EXPECT_EQ(stats.path_edges, reference_stats.path_edges) << "seed " << o.seed;
    EXPECT_EQ(stats.end_summaries, reference_stats.end_summaries) << "seed " << o.seed;
    total_path_edges += stats.path_edges;
    with_calls += problem.call_sites.empty() ? 0 : 1;
  }
  EXPECT_GT(with_calls, 150) << "most shapes must exercise calls";
  EXPECT_GT(total_path_edges, 100000u) << "the shapes must not be trivial";
  EXPECT_EQ(dispatch_->device().memory().used, 0u) << "every buffer is freed";
}

// Problems shaped as a front end emits them (explicit pairs over each procedure's facts in
// scope) agree too, and carry the flow pairs per path edge that shape is for.
TEST_P(DifferentialTest, ResidentAgreesWithReferenceOnFrontEndShapedProblems) {
  for (uint64_t seed = 1; seed <= 24; ++seed) {
    GeneratorOptions o;
    o.seed = seed;
    o.front_end_shape = true;
    o.procedures = 1 + static_cast<uint32_t>((seed * 7) % 40);
    o.facts = 1 + static_cast<uint32_t>((seed * 11) % 24);
    o.scope = 1 + static_cast<uint32_t>(seed % 10);
    o.recursion = seed % 2 == 0 ? 0.0 : 0.5;
    ASSERT_OK_AND_ASSIGN(Problem problem, Generate(o));
    for (const FlowView flow : problem.flows) {
      ASSERT_FALSE(flow.identity) << "seed " << seed;
      ASSERT_TRUE(flow.kills.empty() && flow.gens.empty()) << "seed " << seed;
    }
    ASSERT_OK_AND_ASSIGN(Solution got, SolveResident(*dispatch_, problem));
    ASSERT_EQ(got, SolveReference(problem)) << "seed " << seed;
  }
  GeneratorOptions o;
  o.seed = 3;
  o.front_end_shape = true;
  o.procedures = 2000;
  o.facts = 32;
  ASSERT_OK_AND_ASSIGN(Problem problem, Generate(o));
  uint64_t pairs = 0;
  for (const FlowView flow : problem.flows) pairs += flow.pairs.size();
  ResidentStats stats;
  ASSERT_OK_AND_ASSIGN(Solution got, SolveResident(*dispatch_, problem, {}, &stats));
  const double per_path_edge = static_cast<double>(pairs) / static_cast<double>(stats.path_edges);
  EXPECT_GT(per_path_edge, 1.2);
  EXPECT_LT(per_path_edge, 2.5);
  o.scope = 0;
  EXPECT_THAT(Generate(o), StatusIs(absl::StatusCode::kInvalidArgument));
  // Absurd sizes are refused before anything is generated.
  o.facts = o.scope = 60000;
  o.procedures = 4000;
  EXPECT_THAT(Generate(o), StatusIs(absl::StatusCode::kInvalidArgument));
}

// A problem whose flows are explicit pairs over a few facts in scope (as front ends list them)
// starts with tables sized by what its flows can yield, not by a slot per node and fact: on
// this one 14.8 MiB of device memory at peak where that took 37.0, and still no growth.
TEST_P(DifferentialTest, SparseFlowsStartWithTablesOfTheirSize) {
  ASSERT_OK_AND_ASSIGN(Problem problem, Generate({.seed = 3, .procedures = 3000, .facts = 32,
                                                  .front_end_shape = true}));
  ResidentStats stats;
  ASSERT_OK_AND_ASSIGN(Solution got, SolveResident(*dispatch_, problem, {}, &stats));
  EXPECT_EQ(got, SolveReference(problem));
  EXPECT_EQ(stats.path_edges, 232782u);
  EXPECT_LT(stats.peak_device_bytes, uint64_t{20} << 20);
  EXPECT_EQ(stats.growths, 0u);
}

// Once compiled, the problem's structure is the caller's to free, each part as the image holds
// it and the flows once all is compiled: the solve reads only its counts and seeds from then on
// (sluice solve frees it there), with every growth path taken.
TEST_P(DifferentialTest, AProblemFreedOnceCompiledStillSolves) {
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    GeneratorOptions o;
    o.seed = seed;
    o.procedures = 30;
    o.front_end_shape = seed % 2 == 0;
    ASSERT_OK_AND_ASSIGN(Problem problem, Generate(o));
    const Solution expected = SolveReference(problem);
    int calls = 0;
    std::vector<ProblemPart> parts;
    ResidentOptions options;
    options.initial_capacity = seed % 3 == 0 ? 2 : 0;
    options.part_compiled = [&](ProblemPart part) {
      EXPECT_EQ(calls, 0);
      parts.push_back(part);
      FreePart(&problem, part);
    };
    options.compiled = [&] {
      ++calls;
      problem.flows = {};
    };
    ASSERT_OK_AND_ASSIGN(Solution got, SolveResident(*dispatch_, problem, options));
    EXPECT_EQ(calls, 1);
    EXPECT_EQ(parts.size(), 3u);
    ASSERT_EQ(got, expected) << "seed " << seed;
  }
}

// `uploaded` is called once, after `compiled` and before any window: the device holds the whole
// problem then, and the host none of its compiled form (the device's memory counts it once).
TEST_P(DifferentialTest, UploadedIsCalledOnceWithTheProblemOnTheDeviceBeforeAnyWindow) {
  GeneratorOptions o;
  o.seed = 7;
  o.procedures = 30;
  ASSERT_OK_AND_ASSIGN(Problem problem, Generate(o));
  std::vector<std::string> calls;
  uint64_t device_bytes_then = 0;
  ResidentOptions options;
  options.initial_window = 1;  // many windows, each reported
  options.compiled = [&] { calls.push_back("compiled"); };
  options.uploaded = [&] {
    calls.push_back("uploaded");
    device_bytes_then = dispatch_->device().memory().used;
  };
  options.progress = [&](const ResidentProgress&) {
    if (calls.empty() || calls.back() != "window") calls.push_back("window");
  };
  ASSERT_OK_AND_ASSIGN(Solution got, SolveResident(*dispatch_, problem, options));
  EXPECT_EQ(got, SolveReference(problem));
  EXPECT_THAT(calls, ::testing::ElementsAre("compiled", "uploaded", "window"));
  ASSERT_OK_AND_ASSIGN(CompiledProblem compiled, Compile(problem));
  EXPECT_GE(device_bytes_then, compiled.buffer.size());
}

// Flows staged on the device as a problem is read (StagedFlowLists), any first ones, in chunks
// and batches of any size, are copied into the places a compile writes them in: the device
// then holds the image a host compile makes, word for word, the host's image never touched
// those places, what they yield sizes the tables as before, and no chunk is left.
TEST_P(DifferentialTest, StagedListsMakeTheImageACompileMakes) {
  std::vector<Problem> problems;
  const std::vector<GeneratorOptions> shapes = Shapes();
  // Identity with gens, relation-heavy, default (kills, gens and pairs), front-end-shaped.
  for (const size_t k : {0, 1, 3, 4, 10}) {
    ASSERT_OK_AND_ASSIGN(problems.emplace_back(), Generate(shapes[k]));
  }
  ASSERT_OK_AND_ASSIGN(problems.emplace_back(), Generate({.seed = 3, .procedures = 200,
                                                          .facts = 32,
                                                          .front_end_shape = true}));
  uint64_t kills = 0, gens = 0;
  for (const Problem& p : problems) {
    kills += p.flows.kill_count();
    gens += p.flows.gen_count();
  }
  ASSERT_GT(kills, 0u);
  ASSERT_GT(gens, 0u);
  for (const Problem& p : problems) {
    ASSERT_OK_AND_ASSIGN(const CompiledProblem whole, Compile(p));
    const absl::Span<const uint32_t> expected = whole.words();
    for (const auto& [chunk, batch] : std::vector<std::pair<uint64_t, uint64_t>>{
             {1, 1}, {7, 5}, {64, 1000}, {StagedFlowLists::kDefaultChunkWords, 1},
             {StagedFlowLists::kDefaultChunkWords, StagedFlowLists::kDefaultBatchWords}}) {
      for (const size_t staged_flows : {p.flows.size(), p.flows.size() / 2, size_t{0}}) {
        const std::string where = absl::StrCat(p.flows.size(), " flows, chunk ", chunk,
                                               ", batch ", batch, ", ", staged_flows, " staged");
        Problem q = p;
        StagedFlowLists staged(*dispatch_, chunk, batch);
        for (size_t f = 0; f < staged_flows; f += 3) {  // a few at a time, as a parser tells
          ASSERT_OK(staged.Take(q.flows, f, std::min(f + 3, staged_flows)));
        }
        ASSERT_OK(staged.Flush(q.flows));
        ASSERT_OK_AND_ASSIGN(CompiledProblem image,
                             Compile(q, 0, nullptr, {staged_flows, staged.outputs()}));
        ASSERT_EQ(image.words().size(), expected.size()) << where;
        EXPECT_EQ(image.reach.intra, whole.reach.intra) << where;
        EXPECT_EQ(image.reach.calls, whole.reach.calls) << where;
        EXPECT_EQ(image.reach.returns, whole.reach.returns) << where;
        std::array<uint64_t, StagedFlowLists::kNumLists> starts;
        for (int l = 0; l < StagedFlowLists::kNumLists; ++l) {
          const auto list = static_cast<StagedFlowLists::List>(l);
          const uint32_t section = GraphLayout::kFlowHeaders + l;
          starts[l] = image.words()[GraphLayout::kSectionTable + 2 * section];
          const auto places = image.words().subspan(starts[l], staged.words(list));
          EXPECT_TRUE(std::all_of(places.begin(), places.end(), [](uint32_t w) { return w == 0; }))
              << where << ": list " << l << " written on the host";
        }
        ASSERT_OK_AND_ASSIGN(Resource graph, dispatch_->Allocate(image.buffer.size()));
        const RangedUpload upload{graph, 0, absl::MakeConstSpan(image.buffer.data(),
                                                                image.buffer.size())};
        ASSERT_OK(dispatch_->UploadAtMany({&upload, 1}));
        ASSERT_OK(staged.CopyInto(graph, starts));
        EXPECT_TRUE(staged.outputs().empty()) << where << ": held once copied";
        std::vector<uint32_t> device(expected.size());
        const ReadRange read{graph, 0, 4 * device.size()};
        const absl::Span<uint8_t> into(reinterpret_cast<uint8_t*>(device.data()), read.length);
        ASSERT_OK(dispatch_->DownloadRangesIntoSpans({&read, 1}, {&into, 1}));
        EXPECT_TRUE(std::equal(device.begin(), device.end(), expected.begin())) << where;
        ASSERT_OK(dispatch_->Free(graph));
        EXPECT_EQ(dispatch_->device().memory().used, 0u) << where;
      }
    }
  }
}

// A problem read with its flows staged as the parser tells of them solves as it does whole,
// its flows given back as they went and the rest freed once compiled (as `sluice solve
// --server` does), on problems of every shape; every chunk is freed.
TEST_P(DifferentialTest, ASolveOfListsStagedAsTheTextIsReadAgreesWithReference) {
  const std::vector<GeneratorOptions> shapes = Shapes();
  const auto keep = [](size_t, size_t) {};
  for (size_t k = 0; k < shapes.size(); k += 10) {
    ASSERT_OK_AND_ASSIGN(const Problem generated, Generate(shapes[k]));
    const std::string text = WriteText(generated);
    ASSERT_OK_AND_ASSIGN(const Problem plain, ParseText(text, "s.ifds"));
    // Small chunks and batches: many of each.
    StagedFlowLists staged(*dispatch_, 5 + k, 3 + k);
    TextPaging paging{.release = keep, .reload = std::nullopt};
    const auto take = [&](FlowTable& flows, size_t first, size_t last) {
      return staged.Take(flows, first, last);
    };
    paging.flows_read.emplace(take);
    ASSERT_OK_AND_ASSIGN(Problem read, ParseText(text, "s.ifds", paging));
    EXPECT_EQ(staged.flows(), plain.flows.size()) << "seed " << shapes[k].seed;
    ASSERT_OK(staged.Flush(read.flows));
    ResidentOptions options;
    options.staged = &staged;
    options.compiled = [&] {
      read.flows = {};
      read.edges = {};
      read.call_sites = {};
      read.callees = {};
    };
    ASSERT_OK_AND_ASSIGN(Solution got, SolveResident(*dispatch_, read, options));
    ASSERT_EQ(got, SolveReference(plain)) << "seed " << shapes[k].seed;
    EXPECT_EQ(dispatch_->device().memory().used, 0u) << "seed " << shapes[k].seed;
  }
}

// Staged flows are taken in order only, and copied (and solved) once all are on the device
// (Flush); a solve of a problem with fewer flows than were staged is refused before it
// allocates anything.
TEST_P(DifferentialTest, StagedListsRefuseRangesOutOfOrderAndAnotherProblemsSolve) {
  ASSERT_OK_AND_ASSIGN(Problem p, Generate({.seed = 2, .procedures = 20}));
  ASSERT_GT(p.flows.size(), 4u);
  StagedFlowLists staged(*dispatch_, 16, uint64_t{1} << 30);  // sent by Flush only
  EXPECT_THAT(staged.Take(p.flows, 1, 2), StatusIs(absl::StatusCode::kFailedPrecondition));
  ASSERT_OK(staged.Take(p.flows, 0, 2));
  EXPECT_THAT(staged.Take(p.flows, 0, 3), StatusIs(absl::StatusCode::kFailedPrecondition));
  EXPECT_THAT(staged.Take(p.flows, 2, p.flows.size() + 1),
              StatusIs(absl::StatusCode::kFailedPrecondition));
  ASSERT_OK(staged.Take(p.flows, 2, p.flows.size()));
  EXPECT_FALSE(staged.flushed());
  ASSERT_OK_AND_ASSIGN(Resource graph, dispatch_->Allocate(4096));
  EXPECT_THAT(staged.CopyInto(graph, {0, 0, 0, 0}),
              StatusIs(absl::StatusCode::kFailedPrecondition));
  ASSERT_OK(dispatch_->Free(graph));
  EXPECT_EQ(dispatch_->device().memory().used, 0u) << "nothing sent before Flush";
  ResidentOptions options;
  options.staged = &staged;
  EXPECT_THAT(SolveResident(*dispatch_, p, options),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("Flush")));
  EXPECT_EQ(dispatch_->device().memory().used, 0u);
  ASSERT_OK(staged.Flush(p.flows));
  const uint64_t chunks = dispatch_->device().memory().used;
  EXPECT_GT(chunks, 0u);

  ASSERT_OK_AND_ASSIGN(const Problem smaller, Generate({.seed = 2, .procedures = 1}));
  ASSERT_LT(smaller.flows.size(), p.flows.size());
  EXPECT_THAT(SolveResident(*dispatch_, smaller, options),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("staged")));
  EXPECT_EQ(dispatch_->device().memory().used, chunks);
}

TEST_P(DifferentialTest, TinyInitialCapacitiesForceEveryGrowthPathAndChangeNothing) {
  uint32_t growths = 0;
  uint32_t partial_growths = 0;
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    GeneratorOptions o;
    o.seed = seed;
    o.procedures = 6 + static_cast<uint32_t>(seed % 5);
    o.facts = 8 + static_cast<uint32_t>(seed % 9);
    o.recursion = 0.4;
    ASSERT_OK_AND_ASSIGN(Problem problem, Generate(o));
    const Solution expected = SolveReference(problem);
    // 2 and 8 overflow mid-iteration; 256 mostly grows between iterations (the device ends a
    // window when a table should grow), which rebuilds only the tables that moved.
    for (uint64_t capacity : {2u, 8u, 256u}) {
      for (uint32_t window : {1u, 64u}) {
        ResidentStats stats;
        ResidentOptions options;
        options.initial_capacity = capacity;
        options.initial_window = window;
        options.max_window = window;
        options.early_exit = seed % 2 == 0;
        // Calls claimed in a bitmap that covers all of them, some (the rest are made every
        // time) or none; an overflow clears it.
        options.max_call_bits = seed % 3 == 0 ? 0 : seed % 3 == 1 ? 5 * seed : 1u << 20;
        // Results listed a node at a time, a few nodes at a time, or all at once.
        options.max_result_words = seed % 4 == 0 ? 1 : seed % 4 == 1 ? 1 + seed % 7 : 1u << 24;
        ASSERT_OK_AND_ASSIGN(Solution got, SolveResident(*dispatch_, problem, options, &stats));
        ASSERT_EQ(got, expected) << "seed " << seed << " capacity " << capacity << " window "
                                 << window << " early exit " << options.early_exit
                                 << " call bits " << options.max_call_bits << " result words "
                                 << options.max_result_words;
        growths += stats.growths;
        partial_growths += stats.partial_growths;
      }
    }
  }
  EXPECT_GT(growths, 100u);
  EXPECT_GT(partial_growths, 100u) << "growths that rebuild only the tables that moved";
}

TEST_P(DifferentialTest, TablesThatFillGraduallyGrowBetweenIterations) {
  // The device ends a window at the iteration where a table passes its growth threshold, so
  // no insert fails and nothing reruns. Windows that always run their length (no loop guard)
  // cannot stop there, and fill tables until an insert fails: the contrast shows the guard at
  // work.
  uint32_t growths = 0, overflow_growths = 0, unguarded_overflow_growths = 0;
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    GeneratorOptions o;
    o.seed = seed;
    o.procedures = 100;
    o.facts = 32;
    o.nodes_per_procedure = 16;
    ASSERT_OK_AND_ASSIGN(Problem problem, Generate(o));
    const Solution expected = SolveReference(problem);
    for (bool early_exit : {true, false}) {
      ResidentStats stats;
      ResidentOptions options;
      options.initial_capacity = 1024;
      options.initial_window = options.max_window = 64;
      options.early_exit = early_exit;
      ASSERT_OK_AND_ASSIGN(Solution got, SolveResident(*dispatch_, problem, options, &stats));
      ASSERT_EQ(got, expected) << "seed " << seed << " early exit " << early_exit;
      if (early_exit) {
        growths += stats.growths;
        overflow_growths += stats.overflow_growths;
      } else {
        unguarded_overflow_growths += stats.overflow_growths;
      }
    }
  }
  EXPECT_GT(growths, 10u);
  EXPECT_EQ(overflow_growths, 0u);
  EXPECT_GT(unguarded_overflow_growths, 5u);
}

TEST_P(DifferentialTest, SeedsThatOverflowTheFirstTablesAreAllSolved) {
  // Many seeds into tables of a few slots: seeding itself overflows, and the seeds that did not
  // fit must be seeded again after the growth.
  uint32_t growths = 0;
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    GeneratorOptions o;
    o.seed = seed;
    o.procedures = 4 + static_cast<uint32_t>(seed % 4);
    o.facts = 24 + static_cast<uint32_t>(seed % 17);
    o.seeds = o.facts;
    ASSERT_OK_AND_ASSIGN(Problem problem, Generate(o));
    ASSERT_GT(problem.seeds.size(), 10u);
    const Solution expected = SolveReference(problem);
    for (uint64_t capacity : {2u, 4u}) {
      for (bool early_exit : {false, true}) {
        ResidentStats stats;
        ResidentOptions options;
        options.initial_capacity = capacity;
        options.early_exit = early_exit;
        ASSERT_OK_AND_ASSIGN(Solution got, SolveResident(*dispatch_, problem, options, &stats));
        ASSERT_EQ(got, expected) << "seed " << seed << " capacity " << capacity
                                 << " early exit " << early_exit;
        growths += stats.growths;
      }
    }
  }
  EXPECT_GT(growths, 48u);
}

TEST_P(DifferentialTest, ResidentAgreesWithReferenceOnUnstructuredProblems) {
  int calls_at_starts_or_exits = 0;
  uint64_t answers = 0;
  for (uint64_t seed = 1; seed <= 400; ++seed) {
    const Problem problem = testing::UnstructuredProblem(seed);
    ASSERT_OK(Validate(problem)) << "seed " << seed;
    for (const CallSite& c : problem.call_sites) {
      const Procedure& q = problem.procedures[problem.node_procedure[c.call]];
      calls_at_starts_or_exits += c.call == q.start || c.call == q.exit;
    }
    const Solution expected = SolveReference(problem);
    answers += expected.facts.size();
    for (uint64_t capacity : {uint64_t{0}, uint64_t{2}}) {
      ASSERT_OK_AND_ASSIGN(Solution got,
                           SolveResident(*dispatch_, problem, {.initial_capacity = capacity}));
      ASSERT_EQ(got, expected) << "seed " << seed << " capacity " << capacity;
    }
  }
  EXPECT_GT(calls_at_starts_or_exits, 100);
  EXPECT_GT(answers, 20000u) << "the problems must not be trivial: " << answers;
  EXPECT_EQ(dispatch_->device().memory().used, 0u);
}

TEST_P(DifferentialTest, RunningOutOfDeviceMemoryAnywhereIsResourceExhaustedAndFreesEverything) {
  // Devices too small for the solve: the set-up, a growth or the results find no memory. The
  // solve fails with ResourceExhausted, never a wrong answer, and gives every byte back; the
  // dispatcher stays usable. Larger devices solve it.
  GeneratorOptions o;
  o.seed = 3;
  o.procedures = 200;
  o.facts = 40;  // path edges outweigh the problem itself: the tables take most memory
  ASSERT_OK_AND_ASSIGN(Problem problem, Generate(o));
  const Solution expected = SolveReference(problem);
  // What the solve takes at its peak with room to spare; the devices below get fractions of it.
  ResidentStats unlimited;
  ASSERT_OK(SolveResident(*dispatch_, problem, {.initial_capacity = 2}, &unlimited).status());
  const uint64_t peak = unlimited.peak_device_bytes;
  int exhausted = 0, solved = 0;
  for (uint64_t eighths : {0u, 1u, 2u, 3u, 4u, 5u, 6u, 7u, 16u}) {
    const uint64_t limit = std::max<uint64_t>(4096, peak * eighths / 8);
    const uint64_t limit_kib = limit >> 10;
    ASSERT_OK_AND_ASSIGN(std::shared_ptr<CpuDevice> device,
                         CpuDevice::Create(DeviceOptions(limit)));
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<LocalDispatch> dispatch,
                         LocalDispatch::Create({.device = device}));
    // Tiny first tables: most of the memory is taken by growths, mid-solve.
    absl::StatusOr<Solution> got = SolveResident(*dispatch, problem, {.initial_capacity = 2});
    if (got.ok()) {
      ++solved;
      EXPECT_EQ(*got, expected) << limit_kib << " KiB";
    } else {
      ++exhausted;
      EXPECT_THAT(got, StatusIs(absl::StatusCode::kResourceExhausted)) << limit_kib << " KiB";
    }
    EXPECT_EQ(device->memory().used, 0u) << limit_kib << " KiB";
    ASSERT_OK_AND_ASSIGN(Resource r, dispatch->Allocate(64));
    EXPECT_OK(dispatch->Free(r));
  }
  EXPECT_GE(exhausted, 5) << "peak " << peak;
  EXPECT_GE(solved, 1) << "peak " << peak;
}

TEST_P(DifferentialTest, InitialCapacitiesPastTheTableLimitAreRefusedBeforeAllocating) {
  GeneratorOptions o;
  o.procedures = 3;
  ASSERT_OK_AND_ASSIGN(Problem problem, Generate(o));
  for (uint64_t capacity : {kMaxTableSlots + 1, uint64_t{1} << 62, ~uint64_t{0}}) {
    EXPECT_THAT(SolveResident(*dispatch_, problem, {.initial_capacity = capacity}),
                StatusIs(absl::StatusCode::kInvalidArgument))
        << capacity;
  }
  EXPECT_EQ(dispatch_->device().memory().used, 0u);
}

TEST_P(DifferentialTest, RepeatedRunsGiveIdenticalOutput) {
  GeneratorOptions o;
  o.seed = 99;
  o.procedures = 30;
  o.facts = 30;
  o.recursion = 0.5;
  ASSERT_OK_AND_ASSIGN(Problem problem, Generate(o));
  ASSERT_OK_AND_ASSIGN(Solution first, SolveResident(*dispatch_, problem));
  const std::string tsv = FormatTsv(problem, first, true);
  const std::string json = FormatJson(problem, first, false);
  for (int run = 0; run < 5; ++run) {
    ASSERT_OK_AND_ASSIGN(Solution again, SolveResident(*dispatch_, problem));
    EXPECT_EQ(FormatTsv(problem, again, true), tsv);
    EXPECT_EQ(FormatJson(problem, again, false), json);
  }
  ASSERT_OK_AND_ASSIGN(Problem regenerated, Generate(o));
  EXPECT_EQ(FormatTsv(regenerated, SolveReference(regenerated), true), tsv)
      << "the generator is deterministic";
}

// The results bitmap holds rows of one or more words per node (facts past 32 take several),
// in windows of as many nodes as max_result_words allows: a node, a row's words split across
// windows never, many windows or one, the answer is the same; and so it is whether the part of
// each window's listing read behind the kernel that lists it is a pair, a few pairs or all of
// it (the rest read after it).
TEST_P(DifferentialTest, ResultsListedInWindowsAndReadInPiecesOfAnyWidthAgree) {
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    GeneratorOptions o;
    o.seed = seed;
    o.procedures = 6 + static_cast<uint32_t>(seed % 4);
    o.facts = 33 + static_cast<uint32_t>((seed * 7) % 40);  // rows of two or three words
    ASSERT_OK_AND_ASSIGN(Problem problem, Generate(o));
    const Solution expected = SolveReference(problem);
    for (uint64_t words : {uint64_t{1}, uint64_t{2}, uint64_t{5}, uint64_t{64}, uint64_t{1} << 24}) {
      for (uint64_t piece : {uint64_t{1}, uint64_t{7}, uint64_t{1} << 20}) {
        ResidentOptions options;
        options.max_result_words = words;
        options.result_first_pairs = piece;
        ResidentStats stats;
        ASSERT_OK_AND_ASSIGN(Solution got, SolveResident(*dispatch_, problem, options, &stats));
        ASSERT_EQ(got, expected) << "seed " << seed << " facts " << o.facts << " words " << words
                                 << " piece " << piece;
        // A window holds as many nodes' rows as fit the words, at least one node.
        const uint64_t row = (uint64_t{problem.fact_count()} + 31) / 32;
        const uint64_t per_window = std::max<uint64_t>(1, words / row);
        EXPECT_EQ(stats.result_windows,
                  (problem.node_count() + per_window - 1) / per_window)
            << "words " << words;
      }
    }
  }
  EXPECT_EQ(dispatch_->device().memory().used, 0u) << "every buffer is freed";
}

TEST_P(DifferentialTest, WindowsArePolledWithTheStateWordsOnly) {
  GeneratorOptions o;
  o.seed = 5;
  o.procedures = 20;
  ASSERT_OK_AND_ASSIGN(Problem problem, Generate(o));
  const DeviceCounters before = dispatch_->device().counters();
  ResidentStats stats;
  ASSERT_OK(SolveResident(*dispatch_, problem, {}, &stats).status());
  const DeviceCounters after = dispatch_->device().counters();
  // Downloads: one state read per window (a growth reads nothing: the next window's prefix
  // finishes it), then the results' state (status and count) and results.
  const uint64_t state_bytes = 4 * kernels::ifds::State::kSlots;
  const uint64_t result_bytes = 8 + 8 * SolveReference(problem).facts.size();
  EXPECT_EQ(after.bytes_downloaded - before.bytes_downloaded,
            state_bytes * stats.windows + result_bytes);
  EXPECT_GE(stats.iterations, stats.windows);
}

}  // namespace
}  // namespace sluice::ifds
