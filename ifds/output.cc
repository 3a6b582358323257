#include "sluice/ifds/output.h"

#include <algorithm>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace sluice::ifds {
namespace {

// rank[i] = position of names[i] in bytewise order.
std::vector<uint32_t> Ranks(const std::vector<std::string>& names) {
  std::vector<uint32_t> order(names.size());
  for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(),
            [&](uint32_t a, uint32_t b) { return names[a] < names[b]; });
  std::vector<uint32_t> rank(names.size());
  for (uint32_t i = 0; i < order.size(); ++i) rank[order[i]] = i;
  return rank;
}

// (node name, fact name) pairs in output order: names are ranked once, then the pairs sort as
// integers.
std::vector<std::pair<std::string_view, std::string_view>> Sorted(const Problem& p,
                                                                  const Solution& s,
                                                                  bool include_zero) {
  const std::vector<uint32_t> node_rank = Ranks(p.node_names);
  const std::vector<uint32_t> fact_rank = Ranks(p.fact_names);
  std::vector<std::pair<uint64_t, std::pair<uint32_t, uint32_t>>> keyed;
  keyed.reserve(s.facts.size());
  for (const auto& [n, d] : s.facts) {
    if (d == kZeroFact && !include_zero) continue;
    keyed.push_back({(uint64_t{node_rank[n]} << 32) | fact_rank[d], {n, d}});
  }
  std::sort(keyed.begin(), keyed.end());
  std::vector<std::pair<std::string_view, std::string_view>> rows;
  rows.reserve(keyed.size());
  for (const auto& [key, pair] : keyed) {
    rows.emplace_back(p.node_names[pair.first], p.fact_names[pair.second]);
  }
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

uint64_t SolutionDigest(const Solution& solution) {
  uint64_t hash = 0xcbf29ce484222325ull;
  const auto add = [&hash](uint32_t word) {
    for (int byte = 0; byte < 4; ++byte) {
      hash ^= (word >> (8 * byte)) & 0xff;
      hash *= 0x100000001b3ull;
    }
  };
  for (const auto& [node, fact] : solution.facts) {
    add(node);
    add(fact);
  }
  return hash;
}

}  // namespace sluice::ifds
