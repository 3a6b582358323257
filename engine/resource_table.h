// A session's table of resident buffers. Handles are unguessable 64-bit values, meaningful
// only within the table that issued them. A buffer pinned by running work stays allocated
// until the work releases it, even if it is freed meanwhile: the free is deferred, and the
// handle is gone at once.
#ifndef SLUICE_ENGINE_RESOURCE_TABLE_H_
#define SLUICE_ENGINE_RESOURCE_TABLE_H_

#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "sluice/engine/device.h"
#include "sluice/proto/contract.h"

namespace sluice {

class ResourceTable {
 public:
  struct Options {
    uint64_t memory_quota = ~uint64_t{0};  // bytes this table may hold at once
    uint64_t max_buffers = uint64_t{1} << 20;
    // When set, buffers are also reserved from it: a quota several tables share (the memory of
    // all of one client's sessions).
    std::shared_ptr<MemoryAccountant> shared_quota;
    // The device's refusals of an allocation state no figures (they count every session's
    // buffers): for a daemon whose tenants must not learn of each other's use.
    bool discreet = false;
  };

  // Buffers pinned for one operation. Unpins on destruction; a buffer freed while pinned is
  // returned to the device when its last pin goes. Move-only.
  class Pins {
   public:
    Pins() = default;
    Pins(Pins&& other) noexcept;
    Pins& operator=(Pins&& other) noexcept;
    ~Pins();
    // The buffers, in the order their handles were given to Pin.
    absl::Span<const DeviceBuffer> buffers() const { return buffers_; }

   private:
    friend class ResourceTable;
    void Release();
    ResourceTable* table_ = nullptr;
    std::vector<uint64_t> entries_;  // unique handles pinned
    std::vector<DeviceBuffer> buffers_;
  };

  ResourceTable(Device* device, const Options& options);
  // Frees every buffer. No Pins may outlive the table.
  ~ResourceTable();
  ResourceTable(const ResourceTable&) = delete;
  ResourceTable& operator=(const ResourceTable&) = delete;

  // Allocates a zeroed buffer of exactly `bytes` bytes and returns its handle: `chosen` when
  // not 0 (the client's, for pipelining), else a fresh unguessable one. ResourceExhausted if
  // the quota, the buffer count limit or the device refuses; AlreadyExists if `chosen` names a
  // buffer of this table (live, or freed while pinned).
  absl::StatusOr<uint64_t> Allocate(uint64_t bytes, uint64_t chosen = 0);

  // Removes `handle`; the memory returns to the device now, or when the last pin goes.
  // NotFound if the handle is unknown or already freed.
  absl::Status Free(uint64_t handle);

  // Size in bytes of the buffer behind `handle`; NotFound if unknown.
  absl::StatusOr<uint64_t> Size(uint64_t handle) const;

  // Pins every handle (repeats allowed) and returns their buffers in order. NotFound naming
  // the first unknown handle, whose position goes to `*failed_index` when that is not null;
  // then nothing is pinned.
  absl::StatusOr<Pins> Pin(absl::Span<const uint64_t> handles, size_t* failed_index = nullptr);

  // Frees every buffer (pinned ones when their pins go). Returns how many were freed.
  size_t FreeAll();

  size_t buffer_count() const;
  uint64_t bytes_in_use() const;  // includes buffers whose free is deferred, as counted

  // A buffer counts at least this many bytes against the quotas: however small, it holds the
  // device's smallest allocation (CUDA's 512 bytes) and its entry here.
  static constexpr uint64_t kMinCountedBytes = 512;
  static uint64_t Counted(uint64_t bytes) { return std::max(bytes, kMinCountedBytes); }

 private:
  struct Entry {
    DeviceBuffer buffer;
    uint32_t pins = 0;
  };

  void Unpin(absl::Span<const uint64_t> keys);
  void ReleaseMemory(const Entry& entry) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  Device* const device_;  // const after construction; not owned
  const Options options_;

  mutable absl::Mutex mu_;
  // Live buffers by handle.
  absl::flat_hash_map<uint64_t, Entry> live_ ABSL_GUARDED_BY(mu_);
  // Freed while pinned, by handle, until the last pin goes.
  absl::flat_hash_map<uint64_t, Entry> deferred_ ABSL_GUARDED_BY(mu_);
  uint64_t bytes_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t allocating_ ABSL_GUARDED_BY(mu_) = 0;  // allocations between reserve and insert
};

}  // namespace sluice

#endif  // SLUICE_ENGINE_RESOURCE_TABLE_H_
