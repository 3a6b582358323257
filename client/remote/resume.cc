// RemoteDispatch's stream, resuming: when a resumable session's link breaks, a new link
// opens the session again and every request whose final reply had not come goes again.
#include <algorithm>
#include <atomic>
#include <memory>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "sluice/client/remote/link.h"
#include "sluice/client/remote/stream.h"

namespace sluice {

namespace internal {
std::atomic<ResumeAnsweredHook*> resume_answered_hook{nullptr};
}  // namespace internal

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
    // An open answered stays answered, with the same status.
    const bool resumed = link->open_answered && link->open_status.ok();
    internal::ResumeAnsweredHook* const hook = internal::resume_answered_hook.load();
    if (resumed && hook != nullptr) {
      mu_.Unlock();
      (*hook)([this, link] {
        absl::MutexLock lock(&mu_);
        return link->done;
      });
      mu_.Lock();
    }
    if (resumed && link->done) {
      // The daemon resumed the session on this link, but the link ended before it became the
      // session's, so its end resumed nothing: the resume goes on, as it would have for the
      // session's link, the daemon's grace counted again from now.
      if (!link->resumable_end) {
        resuming_ = false;
        BreakLocked(link->ended);
        return;
      }
      lost_ = link->ended;
      resume_deadline_ = absl::Now() + resume_grace_;
      backoff = absl::Milliseconds(50);
      continue;
    }
    if (resumed) {
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

}  // namespace sluice
