// How the CUDA device reads error codes: which break the context, which it checks first, and
// what a graph-loop probe's result costs. Needs the CUDA headers, not a GPU.
#include "sluice/engine/cuda/errors.h"

#include <cuda_runtime_api.h>

#include "gtest/gtest.h"

namespace sluice {
namespace {

using Severity = DeviceHealth::Severity;
using Outcome = DeviceRuntime::ProbeOutcome;

TEST(CudaErrorsTest, KernelFaultsBreakTheContext) {
  for (cudaError_t e : {cudaErrorIllegalAddress, cudaErrorLaunchFailure, cudaErrorAssert,
                        cudaErrorIllegalInstruction, cudaErrorMisalignedAddress,
                        cudaErrorECCUncorrectable, cudaErrorLaunchTimeout}) {
    EXPECT_EQ(CudaErrorSeverity(e, false), Severity::kFault) << cudaGetErrorName(e);
    EXPECT_EQ(CudaErrorSeverity(e, true), Severity::kFault) << cudaGetErrorName(e);
  }
}

TEST(CudaErrorsTest, AnUnknownErrorIsCheckedOutsideACaptureAndTheCallsAloneInside) {
  EXPECT_EQ(CudaErrorSeverity(cudaErrorUnknown, /*capturing=*/false), Severity::kSuspect);
  EXPECT_EQ(CudaErrorSeverity(cudaErrorUnknown, /*capturing=*/true), Severity::kError);
}

TEST(CudaErrorsTest, ErrorsOfOneCallLeaveTheContextAlone) {
  for (cudaError_t e : {cudaErrorMemoryAllocation, cudaErrorInvalidValue, cudaErrorNotSupported,
                        cudaErrorStreamCaptureInvalidated, cudaErrorInvalidResourceHandle}) {
    EXPECT_EQ(CudaErrorSeverity(e, false), Severity::kError) << cudaGetErrorName(e);
  }
}

TEST(CudaErrorsTest, AProbeThatFaultsOrHangsMayHaveBrokenTheContext) {
  EXPECT_EQ(CudaProbeOutcome(cudaSuccess), Outcome::kLoops);
  for (cudaError_t e : {cudaErrorIllegalAddress, cudaErrorLaunchFailure, cudaErrorUnknown,
                        cudaErrorTimeout}) {
    EXPECT_EQ(CudaProbeOutcome(e), Outcome::kFault) << cudaGetErrorName(e);
  }
}

TEST(CudaErrorsTest, AProbeThatIsRefusedOrWrongOnlyCostsGraphLoops) {
  for (cudaError_t e : {cudaErrorNotSupported, cudaErrorInvalidValue, cudaErrorSymbolNotFound,
                        cudaErrorStreamCaptureUnsupported, cudaErrorInvalidDeviceFunction}) {
    EXPECT_EQ(CudaProbeOutcome(e), Outcome::kNoLoops) << cudaGetErrorName(e);
  }
}

}  // namespace
}  // namespace sluice
