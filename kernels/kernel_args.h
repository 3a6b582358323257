// Trivially copyable views handed to kernel bodies: the bound buffers, the scalar parameters
// and the rule that sizes a pass. The same bytes are passed to the CPU launcher and, by value,
// to CUDA kernels, so nothing here owns memory or has a constructor.
#ifndef SLUICE_KERNELS_KERNEL_ARGS_H_
#define SLUICE_KERNELS_KERNEL_ARGS_H_

#include <cstdint>

#include "sluice/kernels/atomics.h"
#include "sluice/kernels/hd.h"

namespace sluice {

// The IFDS solver's kernels take the most: 52 (eight segments of five tables, and the rest).
inline constexpr int kMaxBindings = 64;
inline constexpr int kMaxParams = 8;

// Bits of a kernel status word (the `status` binding of kernels that can overflow). Kernels
// OR them in atomically; the host reads the word with a ranged read after a window.
inline constexpr uint32_t kStatusCapacityOverflow = 1u << 0;  // a table or queue was full
inline constexpr uint32_t kStatusIndexOutOfBounds = 1u << 1;  // data held an index past a binding

class Interrupt;

// A launch on the CPU device, as its kernel threads see it (LaunchOnCpu): whether it has been
// stopped, by `interrupt` (base/interrupt.h). A GPU's threads never look.
struct CpuLaunch {
  const Interrupt* interrupt;
};
bool CpuLaunchStopped(const CpuLaunch* launch);  // kernels/cpu_launcher.cc

// A loop whose length a kernel thread's data sets looks every kStopPollSteps steps, and the
// thread asks whether its launch has stopped at its first look and every kStopPollLooks looks
// after (KernelArgs::Stopping). Loops shorter than kStopPollSteps never look: a pool task of
// such threads ends, and the pass looks for a stop, within a few million steps (its 4,096
// threads at most, each at most two such loops deep).
inline constexpr uint32_t kStopPollSteps = 64;
inline constexpr uint32_t kStopPollLooks = 64;

// A typed window onto one binding: `size` counts whole elements of T.
template <class T>
struct DeviceSpan {
  T* data;
  uint64_t size;
  SLUICE_HD bool Contains(uint64_t i) const { return i < size; }
  SLUICE_HD T& operator[](uint64_t i) const { return data[i]; }
};

// One bound buffer: a device address and its length in bytes.
struct BindingView {
  uint8_t* data;
  uint64_t bytes;
};

struct KernelArgs {
  BindingView binding[kMaxBindings];
  uint64_t param[kMaxParams];
  // On the CPU device, the launch (LaunchOnCpu sets it; null elsewhere), and where its threads
  // stand: each pool task runs on a copy of its own, so these are one thread's.
  const CpuLaunch* cpu_launch;
  mutable uint32_t looks_to_poll;
  mutable bool stopped;

  // Binding `b` viewed as whole elements of T (a trailing partial element is not visible).
  template <class T>
  SLUICE_HD DeviceSpan<T> As(int b) const {
    return DeviceSpan<T>{reinterpret_cast<T*>(binding[b].data), binding[b].bytes / sizeof(T)};
  }
  // Whether a thread at step `step` (from 0) of a loop whose length its data sets (a node's
  // edges, a flow's facts, a chain, a probe) ends the loop now. Data can make one thread loop
  // for hours, where a pass looks for a stop only between its threads: on the CPU device a
  // thread asks now and then (kStopPollSteps, kStopPollLooks) whether its launch has stopped
  // (its request cancelled or past its time limit, its stream gone, the daemon draining), and
  // once it has, every loop ends at its next look. Such a thread's work is left undone, and the
  // launch fails (CpuStream::Launch). On a GPU, never. Cheap: a step that is no look costs a
  // test of `step`, and only a look touches memory (at every step it cost the 5M-path-edge
  // solve's fixed point about 3%).
  SLUICE_HD bool Stopping(uint64_t step) const {
#if defined(__CUDA_ARCH__)
    return false;
#else
    if (step % kStopPollSteps != kStopPollSteps - 1 || cpu_launch == nullptr) return false;
    if (!stopped && --looks_to_poll == 0) {
      looks_to_poll = kStopPollLooks;
      stopped = CpuLaunchStopped(cpu_launch);
    }
    return stopped;
#endif
  }
  // ORs `bits` into element 0 of the u32 binding `b`, if it has one.
  SLUICE_HD void RaiseStatus(int b, uint32_t bits) const {
    DeviceSpan<uint32_t> status = As<uint32_t>(b);
    if (status.size > 0) atomics::FetchOr(&status[0], bits);
  }
};

// How many threads a pass runs. Either a fixed count, or a u32 count read from a binding when
// the pass starts (indirect dispatch: the count was produced on the device by an earlier step),
// less the u32 at `base_index` when that is set (a range [base, count) of device counters),
// divided by `divisor` (rounded up) and clamped to `cap`.
struct ThreadCount {
  uint64_t fixed;
  int32_t count_binding;  // -1: use `fixed`
  uint32_t count_index;   // element index of the u32 count; validated before launch
  uint32_t divisor;       // >= 1
  uint64_t cap;           // upper bound for the indirect case
  int32_t base_index;     // -1: none; else the count is count[count_index] - count[base_index]

  SLUICE_HD uint64_t Resolve(const KernelArgs& args) const {
    if (count_binding < 0) return fixed;
    const uint32_t* counts = reinterpret_cast<const uint32_t*>(args.binding[count_binding].data);
    uint64_t count = atomics::Load(counts + count_index);
    if (base_index >= 0) {
      const uint64_t base = atomics::Load(counts + base_index);
      count = count > base ? count - base : 0;
    }
    const uint64_t threads = (count + divisor - 1) / divisor;
    return threads < cap ? threads : cap;
  }
};

}  // namespace sluice

#endif  // SLUICE_KERNELS_KERNEL_ARGS_H_
