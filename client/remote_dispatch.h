// RemoteDispatch: ResidentDispatch over one sluiced Session stream. Every interface call is
// one network round trip, whatever it carries: UploadMany of any number of buffers, a whole
// sequence with its reads, a repeated window; a Free is none (it is checked here, against the
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

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "client/credentials.h"
#include "client/resident_dispatch.h"
#include "proto/contract.h"

namespace sluice {

class RemoteDispatch final : public ResidentDispatch {
 public:
  struct Options {
    std::string target;  // host:port of sluiced
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
  };

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
  // reads of a sequence) are one request: together they must fit the limit.
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
  absl::Status Upload(const Resource& resource, absl::Span<const uint8_t> bytes) override;
  absl::Status UploadMany(absl::Span<const BufferUpload> uploads) override;
  absl::Status UploadAtMany(absl::Span<const RangedUpload> uploads) override;
  absl::StatusOr<std::vector<uint8_t>> Download(const Resource& resource) override;
  absl::Status DownloadInto(const Resource& resource, std::vector<uint8_t>* output) override;
  absl::StatusOr<std::vector<uint8_t>> DownloadRange(const Resource& resource, size_t byte_offset,
                                                     size_t byte_len) override;
  absl::Status DownloadRangeInto(const Resource& resource, size_t byte_offset, size_t byte_len,
                                 std::vector<uint8_t>* output) override;
  absl::Status DownloadRangesInto(absl::Span<const ReadRange> ranges,
                                  absl::Span<std::vector<uint8_t>* const> outputs) override;
  absl::Status Free(Resource resource) override;
  absl::Status Dispatch(const Program& program, absl::Span<const Resource> resources,
                        std::optional<Grid> grid_override) override;
  absl::Status DispatchSequenceReadRangesInto(
      absl::Span<const Step> steps, absl::Span<const ReadRange> read_ranges,
      absl::Span<std::vector<uint8_t>* const> outputs) override;
  absl::Status DispatchRepeatedSequenceReadRangesInto(
      absl::Span<const Step> prefix_steps, absl::Span<const Step> repeated_steps,
      uint32_t repeat_count, absl::Span<const ReadRange> read_ranges,
      absl::Span<std::vector<uint8_t>* const> outputs) override;

  // Sends a ping with `payload_bytes` bytes and waits for the echo (one round trip).
  absl::Status Ping(size_t payload_bytes = 0);
  // Waits until every request sent so far has run: the first failure of those sent without
  // waiting (Options::pipelined) that no call has reported yet, or OK. One round trip.
  absl::Status Sync() { return Ping(0); }
  // Whether calls are pipelined: asked for, and the daemon takes client-chosen handles.
  bool pipelined() const { return pipelined_; }

  Counters counters() const;
  const Limits& limits() const { return limits_; }
  // Set once the daemon said it drains: the time its work still running is cancelled (the
  // session ends then with Unavailable saying so). Thread-safe.
  std::optional<absl::Time> draining_until() const;
  const std::string& session_id() const { return session_id_; }

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
  // Sends the execute request behind every Dispatch* method and reads into `outputs`.
  absl::Status Execute(absl::Span<const Step> prefix, absl::Span<const Step> repeated,
                       uint32_t repeat_count, absl::Span<const ReadRange> ranges,
                       absl::Span<std::vector<uint8_t>* const> outputs);

  const std::unique_ptr<Stream> stream_;
  const Options options_;
  const uint64_t owner_;  // tags every Resource issued here
  // Set once at open, const afterwards.
  std::string session_id_;
  std::string backend_id_;
  std::string backend_version_;
  Limits limits_;
  bool pipelined_ = false;

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
