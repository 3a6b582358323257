// One CUDA stream's cache of executable graphs for repeated groups: a group is captured once,
// as one iteration or as a WHILE graph loop that runs it while iterations remain and its loop
// guard holds (kernels/cuda_loops.h), and replayed from then on. Keyed by everything a replay
// depends on, most recently used first, at most kMaxGraphs per stream. Private to
// engine/cuda/; not thread-safe: the stream's owner uses it, holding the device's use mutex.
#ifndef SLUICE_ENGINE_CUDA_GRAPHS_H_
#define SLUICE_ENGINE_CUDA_GRAPHS_H_

#include <cuda_runtime_api.h>

#include <cstddef>
#include <list>
#include <string>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "sluice/engine/cuda/device_impl.h"
#include "sluice/engine/device.h"
#include "sluice/kernels/cuda_loops.h"

namespace sluice {

class GraphCache {
 public:
  GraphCache(CudaDeviceImpl* device, cudaStream_t stream) : device_(device), stream_(stream) {}

  // The executable graph of `steps`: one iteration, or (`loop`) the WHILE loop over `words`
  // (device addresses). Captured on first use; errors of the device.
  absl::StatusOr<cudaGraphExec_t> Get(absl::Span<const PlannedStep> steps, bool loop,
                                      const LoopWords& words);
  // Destroys every graph (only forgets them when the context is gone).
  void Release(bool context_alive);

 private:
  struct Graph {
    std::string key;
    cudaGraph_t graph = nullptr;  // destroyed with `exec`
    cudaGraphExec_t exec = nullptr;
  };

  // Captures what `enqueue` launches on the stream into `graph`, holding the device's capture
  // mutex exclusively.
  absl::Status CaptureInto(cudaGraph_t graph, absl::FunctionRef<absl::Status()> enqueue);
  // Fills `graph` with the loop that runs `steps` while iterations remain and the guard holds.
  absl::Status BuildLoop(cudaGraph_t graph, absl::Span<const PlannedStep> steps,
                         const LoopWords& words);

  static constexpr size_t kMaxGraphs = 8;

  CudaDeviceImpl* const device_;
  const cudaStream_t stream_;
  std::list<Graph> graphs_;  // most recently used first
};

}  // namespace sluice

#endif  // SLUICE_ENGINE_CUDA_GRAPHS_H_
