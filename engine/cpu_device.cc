#include "sluice/engine/cpu_device.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "sluice/base/heap.h"
#include "sluice/base/mapped_buffer.h"
#include "sluice/base/random.h"
#include "sluice/kernels/cpu_launcher.h"

namespace sluice {
namespace {

// Buffers of a huge page and up are mapped on their own, aligned to and asking for transparent
// huge pages: the IFDS tables are probed at random, and with 4 KiB pages most probes of a large
// table also miss the TLB. A mapping ends at the page after its last byte, not at a huge page:
// the kernel backs its whole huge pages with huge pages and the rest with small ones, so a
// buffer a little past a huge-page multiple does not hold most of another huge page. Freed, a
// mapping goes back to the host at once, where the heap would keep a grown table's old
// segments.
constexpr uint64_t kMappedFrom = internal::kHugePageBytes;
// Buffers from 64 KiB to a huge page (a small table's segments, its heads and lists) are
// mappings too, backed whole as they are made (internal::PopulatePages): the heap zeroed them
// a 4 KiB fault at a time, most of a small solve's set-up on a virtual machine. They are
// zeroed whole either way, so they hold no more than before. Smaller buffers come from the
// heap.
constexpr uint64_t kPopulatedFrom = uint64_t{64} << 10;

uint64_t MappedBytes(uint64_t bytes) {
  static const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  return (bytes + page - 1) / page * page;
}

// Zeroed memory (fresh pages, zeroed by the kernel as they are first touched), or nullptr.
// A buffer's part past its last huge page boundary stays small pages: a table is touched here
// and there, and a whole huge page for a few bytes of its end is memory held for nothing.
uint8_t* MapHuge(uint64_t bytes) {
  auto* data = static_cast<uint8_t*>(internal::MapHugePages(MappedBytes(bytes)));
  const uint64_t whole = bytes / internal::kHugePageBytes * internal::kHugePageBytes;
  if (data != nullptr && whole < MappedBytes(bytes)) {
    madvise(data + whole, MappedBytes(bytes) - whole, MADV_NOHUGEPAGE);
  }
  return data;
}

}  // namespace

// Work runs on the calling thread (fanned out over the pool) as it is enqueued, so every
// operation has completed by the time it returns and Synchronize only counts the fence.
class CpuDevice::CpuStream final : public Stream {
 public:
  explicit CpuStream(CpuDevice* device) : device_(device) {}

  absl::Status CopyIn(DeviceBuffer dst, uint64_t offset, absl::Span<const uint8_t> src) override {
    ParallelCopy(device_->pool_, dst.data + offset, src.data(), src.size());
    device_->counters_.AddUploaded(src.size());
    return absl::OkStatus();
  }

  absl::Status CopyOut(DeviceBuffer src, uint64_t offset, absl::Span<uint8_t> dst) override {
    ParallelCopy(device_->pool_, dst.data(), src.data + offset, dst.size());
    device_->counters_.AddDownloaded(dst.size());
    return absl::OkStatus();
  }

  absl::Status Launch(const PlannedStep& step, const Interrupt& interrupt) override {
    if (!interrupt.Enter()) {
      return interrupt.Why(absl::StrFormat("%s, waiting for the device", step.kernel.name));
    }
    for (size_t p = 0; p < step.passes.size(); ++p) {
      const PassLaunch& pass = step.passes[p];
      const uint64_t n = pass.threads.Resolve(step.args);
      for (uint64_t done = 0;;) {
        {
          absl::MutexLock lock(&device_->launch_mu_);
          done += LaunchOnCpu(pass.body, step.args, n, done, pass.work_per_thread,
                              device_->pool_, &interrupt, device_->ranges_);
        }
        // Every index ran, unless the work stopped: then a thread may have ended early
        // (KernelArgs::Stopping), its work undone.
        if (done >= n && !interrupt.Stopped()) break;
        // Stopped, or paused: the device goes to the client owed it, and this pass resumes
        // where it stopped once it is back.
        if (interrupt.Stopped() || !interrupt.Pause()) {
          device_->counters_.AddLaunches(p + 1);
          return interrupt.Why(absl::StrFormat("%s, in pass %d of %d", step.kernel.name, p + 1,
                                               step.passes.size()));
        }
      }
      // Between passes (after the last, the request's own end comes first).
      if (p + 1 < step.passes.size() && interrupt.PauseRequested() && !interrupt.Pause()) {
        device_->counters_.AddLaunches(p + 1);
        return interrupt.Why(absl::StrFormat("%s, after pass %d of %d", step.kernel.name, p + 1,
                                             step.passes.size()));
      }
    }
    device_->counters_.AddLaunches(step.passes.size());
    return absl::OkStatus();
  }

