// The session protocol of one Session stream, apart from its transport: it turns the requests
// of a stream, in arrival order, into jobs through the table of operations
// (server/ops/op_table.h: each operation's handler, cost, cancel and resume policy; uploads are
// assembled from their chunks by server/ops/upload.h), and runs each job against the stream's
// engine session, producing the job's replies. What every job shares is its SessionState. The
// gRPC transport (server/grpc/session_reactor.h) feeds it messages, runs its jobs in order on
// the executor and sends what they reply; it knows nothing of how requests map onto the
// engine.
//
// Logical requests and their replies:
// - Every logical request gets exactly one final reply, in request order.
// - An upload ends at its message with `last`, or early: a message of another request
//   interrupts it (INVALID_ARGUMENT), or it is refused (at its first message when the refusal
//   needs no earlier request to have run: not open, too many ranges, too many bytes, a handle
//   the session does not hold or a range outside its buffer; or at the chunk that breaks a
//   rule). Its reply is then queued at once, and any further messages of that upload (same id,
//   no ranges) are discarded up to its `last`: a client may stop sending on the reply.
#ifndef SLUICE_SERVER_SESSION_PROTOCOL_H_
#define SLUICE_SERVER_SESSION_PROTOCOL_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "google/protobuf/io/zero_copy_stream.h"
#include "sluice/engine/session_manager.h"
#include "sluice/engine/transfer_budget.h"
#include "sluice/server/metrics.h"
#include "sluice/server/ops/read.h"
#include "sluice/server/ops/session_state.h"
#include "sluice/server/ops/upload.h"
#include "sluice/server/shared_memory.h"
#include "sluice/v1/sluice.pb.h"

namespace sluice {

class SessionProtocol {
 public:
  using Responses = sluice::Responses;
  using Job = sluice::Job;
  using Stats = SessionStats;
  using Carried = CarriedSession;
  using Resumer = SessionResumer;

  // `manager` must outlive the protocol; `peer` names the client in the log; `listener` (the
  // stream; may be null) is told of drains and ends once the session is open, until Close.
  // `principal`: who the stream is from: its tenant, or without tenants the client its peer
  // makes (the transport's say); nullopt: the client the peer's host alone makes. The open's
  // client name is only a label.
  // `resumer` (may be null: no session is resumable) and `metrics` (may be null) must outlive
  // the protocol.
  SessionProtocol(SessionManager* manager, std::string peer, SessionManager::Listener* listener,
                  std::optional<Principal> principal = std::nullopt, Resumer* resumer = nullptr,
                  Metrics* metrics = nullptr, SharedRegions* shared_regions = nullptr);

  // ---- Read path: one message at a time, in arrival order (not concurrently). ----

  // Takes one request (its data is moved out) and appends the jobs it completes to `jobs`: none
  // (an upload awaiting chunks, a discarded chunk), one, or two (an interrupted upload's reply,
  // then the interrupting request's job).
  void Accept(v1::SessionRequest& request, std::vector<Job>* jobs);
  // A request refused before it was parsed (it would hold more than its client's share has
  // room for): `head` is what HeadOf read of it, and its reply is `why`. An upload it begins or
  // goes on with ends there, as one refused at a chunk does.
  void Refuse(v1::SessionRequest& head, absl::Status why, std::vector<Job>* jobs);
  // The id, settled_through and operation of the request in `in` (an upload's `last` too),
  // read without parsing the rest: what Refuse needs. nullopt when the bytes are not a
  // well-formed message.
  static std::optional<v1::SessionRequest> HeadOf(google::protobuf::io::ZeroCopyInputStream* in);
  // The stream's input ended: an unfinished upload gets its reply.
  void EndOfInput(std::vector<Job>* jobs) { uploads_.EndOfInput(jobs); }
  // Whether an upload awaits its next message.
  bool upload_pending() const { return uploads_.pending(); }

  // ---- Job path: one job at a time, in the order the read path made them. ----

  // Runs `job`, appending its replies (the last one final). Afterwards TakeReadHold() has the
  // transfer memory a read's replies hold until they are sent, and TakeReadBlock() the block
  // its data replies' bytes are in (none: each carries its own).
  void Run(Job& job, Responses* out);
  // Answers `job` without running it (the transport replays a recorded reply): only its
  // bookkeeping is done.
  void Skip(Job& job);
  TransferBudget::Hold TakeReadHold() { return std::move(state_.read_hold); }
  ReplyBlock TakeReadBlock() { return std::move(state_.read_block); }
  // A read of more than a window streams (server/ops/read.h): while read_streaming() the
  // transport calls ContinueRead for each next window once it has sent most of the last one.
  bool read_streaming() const { return state_.streamed != nullptr; }
  void ContinueRead(Responses* out) { StreamedRead::Continue(state_, out); }
  // The transfer budget requests reserve from: the open session's client's share, else the
  // daemon's. Any thread.
  TransferBudget& Transfers() const { return state_.Transfers(); }

  // ---- Any thread. ----

  // Stops a running repeated sequence at its next iteration boundary (the stream is gone).
  void Cancel() { state_.stream_cancelled.store(true); }
  // Whether the session is open (an open succeeded).
  bool open() const { return state_.session.load() != nullptr; }

  // ---- Teardown, once no job runs and no message arrives any more. ----

  // Logs the session's summary (`why` it closed) if it was open, and hands over its ticket,
  // whose listener is no longer called once this returns: destroying it frees the session's
  // buffers, which may wait for the device.
  std::unique_ptr<SessionManager::Ticket> Close(const char* why);
  // Instead of Close, for a resumable session whose stream broke (`why`): hands over all it
  // carries to the next stream, and logs that it waits for its client.
  std::unique_ptr<Carried> Detach(const char* why);

 private:
  SessionState state_;
  UploadAssembly uploads_{&state_};
};

}  // namespace sluice

#endif  // SLUICE_SERVER_SESSION_PROTOCOL_H_
