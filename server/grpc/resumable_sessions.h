// Sessions that survive their stream. A resumable session (OpenRequest.resumable) is
// registered under an unguessable token; when its stream breaks (a lost connection, not a
// close), its stream parks it here, buffers, protocol state and record of replies together,
// and a new stream of the same tenant may take it within the grace period. Past the grace it
// is freed. A resume that finds the session still held by a stream (the daemon has not seen
// the old connection die yet) asks that stream to let go and waits, bounded, for it to park.
#ifndef SLUICE_SERVER_GRPC_RESUMABLE_SESSIONS_H_
#define SLUICE_SERVER_GRPC_RESUMABLE_SESSIONS_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "grpcpp/grpcpp.h"
#include "sluice/base/executor.h"
#include "sluice/engine/transfer_budget.h"
#include "sluice/server/grpc/stream_watch.h"
#include "sluice/server/session_protocol.h"

namespace sluice {

// The serialized replies of a resumable session's completed requests, kept until the client
// says it has them (SessionRequest.settled_through), for a resumed stream to answer requests
// whose replies were lost with the stream. Replies share the slices that were sent (no copy),
// and the hold that counts them to the session's client while they wait to be sent: their
// bytes are counted once, until neither the record nor the stream holds them. A read's replies
// are not kept: reads change nothing, so one sent again runs again, as long as only reads
// completed after it. Small replies (at most kSmallBytes: a status, a handle) are kept up to
// kMaxSmallBytes, however full the session's transfer budget; larger ones (an execute's reads)
// up to kMaxBytes in all, the oldest forgotten first, and only while that budget, counting
// them, is within its limits (as if the record had reserved them).
// A request whose replies cannot be kept is remembered as completed without them: sent again,
// it is answered DATA_LOSS. Each request remembered costs an entry: kFreeEntries of them are
// part of what any session costs the daemon, and each past those is charged to the budget as
// kEntryBytes; past kMaxEntries the oldest are forgotten whole (DATA_LOSS too if sent again),
// so a client that never settles holds a bounded record, counted, however many pings it sends.
// Thread-safe.
class ReplyRecord {
 public:
  static constexpr uint64_t kMaxBytes = uint64_t{64} << 20;
  static constexpr uint64_t kSmallBytes = uint64_t{64} << 10;
  static constexpr uint64_t kMaxSmallBytes = uint64_t{1} << 20;
  static constexpr size_t kMaxEntries = size_t{1} << 16;
  static constexpr size_t kFreeEntries = 256;
  // An entry's memory, about: a node of the map with its key and Entry.
  static constexpr uint64_t kEntryBytes = 160;

  // What counts replies to their client, shared by the record and the stream that sends them.
  using SharedHold = std::shared_ptr<const TransferBudget::Hold>;

  // What a resent request `id` gets.
  struct Answer {
    enum Kind { kRun, kReplay, kLost } kind = kRun;
    std::vector<grpc::ByteBuffer> replies;  // for kReplay, with what counts them
    SharedHold counted;
  };

  // Records the replies of request `id` (shares their slices, copies no bytes), which
  // `counted` counts to `budget` (the session's) already; `read_only`: the request only reads
  // (running it again changes nothing).
  void Add(uint64_t id, const std::vector<grpc::ByteBuffer>& replies, bool read_only,
           SharedHold counted, TransferBudget& budget) ABSL_LOCKS_EXCLUDED(mu_);
  // Forgets the replies of requests with ids up to `through`.
  void Settle(uint64_t through) ABSL_LOCKS_EXCLUDED(mu_);
  // What a resent request `id` (at most last_completed()) gets.
  Answer Resend(uint64_t id) const ABSL_LOCKS_EXCLUDED(mu_);
  uint64_t last_completed() const ABSL_LOCKS_EXCLUDED(mu_);
  uint64_t bytes() const ABSL_LOCKS_EXCLUDED(mu_);
  size_t entries() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct Entry {
    std::vector<grpc::ByteBuffer> replies;
    SharedHold counted;  // what counts `replies`
    TransferBudget::Hold entry;  // kEntryBytes for the entry itself, past kFreeEntries
    bool kept = true;
    bool read_only = false;
    bool small = false;  // kept however full the budget is
  };
  // Drops `entry`'s replies (it stays, as completed without them).
  void Forget(Entry& entry) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable absl::Mutex mu_;
  std::map<uint64_t, Entry> entries_ ABSL_GUARDED_BY(mu_);
  uint64_t bytes_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t small_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t last_completed_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t last_writer_ ABSL_GUARDED_BY(mu_) = 0;  // the last completed request not a read
};

class ResumableSessions final : public StreamWatch::Watched {
 public:
  // A session's stream, while it holds the session.
  class Holder {
   public:
    virtual ~Holder() = default;
    // Another stream resumes the session: this one is to stop reading, let its running request
    // finish (recording its replies) and park the session. Called under the registry's lock:
    // must not block and must not call back.
    virtual void LetGo() = 0;
  };

