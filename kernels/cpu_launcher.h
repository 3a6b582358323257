// Runs kernel passes on the host: the body of each pass is called for every thread index,
// spread over a ThreadPool. Binding views must point at host memory.
#ifndef SLUICE_KERNELS_CPU_LAUNCHER_H_
#define SLUICE_KERNELS_CPU_LAUNCHER_H_

#include "base/interrupt.h"
#include "base/thread_pool.h"
#include "kernels/bodies.h"
#include "kernels/kernel_args.h"

namespace sluice {

// Resolves the pass's thread count (reading an indirect count from host memory) and runs the
// body over it; returns when every thread index has run, or, once `interrupt` (may be null)
// stops, when the chunks of indexes already started have: false then, with the pass run in
// part. `work_per_thread` (elements each thread index handles, >= 1) sizes the share of indexes
// one pool task takes, so that blocked passes with few indexes still spread over every core.
// Thread-safe.
bool LaunchOnCpu(BodyId body, const KernelArgs& args, const ThreadCount& threads,
                 uint32_t work_per_thread, ThreadPool& pool,
                 const Interrupt* interrupt = nullptr);

}  // namespace sluice

#endif  // SLUICE_KERNELS_CPU_LAUNCHER_H_
