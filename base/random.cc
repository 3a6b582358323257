#include "sluice/base/random.h"

#include <sys/random.h>

#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"

namespace sluice {
namespace {

// Values come straight from getrandom(2), the kernel's CSPRNG, buffered so that a burst of
// allocations costs one system call per 512 handles. A client that sees its own handles
// learns nothing about anyone else's.
class EntropyPool {
 public:
  uint64_t Next() {
    absl::MutexLock lock(&mu_);
    for (;;) {
      if (next_ == pool_.size()) Refill();
      const uint64_t value = pool_[next_++];
      if (value != 0) return value;
    }
  }

 private:
  void Refill() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    auto* bytes = reinterpret_cast<char*>(pool_.data());
    size_t filled = 0;
    while (filled < sizeof(pool_)) {
      const ssize_t n = getrandom(bytes + filled, sizeof(pool_) - filled, 0);
      if (n < 0) {
        if (errno == EINTR) continue;
        // getrandom cannot fail on Linux >= 3.17 with these arguments; without entropy there
        // is no safe way to issue handles, so stop rather than issue guessable ones.
        std::abort();
      }
      filled += static_cast<size_t>(n);
    }
    next_ = 0;
  }

  absl::Mutex mu_;
  std::array<uint64_t, 512> pool_ ABSL_GUARDED_BY(mu_){};
  size_t next_ ABSL_GUARDED_BY(mu_) = 512;
};

EntropyPool& Global() {
  static EntropyPool* const pool = new EntropyPool();
  return *pool;
}

}  // namespace

uint64_t SecureRandom64() { return Global().Next(); }

std::string RandomHexId() {
  return absl::StrFormat("%016x%016x", SecureRandom64(), SecureRandom64());
}

}  // namespace sluice
