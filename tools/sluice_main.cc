// The `sluice` command line: runs Sluice workloads through the resident-dispatch interface.
//
//   sluice bfs [--nodes=N] [--degree=D] [--seed=S] [--source=V] [--window=W]
//       BFS levels over a generated graph as a resident fixed point, checked against a host BFS.
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "client/local_dispatch.h"
#include "kernels/bodies/bfs.h"
#include "tools/bfs.h"

ABSL_FLAG(uint32_t, nodes, 200000, "bfs: nodes in the generated graph");
ABSL_FLAG(uint32_t, degree, 8, "bfs: average out-degree of the generated graph");
ABSL_FLAG(uint64_t, seed, 1, "seed of every generated input");
ABSL_FLAG(uint32_t, source, 0, "bfs: the node the search starts from");
ABSL_FLAG(uint32_t, window, 8, "bfs: iterations per fixed-point window");

namespace sluice {
namespace {

constexpr char kUsage[] =
    "sluice COMMAND [flags]\n"
    "\n"
    "Commands:\n"
    "  bfs    BFS levels over a generated graph as a resident fixed point (checked against a\n"
    "         host BFS): --nodes --degree --seed --source --window\n"
    "\n"
    "Exit codes: 0 success, 1 the command failed, 2 bad usage or input.";

int RunBfs() {
  const uint32_t nodes = absl::GetFlag(FLAGS_nodes);
  const uint32_t source = absl::GetFlag(FLAGS_source);
  const uint32_t window = absl::GetFlag(FLAGS_window);
  if (nodes == 0 || source >= nodes || window == 0) {
    std::fprintf(stderr, "sluice bfs: need --nodes >= 1, --source < --nodes, --window >= 1\n");
    return 2;
  }
  const CsrGraph graph =
      GenerateGraph(nodes, absl::GetFlag(FLAGS_degree), absl::GetFlag(FLAGS_seed));
  absl::StatusOr<std::unique_ptr<LocalDispatch>> dispatch = LocalDispatch::CreateCpu();
  if (!dispatch.ok()) {
    std::fprintf(stderr, "sluice bfs: %s\n", dispatch.status().ToString().c_str());
    return 1;
  }
  std::printf("graph: %u nodes, %zu edges (seed %llu); source %u; window %u iterations\n",
              graph.nodes, graph.columns.size(),
              static_cast<unsigned long long>(absl::GetFlag(FLAGS_seed)), source, window);
  std::printf("backend: %s (%s)\n", std::string((*dispatch)->backend_id()).c_str(),
              std::string((*dispatch)->backend_version()).c_str());

  const DeviceCounters before = (*dispatch)->device().counters();
  const absl::Time start = absl::Now();
  absl::StatusOr<BfsResult> result = ResidentBfs(**dispatch, graph, source, window);
  const absl::Duration elapsed = absl::Now() - start;
  if (!result.ok()) {
    std::fprintf(stderr, "sluice bfs: %s\n", result.status().ToString().c_str());
    return 1;
  }
  const DeviceCounters after = (*dispatch)->device().counters();

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
  std::printf(
      "device work: %u windows, %llu kernel passes, %llu synchronizations, %llu bytes up, "
      "%llu bytes down, %.1f ms\n",
      result->windows, static_cast<unsigned long long>(after.launches - before.launches),
      static_cast<unsigned long long>(after.synchronizations - before.synchronizations),
      static_cast<unsigned long long>(after.bytes_uploaded - before.bytes_uploaded),
      static_cast<unsigned long long>(after.bytes_downloaded - before.bytes_downloaded),
      absl::ToDoubleMilliseconds(elapsed));
  const bool matches = result->levels == HostBfs(graph, source);
  std::printf("matches host BFS: %s\n", matches ? "yes" : "NO");
  return matches ? 0 : 1;
}

}  // namespace
}  // namespace sluice

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(sluice::kUsage);
  std::vector<char*> args = absl::ParseCommandLine(argc, argv);
  if (args.size() != 2) {
    std::fprintf(stderr, "%s\n", sluice::kUsage);
    return 2;
  }
  const std::string command = args[1];
  if (command == "bfs") return sluice::RunBfs();
  std::fprintf(stderr, "sluice: unknown command '%s'\n\n%s\n", command.c_str(), sluice::kUsage);
  return 2;
}
