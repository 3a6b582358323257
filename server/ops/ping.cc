// Ping: echoes its payload (at most kMaxPingPayload bytes, or kMaxUnopenedPingPayload before
// the session is open), in order with the session's other requests; it needs no open session.
#include "absl/strings/str_format.h"
#include "sluice/server/ops/handlers.h"

namespace sluice {

void AcceptPing(SessionState& state, v1::SessionRequest& request, Job& job) {
  job.run = [&state, id = job.id,
             ping = std::move(*request.mutable_ping())](Responses* out) mutable {
    if (ping.payload().size() > kMaxPingPayload) {
      return SessionState::Reply(id,
                                 absl::InvalidArgumentError(absl::StrFormat(
                                     "a ping payload holds at most %d bytes", kMaxPingPayload)),
                                 out);
    }
    if (state.session.load() == nullptr && ping.payload().size() > kMaxUnopenedPingPayload) {
      return SessionState::Reply(
          id,
          absl::InvalidArgumentError(absl::StrFormat(
              "before its session is open, a stream's ping payload holds at most %d bytes",
              kMaxUnopenedPingPayload)),
          out);
    }
    SessionState::Reply(id, absl::OkStatus(), out);
    out->back().mutable_ping()->set_payload(std::move(*ping.mutable_payload()));
  };
}

}  // namespace sluice
