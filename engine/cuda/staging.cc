#include "sluice/engine/cuda/staging.h"

#include <algorithm>

#include "absl/synchronization/mutex.h"
#include "sluice/base/thread_pool.h"

namespace sluice {

absl::Status PinnedStaging::Init() {
  for (Slot& slot : slots_) {
    CUDA_RETURN_IF_ERROR(device_, device_->AllocHostPinned(reinterpret_cast<void**>(&slot.host),
                                                           kSlotBytes, cudaHostAllocDefault));
    CUDA_RETURN_IF_ERROR(device_, cudaEventCreateWithFlags(&slot.done, cudaEventDisableTiming));
  }
  return absl::OkStatus();
}

void PinnedStaging::Release(bool context_alive) {
  for (Slot& slot : slots_) {
    if (context_alive && slot.done != nullptr) cudaEventDestroy(slot.done);
    device_->FreeHostPinned(slot.host, kSlotBytes, context_alive);
    slot = Slot{};
  }
  for (auto& [block, bytes] : arena_) {
    device_->FreeHostPinned(block, bytes, context_alive);
    device_->ReleasePinnedReads(bytes);
  }
  arena_.clear();
}

absl::StatusOr<uint8_t*> PinnedStaging::Stage(uint64_t n) {
  if (slot_used_ + n > kSlotBytes) {
    slot_ = (slot_ + 1) % kSlots;
    slot_used_ = 0;
    // Its previous DMA must be done before the host writes it again.
    CUDA_RETURN_IF_ERROR(device_, cudaEventSynchronize(slots_[slot_].done));
  }
  uint8_t* at = slots_[slot_].host + slot_used_;
  slot_used_ += n;
  return at;
}

absl::Status PinnedStaging::CopyIn(uint8_t* dst, absl::Span<const uint8_t> src) {
  uint64_t done = 0;
  while (done < src.size()) {
    const uint64_t n = std::min<uint64_t>(kSlotBytes, src.size() - done);
    absl::StatusOr<uint8_t*> staged = Stage(n);
    if (!staged.ok()) return staged.status();
    ParallelCopy(device_->copy_pool(), *staged, src.data() + done, n);
    CUDA_RETURN_IF_ERROR(device_, cudaMemcpyAsync(dst + done, *staged, n,
                                                  cudaMemcpyHostToDevice, stream_));
    CUDA_RETURN_IF_ERROR(device_, cudaEventRecord(slots_[slot_].done, stream_));
    done += n;
  }
  return absl::OkStatus();
}

uint8_t* PinnedStaging::ArenaSpace(uint64_t n) {
  while (arena_block_ < arena_.size() && arena_used_ + n > arena_[arena_block_].second) {
    ++arena_block_;
    arena_used_ = 0;
  }
  if (arena_block_ == arena_.size()) {
    uint64_t total = 0;
    for (const auto& [block, bytes] : arena_) total += bytes;
    const uint64_t size = std::max(kArenaBlock, n);
    if (total + size > kMaxArenaBytes) return nullptr;
    // The arenas of all streams together stay within the device's limit.
    if (!device_->ReservePinnedReads(size)) return nullptr;
    void* block = nullptr;
    cudaError_t err;
    {
      absl::ReaderMutexLock no_capture(&device_->capture_mutex());
      err = device_->AllocHostPinned(&block, size, cudaHostAllocDefault);
    }
    if (err != cudaSuccess) {
      cudaGetLastError();  // short of pinned memory: the caller reads through the staging ring
      device_->ReleasePinnedReads(size);
      return nullptr;
    }
    arena_.emplace_back(static_cast<uint8_t*>(block), size);
    arena_used_ = 0;
  }
  uint8_t* at = arena_[arena_block_].first + arena_used_;
  arena_used_ += n;
  return at;
}

absl::Status PinnedStaging::CopyOut(const uint8_t* src, absl::Span<uint8_t> dst) {
  if (dst.empty()) return absl::OkStatus();
  if (uint8_t* pinned = ArenaSpace(dst.size()); pinned != nullptr) {
    CUDA_RETURN_IF_ERROR(device_, cudaMemcpyAsync(pinned, src, dst.size(),
                                                  cudaMemcpyDeviceToHost, stream_));
    pending_.push_back(PendingRead{pinned, dst});
    return absl::OkStatus();
  }
  // Too large for the arena: through the staging ring, piece by piece.
  uint64_t done = 0;
  while (done < dst.size()) {
    const uint64_t n = std::min<uint64_t>(kSlotBytes, dst.size() - done);
    absl::StatusOr<uint8_t*> staged = Stage(kSlotBytes);
    if (!staged.ok()) return staged.status();
    CUDA_RETURN_IF_ERROR(device_, cudaMemcpyAsync(*staged, src + done, n,
                                                  cudaMemcpyDeviceToHost, stream_));
    CUDA_RETURN_IF_ERROR(device_, cudaEventRecord(slots_[slot_].done, stream_));
    CUDA_RETURN_IF_ERROR(device_, cudaEventSynchronize(slots_[slot_].done));
    ParallelCopy(device_->copy_pool(), dst.data() + done, *staged, n);
    done += n;
  }
  return absl::OkStatus();
}

std::vector<PinnedStaging::PendingRead> PinnedStaging::EndOperation() {
  std::vector<PendingRead> reads = std::move(pending_);
  pending_.clear();
  slot_used_ = 0;
  arena_block_ = 0;
  arena_used_ = 0;
  return reads;
}

void PinnedStaging::Deliver(absl::Span<const PendingRead> reads) {
  for (const PendingRead& r : reads) {
    ParallelCopy(device_->copy_pool(), r.dst.data(), r.pinned, r.dst.size());
  }
}

}  // namespace sluice