  absl::Status LaunchRepeated(absl::Span<const PlannedStep> steps, uint32_t count,
                              const Interrupt& interrupt) override {
    // Work has completed when Launch returns, so the guard word is read right here.
    const uint32_t* guard = steps.empty() ? nullptr : steps.front().guard;
    for (uint32_t i = 0; i < count; ++i) {
      if (interrupt.Stopped()) {
        return interrupt.Why(absl::StrFormat(
            "the repeated group after %d of %d iterations", i, count));
      }
      if (guard != nullptr && atomics::Load(guard) == 0) break;
      for (const PlannedStep& step : steps) {
        absl::Status status = Launch(step, interrupt);
        if (!status.ok()) {
          return absl::Status(status.code(),
                              absl::StrFormat("%s (iteration %d of %d)", status.message(), i + 1,
                                              count));
        }
      }
    }
    return absl::OkStatus();
  }

  absl::Status Synchronize() override {
    device_->counters_.AddSynchronization();
    return absl::OkStatus();
  }

 private:
  CpuDevice* const device_;
};

CpuDevice::CpuDevice(const Options& options)
    : memory_(options.memory_limit), pool_(options.threads), ranges_(options.ranges) {
  info_.kind = "cpu";
  info_.compute_units = static_cast<uint32_t>(pool_.concurrency());
  info_.name = absl::StrFormat("host CPU, %d threads", info_.compute_units);
  info_.id = absl::StrCat("cpu:", RandomHexId());
  info_.version = absl::StrCat("sluice-cpu/", SLUICE_VERSION,
                               " catalog/", KernelCatalog::Builtin().fingerprint());
}

CpuDevice::~CpuDevice() = default;

absl::StatusOr<std::shared_ptr<CpuDevice>> CpuDevice::Create(const Options& options) {
  if (options.threads < 0 || options.threads > kMaxThreads) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "CpuDevice: threads is %d; it is from 0 (one per hardware thread) to %d",
        options.threads, kMaxThreads));
  }
  Options resolved = options;
  if (resolved.memory_limit == 0) resolved.memory_limit = PhysicalMemoryBytes() / 2;
  try {
    return std::shared_ptr<CpuDevice>(new CpuDevice(resolved));
  } catch (const std::system_error& e) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "CpuDevice: cannot start %d threads: %s", resolved.threads, e.what()));
  }
}

absl::StatusOr<DeviceBuffer> CpuDevice::Allocate(uint64_t bytes) {
  absl::Status reserved = memory_.Reserve(bytes, "cpu device memory");
  if (!reserved.ok()) return reserved;
  void* data = nullptr;
  if (bytes >= kMappedFrom) {
    data = MapHuge(bytes);
  } else if (bytes >= kPopulatedFrom) {
    data = internal::MapPages(MappedBytes(bytes));
    if (data != nullptr) internal::PopulatePages(data, MappedBytes(bytes));
  } else {
    // Zeroed either way; calloc's memory is 16-byte aligned, enough for every element type.
    data = std::calloc(bytes == 0 ? 1 : bytes, 1);
  }
  if (data == nullptr) {
    memory_.Release(bytes);
    return absl::ResourceExhaustedError(
        absl::StrFormat("cpu device: the host refused an allocation of %d bytes", bytes));
  }
  counters_.AddAllocation();
  return DeviceBuffer{static_cast<uint8_t*>(data), bytes};
}

void CpuDevice::Free(DeviceBuffer buffer) {
  if (buffer.bytes >= kMappedFrom) {
    internal::UnmapHugePages(buffer.data, MappedBytes(buffer.bytes));
  } else if (buffer.bytes >= kPopulatedFrom) {
    internal::UnmapPages(buffer.data, MappedBytes(buffer.bytes));
  } else {
    std::free(buffer.data);
  }
  memory_.Release(buffer.bytes);
  counters_.AddFree();
}

absl::StatusOr<std::unique_ptr<Stream>> CpuDevice::CreateStream() {
  return std::unique_ptr<Stream>(new CpuStream(this));
}

}  // namespace sluice
