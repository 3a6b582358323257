// Free: gives a buffer of the session back.
#include "sluice/server/ops/handlers.h"

namespace sluice {

void AcceptFree(SessionState& state, v1::SessionRequest& request, Job& job) {
  job.run = [&state, id = job.id, handle = request.free().handle()](Responses* out) {
    if (absl::Status open = state.RequireOpen(); !open.ok()) {
      return SessionState::Reply(id, open, out);
    }
    const absl::Status status = state.ticket->session().Free(handle);
    if (status.ok()) ++state.stats.frees;
    SessionState::Reply(id, status, out);
  };
}

}  // namespace sluice
