// RemoteDispatch: ResidentDispatch over one sluiced Session stream. Every interface call is
// one network round trip, whatever it carries: UploadMany of any number of buffers, a whole
// sequence with its reads, a repeated window (but for transfers through shared memory, a
// round trip for each piece, several in flight at once); a Free is none (it is checked here, against the
// buffers this session holds, and sent without waiting; should the daemon still refuse it,
// the session closes and later calls are Unavailable, saying why). Requests run in order, so
// the next call of the session sees the free; the daemon's memory figures may lag it, and the
// next call's deadline covers the frees queued before it. Transfers are chunked below gRPC's message limit
// and reassembled, invisibly to the caller; ranged reads move only their ranges.
//
// With Options::pipelined, allocations and dispatches without reads go without waiting too,
// and a failure only the daemon sees is reported by the next call that waits.
//
// Every call waits at most `call_timeout`. A resumable session (Options::resumable, the
// default) whose connection breaks is resumed on a new one within the daemon's grace, its
// unanswered requests sent again and answered once (callers wait a little longer and see no
// error); when the daemon is gone (nothing listens any more), the session was ended or its
// grace passed, calls fail promptly with Unavailable (and all later calls too: the session's
// buffers are gone).
// A daemon with tenants refuses a missing or wrong token with Unauthenticated; a session it
// ends because its tenant or token was removed fails its calls with Unauthenticated too.
#ifndef SLUICE_CLIENT_REMOTE_DISPATCH_H_
#define SLUICE_CLIENT_REMOTE_DISPATCH_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "sluice/client/core_dispatch.h"
#include "sluice/client/credentials.h"
#include "sluice/proto/contract.h"

namespace sluice {

class SharedMemory;

class RemoteDispatch final : public CoreDispatch {
 public:
  struct Options {
    std::string target;  // host:port of sluiced
    // UTF-8 (InvalidArgument otherwise); its first kMaxClientNameBytes are sent, the daemon
    // keeping no more.
    std::string client_name = "sluice-client";
    uint32_t chunk_size = 0;  // preferred bytes per data message; 0: the daemon's default
    absl::Duration call_timeout = absl::Minutes(10);
    absl::Duration connect_timeout = absl::Seconds(10);
    // A tenant's token and TLS, for a daemon that asks for them.
    ClientCredentials credentials;
    // The session survives a dropped connection: when its stream breaks, the client resumes
    // it on a new one within the daemon's grace (GetInfo resume_grace_ms) and sends again every
    // request still waiting for its reply; the daemon answers those it had completed from its
    // record, so nothing runs twice and callers see no error. A daemon with no grace makes it
    // a plain session.
    bool resumable = true;
    // Pipelining (with a daemon that takes client-chosen handles, OpenResponse.client_handles):
    // calls that return nothing but a status go without waiting for their reply: Allocate
    // (the dispatcher picks the handle), Free and Dispatch* with no reads. What the dispatcher
    // can check itself (handles, ranges, the session's quota and buffer limit) it still
    // refuses at once; a failure only the daemon can see (device memory, or a client or
    // tenant quota shared with other sessions short; a kernel refusing its bindings) is
    // reported, with its own code and naming the request, by the next call of this session
    // that waits (a read, an upload, a Dispatch* with reads, Ping, Sync), and only by that
    // one. Requests run in order, so no call that waits reads anything a failed one should
    // have written without saying so. A solve then costs its windows and a few round trips.
    bool pipelined = false;
    // The same-host data path: against a daemon on this host (a unix: target) that offers it
    // (sluiced listening on a Unix socket), uploads and reads of at least kSharedMinBytes move
    // through memory shared with the daemon instead of the stream: one copy each way, none for
    // an upload of StagingArea's memory. An upload stays one request, all or nothing. Should
    // the memory not be made or attached, transfers take the stream.
    bool shared_memory = true;
    // How long a call that waits for its reply looks for it before it sleeps, giving its core
    // to any other thread between looks: a reply that comes within it (a small read's or a
    // ping's, about 100 us on loopback) is taken without the wakeup a sleeping thread needs.
    // That is a third of such a round trip on an idle 2-core VM, but where every core is busy
    // (a CPU-device daemon on this host, solving) the looking caller takes a core's turn from
    // the threads that deliver its reply, and small calls wait longer (docs/benchmarks.md).
    // So it is for a client whose cores idle while it waits: 100 us, say. Zero (the default):
    // sleep at once. Connect refuses more than kMaxReplyPoll or less than zero.
    absl::Duration reply_poll = absl::ZeroDuration();
  };
  static constexpr absl::Duration kMaxReplyPoll = absl::Seconds(1);
  static constexpr uint64_t kSharedMinBytes = uint64_t{1} << 20;
  // An upload copied into shared memory goes in pieces of this many bytes, as many in flight as
  // the ring has slots (one round trip each).
  static constexpr uint64_t kSharedPieceBytes = uint64_t{32} << 20;
  static constexpr size_t kSharedSlots = 4;
  // A read through shared memory comes back in pieces of this many bytes, as many in flight
  // as its ring has slots (one round trip each): the client touches 4 MiB of shared memory
  // however long the read, and a slot is still in its caches when it is copied out (2 MiB
  // pieces read a GiB at 8.8 GB/s here, 512 KiB ones at 3.9, 32 MiB ones at 5.4, the whole
  // read in one request at 7.2: docs/benchmarks.md).
  static constexpr uint64_t kSharedReadPieceBytes = uint64_t{2} << 20;
  static constexpr size_t kSharedReadSlots = 2;

