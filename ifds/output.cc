#include "sluice/ifds/output.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>
#include <exception>
#include <functional>
#include <optional>
#include <span>
#include <string_view>
#include <system_error>
#include <thread>
#include <type_traits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "sluice/base/status_macros.h"
#include "sluice/base/ordered_work.h"

namespace sluice::ifds {
namespace {

// Names in bytewise order: order[r] is the index of the name ranked r, rank[i] the rank of
// names[i].
struct Ranking {
  PageVector<uint32_t> order;
  PageVector<uint32_t> rank;  // empty unless asked for
};

// 12 bytes of a name from some depth on, as big-endian words (zero-padded), and the name's
// index, in 16 bytes: names are ordered by comparing integers in one array rather than strings
// all over memory, 12 bytes at a time.
struct PrefixKey {
  static constexpr size_t kBytes = 12;
  PrefixKey() {}  // left unset: every key is set before it is read
  // `readable`: where the bytes that may be read from `name` on end (8 bytes at a time where
  // they are there), or null (a byte at a time).
  PrefixKey(std::string_view name, uint32_t index, size_t depth, const char* readable) {
    // Views within the name, even where it has ended.
    const std::string_view bytes = name.substr(std::min(depth, name.size()));
    high = BigEndianWord(bytes, readable);
    rest = (BigEndianWord(bytes.substr(std::min<size_t>(8, bytes.size())), readable) &
            ~uint64_t{0xffffffff}) |
           index;
  }
  uint32_t index() const { return static_cast<uint32_t>(rest); }
  // Whether two keys' names are alike in their 12 bytes.
  static bool Alike(const PrefixKey& a, const PrefixKey& b) {
    return a.high == b.high && (a.rest ^ b.rest) >> 32 == 0;
  }
  // Ordered by their 12 bytes, then their indexes.
  friend bool operator<(const PrefixKey& a, const PrefixKey& b) {
    return a.high != b.high ? a.high < b.high : a.rest < b.rest;
  }
  static uint64_t BigEndianWord(std::string_view bytes, const char* readable) {
    static_assert(std::endian::native == std::endian::little, "names load as little-endian");
    if (bytes.empty()) return 0;
    if (readable != nullptr && readable - bytes.data() >= 8) {
      uint64_t word;
      std::memcpy(&word, bytes.data(), 8);
      word = __builtin_bswap64(word);
      return bytes.size() >= 8 ? word : word & ~(~uint64_t{0} >> (8 * bytes.size()));
    }
    uint64_t word = 0;
    for (size_t i = 0; i < 8; ++i) {
      word = (word << 8) | (i < bytes.size() ? static_cast<unsigned char>(bytes[i]) : 0);
    }
    return word;
  }

