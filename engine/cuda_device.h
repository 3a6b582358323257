// The CUDA device: resident buffers in GPU memory (cudaMalloc only, never managed memory), one
// CUDA stream per session, uploads staged through pinned host memory, ranged asynchronous copies
// both ways, every sequence enqueued and synchronized once, and repeated groups captured once
// into a CUDA graph (cached by programs and bindings) whose WHILE node runs batches of
// iterations with no per-iteration host work and ends them early when the group's loop guard
// reads zero. A sticky CUDA error marks the device failed: every session on it gets Unavailable
// saying why, and the next session to open resets the device and carries on (the policy is
// engine/device_health.h). Graph loops are probed at creation and after each reset; a
// probe that faults costs graph loops, not the GPU. Sluice's kernels are loaded, and CUB's run
// once on small and large inputs, at creation and after a reset; a CUB step never runs (nor
// loads a kernel) during another session's graph capture, and without memory for CUB's
// temporary storage the portable passes run. memory() counts CUB's temporary storage and loop
// words as scratch and each session's pinned staging ring and read arena as host_pinned.
//
// This header does not depend on CUDA: it is included by the device factory whether or not the
// build has CUDA, and the CUDA device is chosen at run time.
#ifndef SLUICE_ENGINE_CUDA_DEVICE_H_
#define SLUICE_ENGINE_CUDA_DEVICE_H_

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "sluice/engine/device.h"

namespace sluice {

// Page-locked host memory for transfers: each stream (session) holds a staging ring of this
// many bytes for uploads, and reads land in arenas that all streams together hold at most
// CudaDeviceOptions::pinned_read_bytes of (a read past that goes through the ring).
inline constexpr uint64_t kCudaStagingRingBytes = uint64_t{32} << 20;
inline constexpr uint64_t kCudaDefaultPinnedReadBytes = uint64_t{1} << 30;

// The most page-locked host memory a CUDA device holds with `streams` streams open.
constexpr uint64_t CudaPinnedBound(uint32_t streams, uint64_t pinned_read_bytes) {
  return uint64_t{streams} * kCudaStagingRingBytes + pinned_read_bytes;
}

struct CudaDeviceOptions {
  int ordinal = 0;            // which GPU
  uint64_t memory_limit = 0;  // bytes the device hands out; 0: 90% of the GPU's free memory
  // Page-locked host memory the read arenas of all streams may hold together.
  uint64_t pinned_read_bytes = kCudaDefaultPinnedReadBytes;
  int copy_threads = 0;       // host threads for staging copies; 0: every hardware thread
  // Run repeated groups as WHILE graph loops where the GPU can (probed at creation). False, or
  // where the probe fails, each iteration is one graph launch and the host reads loop guards.
  bool graph_loops = true;
  // Test hook: the graph-loop probe runs a kernel that traps instead, as a probe that faults
  // would, so that the reset at creation is checked on a real GPU.
  bool fault_probe_for_testing = false;
};

// True when this build has the CUDA device.
bool CudaDeviceBuilt();

// The number of usable GPUs (0 without CUDA, a driver or a GPU). Thread-safe.
int CudaDeviceCount();

// Unavailable when this build has no CUDA, or the GPU cannot be used (its message says why).
absl::StatusOr<std::shared_ptr<Device>> CreateCudaDevice(const CudaDeviceOptions& options);

// Test hook: makes `device`, a CUDA device, hit a sticky CUDA error as a faulting kernel would,
// and returns the status that reports it (Unavailable). Every session on the device then gets
// Unavailable, and the next session to open resets it. InvalidArgument for any other device;
// Unimplemented in a build without CUDA.
absl::Status FailCudaDeviceForTesting(Device& device);

// Test hook: breaks `device`'s CUDA context as a faulting kernel would, without telling the
// device, so that the next CUDA call of any session is the first to see the fault. OK once the
// context is broken; InvalidArgument for any other device; Unimplemented without CUDA.
absl::Status BreakCudaContextForTesting(Device& device);

}  // namespace sluice

#endif  // SLUICE_ENGINE_CUDA_DEVICE_H_
