// When running work should stop: the stream it belongs to or the request itself was cancelled
// (flags any thread may set), or the request's deadline passed. Work checks it between steps,
// between iterations of a repeated group and, on the CPU device, between chunks of a pass; a
// check never blocks and costs an atomic load or two and a clock read.
//
// It also carries the work's turn on a shared device (see FairShare), if any: a device enters
// the turn before running work and, where its PauseRequested, pauses (gives the device to the
// client owed it and waits for it back) at the same points where it looks for a stop.
#ifndef SLUICE_BASE_INTERRUPT_H_
#define SLUICE_BASE_INTERRUPT_H_

#include <atomic>
#include <string_view>

#include "absl/status/status.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "sluice/base/fair_share.h"

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

  // This interrupt, with the work taking `turn` on the device (null: none).
  Interrupt WithTurn(FairShare::Turn* turn) const {
    Interrupt with = *this;
    with.turn_ = turn;
    return with;
  }

  bool Stopped() const {
    return (stream_ != nullptr && stream_->load(std::memory_order_relaxed)) ||
           (request_ != nullptr && request_->load(std::memory_order_relaxed)) ||
           (deadline_ != absl::InfiniteFuture() && absl::Now() >= deadline_);
  }

  // Why it stopped: Cancelled (the request or its stream was cancelled) or DeadlineExceeded
  // (the request ran past its deadline), with `what` (the work: "repeated step 2 after 10 of
  // 100 iterations") in the message; OK while it has not stopped.
  absl::Status Why(std::string_view what) const;

  // Waits for the device turn, if any (at once when it is held). False if the work stopped
  // meanwhile.
  bool Enter() const {
    return turn_ == nullptr || turn_->Acquire([this] { return Stopped(); });
  }
  // Whether the work should pause: its turn is owed to another client. Cheap.
  bool PauseRequested() const { return turn_ != nullptr && turn_->ShouldYield(); }
  // Gives the turn up and waits for it again. False if the work stopped meanwhile.
  bool Pause() const {
    return turn_ == nullptr || turn_->Yield([this] { return Stopped(); });
  }

 private:
  const std::atomic<bool>* stream_ = nullptr;
  const std::atomic<bool>* request_ = nullptr;
  absl::Time deadline_ = absl::InfiniteFuture();
  FairShare::Turn* turn_ = nullptr;
};

}  // namespace sluice

#endif  // SLUICE_BASE_INTERRUPT_H_
