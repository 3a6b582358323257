// The `sluice` command line: runs Sluice workloads through the resident-dispatch interface,
// in-process (the embedded default) or against a sluiced daemon (--server).
#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "tools/cli.h"

namespace {

constexpr char kUsage[] =
    "sluice COMMAND [flags]\n"
    "\n"
    "Commands:\n"
    "  bfs    BFS levels over a generated graph as a resident fixed point, checked against a\n"
    "         host BFS: --nodes --degree --seed --source --window [--server | --backend]\n"
    "  info   what a daemon serves: backend, devices, memory, sessions, limits, kernel\n"
    "         catalog: --server HOST:PORT\n"
    "\n"
    "Without --server, work runs in-process on --backend (auto, cpu or cuda).\n"
    "Exit codes: 0 success, 1 the command failed, 2 bad usage or input.";

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(kUsage);
  std::vector<char*> args = absl::ParseCommandLine(argc, argv);
  if (args.size() != 2) {
    std::fprintf(stderr, "%s\n", kUsage);
    return sluice::kExitUsage;
  }
  const std::string command = args[1];
  if (command == "bfs") return sluice::RunBfs();
  if (command == "info") return sluice::RunInfo();
  std::fprintf(stderr, "sluice: unknown command '%s'\n\n%s\n", command.c_str(), kUsage);
  return sluice::kExitUsage;
}
