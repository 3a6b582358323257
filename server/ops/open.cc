// Open: opens the stream's session (or resumes one), negotiating its chunk size, and answers
// with its limits, its shared memory offer and its resume token.
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "sluice/proto/codec.h"
#include "sluice/server/ops/handlers.h"

namespace sluice {
namespace {

// Client names land in the log: keep them short and printable.
std::string Printable(const std::string& name) {
  std::string out = name.substr(0, kMaxClientNameBytes);
  for (char& c : out) {
    if (c < 0x20 || c > 0x7e || c == '"') c = '?';
  }
  return out;
}

// The OpenResponse of the open session.
void ReplyOpened(SessionState& state, uint64_t id, Responses* out) {
  const DeviceInfo& device = state.manager->device().info();
  v1::SessionResponse& response = out->emplace_back();
  response.set_id(id);
  response.set_last(true);
  response.mutable_status();
  v1::OpenResponse& open = *response.mutable_open();
  open.set_session_id(state.ticket->id());
  open.set_backend_id(device.id);
  open.set_backend_version(device.version);
  SessionLimits granted = state.limits;
  granted.chunk_size = state.chunk_size.load();
  ToProto(granted, open.mutable_limits());
  open.set_client_handles(true);
  if (state.shared != nullptr) {
    v1::SharedMemoryOffer& offer = *open.mutable_shared_memory();
    offer.set_socket(state.shared_regions->path());
    offer.set_token(state.shared_token);
    offer.set_max_bytes(state.shared_regions->max_bytes());
  }
  if (!state.resume_token.empty()) {
    open.set_resume_token(state.resume_token);
    open.set_resume_grace_ms(
        static_cast<uint64_t>(absl::ToInt64Milliseconds(state.resumer->resume_grace())));
  }
}

// A resume (OpenRequest.resume_token).
void Resume(SessionState& state, uint64_t id, const v1::OpenRequest& request, Responses* out) {
  if (state.resumer == nullptr || state.resumer->resume_grace() <= absl::ZeroDuration()) {
    state.open_refused.store(true);
    return SessionState::Reply(
        id,
        absl::FailedPreconditionError(
            "this daemon keeps no session beyond its stream (--resume_grace=0)"),
        out);
  }
  absl::StatusOr<SessionResumer::Resumed> resumed =
      state.resumer->Resume(request.resume_token(), state.Owner());
  if (!resumed.ok()) {
    state.open_refused.store(true);
    return SessionState::Reply(id, resumed.status(), out);
  }
  CarriedSession& carried = *resumed->carried;
  state.client_name = carried.client_name;
  state.chunk_size.store(carried.chunk_size);
  state.resume_token = carried.resume_token;
  state.shared = std::move(carried.shared);
  state.shared_token = carried.shared_token;
  state.stats = carried.stats;
  state.started = carried.started;
  state.Publish(std::move(carried.ticket));
  LogLimited(state.LogKey(),
             absl::StrFormat("session %s resumed from %s after request %d", state.ticket->id(),
                             state.peer, resumed->last_completed),
             state.Fields());
  ReplyOpened(state, id, out);
  out->back().mutable_open()->set_resumed(true);
  out->back().mutable_open()->set_last_completed_id(resumed->last_completed);
}

void Open(SessionState& state, uint64_t id, const v1::OpenRequest& request, Responses* out) {
  if (state.ticket != nullptr) {
    return SessionState::Reply(id, absl::FailedPreconditionError("the session is already open"),
                               out);
  }
  if (!request.resume_token().empty()) return Resume(state, id, request, out);
  state.client_name = Printable(request.client_name());
  // A tenant's sessions share its limits; without tenants a client is its peer (its host and
  // the uid behind the connection, as the transport found them; the host alone when it did not
  // say), the name only a label: sessions and memory are shared out by that.
  const Principal who =
      state.principal.has_value() ? *state.principal : Principal{.key = PeerHost(state.peer)};
  const std::string& client = who.key;
  const auto open = [&] { return state.manager->Open(who); };
  absl::StatusOr<std::unique_ptr<SessionManager::Ticket>> ticket = open();
  // A session parked for its client to resume holds a place of its client's and of the
  // daemon's, but never ahead of a session opening now: the client's own session parked
  // longest gives its place first; when the daemon itself is full (and this client is not at
  // its own limit), the session parked longest of any client does.
  if (absl::IsResourceExhausted(ticket.status()) && state.resumer != nullptr) {
    if (state.resumer->EvictParked(&client)) ticket = open();
    const auto below_own_limit = [&] {
      const ClientUse use = state.manager->client_use(client, who.limits);
      return use.sessions < use.max_sessions;
    };
    if (absl::IsResourceExhausted(ticket.status()) &&
        state.manager->active_sessions() >= state.manager->options().max_sessions &&
        below_own_limit() && state.resumer->EvictParked(nullptr)) {
      ticket = open();
    }
  }
  if (!ticket.ok()) {
    state.open_refused.store(true);  // uploads that follow are refused as they arrive
    return SessionState::Reply(id, ticket.status(), out);
  }
  state.Publish(*std::move(ticket));
  const DeviceInfo& device = state.manager->device().info();
  LogLimited(state.LogKey(),
             absl::StrFormat("session %s opened by \"%s\"%s from %s on %s; chunk %d bytes",
                             state.ticket->id(), state.client_name,
                             who.tenant.empty()
                                 ? absl::StrFormat(" (client %s)", who.key)
                                 : absl::StrFormat(" of tenant %s", who.tenant),
                             state.peer, device.id, state.chunk_size.load()),
             state.Fields());
  if (request.resumable() && state.resumer != nullptr &&
      state.resumer->resume_grace() > absl::ZeroDuration()) {
    state.resume_token = state.resumer->RegisterResumable(
        state.Owner(), who.credential, client);
  }
  if (request.shared_memory() && state.shared_regions != nullptr) {
    state.shared = std::make_shared<SharedSlot>(state.ticket->shared_transfers(),
                                                state.manager->options().max_chunk_size);
    state.shared_token = state.shared_regions->Offer(state.shared);
  }
  ReplyOpened(state, id, out);
}

}  // namespace

void AcceptOpen(SessionState& state, v1::SessionRequest& request, Job& job) {
  // Chunks of requests pipelined behind the open are checked against the negotiated size.
  if (!state.open_seen) {
    state.open_seen = true;
    // A resume takes its session's chunk size when it runs; until then any the daemon
    // allows is taken.
    state.resuming = !request.open().resume_token().empty();
    const SessionManager::Options& options = state.manager->options();
    state.chunk_size.store(state.resuming
                               ? options.max_chunk_size
                               : options.NegotiateChunkSize(request.open().chunk_size()));
  }
  job.run = [&state, id = job.id, open = std::move(*request.mutable_open())](Responses* out) {
    Open(state, id, open, out);
  };
}

}  // namespace sluice
