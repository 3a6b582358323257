// Runs kernel passes on an NVIDIA GPU: one grid-stride CUDA kernel per body, launched on a
// caller-supplied stream. The thread count is resolved on the device, so indirect counts
// produced by earlier passes never travel to the host. Only compiled where nvcc exists.
#ifndef SLUICE_KERNELS_CUDA_LAUNCHER_H_
#define SLUICE_KERNELS_CUDA_LAUNCHER_H_

#include <cuda_runtime_api.h>

#include <chrono>
#include <span>

#include "sluice/kernels/body_list.h"
#include "sluice/kernels/kernel_args.h"
#include "sluice/kernels/kernel_id.h"

namespace sluice {

// Enqueues one pass on `stream`; binding views must point at device memory. `max_blocks`
// bounds the grid (grid-stride loops cover the rest). Returns the launch error, if any;
// execution errors surface at the next synchronization.
cudaError_t LaunchOnCuda(BodyId body, const KernelArgs& args, const ThreadCount& threads,
                         cudaStream_t stream, int max_blocks);

// Test hook: launches a kernel that traps, which leaves the context with a sticky error (as a
// faulting kernel would). Never reachable from a client.
cudaError_t LaunchTrapForTesting(cudaStream_t stream);

// Loads every kernel's module now (the test hook's trap kernel too): with lazy loading (the
// CUDA 13 default) a first launch inside a stream capture would load it mid-capture.
cudaError_t LoadCudaKernels();

// Runs each CUB-backed entry point below on one element and on many tiles, and waits (at most
// `limit` each time), so that the kernels CUB picks for small and for large inputs load, and
// fail if they cannot run, here and outside any capture. Returns the first error, or
// cudaErrorTimeout (work may still be running: the context needs a reset).
cudaError_t RunCudaLibrariesOnce(cudaStream_t stream, std::chrono::milliseconds limit);

// A library (CUB) form of a catalog kernel, which the CUDA device runs for a single step of that
// kernel instead of its portable passes wherever it applies (not inside captured graphs: CUB
// needs temporary storage sized per call). Written for one version of its kernel.
struct CudaFastPath {
  KernelId kernel;
  // Whether the library form applies to these (validated) arguments; where it does not, the
  // portable passes run.
  bool (*applies)(const KernelArgs& args);
  // Stores in *bytes the temporary storage it needs for these arguments.
  cudaError_t (*temp_bytes)(const KernelArgs& args, size_t* bytes, cudaStream_t stream);
  // Enqueues it on `stream`, with `temp` of `bytes` bytes (at least what temp_bytes said).
  cudaError_t (*run)(const KernelArgs& args, void* temp, size_t bytes, cudaStream_t stream);
};

// Every fast path, one per kernel: the table the CUDA device chooses from.
std::span<const CudaFastPath> CudaFastPaths();
// The fast path of `kernel` (name and version), or null when it has none.
const CudaFastPath* FindCudaFastPath(const KernelId& kernel);

// The CUB-backed functions behind the fast paths. Each takes `temp` of `*temp_bytes` bytes;
// with temp == nullptr it only stores the bytes it needs.

// exclusive_scan_u32: out[i] = in[0] + ... + in[i-1]; *total = the sum of all n; in may equal out.
cudaError_t ExclusiveScanU32OnCuda(void* temp, size_t* temp_bytes, const uint32_t* in,
                                   uint32_t* out, uint32_t* total, uint64_t n,
                                   cudaStream_t stream);

// sort_u64: sorts keys[0, n) by bits [0, end_bit) with `alt` as the second buffer; the result
// ends in `keys`.
cudaError_t SortU64OnCuda(void* temp, size_t* temp_bytes, uint64_t* keys, uint64_t* alt,
                          uint32_t n, int end_bit, cudaStream_t stream);

// compact_u32 when `out` holds at least n elements: keeps values[i] where flags[i] != 0, in
// order; *count = the number kept.
cudaError_t CompactU32OnCuda(void* temp, size_t* temp_bytes, const uint32_t* values,
                             const uint32_t* flags, uint32_t* out, uint32_t* count, uint64_t n,
                             cudaStream_t stream);

}  // namespace sluice

#endif  // SLUICE_KERNELS_CUDA_LAUNCHER_H_
