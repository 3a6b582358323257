#include "sluice/analyzer/taint_config.h"

#include <algorithm>

#include "absl/strings/str_format.h"
#include "sluice/base/small_file.h"
#include "sluice/base/status_macros.h"
#include "toml++/toml.h"

namespace sluice::analyzer {
namespace {

constexpr uint32_t kMaxArgumentIndex = 1000;
constexpr uint64_t kMaxConfigBytes = uint64_t{1} << 20;

constexpr std::string_view kDefaultRules = R"toml(# Built-in taint rules: libc's, the C++ library's.
# Sources: what the program reads from its environment, its input, files and sockets.
[[source]]
function = "getenv"
result = true
[[source]]
function = "secure_getenv"
result = true
[[source]]
function = "fgets"
arguments = [0]
[[source]]
function = "gets"
arguments = [0]
[[source]]
function = "read"
arguments = [1]
[[source]]
function = "pread"
arguments = [1]
[[source]]
function = "recv"
arguments = [1]
[[source]]
function = "recvfrom"
arguments = [1]
[[source]]
function = "fread"
arguments = [0]
[[source]]
function = "getline"
arguments = [0]
[[source]]
function = "getdelim"
arguments = [0]
[[source]]
function = "scanf"
arguments_from = 1
[[source]]
function = "__isoc99_scanf"
arguments_from = 1
[[source]]
function = "fscanf"
arguments_from = 2
[[source]]
function = "__isoc99_fscanf"
arguments_from = 2
[[source]]
function = "sscanf"
arguments_from = 2
[[source]]
function = "__isoc99_sscanf"
arguments_from = 2
[[source]]
function = "fgetc"
result = true
[[source]]
function = "getc"
result = true
[[source]]
function = "_IO_getc"
result = true
[[source]]
function = "getchar"
result = true
# The C++ library's input streams (a template named without its arguments covers each of its
# instances; a member's object is argument 0).
[[source]]
function = "std::getline"
arguments = [1]
[[source]]
function = "std::operator>>"
arguments = [1]
[[source]]
function = "std::istream::operator>>"
arguments = [1]
[[source]]
function = "std::istream::getline"
arguments = [1]
[[source]]
function = "std::istream::get"
arguments = [1]
result = true
[[source]]
function = "std::istream::read"
arguments = [1]

# Sinks: commands, format strings, and sizes of copies and allocations.
[[sink]]
function = "system"
arguments = [0]
[[sink]]
function = "popen"
arguments = [0]
[[sink]]
function = "execl"
arguments_from = 0
[[sink]]
function = "execlp"
arguments_from = 0
[[sink]]
function = "execle"
arguments_from = 0
[[sink]]
function = "execv"
arguments_from = 0
[[sink]]
function = "execvp"
arguments_from = 0
[[sink]]
function = "execve"
arguments_from = 0
[[sink]]
function = "execvpe"
arguments_from = 0
[[sink]]
function = "printf"
arguments = [0]
[[sink]]
function = "vprintf"
arguments = [0]
[[sink]]
function = "fprintf"
arguments = [1]
[[sink]]
function = "vfprintf"
arguments = [1]
[[sink]]
function = "dprintf"
arguments = [1]
[[sink]]
function = "sprintf"
arguments = [1]
[[sink]]
function = "vsprintf"
arguments = [1]
[[sink]]
function = "snprintf"
arguments = [2]
[[sink]]
function = "vsnprintf"
arguments = [2]
[[sink]]
function = "syslog"
arguments = [1]
[[sink]]
function = "memcpy"
arguments = [2]
[[sink]]
function = "memmove"
arguments = [2]
[[sink]]
function = "memset"
arguments = [2]
[[sink]]
function = "strncpy"
arguments = [2]
[[sink]]
function = "strncat"
arguments = [2]
[[sink]]
function = "malloc"
arguments = [0]
)toml";

std::string Where(std::string_view file, const toml::source_region& region) {
  return absl::StrFormat("%s:%d:%d", file, region.begin.line, region.begin.column);
}

absl::StatusOr<std::vector<uint32_t>> Indexes(std::string_view file, const toml::node& node,
                                              const char* key) {
  const toml::array* array = node.as_array();
  if (array == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: %s must be an array of argument indexes", Where(file, node.source()), key));
  }
  std::vector<uint32_t> out;
  for (const toml::node& item : *array) {
    std::optional<int64_t> value = item.value<int64_t>();
    if (!value || *value < 0 || *value > kMaxArgumentIndex) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: an argument index is an integer from 0 to %d", Where(file, item.source()),
          kMaxArgumentIndex));
    }
    out.push_back(static_cast<uint32_t>(*value));
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

