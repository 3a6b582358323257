#include "sluice/kernels/cuda_loops.h"

#include "sluice/kernels/cuda_wait.h"

namespace sluice {
namespace {

__device__ unsigned GoOn(const uint32_t* guard, LoopWords words) {
  if (guard != nullptr && *guard == 0) {
    *words.stopped = 1;
    return 0;
  }
  return *words.remaining > 0 ? 1u : 0u;
}

__global__ void LoopStart(cudaGraphConditionalHandle loop, const uint32_t* guard,
                          LoopWords words) {
  cudaGraphSetConditional(loop, GoOn(guard, words));
}

__global__ void LoopNext(cudaGraphConditionalHandle loop, const uint32_t* guard,
                         LoopWords words) {
  *words.remaining -= 1;
  cudaGraphSetConditional(loop, GoOn(guard, words));
}

__global__ void StoreU32(uint32_t* word, uint32_t value) { *word = value; }

}  // namespace

cudaError_t AddGraphLoop(cudaGraph_t graph, const uint32_t* guard, LoopWords words,
                         cudaGraph_t* body, cudaGraphConditionalHandle* loop) {
  // The condition reads 0 ("do not run") at every launch until the start node sets it: a start
  // node whose assignment did not take effect ends the loop at once instead of leaving the
  // condition undefined (and the loop, perhaps, running forever).
  cudaError_t err = cudaGraphConditionalHandleCreate(loop, graph, /*defaultLaunchValue=*/0,
                                                     cudaGraphCondAssignDefault);
  if (err != cudaSuccess) return err;
  cudaGraphConditionalHandle handle = *loop;
  void* args[] = {&handle, &guard, &words};
  cudaKernelNodeParams start{};
  start.func = reinterpret_cast<void*>(&LoopStart);
  start.gridDim = dim3(1);
  start.blockDim = dim3(1);
  start.kernelParams = args;
  cudaGraphNode_t start_node = nullptr;
  err = cudaGraphAddKernelNode(&start_node, graph, nullptr, 0, &start);
  if (err != cudaSuccess) return err;
  cudaGraphNodeParams params{};
  params.type = cudaGraphNodeTypeConditional;
  params.conditional.handle = handle;
  params.conditional.type = cudaGraphCondTypeWhile;
  params.conditional.size = 1;
  cudaGraphNode_t while_node = nullptr;
  err = cudaGraphAddNode(&while_node, graph, &start_node, nullptr, 1, &params);
  if (err != cudaSuccess) return err;
  *body = params.conditional.phGraph_out[0];
  return cudaSuccess;
}

cudaError_t LaunchLoopNext(cudaGraphConditionalHandle loop, const uint32_t* guard,
                           LoopWords words, cudaStream_t stream) {
  LoopNext<<<1, 1, 0, stream>>>(loop, guard, words);
  return cudaGetLastError();
}

cudaError_t LaunchStoreU32(uint32_t* word, uint32_t value, cudaStream_t stream) {
  StoreU32<<<1, 1, 0, stream>>>(word, value);
  return cudaGetLastError();
}

cudaError_t ProbeGraphLoops(cudaStream_t stream, std::chrono::milliseconds limit) {
  // Load this module's kernels now: with lazy loading a first launch would load them inside the
  // stream capture below (and a driver that cannot resolve cudaGraphSetConditional fails here).
  cudaFuncAttributes attributes;
  for (const void* kernel : {reinterpret_cast<const void*>(&LoopStart),
                             reinterpret_cast<const void*>(&LoopNext),
                             reinterpret_cast<const void*>(&StoreU32)}) {
    if (cudaError_t err = cudaFuncGetAttributes(&attributes, kernel); err != cudaSuccess) {
      return err;
    }
  }
  uint32_t* device_words = nullptr;  // [0] remaining, [1] guard
  // Pinned, so that no copy into them waits on the host: [0] the loop's stopped flag (mapped),
  // [1] and [2] the iterations left after each run.
  uint32_t* host_words = nullptr;
  LoopWords words{};
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  uint32_t stopped_seen[2] = {1, 1};
  cudaError_t err = cudaMalloc(&device_words, 2 * sizeof(uint32_t));
  if (err == cudaSuccess) {
    err = cudaHostAlloc(&host_words, 3 * sizeof(uint32_t), cudaHostAllocMapped);
  }
  volatile uint32_t* const stopped = host_words;
  if (err == cudaSuccess) err = cudaHostGetDevicePointer(&words.stopped, host_words, 0);
  words.remaining = device_words;
  const uint32_t* guard = device_words + 1;
  if (err == cudaSuccess) err = cudaGraphCreate(&graph, 0);
  cudaGraph_t body = nullptr;
  cudaGraphConditionalHandle loop{};
  if (err == cudaSuccess) err = AddGraphLoop(graph, guard, words, &body, &loop);
  if (err == cudaSuccess) {
    err = cudaStreamBeginCaptureToGraph(stream, body, nullptr, nullptr, 0,
                                        cudaStreamCaptureModeThreadLocal);
    if (err == cudaSuccess) {
      const cudaError_t launched = LaunchLoopNext(loop, guard, words, stream);
      cudaGraph_t captured = nullptr;
      err = cudaStreamEndCapture(stream, &captured);
      if (launched != cudaSuccess) err = launched;
    }
  }
  if (err == cudaSuccess) err = cudaGraphInstantiate(&exec, graph, 0);
  // Three iterations with a guard that holds, then none with one that does not.
  for (int run = 0; run < 2 && err == cudaSuccess; ++run) {
    *stopped = 0;
    host_words[1 + run] = 1;
    err = LaunchStoreU32(device_words, 3, stream);
    if (err == cudaSuccess) err = LaunchStoreU32(device_words + 1, run == 0 ? 1 : 0, stream);
    if (err == cudaSuccess) err = cudaGraphLaunch(exec, stream);
    if (err == cudaSuccess) {
      err = cudaMemcpyAsync(host_words + 1 + run, device_words, sizeof(uint32_t),
                            cudaMemcpyDeviceToHost, stream);
    }
    if (err == cudaSuccess) err = SynchronizeWithin(stream, limit);
    // Work that is still running may yet write these: free nothing, the reset that follows a
    // timeout takes them with the context.
    if (err == cudaErrorTimeout) return err;
    stopped_seen[run] = *stopped;
  }
  if (err == cudaSuccess) {
    const volatile uint32_t* seen = host_words + 1;
    if (seen[0] != 0 || stopped_seen[0] != 0 || seen[1] != 3 || stopped_seen[1] != 1) {
      err = cudaErrorNotSupported;
    }
  }
  if (exec != nullptr) cudaGraphExecDestroy(exec);
  if (graph != nullptr) cudaGraphDestroy(graph);
  if (host_words != nullptr) cudaFreeHost(host_words);
  if (device_words != nullptr) cudaFree(device_words);
  return err;
}

}  // namespace sluice
