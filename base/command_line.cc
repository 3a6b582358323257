#include "base/command_line.h"

#include <algorithm>
#include <cstdio>

#include "absl/flags/commandlineflag.h"
#include "absl/flags/parse.h"
#include "absl/flags/reflection.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"

namespace sluice {
namespace {

// absl's own flags (--flagfile, --fromenv, --helpfull, ...) are left for absl to read.
bool IsAbslFlag(const absl::CommandLineFlag& flag) {
  return absl::StrContains(flag.Filename(), "absl/");
}

bool IsFlagArgument(absl::string_view arg) { return arg.size() >= 2 && arg[0] == '-'; }

// The flag's name and, after '=', its value, without the leading dashes.
struct FlagArgument {
  absl::string_view name;
  std::optional<absl::string_view> value;
};

FlagArgument SplitFlagArgument(absl::string_view arg) {
  arg.remove_prefix(arg[1] == '-' ? 2 : 1);
  const size_t eq = arg.find('=');
  if (eq == absl::string_view::npos) return {arg, std::nullopt};
  return {arg.substr(0, eq), arg.substr(eq + 1)};
}

void AppendWrapped(std::string& out, absl::string_view text, absl::string_view indent,
                   size_t width) {
  size_t column = 0;
  for (absl::string_view word : absl::StrSplit(text, ' ', absl::SkipEmpty())) {
    if (column > 0 && column + 1 + word.size() > width) {
      out += '\n';
      column = 0;
    }
    if (column == 0) {
      absl::StrAppend(&out, indent, word);
      column = indent.size() + word.size();
    } else {
      absl::StrAppend(&out, " ", word);
      column += 1 + word.size();
    }
  }
  out += '\n';
}

// Checks every flag argument before absl parses them, so that a bad one is a usage error
// (exit 2) with one clear line, rather than absl's exit 1. Returns the message, or "" when
// every flag is known and takes its value.
std::string CheckFlags(const std::vector<std::string>& args) {
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--") break;
    if (!IsFlagArgument(arg)) continue;
    const FlagArgument parsed = SplitFlagArgument(arg);
    absl::CommandLineFlag* flag = absl::FindCommandLineFlag(parsed.name);
    if (flag == nullptr && absl::StartsWith(parsed.name, "no") && !parsed.value) {
      const absl::CommandLineFlag* negated = absl::FindCommandLineFlag(parsed.name.substr(2));
      if (negated != nullptr && negated->IsOfType<bool>()) continue;
    }
    if (flag == nullptr) return absl::StrCat("unknown flag --", parsed.name, " (see --help)");
    absl::string_view value;
    if (parsed.value) {
      value = *parsed.value;
    } else if (flag->IsOfType<bool>()) {
      continue;
    } else if (i + 1 < args.size()) {
      value = args[++i];
    } else {
      return absl::StrCat("flag --", parsed.name, " needs a value");
    }
    if (IsAbslFlag(*flag)) continue;
    std::string error;
    if (!flag->ParseFrom(value, &error)) {
      // absl's message names the flag and the value.
      return error;
    }
  }
  return "";
}

}  // namespace

std::string FlagsHelp(const CommandLineSpec& spec) {
  std::vector<const absl::CommandLineFlag*> flags;
  for (const auto& [name, flag] : absl::GetAllFlags()) {
    for (const std::string& source : spec.flag_sources) {
      if (absl::StrContains(flag->Filename(), source)) {
        flags.push_back(flag);
        break;
      }
    }
  }
  std::sort(flags.begin(), flags.end(),
            [](const auto* a, const auto* b) { return a->Name() < b->Name(); });
  std::string out = spec.usage;
  if (!out.empty() && out.back() != '\n') out += '\n';
  if (flags.empty()) return out;
  out += "\nFlags:\n";
  for (const absl::CommandLineFlag* flag : flags) {
    const std::string default_value = flag->DefaultValue();
    absl::StrAppend(&out, "  --", flag->Name(), "=",
                    default_value.empty() ? "\"\"" : default_value, "\n");
    AppendWrapped(out, flag->Help(), "      ", 96);
  }
  return out;
}

ParsedCommandLine ParseCommandLine(int argc, char** argv, const CommandLineSpec& spec) {
  std::vector<std::string> args(argv, argv + argc);
  for (size_t i = 1; i < args.size(); ++i) {
    std::string& arg = args[i];
    if (arg == "--") break;
    if (!IsFlagArgument(arg)) continue;
    const size_t start = arg[1] == '-' ? 2 : 1;
    const size_t end = std::min(arg.find('='), arg.size());
    const absl::string_view name(arg.data() + start, end - start);
    if (name == "help" || name == "h") {
      std::fputs(FlagsHelp(spec).c_str(), stdout);
      return {.exit_code = 0};
    }
    if (spec.dashed_names) std::replace(arg.begin() + start, arg.begin() + end, '-', '_');
  }
  if (const std::string error = CheckFlags(args); !error.empty()) {
    const absl::string_view program = args.empty() ? "" : absl::string_view(args[0]);
    const absl::string_view base = program.substr(program.rfind('/') + 1);
    std::fprintf(stderr, "%.*s: %s\n", static_cast<int>(base.size()), base.data(),
                 error.c_str());
    return {.exit_code = kExitUsageError};
  }
  std::vector<char*> raw;
  for (std::string& arg : args) raw.push_back(arg.data());
  ParsedCommandLine parsed;
  for (char* arg : absl::ParseCommandLine(static_cast<int>(raw.size()), raw.data())) {
    parsed.positional.emplace_back(arg);
  }
  return parsed;
}

}  // namespace sluice
