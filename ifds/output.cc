#include "sluice/ifds/output.h"

#include <algorithm>
#include <cstring>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace sluice::ifds {
namespace {

// Names in bytewise order: order[r] is the index of the name ranked r, rank[i] the rank of
// names[i].
struct Ranking {
  std::vector<uint32_t> order;
  std::vector<uint32_t> rank;
};

Ranking Rank(const std::vector<std::string>& names) {
  Ranking r;
  r.order.resize(names.size());
  for (uint32_t i = 0; i < r.order.size(); ++i) r.order[i] = i;
  std::sort(r.order.begin(), r.order.end(),
            [&](uint32_t a, uint32_t b) { return names[a] < names[b]; });
  r.rank.resize(names.size());
  for (uint32_t i = 0; i < r.order.size(); ++i) r.rank[r.order[i]] = i;
  return r;
}

// The pairs in output order, each as one integer (node rank << 32 | fact rank): names are
// ranked once, then the pairs sort as integers; Node() and Fact() name them back.
class SortedPairs {
 public:
  SortedPairs(const Problem& p, const Solution& s, bool include_zero)
      : p_(p), nodes_(Rank(p.node_names)), facts_(Rank(p.fact_names)) {
    // Placed by node rank first (a counting sort: one pass to count, one to place), then
    // each node's few pairs sorted by fact rank.
    std::vector<uint64_t> start(nodes_.order.size() + 1, 0);
    for (const auto& [n, d] : s.facts) {
      if (d != kZeroFact || include_zero) ++start[nodes_.rank[n] + 1];
    }
    for (size_t r = 1; r < start.size(); ++r) start[r] += start[r - 1];
    keys_.resize(start.back());
    std::vector<uint64_t> next(start.begin(), start.end() - 1);
    for (const auto& [n, d] : s.facts) {
      if (d == kZeroFact && !include_zero) continue;
      const uint32_t r = nodes_.rank[n];
      keys_[next[r]++] = (uint64_t{r} << 32) | facts_.rank[d];
    }
    for (size_t r = 0; r + 1 < start.size(); ++r) {
      std::sort(keys_.begin() + static_cast<ptrdiff_t>(start[r]),
                keys_.begin() + static_cast<ptrdiff_t>(start[r + 1]));
    }
  }
  const std::vector<uint64_t>& keys() const { return keys_; }
  std::string_view Node(uint64_t key) const {
    return p_.node_names[nodes_.order[static_cast<uint32_t>(key >> 32)]];
  }
  std::string_view Fact(uint64_t key) const {
    return p_.fact_names[facts_.order[static_cast<uint32_t>(key)]];
  }

 private:
  const Problem& p_;
  const Ranking nodes_;
  const Ranking facts_;
  std::vector<uint64_t> keys_;
};

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
  const SortedPairs pairs(p, s, include_zero);
  // Sized once, then written in place: no row is formatted on its own.
  size_t bytes = 0;
  for (uint64_t key : pairs.keys()) bytes += pairs.Node(key).size() + pairs.Fact(key).size() + 2;
  std::string out(bytes, '\0');
  char* at = out.data();
  for (uint64_t key : pairs.keys()) {
    const std::string_view node = pairs.Node(key), fact = pairs.Fact(key);
    std::memcpy(at, node.data(), node.size());
    at += node.size();
    *at++ = '\t';
    std::memcpy(at, fact.data(), fact.size());
    at += fact.size();
    *at++ = '\n';
  }
  return out;
}

std::string FormatJson(const Problem& p, const Solution& s, bool include_zero,
                       const std::string& extra) {
  std::string out = "{\"results\":[";
  std::string_view current;
  bool first_node = true;
  const SortedPairs pairs(p, s, include_zero);
  for (uint64_t key : pairs.keys()) {
    const std::string_view node = pairs.Node(key), fact = pairs.Fact(key);
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
