// Allocate: a buffer of the session, at the handle the client chose (or one the session picks).
#include "sluice/server/ops/handlers.h"

namespace sluice {

void AcceptAllocate(SessionState& state, v1::SessionRequest& request, Job& job) {
  const uint64_t bytes = request.allocate().bytes();
  const uint64_t chosen = request.allocate().handle();
  // Until it runs, uploads behind it are checked against the size it asks for.
  SessionState::QueuedHandle queued(chosen != 0 ? &state : nullptr, chosen, bytes);
  job.run = [&state, id = job.id, bytes, chosen, queued = std::move(queued)](Responses* out) {
    if (absl::Status open = state.RequireOpen(); !open.ok()) {
      return SessionState::Reply(id, open, out);
    }
    absl::StatusOr<uint64_t> handle = state.ticket->session().Allocate(bytes, chosen);
    if (!handle.ok()) return SessionState::Reply(id, handle.status(), out);
    ++state.stats.allocations;
    SessionState::Reply(id, absl::OkStatus(), out);
    out->back().mutable_allocate()->set_handle(*handle);
  };
}

}  // namespace sluice
