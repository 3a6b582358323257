// The daemon's table of open sessions: it creates each session with the daemon's limits,
// enforces the session count, refuses new sessions while draining and tells open ones (through
// the listener their owner gives), and keeps the counts that GetInfo reports. Knows nothing of
// gRPC.
#ifndef SLUICE_ENGINE_SESSION_MANAGER_H_
#define SLUICE_ENGINE_SESSION_MANAGER_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "sluice/base/fair_share.h"
#include "sluice/base/warm_buffers.h"
#include "sluice/engine/device.h"
#include "sluice/engine/session.h"
#include "sluice/engine/transfer_budget.h"
#include "sluice/proto/contract.h"

namespace sluice {

// The most an upload's block of data holds (server/ops/upload.h), and the size of the blocks a
// daemon keeps warm for the next upload (SessionManager::upload_blocks).
inline constexpr uint64_t kUploadBlockBytes = uint64_t{4} << 20;

// Session::Options for a session with `limits`.
Session::Options SessionOptionsFor(const SessionLimits& limits);

// What all the sessions of one client may hold together, and its weight in the device's share.
// A 0 is the daemon's default for a client (SessionManager::Options).
struct ClientLimits {
  uint64_t memory = 0;          // bytes of device buffers (0: client_memory)
  uint32_t max_sessions = 0;    // sessions at once (0: SessionsPerClient())
  uint64_t transfer_bytes = 0;  // of the daemon's transfer budget at once (0: all of it)
  uint32_t weight = 1;          // share of device time against other busy clients
};

// Who opens a session. Sessions with one key share their limits and their device time.
struct Principal {
  // Without tenants: the peer (its host and the uid behind the connection, the host alone
  // where the transport does not say). With tenants: the tenant's name.
  std::string key;
  std::string tenant;      // empty when the daemon has no tenants
  std::string credential;  // what it proved itself with (a token's digest), for revocation
  ClientLimits limits;
};

// What one client holds and may hold, for GetInfo.
struct ClientUse {
  uint32_t sessions = 0;
  uint32_t max_sessions = 0;
  uint64_t memory_used = 0;
  uint64_t memory_limit = 0;
  uint64_t transfer_in_use = 0;
  uint64_t transfer_limit = 0;
  uint32_t weight = 1;
  absl::Duration device_time;  // held by its work, while it has had sessions open
};

class SessionManager {
 public:
  struct Options {
    uint32_t max_sessions = 256;
    // Sessions one client (see Open) may hold at once; 0: a quarter of max_sessions (at least
    // one).
    uint32_t max_sessions_per_client = 0;
    // Bytes of buffers all of one client's sessions may hold together; 0: as
    // limits.memory_quota, so that a client's many sessions hold no more than one could.
    uint64_t client_memory = 0;
    // Device work is shared out by client (see FairShare): the least time one client's work
    // holds the device before another client's waiting work may have it.
    absl::Duration share_quantum = absl::Milliseconds(1);
    // How far ahead of the least-served busy client one that was idle comes back: the device
    // time a client's short requests may take before others that wait get the device back.
    // A small solve's device time (tens of milliseconds) fits, so its every window takes the
    // device at once; a client that keeps the device busy still gets only its share.
    absl::Duration share_credit = absl::Milliseconds(100);
    // What every session gets; limits.chunk_size is the chunk for a client that states no
    // preference. limits.memory_quota 0: half of the device's memory; limits.max_request_bytes
    // 0: 4 GiB, or less where the transfer budget is smaller (see FollowMachine).
    SessionLimits limits;
    // The largest chunk a client may negotiate (the smallest is kMinChunkSize); it stays well
    // below gRPC's 4 MiB default message limit. limits.max_message_bytes must be at least this
    // plus kMessageOverheadBytes.
    uint32_t max_chunk_size = 2 << 20;
    // Host memory for uploads being assembled and reads waiting to be sent, all sessions
    // together (see TransferBudget); at least LargestRequestBytes(). 0: a quarter of the
    // host's memory, within [256 MiB, 8 GiB].
    uint64_t max_transfer_bytes = 0;
    // A client's share of max_transfer_bytes (a tenant's is its transfer_share instead): what
    // all its streams may hold together, past which it is not read (see TransferBudget). 0:
    // half of max_transfer_bytes, but at least LargestRequestBytes(), so that one client can
    // make the largest request.
    uint64_t client_transfer_bytes = 0;
    // Called once, from the Open that finds the device lost for good (see Device::lost): a
    // daemon exits then, so that its supervisor starts it again on a fresh device.
    std::function<void()> on_device_lost;
    // Called when the last open session closes (on the thread that closed it, once its buffers
    // are freed): a daemon gives the heap back to the system then.
    std::function<void()> on_idle;

