// The transport of one Session stream: gRPC's callbacks and flow control. It parses each
// message and hands it to the stream's SessionProtocol (server/session_protocol.h), runs the
// jobs the protocol makes in order on the executor (never on a gRPC thread, except trivially
// cheap ones when nothing else is queued), streams their replies back in order, stops reading
// while too much waits, and tears the session down (freeing every buffer, off the gRPC
// thread) when the stream ends for any reason.
#ifndef SLUICE_SERVER_GRPC_SESSION_REACTOR_H_
#define SLUICE_SERVER_GRPC_SESSION_REACTOR_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <list>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "grpcpp/grpcpp.h"
#include "sluice/base/executor.h"
#include "sluice/engine/session_manager.h"
#include "sluice/engine/transfer_budget.h"
#include "sluice/proto/contract.h"
#include "sluice/server/grpc/resumable_sessions.h"
#include "sluice/server/grpc/stream_watch.h"
#include "sluice/server/session_protocol.h"
#include "sluice/v1/sluice.grpc.pb.h"

namespace sluice {

// How long a stream may wait for what it needs before the daemon ends it, saying why.
struct StreamTimeouts {
  absl::Duration open = absl::Seconds(10);   // from the stream's start to a successful open
  absl::Duration idle = absl::Minutes(30);   // an open session with no request and no work
  absl::Duration stall = absl::Seconds(60);  // an upload's next message; a reply's write
};

// What one stream may make the daemon hold. Reading pauses while this many requests, or
// requests holding this many bytes (an upload's data, a large request's message), wait to run,
// or while this many reply bytes wait to be sent; and no job starts while replies wait beyond
// it: a client that floods requests or never reads its replies stops being served, and the
// daemon's memory does not grow. Besides, what every stream holds for transfers (uploads,
// requests of more than 64 KiB, reads) is reserved from the daemon's TransferBudget, and one
// request holds at most max_request_bytes. GetInfo shows these bounds.
//
// Every byte a stream holds (its queued requests, its unsent replies, an upload being
// assembled, a resumable session's record) is charged to its client's share of the transfer
// budget and so to the daemon's: a stream whose client is at its share reads no message and
// starts no job while replies of its own wait to be sent, until room appears (RoomWatch), so
// a client with many streams holds its share and at most one message and one job's replies
// more per stream. A message of more than kSizedFromBytes is sized before it is parsed
// (ParsedSize): what it will hold once parsed, where that is more than kCheapBytes, is reserved
// in its client's share first, and the message refused unparsed (RESOURCE_EXHAUSTED) where
// there is no room; a smaller one is counted once parsed. Before its session is open, a stream
// reads one message of at most kMaxUnopenedMessageBytes at a time, holding at most as much parsed,
// kMaxUnopenedMessages in all, and no more while kUnopenedReplyBytes of replies wait
// (proto/contract.h).
struct StreamBounds {
  static constexpr uint32_t kQueuedRequests = 16;
  static constexpr uint64_t kQueuedBytes = uint64_t{64} << 20;
  static constexpr uint64_t kUnsentReplyBytes = uint64_t{64} << 20;
  static constexpr uint64_t kUnopenedReplyBytes = uint64_t{64} << 10;
  // What a stream may hold past its client's share: the request it read while there was room
  // (one of more than 64 KiB is reserved instead) and the replies of one request (a ping's
  // echo, at most kMaxPingPayload, and its framing).
  static constexpr uint64_t kPastShareBytes = 2 * ((uint64_t{64} << 10) + 1024);
  // What a stream that has not opened its session may hold: the message it read, as much
  // again parsed (one that would hold more is refused unparsed), and the replies it waits
  // behind.
  static constexpr uint64_t kUnopenedStreamBytes =
      2 * kMaxUnopenedMessageBytes + kUnopenedReplyBytes + kMaxUnopenedPingPayload + 1024;
};

class SessionReactor;

// The streams that have not opened a session yet, oldest first, at most `max` (at least 1).
// When another arrives at the limit, the one that has waited longest is ended
// (RESOURCE_EXHAUSTED, naming --max_unopened_streams): streams that linger without opening
// cost a bounded amount and never turn away a client that opens at once after connecting.
class UnopenedStreams {
 public:
  explicit UnopenedStreams(uint32_t max) : max_(max < 1 ? 1 : max) {}
  // Counts `stream` as the newest; at the limit, ends the oldest first.
  void Add(SessionReactor* stream) ABSL_LOCKS_EXCLUDED(mu_);
  // Stops counting `stream` (it opened a session, or ended). Idempotent.
  void Remove(SessionReactor* stream) ABSL_LOCKS_EXCLUDED(mu_);
  uint32_t size() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  const uint32_t max_;
  mutable absl::Mutex mu_;
  std::list<SessionReactor*> order_ ABSL_GUARDED_BY(mu_);  // oldest first
  absl::flat_hash_map<SessionReactor*, std::list<SessionReactor*>::iterator> where_
      ABSL_GUARDED_BY(mu_);
};

// Messages travel as raw ByteBuffers and are parsed here, so that bytes which are not a
// SessionRequest end the stream with INVALID_ARGUMENT instead of looking like a half-close.
//
// A resumable session (OpenRequest.resumable) keeps the replies of its completed requests
// (ReplyRecord) and, when its stream breaks, lets its running request finish and parks the
// session in `resumable` instead of closing it; a stream that resumes it answers the requests
// sent again from that record.
class SessionReactor final : public grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>,
                             private SessionManager::Listener,
                             private StreamWatch::Watched,
                             private SessionProtocol::Resumer,
                             private ResumableSessions::Holder,
                             private RoomWatch::Waiter {
 public:
  // `manager`, `executor`, `watch` and `unopened` must outlive every reactor (the server drains
  // before they go). `unopened` counts the streams that have not opened a session yet: the
  // reactor counts itself (which may end the stream that waited longest) and stops once it
  // opens or ends.
  // `shared_regions` (may be null: no shared memory offered) must outlive every reactor too.
  // `principal`: who the stream is from: its tenant, or without tenants its peer (see
  // SluiceService::PeerOf); nullopt: the client its host alone makes it. `on_end` (may be empty) is called
  // once the stream has ended and freed what it held (its session's buffers aside: they go on
  // the executor).
  // `room_watch` (which must outlive every reactor too) wakes a stream that waits for room in
  // its client's share.
  SessionReactor(SessionManager* manager, Executor* executor, StreamWatch* watch,
                 RoomWatch* room_watch, const StreamTimeouts& timeouts, UnopenedStreams* unopened,
                 ResumableSessions* resumable, Metrics* metrics, SharedRegions* shared_regions,
                 std::optional<Principal> principal, std::function<void()> on_end,
                 grpc::CallbackServerContext* context);

 private:
  // StreamWatch::Watched: ends the stream, saying why, once it waited too long (see
  // StreamTimeouts).
  void Tick(absl::Time now) override;
  // RoomWatch::Waiter: once its client's share has room again, a stream that waited for it
  // goes on (a kick).
  bool RoomTick() override;
  // Ends the session with `why`; with `cancel_call`, the call is cancelled too, so that a write
  // the client does not read fails instead of waiting for it.
  void EndWith(const absl::Status& why, bool cancel_call);
  // Stops counting this stream as unopened.
  void CountOpened() ABSL_LOCKS_EXCLUDED(mu_);
  // Ends this stream, which has not opened a session, to make room for a newer one (called by
  // UnopenedStreams, which has stopped counting it). Does not block.
  friend class UnopenedStreams;
  void Evict(uint32_t max);
  // SessionManager::Listener: a DRAINING notice goes out between replies; an end stops the
  // running work and ends the stream with `why`. Neither blocks: the gRPC calls they need are
  // made by a task on the executor (a "kick"), which the stream waits for before it ends.
  void Draining(absl::Time deadline) override;
  void End(const absl::Status& why) override;
  void Kick();
  // SessionProtocol::Resumer, through `resumable_`.
  absl::Duration resume_grace() const override { return resumable_->grace(); }
  std::string RegisterResumable(const std::string& owner, const std::string& credential,
                                const std::string& client) override;
  bool EvictParked(const std::string* client) override;
  absl::StatusOr<Resumed> Resume(const std::string& token, const std::string& owner) override;
  // ResumableSessions::Holder: another stream resumes this one's session.
  void LetGo() override;
  // Whether the session is resumable (its running work then outlives a broken stream).
  bool ResumableLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return record_ != nullptr; }

