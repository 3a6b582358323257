// The device abstraction the daemon and the in-process dispatcher run on: memory, ordered
// streams of copies and kernel passes, and counters that tests and benchmarks read. CpuDevice
// is always built; CudaDevice is built where nvcc exists and chosen at run time.
#ifndef SLUICE_ENGINE_DEVICE_H_
#define SLUICE_ENGINE_DEVICE_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "sluice/base/interrupt.h"
#include "sluice/kernels/catalog.h"
#include "sluice/kernels/kernel_args.h"
#include "sluice/kernels/kernel_id.h"
#include "sluice/proto/contract.h"

namespace sluice {

// A region of device memory. `data` is a device address (host memory on the CPU device).
struct DeviceBuffer {
  uint8_t* data = nullptr;
  uint64_t bytes = 0;
  // Device-defined; the CUDA device records the context generation the memory belongs to, so a
  // buffer that outlived a device reset is never mistaken for a new one at the same address.
  uint64_t generation = 0;
};

// One kernel step ready to run: bindings resolved to device addresses and passes planned.
struct PlannedStep {
  KernelId kernel;  // which catalog kernel (a device may run its own form of some kernels)
  KernelArgs args;
  std::vector<PassLaunch> passes;
  // A loop guard (a catalog kernel with no passes): the device address of its word. Only ever
  // the first step of a repeated group.
  const uint32_t* guard = nullptr;
};

// An ordered queue of device work. Work may run asynchronously; `Synchronize` waits for all of
// it. Host memory handed to CopyIn/CopyOut must stay valid until Synchronize returns.
// Not thread-safe: one owner enqueues at a time.
class Stream {
 public:
  virtual ~Stream() = default;

  // Enqueues a copy of `src` into `dst` at `offset`. The range is checked by the caller.
  virtual absl::Status CopyIn(DeviceBuffer dst, uint64_t offset,
                              absl::Span<const uint8_t> src) = 0;
  // Enqueues a copy of `dst.size()` bytes of `src` at `offset` into `dst`.
  virtual absl::Status CopyOut(DeviceBuffer src, uint64_t offset, absl::Span<uint8_t> dst) = 0;
  // Enqueues every pass of `step`, in order. Once `interrupt` stops it returns its reason
  // (Cancelled or DeadlineExceeded) with the step run in part or not at all: a device checks
  // at least before the step (the CPU device also between passes and between chunks of one).
  virtual absl::Status Launch(const PlannedStep& step, const Interrupt& interrupt) = 0;
  // Enqueues `steps` `count` times over. When steps[0] is a loop guard, the repetition ends
  // before the first iteration that starts with the guard word zero, without the host reading
  // it. Checks `interrupt` at least between iterations (or batches of them) and returns its
  // reason once it stops, with the work already done kept.
  virtual absl::Status LaunchRepeated(absl::Span<const PlannedStep> steps, uint32_t count,
                                      const Interrupt& interrupt) = 0;
  // Waits until everything enqueued has finished. Counts one synchronization.
  virtual absl::Status Synchronize() = 0;
  // OK while this stream's work can run; Unavailable (saying why) once its device failed, or
  // was reset after a failure since the stream was made: its session's buffers are gone, and
  // the session must not allocate new ones either. Thread-safe.
  virtual absl::Status Usable() const { return absl::OkStatus(); }
};

class Device {
 public:
  virtual ~Device() = default;

  virtual const DeviceInfo& info() const = 0;

  // Returns `bytes` of zeroed device memory (zeroed so no session ever sees another's data).
  // ResourceExhausted when the device's memory limit or the allocator refuses.
  // Thread-safe.
  virtual absl::StatusOr<DeviceBuffer> Allocate(uint64_t bytes) = 0;
  // Returns memory from Allocate. No work may still use it. Thread-safe.
  virtual void Free(DeviceBuffer buffer) = 0;

  // A new ordered queue; each session owns one. Thread-safe.
  virtual absl::StatusOr<std::unique_ptr<Stream>> CreateStream() = 0;

  virtual MemoryInfo memory() const = 0;
  virtual DeviceCounters counters() const = 0;

  // Whether the device failed and could not be brought back (a GPU whose reset failed):
  // nothing will run on it again in this process. Thread-safe.
  virtual bool lost() const { return false; }

  // The most host memory the device may hold with `streams` streams open (published in
  // GetInfo's host_memory; the device holds no more).
  struct HostBytes {
    uint64_t buffers = 0;  // buffers that are host memory (the CPU device's)
    uint64_t staging = 0;  // page-locked memory for transfers (the CUDA device's)
  };
  virtual HostBytes HostMemoryBound(uint32_t streams) const {
    (void)streams;
    return {};
  }
};

// Atomic counters a Device implementation embeds and snapshots.
class CounterSet {
 public:
  void AddUploaded(uint64_t bytes) { bytes_uploaded_.fetch_add(bytes, std::memory_order_relaxed); }
  void AddDownloaded(uint64_t bytes) {
    bytes_downloaded_.fetch_add(bytes, std::memory_order_relaxed);
  }
  void AddSynchronization() { synchronizations_.fetch_add(1, std::memory_order_relaxed); }
  void AddLaunches(uint64_t n) { launches_.fetch_add(n, std::memory_order_relaxed); }
  void AddAllocation() { allocations_.fetch_add(1, std::memory_order_relaxed); }
  void AddFree() { frees_.fetch_add(1, std::memory_order_relaxed); }
  DeviceCounters Snapshot() const;

 private:
  std::atomic<uint64_t> bytes_uploaded_{0};
  std::atomic<uint64_t> bytes_downloaded_{0};
  std::atomic<uint64_t> synchronizations_{0};
  std::atomic<uint64_t> launches_{0};
  std::atomic<uint64_t> allocations_{0};
  std::atomic<uint64_t> frees_{0};
};

// Tracks bytes against a limit, for device memory and for per-session quotas. Thread-safe.
class MemoryAccountant {
 public:
  // `name` says whose quota it is in refusals ("the tenant's memory quota"); empty: the caller
  // of Reserve says.
  explicit MemoryAccountant(uint64_t limit, std::string name = "")
      : name_(std::move(name)), limit_(limit) {}

  // Reserves `bytes`; ResourceExhausted (naming `what`) if that would pass the limit.
  absl::Status Reserve(uint64_t bytes, const char* what);
  void Release(uint64_t bytes);
  MemoryInfo info() const;
  uint64_t limit() const { return limit_.load(std::memory_order_relaxed); }
  uint64_t used() const { return used_.load(std::memory_order_relaxed); }
  // A new limit for later reservations; what is held stays held, even above it.
  void set_limit(uint64_t limit) { limit_.store(limit, std::memory_order_relaxed); }
  const std::string& name() const { return name_; }

 private:
  const std::string name_;
  std::atomic<uint64_t> limit_;
  std::atomic<uint64_t> used_{0};
  std::atomic<uint64_t> peak_{0};
};

}  // namespace sluice

#endif  // SLUICE_ENGINE_DEVICE_H_