    // The chunk size for a client that asked for `requested` (0: the default), clamped to
    // [kMinChunkSize, max_chunk_size].
    uint32_t NegotiateChunkSize(uint32_t requested) const;
    // What the largest request holds of a transfer budget: an upload of max_request_bytes,
    // assembled, and the message that brings its last chunk (max_request_bytes plus
    // max_chunk_size); or a read's replies, of two windows at most where it streams, where
    // they hold more (ReadHoldBytes in the smallest chunks: only with a max_chunk_size under
    // 2 MiB).
    uint64_t LargestRequestBytes() const;
    // max_sessions_per_client, with 0 resolved.
    uint32_t SessionsPerClient() const;
    // These options with every 0 that means "follow the machine" resolved, for a device that
    // hands out `device_bytes` on a host with `host_bytes` of memory. (The manager resolves
    // its options so.)
    Options FollowMachine(uint64_t device_bytes, uint64_t host_bytes) const;
    // InvalidArgument, naming the daemon's flag, where resolved options cannot work together
    // (a transfer budget too small for the largest request).
    absl::Status Check() const;
  };

  // What the manager tells the owner of an open session (the daemon's stream). Called from the
  // thread that drains the daemon; an implementation must return promptly, must not call back
  // into the manager, and must not end the session from within the call.
  class Listener {
   public:
    virtual ~Listener() = default;
    // The daemon drains: no new sessions; work still running at `deadline` is cancelled.
    virtual void Draining(absl::Time deadline) = 0;
    // The session is ended by the daemon, for the reason `why` (Unavailable): its running work
    // is to stop and its stream to end with `why`.
    virtual void End(const absl::Status& why) = 0;
  };

  // An open session; closing it (destruction) frees its buffers and its slot.
  class Ticket {
   public:
    ~Ticket();
    Session& session() const { return *session_; }
    const std::string& id() const { return id_; }
    const Principal& principal() const { return principal_; }
    // The transfer memory this session's requests reserve from: its client's share, within
    // the daemon's budget.
    TransferBudget& transfers() const { return *transfers_; }
    // The same, for a holder that may outlive the ticket (a shared-memory region a stream's
    // in-flight work still maps).
    const std::shared_ptr<TransferBudget>& shared_transfers() const { return transfers_; }

    // Sets who is told of drains and ends (nullptr: nobody). Returns once no call into the
    // listener it replaces runs any more, so that listener may then be destroyed. Thread-safe.
    void Listen(Listener* listener);

   private:
    friend class SessionManager;
    Ticket(SessionManager* manager, std::unique_ptr<Session> session, std::string id,
           Principal principal, std::shared_ptr<TransferBudget> transfers);
    SessionManager* const manager_;
    std::unique_ptr<Session> session_;
    const std::string id_;
    const Principal principal_;
    // The client's share of the transfer budget, or an alias of the daemon's (kept alive by
    // this ticket and by the holds reserved from it).
    const std::shared_ptr<TransferBudget> transfers_;
    Listener* listener_ = nullptr;  // guarded by manager_->mu_
    int calls_ = 0;                 // calls into listener_ running; guarded by manager_->mu_
  };

  SessionManager(std::shared_ptr<Device> device, const Options& options);

  // Opens a session for `who`, within its limits (a client's limits are those its latest
  // open or Reauthorize gave). ResourceExhausted at max_sessions, or at the client's session
  // limit; Unavailable while draining; errors of the device. Thread-safe.
  absl::StatusOr<std::unique_ptr<Ticket>> Open(const Principal& who);
  // A client with the daemon's default limits, known by `key` alone.
  absl::StatusOr<std::unique_ptr<Ticket>> Open(const std::string& key = "") {
    return Open(Principal{.key = key});
  }
  // Sessions the client with `key` holds now. Thread-safe.
  uint32_t client_sessions(const std::string& key) const ABSL_LOCKS_EXCLUDED(mu_);
  // What the client with `key` holds and may hold (its limits resolved; no sessions: the
  // limits `limits` would give it). Thread-safe.
  ClientUse client_use(const std::string& key, const ClientLimits& limits) const
      ABSL_LOCKS_EXCLUDED(mu_);