  // A serialized reply; the last of a request's replies keeps what counts them to the client
  // (a read's reservation, or a charge) until it has been sent: `hold`, or `shared` with the
  // record of a resumable session's replies, which keeps them too.
  struct PendingWrite {
    grpc::ByteBuffer buffer;
    TransferBudget::Hold hold;
    ReplyRecord::SharedHold shared;
  };

  // What to do once the lock is released: gRPC calls are never made under mu_.
  struct Actions {
    bool start_read = false;
    const grpc::ByteBuffer* write = nullptr;
    bool schedule = false;
    bool read_window = false;  // the next window of a read that streams
    bool finish = false;
    grpc::Status finish_status;
    RoomWatch* wake_room = nullptr;  // the stream began to wait for room
  };

  void OnReadDone(bool ok) override;
  void OnWriteDone(bool ok) override;
  void OnCancel() override;
  void OnDone() override;

  void Enqueue(SessionProtocol::Job job);
  // Runs the next queued job on the calling thread.
  void RunNextJob();
  // Runs `job` and queues its serialized replies.
  void RunJob(SessionProtocol::Job& job);
  // Makes and queues the next window of the read that streams (SessionProtocol::ContinueRead).
  void RunReadWindow();
  // Serializes `out`, releasing each reply's bytes, and takes the reservation of a read's
  // replies (TakeReadHold), kept to their bytes.
  std::vector<grpc::ByteBuffer> SerializeReplies(SessionProtocol::Responses& out,
                                                 TransferBudget::Hold* hold);
  // What counts `serialized` to the client's share: `hold` (a read's reservation, or none)
  // with what it lacks of their bytes charged, unless `covered` (a streaming read's windows,
  // which its reservation holds).
  TransferBudget::Hold CountReplies(const std::vector<grpc::ByteBuffer>& serialized,
                                    TransferBudget::Hold hold, bool covered);
  // Queues `serialized` to be written, what counts them (`hold` or `shared`) with the last.
  void QueueWritesLocked(std::vector<grpc::ByteBuffer> serialized, TransferBudget::Hold hold,
                         ReplyRecord::SharedHold shared = nullptr)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Perform(const Actions& actions);

