#include "sluice/base/thread_pool.h"

#include <algorithm>
#include <atomic>
#include <cstring>

namespace sluice {

// One ParallelFor call. Chunks are claimed with an atomic counter, so workers and the caller
// never contend on the pool mutex while the loop runs.
// A loop with a stop predicate is closed by the first thread that sees it true: that thread
// moves `next` past the end, so the chunks claimed before (a prefix) are all that run, and
// counts the chunks nobody will claim as done.
struct ThreadPool::Loop {
  Loop(uint64_t n, uint64_t chunk, absl::FunctionRef<void(uint64_t, uint64_t)> fn,
       const absl::FunctionRef<bool()>* stop)
      : n(n), chunk(chunk), chunks((n + chunk - 1) / chunk), fn(fn), stop(stop) {}

  const uint64_t n;
  const uint64_t chunk;
  const uint64_t chunks;
  const absl::FunctionRef<void(uint64_t, uint64_t)> fn;
  const absl::FunctionRef<bool()>* const stop;  // null: runs to the end
  std::atomic<uint64_t> next{0};
  std::atomic<uint64_t> done{0};
  std::atomic<uint64_t> run_chunks{chunks};  // the prefix that runs; set when closed
  absl::Mutex mu;
  bool finished ABSL_GUARDED_BY(mu) = false;
  // Threads inside Drain of a loop with `stop` (which they call before claiming anything):
  // its caller returns, and `stop` goes out of scope, only once none is.
  int users ABSL_GUARDED_BY(mu) = 0;
};

ThreadPool::ThreadPool(int threads) {
  if (threads <= 0) threads = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  const int workers = threads - 1;
  threads_.reserve(workers);
  for (int i = 0; i < workers; ++i) threads_.emplace_back([this] { WorkerMain(); });
}

ThreadPool::~ThreadPool() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  for (std::thread& t : threads_) t.join();
}

void ThreadPool::Drain(Loop& loop) {
  if (loop.stop != nullptr) {
    absl::MutexLock lock(&loop.mu);
    if (loop.finished) return;
    ++loop.users;
  }
  DrainChunks(loop);
  if (loop.stop != nullptr) {
    absl::MutexLock lock(&loop.mu);
    --loop.users;
  }
}

void ThreadPool::DrainChunks(Loop& loop) {
  uint64_t finished_here = 0;
  for (;;) {
    if (loop.stop != nullptr && (*loop.stop)()) {
      uint64_t claimed = loop.next.load(std::memory_order_relaxed);
      while (claimed < loop.chunks &&
             !loop.next.compare_exchange_weak(claimed, loop.chunks, std::memory_order_relaxed)) {
      }
      if (claimed < loop.chunks) {  // this thread closed it
        loop.run_chunks.store(claimed, std::memory_order_relaxed);
        finished_here += loop.chunks - claimed;
      }
      break;
    }
    const uint64_t c = loop.next.fetch_add(1, std::memory_order_relaxed);
    if (c >= loop.chunks) break;
    const uint64_t begin = c * loop.chunk;
    loop.fn(begin, std::min(loop.n, begin + loop.chunk));
    ++finished_here;
  }
  if (finished_here == 0) return;
  if (loop.done.fetch_add(finished_here, std::memory_order_acq_rel) + finished_here ==
      loop.chunks) {
    absl::MutexLock lock(&loop.mu);
    loop.finished = true;
  }
}

void ThreadPool::WorkerMain() {
  for (;;) {
    std::shared_ptr<Loop> loop;
    {
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(
          +[](ThreadPool* pool) ABSL_EXCLUSIVE_LOCKS_REQUIRED(pool->mu_) {
            return pool->stopping_ || !pool->loops_.empty();
          },
          this));
      if (loops_.empty()) return;  // stopping, and nothing left to help with
      loop = loops_.front();
      // Every chunk is claimed: no one else needs to look at this loop.
      if (loop->next.load(std::memory_order_relaxed) >= loop->chunks) {
        loops_.pop_front();
        continue;
      }
    }
    Drain(*loop);
  }
}

void ThreadPool::ParallelFor(uint64_t n, uint64_t grain,
                             absl::FunctionRef<void(uint64_t, uint64_t)> fn) {
  Run(n, grain, fn, nullptr);
}

uint64_t ThreadPool::ParallelForUntil(uint64_t n, uint64_t grain,
                                      absl::FunctionRef<void(uint64_t, uint64_t)> fn,
                                      absl::FunctionRef<bool()> stop) {
  return Run(n, grain, fn, &stop);
}

uint64_t ThreadPool::Run(uint64_t n, uint64_t grain,
                         absl::FunctionRef<void(uint64_t, uint64_t)> fn,
                         const absl::FunctionRef<bool()>* stop) {
  if (n == 0) return 0;
  grain = std::max<uint64_t>(grain, 1);
  if (n <= grain || threads_.empty()) {
    if (stop == nullptr) {
      fn(0, n);
      return n;
    }
    // Alone: grain by grain, looking at `stop` before each.
    for (uint64_t begin = 0; begin < n; begin += grain) {
      if ((*stop)()) return begin;
      fn(begin, std::min(n, begin + grain));
    }
    return n;
  }
  // Four chunks per thread balance uneven work without making chunks tiny; a loop that may
  // stop takes chunks of at most kStopGrains grains, so that it stops soon.
  const uint64_t target_chunks = static_cast<uint64_t>(concurrency()) * 4;
  uint64_t chunk = std::max(grain, (n + target_chunks - 1) / target_chunks);
  if (stop != nullptr) chunk = std::min(chunk, grain * kStopGrains);
  auto loop = std::make_shared<Loop>(n, chunk, fn, stop);
  if (loop->chunks > 1) {
    absl::MutexLock lock(&mu_);
    loops_.push_back(loop);
  }
  Drain(*loop);
  {
    absl::MutexLock lock(&loop->mu);
    loop->mu.Await(absl::Condition(
        +[](Loop* l) ABSL_EXCLUSIVE_LOCKS_REQUIRED(l->mu) { return l->finished && l->users == 0; },
        loop.get()));
  }
  return std::min(n, loop->run_chunks.load(std::memory_order_relaxed) * chunk);
}

void ParallelCopy(ThreadPool& pool, void* dst, const void* src, uint64_t n) {
  // Below 2 MiB one thread copies at cache speed; above, memory bandwidth rewards more.
  constexpr uint64_t kParallelBytes = 2 << 20;
  constexpr uint64_t kBlock = 256 << 10;
  auto* d = static_cast<uint8_t*>(dst);
  const auto* s = static_cast<const uint8_t*>(src);
  if (n < kParallelBytes) {
    if (n > 0) std::memcpy(d, s, n);
    return;
  }
  pool.ParallelFor(n, kBlock, [&](uint64_t begin, uint64_t end) {
    std::memcpy(d + begin, s + begin, end - begin);
  });
}

}  // namespace sluice
