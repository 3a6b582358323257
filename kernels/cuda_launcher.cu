#include "kernels/cuda_launcher.h"

#include <array>
#include <cstdint>

#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_reduce.cuh>
#include <cub/device/device_scan.cuh>
#include <cub/device/device_select.cuh>

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
  return cudaGetLastError();
}

constexpr std::array<LaunchFn, static_cast<size_t>(BodyId::kNumBodies)> kLaunchers = {
#define SLUICE_BODY_LAUNCH_(id, type) &Launch<type>,
    SLUICE_KERNEL_BODIES(SLUICE_BODY_LAUNCH_)
#undef SLUICE_BODY_LAUNCH_
};

template <class Body>
cudaError_t Load() {
  cudaFuncAttributes attributes;
  return cudaFuncGetAttributes(&attributes, GridStride<Body>);
}

__device__ unsigned GoOn(const uint32_t* remaining, const uint32_t* guard) {
  return *remaining > 0 && (guard == nullptr || *guard != 0) ? 1u : 0u;
}

__global__ void LoopStart(cudaGraphConditionalHandle loop, const uint32_t* remaining,
                          const uint32_t* guard) {
  cudaGraphSetConditional(loop, GoOn(remaining, guard));
}

__global__ void LoopNext(cudaGraphConditionalHandle loop, uint32_t* remaining,
                         const uint32_t* guard) {
  *remaining -= 1;
  cudaGraphSetConditional(loop, GoOn(remaining, guard));
}

__global__ void StoreU32(uint32_t* word, uint32_t value) { *word = value; }

// CUB's temporary storage must be aligned; two uses share one allocation.
size_t Align(size_t bytes) { return (bytes + 255) & ~size_t{255}; }

}  // namespace

cudaError_t LaunchLoopStart(cudaGraphConditionalHandle loop, const uint32_t* remaining,
                            const uint32_t* guard, cudaStream_t stream) {
  LoopStart<<<1, 1, 0, stream>>>(loop, remaining, guard);
  return cudaGetLastError();
}

cudaError_t LaunchLoopNext(cudaGraphConditionalHandle loop, uint32_t* remaining,
                           const uint32_t* guard, cudaStream_t stream) {
  LoopNext<<<1, 1, 0, stream>>>(loop, remaining, guard);
  return cudaGetLastError();
}

cudaError_t LaunchStoreU32(uint32_t* word, uint32_t value, cudaStream_t stream) {
  StoreU32<<<1, 1, 0, stream>>>(word, value);
  return cudaGetLastError();
}

cudaError_t ProbeGraphLoops(cudaStream_t stream) {
  uint32_t* remaining = nullptr;
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  uint32_t left = 1;
  cudaError_t err = cudaMalloc(&remaining, sizeof(uint32_t));
  if (err == cudaSuccess) err = cudaGraphCreate(&graph, 0);
  cudaGraphConditionalHandle loop{};
  if (err == cudaSuccess) err = cudaGraphConditionalHandleCreate(&loop, graph, 0, 0);
  if (err == cudaSuccess) {
    cudaKernelNodeParams start{};
    void* start_args[] = {&loop, &remaining, nullptr};
    const uint32_t* no_guard = nullptr;
    start_args[2] = &no_guard;
    start.func = reinterpret_cast<void*>(&LoopStart);
    start.gridDim = dim3(1);
    start.blockDim = dim3(1);
    start.kernelParams = start_args;
    cudaGraphNode_t start_node = nullptr;
    err = cudaGraphAddKernelNode(&start_node, graph, nullptr, 0, &start);
    cudaGraphNodeParams params{};
    params.type = cudaGraphNodeTypeConditional;
    params.conditional.handle = loop;
    params.conditional.type = cudaGraphCondTypeWhile;
    params.conditional.size = 1;
    cudaGraphNode_t while_node = nullptr;
    if (err == cudaSuccess) {
      err = cudaGraphAddNode(&while_node, graph, &start_node, nullptr, 1, &params);
    }
    if (err == cudaSuccess) {
      cudaKernelNodeParams next = start;
      next.func = reinterpret_cast<void*>(&LoopNext);
      cudaGraphNode_t next_node = nullptr;
      err = cudaGraphAddKernelNode(&next_node, params.conditional.phGraph_out[0], nullptr, 0,
                                   &next);
    }
  }
  if (err == cudaSuccess) err = cudaGraphInstantiate(&exec, graph, 0);
  if (err == cudaSuccess) err = LaunchStoreU32(remaining, 3, stream);
  if (err == cudaSuccess) err = cudaGraphLaunch(exec, stream);
  if (err == cudaSuccess) {
    err = cudaMemcpyAsync(&left, remaining, sizeof(left), cudaMemcpyDeviceToHost, stream);
  }
  if (err == cudaSuccess) err = cudaStreamSynchronize(stream);
  if (err == cudaSuccess && left != 0) err = cudaErrorNotSupported;
  if (exec != nullptr) cudaGraphExecDestroy(exec);
  if (graph != nullptr) cudaGraphDestroy(graph);
  if (remaining != nullptr) cudaFree(remaining);
  return err;
}

