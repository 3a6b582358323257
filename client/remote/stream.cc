#include "client/remote/stream.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "base/status_macros.h"
#include "client/internal/call_checks.h"
#include "client/remote/channel.h"
#include "proto/codec.h"
#include "proto/contract.h"

namespace sluice {

namespace {

grpc::ChannelArguments SessionChannelArguments() {
  grpc::ChannelArguments args;
  // Notice a vanished daemon host within half a minute even while a long call runs: pinged
  // every 10 s, given 20 s to answer (a busy daemon answers pings from its I/O threads).
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 10000);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 20000);
  args.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  args.SetInt(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
  // Replies are at most one chunk plus a little framing.
  args.SetMaxReceiveMessageSize(kMaxChunkSize + (1 << 20));
  return args;
}

}  // namespace

absl::StatusOr<std::shared_ptr<grpc::Channel>> MakeSessionChannel(
    const std::string& target, const ClientCredentials& credentials) {
  grpc::ChannelArguments args = SessionChannelArguments();
  if (!NamesSeveralDaemons(target)) {
    // A connection per session: one job's transfer never queues behind another's.
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    return MakeChannel(target, credentials, std::move(args));
  }
  // Balanced: round_robin turns among the target's daemons on one channel, so the sessions of
  // this process share it (kept for the process's life: a fresh channel would start over at
  // the first daemon). Tokens travel per call, so only the TLS settings tell channels apart.
  static absl::Mutex mu(absl::kConstInit);
  static auto* const channels =
      new absl::flat_hash_map<std::string, std::shared_ptr<grpc::Channel>>();  // never freed
  const std::string key = absl::StrCat(target, "\n", credentials.tls_ca, "\n",
                                       credentials.tls_cert, "\n", credentials.tls_key, "\n",
                                       credentials.tls_server_name, "\n",
                                       credentials.uses_tls());
  absl::MutexLock lock(&mu);
  if (auto it = channels->find(key); it != channels->end()) return it->second;
  args.SetLoadBalancingPolicyName("round_robin");
  ASSIGN_OR_RETURN(std::shared_ptr<grpc::Channel> channel,
                   MakeChannel(target, credentials, std::move(args)));
  channels->emplace(key, channel);
  return channel;
}

absl::StatusOr<std::shared_ptr<grpc::Channel>> MakePinnedChannel(
    const std::string& peer, const ClientCredentials& credentials,
    const std::string& server_name) {
  grpc::ChannelArguments args = SessionChannelArguments();
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  ClientCredentials pinned = credentials;
  pinned.tls_server_name = server_name;
  return MakeChannel(peer, pinned, std::move(args));
}

bool Outgoing::Next(v1::SessionRequest* msg, uint32_t chunk) {
  if (!is_upload) {
    msg->Swap(&head);
    return true;
  }
  if (!head_sent) {
    id = head.id();
    msg->Swap(&head);
    head_sent = true;
  } else {
    msg->Clear();
    msg->set_id(id);
  }
  v1::UploadRequest& upload = *msg->mutable_upload();
  std::string& out = *upload.mutable_data();
  out.clear();
  uint64_t take = std::min<uint64_t>(chunk, remaining);
  out.reserve(take);
  while (take > 0) {
    const absl::Span<const uint8_t> p = data[piece];
    const size_t n = std::min<uint64_t>(take, p.size() - piece_offset);
    out.append(reinterpret_cast<const char*>(p.data()) + piece_offset, n);
    take -= n;
    remaining -= n;
    piece_offset += n;
    if (piece_offset == p.size()) {
      ++piece;
      piece_offset = 0;
    }
  }
  upload.set_last(remaining == 0);
  return remaining == 0;
}

