#include "sluice/base/executor.h"

#include <algorithm>
#include <utility>

#include "sluice/base/heap.h"

namespace sluice {

Executor::Executor(int max_threads) : max_threads_(std::max(max_threads, 1)) {}

Executor::~Executor() {
  std::vector<std::thread> threads;
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    // No thread starts once stopping_ is set; the ones running drain the queue, and a task
    // they run may still schedule more (it runs on them too).
    threads.swap(threads_);
  }
  for (std::thread& t : threads) t.join();
}

void Executor::Schedule(absl::AnyInvocable<void() &&> task) {
  absl::MutexLock lock(&mu_);
  tasks_.push_back(std::move(task));
  // Each idle or starting thread takes one queued task; start a thread for a task none will
  // take, rather than leave it behind the busy ones.
  if (!stopping_ && tasks_.size() > static_cast<size_t>(idle_ + starting_) &&
      static_cast<int>(threads_.size()) < max_threads_) {
    ++starting_;
    threads_.emplace_back([this] { ThreadMain(); });
  }
}

int Executor::threads() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int>(threads_.size());
}

void Executor::ThreadMain() {
  {
    absl::MutexLock lock(&mu_);
    --starting_;
  }
  for (;;) {
    absl::AnyInvocable<void() &&> task;
    {
      absl::MutexLock lock(&mu_);
      if (tasks_.empty() && !stopping_) {
        // About to wait, perhaps for long: the memory this thread's allocator cache holds goes
        // back to the shared heap, where a trim can give it to the system.
        mu_.Unlock();
        ReleaseThreadHeapCache();
        mu_.Lock();
      }
      ++idle_;
      mu_.Await(absl::Condition(
          +[](Executor* e) ABSL_EXCLUSIVE_LOCKS_REQUIRED(e->mu_) {
            return e->stopping_ || !e->tasks_.empty();
          },
          this));
      --idle_;
      if (tasks_.empty()) return;
      task = std::move(tasks_.front());
      tasks_.pop_front();
    }
    std::move(task)();
  }
}

}  // namespace sluice
