#include "sluice/kernels/cpu_launcher.h"

#include <algorithm>
#include <array>

#include "sluice/kernels/bodies.h"

namespace sluice {
namespace {

// Thread indices per pool task (for one element per index): small enough to balance, large
// enough that scheduling is noise next to the body calls.
constexpr uint64_t kGrain = 4096;

using RangeFn = void (*)(const KernelArgs&, uint64_t begin, uint64_t end, uint64_t n);

// One index at a time, as a GPU's threads run the body.
template <class Body>
void RunEach(const KernelArgs& args, uint64_t begin, uint64_t end, uint64_t n) {
  for (uint64_t i = begin; i < end; ++i) Body::Run(args, i, n);
}

// A body may run a whole range itself (Body::RunRange), keeping state across its indexes.
template <class Body>
void RunRange(const KernelArgs& args, uint64_t begin, uint64_t end, uint64_t n) {
  if constexpr (requires { Body::RunRange(args, begin, end, n); }) {
    Body::RunRange(args, begin, end, n);
  } else {
    RunEach<Body>(args, begin, end, n);
  }
}

using BodyTable = std::array<RangeFn, static_cast<size_t>(BodyId::kNumBodies)>;
constexpr BodyTable kRanges = {
#define SLUICE_BODY_FN_(id, type) &RunRange<type>,
    SLUICE_KERNEL_BODIES(SLUICE_BODY_FN_)
#undef SLUICE_BODY_FN_
};
constexpr BodyTable kEach = {
#define SLUICE_BODY_FN_(id, type) &RunEach<type>,
    SLUICE_KERNEL_BODIES(SLUICE_BODY_FN_)
#undef SLUICE_BODY_FN_
};

}  // namespace

bool CpuLaunchStopped(const CpuLaunch* launch) { return launch->interrupt->Stopped(); }

uint64_t LaunchOnCpu(BodyId body, const KernelArgs& args, uint64_t n, uint64_t from,
                     uint32_t work_per_thread, ThreadPool& pool, const Interrupt* interrupt,
                     bool ranges) {
  const RangeFn fn = (ranges ? kRanges : kEach)[static_cast<size_t>(body)];
  if (from >= n) return 0;
  const uint64_t grain = std::max<uint64_t>(1, kGrain / std::max<uint32_t>(work_per_thread, 1));
  if (interrupt == nullptr) {
    pool.ParallelFor(n - from, grain,
                     [&](uint64_t begin, uint64_t end) { fn(args, from + begin, from + end, n); });
    return n - from;
  }
  // The threads see the launch, so that one whose data keeps it looping stops with it; each
  // task counts its own steps (KernelArgs::Stopping).
  const CpuLaunch launch{interrupt};
  const auto run = [&](uint64_t begin, uint64_t end) {
    KernelArgs own = args;
    own.cpu_launch = &launch;
    own.looks_to_poll = 1;  // asks at its first look
    own.stopped = false;
    fn(own, from + begin, from + end, n);
  };
  return pool.ParallelForUntil(n - from, grain, run, [interrupt] {
    return interrupt->Stopped() || interrupt->PauseRequested();
  });
}

}  // namespace sluice
