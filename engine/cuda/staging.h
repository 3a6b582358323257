// One CUDA stream's page-locked host memory for transfers: a ring of staging slots that an
// upload fills on the host (with every core) while the previous slot's DMA runs, and an arena
// that reads land in until their operation synchronizes, so that a read is one asynchronous
// copy however many there are. Counted in the device's host_pinned figure. Private to
// engine/cuda/; not thread-safe: the stream's owner uses it, holding the device's use mutex.
#ifndef SLUICE_ENGINE_CUDA_STAGING_H_
#define SLUICE_ENGINE_CUDA_STAGING_H_

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "sluice/engine/cuda/device_impl.h"
#include "sluice/engine/cuda_device.h"

namespace sluice {

class PinnedStaging {
 public:
  // A read that landed in the arena, for its destination.
  struct PendingRead {
    const uint8_t* pinned;
    absl::Span<uint8_t> dst;
  };

  PinnedStaging(CudaDeviceImpl* device, cudaStream_t stream)
      : device_(device), stream_(stream) {}

  // Allocates the ring. Errors of the device (ResourceExhausted without pinned memory).
  absl::Status Init();
  // Enqueues a copy of `src` to device address `dst` through the ring.
  absl::Status CopyIn(uint8_t* dst, absl::Span<const uint8_t> src);
  // Enqueues a copy of dst.size() bytes at device address `src`: into the arena, the bytes
  // reaching `dst` when EndOperation's reads are delivered; or, for a read the arena cannot
  // hold, through the ring piece by piece (waiting for each: the operation still synchronizes
  // once).
  absl::Status CopyOut(const uint8_t* src, absl::Span<uint8_t> dst);
  // Ends the operation: returns the reads waiting in the arena (to deliver once the stream
  // has synchronized) and makes the ring and the arena reusable.
  std::vector<PendingRead> EndOperation();
  // Copies waiting reads to their destinations (on every core).
  void Deliver(absl::Span<const PendingRead> reads);
  // Frees every pinned block (only uncounts them when the context is gone).
  void Release(bool context_alive);

 private:
  struct Slot {
    uint8_t* host = nullptr;  // pinned
    cudaEvent_t done = nullptr;
  };

  // A slot with at least `n` free bytes at its cursor (waits for the slot's last DMA).
  absl::StatusOr<uint8_t*> Stage(uint64_t n);
  // Room for `n` bytes in the arena; null when it cannot grow (the ring serves then).
  uint8_t* ArenaSpace(uint64_t n);

  static constexpr uint64_t kSlotBytes = 8 << 20;
  static constexpr int kSlots = 4;
  static constexpr uint64_t kArenaBlock = 4 << 20;
  static constexpr uint64_t kMaxArenaBytes = 256 << 20;  // of one stream
  static_assert(kSlotBytes * kSlots == kCudaStagingRingBytes, "the ring GetInfo counts");

  CudaDeviceImpl* const device_;
  const cudaStream_t stream_;
  Slot slots_[kSlots];
  int slot_ = 0;            // slot in use
  uint64_t slot_used_ = 0;  // bytes of it taken by this operation
  std::vector<std::pair<uint8_t*, uint64_t>> arena_;  // pinned blocks for reads
  size_t arena_block_ = 0;
  uint64_t arena_used_ = 0;
  std::vector<PendingRead> pending_;
};

}  // namespace sluice

#endif  // SLUICE_ENGINE_CUDA_STAGING_H_