  uint64_t high;
  uint64_t rest;  // bytes 8 to 11 in its high half, the name's index in its low one
};
static_assert(sizeof(PrefixKey) == 16);

// Many names are ranked, and many nodes' runs found, on two threads.
constexpr size_t kHalvesFrom = size_t{1} << 16;

// Runs `left` on a thread of its own and `right` on this one, both here where no thread can
// start; what either throws (bad_alloc) is thrown here once both are done.
template <class Left, class Right>
void SideBySide(Left left, Right right) {
  std::exception_ptr failed;
  std::optional<std::thread> side;
  try {
    side.emplace([&] {
      try {
        left();
      } catch (...) {
        failed = std::current_exception();
      }
    });
  } catch (const std::system_error&) {
    left();
  }
  std::exception_ptr here;
  try {
    right();
  } catch (...) {
    here = std::current_exception();
  }
  if (side.has_value()) side->join();
  if (here != nullptr) std::rethrow_exception(here);
  if (failed != nullptr) std::rethrow_exception(failed);
}

template <class Names>
Ranking Rank(const Names& names, bool with_rank) {
  const size_t n = names.size();
  PageVector<PrefixKey> keys(n);
  // A NameList's bytes lie together: its names are read 8 bytes at a time up to their end.
  const char* readable = nullptr;
  if constexpr (std::is_same_v<Names, NameList>) {
    if (n > 0) readable = names.back().data() + names.back().size();
  }
  // Calls `alike(first, last)` for each run of two or more keys in sorted [first, last) whose
  // names are alike in the keys' 12 bytes, and `ended(first, last)` for those whose bytes
  // there are all zero: names that have ended before them (the same name given twice), or
  // that hold NUL bytes, which a problem made in code may.
  const auto each_alike = [](PrefixKey* first, PrefixKey* last, auto alike, auto ended) {
    while (first != last) {
      PrefixKey* end = first + 1;
      while (end != last && PrefixKey::Alike(*first, *end)) ++end;
      if (end - first > 1) {
        if (first->high != 0 || first->rest >> 32 != 0) {
          alike(first, end);
        } else {
          ended(first, end);
        }
      }
      first = end;
    }
  };
  // Keys alike in their bytes and in their ended names' bytes too, ordered by the whole names.
  const auto by_name = [&](PrefixKey* first, PrefixKey* last) {
    std::sort(first, last, [&](const PrefixKey& a, const PrefixKey& b) {
      return names[a.index()] < names[b.index()];
    });
  };
  // Sorts keys made of their names' bytes from `depth` on by those bytes, 12 at a time: the keys
  // of names alike in theirs are made of their next 12 and sorted among themselves. `runs` is
  // room to work in, empty between calls.
  struct Run {
    PrefixKey *first, *last;
    size_t depth;  // where the bytes its keys hold begin
  };
  const auto order = [&](PrefixKey* first, PrefixKey* last, size_t depth,
                         std::vector<Run>& runs) {
    runs.push_back({first, last, depth});
    while (!runs.empty()) {
      const Run run = runs.back();
      runs.pop_back();
      std::sort(run.first, run.last);
      each_alike(
          run.first, run.last,
          [&](PrefixKey* alike, PrefixKey* alike_end) {
            const size_t next = run.depth + PrefixKey::kBytes;
            for (PrefixKey* key = alike; key != alike_end; ++key) {
              *key = PrefixKey(names[key->index()], key->index(), next, readable);
            }
            runs.push_back({alike, alike_end, next});
          },
          by_name);
    }
  };
  // Keys [begin, end) made of their names' first 12 bytes and sorted, the names alike in those
  // (a procedure's nodes named after it, say) ordered by the rest of their bytes aside: the
  // keys keep their first 12 bytes, which the halves' merge compares.
  const auto sort = [&](size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i) {
      keys[i] = PrefixKey(names[i], static_cast<uint32_t>(i), 0, readable);
    }
    std::sort(keys.data() + begin, keys.data() + end);
    std::vector<PrefixKey> rest;
    std::vector<Run> runs;
    each_alike(
        keys.data() + begin, keys.data() + end,
        [&](PrefixKey* alike, PrefixKey* alike_end) {
          rest.clear();
          for (PrefixKey* key = alike; key != alike_end; ++key) {
            rest.emplace_back(names[key->index()], key->index(), PrefixKey::kBytes, readable);
          }
          order(rest.data(), rest.data() + rest.size(), PrefixKey::kBytes, runs);
          // Alike in their first 12 bytes: only their indexes change places.
          for (size_t k = 0; k < rest.size(); ++k) {
            alike[k].rest = (alike[k].rest & ~uint64_t{0xffffffff}) | rest[k].index();
          }
        },
        by_name);
  };
  const auto before = [&](const PrefixKey& a, const PrefixKey& b) {
    if (!PrefixKey::Alike(a, b)) return a < b;
    return names[a.index()] < names[b.index()];  // 12 bytes alike: the rest decides
  };
  Ranking r;
  r.order.resize(n);
  if (with_rank) r.rank.resize(n);
  uint32_t* const rank = with_rank ? r.rank.data() : nullptr;
  // Merges sorted runs [a, a_end) and [b, b_end) into ranks from `at` on.
  const auto merge = [&](const PrefixKey* a, const PrefixKey* a_end, const PrefixKey* b,
                         const PrefixKey* b_end, size_t at) {
    const auto put = [&](const PrefixKey& key) {
      r.order[at] = key.index();
      if (rank != nullptr) rank[key.index()] = static_cast<uint32_t>(at);
      ++at;
    };
    while (a != a_end && b != b_end) put(before(*b, *a) ? *b++ : *a++);
    while (a != a_end) put(*a++);
    while (b != b_end) put(*b++);
  };
  // Many names are made keys and sorted in two halves side by side, then merged side by side,
  // a half of the ranks each: on cores a solve leaves idle while it runs (`sluice solve`), or
  // on the writer's once it is done.
  if (n < kHalvesFrom || std::thread::hardware_concurrency() < 2) {
    sort(0, n);
    merge(keys.data(), keys.data() + n, nullptr, nullptr, 0);
    return r;
  }
  const size_t middle = n / 2;
  const PrefixKey* const a = keys.data();
  const PrefixKey* const b = keys.data() + middle;
  const size_t a_size = middle, b_size = n - middle;
  SideBySide([&] { sort(0, middle); }, [&] { sort(middle, n); });
  // The first `ranks` ranks take `from_a` keys of the first half and the rest of the second's:
  // the fewest of the first half's such that its next key comes after the second's last taken.
  const size_t ranks = n / 2;
  size_t low = ranks > b_size ? ranks - b_size : 0, high = std::min(ranks, a_size);
  while (low < high) {
    const size_t i = low + (high - low) / 2;
    if (before(a[i], b[ranks - i - 1])) {
      low = i + 1;
    } else {
      high = i;
    }
  }
  const size_t from_a = low, from_b = ranks - low;
  SideBySide([&] { merge(a, a + from_a, b, b + from_b, 0); },
             [&] { merge(a + from_a, a + a_size, b + from_b, b + b_size, ranks); });
  return r;
}

// How many nodes ahead the writers fetch.
constexpr uint32_t kPrefetchAhead = 8;

// The solution in output order, a node at a time: nodes by name (ranked once), each node's
// pairs (contiguous in a solution sorted by node id) by fact name. No pair is copied: where each
// node's run of pairs begins in the solution is kept by node id, in 4 bytes a node (8 where the
// solution has 2^32 pairs or more), and how many pairs it has by rank, in 2, read in order as
// the writers go: a client of a daemon holds them beside the results it read back and their
// names, its peak where the names are long.
class SortedPairs {
 public:
  // `order`: RankOutput's of `p`, or null to rank here. `narrow_up_to`: OutputPieces's.
  SortedPairs(const Problem& p, const Solution& s, bool include_zero, const OutputOrder* order,
              uint64_t narrow_up_to)
      : p_(p), s_(Sorted(s, &sorted_copy_)),
        order_(order != nullptr ? *order : (own_order_ = RankOutput(p))) {
    // Fact ids in the same order as their names need no sorting within a node.
    facts_in_name_order_ = std::is_sorted(order_.fact_order.begin(), order_.fact_order.end());
    const auto& facts = s_.facts;
    const size_t nodes = order_.node_order.size();
    if (facts.size() <= std::min<uint64_t>(narrow_up_to, UINT32_MAX)) {
      starts_.resize(nodes + 1);
    } else {
      wide_starts_.resize(nodes + 1);
    }
    if (!include_zero) skip_.assign(nodes / 64 + 1, 0);
    // Node n's run begins at the first pair of a node n or after; its first pair is the zero
    // fact's, if it holds that (the smallest fact id), which the answer may leave out. Nodes
    // [first_node, last_node) from pairs [first, last), the nodes' first pair there.
    const auto starts = [&](size_t first_node, size_t last_node, size_t first, size_t last) {
      size_t n = first_node;
      for (size_t i = first; i < last; ++i) {
        const size_t node = std::min<size_t>(facts[i].first, nodes);
        if (n > node) continue;
        for (; n <= node; ++n) SetStart(n, i);
        if (!include_zero && node < nodes && facts[i].second == kZeroFact) {
          skip_[node / 64] |= uint64_t{1} << (node % 64);
        }
      }
      for (; n < last_node; ++n) SetStart(n, last);
    };
    counts_.resize(nodes);
    const auto counts = [&](size_t first, size_t last) {
      for (size_t r = first; r < last; ++r) {
        if (r + kPrefetchAhead < last) {
          __builtin_prefetch(StartAt(order_.node_order[r + kPrefetchAhead]));
        }
        const Run run = RunOf(order_.node_order[r]);
        counts_[r] = static_cast<uint16_t>(run.end - run.begin);  // at most every fact
      }
    };
    // Many nodes on two threads, halves of the nodes that share no word of skip_.
    const size_t half = nodes / 2 / 64 * 64;
    if (half == 0 || nodes < kHalvesFrom || std::thread::hardware_concurrency() < 2) {
      starts(0, nodes + 1, 0, facts.size());
      counts(0, nodes);
      return;
    }
    const size_t middle = static_cast<size_t>(
        std::lower_bound(facts.begin(), facts.end(), half,
                         [](const auto& pair, size_t node) { return pair.first < node; }) -
        facts.begin());
    SideBySide([&] { starts(0, half, 0, middle); },
               [&] { starts(half, nodes + 1, middle, facts.size()); });
    SideBySide([&] { counts(0, nodes / 2); }, [&] { counts(nodes / 2, nodes); });
  }

