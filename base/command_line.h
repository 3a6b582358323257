// Command-line parsing for Sluice's programs, on absl flags, with the behaviour a user expects:
//
//   - `--help` or `-h` prints the program's usage and its own flags (name, default, meaning) on
//     stdout, and the program exits 0;
//   - an unknown flag, a value a flag cannot take, or a flag missing its value is a usage error:
//     one line on stderr naming the flag, and the program exits 2 (absl alone would exit 1);
//   - optionally, flag names may be written with dashes (`--include-zero` for `--include_zero`).
//
// absl's own flags (--helpfull, --version, --undefok, --flagfile, --fromenv, ...) keep their
// meaning; flags read from a --flagfile or the environment are checked by absl alone (an
// unknown one there exits 1).
#ifndef SLUICE_BASE_COMMAND_LINE_H_
#define SLUICE_BASE_COMMAND_LINE_H_

#include <optional>
#include <string>
#include <vector>

namespace sluice {

// Exit codes of every Sluice program (sluiced and sluice).
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailed = 1;
inline constexpr int kExitUsageError = 2;  // a bad flag or argument, or a value it cannot take
inline constexpr int kExitDeviceLost = 3;  // sluiced: the GPU was lost for good; restart it

struct CommandLineSpec {
  // First lines of --help: what the program does and how it is called.
  std::string usage;
  // --help lists the flags defined in source files whose path contains one of these.
  std::vector<std::string> flag_sources;
  // Accept `--some-flag` for `--some_flag`.
  bool dashed_names = false;
};

struct ParsedCommandLine {
  // Set when the program should exit at once with this code: 0 after --help was printed,
  // kExitUsageError after a bad flag was reported.
  std::optional<int> exit_code;
  // argv[0] and the arguments that are not flags, in order.
  std::vector<std::string> positional;
};

// Parses argv and sets the flags. Writes --help to stdout and errors to stderr.
ParsedCommandLine ParseCommandLine(int argc, char** argv, const CommandLineSpec& spec);

// The --help text: spec.usage, then the flags from spec.flag_sources sorted by name.
std::string FlagsHelp(const CommandLineSpec& spec);

}  // namespace sluice

#endif  // SLUICE_BASE_COMMAND_LINE_H_
