#include "sluice/engine/cuda/graphs.h"

#include <utility>

#include "absl/synchronization/mutex.h"
#include "sluice/base/status_macros.h"

namespace sluice {

absl::StatusOr<cudaGraphExec_t> GraphCache::Get(absl::Span<const PlannedStep> steps, bool loop,
                                                const LoopWords& words) {
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
      loop ? BuildLoop(graph, steps, words) : CaptureInto(graph, [&]() -> absl::Status {
        for (const PlannedStep& step : steps) RETURN_IF_ERROR(device_->EnqueuePasses(step, stream_));
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

void GraphCache::Release(bool context_alive) {
  if (context_alive) {
    for (Graph& g : graphs_) {
      cudaGraphExecDestroy(g.exec);
      cudaGraphDestroy(g.graph);
    }
  }
  graphs_.clear();
}

absl::Status GraphCache::CaptureInto(cudaGraph_t graph,
                                     absl::FunctionRef<absl::Status()> enqueue) {
  absl::MutexLock capture(&device_->capture_mutex());
  CUDA_RETURN_IF_ERROR(device_, cudaStreamBeginCaptureToGraph(stream_, graph, nullptr, nullptr, 0,
                                                              cudaStreamCaptureModeThreadLocal));
  absl::Status enqueued;
  cudaError_t ended;
  {
    const CaptureMark capturing;
    enqueued = enqueue();
    cudaGraph_t captured = nullptr;  // `graph` itself
    ended = cudaStreamEndCapture(stream_, &captured);
  }
  if (!enqueued.ok()) {
    cudaGetLastError();
    return enqueued;
  }
  CUDA_RETURN_IF_ERROR(device_, ended);
  return absl::OkStatus();
}

absl::Status GraphCache::BuildLoop(cudaGraph_t graph, absl::Span<const PlannedStep> steps,
                                   const LoopWords& words) {
  // start -> WHILE(loop) { the group's passes; next }. `start` and `next` set the condition
  // from the iterations left (stored before each launch) and the guard word, so the device
  // runs a whole batch, or ends it early, with no host work per iteration.
  const uint32_t* guard = steps.front().guard;
  cudaGraph_t body = nullptr;
  cudaGraphConditionalHandle loop{};
  CUDA_RETURN_IF_ERROR(device_, AddGraphLoop(graph, guard, words, &body, &loop));
  return CaptureInto(body, [&]() -> absl::Status {
    for (const PlannedStep& step : steps) RETURN_IF_ERROR(device_->EnqueuePasses(step, stream_));
    CUDA_RETURN_IF_ERROR(device_, LaunchLoopNext(loop, guard, words, stream_));
    return absl::OkStatus();
  });
}

}  // namespace sluice