// One gRPC call of the session's stream. Its state is guarded by the stream's lock; its
// callbacks go to the stream.
class RemoteDispatch::Stream::Link final
    : public grpc::ClientBidiReactor<v1::SessionRequest, IncomingReply> {
 public:
  explicit Link(Stream* stream) : stream_(stream) {}

  // Starts the call; `first` (a resume's open) is written before anything else.
  void Start(SessionStub* stub, const ClientCredentials& credentials,
             const v1::SessionRequest* first) {
    AddToken(credentials, &context);
    static const std::string* const method =
        new std::string(absl::StrCat("/", v1::Sluice::service_full_name(), "/Session"));
    stub->PrepareBidiStreamingCall(&context, *method, grpc::StubOptions(), this);
    // Writes start from caller threads at any time; the hold keeps OnDone from running until
    // no write can start any more.
    AddHold();
    StartRead(&read_msg);
    if (first != nullptr) {
      write_msg = *first;
      StartWrite(&write_msg);
    }
    StartCall();
  }

  grpc::ClientContext context;
  v1::SessionRequest write_msg;  // owned by the write in flight
  IncomingReply read_msg;        // owned by the read in flight

  // Guarded by the stream's lock.
  bool ready = true;          // false while a resume's open waits for its answer
  uint64_t open_id = 0;       // of that open
  bool open_answered = false;
  absl::Status open_status;   // its answer, or why the link ended first
  uint64_t last_completed = 0;
  bool writing = false;
  bool writes_done = false;
  bool writes_done_complete = false;
  bool read_ended = false;    // no more replies: OnDone comes next
  bool write_failed = false;  // no more writes: OnDone comes next
  bool hold_released = false;
  bool abandoned = false;     // a resume's link given up
  bool done = false;

 private:
  void OnWriteDone(bool ok) override { stream_->OnWriteDone(this, ok); }
  void OnWritesDoneDone(bool) override { stream_->OnWritesDoneDone(this); }
  void OnReadDone(bool ok) override { stream_->OnReadDone(this, ok); }
  void OnDone(const grpc::Status& status) override { stream_->OnDone(this, status); }

  Stream* const stream_;
};

RemoteDispatch::Stream::Stream(std::shared_ptr<grpc::Channel> channel,
                               ClientCredentials credentials)
    : channel_(std::move(channel)),
      stub_(std::make_unique<SessionStub>(channel_)),
      credentials_(std::move(credentials)) {}

RemoteDispatch::Stream::~Stream() {
  std::vector<Link*> running;
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    if (broken_.ok()) BreakLocked(absl::UnavailableError("the session is closed"));
    for (const std::unique_ptr<Link>& link : links_) {
      if (!link->done) running.push_back(link.get());
    }
  }
  if (resumer_.joinable()) resumer_.join();
  for (Link* link : running) link->context.TryCancel();
  absl::MutexLock lock(&mu_);
  mu_.Await(absl::Condition(
      +[](std::vector<std::unique_ptr<Link>>* links) {
        for (const std::unique_ptr<Link>& link : *links) {
          if (!link->done) return false;
        }
        return true;
      },
      &links_));
}

void RemoteDispatch::Stream::Start() {
  Link* link = nullptr;
  {
    absl::MutexLock lock(&mu_);
    links_.push_back(std::make_unique<Link>(this));
    link = link_ = links_.back().get();
  }
  link->Start(stub_.get(), credentials_, nullptr);
}

void RemoteDispatch::Stream::set_chunk_size(uint32_t chunk) {
  absl::MutexLock lock(&mu_);
  chunk_size_ = chunk;
}

void RemoteDispatch::Stream::set_resumable(std::string token, absl::Duration grace,
                                           std::shared_ptr<grpc::Channel> pinned) {
  {
    absl::MutexLock lock(&mu_);
    if (token.empty() || grace <= absl::ZeroDuration() || !resume_token_.empty()) return;
    resume_token_ = std::move(token);
    resume_grace_ = grace;
    resume_stub_ =
        std::make_unique<SessionStub>(pinned != nullptr ? std::move(pinned) : channel_);
  }
  resumer_ = std::thread([this] { ResumeLoop(); });
}

