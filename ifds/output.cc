#include "sluice/ifds/output.h"

#include <algorithm>
#include <cstring>
#include <string_view>
#include <thread>
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

// A name's first 16 bytes as two big-endian words (zero-padded: names hold no NUL byte), so
// that most comparisons are of integers in one array rather than of strings all over memory.
struct PrefixKey {
  uint64_t high, low;
  uint32_t index;
};

uint64_t BigEndianWord(std::string_view bytes) {
  uint64_t word = 0;
  for (size_t i = 0; i < 8; ++i) {
    word = (word << 8) | (i < bytes.size() ? static_cast<unsigned char>(bytes[i]) : 0);
  }
  return word;
}

Ranking Rank(const std::vector<std::string>& names) {
  Ranking r;
  std::vector<PrefixKey> keys(names.size());
  for (uint32_t i = 0; i < names.size(); ++i) {
    const std::string_view name = names[i];
    keys[i] = PrefixKey{BigEndianWord(name), BigEndianWord(name.size() > 8 ? name.substr(8) : ""),
                        i};
  }
  const auto before = [&](const PrefixKey& a, const PrefixKey& b) {
    if (a.high != b.high) return a.high < b.high;
    if (a.low != b.low) return a.low < b.low;
    return names[a.index] < names[b.index];  // 16 bytes alike: the rest decides
  };
  // Many names are sorted in two halves side by side, then merged: the answer is written once
  // the solve is done, when the cores have nothing else to do.
  constexpr size_t kHalvesFrom = size_t{1} << 16;
  if (keys.size() >= kHalvesFrom && std::thread::hardware_concurrency() > 1) {
    const auto middle = keys.begin() + static_cast<ptrdiff_t>(keys.size() / 2);
    std::thread first([&] { std::sort(keys.begin(), middle, before); });
    std::sort(middle, keys.end(), before);
    first.join();
    std::inplace_merge(keys.begin(), middle, keys.end(), before);
  } else {
    std::sort(keys.begin(), keys.end(), before);
  }
  r.order.resize(names.size());
  for (uint32_t i = 0; i < keys.size(); ++i) r.order[i] = keys[i].index;
  keys = {};
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
  std::string_view Fact(uint64_t key) const { return p_.fact_names[FactIndex(key)]; }
  uint32_t FactIndex(uint64_t key) const { return facts_.order[static_cast<uint32_t>(key)]; }
  static uint32_t NodeRank(uint64_t key) { return static_cast<uint32_t>(key >> 32); }

 private:
  const Problem& p_;
  const Ranking nodes_;
  const Ranking facts_;
  std::vector<uint64_t> keys_;
};

// The writers' block: bytes gather here and go to the sink a block at a time.
class BlockWriter {
 public:
  explicit BlockWriter(OutputSink sink) : sink_(sink) { block_.reserve(kOutputBlockBytes); }

  // Room for `bytes` more (at most a block): what is gathered goes first if it must.
  absl::Status Reserve(size_t bytes) {
    if (block_.size() + bytes <= kOutputBlockBytes) return absl::OkStatus();
    return Flush();
  }
  void Put(std::string_view bytes) { block_.append(bytes); }
  void Put(char c) { block_.push_back(c); }
  // Any length: in pieces of at most a block.
  absl::Status Write(std::string_view bytes) {
    while (!bytes.empty()) {
      const size_t piece = std::min(bytes.size(), kOutputBlockBytes);
      if (absl::Status s = Reserve(piece); !s.ok()) return s;
      Put(bytes.substr(0, piece));
      bytes.remove_prefix(piece);
    }
    return absl::OkStatus();
  }
  absl::Status Flush() {
    if (block_.empty()) return absl::OkStatus();
    absl::Status s = sink_(block_);
    block_.clear();
    return s;
  }

 private:
  OutputSink sink_;
  std::string block_;
};

