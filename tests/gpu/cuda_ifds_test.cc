// The resident IFDS solver on the CUDA device against the reference solver, and what only the
// CUDA device does: graph replay of repeated groups, CUB scan and compaction. Skips without a
// GPU.
#include <memory>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sluice/client/local_dispatch.h"
#include "sluice/ifds/generator.h"
#include "sluice/ifds/reference_solver.h"
#include "sluice/ifds/resident_solver.h"
#include "tests/testing/bytes.h"
#include "tests/testing/local_cuda_harness.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/unstructured_problem.h"

namespace sluice::testing {
namespace {

class CudaIfdsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SLUICE_SKIP_OR_FAIL_WITHOUT_BACKEND(harness_);
    ASSERT_OK_AND_ASSIGN(dispatch_, harness_.NewDispatch());
  }
  LocalCudaHarness harness_;
  std::unique_ptr<ResidentDispatch> dispatch_;
};

TEST_F(CudaIfdsTest, ResidentOnCudaAgreesWithReference) {
  for (uint64_t seed = 1; seed <= 120; ++seed) {
    ifds::GeneratorOptions o;
    o.seed = seed;
    o.procedures = 1 + static_cast<uint32_t>((seed * 7) % 40);
    o.nodes_per_procedure = 2 + static_cast<uint32_t>((seed * 5) % 16);
    o.facts = 2 + static_cast<uint32_t>((seed * 11) % 60);
    o.recursion = (seed % 4) * 0.3;
    o.max_callees = 1 + seed % 4;
    o.identity = seed % 5 == 0 ? 0.0 : 0.85;
    ASSERT_OK_AND_ASSIGN(ifds::Problem problem, ifds::Generate(o));
    ifds::ResidentOptions options;
    options.initial_capacity = seed % 3 == 0 ? 4 : 0;  // a third grow from tiny tables
    options.early_exit = seed % 4 != 0;                // a quarter run full windows
    ASSERT_OK_AND_ASSIGN(ifds::Solution got, ifds::SolveResident(*dispatch_, problem, options));
    ASSERT_EQ(got, ifds::SolveReference(problem)) << "seed " << seed;
  }
  EXPECT_EQ(harness_.device()->memory().buffers(), 0u);
}

TEST_F(CudaIfdsTest, UnstructuredProblemsAgreeWithReference) {
  for (uint64_t seed = 1; seed <= 100; ++seed) {
    const ifds::Problem problem = UnstructuredProblem(seed);
    const ifds::Solution expected = ifds::SolveReference(problem);
    for (uint64_t capacity : {uint64_t{0}, uint64_t{2}}) {
      ASSERT_OK_AND_ASSIGN(
          ifds::Solution got,
          ifds::SolveResident(*dispatch_, problem, {.initial_capacity = capacity}));
      ASSERT_EQ(got, expected) << "seed " << seed << " capacity " << capacity;
    }
  }
  EXPECT_EQ(harness_.device()->memory().buffers(), 0u);
}

TEST_F(CudaIfdsTest, WithoutGraphLoopsTheSolverStillAgrees) {
  LocalCudaReplayHarness replay;
  ASSERT_OK(replay.Available());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ResidentDispatch> dispatch, replay.NewDispatch());
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    ifds::GeneratorOptions o;
    o.seed = seed;
    o.procedures = 5 + static_cast<uint32_t>(seed % 7);
    o.facts = 8 + static_cast<uint32_t>(seed % 13);
    o.seeds = 1 + static_cast<uint32_t>(seed % 5);
    ASSERT_OK_AND_ASSIGN(ifds::Problem problem, ifds::Generate(o));
    ifds::ResidentOptions options;
    options.initial_capacity = seed % 2 == 0 ? 4 : 0;
    options.early_exit = seed % 3 != 0;
    ASSERT_OK_AND_ASSIGN(ifds::Solution got, ifds::SolveResident(*dispatch, problem, options));
    ASSERT_EQ(got, ifds::SolveReference(problem)) << "seed " << seed;
  }
}

TEST_F(CudaIfdsTest, ALargeProblemAgreesWithReference) {
  ifds::GeneratorOptions o;
  o.procedures = 1500;
  o.facts = 64;
  o.nodes_per_procedure = 16;
  ASSERT_OK_AND_ASSIGN(ifds::Problem problem, ifds::Generate(o));
  ifds::ResidentStats stats;
  ASSERT_OK_AND_ASSIGN(ifds::Solution got, ifds::SolveResident(*dispatch_, problem, {}, &stats));
  EXPECT_EQ(got, ifds::SolveReference(problem));
  EXPECT_GT(stats.path_edges, 1000000u);
}

