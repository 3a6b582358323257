#include "sluice/kernels/cuda_launcher.h"

#include <algorithm>
#include <array>
#include <cstdint>

#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_reduce.cuh>
#include <cub/device/device_scan.cuh>
#include <cub/device/device_select.cuh>
#include <thrust/iterator/transform_iterator.h>

#include "sluice/kernels/bodies.h"
#include "sluice/kernels/cuda_wait.h"

namespace sluice {
namespace {

constexpr int kBlockThreads = 256;

struct NonZero {
  __host__ __device__ bool operator()(uint32_t word) const { return word != 0; }
};

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

__global__ void Trap() { __trap(); }

// CUB's temporary storage must be aligned; two uses share one allocation.
size_t Align(size_t bytes) { return (bytes + 255) & ~size_t{255}; }

}  // namespace

cudaError_t LaunchTrapForTesting(cudaStream_t stream) {
  Trap<<<1, 1, 0, stream>>>();
  return cudaGetLastError();
}

cudaError_t LoadCudaKernels() {
  cudaError_t first = cudaSuccess;
#define SLUICE_BODY_LOAD_(id, type)                       \
  if (cudaError_t e = Load<type>(); first == cudaSuccess) first = e;
  SLUICE_KERNEL_BODIES(SLUICE_BODY_LOAD_)
#undef SLUICE_BODY_LOAD_
  cudaFuncAttributes attributes;
  if (cudaError_t e = cudaFuncGetAttributes(&attributes, Trap); first == cudaSuccess) first = e;
  return first;
}

cudaError_t RunCudaLibrariesOnce(cudaStream_t stream, std::chrono::milliseconds limit) {
  // CUB picks its kernels by size: one tile takes the single-tile kernels, many tiles the
  // multi-block ones (two-pass reduce, onesweep radix sort). Both sizes run.
  for (const uint64_t n : {uint64_t{1}, uint64_t{1} << 16}) {
    size_t scan_bytes = 0, sort_bytes = 0, compact_bytes = 0;
    cudaError_t err =
        ExclusiveScanU32OnCuda(nullptr, &scan_bytes, nullptr, nullptr, nullptr, n, stream);
    if (err == cudaSuccess) {
      err = SortU64OnCuda(nullptr, &sort_bytes, nullptr, nullptr, static_cast<uint32_t>(n), 64,
                          stream);
    }
    if (err == cudaSuccess) {
      err = CompactU32OnCuda(nullptr, &compact_bytes, nullptr, nullptr, nullptr, nullptr, n,
                             stream);
    }
    if (err != cudaSuccess) return err;
    // One allocation: keys and alt (u64), then in, out, flags, values (u32), two u32 words
    // (total, count), then the temporary storage, each part 256-byte aligned.
    const size_t keys_bytes = Align(n * sizeof(uint64_t));
    const size_t words_bytes = Align(n * sizeof(uint32_t));
    const size_t operands = 2 * keys_bytes + 4 * words_bytes + Align(2 * sizeof(uint32_t));
    const size_t temp_bytes = std::max({scan_bytes, sort_bytes, compact_bytes, size_t{1}});
    char* memory = nullptr;
    err = cudaMalloc(&memory, operands + temp_bytes);
    if (err != cudaSuccess) return err;
    uint64_t* keys = reinterpret_cast<uint64_t*>(memory);
    uint64_t* alt = reinterpret_cast<uint64_t*>(memory + keys_bytes);
    char* at = memory + 2 * keys_bytes;
    const auto words = [&at, words_bytes] {
      uint32_t* w = reinterpret_cast<uint32_t*>(at);
      at += words_bytes;
      return w;
    };
    uint32_t* in = words();
    uint32_t* out = words();
    uint32_t* flags = words();
    uint32_t* values = words();
    uint32_t* total = reinterpret_cast<uint32_t*>(at);
    uint32_t* count = total + 1;
    void* temp = memory + operands;
    // Contents do not matter, only that they are defined: ones everywhere.
    err = cudaMemsetAsync(memory, 1, operands, stream);
    size_t bytes = temp_bytes;
    if (err == cudaSuccess) {
      err = ExclusiveScanU32OnCuda(temp, &bytes, in, out, total, n, stream);
    }
    bytes = temp_bytes;
    if (err == cudaSuccess) {
      err = SortU64OnCuda(temp, &bytes, keys, alt, static_cast<uint32_t>(n), 64, stream);
    }
    bytes = temp_bytes;
    if (err == cudaSuccess) {
      err = CompactU32OnCuda(temp, &bytes, values, flags, out, count, n, stream);
    }
    if (err == cudaSuccess) err = SynchronizeWithin(stream, limit);
    // Work still running at a timeout may yet use the memory: the reset that follows takes it.
    if (err == cudaErrorTimeout) return err;
    cudaFree(memory);
    if (err != cudaSuccess) return err;
  }
  return cudaSuccess;
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
                             const uint32_t* raw_flags, uint32_t* out, uint32_t* count,
                             uint64_t n, cudaStream_t stream) {
  // A flag is any nonzero word, as in the portable body. CUB is given 0 or 1: some CUB
  // releases add the flag word itself to the output position, so a flag of 7 would skip
  // six slots and write past `out`.
  const auto flags = thrust::make_transform_iterator(raw_flags, NonZero{});
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

namespace {

using kernels::CompactU32;
using kernels::ScanU32;
using kernels::SortU64;

bool Always(const KernelArgs&) { return true; }

cudaError_t ScanTempBytes(const KernelArgs& a, size_t* bytes, cudaStream_t stream) {
  const DeviceSpan<uint32_t> in = a.As<uint32_t>(ScanU32::kIn);
  return ExclusiveScanU32OnCuda(nullptr, bytes, in.data, nullptr, nullptr, in.size, stream);
}

cudaError_t ScanRun(const KernelArgs& a, void* temp, size_t bytes, cudaStream_t stream) {
  const DeviceSpan<uint32_t> in = a.As<uint32_t>(ScanU32::kIn);
  return ExclusiveScanU32OnCuda(temp, &bytes, in.data, a.As<uint32_t>(ScanU32::kOut).data,
                                a.As<uint32_t>(ScanU32::kTotal).data, in.size, stream);
}

int SortEndBit(const KernelArgs& a) { return 8 * SortU64::Rounds(a.param[SortU64::kBits]); }

// CUB reads and writes both buffers whole: only when they are distinct (or nothing is sorted).
bool SortApplies(const KernelArgs& a) {
  return a.param[SortU64::kCount] == 0 || SortEndBit(a) == 0 ||
         a.As<uint64_t>(SortU64::kKeys).data != a.As<uint64_t>(SortU64::kAlt).data;
}

cudaError_t SortTempBytes(const KernelArgs& a, size_t* bytes, cudaStream_t stream) {
  const uint64_t count = a.param[SortU64::kCount];
  if (count == 0 || SortEndBit(a) == 0) {  // nothing to sort
    *bytes = 0;
    return cudaSuccess;
  }
  return SortU64OnCuda(nullptr, bytes, a.As<uint64_t>(SortU64::kKeys).data,
                       a.As<uint64_t>(SortU64::kAlt).data, static_cast<uint32_t>(count),
                       SortEndBit(a), stream);
}

cudaError_t SortRun(const KernelArgs& a, void* temp, size_t bytes, cudaStream_t stream) {
  const uint64_t count = a.param[SortU64::kCount];
  if (count == 0 || SortEndBit(a) == 0) return cudaSuccess;
  return SortU64OnCuda(temp, &bytes, a.As<uint64_t>(SortU64::kKeys).data,
                       a.As<uint64_t>(SortU64::kAlt).data, static_cast<uint32_t>(count),
                       SortEndBit(a), stream);
}

// CUB writes every kept value: only when `out` can hold them all and aliases no input (else
// the portable passes run, and raise the overflow flag if `out` is short).
bool CompactApplies(const KernelArgs& a) {
  const DeviceSpan<uint32_t> values = a.As<uint32_t>(CompactU32::kValues);
  const DeviceSpan<uint32_t> out = a.As<uint32_t>(CompactU32::kOut);
  return out.size >= values.size && out.data != values.data &&
         out.data != a.As<uint32_t>(CompactU32::kFlags).data;
}

cudaError_t CompactTempBytes(const KernelArgs& a, size_t* bytes, cudaStream_t stream) {
  const DeviceSpan<uint32_t> values = a.As<uint32_t>(CompactU32::kValues);
  return CompactU32OnCuda(nullptr, bytes, values.data, nullptr, nullptr, nullptr, values.size,
                          stream);
}

cudaError_t CompactRun(const KernelArgs& a, void* temp, size_t bytes, cudaStream_t stream) {
  const DeviceSpan<uint32_t> values = a.As<uint32_t>(CompactU32::kValues);
  return CompactU32OnCuda(temp, &bytes, values.data, a.As<uint32_t>(CompactU32::kFlags).data,
                          a.As<uint32_t>(CompactU32::kOut).data,
                          a.As<uint32_t>(CompactU32::kCount).data, values.size, stream);
}

constexpr CudaFastPath kFastPaths[] = {
    {kernels::kExclusiveScanU32Kernel, Always, ScanTempBytes, ScanRun},
    {kernels::kSortU64Kernel, SortApplies, SortTempBytes, SortRun},
    {kernels::kCompactU32Kernel, CompactApplies, CompactTempBytes, CompactRun},
};

}  // namespace

std::span<const CudaFastPath> CudaFastPaths() { return kFastPaths; }

const CudaFastPath* FindCudaFastPath(const KernelId& kernel) {
  for (const CudaFastPath& path : kFastPaths) {
    if (path.kernel.name == kernel.name) {
      return path.kernel.version == kernel.version ? &path : nullptr;
    }
  }
  return nullptr;
}

}  // namespace sluice
