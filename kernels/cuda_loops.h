// Graph loops for repeated groups: a CUDA graph whose WHILE conditional node runs the group's
// passes until the iterations of a launch are used up or the group's loop guard reads zero, with
// no host work per iteration. Kept apart from the kernel bodies: this module needs the driver's
// conditional-node support, so it is loaded by the probe alone and the bodies load without it.
// Only compiled where nvcc exists.
#ifndef SLUICE_KERNELS_CUDA_LOOPS_H_
#define SLUICE_KERNELS_CUDA_LOOPS_H_

#include <cuda_runtime_api.h>

#include <chrono>
#include <cstdint>

namespace sluice {

// The words a loop keeps besides the guard.
struct LoopWords {
  uint32_t* remaining;  // device memory: iterations this launch may still run
  uint32_t* stopped;    // mapped host memory (device address): set once the guard read zero
};

// Adds to `graph` a start node, which sets the loop's condition (remaining > 0 and, with a
// guard, *guard != 0), and after it a WHILE node. Returns the node's body graph, to be filled
// with the group's work followed by LaunchLoopNext, and the condition's handle.
cudaError_t AddGraphLoop(cudaGraph_t graph, const uint32_t* guard, LoopWords words,
                         cudaGraph_t* body, cudaGraphConditionalHandle* loop);

// Enqueues the end of an iteration: one fewer remaining, then the condition again.
cudaError_t LaunchLoopNext(cudaGraphConditionalHandle loop, const uint32_t* guard,
                           LoopWords words, cudaStream_t stream);

// Stores `value` at `word` in stream order (a one-thread kernel: no host memory involved).
cudaError_t LaunchStoreU32(uint32_t* word, uint32_t value, cudaStream_t stream);

// Builds a loop the way the CUDA device does (body captured from `stream`), runs it with a
// guard that holds and then with one that does not, and checks the words. Returns the first
// error when this GPU, driver or sandbox cannot run graph loops; cudaErrorNotSupported when the
// loop ran but not as specified (a condition never set reads 0, so a start node that does not
// take effect ends up here); cudaErrorTimeout when a run did not finish within `limit` (the
// context then needs a reset: the probe's memory is left to it). Synchronizes `stream`.
cudaError_t ProbeGraphLoops(cudaStream_t stream, std::chrono::milliseconds limit);

}  // namespace sluice

#endif  // SLUICE_KERNELS_CUDA_LOOPS_H_
