// The session protocol of one Session stream, apart from its transport: it turns the requests
// of a stream, in arrival order, into jobs (assembling an upload from its chunks, and refusing a
// bad one at its first message so that its data is never held), and runs each job against the
// stream's engine session, producing the job's replies. The gRPC transport
// (server/grpc/session_reactor.h) feeds it messages, runs its jobs in order on the executor and
// sends what they reply; it knows nothing of how requests map onto the engine.
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
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/functional/any_invocable.h"
#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "absl/synchronization/mutex.h"
#include "absl/status/status.h"
#include "absl/time/time.h"
#include "base/log.h"
#include "engine/session.h"
#include "engine/session_manager.h"
#include "engine/transfer_budget.h"
#include "proto/contract.h"
#include "server/metrics.h"
#include "server/shared_memory.h"
#include "sluice/v1/sluice.pb.h"

namespace sluice {

class SessionProtocol {
 public:
  using Responses = std::vector<v1::SessionResponse>;

  struct Stats {
    uint64_t requests = 0, errors = 0, allocations = 0, frees = 0, executes = 0;
    uint64_t steps = 0, bytes_up = 0, bytes_down = 0;
  };

  // What a resumable session carries from one stream to the next: its ticket and what its
  // protocol knows of it.
  struct Carried {
    std::unique_ptr<SessionManager::Ticket> ticket;
    std::string client_name;
    std::string log_key;  // whose lines these are, for the log's rate limit
    LogFields log_fields;  // who they are about
    uint32_t chunk_size = 0;
    std::string resume_token;
    std::shared_ptr<SharedSlot> shared;  // its shared memory, when its open asked for it
    std::string shared_token;
    Stats stats;
    absl::Time started;
    // Logs the session's summary: it closed for `why`.
    void Log(const char* why) const;
  };

  // How the protocol makes a session resumable and resumes one; the transport, which keeps
  // the sessions that wait for their client, implements it. Called from the job path.
  class Resumer {
   public:
    virtual ~Resumer() = default;
    // How long a session outlives its stream (0: sessions are not resumable).
    virtual absl::Duration resume_grace() const = 0;
    // Registers the session opened now as resumable by `owner` (its tenant, or ""), opened
    // with `credential` (its token's digest, or ""); returns its resume token.
    virtual std::string RegisterResumable(const std::string& owner,
                                          const std::string& credential) = 0;
    struct Resumed {
      std::unique_ptr<Carried> carried;
      uint64_t last_completed = 0;  // the highest request id completed on the session
    };
    // Takes the session `token` names for this stream, if `owner`'s.
    virtual absl::StatusOr<Resumed> Resume(const std::string& token,
                                           const std::string& owner) = 0;
  };

  // A complete logical request, ready to run in order.
  struct Job {
    uint64_t id = 0;
    bool cheap = false;   // may run inline on the transport's thread when nothing is queued
    uint64_t staged = 0;  // request bytes it holds until it runs
    // Its share of the daemon's transfer budget while it waits (a request of more than 64 KiB,
    // or an upload's data); given back once it has run.
    TransferBudget::Hold hold;
    // It only reads: running it again changes nothing.
    bool read_only = false;
    // An open (never answered from a resumable session's record).
    bool open = false;
    // The request's operation (kUpload for an upload's chunks), for the metrics.
    v1::SessionRequest::OpCase op = v1::SessionRequest::OP_NOT_SET;
    // When its last message arrived: from then on it waits for the requests before it.
    absl::Time accepted;
    // Set by a CancelRequest naming it: queued, it is answered CANCELLED without running;
    // running (an execute), it stops at its next step, iteration or chunk. Null for the replies
    // a request gets without running (refusals, cancels).
    std::shared_ptr<std::atomic<bool>> cancelled;
    absl::AnyInvocable<void(Responses*) &&> run;
  };

  // `manager` must outlive the protocol; `peer` names the client in the log; `listener` (the
  // stream) is told of drains and ends once the session is open, until Close. `principal`:
  // who the stream is from when the transport authenticated it (a tenant); nullopt: the
  // client that the peer's host and the open's client name make.
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
  // The stream's input ended: an unfinished upload gets its reply.
  void EndOfInput(std::vector<Job>* jobs);
  // Whether an upload awaits its next message.
  bool upload_pending() const { return upload_.has_value(); }

  // ---- Job path: one job at a time, in the order the read path made them. ----

