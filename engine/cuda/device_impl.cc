#include "sluice/engine/cuda/device_impl.h"

#include <algorithm>
#include <memory>
#include <string>
#include <thread>
#include <utility>

#include "absl/strings/str_format.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "sluice/base/log.h"
#include "sluice/base/status_macros.h"
#include "sluice/engine/cuda/errors.h"
#include "sluice/engine/cuda/stream.h"
#include "sluice/kernels/catalog.h"
#include "sluice/kernels/cuda_launcher.h"
#include "sluice/kernels/cuda_loops.h"
#include "sluice/kernels/cuda_wait.h"

namespace sluice {
namespace {

thread_local bool t_capturing = false;

std::string UuidString(const cudaUUID_t& uuid) {
  const auto* b = reinterpret_cast<const unsigned char*>(uuid.bytes);
  return absl::StrFormat(
      "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1],
      b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
}

// Destroys the context of GPU `ordinal` on a thread of its own; false when that has not
// finished after `limit` (the thread is left to finish, or not, on its own: it touches nothing
// but the driver).
bool ResetContextWithin(int ordinal, std::chrono::milliseconds limit) {
  auto done = std::make_shared<absl::Notification>();
  std::thread([ordinal, done] {
    // On a failed context selecting the device reports the failure; the reset is still due.
    cudaSetDevice(ordinal);
    cudaDeviceReset();
    cudaGetLastError();
    done->Notify();
  }).detach();
  return done->WaitForNotificationWithTimeout(absl::FromChrono(limit));
}

}  // namespace

CaptureMark::CaptureMark() { t_capturing = true; }
CaptureMark::~CaptureMark() { t_capturing = false; }
bool CaptureMark::active() { return t_capturing; }

CudaDeviceImpl::CudaDeviceImpl(const CudaDeviceOptions& o, uint64_t limit)
    : ordinal_(o.ordinal),
      fault_probe_(o.fault_probe_for_testing),
      memory_(limit),
      pinned_read_limit_(o.pinned_read_bytes),
      copy_pool_(o.copy_threads),
      health_(absl::StrFormat("GPU %d", o.ordinal), this) {}

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

absl::Status CudaDeviceImpl::EnqueuePasses(const PlannedStep& step, cudaStream_t stream) {
  for (const PassLaunch& pass : step.passes) {
    CUDA_RETURN_IF_ERROR(this, LaunchOnCuda(pass.body, step.args, pass.threads, stream,
                                            max_blocks_));
  }
  return absl::OkStatus();
}

cudaError_t CudaDeviceImpl::AllocHostPinned(void** at, uint64_t bytes, unsigned flags) {
  const cudaError_t err = cudaHostAlloc(at, bytes, flags);
  if (err != cudaSuccess) {
    *at = nullptr;
    return err;
  }
  host_pinned_.fetch_add(bytes);
  return cudaSuccess;
}

void CudaDeviceImpl::FreeHostPinned(void* at, uint64_t bytes, bool context_alive) {
  if (at == nullptr) return;
  if (context_alive) cudaFreeHost(at);
  host_pinned_.fetch_sub(bytes);
}

bool CudaDeviceImpl::ReservePinnedReads(uint64_t bytes) {
  uint64_t held = pinned_reads_.load();
  do {
    if (bytes > pinned_read_limit_ || held > pinned_read_limit_ - bytes) return false;
  } while (!pinned_reads_.compare_exchange_weak(held, held + bytes));
  return true;
}

void CudaDeviceImpl::ReleasePinnedReads(uint64_t bytes) { pinned_reads_.fetch_sub(bytes); }

absl::Status CudaDeviceImpl::Fail(cudaError_t error, const char* expr, const char* file,
                                  int line) {
  const std::string what = absl::StrFormat("%s:%d: %s: %s (%s)", file, line, expr,
                                           cudaGetErrorName(error), cudaGetErrorString(error));
  cudaGetLastError();  // clears a non-sticky error; a sticky one stays until the reset
  absl::Status otherwise = error == cudaErrorMemoryAllocation
                               ? absl::ResourceExhaustedError(what)
                               : absl::InternalError(what);
  return health_.Fail(CudaErrorSeverity(error, CaptureMark::active()), what, std::move(otherwise));
}

void CudaDeviceImpl::FailUnawaited(cudaError_t error, const char* expr, const char* file,
                                   int line) {
  if (error == cudaSuccess) return;
  // The log and every session's next call say what happened.
  const absl::Status status = Fail(error, expr, file, line);
  Log("GPU %d: %s", ordinal_, status.message());
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
  // A kernel that never ends (what a probe that timed out leaves behind: hung_) can hold
  // cudaDeviceReset for ever. Then it runs on a thread of its own, and if it has not finished in
  // bounded time the device is lost to the process, and the session that asked is told so.
  Select();
  if (!hung_.load()) {
    cudaDeviceReset();
  } else if (!ResetContextWithin(ordinal_, kBoundedWait)) {
    // The context is still there, and still busy: the destructor leaves it (hung_ stays).
    return absl::DeadlineExceededError(absl::StrFormat(
        "cudaDeviceReset did not finish within %d ms", kBoundedWait.count()));
  }
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
  if (const cudaError_t err = cudaSetDevice(ordinal_); err != cudaSuccess) {
    cudaGetLastError();
    return absl::InternalError(
        absl::StrFormat("cannot select the GPU after the reset: %s", cudaGetErrorName(err)));
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
  // Often the first call to see another session's fault: the device fails now, not one
  // operation later.
  FailUnawaited(err, "cudaFree", __FILE__, __LINE__);
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