TEST_F(CudaIfdsTest, RepeatedGroupsReplayOneCapturedGraph) {
  // Replays count every pass of every iteration, and a second window of the same group reuses
  // the captured graph; the result equals the iteration count either way.
  EXPECT_THAT(harness_.device()->info().version, ::testing::HasSubstr("graph-loops"))
      << "this GPU cannot run CUDA graph loops: repeated groups fall back to one graph launch "
         "per iteration (see the daemon's log line)";
  ASSERT_OK_AND_ASSIGN(Resource counter, dispatch_->Allocate(4));
  const Program add{"atomic_add_u32", {0, 1}};
  const Step step{&add, {&counter, 1}, std::nullopt};
  std::vector<uint8_t> out;
  std::vector<std::vector<uint8_t>*> outs = {&out};
  const std::vector<ReadRange> reads = {{counter, 0, 4}};
  for (int window = 0; window < 3; ++window) {
    const DeviceCounters before = harness_.device()->counters();
    ASSERT_OK(dispatch_->DispatchRepeatedSequenceReadRangesInto({}, {&step, 1}, 10000, reads,
                                                                absl::MakeSpan(outs)));
    const DeviceCounters after = harness_.device()->counters();
    EXPECT_EQ(after.launches - before.launches, 10000u);
    EXPECT_EQ(after.synchronizations - before.synchronizations, 1u);
    EXPECT_EQ(FromBytes<uint32_t>(out), std::vector<uint32_t>{10000u * (window + 1)});
  }
}

TEST_F(CudaIfdsTest, AGuardThatStopsEarlyStopsTheHostEnqueuing) {
  // Four billion iterations asked for, ten run: once the guard reads zero the host must stop
  // enqueueing batches (67 million of them otherwise), and the passes counted stay near what ran.
  ASSERT_OK_AND_ASSIGN(Resource word, dispatch_->Allocate(8));
  ASSERT_OK(dispatch_->Upload(word, AsBytes(std::vector<uint32_t>{10, 0})));
  const Program guard{"repeat_while_u32", {0}};
  const Program spend{"atomic_add_u32", {0, 0xffffffffu}};
  const Program count_one{"atomic_add_u32", {1, 1}};
  const std::vector<Resource> bind = {word};
  const std::vector<Step> group = {{&guard, bind, std::nullopt},
                                   {&spend, bind, std::nullopt},
                                   {&count_one, bind, std::nullopt}};
  std::vector<uint8_t> out;
  std::vector<std::vector<uint8_t>*> outs = {&out};
  const std::vector<ReadRange> reads = {{word, 0, 8}};
  const DeviceCounters before = harness_.device()->counters();
  ASSERT_OK(dispatch_->DispatchRepeatedSequenceReadRangesInto({}, group, 4000000000u, reads,
                                                              absl::MakeSpan(outs)));
  EXPECT_EQ(FromBytes<uint32_t>(out), (std::vector<uint32_t>{0, 10}));
  EXPECT_LE(harness_.device()->counters().launches - before.launches, 2u * 64 * 4);
}

TEST_F(CudaIfdsTest, CubScanAndCompactionMatchTheHost) {
  const size_t n = (size_t{1} << 22) + 5;
  const std::vector<uint32_t> values = RandomU32(n, 77, 1000);
  const std::vector<uint32_t> flags = RandomU32(n, 78, 2);
  auto upload = [&](const std::vector<uint32_t>& v) {
    Resource r = *dispatch_->Allocate(v.size() * 4);
    EXPECT_OK(dispatch_->Upload(r, AsBytes(v)));
    return r;
  };
  Resource in = upload(values), f = upload(flags);
  Resource out = upload(std::vector<uint32_t>(n)), total = upload({0}), count = upload({0});
  Resource status = upload({0}), scratch = upload(std::vector<uint32_t>((n + 2047) / 2048));
  ASSERT_OK(dispatch_->Dispatch(Program{"exclusive_scan_u32", {}},
                                std::vector<Resource>{in, out, total, scratch}, std::nullopt));
  std::vector<uint32_t> scanned = FromBytes<uint32_t>(*dispatch_->Download(out));
  uint32_t running = 0;
  for (size_t i = 0; i < n; ++i) {
    ASSERT_EQ(scanned[i], running) << i;
    running += values[i];
  }
  EXPECT_EQ(FromBytes<uint32_t>(*dispatch_->Download(total)), std::vector<uint32_t>{running});
  ASSERT_OK(dispatch_->Dispatch(Program{"compact_u32", {}},
                                std::vector<Resource>{in, f, out, count, status, scratch},
                                std::nullopt));
  std::vector<uint32_t> kept;
  for (size_t i = 0; i < n; ++i) {
    if (flags[i] != 0) kept.push_back(values[i]);
  }
  std::vector<uint32_t> got = FromBytes<uint32_t>(*dispatch_->Download(out));
  got.resize(kept.size());
  EXPECT_EQ(got, kept);
  EXPECT_EQ(FromBytes<uint32_t>(*dispatch_->Download(count)),
            std::vector<uint32_t>{static_cast<uint32_t>(kept.size())});
}

}  // namespace
}  // namespace sluice::testing
