// What every operation of a session shares: the open session and who opened it, its limits and
// counters, the transfer budget its requests reserve from, and the registries through which
// requests of one stream see each other (cancel flags, allocations queued with a handle the
// client chose). The operations (server/ops/*.cc) read and write it; SessionProtocol owns one
// per stream.
//
// Threads: the read path (arrival order) and the job path (one job at a time) touch it. Fields
// say which: "job path" fields are touched only by the job running now; atomics are shared by
// both; the registries lock.
#ifndef SLUICE_SERVER_OPS_SESSION_STATE_H_
#define SLUICE_SERVER_OPS_SESSION_STATE_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "sluice/base/log.h"
#include "sluice/engine/session.h"
#include "sluice/engine/session_manager.h"
#include "sluice/engine/transfer_budget.h"
#include "sluice/proto/contract.h"
#include "sluice/server/ops/reply_block.h"
#include "sluice/server/shared_memory.h"
#include "sluice/v1/sluice.pb.h"

namespace sluice {

class Metrics;       // server/metrics.h
class StreamedRead;  // server/ops/read.h

using Responses = std::vector<v1::SessionResponse>;

// Requests moving at most this many bytes, with no kernel steps, may run inline on the
// transport's thread when the session has nothing else queued: copying a few bytes is no device
// wait. Transfers this small need no share of the daemon's transfer budget either.
inline constexpr uint64_t kCheapBytes = 64 << 10;
// A message of more bytes than this has what it will hold once parsed reserved before it is
// parsed (server/parsed_size.h): one of at most this many holds at most kCheapBytes parsed,
// whatever its shape, and is counted once parsed.
inline constexpr uint64_t kSizedFromBytes = 1 << 10;

// A complete logical request, ready to run in order.
struct Job {
  uint64_t id = 0;
  // The request's operation (kUpload for an upload's chunks).
  v1::SessionRequest::OpCase op = v1::SessionRequest::OP_NOT_SET;
  bool cheap = false;   // may run inline on the transport's thread when nothing is queued
  uint64_t staged = 0;  // request bytes it holds until it runs
  // Its share of the daemon's transfer budget while it waits (a request of more than 64 KiB,
  // or an upload's data); given back once it has run.
  TransferBudget::Hold hold;
  // It only reads: running it again changes nothing (a resumed stream runs it again rather
  // than keep its replies).
  bool read_only = false;
  // It is an open, never answered from a resumable session's record.
  bool open = false;
  // When its last message arrived: from then on it waits for the requests before it.
  absl::Time accepted;
  // Set by a CancelRequest naming it: queued, it is answered CANCELLED without running;
  // running (an execute), it stops at its next step, iteration or chunk. Null for the replies
  // a request gets without running (refusals, cancels).
  std::shared_ptr<std::atomic<bool>> cancelled;
  absl::AnyInvocable<void(Responses*) &&> run;
};

// The job of a request refused before it runs: it only replies `status` (cheap, not
// cancellable, recorded for a resume).
Job RefusalJob(uint64_t id, v1::SessionRequest::OpCase op, absl::Status status);

struct SessionStats {
  uint64_t requests = 0, errors = 0, allocations = 0, frees = 0, executes = 0;
  uint64_t steps = 0, bytes_up = 0, bytes_down = 0;
};

// What a resumable session carries from one stream to the next: its ticket and what its
// protocol knows of it.
struct CarriedSession {
  std::unique_ptr<SessionManager::Ticket> ticket;
  std::string client_name;
  std::string log_key;   // whose lines these are, for the log's rate limit
  LogFields log_fields;  // who they are about
  uint32_t chunk_size = 0;
  std::string resume_token;
  std::shared_ptr<SharedSlot> shared;  // its shared memory, when its open asked for it
  std::string shared_token;
  SessionStats stats;
  absl::Time started;
  // Logs the session's summary: it closed for `why`.
  void Log(const char* why) const;
};

// How a session is made resumable and resumed; the transport, which keeps the sessions that
// wait for their client, implements it. Called from the job path.
class SessionResumer {
 public:
  virtual ~SessionResumer() = default;
  // How long a session outlives its stream (0: sessions are not resumable).
  virtual absl::Duration resume_grace() const = 0;
  // Registers the session opened now as resumable by `owner` (its tenant, or ""), opened
  // with `credential` (its token's digest, or "") by client `client` (the key its sessions are
  // counted under); returns its resume token.
  virtual std::string RegisterResumable(const std::string& owner, const std::string& credential,
                                        const std::string& client) = 0;
  // Ends the session parked longest waiting for its client (of `client` only, when given), to
  // make room for a session opening now; true when there was one. Its buffers are freed
  // before this returns.
  virtual bool EvictParked(const std::string* client) = 0;
  struct Resumed {
    std::unique_ptr<CarriedSession> carried;
    uint64_t last_completed = 0;  // the highest request id completed on the session
  };
  // Takes the session `token` names for this stream, if `owner`'s.
  virtual absl::StatusOr<Resumed> Resume(const std::string& token, const std::string& owner) = 0;
};

// Sum of lengths, saturating at 2^64 - 1 so that absurd requests cannot wrap to small ones;
// of a request's ranges as they came, or as copied.
uint64_t TotalLength(absl::Span<const RangeRef> ranges);
uint64_t TotalLength(const google::protobuf::RepeatedPtrField<v1::Range>& ranges);
// The host part of a gRPC peer ("ipv4:10.0.0.7:51234" -> "ipv4:10.0.0.7").
std::string PeerHost(const std::string& peer);

class SessionState {
 public:
  // See SessionProtocol's constructor.
  SessionState(SessionManager* manager, std::string peer, SessionManager::Listener* listener,
               std::optional<Principal> principal, SessionResumer* resumer, Metrics* metrics,
               SharedRegions* shared_regions);
  ~SessionState();

