// A fixed set of threads running queued tasks in FIFO order. The daemon runs each session's
// device work here so that gRPC reactors never block; per-session ordering is the caller's
// business (a session schedules its next task only when the previous one is done).
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
  // Starts `threads` threads (at least 1).
  explicit Executor(int threads);
  // Runs every task already scheduled, then joins the threads.
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  // Queues `task` to run on one of the threads. Thread-safe.
  void Schedule(absl::AnyInvocable<void() &&> task);

 private:
  void ThreadMain();

  absl::Mutex mu_;
  std::deque<absl::AnyInvocable<void() &&>> tasks_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;  // const after construction
};

}  // namespace sluice

#endif  // SLUICE_BASE_EXECUTOR_H_
