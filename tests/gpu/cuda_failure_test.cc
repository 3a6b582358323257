// A sticky CUDA error on a live device: every session on it gets Unavailable saying why, and
// the next session to open resets the GPU and works (or, where the driver refuses the process
// the GPU after a reset, finds it lost, saying so); a fault whose first witness is a free fails
// the device then; a graph-loop probe that faults costs graph loops, not the GPU (or the GPU
// for this process, saying so). Its own binary, because a reset tears down the CUDA context of
// the whole process; tests/gpu/run.sh runs each test in a process of its own, since a GPU lost
// to one process stays lost to it. Skips without a GPU.
#include <memory>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sluice/client/local_dispatch.h"
#include "sluice/engine/cuda_device.h"
#include "tests/testing/bytes.h"
#include "tests/testing/local_cuda_harness.h"
#include "tests/testing/status_matchers.h"

namespace sluice::testing {
namespace {

using ::testing::HasSubstr;
using Code = absl::StatusCode;

// CUDA promises recovery from a sticky error only to a new process, and some drivers keep that
// promise to the letter: after cudaDeviceReset the GPU answers cudaErrorDevicesUnavailable for
// the rest of the process (an H200 on driver 580 does). Then the device is lost, and says so
// to everyone: the session that asked for the reset, every later one, and lost() (sluiced then
// exits 3 so that its supervisor restarts it).
void ExpectLostForTheProcess(LocalCudaHarness& harness, const absl::Status& reset) {
  EXPECT_THAT(reset, StatusIs(Code::kUnavailable, HasSubstr("sluiced must be restarted")));
  EXPECT_TRUE(harness.device()->lost());
  EXPECT_THAT(harness.NewDispatch(),
              StatusIs(Code::kUnavailable, HasSubstr("sluiced must be restarted")));
  EXPECT_EQ(harness.device()->counters().resets, 0u);
}

TEST(CudaFailureTest, AStickyErrorFailsEverySessionAndTheNextSessionResetsTheGpu) {
  LocalCudaHarness harness;
  SLUICE_SKIP_OR_FAIL_WITHOUT_BACKEND(harness);
  const std::vector<uint32_t> values = {1, 2, 3, 4};
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ResidentDispatch> first, harness.NewDispatch());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ResidentDispatch> second, harness.NewDispatch());
  ASSERT_OK_AND_ASSIGN(Resource kept, first->Allocate(16));
  ASSERT_OK(first->Upload(kept, AsBytes(values)));

  EXPECT_THAT(FailCudaDeviceForTesting(*harness.device()), StatusIs(Code::kUnavailable));

  // Every session on the failed device is told, with the reason.
  EXPECT_THAT(first->Download(kept),
              StatusIs(Code::kUnavailable, HasSubstr("the GPU failed")));
  EXPECT_THAT(second->Allocate(16), StatusIs(Code::kUnavailable));

  // The next session resets the GPU and runs, where the driver lets the process use it again.
  absl::StatusOr<std::unique_ptr<ResidentDispatch>> next = harness.NewDispatch();
  if (!next.ok()) {
    ExpectLostForTheProcess(harness, next.status());
    EXPECT_THAT(first->Download(kept), StatusIs(Code::kUnavailable));
    EXPECT_THAT(second->Allocate(16), StatusIs(Code::kUnavailable));
    return;
  }
  std::unique_ptr<ResidentDispatch> after = std::move(*next);
  ASSERT_OK_AND_ASSIGN(Resource fresh, after->Allocate(16));
  ASSERT_OK(after->Upload(fresh, AsBytes(values)));
  ASSERT_OK(after->Dispatch(Program{"iota_u32", {7, 1}}, std::vector<Resource>{fresh},
                            std::nullopt));
  EXPECT_EQ(FromBytes<uint32_t>(*after->Download(fresh)), (std::vector<uint32_t>{7, 8, 9, 10}));

  // Sessions from before the reset stay lost; their buffers died with the old context and
  // count against nothing.
  EXPECT_THAT(first->Download(kept), StatusIs(Code::kUnavailable, HasSubstr("reset")));
  EXPECT_THAT(second->Allocate(16), StatusIs(Code::kUnavailable, HasSubstr("reset")));
  first.reset();
  second.reset();
  EXPECT_EQ(harness.device()->memory().buffers(), 16u);
}

TEST(CudaFailureTest, AFaultThatAFreeSeesFirstFailsTheDeviceThen) {
  LocalCudaHarness harness;
  SLUICE_SKIP_OR_FAIL_WITHOUT_BACKEND(harness);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ResidentDispatch> first, harness.NewDispatch());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ResidentDispatch> second, harness.NewDispatch());
  ASSERT_OK_AND_ASSIGN(Resource doomed, first->Allocate(16));

  // The context breaks without the device knowing; a free is the first call to see it.
  ASSERT_OK(BreakCudaContextForTesting(*harness.device()));
  EXPECT_OK(first->Free(doomed));

  // Every session is told at its next call, naming the free that saw the fault.
  EXPECT_THAT(second->Allocate(16), StatusIs(Code::kUnavailable, HasSubstr("cudaFree")));

  // And the next session resets the GPU and runs, where the driver lets the process use it.
  absl::StatusOr<std::unique_ptr<ResidentDispatch>> next = harness.NewDispatch();
  if (!next.ok()) {
    ExpectLostForTheProcess(harness, next.status());
    return;
  }
  std::unique_ptr<ResidentDispatch> after = std::move(*next);
  ASSERT_OK_AND_ASSIGN(Resource fresh, after->Allocate(16));
  ASSERT_OK(after->Dispatch(Program{"iota_u32", {3, 2}}, std::vector<Resource>{fresh},
                            std::nullopt));
  EXPECT_EQ(FromBytes<uint32_t>(*after->Download(fresh)), (std::vector<uint32_t>{3, 5, 7, 9}));
}

TEST(CudaFailureTest, AProbeThatFaultsCostsGraphLoopsNotTheGpu) {
  {
    LocalCudaHarness plain;  // is there a GPU at all?
    SLUICE_SKIP_OR_FAIL_WITHOUT_BACKEND(plain);
  }
  LocalCudaHarness harness({.memory_limit = uint64_t{1} << 30, .fault_probe_for_testing = true});
  if (absl::Status created = harness.Available(); !created.ok()) {
    // The reset after the probe's fault could not bring the GPU back to this process (see
    // ExpectLostForTheProcess): creation says so, and a restart is the way back.
    EXPECT_THAT(created.message(), HasSubstr("could not be reset after a failure"));
    return;
  }
  // The device was reset at creation and serves without graph loops.
  EXPECT_THAT(harness.device()->info().version, HasSubstr("graph-per-iteration"));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ResidentDispatch> dispatch, harness.NewDispatch());
  ASSERT_OK_AND_ASSIGN(Resource word, dispatch->Allocate(8));
  ASSERT_OK(dispatch->Upload(word, AsBytes(std::vector<uint32_t>{5, 0})));
  // A guarded group: five iterations run of the thousand asked for.
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
  ASSERT_OK(dispatch->DispatchRepeatedSequenceReadRangesInto({}, group, 1000, reads,
                                                             absl::MakeSpan(outs)));
  EXPECT_EQ(FromBytes<uint32_t>(out), (std::vector<uint32_t>{0, 5}));
}

}  // namespace
}  // namespace sluice::testing