  // Nodes by rank: [0, nodes()).
  uint32_t nodes() const { return static_cast<uint32_t>(order_.node_order.size()); }
  // How many pairs the node ranked r has.
  uint32_t PairCount(uint32_t r) const { return counts_[r]; }
  std::string_view Node(uint32_t r) const { return p_.node_names[order_.node_order[r]]; }
  // Starts fetching what Node(r) and Facts(r) read (far apart: the nodes go by name, not id).
  // Where node r + kPrefetchAhead's run begins is fetched here too, for Prefetch of it later.
  void Prefetch(uint32_t r) const {
    const size_t nodes = order_.node_order.size();
    if (r + kPrefetchAhead < nodes) {
      __builtin_prefetch(StartAt(order_.node_order[r + kPrefetchAhead]));
    }
    if (r >= nodes || counts_[r] == 0) return;
    const uint32_t node = order_.node_order[r];
    __builtin_prefetch(p_.node_names[node].data());
    __builtin_prefetch(s_.facts.data() + Start(node));
  }
  // The fact ids of the node ranked r, in the order of their names (in `scratch` if they had
  // to be sorted).
  std::span<const uint32_t> Facts(uint32_t r, std::vector<uint32_t>* scratch) const {
    const uint32_t count = counts_[r];
    const uint64_t begin = count == 0 ? 0 : RunOf(order_.node_order[r]).begin;
    scratch->resize(count);
    if (facts_in_name_order_) {
      for (uint32_t k = 0; k < count; ++k) (*scratch)[k] = s_.facts[begin + k].second;
      return *scratch;
    }
    if (order_.fact_rank.size() <= kMarkedFacts) {
      // A bit a rank, read back in order: no sort of the node's few facts.
      std::array<uint64_t, kMarkedFacts / 64> marks{};
      for (uint32_t k = 0; k < count; ++k) {
        const uint32_t rank = order_.fact_rank[s_.facts[begin + k].second];
        marks[rank / 64] |= uint64_t{1} << (rank % 64);
      }
      uint32_t k = 0;
      for (uint32_t w = 0; w * 64 < order_.fact_rank.size(); ++w) {
        for (uint64_t bits = marks[w]; bits != 0; bits &= bits - 1) {
          (*scratch)[k++] = order_.fact_order[w * 64 + std::countr_zero(bits)];
        }
      }
      return *scratch;
    }
    for (uint32_t k = 0; k < count; ++k) {
      (*scratch)[k] = order_.fact_rank[s_.facts[begin + k].second];
    }
    std::sort(scratch->begin(), scratch->end());
    for (uint32_t& f : *scratch) f = order_.fact_order[f];
    return *scratch;
  }

