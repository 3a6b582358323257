// Work in numbered pieces, made on several threads and taken in order by one: the shape of a
// reader that parses a file's stretches on every core but adds them in the file's order, and of
// a writer that formats an answer's pieces on every core but writes them in order.
#ifndef SLUICE_BASE_ORDERED_WORK_H_
#define SLUICE_BASE_ORDERED_WORK_H_

#include <cstddef>
#include <exception>
#include <functional>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace sluice {

// Pieces 0 .. count - 1, piece k made by make(k, slot) into one of `window` + 1 slots (T is
// default-constructible and reused: a slot keeps its room from piece to piece). Workers make
// pieces at most `window` past the last one taken; the taking thread makes the next piece
// itself rather than wait while one is there to claim, so the work moves on with no worker at
// all. make must be safe to run on any thread beside other pieces' makes; what it throws
// (std::bad_alloc, say) is thrown again by the Take of that piece, on the taking thread.
template <typename T>
class OrderedWork {
 public:
  // `threads` counts the taking thread: threads - 1 workers are started (fewer if the system
  // has no more to give; those there make every piece).
  OrderedWork(size_t count, unsigned threads, size_t window,
              std::function<void(size_t k, T& slot)> make)
      : count_(count), make_(std::move(make)), slots_(window + 1), made_(window + 1, kNone),
        failed_(window + 1) {
    threads_.reserve(threads);
    for (unsigned k = 1; k < threads && k < count; ++k) {
      try {
        threads_.emplace_back([this] { Work(); });
      } catch (const std::system_error&) {
        break;
      }
    }
  }
  ~OrderedWork() {
    {
      absl::MutexLock lock(&mu_);
      stop_ = true;
      cv_.SignalAll();
    }
    for (std::thread& thread : threads_) thread.join();
  }
  OrderedWork(const OrderedWork&) = delete;
  OrderedWork& operator=(const OrderedWork&) = delete;

  // Piece k, made: the next piece after the last one released. It stays the caller's until
  // Release. Throws what making it threw (the piece is then the caller's to release too).
  T& Take(size_t k) {
    std::exception_ptr failed;
    {
      absl::MutexLock lock(&mu_);
      while (made_[k % slots_.size()] != k) {
        if (Claimable()) {
          MakeNext();
        } else {
          cv_.Wait(&mu_);
        }
      }
      failed = std::exchange(failed_[k % slots_.size()], nullptr);
    }
    if (failed != nullptr) std::rethrow_exception(failed);
    return slots_[k % slots_.size()];
  }
  // Piece k is done with: its slot may take another piece.
  void Release(size_t k) {
    absl::MutexLock lock(&mu_);
    released_ = k + 1;
    cv_.SignalAll();
  }

 private:
  static constexpr size_t kNone = ~size_t{0};

  bool Claimable() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return next_ < count_ && next_ < released_ + slots_.size();
  }
  // Claims the next piece and makes it with the lock released.
  void MakeNext() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    const size_t k = next_++;
    T& slot = slots_[k % slots_.size()];
    mu_.Unlock();
    std::exception_ptr failed;
    try {
      make_(k, slot);
    } catch (...) {
      failed = std::current_exception();
    }
    mu_.Lock();
    failed_[k % slots_.size()] = std::move(failed);
    made_[k % slots_.size()] = k;
    cv_.SignalAll();
  }
  void Work() {
    absl::MutexLock lock(&mu_);
    for (;;) {
      while (!stop_ && next_ < count_ && !Claimable()) cv_.Wait(&mu_);
      if (stop_ || next_ >= count_) return;
      MakeNext();
    }
  }

  const size_t count_;
  const std::function<void(size_t, T&)> make_;
  std::vector<T> slots_;  // piece k in slot k % size; a slot is the maker's, then the taker's
  absl::Mutex mu_;
  absl::CondVar cv_;
  std::vector<size_t> made_ ABSL_GUARDED_BY(mu_);  // by slot: the piece made there, if any
  std::vector<std::exception_ptr> failed_ ABSL_GUARDED_BY(mu_);  // by slot: what making threw
  size_t next_ ABSL_GUARDED_BY(mu_) = 0;            // the next piece to claim
  size_t released_ ABSL_GUARDED_BY(mu_) = 0;        // pieces done with, in order
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;
};

}  // namespace sluice

#endif  // SLUICE_BASE_ORDERED_WORK_H_
