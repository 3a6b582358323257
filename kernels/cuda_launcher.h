// Runs kernel passes on an NVIDIA GPU: one grid-stride CUDA kernel per body, launched on a
// caller-supplied stream. The thread count is resolved on the device, so indirect counts
// produced by earlier passes never travel to the host. Only compiled where nvcc exists.
#ifndef SLUICE_KERNELS_CUDA_LAUNCHER_H_
#define SLUICE_KERNELS_CUDA_LAUNCHER_H_

#include <cuda_runtime_api.h>

#include "kernels/bodies.h"
#include "kernels/kernel_args.h"

namespace sluice {

// Enqueues one pass on `stream`; binding views must point at device memory. `max_blocks`
// bounds the grid (grid-stride loops cover the rest). Returns the launch error, if any;
// execution errors surface at the next synchronization.
cudaError_t LaunchOnCuda(BodyId body, const KernelArgs& args, const ThreadCount& threads,
                         cudaStream_t stream, int max_blocks);

}  // namespace sluice

#endif  // SLUICE_KERNELS_CUDA_LAUNCHER_H_
