// The CUDA device's own class, private to the files of engine/cuda/: memory, the recovery
// runtime that engine/device_health.h drives (probe, reset, responsiveness check), the locks
// every CUDA call of a session respects, and the figures. Streams (stream.h) are built from
// the staging ring and read arena (staging.h), the graph cache (graphs.h) and the library forms
// of kernels (cub_steps.h).
#ifndef SLUICE_ENGINE_CUDA_DEVICE_IMPL_H_
#define SLUICE_ENGINE_CUDA_DEVICE_IMPL_H_

#include <cuda_runtime_api.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "sluice/base/thread_pool.h"
#include "sluice/engine/cuda_device.h"
#include "sluice/engine/device.h"
#include "sluice/engine/device_health.h"

namespace sluice {

// How long the device waits, at most, on its own small work (the graph-loop probe, running
// CUB once, the check that a context still runs work).
inline constexpr std::chrono::milliseconds kBoundedWait{10000};

// Returns the converted status from the enclosing function when a CUDA call fails.
#define CUDA_RETURN_IF_ERROR(device, expr)                                   \
  do {                                                                       \
    const cudaError_t sluice_cuda_error_ = (expr);                           \
    if (sluice_cuda_error_ != cudaSuccess) {                                 \
      return (device)->Fail(sluice_cuda_error_, #expr, __FILE__, __LINE__);  \
    }                                                                        \
  } while (0)

// Marks the calling thread as capturing a stream into a graph while it lives: nothing runs
// then, so an error cannot be a fault of the call, and a wait would break the capture (see
// CudaErrorSeverity).
class CaptureMark {
 public:
  CaptureMark();
  ~CaptureMark();
  CaptureMark(const CaptureMark&) = delete;
  CaptureMark& operator=(const CaptureMark&) = delete;
  static bool active();
};

class CudaDeviceImpl final : public Device, private DeviceRuntime {
 public:
  static absl::StatusOr<std::shared_ptr<CudaDeviceImpl>> Create(const CudaDeviceOptions& o);
  ~CudaDeviceImpl() override;

  const DeviceInfo& info() const override { return info_; }
  absl::StatusOr<DeviceBuffer> Allocate(uint64_t bytes) override;
  void Free(DeviceBuffer buffer) override;
  absl::StatusOr<std::unique_ptr<Stream>> CreateStream() override;
  MemoryInfo memory() const override;
  DeviceCounters counters() const override {
    DeviceCounters counters = counters_.Snapshot();
    counters.failures = health_.failures();
    counters.resets = health_.resets();
    return counters;
  }
  bool lost() const override { return health_.lost(); }
  // Each stream's staging ring, and the read arenas of all of them up to their limit.
  HostBytes HostMemoryBound(uint32_t streams) const override {
    return {.staging = CudaPinnedBound(streams, pinned_read_limit_)};
  }

  // Converts a CUDA error into a Status naming the call and its place; a sticky error marks
  // the device failed (Unavailable from then on, for every session, until a reset).
  absl::Status Fail(cudaError_t error, const char* expr, const char* file, int line);
  // The same for a call whose status nobody waits for (a free, a destructor's wait): a fault
  // still marks the device failed at once, and the log says what failed. No-op on success.
  void FailUnawaited(cudaError_t error, const char* expr, const char* file, int line);
  // Unavailable when the device failed or was reset since `epoch`.
  absl::Status Usable(uint64_t epoch) const { return health_.Usable(epoch); }
  uint64_t epoch() const { return health_.epoch(); }

  // Operations hold this shared; a reset holds it exclusively, so no call runs across one.
  absl::Mutex& use_mutex() ABSL_LOCK_RETURNED(health_.use_mutex()) {
    return health_.use_mutex();
  }
  // A stream capture holds this exclusively; calls that may synchronize the device (cudaMalloc,
  // cudaFree, cudaHostAlloc, cudaFreeHost, stream creation and destruction) and calls that may
  // load a kernel lazily (CUB's) hold it shared. A device-wide synchronization from another
  // session's thread during a capture is invalid and can invalidate the capture, whatever the
  // capture mode.
  absl::Mutex& capture_mutex() ABSL_LOCK_RETURNED(capture_mu_) { return capture_mu_; }
  CounterSet& counter_set() { return counters_; }
  ThreadPool& copy_pool() { return copy_pool_; }
  int max_blocks() const { return max_blocks_; }
  int ordinal() const { return ordinal_; }
  // Whether repeated groups run as WHILE graph loops (probed at creation and after a reset);
  // else one graph launch per iteration, with the host reading a loop guard between iterations.
  bool graph_loops() const { return health_.graph_loops(); }

  // Enqueues every pass of `step` (its portable form) on `stream`.
  absl::Status EnqueuePasses(const PlannedStep& step, cudaStream_t stream);

  // Device memory a stream holds for its own work: counted in `used` and `scratch`, and
  // against the device's limit (ResourceExhausted past it).
  absl::Status ReserveScratch(uint64_t bytes);
  void ReleaseScratch(uint64_t bytes);
  // Page-locked host memory held for transfers, counted in the host_pinned figure: allocated
  // (counted on success), and freed (uncounted; freed only while `context_alive`: memory of a
  // context that a reset destroyed went with it).
  cudaError_t AllocHostPinned(void** at, uint64_t bytes, unsigned flags);
  void FreeHostPinned(void* at, uint64_t bytes, bool context_alive);
  // Room for `bytes` more of read arena, of all streams together
  // (CudaDeviceOptions::pinned_read_bytes): false when there is none (the read goes through
  // the stream's ring). Thread-safe.
  bool ReservePinnedReads(uint64_t bytes);
  void ReleasePinnedReads(uint64_t bytes);

  // See FailCudaDeviceForTesting (report) and BreakCudaContextForTesting (not).
  absl::Status FailForTesting(bool report);

  // The CUDA runtime selects the device per host thread: every entry point selects ours.
  void Select() const { cudaSetDevice(ordinal_); }

 private:
  CudaDeviceImpl(const CudaDeviceOptions& o, uint64_t limit);

  // DeviceRuntime: what the recovery policy (health_) asks of CUDA.
  ProbeResult ProbeGraphLoops() override;
  absl::Status Reset() override;
  bool Responsive() override;

  // The device's own state on the current context: the zero stream, the word Responsive()
  // writes, and every kernel loaded (CUB's by running them once). Internal on failure.
  absl::Status MakeOwnState() ABSL_EXCLUSIVE_LOCKS_REQUIRED(zero_mu_);

  const int ordinal_;
  const bool fault_probe_;  // see CudaDeviceOptions::fault_probe_for_testing
  DeviceInfo info_;         // const after construction
  int max_blocks_ = 0;      // const after construction
  MemoryAccountant memory_;  // own locking
  std::atomic<uint64_t> scratch_{0};
  std::atomic<uint64_t> host_pinned_{0};
  const uint64_t pinned_read_limit_;
  std::atomic<uint64_t> pinned_reads_{0};  // read arena bytes of all streams
  CounterSet counters_;   // own locking
  ThreadPool copy_pool_;  // own locking
  DeviceHealth health_;   // own locking; holds the use mutex

  absl::Mutex capture_mu_ ABSL_ACQUIRED_AFTER(health_.use_mutex());
  mutable absl::Mutex state_mu_ ABSL_ACQUIRED_AFTER(health_.use_mutex());
  // Live allocations: size and generation (epoch). A reset forgets them all: they died with
  // the context, and their addresses may come back for new buffers.
  struct Allocation {
    uint64_t bytes;
    uint64_t epoch;
  };
  absl::flat_hash_map<void*, Allocation> allocations_ ABSL_GUARDED_BY(state_mu_);
  absl::Mutex zero_mu_ ABSL_ACQUIRED_AFTER(health_.use_mutex());
  cudaStream_t zero_stream_ ABSL_GUARDED_BY(zero_mu_) = nullptr;  // zeroes new buffers
  uint32_t* probe_word_ ABSL_GUARDED_BY(zero_mu_) = nullptr;     // written by Responsive()
  // Work of the device's own (the probe, CUB's first run) did not finish within its bounded
  // wait and may still run: until a reset, nothing may wait for the device, the destructor's
  // frees included (cudaFree waits for the whole device).
  std::atomic<bool> hung_{false};
};

}  // namespace sluice

#endif  // SLUICE_ENGINE_CUDA_DEVICE_IMPL_H_