// `s` as a JSON string: runs of plain bytes copied at once, quotes, backslashes and control
// characters escaped.
absl::Status WriteJsonString(std::string_view s, BlockWriter& out) {
  size_t plain = 0;
  while (plain < s.size() && s[plain] != '"' && s[plain] != '\\' &&
         static_cast<unsigned char>(s[plain]) >= 0x20) {
    ++plain;
  }
  if (plain == s.size() && s.size() + 2 <= kOutputBlockBytes) {  // nothing to escape
    if (absl::Status r = out.Reserve(s.size() + 2); !r.ok()) return r;
    out.Put('"');
    out.Put(s);
    out.Put('"');
    return absl::OkStatus();
  }
  if (absl::Status r = out.Write("\""); !r.ok()) return r;
  while (!s.empty()) {
    size_t plain = 0;
    while (plain < s.size() && s[plain] != '"' && s[plain] != '\\' &&
           static_cast<unsigned char>(s[plain]) >= 0x20) {
      ++plain;
    }
    if (absl::Status r = out.Write(s.substr(0, plain)); !r.ok()) return r;
    s.remove_prefix(plain);
    if (s.empty()) break;
    const unsigned char c = static_cast<unsigned char>(s[0]);
    const std::string escaped = c == '"' || c == '\\' ? std::string{'\\', static_cast<char>(c)}
                                                      : absl::StrFormat("\\u%04x", c);
    if (absl::Status r = out.Write(escaped); !r.ok()) return r;
    s.remove_prefix(1);
  }
  return out.Write("\"");
}

std::string Collect(absl::FunctionRef<absl::Status(OutputSink)> write) {
  std::string out;
  // A sink into a string never fails.
  write([&out](std::string_view block) {
    out.append(block);
    return absl::OkStatus();
  }).IgnoreError();
  return out;
}

}  // namespace

absl::Status WriteTsv(const Problem& p, const Solution& s, bool include_zero, OutputSink sink) {
  const SortedPairs pairs(p, s, include_zero);
  BlockWriter out(sink);
  for (uint64_t key : pairs.keys()) {
    const std::string_view node = pairs.Node(key), fact = pairs.Fact(key);
    const size_t row = node.size() + fact.size() + 2;
    if (row > kOutputBlockBytes) {  // names of a megabyte: written in pieces
      for (std::string_view piece : {node, std::string_view("\t"), fact, std::string_view("\n")}) {
        if (absl::Status r = out.Write(piece); !r.ok()) return r;
      }
      continue;
    }
    if (absl::Status r = out.Reserve(row); !r.ok()) return r;
    out.Put(node);
    out.Put('\t');
    out.Put(fact);
    out.Put('\n');
  }
  return out.Flush();
}

std::string FormatTsv(const Problem& p, const Solution& s, bool include_zero) {
  return Collect([&](OutputSink sink) { return WriteTsv(p, s, include_zero, sink); });
}

absl::Status WriteJson(const Problem& p, const Solution& s, bool include_zero,
                       std::string_view extra, OutputSink sink) {
  BlockWriter out(sink);
  if (absl::Status r = out.Write("{\"results\":["); !r.ok()) return r;
  // Each fact's name as JSON, made once: facts are few, pairs many.
  std::vector<std::string> fact_json(p.fact_names.size());
  for (size_t d = 0; d < fact_json.size(); ++d) {
    fact_json[d] = Collect([&](OutputSink to) {
      BlockWriter json(to);
      absl::Status r = WriteJsonString(p.fact_names[d], json);
      return r.ok() ? json.Flush() : r;
    });
  }
  bool first_node = true;
  uint32_t current = 0;
  const SortedPairs pairs(p, s, include_zero);
  for (uint64_t key : pairs.keys()) {
    absl::Status r;
    const bool new_node = first_node || SortedPairs::NodeRank(key) != current;
    if (new_node) {
      if (!first_node) r = out.Write("]},");
      if (r.ok()) r = out.Write("{\"node\":");
      if (r.ok()) r = WriteJsonString(pairs.Node(key), out);
      if (r.ok()) r = out.Write(",\"facts\":[");
      current = SortedPairs::NodeRank(key);
      first_node = false;
    }
    const std::string& fact = fact_json[pairs.FactIndex(key)];
    if (r.ok() && fact.size() + 1 <= kOutputBlockBytes) {
      r = out.Reserve(fact.size() + 1);
      if (r.ok()) {
        if (!new_node) out.Put(',');
        out.Put(fact);
      }
    } else if (r.ok()) {
      if (!new_node) r = out.Write(",");
      if (r.ok()) r = out.Write(fact);
    }
    if (!r.ok()) return r;
  }
  absl::Status r = out.Write(first_node ? "]" : "]}]");
  if (r.ok() && !extra.empty()) r = out.Write(",");
  if (r.ok()) r = out.Write(extra);
  if (r.ok()) r = out.Write("}\n");
  if (!r.ok()) return r;
  return out.Flush();
}

std::string FormatJson(const Problem& p, const Solution& s, bool include_zero,
                       const std::string& extra) {
  return Collect([&](OutputSink sink) { return WriteJson(p, s, include_zero, extra, sink); });
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
