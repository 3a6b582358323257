// When running work should stop: the stream it belongs to or the request itself was cancelled
// (flags any thread may set), or the request's deadline passed. Work checks it between steps,
// between iterations of a repeated group and, on the CPU device, between chunks of a pass; a
// check never blocks and costs an atomic load or two and a clock read.
#ifndef SLUICE_BASE_INTERRUPT_H_
#define SLUICE_BASE_INTERRUPT_H_

#include <atomic>
#include <string_view>

#include "absl/status/status.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace sluice {

class Interrupt {
 public:
  // Never stops.
  Interrupt() = default;
  // Stops once `stream` or `request` (either may be null) is set, or at `deadline`. The flags
  // must outlive the work.
  Interrupt(const std::atomic<bool>* stream, const std::atomic<bool>* request,
            absl::Time deadline = absl::InfiniteFuture())
      : stream_(stream), request_(request), deadline_(deadline) {}

  bool Stopped() const {
    return (stream_ != nullptr && stream_->load(std::memory_order_relaxed)) ||
           (request_ != nullptr && request_->load(std::memory_order_relaxed)) ||
           (deadline_ != absl::InfiniteFuture() && absl::Now() >= deadline_);
  }

  // Why it stopped: Cancelled (the request or its stream was cancelled) or DeadlineExceeded
  // (the request ran past its deadline), with `what` (the work: "repeated step 2 after 10 of
  // 100 iterations") in the message; OK while it has not stopped.
  absl::Status Why(std::string_view what) const;

 private:
  const std::atomic<bool>* stream_ = nullptr;
  const std::atomic<bool>* request_ = nullptr;
  absl::Time deadline_ = absl::InfiniteFuture();
};

}  // namespace sluice

#endif  // SLUICE_BASE_INTERRUPT_H_