  // Runs `job`, appending its replies (the last one final). Afterwards TakeReadHold() has the
  // transfer memory a read's replies hold until they are sent.
  void Run(Job& job, Responses* out);
  // Answers `job` without running it (the transport replays a recorded reply): only its
  // bookkeeping is done.
  void Skip(Job& job);
  TransferBudget::Hold TakeReadHold() { return std::move(read_hold_); }
  // A read of more than a window (kStreamWindow, rounded to whole chunks) streams: Run checks
  // all of it and makes its first window of replies, and while read_streaming() the transport
  // calls ContinueRead for each next window once it has sent most of the last one. Requests
  // run in order, so nothing else runs on the session meanwhile and every window reads what
  // the first would have. The daemon then holds two windows of a read, not all of it, and
  // sends while it copies. An error after the first window ends the read with a final reply
  // saying so (its earlier data replies are sent already).
  static constexpr uint64_t kStreamWindow = uint64_t{8} << 20;
  bool read_streaming() const { return streamed_.has_value(); }
  void ContinueRead(Responses* out);
  // The transfer budget requests reserve from: the open session's client's share, else the
  // daemon's. Any thread.
  TransferBudget& Transfers() const;

  // ---- Any thread. ----

  // Stops a running repeated sequence at its next iteration boundary (the stream is gone).
  void Cancel() { cancel_.store(true); }
  // Whether the session is open (an open succeeded).
  bool open() const { return session_.load() != nullptr; }

  // ---- Teardown, once no job runs and no message arrives any more. ----

  // Logs the session's summary (`why` it closed) if it was open, and hands over its ticket,
  // whose listener is no longer called once this returns: destroying it frees the session's
  // buffers, which may wait for the device.
  std::unique_ptr<SessionManager::Ticket> Close(const char* why);
  // Instead of Close, for a resumable session whose stream broke (`why`): hands over all it
  // carries to the next stream, and logs that it waits for its client.
  std::unique_ptr<Carried> Detach(const char* why);

 private:
  // An upload whose chunks are still arriving. The data stays in the chunks it arrived in
  // (moved out of the parsed messages, never copied) until the device copy gathers it.
  struct PendingUpload {
    uint64_t id = 0;
    std::vector<RangeRef> ranges;
    uint64_t expected = 0;
    uint64_t received = 0;
    std::vector<std::string> chunks;
    TransferBudget::Hold hold;  // the daemon's memory for the bytes received
    std::optional<v1::SharedSpan> shared;  // the data is there instead (shared memory)
  };

  // Read path.
  void AcceptUpload(v1::SessionRequest& request, std::vector<Job>* jobs);
  // Why the first message of an upload is refused at once, or OK; fills in `up`'s ranges and
  // reserves transfer memory for its data.
  absl::Status CheckFirstMessage(const v1::UploadRequest& first, PendingUpload& up);
  // Ends the pending upload: its job runs the write, or replies `error`. The later messages of
  // an upload that ended early (`more_may_follow`) are discarded up to its last.
  void EndUpload(absl::Status error, std::vector<Job>* jobs, bool more_may_follow);
  Job MakeJob(v1::SessionRequest& request);
  Job ReplyJob(uint64_t id, v1::SessionRequest::OpCase op, absl::Status status);
  // A flag a CancelRequest for `id` sets, registered until the job it belongs to has run.
  std::shared_ptr<std::atomic<bool>> NewCancelFlag(uint64_t id) ABSL_LOCKS_EXCLUDED(cancel_mu_);
  // Sets the flags of every unfinished request with id `target`; returns how many there were.
  int CancelPending(uint64_t target) ABSL_LOCKS_EXCLUDED(cancel_mu_);

  // Job bodies.
  void DoOpen(uint64_t id, const v1::OpenRequest& request, Responses* out);
  void DoAllocate(uint64_t id, uint64_t bytes, uint64_t chosen, Responses* out);
  void DoUpload(const PendingUpload& upload, Responses* out);
  void DoRead(uint64_t id, const v1::ReadRequest& request, Responses* out);
  void DoFree(uint64_t id, uint64_t handle, Responses* out);
  void DoExecute(uint64_t id, const v1::ExecuteRequest& request, const std::atomic<bool>* cancelled,
                 Responses* out);
  void DoPing(uint64_t id, v1::PingRequest& request, Responses* out);
  // Reads `reads` (after the steps `run` runs, when executing) into chunked data replies.
  void ReadInto(uint64_t id, absl::Span<const RangeRef> reads,
                absl::FunctionRef<absl::Status(ReadSink)> run, Responses* out);
  // Lands the bytes `reads` name, in order, which are those from `base` (a multiple of the
  // chunk size) of a read of `total` bytes, in data replies appended to `out`: made at the
  // sink's first call, once `prepare` says yes (false: the sink fails, so `run` reads nothing).
  // `run` reads through the sink it is given.
  absl::Status LandReads(uint64_t id, absl::Span<const RangeRef> reads, uint64_t base,
                         uint64_t total, absl::FunctionRef<bool()> prepare,
                         absl::FunctionRef<absl::Status(ReadSink)> run, Responses* out);
  // kStreamWindow in whole chunks (one at least).
  uint64_t StreamWindow() const;
  // Starts a read that streams (see kStreamWindow).
  void StartStreamedRead(uint64_t id, std::vector<RangeRef> reads, uint64_t total,
                         Responses* out);
  absl::Status RequireOpen() const;
  // The bytes of the shared region that `span` names, checked to hold `expected` bytes;
  // `region` keeps them mapped.
  absl::StatusOr<absl::Span<uint8_t>> SharedSpanOf(const v1::SharedSpan& span, uint64_t expected,
                                                   std::shared_ptr<SharedRegion>* region);
  // Whose lines these are, for the log's rate limit: the client's host and name.
  std::string LogKey() const;
  // What the session's lines say of it: its id, peer, client name and tenant.
  LogFields Fields() const;
  static void Reply(uint64_t id, const absl::Status& status, Responses* out);

