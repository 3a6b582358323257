// The CPU device: host memory, kernel bodies run over a thread pool that uses every core.
// It is the embedded default and the reference every other device is tested against.
#ifndef SLUICE_ENGINE_CPU_DEVICE_H_
#define SLUICE_ENGINE_CPU_DEVICE_H_

#include <memory>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "sluice/base/thread_pool.h"
#include "sluice/engine/device.h"

namespace sluice {

class CpuDevice final : public Device {
 public:
  struct Options {
    // Bytes of host memory the device may hand out; 0 means half of PhysicalMemoryBytes().
    uint64_t memory_limit = 0;
    // Worker threads; 0 means one per hardware thread (the caller is one of them). At most
    // kMaxThreads.
    int threads = 0;
    // Kernel bodies that can run a whole range of thread indexes do (see LaunchOnCpu); false
    // runs every body one index at a time, as a GPU's threads do, for tests that compare the
    // two.
    bool ranges = true;
  };

  static constexpr int kMaxThreads = 1024;

  // InvalidArgument for threads out of [0, kMaxThreads], ResourceExhausted where the system
  // cannot start them.
  static absl::StatusOr<std::shared_ptr<CpuDevice>> Create(const Options& options);
  ~CpuDevice() override;

  const DeviceInfo& info() const override { return info_; }
  absl::StatusOr<DeviceBuffer> Allocate(uint64_t bytes) override;
  void Free(DeviceBuffer buffer) override;
  absl::StatusOr<std::unique_ptr<Stream>> CreateStream() override;
  MemoryInfo memory() const override { return memory_.info(); }
  DeviceCounters counters() const override { return counters_.Snapshot(); }
  // Its buffers are host memory: at most its memory limit, however many streams.
  HostBytes HostMemoryBound(uint32_t) const override { return {.buffers = memory_.limit()}; }

 private:
  class CpuStream;
  explicit CpuDevice(const Options& options);

  DeviceInfo info_;          // const after construction
  MemoryAccountant memory_;  // own locking
  CounterSet counters_;      // own locking
  ThreadPool pool_;          // own locking
  const bool ranges_;
  // One pass runs at a time, on every thread of the pool: passes of several streams side by
  // side would only share the same cores, and make every other thread of the process (the
  // daemon's request path) wait for a core behind them.
  absl::Mutex launch_mu_;
};

}  // namespace sluice

#endif  // SLUICE_ENGINE_CPU_DEVICE_H_