  // Network traffic of this session, for tests and benchmarks.
  struct Counters {
    uint64_t messages_sent = 0;
    uint64_t messages_received = 0;
    uint64_t bytes_sent = 0;      // serialized message bytes
    uint64_t bytes_received = 0;
    // Interface calls that waited for the daemon's reply. A Free does not: this dispatcher
    // rules out its failures itself and sends it without waiting.
    uint64_t round_trips = 0;
    // Requests sent without waiting for their reply (frees, and pipelined calls).
    uint64_t unwaited = 0;
    // Times the session was resumed on a new stream after its connection broke.
    uint64_t resumes = 0;
    // Bytes uploaded and read through shared memory (not counted in bytes_sent/received).
    uint64_t shared_bytes = 0;
    // Round trips whose reply came while the caller looked for it (Options::reply_poll),
    // rather than after it slept.
    uint64_t replies_polled = 0;
  };

  // The limits the daemon granted at open.
  using Limits = SessionLimits;

  // Connects and opens a session. Unavailable if the daemon cannot be reached within
  // connect_timeout; the daemon's status if it refuses the session.
  static absl::StatusOr<std::unique_ptr<RemoteDispatch>> Connect(const Options& options);
  // Closes the session; the daemon frees every buffer it still holds.
  ~RemoteDispatch() override;

  // A whole-buffer or single-range download larger than the daemon's max_request_bytes moves
  // in several requests (work this session sends from another thread meanwhile may run between
  // them); an upload does not (it must be all or nothing): a buffer larger than that goes up by
  // ranges (UploadAtMany), or the daemon's limit is raised. Several ranges in one call (or the
  // reads of a sequence) are one request: together they must fit the limit. Through shared
  // memory, a read goes in pieces of kSharedReadPieceBytes, its ranges all checked before the
  // first; work sent from another thread may run between them too.
  //
  // All methods are thread-safe. Status codes are those of ResidentDispatch, plus Unavailable
  // (the session is gone), DeadlineExceeded (no reply within call_timeout: the session is
  // closed, and every later call is Unavailable), ResourceExhausted for requests moving more
  // bytes than the daemon's limits allow (for uploads, checked before anything is sent) or
  // than its memory for transfers in flight has room for at the moment, and InvalidArgument
  // for requests with more ranges or steps than its limits allow.
  std::string_view backend_id() const override { return backend_id_; }
  std::string_view backend_version() const override { return backend_version_; }
  absl::StatusOr<Resource> Allocate(size_t byte_len) override;
  absl::Status UploadAtMany(absl::Span<const RangedUpload> uploads) override;
  absl::Status Free(Resource resource) override;

  // Sends a ping with `payload_bytes` bytes and waits for the echo (one round trip).
  absl::Status Ping(size_t payload_bytes = 0);
  // Waits until every request sent so far has run: the first failure of those sent without
  // waiting (Options::pipelined) that no call has reported yet, or OK. One round trip.
  absl::Status Sync() { return Ping(0); }
  // Whether calls are pipelined: asked for, and the daemon takes client-chosen handles.
  bool pipelined() const { return pipelined_; }
  // Whether the daemon offered this session shared memory (see Options::shared_memory).
  bool shared_memory() const { return !shared_socket_.empty(); }
  // The first `bytes` of this session's shared memory, for the caller to fill and hand to
  // Upload*, which then sends it without copying it. Other transfers use the memory past it.
  // Valid until the next StagingArea call (its bytes are not kept) or the dispatcher's end;
  // an upload of it must not overlap a change to it. FailedPrecondition without shared
  // memory; ResourceExhausted past the daemon's limit (OpenResponse.shared_memory.max_bytes).
  // Thread-safe.
  absl::StatusOr<absl::Span<uint8_t>> StagingArea(size_t bytes);

