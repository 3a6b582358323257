// sluice bfs: BFS levels over a generated graph as a resident fixed point, checked against a
// host BFS.
#include <cstdio>
#include <map>
#include <string>

#include "absl/flags/flag.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "sluice/kernels/bfs.h"
#include "sluice/tools/cli.h"
#include "sluice/workloads/bfs.h"

ABSL_FLAG(uint32_t, nodes, 200000, "bfs: nodes in the generated graph");
ABSL_FLAG(uint32_t, degree, 8, "bfs: average out-degree of the generated graph");
ABSL_FLAG(uint32_t, source, 0, "bfs: the node the search starts from");
ABSL_FLAG(uint32_t, window, 8, "bfs: iterations per fixed-point window");

namespace sluice {

int RunBfs() {
  const uint32_t nodes = absl::GetFlag(FLAGS_nodes);
  const uint32_t source = absl::GetFlag(FLAGS_source);
  const uint32_t window = absl::GetFlag(FLAGS_window);
  if (nodes == 0 || source >= nodes || window == 0) {
    std::fprintf(stderr, "sluice bfs: need --nodes >= 1, --source < --nodes, --window >= 1\n");
    return kExitUsage;
  }
  absl::StatusOr<CsrGraph> generated =
      GenerateGraph(nodes, absl::GetFlag(FLAGS_degree), absl::GetFlag(FLAGS_seed));
  if (!generated.ok()) {
    std::fprintf(stderr, "sluice bfs: %s\n", generated.status().ToString().c_str());
    return kExitUsage;
  }
  const CsrGraph& graph = *generated;
  absl::StatusOr<OpenedDispatch> opened = OpenDispatch("sluice bfs");
  if (!opened.ok()) {
    std::fprintf(stderr, "sluice bfs: %s\n", opened.status().ToString().c_str());
    return ExitCodeOf(opened.status());
  }
  ResidentDispatch& dispatch = *opened->dispatch;
  std::printf("graph: %u nodes, %zu edges (seed %llu); source %u; window %u iterations\n",
              graph.nodes, graph.columns.size(),
              static_cast<unsigned long long>(absl::GetFlag(FLAGS_seed)), source, window);
  std::printf("backend: %s (%s)%s\n", std::string(dispatch.backend_id()).c_str(),
              std::string(dispatch.backend_version()).c_str(),
              opened->remote ? absl::StrFormat(" via sluiced at %s",
                                               absl::GetFlag(FLAGS_server)).c_str()
                             : " in-process");

  const absl::Time start = absl::Now();
  absl::StatusOr<BfsResult> result = ResidentBfs(dispatch, graph, source, window);
  const absl::Duration elapsed = absl::Now() - start;
  if (!result.ok()) {
    std::fprintf(stderr, "sluice bfs: %s\n", result.status().ToString().c_str());
    return kExitFailed;
  }
  std::map<uint32_t, uint64_t> histogram;
  uint64_t reached = 0;
  for (uint32_t level : result->levels) {
    if (level == kernels::kUnreachedLevel) continue;
    ++histogram[level];
    ++reached;
  }
  std::printf("reached %llu of %u nodes in %u levels\n",
              static_cast<unsigned long long>(reached), graph.nodes, result->depth);
  std::printf("%-7s %s\n", "level", "nodes");
  for (const auto& [level, count] : histogram) {
    std::printf("%-7u %llu\n", level, static_cast<unsigned long long>(count));
  }
  std::printf("work: %u windows in %.1f ms; %s\n", result->windows,
              absl::ToDoubleMilliseconds(elapsed), opened->traffic().c_str());
  const bool matches = result->levels == HostBfs(graph, source);
  std::printf("matches host BFS: %s\n", matches ? "yes" : "NO");
  return matches ? kExitOk : kExitFailed;
}

}  // namespace sluice
