// Runs kernel passes on the host: the body of each pass is called for every thread index,
// spread over a ThreadPool. Binding views must point at host memory.
#ifndef SLUICE_KERNELS_CPU_LAUNCHER_H_
#define SLUICE_KERNELS_CPU_LAUNCHER_H_

#include "sluice/base/interrupt.h"
#include "sluice/base/thread_pool.h"
#include "sluice/kernels/body_list.h"
#include "sluice/kernels/kernel_args.h"

namespace sluice {

// Runs the body of a pass of `n` thread indexes (see ThreadCount::Resolve) for indexes
// [from, n), spread over `pool`; returns how many ran, all of them from `from` on: n - from,
// or fewer once `interrupt` (may be null) stops or asks for a pause, the work then resuming
// (or not) from `from` plus that. `work_per_thread` (elements each thread index handles, >= 1)
// sizes the share of indexes one pool task takes, so that blocked passes with few indexes
// still spread over every core. A body that can run a whole range of indexes (Body::RunRange:
// the IFDS passes that probe at random, prefetching) does when `ranges`; otherwise every body
// runs one index at a time, as a GPU's threads run it. A thread whose loops run long looks at
// `interrupt` too (KernelArgs::Stopping), and ends early once it stops: the indexes that ran
// are then counted as run, but the work is not done, so a caller whose `interrupt` has stopped
// fails the launch. Thread-safe.
uint64_t LaunchOnCpu(BodyId body, const KernelArgs& args, uint64_t n, uint64_t from,
                     uint32_t work_per_thread, ThreadPool& pool,
                     const Interrupt* interrupt = nullptr, bool ranges = true);

}  // namespace sluice

#endif  // SLUICE_KERNELS_CPU_LAUNCHER_H_