  // The transfer budget requests reserve from: the open session's client's share, else the
  // daemon's. Any thread.
  TransferBudget& Transfers() const;
  // FAILED_PRECONDITION unless the session is open. Job path.
  absl::Status RequireOpen() const;
  // Appends the final reply of request `id`, with `status`.
  static void Reply(uint64_t id, const absl::Status& status, Responses* out);
  static absl::Status NotOpenError();
  // Whose lines these are, for the log's rate limit: the client, as sessions and memory are
  // shared out (its tenant, or its host and uid), whatever name it gives its sessions.
  std::string LogKey() const;
  // What the session's lines say of it: its id, peer, client name and tenant.
  LogFields Fields() const;
  // Who may resume this stream's sessions: its tenant, or "" without tenants.
  std::string Owner() const { return principal.has_value() ? principal->tenant : ""; }
  // The bytes of the shared region that `span` names, checked to hold `expected` bytes;
  // `region` keeps them mapped. Job path.
  absl::StatusOr<absl::Span<uint8_t>> SharedSpanOf(const v1::SharedSpan& span, uint64_t expected,
                                                   std::shared_ptr<SharedRegion>* region) const;
  // Publishes the ticket just opened or resumed to the read path and listens to it.
  void Publish(std::unique_ptr<SessionManager::Ticket> opened);
  // Withdraws the session from the read path; the ticket stays in `ticket`.
  void Withdraw();

  // ---- Cancel flags of unfinished requests. Any thread. ----

  // A flag a CancelRequest for `id` sets, registered until the job it belongs to has run.
  std::shared_ptr<std::atomic<bool>> NewCancelFlag(uint64_t id) ABSL_LOCKS_EXCLUDED(cancel_mu_);
  // Sets the flags of every unfinished request with id `target`; returns how many there were.
  int CancelPending(uint64_t target) ABSL_LOCKS_EXCLUDED(cancel_mu_);
  // Unregisters `flag`, of request `id`.
  void Unregister(uint64_t id, const std::shared_ptr<std::atomic<bool>>& flag)
      ABSL_LOCKS_EXCLUDED(cancel_mu_);

  // ---- Allocations queued with a client-chosen handle (pipelining). Any thread. ----

  // Registers `handle`, of `bytes`, while its allocation's job waits to run: an upload behind
  // it is checked against it on arrival. An entry goes when its job has run (or is dropped):
  // by then the session's table has the buffer, or the allocation failed (and the upload will,
  // when it runs).
  class QueuedHandle {
   public:
    QueuedHandle(SessionState* state, uint64_t handle, uint64_t bytes);
    QueuedHandle(QueuedHandle&& other) noexcept
        : state_(std::exchange(other.state_, nullptr)), handle_(other.handle_) {}
    QueuedHandle& operator=(QueuedHandle&&) = delete;
    ~QueuedHandle();

   private:
    SessionState* state_;
    uint64_t handle_;
  };
  // The size the latest queued allocation of `handle` asks for, if one is queued.
  std::optional<uint64_t> QueuedSize(uint64_t handle) ABSL_LOCKS_EXCLUDED(queued_mu_);

  // ---- Fixed for the stream. ----
  SessionManager* const manager;
  SessionResumer* const resumer;     // null: no session is resumable
  Metrics* const metrics;            // may be null
  SharedRegions* const shared_regions;  // null: no shared memory offered
  const std::string peer;
  const std::optional<Principal> principal;
  SessionManager::Listener* const listener;
  const SessionLimits limits;

  // ---- Read path. ----
  bool open_seen = false;  // the first open fixes the chunk size
  // The open was a resume: uploads are checked only when they run (a resent upload's early
  // check would see the session as later requests left it).
  bool resuming = false;

  // ---- Job path. ----
  absl::Time started;  // of the session (a resumed one keeps its own)
  std::unique_ptr<SessionManager::Ticket> ticket;
  std::string client_name;
  std::string resume_token;             // of a resumable session
  std::shared_ptr<SharedSlot> shared;   // the session's shared memory, if its open asked
  std::string shared_token;             // the offer that attaches it
  TransferBudget::Hold read_hold;  // the running read's reservation, until taken
  ReplyBlock read_block;           // the bytes of its data replies, until taken
  std::unique_ptr<StreamedRead> streamed;  // a read that streams, from its first window to its last
  SessionStats stats;

  // ---- Both paths. ----
  // Negotiated when the first open arrives; the read path checks chunk sizes against it.
  std::atomic<uint32_t> chunk_size;
  // The open session, published by the open job for the read path's early checks of uploads
  // (sizes never change, so a check that fails on arrival fails when the upload runs too).
  std::atomic<Session*> session{nullptr};
  // The open session's client's transfer budget, published with session.
  std::atomic<TransferBudget*> transfers{nullptr};
  // Set when an open was refused (and no open succeeded since): the read path refuses uploads.
  std::atomic<bool> open_refused{false};
  // Set when the stream is cancelled; stops a running repeated sequence.
  std::atomic<bool> stream_cancelled{false};

 private:
  struct QueuedAllocation {
    uint32_t count = 0;
    uint64_t bytes = 0;
  };
  absl::Mutex queued_mu_;
  absl::flat_hash_map<uint64_t, QueuedAllocation> queued_ ABSL_GUARDED_BY(queued_mu_);

  // The cancel flags of unfinished requests, by request id (ids may repeat).
  absl::Mutex cancel_mu_;
  std::multimap<uint64_t, std::shared_ptr<std::atomic<bool>>> pending_
      ABSL_GUARDED_BY(cancel_mu_);
};

}  // namespace sluice

#endif  // SLUICE_SERVER_OPS_SESSION_STATE_H_