std::string RemoteDispatch::Stream::peer() const {
  absl::MutexLock lock(&mu_);
  return link_ != nullptr ? link_->context.peer() : "";
}

std::optional<absl::Time> RemoteDispatch::Stream::draining_until() const {
  absl::MutexLock lock(&mu_);
  return draining_until_;
}

RemoteDispatch::Counters RemoteDispatch::Stream::counters() const {
  absl::MutexLock lock(&mu_);
  return counters_;
}

void RemoteDispatch::Stream::QueueLocked(Outgoing out, Call* call, Actions* actions) {
  call->id = next_id_++;
  out.call_id = call->id;
  out.head.set_id(call->id);
  if (!resume_token_.empty()) {
    // Every reply of the requests before the oldest one still waiting has arrived.
    out.head.set_settled_through((calls_.empty() ? call->id : calls_.front()->id) - 1);
    call->pristine = out;
  }
  calls_.push_back(call);
  outgoing_.push_back(std::move(out));
  AdvanceLocked(actions);
}

absl::Status RemoteDispatch::Call::SizeOutputs() {
  // A resumed session reads again into the spans it was given: the target is asked once.
  outputs.reserve(lengths.size());
  for (size_t i = outputs.size(); i < lengths.size(); ++i) {
    outputs.push_back((*target)(i, lengths[i]));
    if (outputs.back().size() != lengths[i]) return OutputRefused(i);
  }
  sized = true;
  return absl::OkStatus();
}

absl::Status RemoteDispatch::Stream::Send(Outgoing out, Call* call, absl::Time deadline) {
  RETURN_IF_ERROR(Begin(std::move(out), call));
  return Wait(call, deadline);
}

absl::Status RemoteDispatch::Stream::Begin(Outgoing out, Call* call) {
  Actions actions;
  {
    absl::MutexLock lock(&mu_);
    if (!broken_.ok()) return broken_;
    QueueLocked(std::move(out), call, &actions);
  }
  Apply(actions);
  return absl::OkStatus();
}

absl::Status RemoteDispatch::Stream::Wait(Call* call, absl::Time deadline) {
  Actions actions;
  absl::Status result;
  Link* cancel = nullptr;
  {
    absl::MutexLock lock(&mu_);
    if (mu_.AwaitWithDeadline(absl::Condition(&call->done), deadline)) {
      ++counters_.round_trips;
      return call->status;
    }
    calls_.erase(std::remove(calls_.begin(), calls_.end(), call), calls_.end());
    // This call timed out; every other call, now or later, finds the session gone.
    const bool first = broken_.ok();
    BreakLocked(absl::UnavailableError(
        "the session was closed after a call got no reply from sluiced before its deadline"));
    result = first ? absl::DeadlineExceededError(
                         "no reply from sluiced before the call deadline; the session is closed")
                   : broken_;
    cancel = link_;
    AdvanceLocked(&actions);
  }
  Apply(actions);
  if (cancel != nullptr) cancel->context.TryCancel();
  return result;
}

absl::Status RemoteDispatch::Stream::SendDetached(Outgoing out) {
  auto call = std::make_unique<Call>();
  call->detached = true;
  return SendUnwaited(std::move(out), std::move(call));
}

absl::Status RemoteDispatch::Stream::SendPipelined(Outgoing out, const char* what,
                                                   absl::AnyInvocable<void()> on_failure) {
  auto call = std::make_unique<Call>();
  call->detached = true;
  call->pipelined = true;
  call->what = what;
  call->on_failure = std::move(on_failure);
  return SendUnwaited(std::move(out), std::move(call));
}