  // What waits for its client: the protocol's state and the record of replies.
  struct Parked {
    std::unique_ptr<SessionProtocol::Carried> carried;
    std::shared_ptr<ReplyRecord> record;
  };

  // `grace` 0: no session is resumable. `executor` frees expired sessions (it must outlive
  // this registry's last Tick and DropAll).
  ResumableSessions(absl::Duration grace, Executor* executor)
      : grace_(grace), executor_(executor) {}
  ~ResumableSessions() override;

  absl::Duration grace() const { return grace_; }

  // Registers a resumable session held by `holder`, owned by `owner` (its tenant; "" without
  // tenants), opened with `credential` (its token's digest) by client `client` (the key its
  // sessions and memory are shared out by), and returns its token.
  std::string Register(const std::string& owner, const std::string& credential,
                       const std::string& client, Holder* holder) ABSL_LOCKS_EXCLUDED(mu_);
  // The session's stream is gone: it waits for its client until the grace ends (freed at once
  // while draining).
  void Park(const std::string& token, Parked parked) ABSL_LOCKS_EXCLUDED(mu_);
  // The session closes for good.
  void Forget(const std::string& token) ABSL_LOCKS_EXCLUDED(mu_);
  // Takes the session `token` names for a new stream of `owner` (held by `holder` from now
  // on), waiting up to `wait` for a stream that still holds it to let go. NotFound when no
  // session of `owner` is under `token` (the same for another tenant's token: nothing is
  // revealed); Unavailable when the old stream did not let go in time, and at once when
  // another stream waits to resume it already (one waits at a time: the wait takes a thread
  // of the daemon's, which a client's many resumes must not take from other clients).
  absl::StatusOr<Parked> Take(const std::string& token, const std::string& owner,
                              Holder* holder, absl::Duration wait) ABSL_LOCKS_EXCLUDED(mu_);
  // Frees every parked session, and from now on frees what is parked at once (a drain).
  void DropAll() ABSL_LOCKS_EXCLUDED(mu_);
  // Frees the parked sessions for which `revoked(owner, credential)` is true (a reloaded
  // tenants file no longer lists their tenant or token). Called under the registry's lock.
  void DropRevoked(absl::FunctionRef<bool(const std::string& owner, const std::string& credential)>
                       revoked) ABSL_LOCKS_EXCLUDED(mu_);
  // Takes out the session parked longest (of `client` only, when given) to make room for a
  // live one; its client's resume then finds nothing (NotFound). The caller frees it, on its
  // own thread. nullopt when none is parked.
  std::optional<Parked> Evict(const std::string* client) ABSL_LOCKS_EXCLUDED(mu_);
  // Sessions waiting for their client now.
  size_t parked() const ABSL_LOCKS_EXCLUDED(mu_);

  // StreamWatch::Watched: frees the sessions whose grace has ended.
  void Tick(absl::Time now) override ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct Entry {
    std::string owner;
    std::string credential;
    std::string client;
    Holder* holder = nullptr;        // the stream holding it, or null when parked
    std::optional<Parked> parked;    // set while it waits
    absl::Time expires = absl::InfiniteFuture();  // parked: when its grace ends
    bool letting_go = false;         // asked to let go for a resume
    bool resume_waits = false;       // a stream waits in Take to resume it
  };
  // Frees `parked` off the caller's thread (freeing buffers may wait for the device), logging
  // that each closed for `why`.
  void Free(std::vector<Parked> parked, const char* why);

  const absl::Duration grace_;
  Executor* const executor_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, Entry> entries_ ABSL_GUARDED_BY(mu_);
  bool dropping_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace sluice

#endif  // SLUICE_SERVER_GRPC_RESUMABLE_SESSIONS_H_