  // Decides what can happen next; must hold mu_.
  void ContinueLocked(Actions* actions) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  Executor* const executor_;
  StreamWatch* const watch_;
  RoomWatch* const room_watch_;
  const StreamTimeouts timeouts_;
  UnopenedStreams* const unopened_;
  ResumableSessions* const resumable_;
  grpc::CallbackServerContext* const context_;
  const std::string peer_;  // for the log context of what parsing a message logs
  Metrics* const metrics_;  // may be null
  const std::function<void()> on_end_;
  // Its read path runs in OnReadDone (one read is outstanding at a time), its jobs one at a
  // time (job_running_); it synchronizes what the two share itself.
  SessionProtocol protocol_;

  // Read-path state: one read is outstanding at a time.
  grpc::ByteBuffer read_buffer_;
  v1::SessionRequest request_;  // the message just read (one sized before its parse goes then)
  uint32_t unopened_messages_ = 0;  // messages read before the session opened

  absl::Mutex mu_;
  std::deque<SessionProtocol::Job> jobs_ ABSL_GUARDED_BY(mu_);
  uint64_t staged_bytes_ ABSL_GUARDED_BY(mu_) = 0;  // sum of the queued jobs' `staged`
  bool job_running_ ABSL_GUARDED_BY(mu_) = false;
  // The running job is a read that streams (it runs until its last window is made)...
  bool streaming_ ABSL_GUARDED_BY(mu_) = false;
  bool window_running_ ABSL_GUARDED_BY(mu_) = false;  // ...and a window of it is being made
  std::deque<PendingWrite> writes_ ABSL_GUARDED_BY(mu_);
  uint64_t write_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool reading_ ABSL_GUARDED_BY(mu_) = false;
  bool read_closed_ ABSL_GUARDED_BY(mu_) = false;
  bool half_closed_ ABSL_GUARDED_BY(mu_) = false;  // the client closed its side: it is done
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
  bool write_failed_ ABSL_GUARDED_BY(mu_) = false;
  bool malformed_ ABSL_GUARDED_BY(mu_) = false;  // a message was not a SessionRequest
  absl::Status ended_ ABSL_GUARDED_BY(mu_);       // not OK once the daemon ended the session
  bool cancel_call_ ABSL_GUARDED_BY(mu_) = false;  // a Kick is to cancel the call
  int kicks_ ABSL_GUARDED_BY(mu_) = 0;            // Kick tasks queued: the stream may not end
  bool counted_unopened_ ABSL_GUARDED_BY(mu_) = true;
  bool upload_pending_ ABSL_GUARDED_BY(mu_) = false;  // an upload awaits its next message
  bool wants_room_ ABSL_GUARDED_BY(mu_) = false;  // its client's share has no room: it waits
  const absl::Time started_;
  absl::Time last_message_ ABSL_GUARDED_BY(mu_);   // the last message read
  absl::Time last_activity_ ABSL_GUARDED_BY(mu_);  // a message read, a job done, a reply sent
  absl::Time write_started_ ABSL_GUARDED_BY(mu_);  // of the write in flight
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  // A resumable session's token and record of replies; requests with ids up to resume_point_
  // (the last the session completed before this stream resumed it) are answered from it.
  std::string token_ ABSL_GUARDED_BY(mu_);
  std::shared_ptr<ReplyRecord> record_ ABSL_GUARDED_BY(mu_);
  uint64_t resume_point_ ABSL_GUARDED_BY(mu_) = 0;
  // The id of this stream's last request in a resumable session (its open aside): the next must
  // be larger.
  std::optional<uint64_t> last_request_id_ ABSL_GUARDED_BY(mu_);
  bool let_go_ ABSL_GUARDED_BY(mu_) = false;  // another stream resumes the session
  // The stream was ended for itself (evicted before its open finished), not its session.
  bool stream_only_end_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace sluice

#endif  // SLUICE_SERVER_GRPC_SESSION_REACTOR_H_