  // A resume (OpenRequest.resume_token).
  void DoResume(uint64_t id, const v1::OpenRequest& request, Responses* out);
  // The OpenResponse of the open session.
  void ReplyOpened(uint64_t id, Responses* out);
  // Who may resume this stream's sessions: its tenant, or "" without tenants.
  std::string Owner() const { return principal_.has_value() ? principal_->tenant : ""; }

  SessionManager* const manager_;
  Resumer* const resumer_;
  Metrics* const metrics_;
  SharedRegions* const shared_regions_;  // null: no shared memory offered
  const std::string peer_;
  const std::optional<Principal> principal_;
  SessionManager::Listener* const listener_;
  const SessionLimits limits_;
  absl::Time started_;  // of the session (a resumed one keeps its own)

  // Read-path state.
  std::optional<PendingUpload> upload_;
  // The id of an upload that ended early, whose later messages are discarded up to its last.
  std::optional<uint64_t> discarding_;
  bool open_seen_ = false;  // the first open fixes the chunk size
  // The open was a resume: uploads are checked only when they run (a resent upload's early
  // check would see the session as later requests left it).
  bool resuming_ = false;

  // Job state: touched only by the job running now (jobs never overlap).
  std::unique_ptr<SessionManager::Ticket> ticket_;
  std::string client_name_;
  std::string resume_token_;  // of a resumable session
  std::shared_ptr<SharedSlot> shared_;  // the session's shared memory, if its open asked
  std::string shared_token_;            // the offer that attaches it
  TransferBudget::Hold read_hold_;  // the running read's reservation, until TakeReadHold
  // A read that streams, from its first window to its last.
  struct StreamedRead {
    uint64_t id = 0;
    std::vector<RangeRef> reads;
    uint64_t total = 0;
    uint64_t window = 0;
    uint64_t next = 0;       // the first byte of the concatenation not read yet
    size_t read = 0;         // the read it lies in...
    uint64_t within = 0;     // ...and where in that read
    TransferBudget::Hold hold;  // two windows and a chunk
    // The pieces of the reads that hold the next `length` bytes; advances past them.
    std::vector<RangeRef> Take(uint64_t length);
  };
  std::optional<StreamedRead> streamed_;
  Stats stats_;

  // Shared by both paths.
  // Negotiated when the first open arrives; the read path checks chunk sizes against it.
  std::atomic<uint32_t> chunk_size_;
  // The open session, published by the open job for the read path's early checks of uploads
  // (sizes never change, so a check that fails on arrival fails when the upload runs too).
  std::atomic<Session*> session_{nullptr};
  // The open session's client's transfer budget, published with session_.
  std::atomic<TransferBudget*> transfers_{nullptr};
  // Set when an open was refused (and no open succeeded since): the read path refuses uploads.
  std::atomic<bool> open_refused_{false};
  // Set when the stream is cancelled; stops a running repeated sequence.
  std::atomic<bool> cancel_{false};

  // Handles the client chose for allocations queued and not yet run (pipelining), with how
  // many ask for each and the size the latest asks: an upload behind one is checked against
  // it on arrival. An entry goes when its job has run (or is dropped): by then the session's
  // table has the buffer, or the allocation failed (and the upload will, when it runs).
  struct QueuedAllocation {
    uint32_t count = 0;
    uint64_t bytes = 0;
  };
  class QueuedHandle;
  void Unqueue(uint64_t handle) ABSL_LOCKS_EXCLUDED(queued_mu_);
  std::optional<uint64_t> QueuedSize(uint64_t handle) ABSL_LOCKS_EXCLUDED(queued_mu_);
  absl::Mutex queued_mu_;
  absl::flat_hash_map<uint64_t, QueuedAllocation> queued_ ABSL_GUARDED_BY(queued_mu_);

  // The cancel flags of unfinished requests, by request id (ids may repeat).
  absl::Mutex cancel_mu_;
  std::multimap<uint64_t, std::shared_ptr<std::atomic<bool>>> pending_
      ABSL_GUARDED_BY(cancel_mu_);
};

}  // namespace sluice

#endif  // SLUICE_SERVER_SESSION_PROTOCOL_H_