absl::Status RemoteDispatch::Stream::SendUnwaited(Outgoing out, std::unique_ptr<Call> call) {
  Actions actions;
  {
    absl::MutexLock lock(&mu_);
    if (!broken_.ok()) return broken_;
    while (!detached_.empty() && detached_.front()->done) detached_.pop_front();
    Call* raw = call.get();
    detached_.push_back(std::move(call));
    ++counters_.unwaited;
    QueueLocked(std::move(out), raw, &actions);
  }
  Apply(actions);
  return absl::OkStatus();
}

int RemoteDispatch::Stream::CancelInFlight() {
  Actions actions;
  int asked = 0;
  {
    absl::MutexLock lock(&mu_);
    if (!broken_.ok()) return 0;
    std::vector<uint64_t> targets;
    for (const Call* call : calls_) {
      if (call->best_effort || (call->detached && !call->pipelined)) continue;
      targets.push_back(call->id);
    }
    while (!detached_.empty() && detached_.front()->done) detached_.pop_front();
    for (const uint64_t target : targets) {
      Outgoing out;
      out.head.mutable_cancel()->set_target(target);
      auto call = std::make_unique<Call>();
      call->detached = true;
      call->best_effort = true;
      Call* raw = call.get();
      detached_.push_back(std::move(call));
      QueueLocked(std::move(out), raw, &actions);
      ++asked;
    }
  }
  Apply(actions);
  return asked;
}

void RemoteDispatch::Stream::Close(absl::Duration grace) {
  Actions actions;
  {
    absl::MutexLock lock(&mu_);
    closing_ = true;
    AdvanceLocked(&actions);
  }
  Apply(actions);
  Link* link = nullptr;
  bool finished = false;
  {
    absl::MutexLock lock(&mu_);
    const auto ended = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return !broken_.ok() || link_ == nullptr || link_->done;
    };
    finished = mu_.AwaitWithDeadline(absl::Condition(&ended), absl::Now() + grace);
    link = link_;
  }
  if (!finished && link != nullptr) link->context.TryCancel();
  // The destructor waits for every link to end.
}

void RemoteDispatch::Stream::OnWriteDone(Link* link, bool ok) {
  Actions actions;
  {
    absl::MutexLock lock(&mu_);
    link->writing = false;
    // The link is broken: no more writes. Its reads may still go on (a call that gRPC moved
    // to a new connection can fail a write it had started on the old one), so it is
    // cancelled: OnDone follows with why, and a resumable session resumes on a new link.
    if (!ok) link->write_failed = true;
    AdvanceLocked(&actions);
  }
  Apply(actions);
  if (!ok) link->context.TryCancel();
}

void RemoteDispatch::Stream::OnWritesDoneDone(Link* link) {
  Actions actions;
  {
    absl::MutexLock lock(&mu_);
    link->writing = false;
    link->writes_done_complete = true;
    AdvanceLocked(&actions);
  }
  Apply(actions);
}

void RemoteDispatch::Stream::OnReadDone(Link* link, bool ok) {
  Actions actions;
  bool keep_reading = false;
  {
    absl::MutexLock lock(&mu_);
    if (!ok) {
      // The link is ending; OnDone follows with why (the daemon's status, or gRPC's: a
      // connection refused or lost).
      link->read_ended = true;
    } else if (link == link_ || !link->ready) {
      ++counters_.messages_received;
      counters_.bytes_received += link->read_msg.wire_bytes();
      absl::Status delivered = DeliverLocked(link);
      if (delivered.ok()) {
        keep_reading = true;
      } else if (link == link_) {
        BreakLocked(delivered);
      }
    }
    AdvanceLocked(&actions);
  }
  Apply(actions);
  if (keep_reading) {
    link->StartRead(&link->read_msg);
  } else if (ok) {
    link->context.TryCancel();  // a reply broke the protocol, or the link is no longer used
  }
}

