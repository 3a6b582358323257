// Breadth-first search levels as a resident fixed point: the graph is uploaded once, then
// windows of `bfs_expand` + `bfs_advance` run as repeated sequences until the frontier is
// empty, each window ending in one 16-byte read of the device state. It runs on any
// ResidentDispatch and is the small fixed point behind `sluice bfs`.
#ifndef SLUICE_WORKLOADS_BFS_H_
#define SLUICE_WORKLOADS_BFS_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "sluice/client/resident_dispatch.h"

namespace sluice {

// A directed graph in compressed sparse row form.
struct CsrGraph {
  uint32_t nodes = 0;
  std::vector<uint32_t> row_offsets;  // nodes + 1 entries
  std::vector<uint32_t> columns;      // edge targets
};

// The most edges a generated graph may have (4 GiB of columns), and nodes (a node costs about
// 20 bytes between the graph, the reference and the device).
inline constexpr uint64_t kMaxGeneratedEdges = uint64_t{1} << 30;
inline constexpr uint64_t kMaxGeneratedNodes = uint64_t{1} << 28;

// A random directed graph with `nodes` nodes and about `average_degree` out-edges per node (at
// most twice that at any node); the same seed always gives the same graph. InvalidArgument when
// nodes x 2 x average_degree exceeds kMaxGeneratedEdges, or nodes kMaxGeneratedNodes.
absl::StatusOr<CsrGraph> GenerateGraph(uint32_t nodes, uint32_t average_degree, uint64_t seed);

// The reference: level of each node from `source`, kUnreachedLevel where unreachable.
std::vector<uint32_t> HostBfs(const CsrGraph& graph, uint32_t source);

struct BfsResult {
  std::vector<uint32_t> levels;  // per node; kernels::kUnreachedLevel where unreachable
  uint32_t windows = 0;          // repeated-sequence calls
  uint32_t depth = 0;            // levels reached
};

// Runs BFS from `source` on `dispatch`, `window` iterations per repeated sequence. Frees every
// buffer it allocated. InvalidArgument for a bad source, window or graph shape; DataLoss if the
// device reports an out-of-bounds index or overflow (malformed graph); errors of `dispatch`.
absl::StatusOr<BfsResult> ResidentBfs(ResidentDispatch& dispatch, const CsrGraph& graph,
                                      uint32_t source, uint32_t window);

}  // namespace sluice

#endif  // SLUICE_WORKLOADS_BFS_H_
