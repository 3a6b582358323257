#include "sluice/engine/cuda/errors.h"

#include <cuda_runtime_api.h>

namespace sluice {
namespace {

bool IsSticky(cudaError_t e) {
  switch (e) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorHardwareStackError:
    case cudaErrorAssert:
    case cudaErrorLaunchTimeout:
    case cudaErrorECCUncorrectable:
#if CUDART_VERSION >= 12080
    case cudaErrorContained:  // an uncontained error Hopper's containment caught
    case cudaErrorTensorMemoryLeak:
#endif
    case cudaErrorMpsClientTerminated:
    case cudaErrorExternalDevice:
      return true;
    default:
      return false;
  }
}

}  // namespace

DeviceHealth::Severity CudaErrorSeverity(cudaError_t error, bool capturing) {
  if (IsSticky(error)) return DeviceHealth::Severity::kFault;
  if (error == cudaErrorUnknown && !capturing) return DeviceHealth::Severity::kSuspect;
  return DeviceHealth::Severity::kError;
}

DeviceRuntime::ProbeOutcome CudaProbeOutcome(cudaError_t error) {
  if (error == cudaSuccess) return DeviceRuntime::ProbeOutcome::kLoops;
  if (IsSticky(error) || error == cudaErrorUnknown || error == cudaErrorTimeout) {
    return DeviceRuntime::ProbeOutcome::kFault;
  }
  return DeviceRuntime::ProbeOutcome::kNoLoops;
}

}  // namespace sluice
