// The recovery policy of a device whose context can break, driven through a fake GPU that
// fails as a real one does: a fault breaks the context until a reset, a broken context fails
// every call (the probe's included), and a reset may itself fail.
#include "sluice/engine/device_health.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace sluice::testing {
namespace {

using ::testing::Each;
using ::testing::HasSubstr;
using Code = absl::StatusCode;
using Outcome = DeviceRuntime::ProbeOutcome;
using Severity = DeviceHealth::Severity;

class FakeGpu : public DeviceRuntime {
 public:
  // The context has a sticky error: every call fails until a reset.
  bool broken = false;
  // The graph-loop probe faults (a loop kernel that traps), breaking the context.
  bool probe_faults = false;
  // Graph loops run as specified (else the probe reports them unavailable, harmlessly).
  bool loops_supported = true;
  // Resets fail (as CUDA's may: recovery is promised only to a new process).
  bool reset_fails = false;

  int probes = 0;
  int resets = 0;
  int responsive_checks = 0;
  // Whether the device was marked failed at each probe and reset.
  std::vector<bool> failed_at_reset;
  std::vector<bool> failed_at_probe;
  const DeviceHealth* health = nullptr;

  ProbeResult ProbeGraphLoops() override {
    ++probes;
    if (health != nullptr) failed_at_probe.push_back(health->failed());
    if (broken || probe_faults) {
      broken = true;
      return {Outcome::kFault, "cudaErrorIllegalAddress: an illegal memory access"};
    }
    if (!loops_supported) return {Outcome::kNoLoops, "cudaErrorNotSupported"};
    return {Outcome::kLoops, ""};
  }
  absl::Status Reset() override {
    ++resets;
    if (health != nullptr) failed_at_reset.push_back(health->failed());
    if (reset_fails) return absl::InternalError("cudaSetDevice: no CUDA-capable device");
    broken = false;
    return absl::OkStatus();
  }
  bool Responsive() override {
    ++responsive_checks;
    return !broken;
  }
};

class DeviceHealthTest : public ::testing::Test {
 protected:
  DeviceHealthTest() : health_("GPU 0", &gpu_) { gpu_.health = &health_; }

  // A fault as a failing call reports it: the context breaks, the call says so.
  absl::Status Fault(const std::string& what) {
    gpu_.broken = true;
    return health_.Fail(Severity::kFault, what, absl::InternalError(what));
  }

