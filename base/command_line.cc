#include "sluice/base/command_line.h"

#include <algorithm>
#include <cstdio>

#include "absl/flags/commandlineflag.h"
#include "absl/flags/parse.h"
#include "absl/flags/reflection.h"
#include "absl/flags/usage_config.h"
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

// absl's usage flags: this absl handles them itself, without registering them as flags.
bool IsAbslUsageFlag(absl::string_view name) {
  for (absl::string_view usage : {"helpfull", "helpshort", "helppackage", "helpon", "helpmatch",
                                  "version", "only_check_args"}) {
    if (name == usage) return true;
  }
  return false;
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
  const absl::string_view path = args.empty() ? "" : absl::string_view(args[0]);
  const absl::string_view program = path.substr(path.rfind('/') + 1);
  const auto usage_error = [&](const std::string& error) {
    std::fprintf(stderr, "%.*s: %s\n", static_cast<int>(program.size()), program.data(),
                 error.c_str());
    return ParsedCommandLine{.exit_code = kExitUsageError};
  };
  // --version prints the program's name and Sluice's version (absl's default describes how
  // absl itself was built).
  const std::string version = absl::StrCat(program, " ", SLUICE_VERSION, "\n");
  absl::FlagsUsageConfig config;
  config.version_string = [version] { return version; };
  absl::SetFlagsUsageConfig(config);
  // Flags named by --undefok, which absl ignores when they are unknown.
  std::vector<std::string> undefok;
  for (size_t i = 1; i < args.size() && args[i] != "--"; ++i) {
    for (absl::string_view prefix : {"--undefok", "-undefok"}) {
      const absl::string_view arg = args[i];
      if (arg == prefix && i + 1 < args.size()) {
        for (absl::string_view n : absl::StrSplit(args[i + 1], ',')) undefok.emplace_back(n);
      } else if (absl::StartsWith(arg, absl::StrCat(prefix, "="))) {
        for (absl::string_view n : absl::StrSplit(arg.substr(prefix.size() + 1), ',')) {
          undefok.emplace_back(n);
        }
      }
    }
  }
  // One pass that knows which arguments are flags and which are their values: a value is never
  // taken for a flag (`--out -h` names a file), and its dashes stay.
  for (size_t i = 1; i < args.size(); ++i) {
    std::string& arg = args[i];
    if (arg == "--") break;
    if (!IsFlagArgument(arg)) continue;
    const size_t start = arg[1] == '-' ? 2 : 1;
    const size_t end = std::min(arg.find('='), arg.size());
    if (spec.dashed_names) std::replace(arg.begin() + start, arg.begin() + end, '-', '_');
    const FlagArgument parsed = SplitFlagArgument(arg);
    if (parsed.name == "help" || parsed.name == "h") {
      std::fputs(FlagsHelp(spec).c_str(), stdout);
      return {.exit_code = 0};
    }
    if (IsAbslUsageFlag(parsed.name)) continue;
    absl::CommandLineFlag* flag = absl::FindCommandLineFlag(parsed.name);
    if (flag == nullptr && absl::StartsWith(parsed.name, "no") && !parsed.value) {
      const absl::CommandLineFlag* negated = absl::FindCommandLineFlag(parsed.name.substr(2));
      if (negated != nullptr && negated->IsOfType<bool>()) continue;
    }
    if (flag == nullptr) {
      const auto ignored = [&](absl::string_view n) {
        return std::find(undefok.begin(), undefok.end(), n) != undefok.end();
      };
      if (ignored(parsed.name) ||
          (absl::StartsWith(parsed.name, "no") && ignored(parsed.name.substr(2)))) {
        continue;
      }
      return usage_error(absl::StrCat("unknown flag --", parsed.name, " (see --help)"));
    }
    std::string value;
    if (parsed.value) {
      value = std::string(*parsed.value);
    } else if (flag->IsOfType<bool>()) {
      continue;
    } else if (i + 1 < args.size()) {
      value = args[++i];
    } else {
      return usage_error(absl::StrCat("flag --", parsed.name, " needs a value"));
    }
    if (IsAbslFlag(*flag)) continue;
    // Parsing here sets the flag; absl parses the same value again below. absl's message names
    // the flag and the value.
    if (std::string error; !flag->ParseFrom(value, &error)) return usage_error(error);
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
