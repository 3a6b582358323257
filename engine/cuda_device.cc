#include "engine/cuda_device.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <list>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "base/log.h"
#include "base/status_macros.h"
#include "base/thread_pool.h"
#include "kernels/catalog.h"
#include "kernels/cuda_launcher.h"
#include "kernels/cuda_loops.h"
#include "kernels/cuda_wait.h"
#include "engine/cuda_errors.h"
#include "engine/device_health.h"

namespace sluice {
namespace {

// Pinned staging: each stream owns a ring of slots; an upload fills one slot on the host (with
// every core) while the previous slot's DMA runs.
constexpr uint64_t kSlotBytes = 8 << 20;
constexpr int kSlots = 4;
// Reads land in a pinned arena and reach the caller at Synchronize; larger reads go through
// the staging ring in pieces.
constexpr uint64_t kArenaBlock = 4 << 20;
constexpr uint64_t kMaxArenaBytes = 256 << 20;
// Repeated groups captured as CUDA graphs, per stream.
constexpr size_t kMaxGraphs = 8;
// Iterations one graph launch runs on the device; at most two launches are in flight, so a
// cancellation (checked between launches) takes effect within a batch or two.
constexpr uint32_t kReplayBatch = 64;

// How long the device waits, at most, on its own small work (the graph-loop probe, running
// CUB once, the check that a context still runs work).
constexpr std::chrono::milliseconds kBoundedWait{10000};

// Set while this thread captures a stream into a graph (see CudaErrorSeverity).
thread_local bool t_capturing = false;

std::string UuidString(const cudaUUID_t& uuid) {
  const auto* b = reinterpret_cast<const unsigned char*>(uuid.bytes);
  return absl::StrFormat(
      "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1],
      b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
}

class CudaDeviceImpl;

// Returns the converted status from the enclosing function when a CUDA call fails.
#define CUDA_RETURN_IF_ERROR(device, expr)                                   \
  do {                                                                       \
    const cudaError_t sluice_cuda_error_ = (expr);                           \
    if (sluice_cuda_error_ != cudaSuccess) {                                 \
      return (device)->Fail(sluice_cuda_error_, #expr, __FILE__, __LINE__);  \
    }                                                                        \
  } while (0)

class CudaStreamImpl;

class CudaDeviceImpl final : public Device, private DeviceRuntime {
 public:
  static absl::StatusOr<std::shared_ptr<CudaDeviceImpl>> Create(const CudaDeviceOptions& o);
  ~CudaDeviceImpl() override;

  const DeviceInfo& info() const override { return info_; }
  absl::StatusOr<DeviceBuffer> Allocate(uint64_t bytes) override;
  void Free(DeviceBuffer buffer) override;
  absl::StatusOr<std::unique_ptr<Stream>> CreateStream() override;
  MemoryInfo memory() const override;
  DeviceCounters counters() const override { return counters_.Snapshot(); }
  bool lost() const override { return health_.lost(); }

  // Converts a CUDA error into a Status naming the call and its place; a sticky error marks
  // the device failed (Unavailable from then on, for every session, until a reset).
  absl::Status Fail(cudaError_t error, const char* expr, const char* file, int line);
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

  // Device memory a stream or the device holds for its own work: counted in `used` and
  // `scratch`, and against the device's limit (ResourceExhausted past it).
  absl::Status ReserveScratch(uint64_t bytes);
  void ReleaseScratch(uint64_t bytes);
  // Page-locked host memory held for transfers, for the figures.
  void AddHostPinned(uint64_t bytes) { host_pinned_.fetch_add(bytes); }
  void ReleaseHostPinned(uint64_t bytes) { host_pinned_.fetch_sub(bytes); }

  // See FailCudaDeviceForTesting (report) and BreakCudaContextForTesting (not).
  absl::Status FailForTesting(bool report);

  // The CUDA runtime selects the device per host thread: every entry point selects ours.
  void Select() const { cudaSetDevice(ordinal_); }

 private:
  CudaDeviceImpl(const CudaDeviceOptions& o, uint64_t limit)
      : ordinal_(o.ordinal),
        fault_probe_(o.fault_probe_for_testing),
        memory_(limit),
        copy_pool_(o.copy_threads),
        health_(absl::StrFormat("GPU %d", o.ordinal), this) {}

  // DeviceRuntime: what the recovery policy (health_) asks of CUDA.
  ProbeResult ProbeGraphLoops() override;
  absl::Status Reset() override;
  bool Responsive() override;

  // The device's own state on the current context: the zero stream, the word Responsive()
  // writes, and every kernel loaded (CUB's by running them once). Internal on failure.
  absl::Status MakeOwnState() ABSL_EXCLUSIVE_LOCKS_REQUIRED(zero_mu_);

  const int ordinal_;
  const bool fault_probe_;  // see CudaDeviceOptions::fault_probe_for_testing
  DeviceInfo info_;       // const after construction
  int max_blocks_ = 0;    // const after construction
  MemoryAccountant memory_;  // own locking
  std::atomic<uint64_t> scratch_{0};
  std::atomic<uint64_t> host_pinned_{0};
  CounterSet counters_;      // own locking
  ThreadPool copy_pool_;     // own locking
  DeviceHealth health_;      // own locking; holds the use mutex

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

// One session's ordered queue of device work.
class CudaStreamImpl final : public Stream {
 public:
  CudaStreamImpl(CudaDeviceImpl* device, cudaStream_t stream, uint64_t epoch)
      : device_(device), stream_(stream), epoch_(epoch) {}
  ~CudaStreamImpl() override;

  absl::Status Init();
  absl::Status CopyIn(DeviceBuffer dst, uint64_t offset, absl::Span<const uint8_t> src) override;
  absl::Status CopyOut(DeviceBuffer src, uint64_t offset, absl::Span<uint8_t> dst) override;
  absl::Status Launch(const PlannedStep& step) override;
  absl::Status LaunchRepeated(absl::Span<const PlannedStep> steps, uint32_t count,
                              const std::atomic<bool>* cancel) override;
  absl::Status Synchronize() override;
  absl::Status Usable() const override { return device_->Usable(epoch_); }

 private:
  struct Slot {
    uint8_t* host = nullptr;  // pinned
    cudaEvent_t done = nullptr;
  };
  struct PendingRead {
    const uint8_t* pinned;
    absl::Span<uint8_t> dst;
  };
  struct Graph {
    std::string key;
    cudaGraph_t graph = nullptr;  // destroyed with `exec`
    cudaGraphExec_t exec = nullptr;
  };

  absl::Status Passes(const PlannedStep& step);
  // CUB forms of scan and compaction; false when the step is not one of them.
  absl::StatusOr<bool> LaunchWithCub(const PlannedStep& step);
  absl::Status EnsureCubTemp(size_t bytes)
      ABSL_SHARED_LOCKS_REQUIRED(device_->capture_mutex());
  // Page-locked host memory counted in the device's figures; false when CUDA refuses it.
  cudaError_t AllocPinned(void** at, uint64_t bytes, unsigned flags);
  // A pinned slot with at least `n` free bytes at its cursor (waits for its last DMA).
  absl::StatusOr<uint8_t*> Stage(uint64_t n);
  absl::StatusOr<uint8_t*> ArenaSpace(uint64_t n);
  // The cached executable graph of `steps`: as a loop (see BuildLoop), or one iteration.
  absl::StatusOr<cudaGraphExec_t> GraphFor(absl::Span<const PlannedStep> steps, bool loop);
  // Fills `graph` with the loop that runs `steps` while iterations remain and the guard holds.
  absl::Status BuildLoop(cudaGraph_t graph, absl::Span<const PlannedStep> steps);
  // Repeats by launching a one-iteration graph `count` times; the host reads a loop guard.
  absl::Status ReplayIterations(absl::Span<const PlannedStep> steps, uint32_t count,
                                const std::atomic<bool>* cancel);
  // Captures what `enqueue` launches on this stream into `graph`.
  template <class Enqueue>
  absl::Status CaptureInto(cudaGraph_t graph, Enqueue enqueue);

  CudaDeviceImpl* const device_;
  const cudaStream_t stream_;
  const uint64_t epoch_;
  Slot slots_[kSlots];
  int slot_ = 0;              // slot in use
  uint64_t slot_used_ = 0;    // bytes of it taken by this operation
  std::vector<std::pair<uint8_t*, uint64_t>> arena_;  // pinned blocks for reads
  size_t arena_block_ = 0;
  uint64_t arena_used_ = 0;
  std::vector<PendingRead> pending_;
  void* cub_temp_ = nullptr;
  size_t cub_temp_bytes_ = 0;
  uint64_t scratch_bytes_ = 0;  // device memory this stream holds, as counted by the device
  uint64_t pinned_bytes_ = 0;   // page-locked host memory this stream holds, likewise
  std::list<Graph> graphs_;  // most recently used first
  uint32_t* loop_remaining_ = nullptr;  // device word: iterations left in the running launch
  uint32_t* loop_stopped_ = nullptr;    // mapped pinned word: a loop guard read zero
  uint32_t* guard_host_ = nullptr;      // pinned: a loop guard read back without graph loops
  cudaEvent_t batch_done_[2] = {nullptr, nullptr};
};

// ---- CudaDeviceImpl -------------------------------------------------------------------------

absl::StatusOr<std::shared_ptr<CudaDeviceImpl>> CudaDeviceImpl::Create(
    const CudaDeviceOptions& o) {
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess || count == 0) {
    cudaGetLastError();
    return absl::UnavailableError(absl::StrFormat(
        "no usable GPU: %s", err != cudaSuccess ? cudaGetErrorString(err) : "none found"));
  }
  if (o.ordinal < 0 || o.ordinal >= count) {
    return absl::InvalidArgumentError(
        absl::StrFormat("GPU %d does not exist (%d found)", o.ordinal, count));
  }
  if (cudaSetDevice(o.ordinal) != cudaSuccess) {
    cudaGetLastError();
    return absl::UnavailableError(absl::StrFormat("cannot use GPU %d", o.ordinal));
  }
  cudaDeviceProp prop{};
  size_t free_bytes = 0, total_bytes = 0;
  if (cudaGetDeviceProperties(&prop, o.ordinal) != cudaSuccess ||
      cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess) {
    cudaGetLastError();
    return absl::UnavailableError("cannot query the GPU");
  }
  const uint64_t limit = o.memory_limit != 0 ? o.memory_limit : free_bytes / 10 * 9;
  std::shared_ptr<CudaDeviceImpl> device(new CudaDeviceImpl(o, limit));
  device->info_.kind = "cuda";
  device->info_.name = absl::StrFormat("%s, %d SMs, %.1f GiB", prop.name,
                                       prop.multiProcessorCount, total_bytes / 1073741824.0);
  device->info_.id = absl::StrFormat("cuda:%s", UuidString(prop.uuid));
  device->info_.compute_units = static_cast<uint32_t>(prop.multiProcessorCount);
  device->max_blocks_ = std::max(1, prop.multiProcessorCount * 8);
  {
    absl::MutexLock zero(&device->zero_mu_);
    if (absl::Status made = device->MakeOwnState(); !made.ok()) {
      return absl::UnavailableError(absl::StrFormat("cannot use GPU %d: %s", o.ordinal,
                                                    made.message()));
    }
  }
  // A probe that faults costs graph loops, not the GPU: Start resets the device and goes on
  // without them, and fails only when that reset does.
  if (absl::Status started = device->health_.Start(o.graph_loops); !started.ok()) {
    return started;
  }
  device->info_.version = absl::StrFormat(
      "sluice-cuda/%s catalog/%s sm_%d%d %s", SLUICE_VERSION,
      KernelCatalog::Builtin().fingerprint(), prop.major, prop.minor,
      device->graph_loops() ? "graph-loops" : "graph-per-iteration");
  return device;
}

absl::Status CudaDeviceImpl::MakeOwnState() {
  const auto failed = [](const char* what, cudaError_t err) {
    cudaGetLastError();
    return absl::InternalError(absl::StrFormat("%s: %s", what, cudaGetErrorString(err)));
  };
  if (cudaError_t err = LoadCudaKernels(); err != cudaSuccess) {
    return failed("loading Sluice's kernels", err);
  }
  if (cudaError_t err = cudaStreamCreateWithFlags(&zero_stream_, cudaStreamNonBlocking);
      err != cudaSuccess) {
    zero_stream_ = nullptr;
    return failed("creating a stream", err);
  }
  // Four bytes of the device's own, not counted: a reset must never fail for want of them.
  if (cudaError_t err = cudaMalloc(reinterpret_cast<void**>(&probe_word_), sizeof(uint32_t));
      err != cudaSuccess) {
    probe_word_ = nullptr;
    return failed("allocating a word", err);
  }
  // CUB's kernels load here, outside any capture. A fault (or a run that does not finish)
  // means this GPU cannot serve; any other error is left to the steps that use CUB to report.
  if (cudaError_t err = RunCudaLibrariesOnce(zero_stream_, kBoundedWait); err != cudaSuccess) {
    if (err == cudaErrorTimeout) hung_.store(true);
    if (CudaErrorSeverity(err, /*capturing=*/false) != DeviceHealth::Severity::kError ||
        err == cudaErrorTimeout) {
      return failed("running CUB once", err);
    }
    cudaGetLastError();
    Log("GPU %d: running CUB once failed (%s); scan, sort and compaction steps may fail",
        ordinal_, cudaGetErrorString(err));
  }
  return absl::OkStatus();
}

CudaDeviceImpl::~CudaDeviceImpl() {
  if (hung_.load()) return;  // the context goes with the process
  Select();
  {
    absl::MutexLock lock(&state_mu_);
    for (auto& [ptr, allocation] : allocations_) cudaFree(ptr);
  }
  absl::MutexLock lock(&zero_mu_);
  if (probe_word_ != nullptr) cudaFree(probe_word_);
  if (zero_stream_ != nullptr) cudaStreamDestroy(zero_stream_);
}

MemoryInfo CudaDeviceImpl::memory() const {
  MemoryInfo info = memory_.info();
  info.scratch = scratch_.load();
  info.host_pinned = host_pinned_.load();
  return info;
}

absl::Status CudaDeviceImpl::ReserveScratch(uint64_t bytes) {
  RETURN_IF_ERROR(memory_.Reserve(bytes, "GPU memory"));
  scratch_.fetch_add(bytes);
  return absl::OkStatus();
}

void CudaDeviceImpl::ReleaseScratch(uint64_t bytes) {
  scratch_.fetch_sub(bytes);
  memory_.Release(bytes);
}

absl::Status CudaDeviceImpl::Fail(cudaError_t error, const char* expr, const char* file,
                                  int line) {
  const std::string what = absl::StrFormat("%s:%d: %s: %s (%s)", file, line, expr,
                                           cudaGetErrorName(error), cudaGetErrorString(error));
  cudaGetLastError();  // clears a non-sticky error; a sticky one stays until the reset
  absl::Status otherwise = error == cudaErrorMemoryAllocation
                               ? absl::ResourceExhaustedError(what)
                               : absl::InternalError(what);
  return health_.Fail(CudaErrorSeverity(error, t_capturing), what, std::move(otherwise));
}

DeviceRuntime::ProbeResult CudaDeviceImpl::ProbeGraphLoops() {
  Select();
  absl::MutexLock zero(&zero_mu_);
  cudaError_t err = cudaSuccess;
  if (fault_probe_) {
    err = LaunchTrapForTesting(zero_stream_);
    if (err == cudaSuccess) err = SynchronizeWithin(zero_stream_, kBoundedWait);
  } else {
    err = ::sluice::ProbeGraphLoops(zero_stream_, kBoundedWait);
  }
  cudaGetLastError();
  if (err == cudaErrorTimeout) hung_.store(true);
  if (err == cudaSuccess) return {ProbeOutcome::kLoops, ""};
  return {CudaProbeOutcome(err),
          absl::StrFormat("%s: %s", cudaGetErrorName(err), cudaGetErrorString(err))};
}

bool CudaDeviceImpl::Responsive() {
  Select();
  absl::MutexLock zero(&zero_mu_);
  if (zero_stream_ == nullptr || probe_word_ == nullptr) return false;
  cudaError_t err = cudaMemsetAsync(probe_word_, 0, sizeof(uint32_t), zero_stream_);
  if (err == cudaSuccess) err = SynchronizeWithin(zero_stream_, kBoundedWait);
  cudaGetLastError();
  // Still running at the limit: busy with other sessions' work, not broken (a broken context
  // fails every call at once).
  return err == cudaSuccess || err == cudaErrorTimeout;
}

absl::Status CudaDeviceImpl::Reset() {
  Select();
  cudaDeviceReset();
  cudaGetLastError();
  {
    absl::MutexLock lock(&state_mu_);
    for (auto& [ptr, allocation] : allocations_) memory_.Release(allocation.bytes);
    allocations_.clear();
  }
  absl::MutexLock zero(&zero_mu_);
  zero_stream_ = nullptr;
  probe_word_ = nullptr;
  hung_.store(false);  // whatever ran went with the context
  if (cudaSetDevice(ordinal_) != cudaSuccess) {
    cudaGetLastError();
    return absl::InternalError("cannot select the GPU");
  }
  return MakeOwnState();
}

absl::Status CudaDeviceImpl::FailForTesting(bool report) {
  absl::ReaderMutexLock use(&use_mutex());
  Select();
  cudaError_t err;
  {
    absl::MutexLock zero(&zero_mu_);
    err = LaunchTrapForTesting(zero_stream_);
    if (err == cudaSuccess) err = cudaStreamSynchronize(zero_stream_);
  }
  if (err == cudaSuccess) return absl::InternalError("the trapping kernel did not fail");
  if (!report) {
    cudaGetLastError();
    return absl::OkStatus();
  }
  return Fail(err, "LaunchTrapForTesting", __FILE__, __LINE__);
}

absl::StatusOr<DeviceBuffer> CudaDeviceImpl::Allocate(uint64_t bytes) {
  absl::ReaderMutexLock use(&use_mutex());
  Select();
  const uint64_t epoch = health_.epoch();
  if (absl::Status usable = Usable(epoch); !usable.ok()) return usable;
  if (absl::Status reserved = memory_.Reserve(bytes, "GPU memory"); !reserved.ok()) {
    return reserved;
  }
  void* ptr = nullptr;
  cudaError_t err;
  {
    absl::ReaderMutexLock no_capture(&capture_mu_);
    err = cudaMalloc(&ptr, bytes == 0 ? 1 : bytes);
  }
  if (err != cudaSuccess) {
    memory_.Release(bytes);
    absl::Status status = Fail(err, "cudaMalloc", __FILE__, __LINE__);
    if (err == cudaErrorMemoryAllocation) {
      return absl::ResourceExhaustedError(absl::StrFormat(
          "the GPU refused an allocation of %d bytes (%s)", bytes, status.message()));
    }
    return status;
  }
  // New buffers read as zero, so no session ever sees another's data.
  cudaError_t zeroed;
  {
    absl::MutexLock zero(&zero_mu_);
    zeroed = cudaMemsetAsync(ptr, 0, bytes, zero_stream_);
    if (zeroed == cudaSuccess) zeroed = cudaStreamSynchronize(zero_stream_);
  }
  if (zeroed != cudaSuccess) {
    {
      absl::ReaderMutexLock no_capture(&capture_mu_);
      cudaFree(ptr);
    }
    memory_.Release(bytes);
    return Fail(zeroed, "cudaMemsetAsync", __FILE__, __LINE__);
  }
  absl::MutexLock lock(&state_mu_);
  allocations_.emplace(ptr, Allocation{bytes, epoch});
  counters_.AddAllocation();
  return DeviceBuffer{static_cast<uint8_t*>(ptr), bytes, epoch};
}

void CudaDeviceImpl::Free(DeviceBuffer buffer) {
  absl::ReaderMutexLock use(&use_mutex());
  {
    absl::MutexLock lock(&state_mu_);
    auto it = allocations_.find(buffer.data);
    // Gone with a reset, or the address now belongs to a newer buffer: nothing to free.
    if (it == allocations_.end() || it->second.epoch != buffer.generation) return;
    memory_.Release(it->second.bytes);
    allocations_.erase(it);
  }
  // cudaFree waits for the device: never under state_mu_, which Allocate needs.
  Select();
  cudaError_t err;
  {
    absl::ReaderMutexLock no_capture(&capture_mu_);
    err = cudaFree(buffer.data);
  }
  counters_.AddFree();
  if (err != cudaSuccess) {
    // Often the first call to see another session's fault: the device fails now, not one
    // operation later. Nobody waits for this status; the log and every session's next call
    // say what happened.
    const absl::Status status = Fail(err, "cudaFree", __FILE__, __LINE__);
    Log("GPU %d: freeing %d bytes failed: %s", ordinal_, buffer.bytes, status.message());
  }
}

absl::StatusOr<std::unique_ptr<Stream>> CudaDeviceImpl::CreateStream() {
  if (absl::Status reset = health_.ResetIfFailed(); !reset.ok()) return reset;
  // Declared before the lock: a stream that fails to initialize is destroyed after the lock is
  // released (its destructor takes the lock itself).
  std::unique_ptr<CudaStreamImpl> impl;
  absl::Status init;
  {
    absl::ReaderMutexLock use(&use_mutex());
    absl::ReaderMutexLock no_capture(&capture_mu_);
    Select();
    if (absl::Status usable = Usable(health_.epoch()); !usable.ok()) return usable;
    cudaStream_t stream = nullptr;
    CUDA_RETURN_IF_ERROR(this, cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    impl = std::make_unique<CudaStreamImpl>(this, stream, health_.epoch());
    init = impl->Init();
  }
  if (!init.ok()) return init;
  return std::unique_ptr<Stream>(std::move(impl));
}

// ---- CudaStreamImpl -------------------------------------------------------------------------

cudaError_t CudaStreamImpl::AllocPinned(void** at, uint64_t bytes, unsigned flags) {
  const cudaError_t err = cudaHostAlloc(at, bytes, flags);
  if (err != cudaSuccess) {
    *at = nullptr;
    return err;
  }
  pinned_bytes_ += bytes;
  device_->AddHostPinned(bytes);
  return cudaSuccess;
}

absl::Status CudaStreamImpl::Init() {
  for (Slot& slot : slots_) {
    CUDA_RETURN_IF_ERROR(device_, AllocPinned(reinterpret_cast<void**>(&slot.host), kSlotBytes,
                                              cudaHostAllocDefault));
    CUDA_RETURN_IF_ERROR(device_, cudaEventCreateWithFlags(&slot.done, cudaEventDisableTiming));
  }
  for (cudaEvent_t& e : batch_done_) {
    CUDA_RETURN_IF_ERROR(device_, cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  }
  // The loop words only where graph loops run: mapped pinned memory is needed for nothing else.
  if (device_->graph_loops()) {
    RETURN_IF_ERROR(device_->ReserveScratch(sizeof(uint32_t)));
    scratch_bytes_ += sizeof(uint32_t);
    CUDA_RETURN_IF_ERROR(device_, cudaMalloc(reinterpret_cast<void**>(&loop_remaining_),
                                             sizeof(uint32_t)));
    CUDA_RETURN_IF_ERROR(device_, AllocPinned(reinterpret_cast<void**>(&loop_stopped_),
                                              sizeof(uint32_t), cudaHostAllocMapped));
  }
  CUDA_RETURN_IF_ERROR(device_, AllocPinned(reinterpret_cast<void**>(&guard_host_),
                                            sizeof(uint32_t), cudaHostAllocDefault));
  return absl::OkStatus();
}

CudaStreamImpl::~CudaStreamImpl() {
  absl::ReaderMutexLock use(&device_->use_mutex());
  device_->ReleaseScratch(scratch_bytes_);
  device_->ReleaseHostPinned(pinned_bytes_);
  // After a reset every handle of this stream died with the old context: touch none of them.
  if (device_->epoch() != epoch_) return;
  absl::ReaderMutexLock no_capture(&device_->capture_mutex());
  device_->Select();
  cudaStreamSynchronize(stream_);
  for (Graph& g : graphs_) {
    cudaGraphExecDestroy(g.exec);
    cudaGraphDestroy(g.graph);
  }
  if (loop_remaining_ != nullptr) cudaFree(loop_remaining_);
  if (guard_host_ != nullptr) cudaFreeHost(guard_host_);
  if (loop_stopped_ != nullptr) cudaFreeHost(loop_stopped_);
  for (Slot& slot : slots_) {
    if (slot.done != nullptr) cudaEventDestroy(slot.done);
    if (slot.host != nullptr) cudaFreeHost(slot.host);
  }
  for (cudaEvent_t e : batch_done_) {
    if (e != nullptr) cudaEventDestroy(e);
  }
  for (auto& [block, bytes] : arena_) cudaFreeHost(block);
  if (cub_temp_ != nullptr) cudaFree(cub_temp_);
  cudaStreamDestroy(stream_);
  cudaGetLastError();
}

absl::StatusOr<uint8_t*> CudaStreamImpl::Stage(uint64_t n) {
  if (slot_used_ + n > kSlotBytes) {
    slot_ = (slot_ + 1) % kSlots;
    slot_used_ = 0;
    // Its previous DMA must be done before the host writes it again.
    CUDA_RETURN_IF_ERROR(device_, cudaEventSynchronize(slots_[slot_].done));
  }
  uint8_t* at = slots_[slot_].host + slot_used_;
  slot_used_ += n;
  return at;
}

absl::Status CudaStreamImpl::CopyIn(DeviceBuffer dst, uint64_t offset,
                                    absl::Span<const uint8_t> src) {
  absl::ReaderMutexLock use(&device_->use_mutex());
  device_->Select();
  if (absl::Status usable = device_->Usable(epoch_); !usable.ok()) return usable;
  uint64_t done = 0;
  while (done < src.size()) {
    const uint64_t n = std::min<uint64_t>(kSlotBytes, src.size() - done);
    absl::StatusOr<uint8_t*> staged = Stage(n);
    if (!staged.ok()) return staged.status();
    ParallelCopy(device_->copy_pool(), *staged, src.data() + done, n);
    CUDA_RETURN_IF_ERROR(device_, cudaMemcpyAsync(dst.data + offset + done, *staged, n,
                                                  cudaMemcpyHostToDevice, stream_));
    CUDA_RETURN_IF_ERROR(device_, cudaEventRecord(slots_[slot_].done, stream_));
    done += n;
  }
  device_->counter_set().AddUploaded(src.size());
  return absl::OkStatus();
}

absl::StatusOr<uint8_t*> CudaStreamImpl::ArenaSpace(uint64_t n) {
  while (arena_block_ < arena_.size() && arena_used_ + n > arena_[arena_block_].second) {
    ++arena_block_;
    arena_used_ = 0;
  }
  if (arena_block_ == arena_.size()) {
    uint64_t total = 0;
    for (const auto& [block, bytes] : arena_) total += bytes;
    const uint64_t size = std::max(kArenaBlock, n);
    if (total + size > kMaxArenaBytes) return static_cast<uint8_t*>(nullptr);
    void* block = nullptr;
    cudaError_t err;
    {
      absl::ReaderMutexLock no_capture(&device_->capture_mutex());
      err = AllocPinned(&block, size, cudaHostAllocDefault);
    }
    if (err != cudaSuccess) {
      cudaGetLastError();  // short of pinned memory: the caller reads through the staging ring
      return static_cast<uint8_t*>(nullptr);
    }
    arena_.emplace_back(static_cast<uint8_t*>(block), size);
    arena_used_ = 0;
  }
  uint8_t* at = arena_[arena_block_].first + arena_used_;
  arena_used_ += n;
  return at;
}

absl::Status CudaStreamImpl::CopyOut(DeviceBuffer src, uint64_t offset, absl::Span<uint8_t> dst) {
  absl::ReaderMutexLock use(&device_->use_mutex());
  device_->Select();
  if (absl::Status usable = device_->Usable(epoch_); !usable.ok()) return usable;
  device_->counter_set().AddDownloaded(dst.size());
  if (dst.empty()) return absl::OkStatus();
  absl::StatusOr<uint8_t*> pinned = ArenaSpace(dst.size());
  if (!pinned.ok()) return pinned.status();
  if (*pinned != nullptr) {
    CUDA_RETURN_IF_ERROR(device_, cudaMemcpyAsync(*pinned, src.data + offset, dst.size(),
                                                  cudaMemcpyDeviceToHost, stream_));
    pending_.push_back(PendingRead{*pinned, dst});
    return absl::OkStatus();
  }
  // Too large for the arena: through the staging ring, piece by piece. The waits are internal
  // to this copy; the operation still synchronizes once.
  uint64_t done = 0;
  while (done < dst.size()) {
    const uint64_t n = std::min<uint64_t>(kSlotBytes, dst.size() - done);
    absl::StatusOr<uint8_t*> staged = Stage(kSlotBytes);
    if (!staged.ok()) return staged.status();
    CUDA_RETURN_IF_ERROR(device_, cudaMemcpyAsync(*staged, src.data + offset + done, n,
                                                  cudaMemcpyDeviceToHost, stream_));
    CUDA_RETURN_IF_ERROR(device_, cudaEventRecord(slots_[slot_].done, stream_));
    CUDA_RETURN_IF_ERROR(device_, cudaEventSynchronize(slots_[slot_].done));
    ParallelCopy(device_->copy_pool(), dst.data() + done, *staged, n);
    done += n;
  }
  return absl::OkStatus();
}

absl::Status CudaStreamImpl::EnsureCubTemp(size_t bytes) {
  if (bytes <= cub_temp_bytes_) return absl::OkStatus();
  if (cub_temp_ != nullptr) {
    CUDA_RETURN_IF_ERROR(device_, cudaStreamSynchronize(stream_));
    cudaFree(cub_temp_);
    cub_temp_ = nullptr;
    device_->ReleaseScratch(cub_temp_bytes_);
    scratch_bytes_ -= cub_temp_bytes_;
    cub_temp_bytes_ = 0;
  }
  const size_t size = std::max<size_t>(bytes, 1 << 20);
  RETURN_IF_ERROR(device_->ReserveScratch(size));
  if (const cudaError_t err = cudaMalloc(&cub_temp_, size); err != cudaSuccess) {
    cub_temp_ = nullptr;
    device_->ReleaseScratch(size);
    return device_->Fail(err, "cudaMalloc", __FILE__, __LINE__);
  }
  scratch_bytes_ += size;
  cub_temp_bytes_ = size;
  return absl::OkStatus();
}

// CUB's temporary storage is an optimization: without memory for it the portable passes run.
absl::StatusOr<bool> CubOrPortable(const absl::Status& temp) {
  if (absl::IsResourceExhausted(temp)) return false;
  return temp;
}

absl::StatusOr<bool> CudaStreamImpl::LaunchWithCub(const PlannedStep& step) {
  const KernelArgs& a = step.args;
  if (step.passes.empty()) return false;
  const BodyId first = step.passes.front().body;
  if (first != BodyId::kScanU32BlockSums && first != BodyId::kSortU64Count0 &&
      first != BodyId::kCompactU32BlockCounts) {
    return false;
  }
  // CUB may load a kernel on first use (for a size not seen before), which can synchronize
  // the context: never while another session captures.
  absl::ReaderMutexLock no_capture(&device_->capture_mutex());
  if (first == BodyId::kScanU32BlockSums) {
    using kernels::ScanU32;
    const DeviceSpan<uint32_t> in = a.As<uint32_t>(ScanU32::kIn);
    size_t bytes = 0;
    CUDA_RETURN_IF_ERROR(device_, ExclusiveScanU32OnCuda(nullptr, &bytes, in.data, nullptr,
                                                         nullptr, in.size, stream_));
    if (absl::Status s = EnsureCubTemp(bytes); !s.ok()) return CubOrPortable(s);
    bytes = cub_temp_bytes_;
    CUDA_RETURN_IF_ERROR(device_, ExclusiveScanU32OnCuda(
                                      cub_temp_, &bytes, in.data, a.As<uint32_t>(ScanU32::kOut).data,
                                      a.As<uint32_t>(ScanU32::kTotal).data, in.size, stream_));
    return true;
  }
  if (first == BodyId::kSortU64Count0) {
    using kernels::SortU64;
    const uint64_t count = a.param[SortU64::kCount];
    const int end_bit = 8 * SortU64::Rounds(a.param[SortU64::kBits]);
    if (count == 0 || end_bit == 0) return true;
    uint64_t* keys = a.As<uint64_t>(SortU64::kKeys).data;
    uint64_t* alt = a.As<uint64_t>(SortU64::kAlt).data;
    // CUB reads and writes both buffers whole: only when they are distinct.
    if (keys == alt) return false;
    size_t bytes = 0;
    CUDA_RETURN_IF_ERROR(device_, SortU64OnCuda(nullptr, &bytes, keys, alt,
                                                static_cast<uint32_t>(count), end_bit, stream_));
    if (absl::Status s = EnsureCubTemp(bytes); !s.ok()) return CubOrPortable(s);
    bytes = cub_temp_bytes_;
    CUDA_RETURN_IF_ERROR(device_, SortU64OnCuda(cub_temp_, &bytes, keys, alt,
                                                static_cast<uint32_t>(count), end_bit, stream_));
    return true;
  }
  if (first == BodyId::kCompactU32BlockCounts) {
    using kernels::CompactU32;
    const DeviceSpan<uint32_t> values = a.As<uint32_t>(CompactU32::kValues);
    const DeviceSpan<uint32_t> out = a.As<uint32_t>(CompactU32::kOut);
    // CUB writes every kept value: only safe when `out` can hold them all and aliases no
    // input. Otherwise the portable passes run (and raise the overflow flag if it is short).
    const DeviceSpan<uint32_t> flags = a.As<uint32_t>(CompactU32::kFlags);
    if (out.size < values.size || out.data == values.data || out.data == flags.data) {
      return false;
    }
    size_t bytes = 0;
    CUDA_RETURN_IF_ERROR(device_, CompactU32OnCuda(nullptr, &bytes, values.data, nullptr,
                                                   nullptr, nullptr, values.size, stream_));
    if (absl::Status s = EnsureCubTemp(bytes); !s.ok()) return CubOrPortable(s);
    bytes = cub_temp_bytes_;
    CUDA_RETURN_IF_ERROR(device_, CompactU32OnCuda(cub_temp_, &bytes, values.data, flags.data,
                                                   out.data, a.As<uint32_t>(CompactU32::kCount).data,
                                                   values.size, stream_));
    return true;
  }
  return false;
}

absl::Status CudaStreamImpl::Passes(const PlannedStep& step) {
  for (const PassLaunch& pass : step.passes) {
    CUDA_RETURN_IF_ERROR(device_, LaunchOnCuda(pass.body, step.args, pass.threads, stream_,
                                               device_->max_blocks()));
  }
  return absl::OkStatus();
}

absl::Status CudaStreamImpl::Launch(const PlannedStep& step) {
  absl::ReaderMutexLock use(&device_->use_mutex());
  device_->Select();
  if (absl::Status usable = device_->Usable(epoch_); !usable.ok()) return usable;
  absl::StatusOr<bool> cub = LaunchWithCub(step);
  if (!cub.ok()) return cub.status();
  if (!*cub) {
    if (absl::Status s = Passes(step); !s.ok()) return s;
  }
  device_->counter_set().AddLaunches(step.passes.size());
  return absl::OkStatus();
}

absl::StatusOr<cudaGraphExec_t> CudaStreamImpl::GraphFor(absl::Span<const PlannedStep> steps,
                                                          bool loop) {
  // The key is everything a replay depends on: the form, bodies, thread rules, arguments (bound
  // device addresses and parameters) and the guard. Counts read on the device are not part of
  // it. Field by field: struct padding is not part of any value.
  std::string key;
  const auto put = [&key](const auto& field) {
    key.append(reinterpret_cast<const char*>(&field), sizeof(field));
  };
  put(loop);
  for (const PlannedStep& step : steps) {
    for (const BindingView& b : step.args.binding) {
      put(b.data);
      put(b.bytes);
    }
    for (uint64_t p : step.args.param) put(p);
    put(step.guard);
    put(step.passes.size());
    for (const PassLaunch& pass : step.passes) {
      put(pass.body);
      put(pass.threads.fixed);
      put(pass.threads.count_binding);
      put(pass.threads.count_index);
      put(pass.threads.divisor);
      put(pass.threads.cap);
      put(pass.threads.base_index);
    }
  }
  for (auto it = graphs_.begin(); it != graphs_.end(); ++it) {
    if (it->key == key) {
      graphs_.splice(graphs_.begin(), graphs_, it);
      return graphs_.front().exec;
    }
  }
  cudaGraph_t graph = nullptr;
  CUDA_RETURN_IF_ERROR(device_, cudaGraphCreate(&graph, 0));
  absl::Status built =
      loop ? BuildLoop(graph, steps) : CaptureInto(graph, [&]() -> absl::Status {
        for (const PlannedStep& step : steps) RETURN_IF_ERROR(Passes(step));
        return absl::OkStatus();
      });
  if (!built.ok()) {
    cudaGraphDestroy(graph);
    return built;
  }
  cudaGraphExec_t exec = nullptr;
  const cudaError_t err = cudaGraphInstantiate(&exec, graph, 0);
  if (err != cudaSuccess) {
    cudaGraphDestroy(graph);
    return device_->Fail(err, "cudaGraphInstantiate", __FILE__, __LINE__);
  }
  if (graphs_.size() == kMaxGraphs) {
    cudaGraphExecDestroy(graphs_.back().exec);
    cudaGraphDestroy(graphs_.back().graph);
    graphs_.pop_back();
  }
  graphs_.push_front(Graph{std::move(key), graph, exec});
  return exec;
}

template <class Enqueue>
absl::Status CudaStreamImpl::CaptureInto(cudaGraph_t graph, Enqueue enqueue) {
  absl::MutexLock capture(&device_->capture_mutex());
  CUDA_RETURN_IF_ERROR(device_, cudaStreamBeginCaptureToGraph(stream_, graph, nullptr, nullptr, 0,
                                                              cudaStreamCaptureModeThreadLocal));
  t_capturing = true;
  const absl::Status enqueued = enqueue();
  cudaGraph_t captured = nullptr;  // `graph` itself
  const cudaError_t ended = cudaStreamEndCapture(stream_, &captured);
  t_capturing = false;
  if (!enqueued.ok()) {
    cudaGetLastError();
    return enqueued;
  }
  CUDA_RETURN_IF_ERROR(device_, ended);
  return absl::OkStatus();
}

absl::Status CudaStreamImpl::BuildLoop(cudaGraph_t graph, absl::Span<const PlannedStep> steps) {
  // start -> WHILE(loop) { the group's passes; next }. `start` and `next` set the condition
  // from the iterations left (stored before each launch) and the guard word, so the device
  // runs a whole batch, or ends it early, with no host work per iteration.
  const uint32_t* guard = steps.front().guard;
  LoopWords words{.remaining = loop_remaining_, .stopped = nullptr};
  CUDA_RETURN_IF_ERROR(device_, cudaHostGetDevicePointer(reinterpret_cast<void**>(&words.stopped),
                                                         loop_stopped_, 0));
  cudaGraph_t body = nullptr;
  cudaGraphConditionalHandle loop{};
  CUDA_RETURN_IF_ERROR(device_, AddGraphLoop(graph, guard, words, &body, &loop));
  return CaptureInto(body, [&]() -> absl::Status {
    for (const PlannedStep& step : steps) RETURN_IF_ERROR(Passes(step));
    CUDA_RETURN_IF_ERROR(device_, LaunchLoopNext(loop, guard, words, stream_));
    return absl::OkStatus();
  });
}

absl::Status CudaStreamImpl::LaunchRepeated(absl::Span<const PlannedStep> steps, uint32_t count,
                                            const std::atomic<bool>* cancel) {
  absl::ReaderMutexLock use(&device_->use_mutex());
  device_->Select();
  if (absl::Status usable = device_->Usable(epoch_); !usable.ok()) return usable;
  if (count == 0 || steps.empty()) return absl::OkStatus();
  if (!device_->graph_loops() || loop_stopped_ == nullptr) {
    return ReplayIterations(steps, count, cancel);
  }
  // The group is captured once; each launch of the graph runs a batch of iterations on the
  // device, so the host's work is per batch, never per iteration.
  absl::StatusOr<cudaGraphExec_t> exec = GraphFor(steps, /*loop=*/true);
  if (!exec.ok()) return exec.status();
  uint64_t passes = 0;
  for (const PlannedStep& step : steps) passes += step.passes.size();
  // Every operation synchronizes before it returns, so no launch of this stream can write the
  // flag now.
  volatile uint32_t* const stopped = loop_stopped_;
  *stopped = 0;
  uint32_t enqueued = 0;
  for (uint32_t batch = 0; enqueued < count; ++batch) {
    if (batch >= 2) {
      // The launch two batches back must be done before another is enqueued; once a guard has
      // stopped a loop, the remaining batches would do nothing.
      CUDA_RETURN_IF_ERROR(device_, cudaEventSynchronize(batch_done_[batch % 2]));
      if (*stopped != 0) break;
    }
    if (cancel != nullptr && cancel->load(std::memory_order_relaxed)) {
      device_->counter_set().AddLaunches(passes * enqueued);
      return absl::CancelledError(absl::StrFormat(
          "repeated sequence cancelled with %d of %d iterations enqueued", enqueued, count));
    }
    const uint32_t n = std::min(kReplayBatch, count - enqueued);
    CUDA_RETURN_IF_ERROR(device_, LaunchStoreU32(loop_remaining_, n, stream_));
    CUDA_RETURN_IF_ERROR(device_, cudaGraphLaunch(*exec, stream_));
    CUDA_RETURN_IF_ERROR(device_, cudaEventRecord(batch_done_[batch % 2], stream_));
    enqueued += n;
  }
  // Passes enqueued: iterations a guard skipped within the last batches are counted too.
  device_->counter_set().AddLaunches(passes * enqueued);
  return absl::OkStatus();
}

absl::Status CudaStreamImpl::ReplayIterations(absl::Span<const PlannedStep> steps,
                                              uint32_t count, const std::atomic<bool>* cancel) {
  absl::StatusOr<cudaGraphExec_t> exec = GraphFor(steps, /*loop=*/false);
  if (!exec.ok()) return exec.status();
  const uint32_t* guard = steps.front().guard;
  uint64_t passes = 0;
  for (const PlannedStep& step : steps) passes += step.passes.size();
  uint32_t i = 0;
  for (; i < count; ++i) {
    if (guard == nullptr && i % kReplayBatch == 0 && i >= 2 * kReplayBatch) {
      // At most two batches of replays in flight, so a cancellation takes effect soon: wait for
      // the batch before the one just enqueued (its event was recorded after it).
      CUDA_RETURN_IF_ERROR(device_,
                           cudaEventSynchronize(batch_done_[(i / kReplayBatch + 1) % 2]));
    }
    if (cancel != nullptr && cancel->load(std::memory_order_relaxed)) {
      device_->counter_set().AddLaunches(passes * i);
      return absl::CancelledError(
          absl::StrFormat("repeated sequence cancelled after %d of %d iterations", i, count));
    }
    if (guard != nullptr) {
      // Without graph loops the host must see the guard: a 4-byte read and a wait.
      CUDA_RETURN_IF_ERROR(device_, cudaMemcpyAsync(guard_host_, guard, 4,
                                                    cudaMemcpyDeviceToHost, stream_));
      CUDA_RETURN_IF_ERROR(device_, cudaStreamSynchronize(stream_));
      if (*static_cast<volatile uint32_t*>(guard_host_) == 0) break;
    }
    CUDA_RETURN_IF_ERROR(device_, cudaGraphLaunch(*exec, stream_));
    if ((i + 1) % kReplayBatch == 0) {
      CUDA_RETURN_IF_ERROR(device_,
                           cudaEventRecord(batch_done_[((i + 1) / kReplayBatch) % 2], stream_));
    }
  }
  device_->counter_set().AddLaunches(passes * i);
  return absl::OkStatus();
}

absl::Status CudaStreamImpl::Synchronize() {
  absl::ReaderMutexLock use(&device_->use_mutex());
  device_->Select();
  device_->counter_set().AddSynchronization();
  // The caller's destinations are only valid until this returns: drop them on every path.
  std::vector<PendingRead> reads = std::move(pending_);
  pending_.clear();
  slot_used_ = 0;
  arena_block_ = 0;
  arena_used_ = 0;
  if (absl::Status usable = device_->Usable(epoch_); !usable.ok()) return usable;
  const cudaError_t err = cudaStreamSynchronize(stream_);
  if (err != cudaSuccess) return device_->Fail(err, "cudaStreamSynchronize", __FILE__, __LINE__);
  for (const PendingRead& r : reads) {
    ParallelCopy(device_->copy_pool(), r.dst.data(), r.pinned, r.dst.size());
  }
  return absl::OkStatus();
}

}  // namespace

bool CudaDeviceBuilt() { return true; }

int CudaDeviceCount() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return count;
}

absl::Status FailCudaDeviceForTesting(Device& device) {
  auto* cuda = dynamic_cast<CudaDeviceImpl*>(&device);
  if (cuda == nullptr) return absl::InvalidArgumentError("not a CUDA device");
  return cuda->FailForTesting(/*report=*/true);
}

absl::Status BreakCudaContextForTesting(Device& device) {
  auto* cuda = dynamic_cast<CudaDeviceImpl*>(&device);
  if (cuda == nullptr) return absl::InvalidArgumentError("not a CUDA device");
  return cuda->FailForTesting(/*report=*/false);
}

absl::StatusOr<std::shared_ptr<Device>> CreateCudaDevice(const CudaDeviceOptions& options) {
  absl::StatusOr<std::shared_ptr<CudaDeviceImpl>> device = CudaDeviceImpl::Create(options);
  if (!device.ok()) return device.status();
  return std::shared_ptr<Device>(std::move(*device));
}

}  // namespace sluice
