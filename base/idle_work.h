// Work done meanwhile on cores nothing else wants, for a result wanted later that the caller can
// also make itself: the answer's order, ranked while a solve runs (tools/solve_command.cc).
#ifndef SLUICE_BASE_IDLE_WORK_H_
#define SLUICE_BASE_IDLE_WORK_H_

#include <exception>
#include <memory>
#include <optional>
#include <system_error>
#include <thread>
#include <utility>

#include "absl/functional/any_invocable.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"

namespace sluice {

// Puts the calling thread in the idle scheduling class (Linux's SCHED_IDLE): it runs only on a
// core that would otherwise be idle, and the threads it starts from then on inherit the class.
// An unprivileged thread cannot leave it (RLIMIT_NICE), so only a thread of its own should
// call this. False where the system refuses (the thread then runs as before).
bool RunOnIdleCoresOnly();

// Runs `work` on a thread of its own in the idle scheduling class (RunOnIdleCoresOnly), from
// construction. Take() hands over its result, waiting for it a bounded time: once the caller
// waits, its cores are idle unless other programs keep them busy, and then the work may wait for
// them for seconds; the caller that gets nothing makes the result itself, at its own priority.
// The thread is detached: one not done goes on (its result unused) or ends with the process.
// So `work` must own whatever it reads (it may outlive the caller and this object); what it
// throws (bad_alloc) is dropped and leaves no result. A lock the work holds (the allocator's,
// the kernel's over the process's mappings) may keep a busier thread waiting on it, until the
// waiting itself leaves the work a core: keep such work to plain computing.
template <class T>
class IdleWork {
 public:
  explicit IdleWork(absl::AnyInvocable<T()> work) : state_(std::make_shared<State>()) {
    state_->work = std::move(work);
    try {
      std::thread([state = state_] {
        RunOnIdleCoresOnly();
        try {
          state->result.emplace(state->work());
        } catch (...) {
          state->result.reset();
        }
        state->work = nullptr;  // what it owned goes now, not with the last owner
        state->done.Notify();
      }).detach();
    } catch (const std::system_error&) {
      state_->done.Notify();  // no thread: no result
    }
  }
  IdleWork(const IdleWork&) = delete;
  IdleWork& operator=(const IdleWork&) = delete;

  // Whether the work has ended (with its result or without).
  bool done() const { return state_->done.HasBeenNotified(); }

  // The work's result once it has ended with one, waiting for that at most `wait`; nothing if
  // it has not ended by then, or ended without one, or the result was taken before.
  std::optional<T> Take(absl::Duration wait = absl::ZeroDuration()) {
    if (!state_->done.WaitForNotificationWithTimeout(wait)) return std::nullopt;
    return std::exchange(state_->result, std::nullopt);
  }

 private:
  struct State {
    absl::AnyInvocable<T()> work;
    std::optional<T> result;  // written by the thread before `done`, read after it
    absl::Notification done;
  };
  std::shared_ptr<State> state_;  // shared with the thread, which may outlive this object
};

}  // namespace sluice

#endif  // SLUICE_BASE_IDLE_WORK_H_
