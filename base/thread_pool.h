// A fixed pool of worker threads that runs data-parallel loops. Several callers may run loops
// at once (one per session); each caller also works on its own loop, so a loop always makes
// progress even when every worker is busy with someone else's.
#ifndef SLUICE_BASE_THREAD_POOL_H_
#define SLUICE_BASE_THREAD_POOL_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "absl/synchronization/mutex.h"

namespace sluice {

class ThreadPool {
 public:
  // Runs loops on `threads` threads: the caller plus threads - 1 workers. 0 means one per
  // hardware thread.
  explicit ThreadPool(int threads = 0);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  // Calls fn(begin, end) over disjoint ranges covering [0, n) and returns when all calls have
  // returned. Ranges hold at least `grain` indices (except the last); when n <= grain the loop
  // runs inline on the caller, with no synchronization. Thread-safe; fn must not call back
  // into ParallelFor of the same pool.
  void ParallelFor(uint64_t n, uint64_t grain,
                   absl::FunctionRef<void(uint64_t begin, uint64_t end)> fn);

  // As ParallelFor, but stops early once `stop` returns true: every thread calls it before
  // each range it takes, and none takes another once one saw it true. The ranges that ran
  // are exactly [0, returned count), so the caller can resume the loop from there. A range
  // holds at most kStopGrains grains, so a thread looks at `stop` at least that often.
  // `stop` must be thread-safe.
  uint64_t ParallelForUntil(uint64_t n, uint64_t grain,
                            absl::FunctionRef<void(uint64_t begin, uint64_t end)> fn,
                            absl::FunctionRef<bool()> stop);

  static constexpr uint64_t kStopGrains = 16;

  // Threads a loop can use: the workers plus the caller.
  int concurrency() const { return static_cast<int>(threads_.size()) + 1; }

 private:
  struct Loop;

  uint64_t Run(uint64_t n, uint64_t grain,
              absl::FunctionRef<void(uint64_t begin, uint64_t end)> fn,
              const absl::FunctionRef<bool()>* stop);
  void WorkerMain();
  // Runs chunks of `loop` until none are left; returns after finishing at least none.
  static void Drain(Loop& loop);
  static void DrainChunks(Loop& loop);

  absl::Mutex mu_;
  std::deque<std::shared_ptr<Loop>> loops_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;  // const after construction
};

// memcpy of `n` bytes, split over `pool` when large enough to be worth waking workers for.
void ParallelCopy(ThreadPool& pool, void* dst, const void* src, uint64_t n);

}  // namespace sluice

#endif  // SLUICE_BASE_THREAD_POOL_H_
