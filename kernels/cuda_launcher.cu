#include "kernels/cuda_launcher.h"

#include <array>
#include <cstdint>

namespace sluice {
namespace {

constexpr int kBlockThreads = 256;

template <class Body>
__global__ void __launch_bounds__(kBlockThreads) GridStride(KernelArgs args, ThreadCount threads) {
  const uint64_t n = threads.Resolve(args);
  const uint64_t stride = uint64_t{gridDim.x} * blockDim.x;
  for (uint64_t i = uint64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n; i += stride) {
    Body::Run(args, i, n);
  }
}

using LaunchFn = cudaError_t (*)(const KernelArgs&, const ThreadCount&, unsigned blocks,
                                 cudaStream_t);

template <class Body>
cudaError_t Launch(const KernelArgs& args, const ThreadCount& threads, unsigned blocks,
                   cudaStream_t stream) {
  GridStride<Body><<<blocks, kBlockThreads, 0, stream>>>(args, threads);
  return cudaPeekAtLastError();
}

constexpr std::array<LaunchFn, static_cast<size_t>(BodyId::kNumBodies)> kLaunchers = {
#define SLUICE_BODY_LAUNCH_(id, type) &Launch<type>,
    SLUICE_KERNEL_BODIES(SLUICE_BODY_LAUNCH_)
#undef SLUICE_BODY_LAUNCH_
};

}  // namespace

cudaError_t LaunchOnCuda(BodyId body, const KernelArgs& args, const ThreadCount& threads,
                         cudaStream_t stream, int max_blocks) {
  // The most threads this pass can need: the fixed count, or the cap of an indirect count.
  const uint64_t most = threads.count_binding < 0 ? threads.fixed : threads.cap;
  if (most == 0) return cudaSuccess;
  uint64_t blocks = (most + kBlockThreads - 1) / kBlockThreads;
  if (blocks > static_cast<uint64_t>(max_blocks)) blocks = static_cast<uint64_t>(max_blocks);
  return kLaunchers[static_cast<size_t>(body)](args, threads, static_cast<unsigned>(blocks),
                                               stream);
}

}  // namespace sluice