  // Asks `check` about every open session's principal: those it refuses (nullopt) are ended
  // with `why`; the others' clients take the limits it returns (memory and transfer limits
  // apply to later reservations; what is held stays). For a reloaded tenants file.
  // Thread-safe; `check` is called under the manager's lock and must not call back.
  void Reauthorize(absl::FunctionRef<std::optional<ClientLimits>(const Principal&)> check,
                   const absl::Status& why) ABSL_LOCKS_EXCLUDED(mu_);

  // From now on Open fails with Unavailable saying the daemon drains; every open session's
  // listener is told that work still running at `deadline` will be cancelled. Thread-safe.
  void BeginDrain(absl::Time deadline) ABSL_LOCKS_EXCLUDED(mu_);
  bool draining() const { return draining_.load(); }
  // Waits until no session is open, or `deadline`; true when none is. Thread-safe.
  bool WaitUntilIdle(absl::Time deadline) ABSL_LOCKS_EXCLUDED(mu_);
  // Tells every open session's listener that the daemon ends it, for the reason `why`.
  // Thread-safe.
  void EndAll(const absl::Status& why) ABSL_LOCKS_EXCLUDED(mu_);

  uint32_t active_sessions() const { return active_.load(); }
  uint64_t sessions_opened() const { return opened_.load(); }
  const Options& options() const { return options_; }
  Device& device() const { return *device_; }
  TransferBudget& transfers() { return transfers_; }
  const FairShare& device_share() const { return device_share_; }
  const TransferBudget& transfers() const { return transfers_; }
  // Upload blocks kept after their upload ran, for the next: at most an eighth of the transfer
  // budget (kWarmUploadDivisor), a block freed once it has gone unused for kWarmUploadKeep
  // (ExpireUploadBlocks). GetInfo's host_memory counts them.
  static constexpr uint64_t kWarmUploadDivisor = 8;
  static constexpr absl::Duration kWarmUploadKeep = absl::Seconds(10);
  WarmBuffers& upload_blocks() { return upload_blocks_; }
  const WarmBuffers& upload_blocks() const { return upload_blocks_; }
  // Frees the upload blocks kept unused for kWarmUploadKeep by `now`. Thread-safe.
  void ExpireUploadBlocks(absl::Time now) { upload_blocks_.Expire(now - kWarmUploadKeep); }

 private:
  struct Client;
  // Forgets one session of `client`, and the client once it holds none.
  void ReleaseClientLocked(const std::string& client) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // `limits` with every 0 resolved to the daemon's defaults.
  ClientLimits ResolveLimits(const ClientLimits& limits) const;
  // Gives `client` the (resolved) `limits`.
  void ApplyLimitsLocked(Client& client, const ClientLimits& limits)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Calls `tell` on the listener of every open session that `which` selects (all: null),
  // outside mu_.
  void TellAll(absl::FunctionRef<void(Listener*)> tell,
               const absl::flat_hash_set<const Ticket*>* which = nullptr)
      ABSL_LOCKS_EXCLUDED(mu_);

  const std::shared_ptr<Device> device_;
  const Options options_;
  std::atomic<uint32_t> active_{0};  // changed under mu_ (WaitUntilIdle waits on it)
  std::atomic<uint64_t> opened_{0};
  std::atomic<bool> draining_{false};
  std::atomic<bool> lost_reported_{false};
  TransferBudget transfers_;  // own locking
  WarmBuffers upload_blocks_;  // own locking

  FairShare device_share_;  // own locking; outlives the clients' members

  // What one client holds: its sessions, the memory quota and transfer share they share, and
  // its place in the device's share.
  struct Client {
    uint32_t sessions = 0;
    ClientLimits limits;  // resolved
    std::shared_ptr<MemoryAccountant> memory;
    std::shared_ptr<TransferBudget> transfers;  // its share, within the daemon's budget
    std::shared_ptr<FairShare::Member> device_turns;
  };

  mutable absl::Mutex mu_;
  absl::flat_hash_set<Ticket*> tickets_ ABSL_GUARDED_BY(mu_);  // open sessions
  absl::flat_hash_map<std::string, Client> clients_ ABSL_GUARDED_BY(mu_);
  absl::Time drain_deadline_ ABSL_GUARDED_BY(mu_) = absl::InfiniteFuture();
};

}  // namespace sluice

#endif  // SLUICE_ENGINE_SESSION_MANAGER_H_