 private:
  // A node's pairs in the solution: [begin, end), less its zero fact unless the answer has it
  // (a node's first pair where it holds it: pairs are sorted by fact id, and the zero fact's is
  // 0).
  struct Run {
    uint64_t begin, end;
  };
  uint64_t Start(size_t node) const {
    return wide_starts_.empty() ? starts_[node] : wide_starts_[node];
  }
  const void* StartAt(size_t node) const {
    return wide_starts_.empty() ? static_cast<const void*>(&starts_[node]) : &wide_starts_[node];
  }
  void SetStart(size_t node, uint64_t at) {
    if (wide_starts_.empty()) {
      starts_[node] = static_cast<uint32_t>(at);
    } else {
      wide_starts_[node] = at;
    }
  }
  Run RunOf(uint32_t node) const {
    const bool skip = !skip_.empty() && (skip_[node / 64] >> (node % 64) & 1) != 0;
    return Run{Start(node) + (skip ? 1 : 0), Start(node + 1)};
  }
  // Problems of at most this many facts order a node's by marking their ranks (Facts).
  static constexpr size_t kMarkedFacts = 256;
  // The solution itself when sorted by node then fact with no pair twice, as every solver
  // returns it; else a sorted copy without repeats.
  static const Solution& Sorted(const Solution& s, Solution* copy) {
    // Strictly increasing: sorted, and no pair twice.
    if (std::adjacent_find(s.facts.begin(), s.facts.end(), std::greater_equal<>()) ==
        s.facts.end()) {
      return s;
    }
    *copy = s;
    std::sort(copy->facts.begin(), copy->facts.end());
    copy->facts.erase(std::unique(copy->facts.begin(), copy->facts.end()), copy->facts.end());
    return *copy;
  }

