// Shared pieces of the `sluice` command line: the flags every command understands, opening
// the dispatcher they ask for, and human-readable sizes.
#ifndef SLUICE_TOOLS_CLI_H_
#define SLUICE_TOOLS_CLI_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/flags/declare.h"
#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "sluice/base/command_line.h"
#include "sluice/client/credentials.h"
#include "sluice/client/resident_dispatch.h"
#include "sluice/ifds/compile.h"
#include "sluice/ifds/problem.h"
#include "sluice/ifds/staged_flows.h"

ABSL_DECLARE_FLAG(std::string, server);
ABSL_DECLARE_FLAG(std::string, backend);
ABSL_DECLARE_FLAG(uint64_t, seed);

namespace sluice {

// A dispatcher chosen by --server (RemoteDispatch to that daemon) or, without it, by
// --backend (LocalDispatch on a device of this process: the embedded default), plus a
// one-line description of its traffic so far (device work, or network round trips).
struct OpenedDispatch {
  std::unique_ptr<ResidentDispatch> dispatch;
  std::function<std::string()> traffic;
  bool remote = false;
};
absl::StatusOr<OpenedDispatch> OpenDispatch(const std::string& client_name);

// The token (--token, else SLUICE_TOKEN) and TLS files (--tls*) for a daemon.
ClientCredentials CredentialsFromFlags();

// "1.5 GiB", "12 KiB", "17 B".
std::string HumanBytes(uint64_t bytes);

// Exit codes of every command (base/command_line.h): kExitOk, kExitFailed, and kExitUsage for
// bad usage, what a bad flag exits with too.
inline constexpr int kExitUsage = kExitUsageError;

// The exit code of a command that failed with `status`: kExitInterrupted when a signal
// cancelled it (see CancelOnSignal), kExitUsage for INVALID_ARGUMENT (a value it was given
// that it cannot take: a backend, a token, a TLS file), else kExitFailed.
int ExitCodeOf(const absl::Status& status);

// Solves `problem` with the solver --solver names (the resident one on the dispatcher of
// OpenDispatch, reporting progress on stderr after two seconds, or the reference solver),
// with its figures as text lines and as one JSON object. SIGINT or SIGTERM during the solve
// cancels it: Cancelled, saying so.
struct SolveOutcome {
  ifds::Solution solution;
  uint64_t path_edges = 0;
  uint64_t peak_device_bytes = 0;
  double seconds = 0;
  std::string stats_text;
  std::string stats_json;
};
// How the problem was read (its file's bytes and the seconds to read and parse it), for the
// phases --stats reports; zero when the problem came from elsewhere (a front end).
struct ReadPhase {
  double seconds = 0;
  uint64_t bytes = 0;
  // The bytes of the problem's flows sent to a daemon as they were read (StagedFlowLists),
  // within those seconds.
  uint64_t sent_bytes = 0;
  // The process's resident set before it began (0: not known), beside which --stats gives its
  // peak: what the process held for the problem over what its code and libraries hold.
  uint64_t resident_bytes_before = 0;
};
// What a caller hooks into SolveWithFlags's resident solve; each may be empty. Where the caller
// owns the problem it may free each part of its structure as the solver compiles it
// (`part_compiled`), each range of its flows (`flows_compiled`) and the rest once it is
// compiled (`compiled`): see ResidentOptions. `uploaded` runs once the resident solver has
// uploaded the problem: the caller may start work of its own that runs while the solve does,
// reading the problem's names only.
// `opened` is the dispatcher to solve on (else OpenDispatch's), and `staged` the lists of the
// problem's flows already on it (ResidentOptions::staged).
struct SolveHooks {
  ifds::PartCompiled part_compiled;
  ifds::FlowsCompiled flows_compiled;
  std::function<void()> compiled;
  std::function<void()> uploaded;
  OpenedDispatch* opened = nullptr;
  ifds::StagedFlowLists* staged = nullptr;
};
absl::StatusOr<SolveOutcome> SolveWithFlags(const ifds::Problem& problem,
                                            const std::string& command,
                                            const ReadPhase& read = {},
                                            const SolveHooks& hooks = {});
// "N MiB at R MB/s" for `bytes` moved in `seconds`.
std::string Rate(uint64_t bytes, double seconds);

// Writes `bytes` to --out, or stdout without it; WriteFile to a named file. A file that exists
// is written over in place and cut to the new bytes' length, not truncated first
// (WriteToFile, tools/output_file.h): it ends the same, sooner, unless the process is killed
// outright while writing. SIGINT and SIGTERM stop the writing at its next block: Cancelled.
absl::Status WriteOutput(const std::string& bytes);
// As WriteOutput, for output made a block at a time: `write` hands its blocks to the sink it
// is given, each written at once, so the whole output is never held. `*bytes` counts them.
absl::Status StreamOutput(
    absl::FunctionRef<absl::Status(absl::FunctionRef<absl::Status(std::string_view)>)> write,
    uint64_t* bytes);
absl::Status WriteFile(const std::string& path, const std::string& bytes);

// The commands.
int RunBfs();
int RunInfo();
int RunHealth();
int RunGen();
int RunSolve(const std::string& problem_path);
// `sluice analyze FILES...` (built with the analyzer only).
int RunAnalyze(const std::vector<std::string>& files);
// `sluice token`: a new token and the digest a tenants file lists; `sluice token hash` reads
// tokens (one per line) from stdin and prints their digests.
int RunToken(const std::vector<std::string>& args);

}  // namespace sluice

#endif  // SLUICE_TOOLS_CLI_H_
