#include "sluice/analyzer/report.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <vector>

#include "absl/strings/str_format.h"
#include "nlohmann/json.hpp"
#include "sluice/base/utf8.h"

namespace sluice::analyzer {
namespace {

using Json = nlohmann::ordered_json;

// JSON is UTF-8, and a path or a name from the debug info need not be (a Latin-1 file name):
// a byte that is not is written as U+FFFD, where dumping it as it is would throw.
std::string Dump(const Json& root) {
  return root.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

struct RuleText {
  const char* id;
  const char* name;
  const char* short_text;
  const char* full_text;
};

constexpr RuleText kUninitRule = {
    "uninitialized-read", "UninitializedRead",
    "A variable is read where it may not have been initialized.",
    "On some path from the program's entry to this read, the variable (or this field, array or "
    "heap object) is allocated and never written, or written with a value that was itself "
    "uninitialized. IFDS possibly-uninitialized variables analysis over LLVM IR, "
    "context-sensitive, path-insensitive."};
constexpr RuleText kTaintRule = {
    "tainted-sink", "TaintedSink",
    "Data from an untrusted source reaches a sensitive argument.",
    "On some realizable path, data read from a taint source (the environment, input, files, "
    "sockets) flows through values, memory and calls, without passing a sanitizer, into an "
    "argument of a sink (a command, a format string, a size). IFDS taint analysis over LLVM IR, "
    "context-sensitive, path-insensitive."};

const RuleText& RuleOf(Analysis analysis) {
  return analysis == Analysis::kUninit ? kUninitRule : kTaintRule;
}

std::string PercentEncode(const std::string& path) {
  std::string encoded;
  for (unsigned char c : path) {
    if (std::isalnum(c) || std::string_view("/-._~").find(static_cast<char>(c)) !=
                               std::string_view::npos) {
      encoded += static_cast<char>(c);
    } else {
      encoded += absl::StrFormat("%%%02X", c);
    }
  }
  return encoded;
}

// Where results point: an absolute path is a file: URI; a relative one stays relative to a
// base id (SRCROOT, SRCROOT2, ...) per compilation directory, which the run maps to a file:
// URI (what SARIF viewers and code-scanning services resolve against a checkout).
class ArtifactLocations {
 public:
  Json Locate(const SourceLocation& location) {
    Json artifact;
    const std::filesystem::path path(location.file);
    if (path.is_absolute() || location.directory.empty()) {
      const std::string encoded = PercentEncode(path.lexically_normal().string());
      artifact["uri"] = path.is_absolute() ? "file://" + encoded : encoded;
      return artifact;
    }
    auto [it, inserted] = base_ids_.try_emplace(
        location.directory,
        base_ids_.empty() ? std::string("SRCROOT") : absl::StrFormat("SRCROOT%d", base_ids_.size() + 1));
    artifact["uri"] = PercentEncode(path.lexically_normal().string());
    artifact["uriBaseId"] = it->second;
    return artifact;
  }
  Json BaseIds() const {
    Json out = Json::object();
    for (const auto& [directory, id] : base_ids_) {
      std::string uri = "file://" + PercentEncode(std::filesystem::path(directory).lexically_normal().string());
      if (uri.back() != '/') uri += '/';
      out[id]["uri"] = uri;
    }
    return out;
  }

 private:
  std::map<std::string, std::string> base_ids_;
};

// The source line a finding is on, when the file can be read (a snippet for viewers).
class Snippets {
 public:
  std::string Line(const SourceLocation& location) {
    std::filesystem::path path(location.file);
    if (path.is_relative() && !location.directory.empty()) path = location.directory / path;
    auto [it, inserted] = files_.try_emplace(path.string());
    if (inserted) {
      std::ifstream in(path);
      std::string line;
      while (in && std::getline(in, line)) {
        if (!line.empty() && line.back() == '\r') line.pop_back();  // a CRLF file's lines
        it->second.push_back(line);
      }
    }
    if (location.line == 0 || location.line > it->second.size()) return "";
    return it->second[location.line - 1];
  }

 private:
  std::map<std::string, std::vector<std::string>> files_;
};

uint64_t TotalOf(const std::vector<Finding>& findings, const ReportExtras& extras) {
  return std::max<uint64_t>(extras.total, findings.size());
}

Json SummaryJson(const std::vector<FunctionFindings>& summary) {
  Json out = Json::array();
  for (const FunctionFindings& f : summary) {
    out.push_back(Json{{"function", f.function}, {"file", f.file}, {"findings", f.findings}});
  }
  return out;
}

// A place as a compiler writes it, "file:line:column", with what the debug info does not say
// left out (a function's start, where its parameters are stored, has a line and no column; code
// without debug locations, neither), not written as 0: an editor that reads the line and
// column goes to the place itself.
std::string Place(const SourceLocation& at) {
  if (at.line == 0) return at.file;
  if (at.column == 0) return absl::StrFormat("%s:%d", at.file, at.line);
  return absl::StrFormat("%s:%d:%d", at.file, at.line, at.column);
}

}  // namespace

std::vector<FunctionFindings> SummaryByFunction(const std::vector<Finding>& findings) {
  std::map<std::string, FunctionFindings> by_name;
  for (const Finding& f : findings) {
    auto [it, inserted] = by_name.try_emplace(f.function);
    if (inserted) it->second = FunctionFindings{f.function, f.location.file, 0};
    ++it->second.findings;
  }
  std::vector<FunctionFindings> out;
  out.reserve(by_name.size());
  for (auto& [name, counted] : by_name) out.push_back(std::move(counted));
  std::stable_sort(out.begin(), out.end(), [](const FunctionFindings& a,
                                              const FunctionFindings& b) {
    return a.findings > b.findings;
  });
  return out;
}

std::string FormatText(const std::vector<Finding>& findings, const ReportExtras& extras) {
  std::string out;
  for (const Finding& f : findings) {
    out += absl::StrFormat("%s: warning: %s [%s] in %s\n", Place(f.location), f.message, f.rule,
                           f.function);
    // The path to it as the notes a compiler gives (the finding's own place is the warning).
    for (size_t i = 0; i + 1 < f.path.size(); ++i) {
      out += absl::StrFormat("%s: note: %s\n", Place(f.path[i].location), f.path[i].message);
    }
    for (size_t i = 0; i < f.read_again.size() && i < kTextRereads; ++i) {
      const Finding::Reread& again = f.read_again[i];
      out += absl::StrFormat("%s: note: the same value read again (as '%s')\n",
                             Place(again.location), again.variable);
    }
    if (f.read_again.size() > kTextRereads) {
      out += absl::StrFormat("note: and %d more reads of the same value (--format=json lists "
                             "them all)\n",
                             f.read_again.size() - kTextRereads);
    }
  }
  const uint64_t total = TotalOf(findings, extras);
  if (total > findings.size()) {
    out += absl::StrFormat("note: %d more findings not listed (--max-findings)\n",
                           total - findings.size());
  }
  if (extras.in_system_headers > 0) {
    out += absl::StrFormat("note: %d finding%s in system headers not listed (--system-headers)\n",
                           extras.in_system_headers, extras.in_system_headers == 1 ? "" : "s");
  }
  for (const FunctionFindings& f : extras.summary) {
    out += absl::StrFormat("note: %d finding%s in %s (%s)\n", f.findings,
                           f.findings == 1 ? "" : "s", f.function, f.file);
  }
  return out;
}

std::string FormatJson(Analysis analysis, const std::vector<Finding>& findings,
                       const std::string& stats, const ReportExtras& extras) {
  Json root;
  root["analysis"] = AnalysisName(analysis);
  Json list = Json::array();
  for (const Finding& f : findings) {
    Json item;
    item["rule"] = f.rule;
    item["message"] = f.message;
    item["file"] = f.location.file;
    item["line"] = f.location.line;
    item["column"] = f.location.column;
    item["function"] = f.function;
    item["variable"] = f.variable;
    if (!f.sink.empty()) {
      item["sink"] = f.sink;
      item["argument"] = f.argument;
    }
    const auto place = [](const SourceLocation& at) {
      return Json{{"file", at.file}, {"line", at.line}, {"column", at.column}};
    };
    Json path = Json::array();
    for (const FlowStep& step : f.path) {
      Json json = place(step.location);
      json["message"] = step.message;
      path.push_back(std::move(json));
    }
    if (!f.path.empty()) item["origin"] = path.front();
    item["path"] = std::move(path);
    Json again = Json::array();
    for (const Finding::Reread& reread : f.read_again) {
      Json json = place(reread.location);
      json["variable"] = reread.variable;
      again.push_back(std::move(json));
    }
    if (!again.empty()) item["read_again"] = std::move(again);
    list.push_back(std::move(item));
  }
  root["findings"] = std::move(list);
  root["total_findings"] = TotalOf(findings, extras);
  root["system_header_findings"] = extras.in_system_headers;
  if (!extras.summary.empty()) root["summary"] = SummaryJson(extras.summary);
  if (!stats.empty()) root["stats"] = Json::parse(stats, nullptr, false);
  return Dump(root);
}

std::string FormatSarif(Analysis analysis, const std::vector<Finding>& findings,
                        const ReportExtras& extras) {
  const RuleText& rule = RuleOf(analysis);
  Json rule_json;
  rule_json["id"] = rule.id;
  rule_json["name"] = rule.name;
  rule_json["shortDescription"]["text"] = rule.short_text;
  rule_json["fullDescription"]["text"] = rule.full_text;
  rule_json["defaultConfiguration"]["level"] = "warning";

  Json driver;
  driver["name"] = "sluice analyze";
  driver["version"] = SLUICE_VERSION;
  driver["rules"] = Json::array({rule_json});

  Json results = Json::array();
  ArtifactLocations artifacts;
  Snippets snippets;
  for (const Finding& f : findings) {
    Json result;
    result["ruleId"] = f.rule;
    result["ruleIndex"] = 0;
    result["level"] = "warning";
    result["message"]["text"] = f.message;
    const auto physical = [&](const SourceLocation& at) {
      Json json;
      json["artifactLocation"] = artifacts.Locate(at);
      if (at.line > 0) {
        json["region"]["startLine"] = at.line;
        // The debug info's column counts bytes, the log's (columnKind) characters: they
        // differ on a line with UTF-8 past ASCII before it. A line that is not UTF-8 (a
        // Latin-1 source's) has no snippet, and its column is left in bytes, a character each
        // in such an encoding.
        const std::string line = snippets.Line(at);
        const bool utf8 = !line.empty() && IsValidUtf8(line);
        if (at.column > 0) {
          json["region"]["startColumn"] =
              utf8 ? Utf8CharactersBefore(line, at.column - 1) + 1 : at.column;
        }
        if (utf8) json["region"]["snippet"]["text"] = line;
      }
      return json;
    };
    Json location;
    location["physicalLocation"] = physical(f.location);
    Json logical;
    logical["name"] = f.function;
    logical["kind"] = "function";
    location["logicalLocations"] = Json::array({std::move(logical)});
    result["locations"] = Json::array({std::move(location)});
    // The path from the origin as a code flow (SARIF 3.36), one thread's locations in order;
    // the origin and the reads of the same value again as related locations (3.27.22).
    Json related = Json::array();
    if (!f.path.empty()) {
      Json steps = Json::array();
      for (const FlowStep& step : f.path) {
        Json at;
        at["location"]["physicalLocation"] = physical(step.location);
        at["location"]["message"]["text"] = step.message;
        steps.push_back(std::move(at));
      }
      Json flow;
      flow["message"]["text"] = f.path.front().message;
      flow["threadFlows"] = Json::array({Json{{"locations", std::move(steps)}}});
      result["codeFlows"] = Json::array({std::move(flow)});
      Json origin;
      origin["id"] = 0;
      origin["physicalLocation"] = physical(f.path.front().location);
      origin["message"]["text"] = f.path.front().message;
      related.push_back(std::move(origin));
    }
    for (size_t i = 0; i < f.read_again.size() && i < kSarifRereads; ++i) {
      const Finding::Reread& again = f.read_again[i];
      Json reread;
      reread["id"] = related.size();
      reread["physicalLocation"] = physical(again.location);
      reread["message"]["text"] =
          absl::StrFormat("the same value read again (as '%s')", again.variable);
      related.push_back(std::move(reread));
    }
    if (!related.empty()) result["relatedLocations"] = std::move(related);
    if (!f.read_again.empty()) result["properties"]["readAgain"] = f.read_again.size();
    result["partialFingerprints"]["sluiceFinding/v1"] = absl::StrFormat(
        "%s:%s:%s:%s:%d", f.rule, f.function, f.variable, f.sink, f.argument);
    results.push_back(std::move(result));
  }
  Json run;
  run["tool"]["driver"] = std::move(driver);
  if (Json bases = artifacts.BaseIds(); !bases.empty()) run["originalUriBaseIds"] = bases;
  run["invocations"] = Json::array({Json{{"executionSuccessful", true}}});
  run["columnKind"] = "unicodeCodePoints";
  run["results"] = std::move(results);
  // A property bag (SARIF 2.1.0, 3.8): what the results do not say themselves.
  run["properties"]["totalFindings"] = TotalOf(findings, extras);
  run["properties"]["systemHeaderFindings"] = extras.in_system_headers;
  if (!extras.summary.empty()) run["properties"]["findingsByFunction"] = SummaryJson(extras.summary);
  Json root;
  root["$schema"] = "https://json.schemastore.org/sarif-2.1.0.json";
  root["version"] = "2.1.0";
  root["runs"] = Json::array({std::move(run)});
  return Dump(root);
}

}  // namespace sluice::analyzer