  FakeGpu gpu_;
  DeviceHealth health_;
};

TEST_F(DeviceHealthTest, AProbeThatSucceedsTurnsGraphLoopsOn) {
  ASSERT_OK(health_.Start(/*graph_loops=*/true));
  EXPECT_TRUE(health_.graph_loops());
  EXPECT_EQ(gpu_.probes, 1);
  EXPECT_EQ(gpu_.resets, 0);
  EXPECT_OK(health_.Usable(health_.epoch()));
}

TEST_F(DeviceHealthTest, WithoutGraphLoopsAskedForNothingIsProbed) {
  ASSERT_OK(health_.Start(/*graph_loops=*/false));
  EXPECT_FALSE(health_.graph_loops());
  EXPECT_EQ(gpu_.probes, 0);
}

TEST_F(DeviceHealthTest, AProbeThatFindsNoLoopsCostsNoReset) {
  gpu_.loops_supported = false;
  ASSERT_OK(health_.Start(true));
  EXPECT_FALSE(health_.graph_loops());
  EXPECT_EQ(gpu_.resets, 0);
  EXPECT_FALSE(health_.failed());
}

TEST_F(DeviceHealthTest, AProbeThatFaultsAtStartCostsGraphLoopsNotTheDevice) {
  gpu_.probe_faults = true;
  const uint64_t before = health_.epoch();
  ASSERT_OK(health_.Start(true));
  EXPECT_FALSE(health_.graph_loops());
  EXPECT_FALSE(health_.failed());
  EXPECT_FALSE(health_.lost());
  EXPECT_FALSE(gpu_.broken) << "the reset ran";
  EXPECT_EQ(gpu_.resets, 1);
  EXPECT_EQ(gpu_.probes, 1) << "no probe after the reset";
  EXPECT_GT(health_.epoch(), before);
  EXPECT_OK(health_.Usable(health_.epoch()));
}

TEST_F(DeviceHealthTest, AProbeFaultWhoseResetFailsFailsStartAndLosesTheDevice) {
  gpu_.probe_faults = true;
  gpu_.reset_fails = true;
  EXPECT_THAT(health_.Start(true), StatusIs(Code::kUnavailable, HasSubstr("could not be reset")));
  EXPECT_TRUE(health_.lost());
}

TEST_F(DeviceHealthTest, AFaultFailsEveryUserOfTheDeviceSayingWhy) {
  ASSERT_OK(health_.Start(true));
  const uint64_t epoch = health_.epoch();
  EXPECT_THAT(Fault("kernel.cu:10: cudaStreamSynchronize: cudaErrorIllegalAddress"),
              StatusIs(Code::kUnavailable, HasSubstr("cudaErrorIllegalAddress")));
  EXPECT_TRUE(health_.failed());
  EXPECT_THAT(health_.Usable(epoch),
              StatusIs(Code::kUnavailable, HasSubstr("the GPU failed (kernel.cu:10")));
}

TEST_F(DeviceHealthTest, TheFirstFaultIsTheOneReported) {
  ASSERT_OK(health_.Start(false));
  EXPECT_THAT(Fault("first"), StatusIs(Code::kUnavailable));
  EXPECT_THAT(Fault("second"), StatusIs(Code::kUnavailable, HasSubstr("second")));
  EXPECT_THAT(health_.Usable(health_.epoch()),
              StatusIs(Code::kUnavailable, HasSubstr("(first)")));
  EXPECT_EQ(health_.failures(), 1u) << "one failure until a reset, however many calls see it";
}

TEST_F(DeviceHealthTest, AnErrorIsThatCallsAloneAndNeedsNoCheck) {
  ASSERT_OK(health_.Start(false));
  EXPECT_THAT(health_.Fail(Severity::kError, "cudaMemcpyAsync: invalid argument",
                           absl::InternalError("as it was")),
              StatusIs(Code::kInternal, HasSubstr("as it was")));
  EXPECT_FALSE(health_.failed());
  EXPECT_EQ(gpu_.responsive_checks, 0);
}

TEST_F(DeviceHealthTest, ASuspectErrorFromAContextThatStillRunsWorkIsThatCallsAlone) {
  ASSERT_OK(health_.Start(false));
  EXPECT_THAT(health_.Fail(Severity::kSuspect, "cudaErrorUnknown",
                           absl::InternalError("cudaErrorUnknown")),
              StatusIs(Code::kInternal));
  EXPECT_FALSE(health_.failed());
  EXPECT_EQ(gpu_.responsive_checks, 1);
}

TEST_F(DeviceHealthTest, ASuspectErrorFromABrokenContextFailsTheDevice) {
  ASSERT_OK(health_.Start(false));
  gpu_.broken = true;
  EXPECT_THAT(health_.Fail(Severity::kSuspect, "cudaErrorUnknown",
                           absl::InternalError("cudaErrorUnknown")),
              StatusIs(Code::kUnavailable, HasSubstr("cudaErrorUnknown")));
  EXPECT_TRUE(health_.failed());
  EXPECT_EQ(gpu_.responsive_checks, 1);
}

TEST_F(DeviceHealthTest, AResetBringsTheDeviceBackForNewWorkOnly) {
  ASSERT_OK(health_.Start(true));
  const uint64_t old_epoch = health_.epoch();
  ASSERT_THAT(Fault("a fault"), StatusIs(Code::kUnavailable));
  ASSERT_OK(health_.ResetIfFailed());
  EXPECT_FALSE(health_.failed());
  EXPECT_TRUE(health_.graph_loops()) << "the probe after the reset passed";
  EXPECT_EQ(gpu_.probes, 2);
  EXPECT_OK(health_.Usable(health_.epoch()));
  EXPECT_THAT(health_.Usable(old_epoch), StatusIs(Code::kUnavailable, HasSubstr("reset")));
  EXPECT_EQ(health_.failures(), 1u);
  EXPECT_EQ(health_.resets(), 1u);
}

TEST_F(DeviceHealthTest, AHealthyDeviceIsNotReset) {
  ASSERT_OK(health_.Start(true));
  const uint64_t epoch = health_.epoch();
  ASSERT_OK(health_.ResetIfFailed());
  EXPECT_EQ(gpu_.resets, 0);
  EXPECT_EQ(health_.epoch(), epoch);
}

TEST_F(DeviceHealthTest, AResetWhoseProbeFaultsResetsAgainWithoutItBeforeServing) {
  ASSERT_OK(health_.Start(true));
  ASSERT_THAT(Fault("a fault"), StatusIs(Code::kUnavailable));
  gpu_.probe_faults = true;  // the probe itself now breaks the fresh context
  ASSERT_OK(health_.ResetIfFailed());
  EXPECT_EQ(gpu_.resets, 2);
  EXPECT_EQ(gpu_.probes, 2) << "one at start, one after the first reset, none after the second";
  EXPECT_FALSE(health_.graph_loops());
  EXPECT_FALSE(gpu_.broken);
  EXPECT_FALSE(health_.failed());
  // Never declared healthy on the context the probe broke.
  EXPECT_THAT(gpu_.failed_at_reset, Each(true));
  EXPECT_THAT(gpu_.failed_at_probe, ::testing::ElementsAre(false, true));
  // Later faults reset without probing: graph loops stay off.
  ASSERT_THAT(Fault("another fault"), StatusIs(Code::kUnavailable));
  ASSERT_OK(health_.ResetIfFailed());
  EXPECT_EQ(gpu_.resets, 3);
  EXPECT_EQ(gpu_.probes, 2);
}

TEST_F(DeviceHealthTest, AResetThatFailsLosesTheDeviceAndIsNotTriedAgain) {
  ASSERT_OK(health_.Start(false));
  ASSERT_THAT(Fault("a fault"), StatusIs(Code::kUnavailable));
  gpu_.reset_fails = true;
  EXPECT_THAT(health_.ResetIfFailed(),
              StatusIs(Code::kUnavailable, HasSubstr("sluiced must be restarted")));
  EXPECT_TRUE(health_.lost());
  EXPECT_THAT(health_.ResetIfFailed(), StatusIs(Code::kUnavailable));
  EXPECT_EQ(gpu_.resets, 1);
  EXPECT_THAT(health_.Usable(health_.epoch()), StatusIs(Code::kUnavailable));
}

}  // namespace
}  // namespace sluice::testing