  const Problem& p_;
  Solution sorted_copy_;
  const Solution& s_;
  OutputOrder own_order_;  // (declared before order_, which may refer to it)
  const OutputOrder& order_;
  bool facts_in_name_order_ = false;
  PageVector<uint32_t> starts_;       // by node id, and the end: or, for 2^32 pairs or more,
  PageVector<uint64_t> wide_starts_;  // these
  std::vector<uint64_t> skip_;        // a bit by node id: its first pair is left out
  PageVector<uint16_t> counts_;       // by rank: the pairs written
  static_assert(kMaxFacts <= UINT16_MAX);
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
  // Any length: in pieces of at most a block. Bytes of a quarter block or more go to the sink
  // as they are (after what is gathered), in blocks of their own: copied into the block, the
  // answer's pieces would be copied twice.
  absl::Status Write(std::string_view bytes) {
    if (bytes.size() >= kOutputBlockBytes / 4) {
      if (absl::Status s = Flush(); !s.ok()) return s;
      while (bytes.size() >= kOutputBlockBytes / 4) {
        const size_t piece = std::min(bytes.size(), kOutputBlockBytes);
        if (absl::Status s = sink_(bytes.substr(0, piece)); !s.ok()) return s;
        bytes.remove_prefix(piece);
      }
    }
    if (absl::Status s = Reserve(bytes.size()); !s.ok()) return s;
    Put(bytes);
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
void AppendJsonString(std::string_view s, std::string* out) {
  out->push_back('"');
  while (!s.empty()) {
    size_t plain = 0;
    while (plain < s.size() && s[plain] != '"' && s[plain] != '\\' &&
           static_cast<unsigned char>(s[plain]) >= 0x20) {
      ++plain;
    }
    out->append(s.substr(0, plain));
    s.remove_prefix(plain);
    if (s.empty()) break;
    const unsigned char c = static_cast<unsigned char>(s[0]);
    if (c == '"' || c == '\\') {
      out->push_back('\\');
      out->push_back(static_cast<char>(c));
    } else {
      absl::StrAppendFormat(out, "\\u%04x", c);
    }
    s.remove_prefix(1);
  }
  out->push_back('"');
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

// Formats the answer a piece at a time, a piece being the nodes of a range of ranks, on every
// core, while the calling thread writes the pieces in order: memory holds a few pieces, never
// the answer.
absl::Status WritePieces(
    const SortedPairs& pairs, const internal::OutputPieces& options,
    absl::FunctionRef<void(uint32_t begin, uint32_t end, std::string* piece)> format,
    absl::FunctionRef<absl::Status(std::string_view piece)> write) {
  const uint64_t pairs_per_piece = std::max<uint64_t>(options.pairs_per_piece, 1);
  const unsigned threads =
      options.threads > 0 ? static_cast<unsigned>(options.threads)
                          : std::max(1u, std::thread::hardware_concurrency());
  std::vector<uint32_t> starts;  // of the pieces, by node rank
  for (uint32_t r = 0; r < pairs.nodes();) {
    starts.push_back(r);
    for (uint64_t held = 0; r < pairs.nodes() && held < pairs_per_piece;) {
      held += pairs.PairCount(r++);
    }
  }
  starts.push_back(pairs.nodes());
  const size_t count = starts.size() - 1;
  OrderedWork<std::string> pieces(count, threads, 2 * size_t{threads},
                                  [&](size_t k, std::string& piece) {
                                    piece.clear();
                                    format(starts[k], starts[k + 1], &piece);
                                  });
  for (size_t k = 0; k < count; ++k) {
    const std::string& piece = pieces.Take(k);
    RETURN_IF_ERROR(write(piece));
    pieces.Release(k);
  }
  return absl::OkStatus();
}

}  // namespace

namespace internal {

absl::Status WriteTsv(const Problem& p, const Solution& s, bool include_zero,
                      const OutputPieces& options, OutputSink sink, const OutputOrder* order) {
  // Each fact's part of a line, "\tNAME\n", made once: facts are few, pairs many.
  std::vector<std::string> fact_tsv(p.fact_names.size());
  for (size_t d = 0; d < fact_tsv.size(); ++d) {
    fact_tsv[d] = absl::StrCat("\t", p.fact_names[d], "\n");
  }
  const SortedPairs pairs(p, s, include_zero, order, options.narrow_starts_up_to);
  BlockWriter out(sink);
  const auto format = [&](uint32_t begin, uint32_t end, std::string* piece) {
    std::vector<uint32_t> scratch;
    for (uint32_t r = begin; r < end; ++r) {
      pairs.Prefetch(r + kPrefetchAhead);
      if (pairs.PairCount(r) == 0) continue;
      const std::string_view node = pairs.Node(r);
      const std::span<const uint32_t> facts = pairs.Facts(r, &scratch);
      // A node's lines sized at once, then written in place.
      size_t bytes = facts.size() * node.size();
      for (const uint32_t fact : facts) bytes += fact_tsv[fact].size();
      const size_t at = piece->size();
      piece->resize(at + bytes);
      char* to = piece->data() + at;
      for (const uint32_t fact : facts) {
        std::memcpy(to, node.data(), node.size());
        to += node.size();
        std::memcpy(to, fact_tsv[fact].data(), fact_tsv[fact].size());
        to += fact_tsv[fact].size();
      }
    }
  };
  RETURN_IF_ERROR(WritePieces(pairs, options, format, [&](std::string_view piece) {
    return out.Write(piece);
  }));
  return out.Flush();
}

absl::Status WriteJson(const Problem& p, const Solution& s, bool include_zero,
                       std::string_view extra, const OutputPieces& options, OutputSink sink,
                       const OutputOrder* order) {
  // Each fact's name as JSON, made once: facts are few, pairs many.
  std::vector<std::string> fact_json(p.fact_names.size());
  for (size_t d = 0; d < fact_json.size(); ++d) AppendJsonString(p.fact_names[d], &fact_json[d]);
  const SortedPairs pairs(p, s, include_zero, order, options.narrow_starts_up_to);
  BlockWriter out(sink);
  RETURN_IF_ERROR(out.Write("{\"results\":["));
  const auto format = [&](uint32_t begin, uint32_t end, std::string* piece) {
    std::vector<uint32_t> scratch;
    for (uint32_t r = begin; r < end; ++r) {
      pairs.Prefetch(r + kPrefetchAhead);
      if (pairs.PairCount(r) == 0) continue;
      piece->append(",{\"node\":");
      AppendJsonString(pairs.Node(r), piece);
      piece->append(",\"facts\":[");
      bool first_fact = true;
      for (uint32_t fact : pairs.Facts(r, &scratch)) {
        if (!first_fact) piece->push_back(',');
        first_fact = false;
        piece->append(fact_json[fact]);
      }
      piece->append("]}");
    }
  };
  // Every node is written after a comma; the answer's first node goes without it.
  bool first = true;
  RETURN_IF_ERROR(WritePieces(pairs, options, format, [&](std::string_view piece) {
    if (first && !piece.empty()) {
      first = false;
      piece.remove_prefix(1);
    }
    return out.Write(piece);
  }));
  RETURN_IF_ERROR(out.Write("]"));
  if (!extra.empty()) {
    RETURN_IF_ERROR(out.Write(","));
    RETURN_IF_ERROR(out.Write(extra));
  }
  RETURN_IF_ERROR(out.Write("}\n"));
  return out.Flush();
}

}  // namespace internal

OutputOrder RankOutput(const Problem& p) {
  Ranking nodes = Rank(p.node_names, /*with_rank=*/false);
  Ranking facts = Rank(p.fact_names, /*with_rank=*/true);
  return OutputOrder{.node_order = std::move(nodes.order),
                     .fact_order = std::move(facts.order),
                     .fact_rank = std::move(facts.rank)};
}

absl::Status WriteTsv(const Problem& p, const Solution& s, bool include_zero, OutputSink sink,
                      const OutputOrder* order) {
  return internal::WriteTsv(p, s, include_zero, {}, sink, order);
}

std::string FormatTsv(const Problem& p, const Solution& s, bool include_zero) {
  return Collect([&](OutputSink sink) { return WriteTsv(p, s, include_zero, sink); });
}

absl::Status WriteJson(const Problem& p, const Solution& s, bool include_zero,
                       std::string_view extra, OutputSink sink, const OutputOrder* order) {
  return internal::WriteJson(p, s, include_zero, extra, {}, sink, order);
}

std::string FormatJson(const Problem& p, const Solution& s, bool include_zero,
                       const std::string& extra) {
  return Collect([&](OutputSink sink) { return WriteJson(p, s, include_zero, extra, sink); });
}

uint64_t SolutionDigest(const Solution& solution) {
  uint64_t hash = 0xcbf29ce484222325ull;
  for (const auto& [node, fact] : solution.facts) {
    // A pair a word at a time (the bytewise form took a multiply per byte: 8 per pair), each
    // step a bijection of the hash, so one changed pair always changes the digest.
    hash ^= (uint64_t{node} << 32) | fact;
    hash *= 0x100000001b3ull;
    hash ^= hash >> 29;
  }
  return hash;
}

}  // namespace sluice::ifds