bool RemoteDispatch::Stream::ResumableEndLocked(const grpc::Status& status) const {
  if (resume_token_.empty() || closing_ || stopping_ || !broken_.ok()) return false;
  // The daemon's refusals of the caller are final; any other end may be a lost connection
  // (an end the daemon chose is learnt when the resume finds no session).
  switch (status.error_code()) {
    case grpc::StatusCode::UNAUTHENTICATED:
    case grpc::StatusCode::PERMISSION_DENIED:
    case grpc::StatusCode::INVALID_ARGUMENT:
    case grpc::StatusCode::OK:
      return false;
    default:
      return true;
  }
}

void RemoteDispatch::Stream::OnDone(Link* link, const grpc::Status& status) {
  absl::MutexLock lock(&mu_);
  link->done = true;
  // A daemon that refuses the caller's credentials says so with its own code (the session is
  // gone all the same); every other end is Unavailable.
  const bool refused = status.error_code() == grpc::StatusCode::UNAUTHENTICATED ||
                       status.error_code() == grpc::StatusCode::PERMISSION_DENIED;
  const absl::Status why =
      closing_ && status.ok()
          ? absl::UnavailableError("the session is closed")
          : absl::Status(refused ? static_cast<absl::StatusCode>(status.error_code())
                                 : absl::StatusCode::kUnavailable,
                         absl::StrFormat("the session ended: %s", status.error_message()));
  if (!link->ready && !link->open_answered) {  // a resume's link that ended first
    link->open_answered = true;
    link->open_status = why;
  }
  if (link != link_) return;
  link_ = nullptr;
  if (ResumableEndLocked(status)) {
    resuming_ = true;
    lost_ = why;
    resume_deadline_ = absl::Now() + resume_grace_;
    return;
  }
  BreakLocked(why);
}

void RemoteDispatch::Stream::ResumeLoop() {
  absl::MutexLock lock(&mu_);
  for (;;) {
    mu_.Await(absl::Condition(
        +[](Stream* s) ABSL_NO_THREAD_SAFETY_ANALYSIS { return s->resuming_ || s->stopping_; },
        this));
    if (stopping_) return;
    ResumeLocked();
  }
}

void RemoteDispatch::Stream::ResumeLocked() {
  absl::Duration backoff = absl::Milliseconds(50);
  for (;;) {
    if (stopping_ || closing_ || !broken_.ok()) {
      resuming_ = false;
      if (broken_.ok()) BreakLocked(lost_);
      return;
    }
    if (absl::Now() >= resume_deadline_) {
      resuming_ = false;
      BreakLocked(absl::Status(lost_.code(),
                               absl::StrCat(lost_.message(),
                                            "; it could not be resumed within the daemon's "
                                            "grace of ",
                                            absl::FormatDuration(resume_grace_))));
      return;
    }
    links_.push_back(std::make_unique<Link>(this));
    Link* link = links_.back().get();
    link->ready = false;
    link->open_id = next_id_++;
    v1::SessionRequest open;
    open.set_id(link->open_id);
    open.mutable_open()->set_resume_token(resume_token_);
    ++counters_.messages_sent;
    counters_.bytes_sent += open.ByteSizeLong();
    link->writing = true;
    SessionStub* const stub = resume_stub_.get();  // set once, before this thread began
    mu_.Unlock();
    link->Start(stub, credentials_, &open);
    mu_.Lock();
    // The daemon answers once the old stream, if it still holds the session, has let go.
    const absl::Time attempt_until = std::min(resume_deadline_, absl::Now() + absl::Seconds(90));
    const auto answered = [this, link]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return link->open_answered || stopping_ || !broken_.ok();
    };
    mu_.AwaitWithDeadline(absl::Condition(&answered), attempt_until);
    if (link->open_answered && link->open_status.ok()) {
      // Resumed: every request still waiting for its final reply goes again, in order.
      link->ready = true;
      link_ = link;
      resuming_ = false;
      ++counters_.resumes;
      outgoing_.clear();
      for (Call* call : calls_) {
        call->received = 0;
        call->cursor = 0;
        call->cursor_offset = 0;
        call->sized = false;
        outgoing_.push_back(*call->pristine);
      }
      Actions actions;
      AdvanceLocked(&actions);
      mu_.Unlock();
      Apply(actions);
      mu_.Lock();
      return;
    }
    const absl::Status failed =
        link->open_answered ? link->open_status
                            : absl::DeadlineExceededError("the resume got no answer");
    // The link is given up: its hold goes, and it is cancelled.
    link->abandoned = true;
    Actions actions;
    AdvanceLocked(&actions);
    mu_.Unlock();
    Apply(actions);
    link->context.TryCancel();
    mu_.Lock();
    // Final: the daemon has no such session (its grace ended, the daemon restarted, or it
    // ended the session itself), or refuses; nothing listens at the address any more.
    const bool final = absl::IsNotFound(failed) || absl::IsFailedPrecondition(failed) ||
                       absl::IsUnauthenticated(failed) || absl::IsPermissionDenied(failed) ||
                       absl::StrContains(failed.message(), "Connection refused");
    if (final) {
      resuming_ = false;
      BreakLocked(absl::Status(
          absl::IsUnauthenticated(failed) || absl::IsPermissionDenied(failed) ? failed.code()
                                                                            : lost_.code(),
          absl::StrCat(lost_.message(), "; resuming it failed: ", failed.message())));
      return;
    }
    mu_.AwaitWithTimeout(
        absl::Condition(+[](bool* stopping) { return *stopping; }, &stopping_), backoff);
    backoff = std::min(backoff * 2, absl::Seconds(2));
  }
}

