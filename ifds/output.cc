#include "ifds/output.h"

#include <algorithm>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace sluice::ifds {
namespace {

// (node name, fact name) pairs in output order.
std::vector<std::pair<std::string_view, std::string_view>> Sorted(const Problem& p,
                                                                  const Solution& s,
                                                                  bool include_zero) {
  std::vector<std::pair<std::string_view, std::string_view>> rows;
  rows.reserve(s.facts.size());
  for (const auto& [n, d] : s.facts) {
    if (d == kZeroFact && !include_zero) continue;
    rows.emplace_back(p.node_names[n], p.fact_names[d]);
  }
  std::sort(rows.begin(), rows.end());
  return rows;
}

void AppendJsonString(std::string_view s, std::string* out) {
  out->push_back('"');
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out->push_back('\\');
      out->push_back(c);
    } else if (static_cast<unsigned char>(c) < 0x20) {
      absl::StrAppendFormat(out, "\\u%04x", static_cast<unsigned char>(c));
    } else {
      out->push_back(c);
    }
  }
  out->push_back('"');
}

}  // namespace

std::string FormatTsv(const Problem& p, const Solution& s, bool include_zero) {
  std::string out;
  for (const auto& [node, fact] : Sorted(p, s, include_zero)) {
    out.append(node);
    out.push_back('\t');
    out.append(fact);
    out.push_back('\n');
  }
  return out;
}

std::string FormatJson(const Problem& p, const Solution& s, bool include_zero,
                       const std::string& extra) {
  std::string out = "{\"results\":[";
  std::string_view current;
  bool first_node = true;
  for (const auto& [node, fact] : Sorted(p, s, include_zero)) {
    if (first_node || node != current) {
      if (!first_node) out += "]},";
      out += "{\"node\":";
      AppendJsonString(node, &out);
      out += ",\"facts\":[";
      current = node;
      first_node = false;
    } else {
      out += ",";
    }
    AppendJsonString(fact, &out);
  }
  if (!first_node) out += "]}";
  out += "]";
  if (!extra.empty()) absl::StrAppend(&out, ",", extra);
  out += "}\n";
  return out;
}

}  // namespace sluice::ifds
