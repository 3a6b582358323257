// The taint analysis's rules: sources, sinks and sanitizers, each naming a function and which of
// its arguments (and whether its result) the rule is about. Read from TOML (docs/analyzer.md):
//
//   [[source]]                      [[sink]]                    [[sanitizer]]
//   function = "fgets"              function = "system"         function = "sanitize"
//   arguments = [0]                 arguments = [0]             result = true
//                                                               arguments = [0]
//
// `arguments` are 0-based; `arguments_from = N` names every argument from N on (the scanf
// family's pointers, exec's arguments). A file adds to the built-in libc rules unless it says
// `defaults = false` at the top.
#ifndef SLUICE_ANALYZER_TAINT_CONFIG_H_
#define SLUICE_ANALYZER_TAINT_CONFIG_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace sluice::analyzer {

struct TaintRule {
  std::string function;
  bool result = false;               // the call's result (sources, sanitizers)
  std::vector<uint32_t> arguments;   // 0-based
  std::optional<uint32_t> arguments_from;  // every argument from this one on

  // Whether the rule names argument `index` of a call.
  bool Names(uint32_t index) const;
};

struct TaintConfig {
  std::vector<TaintRule> sources;
  std::vector<TaintRule> sinks;
  std::vector<TaintRule> sanitizers;

  // The rule for `function` in `rules`, or nullptr.
  static const TaintRule* Find(const std::vector<TaintRule>& rules, std::string_view function);
};

// The built-in rules for libc (docs/analyzer.md), as TOML.
std::string_view DefaultTaintRulesToml();
TaintConfig DefaultTaintConfig();

// Parses a rules file; unless it says `defaults = false`, its rules come after the built-in
// ones (a function named in both gets both). InvalidArgument "FILE:LINE:COLUMN: what" for
// malformed TOML, an unknown key or table, a rule without a function, an argument index past
// 1000, or a source or sanitizer that names neither its result nor an argument.
absl::StatusOr<TaintConfig> ParseTaintConfig(std::string_view text, std::string_view filename);
absl::StatusOr<TaintConfig> LoadTaintConfig(const std::string& path);

}  // namespace sluice::analyzer

#endif  // SLUICE_ANALYZER_TAINT_CONFIG_H_
