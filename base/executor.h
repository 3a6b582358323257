// Threads running queued tasks in FIFO order, started as the work needs them. The daemon runs
// each session's device work here so that gRPC reactors never block; per-session ordering is
// the caller's business (a session schedules its next task only when the previous one is done).
// With as many threads allowed as there are sessions, no session's work ever waits for a
// thread behind another session's long task: sessions then share the device itself, whose
// launches interleave.
#ifndef SLUICE_BASE_EXECUTOR_H_
#define SLUICE_BASE_EXECUTOR_H_

#include <deque>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/any_invocable.h"
#include "absl/synchronization/mutex.h"

namespace sluice {

class Executor {
 public:
  // Runs tasks on at most `max_threads` threads (at least 1), started when a task finds every
  // running thread busy; they stay until the executor goes.
  explicit Executor(int max_threads);
  // Runs every task already scheduled, then joins the threads.
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  // Queues `task` to run on one of the threads. Thread-safe.
  void Schedule(absl::AnyInvocable<void() &&> task);

  // Threads started so far. Thread-safe.
  int threads() const;

 private:
  void ThreadMain();

  const int max_threads_;
  mutable absl::Mutex mu_;
  std::deque<absl::AnyInvocable<void() &&>> tasks_ ABSL_GUARDED_BY(mu_);
  int idle_ ABSL_GUARDED_BY(mu_) = 0;      // threads waiting for a task
  int starting_ ABSL_GUARDED_BY(mu_) = 0;  // threads started that have not yet waited
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_ ABSL_GUARDED_BY(mu_);
};

}  // namespace sluice

#endif  // SLUICE_BASE_EXECUTOR_H_
