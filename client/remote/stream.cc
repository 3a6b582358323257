#include "sluice/client/remote/stream.h"

#include <sched.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "sluice/base/status_macros.h"
#include "sluice/client/remote/link.h"
#include "sluice/proto/codec.h"

namespace sluice {

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
  // A reply that comes within reply_poll_ is taken without sleeping: the wakeup of a sleeping
  // thread is a third of a small request's round trip on a VM. Between looks the core goes to
  // any other thread that wants it (gRPC's, delivering the reply).
  bool polled = false;
  if (reply_poll_ > absl::ZeroDuration()) {
    const absl::Time until = std::min(deadline, absl::Now() + reply_poll_);
    while (!(polled = call->arrived.load(std::memory_order_acquire)) && absl::Now() < until) {
      sched_yield();
    }
  }
  Actions actions;
  absl::Status result;
  Link* cancel = nullptr;
  {
    absl::MutexLock lock(&mu_);
    if (mu_.AwaitWithDeadline(absl::Condition(&call->done), deadline)) {
      ++counters_.round_trips;
      if (polled) ++counters_.replies_polled;
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
  link->ended = why;
  link->resumable_end = ResumableEndLocked(status);
  if (!link->ready && !link->open_answered) {  // a resume's link that ended first
    link->open_answered = true;
    link->open_status = why;
  }
  if (link != link_) return;
  link_ = nullptr;
  if (link->resumable_end) {
    resuming_ = true;
    lost_ = why;
    resume_deadline_ = absl::Now() + resume_grace_;
    return;
  }
  BreakLocked(why);
}

void RemoteDispatch::Stream::BreakLocked(absl::Status status) {
  if (broken_.ok()) broken_ = std::move(status);
  resuming_ = false;
  outgoing_.clear();
  for (Call* call : calls_) {
    call->status = broken_;
    call->done = true;
    call->arrived.store(true, std::memory_order_release);
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
