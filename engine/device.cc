#include "sluice/engine/device.h"

#include "absl/strings/str_format.h"

namespace sluice {

DeviceCounters CounterSet::Snapshot() const {
  DeviceCounters c;
  c.bytes_uploaded = bytes_uploaded_.load(std::memory_order_relaxed);
  c.bytes_downloaded = bytes_downloaded_.load(std::memory_order_relaxed);
  c.synchronizations = synchronizations_.load(std::memory_order_relaxed);
  c.launches = launches_.load(std::memory_order_relaxed);
  c.allocations = allocations_.load(std::memory_order_relaxed);
  c.frees = frees_.load(std::memory_order_relaxed);
  return c;
}

absl::Status MemoryAccountant::Reserve(uint64_t bytes, const char* what) {
  const uint64_t limit = limit_.load(std::memory_order_relaxed);
  uint64_t used = used_.load(std::memory_order_relaxed);
  do {
    if (bytes > limit || used > limit - bytes) {
      return absl::ResourceExhaustedError(absl::StrFormat(
          "%s: %d bytes requested, %d of %d in use", what, bytes, used, limit));
    }
  } while (!used_.compare_exchange_weak(used, used + bytes, std::memory_order_relaxed));
  const uint64_t now = used + bytes;
  uint64_t peak = peak_.load(std::memory_order_relaxed);
  while (peak < now && !peak_.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
  }
  return absl::OkStatus();
}

void MemoryAccountant::Release(uint64_t bytes) {
  used_.fetch_sub(bytes, std::memory_order_relaxed);
}

MemoryInfo MemoryAccountant::info() const {
  return MemoryInfo{.total = limit(),
                    .used = used_.load(std::memory_order_relaxed),
                    .peak = peak_.load(std::memory_order_relaxed)};
}

}  // namespace sluice
