// Cancel: acts the moment it arrives, setting the cancel flags of every unfinished request with
// its target id (see OpCancel); its own reply says whether it found one.
#include "absl/strings/str_format.h"
#include "sluice/server/ops/handlers.h"

namespace sluice {

void AcceptCancel(SessionState& state, v1::SessionRequest& request, Job& job) {
  const uint64_t target = request.cancel().target();
  absl::Status status =
      state.CancelPending(target) > 0
          ? absl::OkStatus()
          : absl::NotFoundError(
                absl::StrFormat("no unfinished request with id %d to cancel", target));
  job.run = [id = job.id, status = std::move(status)](Responses* out) {
    SessionState::Reply(id, status, out);
  };
}

}  // namespace sluice
