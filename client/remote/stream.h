// The transport of RemoteDispatch: one Session stream, on which requests go out as the stream
// is ready for them (an upload's data chunk by chunk, from the caller's memory) and replies are
// matched to the calls waiting for them (read bytes straight into the caller's memory). It
// knows the wire's framing, not what the requests mean: client/remote_dispatch.cc builds them.
// Private to the client library.
#ifndef SLUICE_CLIENT_REMOTE_STREAM_H_
#define SLUICE_CLIENT_REMOTE_STREAM_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/any_invocable.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/grpcpp.h"
#include "sluice/client/credentials.h"
#include "sluice/client/remote/outgoing.h"
#include "sluice/client/remote/reply_decoder.h"
#include "sluice/client/remote_dispatch.h"
#include "sluice/v1/sluice.grpc.pb.h"

namespace sluice {

// A request waiting for its reply. Read bytes land directly in the caller's memory: the
// target's spans, asked for when the first bytes arrive (or at the end, when none do).
struct RemoteDispatch::Call {
  // The request as first queued, for a resumed session to send it again (resumable only).
  std::optional<Outgoing> pristine;
  const ReadTarget* target = nullptr;  // the caller's, alive while it waits; null: no reads
  std::vector<uint64_t> lengths;
  std::vector<absl::Span<uint8_t>> outputs;  // from the target, once `sized`
  // Asks the target for every read's span and sets `sized`; Internal if one is refused.
  absl::Status SizeOutputs();
  uint64_t expected = 0;
  // Filled by the stream.
  uint64_t id = 0;
  uint64_t received = 0;
  size_t cursor = 0;
  uint64_t cursor_offset = 0;
  bool sized = false;
  bool done = false;
  // Set with `done`, for a caller that polls for it without the stream's lock (Stream::Wait).
  std::atomic<bool> arrived{false};
  // Nobody waits for it (a free): the stream owns it, and a failure breaks the session...
  bool detached = false;
  // ...unless it was pipelined: then the next call that waits reports the failure, as
  // "<what> (request N), sent without waiting, failed: ...", after `on_failure` has run
  // (under the stream's lock).
  bool pipelined = false;
  const char* what = "";
  absl::AnyInvocable<void()> on_failure;
  // Nobody waits for it and its failure changes nothing (a cancel, whose target may have
  // completed meanwhile): its reply is dropped.
  bool best_effort = false;
  absl::Status status;
  v1::SessionResponse reply;  // the final response
};

// The session's stream. Its gRPC call is a Link; a resumable session (see set_resumable) whose
// link breaks gets a new one that resumes the session, and every request whose final reply had
// not arrived is sent again on it, with its id (the daemon answers those it completed from its
// record): callers waiting for replies see nothing of it.
class RemoteDispatch::Stream {
 public:
  Stream(std::shared_ptr<grpc::Channel> channel, ClientCredentials credentials);
  // Stops resuming, cancels what still runs and waits for every link to end.
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  // Starts the first call. Once, before anything is sent.
  void Start();

  void set_chunk_size(uint32_t chunk);
  // How long Wait polls for a reply before it sleeps (Options::reply_poll). Before Start.
  void set_reply_poll(absl::Duration poll) { reply_poll_ = poll; }
  // The session survives its stream for `grace` and resumes with `token` (the open's reply).
  // A resume goes to the channel's target, or to `pinned` when given (the session's own
  // daemon, when the target balances sessions over several).
  void set_resumable(std::string token, absl::Duration grace,
                     std::shared_ptr<grpc::Channel> pinned = nullptr);
  // The daemon the current call goes to, as gRPC names it ("ipv4:10.0.0.7:7450"), once the
  // call has its first reply.
  std::string peer() const;
  Counters counters() const;
  // When a DRAINING notice came: the daemon's deadline for this session's work.
  std::optional<absl::Time> draining_until() const;

  // Sends `out` and waits until its final reply arrives, the stream breaks, or `deadline`.
  absl::Status Send(Outgoing out, Call* call, absl::Time deadline);
  // Send in two halves, for a caller that keeps several requests in flight: Begin queues `out`
  // for `call` (which must live until Wait returns); Wait waits for its reply, as Send does.
  absl::Status Begin(Outgoing out, Call* call);
  absl::Status Wait(Call* call, absl::Time deadline);

  // Sends `out` without waiting for its reply, which is checked when it arrives: a failure
  // then closes the session (every later call reports it). For requests whose failure the
  // caller has ruled out (a free of a buffer it holds), so they cost no round trip.
  absl::Status SendDetached(Outgoing out);