absl::Status RemoteDispatch::Stream::DeliverLocked(Link* link) {
  IncomingReply& reply = link->read_msg;
  v1::SessionResponse& r = reply.message;
  if (!link->ready) {  // a resume's link: its open is answered first
    if (r.id() != link->open_id || !r.last()) {
      return absl::InternalError("sluiced replied to a resume with something else");
    }
    link->open_answered = true;
    link->open_status = StatusFromProto(r.status());
    if (link->open_status.ok() && !r.open().resumed()) {
      link->open_status = absl::InternalError("sluiced opened a new session instead of resuming");
    }
    link->last_completed = r.open().last_completed_id();
    return link->open_status.ok() ? absl::OkStatus() : link->open_status;
  }
  if (r.has_notice()) {  // answers no request
    if (r.notice().kind() == v1::Notice::DRAINING) {
      draining_until_ = absl::FromUnixMillis(r.notice().deadline_unix_ms());
    }
    return absl::OkStatus();
  }
  if (calls_.empty() || calls_.front()->id != r.id()) {
    return absl::InternalError(absl::StrFormat(
        "sluiced replied to request %d, but %s", r.id(),
        calls_.empty() ? "none is waiting"
                       : absl::StrFormat("request %d is next", calls_.front()->id)));
  }
  Call* call = calls_.front();
  if (r.has_data()) {
    const v1::DataChunk& chunk = r.data();
    const uint64_t bytes = reply.data_size();
    if (chunk.total() != call->expected || chunk.offset() != call->received ||
        bytes > call->expected - call->received) {
      return absl::DataLossError(absl::StrFormat(
          "reply data (offset %d, %d bytes, total %d) does not match the %d bytes requested",
          chunk.offset(), bytes, chunk.total(), call->expected));
    }
    if (!call->sized) RETURN_IF_ERROR(call->SizeOutputs());
    // From where gRPC received them into the caller's memory: the only copy.
    uint64_t done = 0;
    while (done < bytes) {
      while (call->cursor_offset == call->lengths[call->cursor]) {
        ++call->cursor;
        call->cursor_offset = 0;
      }
      const uint64_t n =
          std::min<uint64_t>(bytes - done, call->lengths[call->cursor] - call->cursor_offset);
      reply.CopyData(done, n, call->outputs[call->cursor].data() + call->cursor_offset);
      done += n;
      call->cursor_offset += n;
    }
    call->received += bytes;
  }
  if (!r.last()) return absl::OkStatus();
  call->status = StatusFromProto(r.status());
  if (!outgoing_.empty() && outgoing_.front().call_id <= call->id) {
    // Answered before it was sent in full: only a refused upload may be (the daemon answers a
    // bad upload as soon as it knows, and drops what still arrives of it). The rest of it is
    // not sent: it must never be read from the caller's memory once the caller has returned.
    Outgoing& rest = outgoing_.front();
    if (rest.call_id != call->id || !rest.is_upload || !rest.head_sent || call->status.ok()) {
      return absl::InternalError(absl::StrFormat(
          "sluiced answered request %d before it was sent in full", call->id));
    }
    outgoing_.pop_front();
  }
  if (call->status.ok()) {
    if (call->received != call->expected) {
      return absl::DataLossError(absl::StrFormat(
          "sluiced returned %d of the %d bytes requested", call->received, call->expected));
    }
    if (!call->sized) RETURN_IF_ERROR(call->SizeOutputs());  // reads of no bytes
  }
  call->reply = std::move(r);
  call->done = true;
  calls_.pop_front();
  if (call->best_effort) return absl::OkStatus();
  if (call->pipelined && !call->status.ok()) {
    if (call->on_failure != nullptr) call->on_failure();
    if (deferred_.ok()) {
      deferred_ = absl::Status(
          call->status.code(),
          absl::StrFormat("%s (request %d), sent without waiting, failed: %s", call->what,
                          call->id, call->status.message()));
    }
    return absl::OkStatus();
  }
  if (!call->detached && !deferred_.ok()) {
    // Requests run in order: this call comes after the failed one, and reports it.
    call->status = std::exchange(deferred_, absl::OkStatus());
  }
  if (call->detached && !call->status.ok()) {
    return absl::UnavailableError(absl::StrFormat(
        "the session is closed: sluiced refused request %d, sent without waiting: %s", call->id,
        call->status.ToString()));
  }
  return absl::OkStatus();
}

