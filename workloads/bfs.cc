#include "sluice/workloads/bfs.h"

#include <algorithm>
#include <cstring>
#include <deque>
#include <random>

#include "absl/strings/str_format.h"
#include "sluice/base/status_macros.h"
#include "sluice/client/resident_buffers.h"
#include "sluice/kernels/basic.h"
#include "sluice/kernels/bfs.h"
#include "sluice/kernels/kernel_args.h"

namespace sluice {
namespace {

absl::Span<const uint8_t> Bytes(const std::vector<uint32_t>& v) {
  return {reinterpret_cast<const uint8_t*>(v.data()), v.size() * sizeof(uint32_t)};
}

}  // namespace

absl::StatusOr<CsrGraph> GenerateGraph(uint32_t nodes, uint32_t average_degree,
                                       uint64_t seed) {
  const uint64_t most_degree = 2 * uint64_t{average_degree};
  if (most_degree > 0 && nodes > kMaxGeneratedEdges / most_degree) {  // cannot wrap
    return absl::InvalidArgumentError(absl::StrFormat(
        "%d nodes of up to %d out-edges each can exceed the generator's %d edges", nodes,
        most_degree, kMaxGeneratedEdges));
  }
  if (nodes > kMaxGeneratedNodes) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%d nodes: the generator makes at most %d", nodes, kMaxGeneratedNodes));
  }
  std::mt19937_64 rng(seed);
  CsrGraph g;
  g.nodes = nodes;
  g.row_offsets.reserve(uint64_t{nodes} + 1);
  g.row_offsets.push_back(0);
  for (uint32_t u = 0; u < nodes; ++u) {
    const uint32_t degree = average_degree == 0 ? 0 : static_cast<uint32_t>(rng() % (most_degree + 1));
    for (uint32_t e = 0; e < degree; ++e) {
      g.columns.push_back(static_cast<uint32_t>(rng() % nodes));
    }
    g.row_offsets.push_back(static_cast<uint32_t>(g.columns.size()));
  }
  return g;
}

std::vector<uint32_t> HostBfs(const CsrGraph& graph, uint32_t source) {
  std::vector<uint32_t> levels(graph.nodes, kernels::kUnreachedLevel);
  if (source >= graph.nodes) return levels;
  std::deque<uint32_t> queue = {source};
  levels[source] = 0;
  while (!queue.empty()) {
    const uint32_t u = queue.front();
    queue.pop_front();
    for (uint32_t e = graph.row_offsets[u]; e < graph.row_offsets[u + 1]; ++e) {
      const uint32_t v = graph.columns[e];
      if (levels[v] != kernels::kUnreachedLevel) continue;
      levels[v] = levels[u] + 1;
      queue.push_back(v);
    }
  }
  return levels;
}

absl::StatusOr<BfsResult> ResidentBfs(ResidentDispatch& dispatch, const CsrGraph& graph,
                                      uint32_t source, uint32_t window) {
  using kernels::BfsState;
  if (graph.nodes == 0 || source >= graph.nodes) {
    return absl::InvalidArgumentError(
        absl::StrFormat("source %d is not a node of a %d-node graph", source, graph.nodes));
  }
  if (window == 0) return absl::InvalidArgumentError("window must be at least 1");
  if (graph.row_offsets.size() != uint64_t{graph.nodes} + 1 ||
      graph.row_offsets.back() != graph.columns.size()) {
    return absl::InvalidArgumentError("row_offsets does not describe columns");
  }
  const uint32_t n = graph.nodes;
  // Each iteration settles a level, and there are at most n: a window of more would only pass
  // over an empty frontier (a window of 2^32 - 1 ran for about 20 minutes on 1,000 nodes).
  window = static_cast<uint32_t>(std::min<uint64_t>(window, uint64_t{n} + 1));
  const size_t words = (uint64_t{n} + 31) / 32;

  ResidentBuffers buffers(dispatch);
  ASSIGN_OR_RETURN(Resource rows, buffers.Allocate(graph.row_offsets.size() * 4));
  ASSIGN_OR_RETURN(Resource columns, buffers.Allocate(graph.columns.size() * 4));
  ASSIGN_OR_RETURN(Resource visited, buffers.Allocate(words * 4));
  ASSIGN_OR_RETURN(Resource levels, buffers.Allocate(uint64_t{n} * 4));
  ASSIGN_OR_RETURN(Resource frontier, buffers.Allocate(uint64_t{n} * 4));
  ASSIGN_OR_RETURN(Resource next, buffers.Allocate(uint64_t{n} * 4));
  ASSIGN_OR_RETURN(Resource state, buffers.Allocate(BfsState::kSlots * 4));

  // The graph and the initial frontier go up as one batch.
  const std::vector<uint32_t> first_frontier = {source};
  const std::vector<uint32_t> initial_state = {1, 0, 0, 0};
  RETURN_IF_ERROR(dispatch.UploadMany({{rows, Bytes(graph.row_offsets)},
                                       {columns, Bytes(graph.columns)},
                                       {frontier, Bytes(first_frontier)},
                                       {state, Bytes(initial_state)}}));
  // Every level starts unreached; then two ranged writes mark the source.
  const Program unreached = Program::Of(kernels::kFillU32Kernel, {kernels::kUnreachedLevel});
  RETURN_IF_ERROR(dispatch.Dispatch(unreached, {&levels, 1}, std::nullopt));
  const std::vector<uint32_t> zero_level = {0};
  const std::vector<uint32_t> source_bit = {1u << (source % 32)};
  RETURN_IF_ERROR(dispatch.UploadAtMany({{levels, uint64_t{source} * 4, Bytes(zero_level)},
                                         {visited, uint64_t{source / 32} * 4, Bytes(source_bit)}}));

  const Program expand = Program::Of(kernels::kBfsExpandKernel);
  const Program advance = Program::Of(kernels::kBfsAdvanceKernel);
  const std::vector<Resource> expand_bindings = {rows, columns, visited, levels,
                                                 frontier, next, state};
  const std::vector<Resource> advance_bindings = {frontier, next, state};
  const std::vector<Step> group = {{&expand, expand_bindings, std::nullopt},
                                   {&advance, advance_bindings, std::nullopt}};
  const std::vector<ReadRange> poll = {{state, 0, BfsState::kSlots * 4}};
  std::vector<uint8_t> polled;
  std::vector<std::vector<uint8_t>*> outputs = {&polled};

  BfsResult result;
  uint32_t s[BfsState::kSlots] = {1, 0, 0, 0};
  // Each iteration settles one level, so n windows' worth of iterations always suffice.
  while (s[BfsState::kFrontierCount] != 0) {
    RETURN_IF_ERROR(dispatch.DispatchRepeatedSequenceReadRangesInto({}, group, window, poll,
                                                                    absl::MakeSpan(outputs)));
    ++result.windows;
    std::memcpy(s, polled.data(), sizeof(s));
    if (s[BfsState::kStatus] != 0) {
      return absl::DataLossError(absl::StrFormat(
          "the device reported status 0x%x (bad index or overflow) at level %d",
          s[BfsState::kStatus], s[BfsState::kLevel]));
    }
    if (uint64_t{result.windows} * window > uint64_t{n} + window) {
      return absl::InternalError("BFS did not converge within one level per node");
    }
  }
  result.depth = s[BfsState::kLevel] + 1;
  ASSIGN_OR_RETURN(std::vector<uint8_t> level_bytes, dispatch.Download(levels));
  result.levels.resize(n);
  std::memcpy(result.levels.data(), level_bytes.data(), level_bytes.size());
  return result;
}

}  // namespace sluice