  // Sends a CancelRequest for every call waiting for its reply (and every pipelined one, whose
  // failure the next waiting call reports).
  void Cancel() override;
  Counters counters() const;
  const Limits& limits() const { return limits_; }
  // Set once the daemon said it drains: the time its work still running is cancelled (the
  // session ends then with Unavailable saying so). Thread-safe.
  std::optional<absl::Time> draining_until() const;
  const std::string& session_id() const { return session_id_; }

 protected:
  // The execute request behind every Dispatch* method, reading into `target`.
  absl::Status Execute(absl::Span<const Step> prefix, absl::Span<const Step> repeated,
                       uint32_t repeat_count, absl::Span<const ReadRange> ranges,
                       ReadTarget target) override;
  // Reads: one range longer than a request may move goes in pieces, shared memory when the
  // session has it, else a read request.
  absl::Status Read(absl::Span<const ReadRange> ranges, ReadTarget target) override;
  absl::StatusOr<uint64_t> BufferSize(const Resource& resource) const override;

 private:
  class Stream;
  struct Call;

  RemoteDispatch(std::unique_ptr<Stream> stream, const Options& options);

  absl::StatusOr<uint64_t> HandleOf(const Resource& resource) const;
  // Allocate with a handle of this dispatcher's choosing, sent without waiting.
  absl::StatusOr<Resource> AllocatePipelined(size_t byte_len);
  // Drops `handle` from the buffers this session holds (its allocation failed).
  void Forget(uint64_t handle) ABSL_LOCKS_EXCLUDED(sizes_mu_);
  // The size of a buffer of this session; NotFound for a handle it does not hold (freed).
  absl::StatusOr<uint64_t> KnownSize(uint64_t handle) const;
  // NotFound for a freed buffer, OutOfRange when [offset, offset + length) is outside it;
  // checked before uploads and split reads are sent (`where` names the range in the message).
  absl::Status CheckKnownRange(uint64_t handle, uint64_t offset, uint64_t length,
                               const std::string& where) const;
  // One range longer than a request may move, read in pieces of at most that many bytes
  // straight into its target (a read changes nothing, so a piece that fails leaves nothing
  // half-done but the output).
  absl::Status ReadInPieces(const ReadRange& range, ReadTarget target);

  // Shared memory: whether a transfer of `bytes` takes it.
  bool TakesSharedMemory(uint64_t bytes) const;
  // Makes the shared memory hold at least `bytes` (past the staging area when `past_staging`),
  // attaching a larger one if needed; returns it.
  absl::StatusOr<SharedMemory*> SharedMemoryOfLocked(uint64_t bytes, bool past_staging)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(shared_mu_);
  // UploadAtMany and DownloadRangesInto through shared memory; nullopt: not taken (the caller
  // uses the stream).
  std::optional<absl::Status> UploadShared(absl::Span<const RangedUpload> uploads,
                                           uint64_t total);
  std::optional<absl::Status> ReadShared(absl::Span<const ReadRange> ranges, ReadTarget target);

  const std::unique_ptr<Stream> stream_;
  const Options options_;
  const uint64_t owner_;  // tags every Resource issued here
  // Set once at open, const afterwards.
  std::string session_id_;
  std::string backend_id_;
  std::string backend_version_;
  Limits limits_;
  bool pipelined_ = false;
  // The open's shared-memory offer (empty socket: none).
  std::string shared_socket_;
  std::string shared_token_;
  uint64_t shared_max_ = 0;
  // Held by a transfer while it uses the shared memory (its request and reply).
  absl::Mutex shared_mu_;
  std::unique_ptr<SharedMemory> shared_ ABSL_GUARDED_BY(shared_mu_);
  uint64_t staged_ ABSL_GUARDED_BY(shared_mu_) = 0;  // the staging area's bytes
  bool shared_failed_ ABSL_GUARDED_BY(shared_mu_) = false;  // an attach failed: the stream
  std::atomic<uint64_t> shared_bytes_{0};

  // Sizes of this session's live buffers, for whole-buffer downloads.
  mutable absl::Mutex sizes_mu_;
  absl::flat_hash_map<uint64_t, uint64_t> sizes_ ABSL_GUARDED_BY(sizes_mu_);
  uint64_t held_bytes_ ABSL_GUARDED_BY(sizes_mu_) = 0;  // the sum of sizes_
  // Every change of sizes_ goes through these, which keep held_bytes_.
  void RememberLocked(uint64_t handle, uint64_t bytes) ABSL_EXCLUSIVE_LOCKS_REQUIRED(sizes_mu_);
  // The bytes of `handle`, which it forgets; 0 if it had none.
  uint64_t ForgetLocked(uint64_t handle) ABSL_EXCLUSIVE_LOCKS_REQUIRED(sizes_mu_);
};

}  // namespace sluice

#endif  // SLUICE_CLIENT_REMOTE_DISPATCH_H_
