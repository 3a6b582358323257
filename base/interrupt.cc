#include "sluice/base/interrupt.h"

#include "absl/strings/str_format.h"

namespace sluice {

absl::Status Interrupt::Why(std::string_view what) const {
  if ((stream_ != nullptr && stream_->load()) || (request_ != nullptr && request_->load())) {
    return absl::CancelledError(absl::StrFormat("cancelled: %s", what));
  }
  if (deadline_ != absl::InfiniteFuture() && absl::Now() >= deadline_) {
    return absl::DeadlineExceededError(absl::StrFormat(
        "the request ran past its time limit (the daemon's --max_request_seconds): %s", what));
  }
  return absl::OkStatus();
}

}  // namespace sluice
