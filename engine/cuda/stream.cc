#include "sluice/engine/cuda/stream.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "sluice/base/status_macros.h"

namespace sluice {

absl::Status CudaStreamImpl::Init() {
  RETURN_IF_ERROR(staging_.Init());
  for (cudaEvent_t& e : batch_done_) {
    CUDA_RETURN_IF_ERROR(device_, cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  }
  // The loop words only where graph loops run: mapped pinned memory is needed for nothing else.
  if (device_->graph_loops()) {
    RETURN_IF_ERROR(device_->ReserveScratch(sizeof(uint32_t)));
    scratch_bytes_ += sizeof(uint32_t);
    CUDA_RETURN_IF_ERROR(device_, cudaMalloc(reinterpret_cast<void**>(&loop_remaining_),
                                             sizeof(uint32_t)));
    CUDA_RETURN_IF_ERROR(device_,
                         device_->AllocHostPinned(reinterpret_cast<void**>(&loop_stopped_),
                                                  sizeof(uint32_t), cudaHostAllocMapped));
    loop_words_.remaining = loop_remaining_;
    CUDA_RETURN_IF_ERROR(device_,
                         cudaHostGetDevicePointer(reinterpret_cast<void**>(&loop_words_.stopped),
                                                  loop_stopped_, 0));
  }
  CUDA_RETURN_IF_ERROR(device_, device_->AllocHostPinned(reinterpret_cast<void**>(&guard_host_),
                                                         sizeof(uint32_t), cudaHostAllocDefault));
  return absl::OkStatus();
}

void CudaStreamImpl::Release(bool context_alive) {
  graphs_.Release(context_alive);
  cub_.Release(context_alive);
  staging_.Release(context_alive);
  if (loop_remaining_ != nullptr && context_alive) cudaFree(loop_remaining_);
  loop_remaining_ = nullptr;
  device_->ReleaseScratch(scratch_bytes_);
  scratch_bytes_ = 0;
  device_->FreeHostPinned(loop_stopped_, sizeof(uint32_t), context_alive);
  loop_stopped_ = nullptr;
  device_->FreeHostPinned(guard_host_, sizeof(uint32_t), context_alive);
  guard_host_ = nullptr;
  for (cudaEvent_t& e : batch_done_) {
    if (e != nullptr && context_alive) cudaEventDestroy(e);
    e = nullptr;
  }
}

CudaStreamImpl::~CudaStreamImpl() {
  absl::ReaderMutexLock use(&device_->use_mutex());
  // After a reset every handle of this stream died with the old context: touch none of them.
  if (device_->epoch() != epoch_) {
    Release(/*context_alive=*/false);
    return;
  }
  absl::ReaderMutexLock no_capture(&device_->capture_mutex());
  device_->Select();
  // A fault this wait is the first to see fails the device now, for every session on it.
  device_->FailUnawaited(cudaStreamSynchronize(stream_), "cudaStreamSynchronize (closing a stream)",
                         __FILE__, __LINE__);
  Release(/*context_alive=*/true);
  cudaStreamDestroy(stream_);
  cudaGetLastError();
}

absl::Status CudaStreamImpl::CopyIn(DeviceBuffer dst, uint64_t offset,
                                    absl::Span<const uint8_t> src) {
  absl::ReaderMutexLock use(&device_->use_mutex());
  device_->Select();
  if (absl::Status usable = device_->Usable(epoch_); !usable.ok()) return usable;
  RETURN_IF_ERROR(staging_.CopyIn(dst.data + offset, src));
  device_->counter_set().AddUploaded(src.size());
  return absl::OkStatus();
}

absl::Status CudaStreamImpl::CopyOut(DeviceBuffer src, uint64_t offset, absl::Span<uint8_t> dst) {
  absl::ReaderMutexLock use(&device_->use_mutex());
  device_->Select();
  if (absl::Status usable = device_->Usable(epoch_); !usable.ok()) return usable;
  device_->counter_set().AddDownloaded(dst.size());
  return staging_.CopyOut(src.data + offset, dst);
}

absl::Status CudaStreamImpl::TakeTurn(const Interrupt& interrupt, std::string_view what) {
  if (interrupt.PauseRequested()) {
    {
      absl::ReaderMutexLock use(&device_->use_mutex());
      device_->Select();
      if (absl::Status usable = device_->Usable(epoch_); !usable.ok()) return usable;
      const cudaError_t err = cudaStreamSynchronize(stream_);
      if (err != cudaSuccess) {
        return device_->Fail(err, "cudaStreamSynchronize", __FILE__, __LINE__);
      }
    }
    if (!interrupt.Pause()) return interrupt.Why(absl::StrFormat("before %s", what));
  }
  if (!interrupt.Enter()) {
    return interrupt.Why(absl::StrFormat("%s, waiting for the device", what));
  }
  return absl::OkStatus();
}

absl::Status CudaStreamImpl::PauseLocked(const Interrupt& interrupt, std::string_view what) {
  const cudaError_t err = cudaStreamSynchronize(stream_);
  if (err != cudaSuccess) return device_->Fail(err, "cudaStreamSynchronize", __FILE__, __LINE__);
  // The wait for the turn holds no lock: a reset never waits for another client's quantum.
  device_->use_mutex().ReaderUnlock();
  const bool resumed = interrupt.Pause();
  device_->use_mutex().ReaderLock();
  device_->Select();
  if (absl::Status usable = device_->Usable(epoch_); !usable.ok()) return usable;
  if (!resumed) return interrupt.Why(what);
  return absl::OkStatus();
}

absl::Status CudaStreamImpl::Launch(const PlannedStep& step, const Interrupt& interrupt) {
  RETURN_IF_ERROR(TakeTurn(interrupt, step.kernel.name));
  absl::ReaderMutexLock use(&device_->use_mutex());
  device_->Select();
  if (absl::Status usable = device_->Usable(epoch_); !usable.ok()) return usable;
  // Enqueued work runs to its end: the check is before the step.
  if (interrupt.Stopped()) return interrupt.Why(absl::StrFormat("before %s", step.kernel.name));
  ASSIGN_OR_RETURN(const bool library, cub_.Launch(step));
  if (!library) RETURN_IF_ERROR(device_->EnqueuePasses(step, stream_));
  device_->counter_set().AddLaunches(step.passes.size());
  return absl::OkStatus();
}

absl::Status CudaStreamImpl::LaunchRepeated(absl::Span<const PlannedStep> steps, uint32_t count,
                                            const Interrupt& interrupt) {
  if (count > 0 && !steps.empty()) RETURN_IF_ERROR(TakeTurn(interrupt, "the repeated group"));
  absl::ReaderMutexLock use(&device_->use_mutex());
  device_->Select();
  if (absl::Status usable = device_->Usable(epoch_); !usable.ok()) return usable;
  if (count == 0 || steps.empty()) return absl::OkStatus();
  if (!device_->graph_loops() || loop_stopped_ == nullptr) {
    return ReplayIterations(steps, count, interrupt);
  }
  // The group is captured once; each launch of the graph runs a batch of iterations on the
  // device, so the host's work is per batch, never per iteration.
  absl::StatusOr<cudaGraphExec_t> exec = graphs_.Get(steps, /*loop=*/true, loop_words_);
  if (!exec.ok()) return exec.status();
  uint64_t passes = 0;
  for (const PlannedStep& step : steps) passes += step.passes.size();
  // Every operation synchronizes before it returns, so no launch of this stream can write the
  // flag now.
  volatile uint32_t* const stopped = loop_stopped_;
  *stopped = 0;
  uint32_t enqueued = 0;
  for (uint32_t batch = 0; enqueued < count; ++batch) {
    if (batch >= 2) {
      // The launch two batches back must be done before another is enqueued; once a guard has
      // stopped a loop, the remaining batches would do nothing.
      CUDA_RETURN_IF_ERROR(device_, cudaEventSynchronize(batch_done_[batch % 2]));
      if (*stopped != 0) break;
    }
    if (batch > 0 && interrupt.PauseRequested()) {
      // The turn is owed to another client: what is enqueued finishes, the turn passes, and
      // the group goes on from here once it is back.
      if (absl::Status paused = PauseLocked(
              interrupt, absl::StrFormat("the repeated group with %d of %d iterations enqueued",
                                         enqueued, count));
          !paused.ok()) {
        device_->counter_set().AddLaunches(passes * enqueued);
        return paused;
      }
      if (*stopped != 0) break;
    }
    if (interrupt.Stopped()) {
      device_->counter_set().AddLaunches(passes * enqueued);
      return interrupt.Why(absl::StrFormat("the repeated group with %d of %d iterations enqueued",
                                           enqueued, count));
    }
    const uint32_t n = std::min(kReplayBatch, count - enqueued);
    CUDA_RETURN_IF_ERROR(device_, LaunchStoreU32(loop_remaining_, n, stream_));
    CUDA_RETURN_IF_ERROR(device_, cudaGraphLaunch(*exec, stream_));
    CUDA_RETURN_IF_ERROR(device_, cudaEventRecord(batch_done_[batch % 2], stream_));
    enqueued += n;
  }
  // Passes enqueued: iterations a guard skipped within the last batches are counted too.
  device_->counter_set().AddLaunches(passes * enqueued);
  return absl::OkStatus();
}

absl::Status CudaStreamImpl::ReplayIterations(absl::Span<const PlannedStep> steps,
                                              uint32_t count, const Interrupt& interrupt) {
  absl::StatusOr<cudaGraphExec_t> exec = graphs_.Get(steps, /*loop=*/false, loop_words_);
  if (!exec.ok()) return exec.status();
  const uint32_t* guard = steps.front().guard;
  uint64_t passes = 0;
  for (const PlannedStep& step : steps) passes += step.passes.size();
  uint32_t i = 0;
  for (; i < count; ++i) {
    if (guard == nullptr && i % kReplayBatch == 0 && i >= 2 * kReplayBatch) {
      // At most two batches of replays in flight, so a cancellation takes effect soon: wait for
      // the batch before the one just enqueued (its event was recorded after it).
      CUDA_RETURN_IF_ERROR(device_,
                           cudaEventSynchronize(batch_done_[(i / kReplayBatch + 1) % 2]));
    }
    if (i > 0 && i % kReplayBatch == 0 && interrupt.PauseRequested()) {
      if (absl::Status paused = PauseLocked(
              interrupt,
              absl::StrFormat("the repeated group after %d of %d iterations", i, count));
          !paused.ok()) {
        device_->counter_set().AddLaunches(passes * i);
        return paused;
      }
    }
    if (interrupt.Stopped()) {
      device_->counter_set().AddLaunches(passes * i);
      return interrupt.Why(
          absl::StrFormat("the repeated group after %d of %d iterations", i, count));
    }
    if (guard != nullptr) {
      // Without graph loops the host must see the guard: a 4-byte read and a wait.
      CUDA_RETURN_IF_ERROR(device_, cudaMemcpyAsync(guard_host_, guard, 4,
                                                    cudaMemcpyDeviceToHost, stream_));
      CUDA_RETURN_IF_ERROR(device_, cudaStreamSynchronize(stream_));
      if (*static_cast<volatile uint32_t*>(guard_host_) == 0) break;
    }
    CUDA_RETURN_IF_ERROR(device_, cudaGraphLaunch(*exec, stream_));
    if ((i + 1) % kReplayBatch == 0) {
      CUDA_RETURN_IF_ERROR(device_,
                           cudaEventRecord(batch_done_[((i + 1) / kReplayBatch) % 2], stream_));
    }
  }
  device_->counter_set().AddLaunches(passes * i);
  return absl::OkStatus();
}

absl::Status CudaStreamImpl::Synchronize() {
  absl::ReaderMutexLock use(&device_->use_mutex());
  device_->Select();
  device_->counter_set().AddSynchronization();
  // The caller's destinations are only valid until this returns: drop them on every path.
  const std::vector<PinnedStaging::PendingRead> reads = staging_.EndOperation();
  if (absl::Status usable = device_->Usable(epoch_); !usable.ok()) return usable;
  const cudaError_t err = cudaStreamSynchronize(stream_);
  if (err != cudaSuccess) return device_->Fail(err, "cudaStreamSynchronize", __FILE__, __LINE__);
  staging_.Deliver(reads);
  return absl::OkStatus();
}

}  // namespace sluice