void RemoteDispatch::Stream::BreakLocked(absl::Status status) {
  if (broken_.ok()) broken_ = std::move(status);
  resuming_ = false;
  outgoing_.clear();
  for (Call* call : calls_) {
    call->status = broken_;
    call->done = true;
  }
  calls_.clear();
}

void RemoteDispatch::Stream::AdvanceLocked(Actions* actions) {
  Link* link = link_;
  if (link != nullptr && link->ready && !link->writing && broken_.ok() && !link->read_ended &&
      !link->write_failed && !link->writes_done) {
    if (!outgoing_.empty()) {
      if (outgoing_.front().Next(&link->write_msg, chunk_size_)) outgoing_.pop_front();
      ++counters_.messages_sent;
      counters_.bytes_sent += link->write_msg.ByteSizeLong();
      link->writing = true;
      actions->write = link;
    } else if (closing_) {
      link->writes_done = true;
      link->writing = true;
      actions->writes_done = link;
    }
  }
  for (const std::unique_ptr<Link>& l : links_) {
    if (l->hold_released || l->writing) continue;
    const bool current = l.get() == link_;
    // A resume's link keeps its hold until it is given up or breaks (OnDone then says why).
    if (!current && !l->ready && !l->abandoned && !l->read_ended && !l->write_failed) continue;
    if (!current || !broken_.ok() || l->read_ended || l->write_failed ||
        l->writes_done_complete) {
      l->hold_released = true;
      actions->release_holds.push_back(l.get());
    }
  }
}

void RemoteDispatch::Stream::Apply(const Actions& actions) {
  if (actions.write != nullptr) actions.write->StartWrite(&actions.write->write_msg);
  if (actions.writes_done != nullptr) actions.writes_done->StartWritesDone();
  for (Link* link : actions.release_holds) link->RemoveHold();
}

}  // namespace sluice
