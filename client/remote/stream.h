// The transport of RemoteDispatch: one Session stream, on which requests go out as the stream
// is ready for them (an upload's data chunk by chunk, from the caller's memory) and replies are
// matched to the calls waiting for them (read bytes straight into the caller's vectors). It
// knows the wire's framing, not what the requests mean: client/remote_dispatch.cc builds them.
// Private to the client library.
#ifndef SLUICE_CLIENT_REMOTE_STREAM_H_
#define SLUICE_CLIENT_REMOTE_STREAM_H_

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "absl/status/statusor.h"
#include "client/credentials.h"
#include "client/remote_dispatch.h"
#include "grpcpp/grpcpp.h"
#include "sluice/v1/sluice.grpc.pb.h"

namespace sluice {

// A channel for one session: keepalive to notice a dead daemon within seconds, replies of up to
// a chunk, a connection of its own, and `credentials` (see MakeChannel).
absl::StatusOr<std::shared_ptr<grpc::Channel>> MakeSessionChannel(
    const std::string& target, const ClientCredentials& credentials);

// One logical request, turned into messages as the stream is ready for them. Upload data is
// copied from the caller's memory chunk by chunk (under the stream lock), never all at once.
struct Outgoing {
  uint64_t call_id = 0;     // the request id, set when it is queued
  v1::SessionRequest head;  // the whole request, or an upload's first message (its ranges)
  bool is_upload = false;
  std::vector<absl::Span<const uint8_t>> data;  // upload payload, concatenated in order
  size_t piece = 0;
  size_t piece_offset = 0;
  uint64_t remaining = 0;
  bool head_sent = false;
  uint64_t id = 0;  // kept apart: `head` is swapped out with the first message

  // Fills `msg` with the next message; true when it is the request's last.
  bool Next(v1::SessionRequest* msg, uint32_t chunk);
};

// A request waiting for its reply. Read bytes land directly in `outputs`.
struct RemoteDispatch::Call {
  std::vector<std::vector<uint8_t>*> outputs;
  std::vector<uint64_t> lengths;
  uint64_t expected = 0;
  // Filled by the stream.
  uint64_t id = 0;
  uint64_t received = 0;
  size_t cursor = 0;
  uint64_t cursor_offset = 0;
  bool sized = false;
  bool done = false;
  // Nobody waits for it (a free): the stream owns it, and a failure breaks the session.
  bool detached = false;
  absl::Status status;
  v1::SessionResponse reply;  // the final response
};

class RemoteDispatch::Stream final
    : public grpc::ClientBidiReactor<v1::SessionRequest, v1::SessionResponse> {
 public:
  explicit Stream(std::shared_ptr<grpc::Channel> channel)
      : channel_(std::move(channel)), stub_(v1::Sluice::NewStub(channel_)) {}

  // Starts the call, with the token of `credentials` if any. Once, before anything is sent.
  void Start(const ClientCredentials& credentials);

  void set_chunk_size(uint32_t chunk);
  Counters counters() const;
  // When a DRAINING notice came: the daemon's deadline for this session's work.
  std::optional<absl::Time> draining_until() const;

  // Sends `out` and waits until its final reply arrives, the stream breaks, or `deadline`.
  absl::Status Send(Outgoing out, Call* call, absl::Time deadline);

  // Sends `out` without waiting for its reply, which is checked when it arrives: a failure
  // then closes the session (every later call reports it). For requests whose failure the
  // caller has ruled out (a free of a buffer it holds), so they cost no round trip.
  absl::Status SendDetached(Outgoing out);

  // Half-closes the stream and waits for the daemon to end it; cancels after `grace`.
  void Close(absl::Duration grace);

 private:
  struct Actions {
    bool write = false;
    bool writes_done = false;
    bool release_hold = false;
  };

  void OnWriteDone(bool ok) override;
  void OnWritesDoneDone(bool) override;
  void OnReadDone(bool ok) override;
  void OnDone(const grpc::Status& status) override;

  // Routes the reply in read_msg_ to the oldest waiting call.
  absl::Status DeliverLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Marks the stream unusable: every waiting call completes with `status`.
  void BreakLocked(absl::Status status) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Decides the next gRPC operations; they are started by Apply, outside the lock.
  void AdvanceLocked(Actions* actions) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  void Apply(const Actions& actions);

  const std::shared_ptr<grpc::Channel> channel_;
  const std::unique_ptr<v1::Sluice::Stub> stub_;
  grpc::ClientContext context_;
  v1::SessionRequest write_msg_;  // owned by the write in flight
  v1::SessionResponse read_msg_;  // owned by the read in flight

  mutable absl::Mutex mu_;
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 1;
  uint32_t chunk_size_ ABSL_GUARDED_BY(mu_) = 1 << 20;
  std::deque<Outgoing> outgoing_ ABSL_GUARDED_BY(mu_);
  std::deque<Call*> calls_ ABSL_GUARDED_BY(mu_);
  std::deque<std::unique_ptr<Call>> detached_ ABSL_GUARDED_BY(mu_);  // sent without a waiter
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool closing_ ABSL_GUARDED_BY(mu_) = false;
  bool writes_done_ ABSL_GUARDED_BY(mu_) = false;
  bool writes_done_complete_ ABSL_GUARDED_BY(mu_) = false;
  bool hold_released_ ABSL_GUARDED_BY(mu_) = false;
  bool read_ended_ ABSL_GUARDED_BY(mu_) = false;    // no more replies: OnDone comes next
  bool write_failed_ ABSL_GUARDED_BY(mu_) = false;  // no more writes: OnDone comes next
  bool done_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status broken_ ABSL_GUARDED_BY(mu_);  // OK while the stream is healthy
  std::optional<absl::Time> draining_until_ ABSL_GUARDED_BY(mu_);
  Counters counters_ ABSL_GUARDED_BY(mu_);
};

}  // namespace sluice

#endif  // SLUICE_CLIENT_REMOTE_STREAM_H_