  // Sends `out` without waiting for its reply; a failure is kept for the next call that waits
  // (Send), which returns it instead of its own status. `what` names the request in it;
  // `on_failure` runs (under the stream's lock, so it must not call back) when it fails.
  absl::Status SendPipelined(Outgoing out, const char* what,
                             absl::AnyInvocable<void()> on_failure = nullptr);

  // Asks the daemon to cancel every request still waiting for its final reply: a
  // CancelRequest for each, sent without waiting (a request that completes meanwhile is not
  // found, which is ignored). Frees sent without waiting are left to run. Any thread; returns
  // how many requests it asked to cancel.
  int CancelInFlight();

  // Half-closes the stream and waits for the daemon to end it; cancels after `grace`.
  void Close(absl::Duration grace);

 private:
  class Link;
  // The Session method, its replies decoded by IncomingReply (large data stays where gRPC
  // received it).
  using SessionStub = grpc::TemplatedGenericStub<v1::SessionRequest, IncomingReply>;
  struct Actions {
    Link* write = nullptr;
    Link* writes_done = nullptr;
    std::vector<Link*> release_holds;
  };

  // Queues `out` for `call`, which the stream keeps until its reply has come.
  absl::Status SendUnwaited(Outgoing out, std::unique_ptr<Call> call);
  // Queues `out` for `call` (its id set here) and returns what to start.
  void QueueLocked(Outgoing out, Call* call, Actions* actions) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Link callbacks, under no lock.
  void OnWriteDone(Link* link, bool ok);
  void OnWritesDoneDone(Link* link);
  void OnReadDone(Link* link, bool ok);
  void OnDone(Link* link, const grpc::Status& status);

  // Routes the reply in `link`'s read_msg to the oldest waiting call (or, on a link that
  // resumes the session, to its open).
  absl::Status DeliverLocked(Link* link) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Marks the stream unusable: every waiting call completes with `status`.
  void BreakLocked(absl::Status status) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Decides the next gRPC operations; they are started by Apply, outside the lock.
  void AdvanceLocked(Actions* actions) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Apply(const Actions& actions);

  // Whether a link that ended with `status` is worth resuming the session for.
  bool ResumableEndLocked(const grpc::Status& status) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The thread that resumes the session when its link breaks.
  void ResumeLoop();
  // Resumes the session on new links until one succeeds, or breaks the stream saying why.
  void ResumeLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::shared_ptr<grpc::Channel> channel_;
  const std::unique_ptr<SessionStub> stub_;
  const ClientCredentials credentials_;

  mutable absl::Mutex mu_;
  std::vector<std::unique_ptr<Link>> links_ ABSL_GUARDED_BY(mu_);  // every link made
  Link* link_ ABSL_GUARDED_BY(mu_) = nullptr;  // the one requests go out on
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 1;
  uint32_t chunk_size_ ABSL_GUARDED_BY(mu_) = 1 << 20;
  std::deque<Outgoing> outgoing_ ABSL_GUARDED_BY(mu_);
  std::deque<Call*> calls_ ABSL_GUARDED_BY(mu_);
  std::deque<std::unique_ptr<Call>> detached_ ABSL_GUARDED_BY(mu_);  // sent without a waiter
  bool closing_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status broken_ ABSL_GUARDED_BY(mu_);  // OK while the stream is healthy
  // The first failure of a pipelined request, until a call that waits reports it.
  absl::Status deferred_ ABSL_GUARDED_BY(mu_);
  std::optional<absl::Time> draining_until_ ABSL_GUARDED_BY(mu_);
  Counters counters_ ABSL_GUARDED_BY(mu_);
  // Resuming.
  std::string resume_token_ ABSL_GUARDED_BY(mu_);  // empty: not resumable
  // What resumes go to (set with resume_token_): the channel's target, or the session's daemon.
  std::unique_ptr<SessionStub> resume_stub_ ABSL_GUARDED_BY(mu_);
  absl::Duration resume_grace_ ABSL_GUARDED_BY(mu_);
  absl::Duration reply_poll_ = absl::ZeroDuration();  // set before Start, read only after
  bool resuming_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status lost_ ABSL_GUARDED_BY(mu_);  // why the link broke, while resuming
  absl::Time resume_deadline_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread resumer_;  // started with set_resumable
};

namespace internal {
// Tests only: where set, every resume calls it once the daemon has answered the resume's open,
// before the new link becomes the session's, with the stream's lock released; `ended` says
// whether that link has ended meanwhile. A test cuts the link there to check that its resume
// goes on. Null outside tests.
using ResumeAnsweredHook = absl::AnyInvocable<void(absl::FunctionRef<bool()> ended)>;
extern std::atomic<ResumeAnsweredHook*> resume_answered_hook;
}  // namespace internal

}  // namespace sluice

#endif  // SLUICE_CLIENT_REMOTE_STREAM_H_
