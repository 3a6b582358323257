// Buffers of one size, in huge pages, kept after use for the next user while they fit a limit:
// memory the process already has backed, where a fresh buffer is zeroed a page at a time by the
// system first (and on a virtual machine may have to be backed by the host again, which makes
// the same write several times slower at random: docs/benchmarks.md, "Upload blocks kept
// warm"). A daemon's uploads take their blocks here, so that one upload's blocks serve the
// next. A kept buffer goes back to the system once it has gone unused for a while (Expire), or
// when the store goes.
#ifndef SLUICE_BASE_WARM_BUFFERS_H_
#define SLUICE_BASE_WARM_BUFFERS_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "sluice/base/mapped_buffer.h"

namespace sluice {

class WarmBuffers {
 private:
  struct Shelf;

 public:
  // A buffer of the store's size, taken from it; back to the store when it goes.
  class Lease {
   public:
    Lease() = default;
    Lease(Lease&&) noexcept = default;
    Lease& operator=(Lease&& other) noexcept;
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    ~Lease() { Return(); }

    uint8_t* data() { return buffer_.data(); }
    const uint8_t* data() const { return buffer_.data(); }
    size_t size() const { return buffer_.size(); }
    // Whether it was kept from an earlier user: its pages are all backed, and it holds that
    // user's bytes (a fresh one is zeros, its pages backed as they are first written).
    bool warm() const { return warm_; }

   private:
    friend class WarmBuffers;
    void Return();

    MappedBuffer buffer_;
    std::shared_ptr<Shelf> shelf_;
    bool warm_ = false;
  };

  // Buffers of `buffer_bytes` (a multiple of a huge page), of which at most `limit` bytes are
  // kept while unused.
  WarmBuffers(size_t buffer_bytes, uint64_t limit);
  // Frees what is kept; leases still out are freed when they go.
  ~WarmBuffers();
  WarmBuffers(const WarmBuffers&) = delete;
  WarmBuffers& operator=(const WarmBuffers&) = delete;

  // The buffer given back last, or a fresh one when none is kept; ResourceExhausted when the
  // system has no room for a fresh one. Thread-safe.
  absl::StatusOr<Lease> Take();
  // Frees the buffers kept unused since before `cutoff`. Thread-safe.
  void Expire(absl::Time cutoff);

  size_t buffer_bytes() const { return buffer_bytes_; }
  uint64_t limit() const { return limit_; }
  // Bytes kept unused now, and how many Takes found a kept buffer. Thread-safe.
  uint64_t kept_bytes() const;
  uint64_t reused() const;

 private:
  struct Kept {
    MappedBuffer buffer;
    absl::Time since;
  };
  // What the store and its leases share: a lease may outlive the store.
  struct Shelf {
    mutable absl::Mutex mu;
    std::deque<Kept> kept ABSL_GUARDED_BY(mu);  // oldest first
    uint64_t kept_bytes ABSL_GUARDED_BY(mu) = 0;
    uint64_t limit ABSL_GUARDED_BY(mu) = 0;  // 0 once the store is gone
    uint64_t reused ABSL_GUARDED_BY(mu) = 0;
  };

  const size_t buffer_bytes_;
  const uint64_t limit_;
  const std::shared_ptr<Shelf> shelf_;
};

}  // namespace sluice

#endif  // SLUICE_BASE_WARM_BUFFERS_H_
