// What a CUDA error code means for the device: the call's alone, a suspect, or a broken context;
// and what a graph-loop probe's result means. Pure functions of the code, so they are tested on
// any machine that has the CUDA headers, GPU or not. Only compiled where nvcc exists.
#ifndef SLUICE_ENGINE_CUDA_ERRORS_H_
#define SLUICE_ENGINE_CUDA_ERRORS_H_

#include <driver_types.h>

#include "sluice/engine/device_health.h"

namespace sluice {

// kFault for the errors after which the CUDA context is unusable until a reset (sticky errors:
// faults in kernels, ECC, a contained or MPS failure); kSuspect for cudaErrorUnknown outside a
// stream capture (sometimes a fault, sometimes not: the device checks); kError otherwise,
// cudaErrorUnknown inside a capture included (nothing runs during a capture, and a wait there
// would break it; a context that is broken fails the next call outside it).
DeviceHealth::Severity CudaErrorSeverity(cudaError_t error, bool capturing);

// The graph-loop probe's result: kLoops for success; kFault where the probe may have broken the
// context or did not finish (a sticky error, cudaErrorUnknown, cudaErrorTimeout); kNoLoops for
// anything else (unsupported, wrong results).
DeviceRuntime::ProbeOutcome CudaProbeOutcome(cudaError_t error);

}  // namespace sluice

#endif  // SLUICE_ENGINE_CUDA_ERRORS_H_
