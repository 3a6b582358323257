#include "sluice/server/grpc/session_reactor.h"

#include <utility>

#include "absl/strings/str_format.h"
#include "absl/time/time.h"
#include "grpcpp/support/proto_buffer_reader.h"
#include "sluice/base/log.h"
#include "sluice/base/status_macros.h"
#include "sluice/proto/codec.h"
#include "sluice/server/grpc/reply_codec.h"
#include "sluice/server/parsed_size.h"

namespace sluice {

SessionReactor::SessionReactor(SessionManager* manager, Executor* executor, StreamWatch* watch,
                               RoomWatch* room_watch, const StreamTimeouts& timeouts,
                               UnopenedStreams* unopened,
                               ResumableSessions* resumable, Metrics* metrics,
                               SharedRegions* shared_regions,
                               std::optional<Principal> principal,
                               std::function<void()> on_end,
                               grpc::CallbackServerContext* context)
    : executor_(executor),
      watch_(watch),
      room_watch_(room_watch),
      timeouts_(timeouts),
      unopened_(unopened),
      resumable_(resumable),
      context_(context),
      peer_(context->peer()),
      metrics_(metrics),
      on_end_(std::move(on_end)),
      protocol_(manager, context->peer(), this, std::move(principal), this, metrics,
                shared_regions),
      started_(absl::Now()) {
  {
    absl::MutexLock lock(&mu_);
    reading_ = true;
    last_message_ = last_activity_ = started_;
  }
  watch_->Add(this);
  room_watch_->Add(this);
  unopened_->Add(this);
  StartRead(&read_buffer_);
}

void UnopenedStreams::Add(SessionReactor* stream) {
  absl::MutexLock lock(&mu_);
  if (order_.size() >= max_) {
    SessionReactor* oldest = order_.front();
    order_.pop_front();
    where_.erase(oldest);
    oldest->Evict(max_);  // only schedules the end: safe under this lock
  }
  order_.push_back(stream);
  where_[stream] = std::prev(order_.end());
}

void UnopenedStreams::Remove(SessionReactor* stream) {
  absl::MutexLock lock(&mu_);
  auto it = where_.find(stream);
  if (it == where_.end()) return;
  order_.erase(it->second);
  where_.erase(it);
}

uint32_t UnopenedStreams::size() const {
  absl::MutexLock lock(&mu_);
  return static_cast<uint32_t>(order_.size());
}

void SessionReactor::CountOpened() {
  {
    absl::MutexLock lock(&mu_);
    if (!counted_unopened_) return;
    counted_unopened_ = false;
  }
  unopened_->Remove(this);
}

void SessionReactor::Evict(uint32_t max) {
  {
    absl::MutexLock lock(&mu_);
    if (!counted_unopened_) return;  // it opened its session meanwhile: it stays
    counted_unopened_ = false;
    // A resume under way keeps the session it takes (parked again for its client).
    stream_only_end_ = true;
  }
  EndWith(absl::ResourceExhaustedError(absl::StrFormat(
              "no session opened on this stream while %d newer streams waited to open theirs "
              "(the daemon's --max_unopened_streams); open yours at once after connecting",
              max)),
          /*cancel_call=*/false);
}

void SessionReactor::Tick(absl::Time now) {
  absl::Status why;
  bool cancel_call = false;
  {
    absl::MutexLock lock(&mu_);
    if (finished_ || !ended_.ok()) return;
    const bool open = protocol_.open();
    // An open that runs (a resume waiting, bounded, for the old stream to let go) is not late.
    if (!open && !job_running_ && now - started_ > timeouts_.open) {
      why = absl::DeadlineExceededError(absl::StrFormat(
          "no session opened within %s of the stream's start (the daemon's --open_timeout)",
          absl::FormatDuration(timeouts_.open)));
    } else if (upload_pending_ && now - last_message_ > timeouts_.stall) {
      why = absl::DeadlineExceededError(absl::StrFormat(
          "an upload stalled: no message of it for %s (the daemon's --stall_timeout); the "
          "session is ended and its buffers freed",
          absl::FormatDuration(timeouts_.stall)));
    } else if (writing_ && now - write_started_ > timeouts_.stall) {
      // The client reads no replies: its write waits for it, holding what it holds.
      why = absl::UnavailableError(absl::StrFormat(
          "the client read no reply for %s (the daemon's --stall_timeout); the session is "
          "ended and its buffers freed",
          absl::FormatDuration(timeouts_.stall)));
      cancel_call = true;
    } else if (open && !job_running_ && jobs_.empty() && writes_.empty() &&
               now - last_activity_ > timeouts_.idle) {
      why = absl::UnavailableError(absl::StrFormat(
          "the session was idle for %s (the daemon's --idle_timeout; a ping keeps it open): it "
          "is ended and its buffers freed",
          absl::FormatDuration(timeouts_.idle)));
    }
  }
  if (!why.ok()) EndWith(why, cancel_call);
}

bool SessionReactor::RoomTick() {
  absl::MutexLock lock(&mu_);
  if (!wants_room_) return false;
  if (!finished_ && !protocol_.Transfers().has_room()) return true;
  wants_room_ = false;
  if (finished_) return false;
  ++kicks_;
  executor_->Schedule([this] { Kick(); });
  return false;
}

// ---- gRPC reactions -------------------------------------------------------------------------

namespace {

const ParsedSize& RequestSizes() {
  static const ParsedSize* const sizes = new ParsedSize(v1::SessionRequest::descriptor());
  return *sizes;
}

}  // namespace

void SessionReactor::OnReadDone(bool ok) {
  bool malformed = false;
  std::vector<SessionProtocol::Job> jobs;
  if (ok) {
    if (metrics_ != nullptr) metrics_->Received(read_buffer_.Length());
    const LogContext context(LogFields{.peer = peer_});  // protobuf logs what it refuses (invalid UTF-8, say)
    // Before its session opens, a stream reads one message at a time (ContinueLocked), so
    // whether it is open cannot change under this read.
    absl::Status unopened_refusal;
    // What a message larger than kSizedFromBytes holds once parsed, read before it is parsed:
    // it may be many times its size (an empty step is 2 bytes on the wire and an object
    // parsed). nullopt for bytes that are not a message.
    std::optional<uint64_t> parsed_bytes;
    bool sized = false;
    if (read_buffer_.Length() > kSizedFromBytes &&
        read_buffer_.Length() <= (protocol_.open() ? SIZE_MAX : kMaxUnopenedMessageBytes)) {
      grpc::ProtoBufferReader reader(&read_buffer_);
      parsed_bytes = RequestSizes().Of(&reader);
      sized = true;
    }
    if (!protocol_.open()) {
      if (read_buffer_.Length() > kMaxUnopenedMessageBytes) {
        unopened_refusal = absl::ResourceExhaustedError(absl::StrFormat(
            "a message of %d bytes before the stream's session is open: until it opens, a "
            "stream's messages hold at most %d bytes",
            read_buffer_.Length(), kMaxUnopenedMessageBytes));
      } else if (parsed_bytes.has_value() && *parsed_bytes > kMaxUnopenedMessageBytes) {
        unopened_refusal = absl::ResourceExhaustedError(absl::StrFormat(
            "a message of %d bytes that holds up to %d once parsed, before the stream's session "
            "is open: until it opens, a stream's messages hold at most %d bytes, parsed too",
            read_buffer_.Length(), *parsed_bytes, kMaxUnopenedMessageBytes));
      } else if (++unopened_messages_ > kMaxUnopenedMessages) {
        unopened_refusal = absl::ResourceExhaustedError(absl::StrFormat(
            "%d messages on a stream whose session is not open: open it first (until then, a "
            "stream may send at most %d messages)",
            unopened_messages_, kMaxUnopenedMessages));
      }
    }
    if (!unopened_refusal.ok()) {
      read_buffer_.Clear();
      EndWith(unopened_refusal, /*cancel_call=*/false);
      Actions actions;
      {
        absl::MutexLock lock(&mu_);
        reading_ = false;
        ContinueLocked(&actions);
      }
      Perform(actions);
      return;
    }
    // A large parse is reserved in its client's share while it is made (the request then
    // counts what it holds, in Accept); one the share has no room for is refused unparsed.
    TransferBudget::Hold parsing;
    absl::Status refused;
    if (sized && !parsed_bytes.has_value()) {
      malformed = true;  // bytes the parse refuses too
      read_buffer_.Clear();
    } else if (parsed_bytes.has_value() && *parsed_bytes > kCheapBytes && protocol_.open()) {
      absl::StatusOr<TransferBudget::Hold> room =
          protocol_.Transfers().Reserve(*parsed_bytes, "a request's parsed message");
      if (room.ok()) {
        parsing = *std::move(room);
      } else {
        refused = absl::ResourceExhaustedError(absl::StrFormat(
            "a request of %d bytes, which holds up to %d once parsed, was refused unparsed: %s",
            read_buffer_.Length(), *parsed_bytes, room.status().message()));
      }
    }
    if (!refused.ok()) {
      std::optional<v1::SessionRequest> head;
      {
        grpc::ProtoBufferReader reader(&read_buffer_);
        head = SessionProtocol::HeadOf(&reader);
      }
      read_buffer_.Clear();
      if (head.has_value()) {
        protocol_.Refuse(*head, std::move(refused), &jobs);
      } else {
        malformed = true;
      }
    } else if (!malformed) {
      malformed = !grpc::SerializationTraits<v1::SessionRequest>::Deserialize(&read_buffer_,
                                                                            &request_)
                       .ok();
      parsing.Release();  // Accept counts it from here
    }
    if (!malformed && refused.ok()) {
      if (request_.settled_through() != 0) {
        std::shared_ptr<ReplyRecord> record;
        {
          absl::MutexLock lock(&mu_);
          record = record_;
        }
        if (record != nullptr) record->Settle(request_.settled_through());
      }
      protocol_.Accept(request_, &jobs);
    }
    // What a request keeps of its message is its job's, counted there. A message sized before
    // it was parsed may hold far more than a small one does parsed (which is at most
    // kCheapBytes), and what is left of it goes now: kept until the stream's next message, it
    // would be held uncounted for as long as the stream sent nothing more.
    if (sized) request_ = v1::SessionRequest();
  } else {
    protocol_.EndOfInput(&jobs);
  }
  {
    absl::MutexLock lock(&mu_);
    upload_pending_ = protocol_.upload_pending();
    if (ok) last_message_ = last_activity_ = absl::Now();
  }
  for (SessionProtocol::Job& job : jobs) Enqueue(std::move(job));
  Actions actions;
  {
    absl::MutexLock lock(&mu_);
    reading_ = false;
    if (!ok) {
      read_closed_ = true;
      // The client half-closed (it is done with the session), as opposed to a call that broke.
      if (!cancelled_ && ended_.ok() && !finished_ && !context_->IsCancelled()) {
        half_closed_ = true;
      }
    }
    if (malformed) {
      malformed_ = true;
      protocol_.Cancel();
    }
    ContinueLocked(&actions);
  }
  Perform(actions);
}

void SessionReactor::OnWriteDone(bool ok) {
  Actions actions;
  {
    absl::MutexLock lock(&mu_);
    writing_ = false;
    last_activity_ = absl::Now();
    write_bytes_ -= writes_.front().buffer.Length();
    writes_.pop_front();  // and with it any transfer memory it held
    if (!ok) {
      // The client is gone; nothing more can be delivered. A resumable session's running
      // request finishes (its replies are recorded) for the client to get them on resuming.
      write_failed_ = true;
      if (!ResumableLocked()) protocol_.Cancel();
    }
    ContinueLocked(&actions);
  }
  Perform(actions);
}

void SessionReactor::OnCancel() {
  Actions actions;
  {
    absl::MutexLock lock(&mu_);
    cancelled_ = true;
    // A client that closed and then gave up waiting is done: its work stops as any other's.
    if (!ResumableLocked() || half_closed_) protocol_.Cancel();
    ContinueLocked(&actions);
  }
  Perform(actions);
}

void SessionReactor::OnDone() {
  const char* why = "client closed the stream";
  {
    absl::MutexLock lock(&mu_);
    if (!ended_.ok()) why = "ended by the daemon";
    else if (cancelled_) why = "cancelled";
    else if (write_failed_) why = "connection lost";
    else if (malformed_) why = "malformed message";
  }
  std::string token;
  std::shared_ptr<ReplyRecord> record;
  bool park = false;
  {
    absl::MutexLock lock(&mu_);
    token = token_;
    record = record_;
    // A resumable session waits for its client when its connection broke, or another stream
    // resumes it; a close, an end the daemon chose, or a malformed message end it.
    park = !token.empty() && protocol_.open() && !malformed_ && !half_closed_ &&
           (let_go_ || stream_only_end_ || (ended_.ok() && (cancelled_ || write_failed_)));
    if (let_go_) why = "resumed on another stream";
  }
  watch_->Remove(this);
  room_watch_->Remove(this);
  CountOpened();
  const std::function<void()> on_end = on_end_;
  if (park) {
    resumable_->Park(token, {protocol_.Detach(why), std::move(record)});
  } else {
    if (!token.empty()) resumable_->Forget(token);
    // Freeing the session's buffers may wait for the device (cudaFree does): not on a gRPC
    // thread. The executor outlives every reactor and runs what is queued before it goes.
    if (std::unique_ptr<SessionManager::Ticket> ticket = protocol_.Close(why);
        ticket != nullptr) {
      executor_->Schedule([ticket = std::move(ticket)]() mutable { ticket.reset(); });
    }
  }
  delete this;
  if (on_end) on_end();
}

// ---- Flow -----------------------------------------------------------------------------------

void SessionReactor::Draining(absl::Time deadline) {
  v1::SessionResponse response;
  v1::Notice& notice = *response.mutable_notice();
  notice.set_kind(v1::Notice::DRAINING);
  notice.set_message(absl::StrFormat(
      "sluiced is draining: it opens no new session, and work still running at %s is cancelled",
      absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", deadline, absl::UTCTimeZone())));
  notice.set_deadline_unix_ms(absl::ToUnixMillis(deadline));
  PendingWrite write;
  bool own = false;
  grpc::SerializationTraits<v1::SessionResponse>::Serialize(response, &write.buffer, &own);
  absl::MutexLock lock(&mu_);
  if (finished_ || cancelled_ || write_failed_ || malformed_ || !ended_.ok()) return;
  write_bytes_ += write.buffer.Length();
  writes_.push_back(std::move(write));
  ++kicks_;
  executor_->Schedule([this] { Kick(); });
}

void SessionReactor::End(const absl::Status& why) { EndWith(why, /*cancel_call=*/false); }

void SessionReactor::EndWith(const absl::Status& why, bool cancel_call) {
  absl::MutexLock lock(&mu_);
  if (finished_ || !ended_.ok()) return;
  ended_ = why;
  cancel_call_ = cancel_call;
  protocol_.Cancel();  // running work stops at its next step, iteration or chunk
  ++kicks_;
  executor_->Schedule([this] { Kick(); });
}

// GCC 12 at -O3 (the Release build) takes the shared_ptr inside a disengaged optional for
// uninitialized (GCC bug 80635, a known false positive of -Wmaybe-uninitialized).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
bool SessionReactor::EvictParked(const std::string* client) {
  std::optional<ResumableSessions::Parked> parked = resumable_->Evict(client);
  if (!parked.has_value()) return false;
  if (parked->carried != nullptr) {
    parked->carried->Log("it gave its place to a new session while the daemon was full; its "
                         "client's resume will find nothing");
  }
  parked.reset();  // its session closes here: its slot is free when this returns
  return true;
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

std::string SessionReactor::RegisterResumable(const std::string& owner,
                                             const std::string& credential,
                                             const std::string& client) {
  std::string token = resumable_->Register(owner, credential, client, this);
  absl::MutexLock lock(&mu_);
  token_ = token;
  record_ = std::make_shared<ReplyRecord>();
  return token;
}

absl::StatusOr<SessionProtocol::Resumer::Resumed> SessionReactor::Resume(
    const std::string& token, const std::string& owner) {
  // The old stream finishes its running request first: a bounded wait, on the executor.
  ASSIGN_OR_RETURN(ResumableSessions::Parked parked,
                   resumable_->Take(token, owner, this, timeouts_.stall));
  Resumed resumed;
  resumed.last_completed = parked.record->last_completed();
  resumed.carried = std::move(parked.carried);
  absl::MutexLock lock(&mu_);
  token_ = token;
  record_ = std::move(parked.record);
  resume_point_ = resumed.last_completed;
  return resumed;
}

void SessionReactor::LetGo() {
  absl::MutexLock lock(&mu_);
  if (finished_ || !ended_.ok()) return;
  // Its running request finishes and is recorded (the work is not cancelled); queued ones
  // never run here: the client sends them again on the new stream.
  let_go_ = true;
  ended_ = absl::UnavailableError("the session was resumed on another stream");
  // The old connection may be half dead: a write still in flight would wait for it, so the
  // call is cancelled then (else the stream ends with the reason).
  cancel_call_ = writing_;
  ++kicks_;
  executor_->Schedule([this] { Kick(); });
}

void SessionReactor::Kick() {
  Actions actions;
  bool cancel_call = false;
  {
    absl::MutexLock lock(&mu_);
    --kicks_;
    cancel_call = std::exchange(cancel_call_, false);
    ContinueLocked(&actions);
  }
  // Off every lock: cancelling may run the call's reactions (OnCancel) on this thread.
  if (cancel_call) context_->TryCancel();
  Perform(actions);
}

void SessionReactor::ContinueLocked(Actions* actions) {
  const bool aborted = cancelled_ || write_failed_ || malformed_ || !ended_.ok();
  if (aborted) {
    jobs_.clear();
    staged_bytes_ = 0;
    // The write in flight (front) completes on its own; the rest can never be delivered.
    while (writes_.size() > (writing_ ? 1u : 0u)) {
      write_bytes_ -= writes_.back().buffer.Length();
      writes_.pop_back();
    }
  }
  if (!writing_ && !writes_.empty() && !aborted) {
    writing_ = true;
    write_started_ = absl::Now();
    actions->write = &writes_.front().buffer;
  }
  // A read that streams makes its next window once less than a window waits to be sent; a
  // stream that aborts never makes the rest (the protocol forgets it when the stream closes).
  if (streaming_ && !window_running_) {
    if (aborted) {
      streaming_ = false;
      job_running_ = false;
    } else if (write_bytes_ < kReadWindowBytes) {
      window_running_ = true;
      actions->read_window = true;
    }
  }
  // What the stream holds is charged to its client's share (StreamBounds): at its share, the
  // stream takes nothing more until room appears. An upload under way is read on: its data is
  // reserved as it comes (refused past the share), and its end gives the memory back.
  const bool open = protocol_.open();
  const bool room = !open || upload_pending_ || protocol_.Transfers().has_room();
  // Replies waiting to be sent bound the next job too: a client that does not read its replies
  // stops the session's work, not just its reading.
  if (!finished_ && !job_running_ && !jobs_.empty() &&
      write_bytes_ < StreamBounds::kUnsentReplyBytes && (write_bytes_ == 0 || room)) {
    job_running_ = true;
    actions->schedule = true;
  }
  const bool may_read = !reading_ && !read_closed_ && !aborted && !finished_ &&
                        jobs_.size() < StreamBounds::kQueuedRequests &&
                        staged_bytes_ < StreamBounds::kQueuedBytes &&
                        write_bytes_ < StreamBounds::kUnsentReplyBytes;
  // Before its session opens, a stream holds one message at a time and a few replies.
  const bool fits = open ? room
                         : jobs_.empty() && !job_running_ &&
                               write_bytes_ < StreamBounds::kUnopenedReplyBytes;
  if (may_read && fits) {
    reading_ = true;
    actions->start_read = true;
  }
  if (may_read && !room && !wants_room_) {
    wants_room_ = true;
    actions->wake_room = room_watch_;
  }
  // A stream the daemon ends does not wait for the client's next message: the read still
  // outstanding fails once the stream is finished.
  if (!finished_ && (read_closed_ || aborted) && (!reading_ || !ended_.ok()) && !job_running_ &&
      jobs_.empty() && !writing_ && writes_.empty() && kicks_ == 0) {
    finished_ = true;
    actions->finish = true;
    actions->finish_status =
        cancelled_    ? grpc::Status(grpc::StatusCode::CANCELLED, "session cancelled")
        : !ended_.ok() ? ToGrpc(ended_)
        : malformed_ ? grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                                    "a message on the stream is not a sluice.v1.SessionRequest")
                     : grpc::Status::OK;
  }
}

void SessionReactor::Perform(const Actions& actions) {
  // First: the stream may end (and go) meanwhile, but the watch outlives it.
  if (actions.wake_room != nullptr) actions.wake_room->Wake();
  if (actions.write != nullptr) StartWrite(actions.write);
  if (actions.schedule) executor_->Schedule([this] { RunNextJob(); });
  if (actions.read_window) executor_->Schedule([this] { RunReadWindow(); });
  if (actions.start_read) StartRead(&read_buffer_);
  if (actions.finish) Finish(actions.finish_status);
}

void SessionReactor::Enqueue(SessionProtocol::Job job) {
  Actions actions;
  bool run_inline = false;
  {
    absl::MutexLock lock(&mu_);
    if (finished_) return;  // a read that failed as the stream finished: nothing runs now
    run_inline = job.cheap && !job_running_ && jobs_.empty() && !cancelled_ && !write_failed_ &&
                 ended_.ok() && write_bytes_ < StreamBounds::kUnsentReplyBytes;
    if (run_inline) {
      job_running_ = true;
    } else {
      staged_bytes_ += job.staged;
      jobs_.push_back(std::move(job));
      ContinueLocked(&actions);
    }
  }
  if (run_inline) {
    RunJob(job);
    absl::MutexLock lock(&mu_);
    job_running_ = false;
    ContinueLocked(&actions);
  }
  Perform(actions);
}

void SessionReactor::RunNextJob() {
  std::optional<SessionProtocol::Job> job;
  {
    absl::MutexLock lock(&mu_);
    // The queue is empty only if it was dropped (cancellation) after this run was scheduled.
    if (!jobs_.empty()) {
      job = std::move(jobs_.front());
      jobs_.pop_front();
      staged_bytes_ -= job->staged;
    }
  }
  if (job.has_value()) RunJob(*job);
  // A read that streams goes on (RunReadWindow), and the job with it.
  const bool streaming = job.has_value() && protocol_.read_streaming();
  Actions actions;
  {
    absl::MutexLock lock(&mu_);
    if (streaming) {
      streaming_ = true;
    } else {
      job_running_ = false;
    }
    ContinueLocked(&actions);
  }
  Perform(actions);
}

void SessionReactor::RunJob(SessionProtocol::Job& job) {
  std::vector<grpc::ByteBuffer> serialized;
  TransferBudget::Hold hold;
  ReplyRecord::SharedHold shared;  // what counts replies the record keeps too
  bool answered = false;
  {
    std::shared_ptr<ReplyRecord> record;
    uint64_t resume_point = 0;
    std::optional<uint64_t> last_id;
    {
      absl::MutexLock lock(&mu_);
      record = record_;
      resume_point = resume_point_;
      last_id = last_request_id_;
      if (record != nullptr && !job.open && (!last_id.has_value() || job.id > *last_id)) {
        last_request_id_ = job.id;
      }
    }
    // Answers the request with `status` alone, not running it.
    const auto answer = [&](const absl::Status& status) {
      SessionProtocol::Responses reply(1);
      reply[0].set_id(job.id);
      reply[0].set_last(true);
      ToProto(status, reply[0].mutable_status());
      serialized.resize(1);
      bool own = false;
      grpc::SerializationTraits<v1::SessionResponse>::Serialize(reply[0], &serialized[0], &own);
      protocol_.Skip(job);
      answered = true;
    };
    if (record != nullptr && !job.open && last_id.has_value() && job.id <= *last_id) {
      // Its replies would be recorded under an id already answered, or sent again it would be
      // taken for one that ran: refused, never run.
      answer(absl::InvalidArgumentError(absl::StrFormat(
          "request id %d does not increase: a resumable session's request ids must increase "
          "(the last on this stream was %d)",
          job.id, *last_id)));
    } else if (record != nullptr && job.id <= resume_point && !job.open) {
      // Sent again after a resume: never run twice.
      ReplyRecord::Answer again = record->Resend(job.id);
      if (again.kind == ReplyRecord::Answer::kReplay) {
        serialized = std::move(again.replies);
        shared = std::move(again.counted);
        protocol_.Skip(job);
        answered = true;
      } else if (again.kind == ReplyRecord::Answer::kLost) {
        answer(absl::DataLossError(absl::StrFormat(
            "request %d completed before the stream broke, but its replies were not kept (over "
            "%d bytes, past the client's transfer share, or forgotten for the newer replies of "
            "a client that settles none): its outcome is unknown",
            job.id, ReplyRecord::kMaxBytes)));
      }
    }
  }
  if (!answered) {
    SessionProtocol::Responses out;
    protocol_.Run(job, &out);
    if (protocol_.open()) CountOpened();
    serialized = SerializeReplies(out, &hold);
    // A read that streams reserved what its windows hold when it began.
    hold = CountReplies(serialized, std::move(hold), protocol_.read_streaming());
    std::shared_ptr<ReplyRecord> record;
    {
      absl::MutexLock lock(&mu_);
      record = record_;
    }
    // A resumable session remembers what it replied (sharing the serialized slices, and what
    // counts them) until the client settles it.
    if (record != nullptr && protocol_.open() && !job.open) {
      if (!job.read_only) shared = std::make_shared<const TransferBudget::Hold>(std::move(hold));
      record->Add(job.id, serialized, job.read_only, shared, protocol_.Transfers());
    }
  } else if (shared == nullptr) {
    hold = CountReplies(serialized, std::move(hold), /*covered=*/false);
  }
  absl::MutexLock lock(&mu_);
  QueueWritesLocked(std::move(serialized), std::move(hold), std::move(shared));
}

std::vector<grpc::ByteBuffer> SessionReactor::SerializeReplies(SessionProtocol::Responses& out,
                                                               TransferBudget::Hold* hold) {
  std::vector<grpc::ByteBuffer> serialized(out.size());
  const ReplyBlock block = protocol_.TakeReadBlock();
  for (size_t i = 0; i < out.size(); ++i) {
    serialized[i] = SerializeReply(out[i], block);  // a read's bytes go out uncopied
  }
  // A read's replies are serialized now (the protos are released); its reservation stays
  // with the last of them until it has been sent.
  *hold = protocol_.TakeReadHold();
  hold->Shrink(HeldBytes(serialized));
  return serialized;
}

TransferBudget::Hold SessionReactor::CountReplies(
    const std::vector<grpc::ByteBuffer>& serialized, TransferBudget::Hold hold, bool covered) {
  if (covered) return hold;
  // Replies are charged to the client's share until the last of them has been sent (a read's
  // are reserved already).
  const uint64_t held = HeldBytes(serialized);
  if (hold.bytes() == 0) return protocol_.Transfers().Charge(held);
  if (hold.bytes() < held) hold.Grow(held - hold.bytes());
  return hold;
}

void SessionReactor::QueueWritesLocked(std::vector<grpc::ByteBuffer> serialized,
                                       TransferBudget::Hold hold,
                                       ReplyRecord::SharedHold shared) {
  uint64_t bytes = 0;
  last_activity_ = absl::Now();
  for (const grpc::ByteBuffer& reply : serialized) bytes += reply.Length();
  for (size_t i = 0; i < serialized.size(); ++i) {
    PendingWrite write{.buffer = std::move(serialized[i])};
    if (i + 1 == serialized.size()) {
      write.hold = std::move(hold);
      write.shared = std::move(shared);
    }
    writes_.push_back(std::move(write));
  }
  write_bytes_ += bytes;
  if (metrics_ != nullptr) metrics_->Sent(bytes);
}

void SessionReactor::RunReadWindow() {
  SessionProtocol::Responses out;
  protocol_.ContinueRead(&out);
  TransferBudget::Hold hold;
  std::vector<grpc::ByteBuffer> serialized = SerializeReplies(out, &hold);
  const bool streaming = protocol_.read_streaming();
  Actions actions;
  {
    absl::MutexLock lock(&mu_);
    QueueWritesLocked(std::move(serialized), std::move(hold));  // counted by the read
    window_running_ = false;
    if (!streaming) {  // the read is done: the session's next request may run
      streaming_ = false;
      job_running_ = false;
    }
    ContinueLocked(&actions);
  }
  Perform(actions);
}

}  // namespace sluice
