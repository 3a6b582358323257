// One session's ordered queue of work on the CUDA device: a CUDA stream with its staging ring
// and read arena (staging.h), its graph cache (graphs.h), its library forms of kernels
// (cub_steps.h) and the words its graph loops keep. Private to engine/cuda/.
#ifndef SLUICE_ENGINE_CUDA_STREAM_H_
#define SLUICE_ENGINE_CUDA_STREAM_H_

#include <cuda_runtime_api.h>

#include <atomic>
#include <cstdint>
#include <string_view>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "sluice/engine/cuda/cub_steps.h"
#include "sluice/engine/cuda/device_impl.h"
#include "sluice/engine/cuda/graphs.h"
#include "sluice/engine/cuda/staging.h"
#include "sluice/engine/device.h"
#include "sluice/kernels/cuda_loops.h"

namespace sluice {

class CudaStreamImpl final : public Stream {
 public:
  // Takes `stream`, made at `epoch` of `device`.
  CudaStreamImpl(CudaDeviceImpl* device, cudaStream_t stream, uint64_t epoch)
      : device_(device),
        stream_(stream),
        epoch_(epoch),
        staging_(device, stream),
        graphs_(device, stream),
        cub_(device, stream) {}
  ~CudaStreamImpl() override;

  // Allocates what the stream keeps; errors of the device. Called once, before any other call.
  absl::Status Init();
  absl::Status CopyIn(DeviceBuffer dst, uint64_t offset, absl::Span<const uint8_t> src) override;
  absl::Status CopyOut(DeviceBuffer src, uint64_t offset, absl::Span<uint8_t> dst) override;
  absl::Status Launch(const PlannedStep& step, const Interrupt& interrupt) override;
  absl::Status LaunchRepeated(absl::Span<const PlannedStep> steps, uint32_t count,
                              const Interrupt& interrupt) override;
  absl::Status Synchronize() override;
  absl::Status Usable() const override { return device_->Usable(epoch_); }

 private:
  // Repeats by launching a one-iteration graph `count` times; the host reads a loop guard.
  // Takes the client's turn on the device (FairShare) before work is enqueued; when the turn
  // is owed to another client, the work enqueued so far finishes first (so the time it takes
  // is charged to this client) and the turn passes. Called outside the device's use lock: a
  // wait for the turn must never hold back a reset.
  absl::Status TakeTurn(const Interrupt& interrupt, std::string_view what);
  // Between batches of a repeated group, with the device's use lock held (as a reader): lets
  // the enqueued work finish, gives the turn up without the lock, and takes both back.
  absl::Status PauseLocked(const Interrupt& interrupt, std::string_view what);
  absl::Status ReplayIterations(absl::Span<const PlannedStep> steps, uint32_t count,
                                const Interrupt& interrupt);
  // Frees what Init allocated (only uncounts it when the context is gone).
  void Release(bool context_alive);

  // Iterations one graph launch runs on the device; at most two launches are in flight, so a
  // cancellation (checked between launches) takes effect within a batch or two.
  static constexpr uint32_t kReplayBatch = 64;

  CudaDeviceImpl* const device_;
  const cudaStream_t stream_;
  const uint64_t epoch_;
  PinnedStaging staging_;
  GraphCache graphs_;
  CubSteps cub_;
  uint32_t* loop_remaining_ = nullptr;  // device word: iterations left in the running launch
  uint32_t* loop_stopped_ = nullptr;    // mapped pinned word: a loop guard read zero
  LoopWords loop_words_{};              // the loop words' device addresses
  uint32_t* guard_host_ = nullptr;      // pinned: a loop guard read back without graph loops
  uint64_t scratch_bytes_ = 0;          // device memory of its own, counted as scratch
  cudaEvent_t batch_done_[2] = {nullptr, nullptr};
};

}  // namespace sluice

#endif  // SLUICE_ENGINE_CUDA_STREAM_H_