cudaError_t LoadCudaKernels() {
  cudaFuncAttributes attributes;
  for (const void* control : {reinterpret_cast<const void*>(&LoopStart),
                              reinterpret_cast<const void*>(&LoopNext),
                              reinterpret_cast<const void*>(&StoreU32)}) {
    if (cudaError_t e = cudaFuncGetAttributes(&attributes, control); e != cudaSuccess) return e;
  }
  cudaError_t first = cudaSuccess;
#define SLUICE_BODY_LOAD_(id, type)                       \
  if (cudaError_t e = Load<type>(); first == cudaSuccess) first = e;
  SLUICE_KERNEL_BODIES(SLUICE_BODY_LOAD_)
#undef SLUICE_BODY_LOAD_
  return first;
}

cudaError_t ExclusiveScanU32OnCuda(void* temp, size_t* temp_bytes, const uint32_t* in,
                                   uint32_t* out, uint32_t* total, uint64_t n,
                                   cudaStream_t stream) {
  // The total is reduced first: with in == out the scan overwrites the last input.
  size_t reduce_bytes = 0, scan_bytes = 0;
  cudaError_t err = cub::DeviceReduce::Sum(nullptr, reduce_bytes, in, total, n, stream);
  if (err != cudaSuccess) return err;
  err = cub::DeviceScan::ExclusiveSum(nullptr, scan_bytes, in, out, n, stream);
  if (err != cudaSuccess) return err;
  const size_t needed = Align(reduce_bytes) + Align(scan_bytes);
  if (temp == nullptr) {
    *temp_bytes = needed;
    return cudaSuccess;
  }
  if (*temp_bytes < needed) return cudaErrorInvalidValue;
  char* base = static_cast<char*>(temp);
  err = cub::DeviceReduce::Sum(base, reduce_bytes, in, total, n, stream);
  if (err != cudaSuccess) return err;
  return cub::DeviceScan::ExclusiveSum(base + Align(reduce_bytes), scan_bytes, in, out, n,
                                       stream);
}

cudaError_t SortU64OnCuda(void* temp, size_t* temp_bytes, uint64_t* keys, uint64_t* alt,
                          uint32_t n, int end_bit, cudaStream_t stream) {
  cub::DoubleBuffer<uint64_t> buffers(keys, alt);
  if (temp == nullptr) {
    return cub::DeviceRadixSort::SortKeys(nullptr, *temp_bytes, buffers, n, 0, end_bit, stream);
  }
  size_t bytes = *temp_bytes;
  cudaError_t err =
      cub::DeviceRadixSort::SortKeys(temp, bytes, buffers, n, 0, end_bit, stream);
  if (err != cudaSuccess || buffers.Current() == keys || n == 0) return err;
  return cudaMemcpyAsync(keys, buffers.Current(), uint64_t{n} * sizeof(uint64_t),
                         cudaMemcpyDeviceToDevice, stream);
}

cudaError_t CompactU32OnCuda(void* temp, size_t* temp_bytes, const uint32_t* values,
                             const uint32_t* flags, uint32_t* out, uint32_t* count, uint64_t n,
                             cudaStream_t stream) {
  size_t bytes = 0;
  cudaError_t err = cub::DeviceSelect::Flagged(nullptr, bytes, values, flags, out, count, n, stream);
  if (err != cudaSuccess) return err;
  if (temp == nullptr) {
    *temp_bytes = Align(bytes);
    return cudaSuccess;
  }
  if (*temp_bytes < bytes) return cudaErrorInvalidValue;
  return cub::DeviceSelect::Flagged(temp, bytes, values, flags, out, count, n, stream);
}

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
