// RemoteDispatch's stream, receiving: each reply goes to the oldest call waiting, its bytes
// straight into the caller's memory.
#include <algorithm>
#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "sluice/base/status_macros.h"
#include "sluice/client/internal/call_checks.h"
#include "sluice/client/remote/link.h"
#include "sluice/client/remote/stream.h"
#include "sluice/proto/codec.h"

namespace sluice {

absl::Status RemoteDispatch::Call::SizeOutputs() {
  // A resumed session reads again into the spans it was given: the target is asked once.
  outputs.reserve(lengths.size());
  for (size_t i = outputs.size(); i < lengths.size(); ++i) {
    outputs.push_back((*target)(i, lengths[i]));
    if (outputs.back().size() != lengths[i]) return OutputRefused(i);
  }
  sized = true;
  return absl::OkStatus();
}

absl::Status RemoteDispatch::Stream::DeliverLocked(Link* link) {
  IncomingReply& reply = link->read_msg;
  v1::SessionResponse& r = reply.message;
  if (!link->ready) {  // a resume's link: its open is answered first
    if (r.id() != link->open_id || !r.last()) {
      return absl::InternalError("sluiced replied to a resume with something else");
    }
    link->open_answered = true;
    link->open_status = StatusFromProto(r.status());
    if (link->open_status.ok() && !r.open().resumed()) {
      link->open_status = absl::InternalError("sluiced opened a new session instead of resuming");
    }
    link->last_completed = r.open().last_completed_id();
    return link->open_status.ok() ? absl::OkStatus() : link->open_status;
  }
  if (r.has_notice()) {  // answers no request
    if (r.notice().kind() == v1::Notice::DRAINING) {
      draining_until_ = absl::FromUnixMillis(r.notice().deadline_unix_ms());
    }
    return absl::OkStatus();
  }
  if (calls_.empty() || calls_.front()->id != r.id()) {
    return absl::InternalError(absl::StrFormat(
        "sluiced replied to request %d, but %s", r.id(),
        calls_.empty() ? "none is waiting"
                       : absl::StrFormat("request %d is next", calls_.front()->id)));
  }
  Call* call = calls_.front();
  if (r.has_data()) {
    const v1::DataChunk& chunk = r.data();
    const uint64_t bytes = reply.data_size();
    if (chunk.total() != call->expected || chunk.offset() != call->received ||
        bytes > call->expected - call->received) {
      return absl::DataLossError(absl::StrFormat(
          "reply data (offset %d, %d bytes, total %d) does not match the %d bytes requested",
          chunk.offset(), bytes, chunk.total(), call->expected));
    }
    if (!call->sized) RETURN_IF_ERROR(call->SizeOutputs());
    // From where gRPC received them into the caller's memory: the only copy.
    uint64_t done = 0;
    while (done < bytes) {
      while (call->cursor_offset == call->lengths[call->cursor]) {
        ++call->cursor;
        call->cursor_offset = 0;
      }
      const uint64_t n =
          std::min<uint64_t>(bytes - done, call->lengths[call->cursor] - call->cursor_offset);
      reply.CopyData(done, n, call->outputs[call->cursor].data() + call->cursor_offset);
      done += n;
      call->cursor_offset += n;
    }
    call->received += bytes;
  }
  if (!r.last()) return absl::OkStatus();
  call->status = StatusFromProto(r.status());
  if (!outgoing_.empty() && outgoing_.front().call_id <= call->id) {
    // Answered before it was sent in full: only a refused upload may be (the daemon answers a
    // bad upload as soon as it knows, and drops what still arrives of it). The rest of it is
    // not sent: it must never be read from the caller's memory once the caller has returned.
    Outgoing& rest = outgoing_.front();
    if (rest.call_id != call->id || !rest.is_upload || !rest.head_sent || call->status.ok()) {
      return absl::InternalError(absl::StrFormat(
          "sluiced answered request %d before it was sent in full", call->id));
    }
    outgoing_.pop_front();
  }
  if (call->status.ok()) {
    if (call->received != call->expected) {
      return absl::DataLossError(absl::StrFormat(
          "sluiced returned %d of the %d bytes requested", call->received, call->expected));
    }
    if (!call->sized) RETURN_IF_ERROR(call->SizeOutputs());  // reads of no bytes
  }
  call->reply = std::move(r);
  call->done = true;
  call->arrived.store(true, std::memory_order_release);
  calls_.pop_front();
  if (call->best_effort) return absl::OkStatus();
  if (call->pipelined && !call->status.ok()) {
    if (call->on_failure != nullptr) call->on_failure();
    if (deferred_.ok()) {
      deferred_ = absl::Status(
          call->status.code(),
          absl::StrFormat("%s (request %d), sent without waiting, failed: %s", call->what,
                          call->id, call->status.message()));
    }
    return absl::OkStatus();
  }
  if (!call->detached && !deferred_.ok()) {
    // Requests run in order: this call comes after the failed one, and reports it.
    call->status = std::exchange(deferred_, absl::OkStatus());
  }
  if (call->detached && !call->status.ok()) {
    return absl::UnavailableError(absl::StrFormat(
        "the session is closed: sluiced refused request %d, sent without waiting: %s", call->id,
        call->status.ToString()));
  }
  return absl::OkStatus();
}

}  // namespace sluice
