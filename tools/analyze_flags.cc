// The flags of `sluice analyze`, defined in both programs that read them: `sluice`, which
// parses every command's flags and hands `analyze` to sluice-analyze, and sluice-analyze,
// which runs it (tools/sluice_main.cc says why they are two).
#include <cstdint>
#include <string>

#include "absl/flags/flag.h"

ABSL_FLAG(std::string, analysis, "", "analyze: uninit or taint");
ABSL_FLAG(std::string, config, "",
          "analyze: a taint rules file (TOML: [[source]], [[sink]], [[sanitizer]]), added to the "
          "built-in libc rules unless it says defaults = false");
ABSL_FLAG(std::string, cflags, "", "analyze: extra flags for Clang, space-separated");
ABSL_FLAG(std::string, compile_commands, "",
          "analyze: a compile_commands.json giving each source's flags (without FILES: every "
          "source it lists)");
ABSL_FLAG(std::string, clang, "", "analyze: the Clang to compile sources with");
ABSL_FLAG(std::string, emit_problem, "",
          "analyze: also write the IFDS problem to this file (binary if it ends in .bin, else "
          "the text format)");
ABSL_FLAG(bool, shared_slots, false,
          "analyze: number every function's own facts from one base (as a program too large "
          "for one id per fact is numbered): fewer facts, names by slot");
ABSL_FLAG(uint32_t, pool_objects, 64,
          "analyze: a pointer that may point to this many objects or more that can be written "
          "reads and writes the facts those objects share, the pool (docs/analyzer.md); 0: "
          "never");
ABSL_FLAG(bool, print_rules, false, "analyze: print the built-in taint rules (TOML) and exit");
ABSL_FLAG(uint64_t, max_findings, 0,
          "analyze: list at most this many findings (0: every one); the report still says how "
          "many there are in all");
ABSL_FLAG(bool, summary, false,
          "analyze: also report how many findings each function has, most first");
ABSL_FLAG(bool, system_headers, false,
          "analyze: also report findings in system headers (the C and C++ libraries' and "
          "others Clang searches for #include <...>, or -isystem names), which are left out "
          "and counted, as compilers leave out their warnings there");