absl::StatusOr<TaintRule> ParseRule(std::string_view file, std::string_view kind,
                                    const toml::table& table) {
  TaintRule rule;
  bool has_function = false;
  for (const auto& [key, node] : table) {
    if (key == "function") {
      std::optional<std::string> name = node.value<std::string>();
      if (!name || name->empty()) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "%s: function must be a function's name", Where(file, node.source())));
      }
      rule.function = *name;
      has_function = true;
    } else if (key == "result") {
      std::optional<bool> value = node.value<bool>();
      if (!value) {
        return absl::InvalidArgumentError(
            absl::StrFormat("%s: result must be true or false", Where(file, node.source())));
      }
      rule.result = *value;
    } else if (key == "arguments") {
      absl::StatusOr<std::vector<uint32_t>> indexes = Indexes(file, node, "arguments");
      if (!indexes.ok()) return indexes.status();
      rule.arguments = *std::move(indexes);
    } else if (key == "arguments_from") {
      std::optional<int64_t> value = node.value<int64_t>();
      if (!value || *value < 0 || *value > kMaxArgumentIndex) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "%s: arguments_from is an argument index from 0 to %d", Where(file, node.source()),
            kMaxArgumentIndex));
      }
      rule.arguments_from = static_cast<uint32_t>(*value);
    } else {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: unknown key \"%s\" in a %s rule (function, result, arguments, arguments_from)",
          Where(file, node.source()), key.str(), kind));
    }
  }
  if (!has_function) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: a %s rule needs function = \"NAME\"", Where(file, table.source()), kind));
  }
  if (!rule.result && rule.arguments.empty() && !rule.arguments_from) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: the %s rule for %s names neither its result nor an argument",
        Where(file, table.source()), kind, rule.function));
  }
  if (kind == "sink" && rule.result) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: a sink is about arguments (result = true means nothing for %s)",
        Where(file, table.source()), rule.function));
  }
  return rule;
}

absl::Status ParseInto(std::string_view text, std::string_view file, bool is_default,
                       TaintConfig* config, bool* keep_defaults) {
  toml::table root;
  try {
    root = toml::parse(text, file);
  } catch (const toml::parse_error& error) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: %s", Where(file, error.source()), error.description()));
  }
  for (const auto& [key, node] : root) {
    if (key == "defaults" && !is_default) {
      std::optional<bool> value = node.value<bool>();
      if (!value) {
        return absl::InvalidArgumentError(
            absl::StrFormat("%s: defaults must be true or false", Where(file, node.source())));
      }
      *keep_defaults = *value;
      continue;
    }
    std::vector<TaintRule>* rules = key == "source"      ? &config->sources
                                    : key == "sink"      ? &config->sinks
                                    : key == "sanitizer" ? &config->sanitizers
                                                         : nullptr;
    if (rules == nullptr) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: unknown key \"%s\" (a rules file holds [[source]], [[sink]] and [[sanitizer]] "
          "tables, and defaults = true|false)",
          Where(file, node.source()), key.str()));
    }
    const toml::array* array = node.as_array();
    if (array == nullptr) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: %s must be an array of tables ([[%s]])", Where(file, node.source()), key.str(),
          key.str()));
    }
    for (const toml::node& item : *array) {
      const toml::table* table = item.as_table();
      if (table == nullptr) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "%s: each %s is a table ([[%s]])", Where(file, item.source()), key.str(), key.str()));
      }
      absl::StatusOr<TaintRule> rule = ParseRule(file, key.str(), *table);
      if (!rule.ok()) return rule.status();
      rules->push_back(*std::move(rule));
    }
  }
  return absl::OkStatus();
}

}  // namespace

bool TaintRule::Names(uint32_t index) const {
  if (arguments_from && index >= *arguments_from) return true;
  return std::binary_search(arguments.begin(), arguments.end(), index);
}

const TaintRule* TaintConfig::Find(const std::vector<TaintRule>& rules,
                                   std::string_view function) {
  for (const TaintRule& rule : rules) {
    if (rule.function == function) return &rule;
  }
  return nullptr;
}

std::string_view DefaultTaintRulesToml() { return kDefaultRules; }

TaintConfig DefaultTaintConfig() {
  TaintConfig config;
  bool keep = true;
  // The built-in rules are a constant of this file, checked by the tests.
  if (!ParseInto(kDefaultRules, "<built-in rules>", true, &config, &keep).ok()) return {};
  return config;
}

absl::StatusOr<TaintConfig> ParseTaintConfig(std::string_view text, std::string_view filename) {
  TaintConfig own;
  bool keep_defaults = true;
  if (absl::Status s = ParseInto(text, filename, false, &own, &keep_defaults); !s.ok()) return s;
  if (!keep_defaults) return own;
  TaintConfig config = DefaultTaintConfig();
  auto append = [](std::vector<TaintRule>& to, std::vector<TaintRule>& from) {
    to.insert(to.end(), std::make_move_iterator(from.begin()), std::make_move_iterator(from.end()));
  };
  append(config.sources, own.sources);
  append(config.sinks, own.sinks);
  append(config.sanitizers, own.sanitizers);
  return config;
}

absl::StatusOr<TaintConfig> LoadTaintConfig(const std::string& path) {
  ASSIGN_OR_RETURN(const std::string text,
                   ReadSmallFile(path, kMaxConfigBytes, "the taint rules file"));
  return ParseTaintConfig(text, path);
}

}  // namespace sluice::analyzer
