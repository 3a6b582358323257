// The `sluice` command line: runs Sluice workloads through the resident-dispatch interface,
// in-process (the embedded default) or against a sluiced daemon (--server).
//
// Built three times, each program running what the others hand it with the same arguments,
// found beside `sluice`:
//   - `sluice` runs the commands that work in-process: without the daemon's client or
//     OpenSSL, so that its process is 10 MiB at rest where it was 18 (the libraries' pages and
//     what they set up at start), a sixth of a 1M-path-edge solve's peak;
//   - sluice-remote (SLUICE_REMOTE_HERE) runs what belongs to a daemon: `info`, `health`,
//     `token` (OpenSSL), and `solve` and `bfs` with --server, which `sluice` becomes it for;
//   - sluice-analyze (SLUICE_ANALYZE_HERE, where LLVM is) runs `analyze`, in-process or with
//     --server: LLVM (about 40 MB of the process, loaded at start) is no part of any other
//     command's process.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <new>
#include <string>
#include <system_error>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/usage.h"
#include "sluice/base/command_line.h"
#include "sluice/tools/cli.h"

namespace {

constexpr char kUsage[] =
    "sluice COMMAND [flags]\n"
    "\n"
    "Commands:\n"
    "  bfs    BFS levels over a generated graph as a resident fixed point, checked against a\n"
    "         host BFS: --nodes --degree --seed --source --window [--server | --backend]\n"
    "  info   what a daemon serves: backend, devices, memory, sessions, limits, kernel\n"
    "         catalog: --server HOST:PORT\n"
    "  health whether a daemon serves (exit 0) or not (exit 1), by gRPC health checking:\n"
    "         --server HOST:PORT [--service sluice.v1.Sluice] [--timeout 5s]\n"
    "  gen    a seeded random IFDS problem: [--seed N] [--out FILE] [--binary]\n"
    "         [--procedures --nodes-per-procedure --facts --call-density --recursion\n"
    "          --max-callees --unreachable --identity --gen-rate --kill-rate --pair-rate\n"
    "          --seeds] [--front-end-shape [--scope N]] [--front-end-names]\n"
    "  solve  PROBLEM: the facts that hold at each node, as sorted node<TAB>fact lines:\n"
    "         [--server HOST:PORT | --backend auto|cpu|cuda] [--solver resident|reference]\n"
    "         [--out FILE] [--format tsv|json] [--stats] [--include-zero]\n"
    "         [--initial-capacity SLOTS]\n"
    "  analyze FILES...: IFDS analyses of C/C++ sources or LLVM IR (.ll, .bc), findings with\n"
    "         source locations: --analysis uninit|taint [--config RULES.toml]\n"
    "         [--format text|sarif|json] [--out FILE] [--server HOST:PORT | --backend]\n"
    "         [--solver resident|reference] [--stats] [--emit-problem FILE]\n"
    "         [--cflags FLAGS] [--compile-commands JSON] [--print-rules]\n"
    "         [--max-findings N] [--summary] [--system-headers]\n"
    "  token  a new bearer token and the digest a tenants file lists for it;\n"
    "         token hash: the digest of each token read from stdin, one per line\n"
    "\n"
    "Without --server, work runs in-process on --backend (auto, cpu or cuda). A daemon with\n"
    "tenants takes SLUICE_TOKEN (or --token); --tls, --tls-ca, --tls-cert, --tls-key for TLS.\n"
    "Flags may be spelled with dashes or underscores (--include-zero, --include_zero).\n"
    "Exit codes: 0 success, 1 the command failed, 2 bad usage or input.\n"
    "sluice --help lists every flag with its default and meaning.";

// Becomes `program` (beside this one) with `argv`, for `command`; returns only if that fails.
[[maybe_unused]] int ExecBeside(const char* program, const std::string& command,
                                std::vector<char*> argv) {
  std::error_code error;
  std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", error);
  if (error) self = argv[0];
  const std::string path = (self.parent_path() / program).string();
  argv[0] = const_cast<char*>(path.c_str());
  argv.push_back(nullptr);
  execv(path.c_str(), argv.data());
  std::fprintf(stderr, "sluice %s: cannot run %s: %s\n", command.c_str(), path.c_str(),
               std::strerror(errno));
  return sluice::kExitFailed;
}

int Run(int argc, char** argv) {
  const std::vector<char*> original(argv, argv + argc);
  const sluice::ParsedCommandLine parsed = sluice::ParseCommandLine(
      argc, argv, {.usage = kUsage, .flag_sources = {"tools/"}, .dashed_names = true});
  if (parsed.exit_code) return *parsed.exit_code;
  const std::vector<std::string>& args = parsed.positional;
  if (args.size() < 2) {
    std::fprintf(stderr, "%s\n", kUsage);
    return sluice::kExitUsage;
  }
  const std::string& command = args[1];
#if SLUICE_REMOTE_BESIDE
  if (command == "info" || command == "health" || command == "token" ||
      ((command == "solve" || command == "bfs") && !absl::GetFlag(FLAGS_server).empty())) {
    return ExecBeside("sluice-remote", command, original);
  }
#endif
  if (command == "solve") {
    if (args.size() != 3) {
      std::fprintf(stderr, "sluice solve: give exactly one problem file\n");
      return sluice::kExitUsage;
    }
    return sluice::RunSolve(args[2]);
  }
#if !SLUICE_REMOTE_BESIDE
  if (command == "token") return sluice::RunToken(args);
#endif
  if (command == "analyze") {
#if SLUICE_ANALYZE_HERE
    return sluice::RunAnalyze({args.begin() + 2, args.end()});
#elif SLUICE_WITH_ANALYZER
    return ExecBeside("sluice-analyze", command, original);
#else
    std::fprintf(stderr, "sluice analyze: this sluice was built without LLVM 14 (llvm-14-dev)\n");
    return sluice::kExitFailed;
#endif
  }
  if (args.size() != 2) {
    std::fprintf(stderr, "%s\n", kUsage);
    return sluice::kExitUsage;
  }
  if (command == "bfs") return sluice::RunBfs();
  if (command == "info") return sluice::RunInfo();
  if (command == "health") return sluice::RunHealth();
  if (command == "gen") return sluice::RunGen();
  std::fprintf(stderr, "sluice: unknown command '%s'\n\n%s\n", command.c_str(), kUsage);
  return sluice::kExitUsage;
}

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(kUsage);
  // Sizes are checked before anything large is built; this is for a machine with less memory
  // than a valid problem needs, which gets a message instead of an abort.
  try {
    return Run(argc, argv);
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "sluice: out of memory\n");
    return sluice::kExitFailed;
  }
}
