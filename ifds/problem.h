// An IFDS problem (Reps, Horwitz, Sagiv 1995): procedures with start and exit nodes, the nodes of
// the interprocedural control-flow graph, a finite set of facts (fact 0 is the zero fact), and
// distributive flow functions on normal, call, return and call-to-return edges, each a relation
// over facts in identity-with-exceptions form. Seeds are facts that hold at procedure starts.
#ifndef SLUICE_IFDS_PROBLEM_H_
#define SLUICE_IFDS_PROBLEM_H_

#include <compare>
#include <cstddef>
#include <functional>
#include <cstdint>
#include <initializer_list>
#include <iterator>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "sluice/base/mapped_buffer.h"

namespace sluice::ifds {

// Facts are 16-bit on the device (path edges pack two facts and a node into 64 bits); the
// all-ones values are reserved as empty markers.
inline constexpr uint32_t kMaxFacts = 0xffff;        // fact ids 0 .. kMaxFacts - 1
inline constexpr uint32_t kMaxNodes = 0xfffffffe;    // node ids 0 .. kMaxNodes - 1
inline constexpr uint32_t kZeroFact = 0;

// A random-access iterator over a list read by index, (*list)[i] being its elements (values
// made on reading, not references).
template <class List>
class IndexIterator {
 public:
  using iterator_category = std::random_access_iterator_tag;
  using value_type = typename List::value_type;
  using difference_type = std::ptrdiff_t;
  using pointer = void;
  using reference = value_type;
  IndexIterator() = default;
  IndexIterator(const List* list, size_t i) : list_(list), i_(i) {}
  value_type operator*() const { return (*list_)[i_]; }
  value_type operator[](difference_type n) const { return *(*this + n); }
  IndexIterator& operator++() { return *this += 1; }
  IndexIterator operator++(int) { IndexIterator old = *this; ++*this; return old; }
  IndexIterator& operator--() { return *this -= 1; }
  IndexIterator operator--(int) { IndexIterator old = *this; --*this; return old; }
  IndexIterator& operator+=(difference_type n) {
    i_ = static_cast<size_t>(static_cast<difference_type>(i_) + n);
    return *this;
  }
  IndexIterator& operator-=(difference_type n) { return *this += -n; }
  friend IndexIterator operator+(IndexIterator it, difference_type n) { return it += n; }
  friend IndexIterator operator+(difference_type n, IndexIterator it) { return it += n; }
  friend IndexIterator operator-(IndexIterator it, difference_type n) { return it -= n; }
  friend difference_type operator-(const IndexIterator& a, const IndexIterator& b) {
    return static_cast<difference_type>(a.i_) - static_cast<difference_type>(b.i_);
  }
  friend bool operator==(const IndexIterator& a, const IndexIterator& b) { return a.i_ == b.i_; }
  friend auto operator<=>(const IndexIterator& a, const IndexIterator& b) { return a.i_ <=> b.i_; }

 private:
  const List* list_ = nullptr;
  size_t i_ = 0;
};

// A flow's pair (d, t) is one word, d in the high 16 bits and t in the low, as the device
// holds it (kernels/ifds.h, GraphLayout::PackPair): facts are below kMaxFacts, and words sort
// as their pairs do, by d and then t. A fact of kMaxFacts or more, which no problem has, is
// held as kMaxFacts, so that Validate still refuses it.
constexpr uint32_t PackPair(uint32_t d, uint32_t t) {
  return (d < kMaxFacts ? d : kMaxFacts) << 16 | (t < kMaxFacts ? t : kMaxFacts);
}
constexpr std::pair<uint32_t, uint32_t> UnpackPair(uint32_t word) {
  return {word >> 16, word & 0xffffu};
}

// A flow's pairs, read as pairs from their words.
class PairList {
 public:
  using value_type = std::pair<uint32_t, uint32_t>;
  using const_iterator = IndexIterator<PairList>;
  PairList() = default;
  explicit PairList(absl::Span<const uint32_t> words) : words_(words) {}
  size_t size() const { return words_.size(); }
  bool empty() const { return words_.empty(); }
  value_type operator[](size_t i) const { return UnpackPair(words_[i]); }
  const_iterator begin() const { return const_iterator(this, 0); }
  const_iterator end() const { return const_iterator(this, size()); }
  // The words, sorted as the pairs are (PackPair).
  absl::Span<const uint32_t> words() const { return words_; }

 private:
  absl::Span<const uint32_t> words_;
};

// The pairs of a flow being built (Flow), held as words.
class PairVector {
 public:
  using value_type = std::pair<uint32_t, uint32_t>;
  using const_iterator = IndexIterator<PairVector>;
  PairVector() = default;
  PairVector(std::initializer_list<value_type> pairs) {
    for (const auto& [d, t] : pairs) emplace_back(d, t);
  }
  void emplace_back(uint32_t d, uint32_t t) { words_.push_back(PackPair(d, t)); }
  void push_back(const value_type& pair) { emplace_back(pair.first, pair.second); }
  void reserve(size_t n) { words_.reserve(n); }
  void clear() { words_.clear(); }
  size_t size() const { return words_.size(); }
  bool empty() const { return words_.empty(); }
  value_type operator[](size_t i) const { return UnpackPair(words_[i]); }
  PairList list() const { return PairList(words_); }
  const_iterator begin() const { return const_iterator(this, 0); }
  const_iterator end() const { return const_iterator(this, size()); }
  std::vector<uint32_t>& words() { return words_; }
  const std::vector<uint32_t>& words() const { return words_; }
  friend bool operator==(const PairVector& a, const PairVector& b) { return a.words_ == b.words_; }

 private:
  std::vector<uint32_t> words_;
};

// A distributive flow function as a relation over facts:
//   f(d) = { d                 if identity and d is not killed }
//        ∪ { g for g in gens   if d is the zero fact }
//        ∪ { t for (d, t) in pairs }
//        ∪ { 0                 if d is the zero fact }   (the zero fact always flows)
// Lists are sorted and free of duplicates (Normalize). The zero fact is never killed.
// A problem holds its flows in a FlowTable and hands out FlowViews of them; a Flow is one
// being built.
struct FlowView {
  bool identity = false;
  absl::Span<const uint32_t> kills;
  absl::Span<const uint32_t> gens;
  PairList pairs;

  // Appends f(d) to `out` (possibly with repeats).
  void Apply(uint32_t d, std::vector<uint32_t>* out) const;
  // Whether the lists are sorted, free of duplicates and kill no zero fact.
  bool Normalized() const;
};

struct Flow {
  bool identity = false;
  std::vector<uint32_t> kills;
  std::vector<uint32_t> gens;
  PairVector pairs;

  // Sorts and deduplicates every list; drops kills of the zero fact.
  void Normalize();
  FlowView View() const { return FlowView{identity, kills, gens, pairs.list()}; }
  friend bool operator==(const Flow&, const Flow&) = default;
};

// Every flow function of a problem, flat: each kind of list of every flow in one array, with
// the flows' ends, so that millions of flows take no allocation each and 13 bytes beyond their
// lists (a vector of Flows: 80, and an allocation per list); a pair is one word (PackPair).
// The ends of the kills and of the gens are kept once some flow has one: a table of pairs
// alone, as a front end writes its flows, takes 5 bytes a flow beyond them.
class FlowTable {
 public:
  // Appends `flow` as it is (Validate refuses a problem whose flows are not normalized).
  void push_back(const Flow& flow) { push_back(flow.View()); }
  void push_back(const FlowView& flow);
  // Appends every flow of `other`, in its order.
  void Append(const FlowTable& other);
  // Appends a flow with lists of these sizes for the caller to fill in place.
  struct Lists {
    absl::Span<uint32_t> kills, gens;
    absl::Span<uint32_t> pairs;  // words (PackPair)
  };
  Lists Extend(bool identity, size_t kills, size_t gens, size_t pairs);
  // Builds a flow at the table's end in place, as a reader reads it (no Flow of its own): its
  // entries are added in any order, then EndFlow sorts and deduplicates them as
  // Flow::Normalize does and appends the flow. Truncate drops the flows from `flows` on, and
  // any entries added and not yet ended.
  void AddKill(uint32_t d) { kills_.push_back(d); }
  void AddGen(uint32_t d) { gens_.push_back(d); }
  void AddPair(uint32_t d, uint32_t t) { pairs_.push_back(PackPair(d, t)); }
  void AddPackedPair(uint32_t word) { pairs_.push_back(word); }  // a word PackPair made
  void EndFlow(bool identity);
  void Truncate(size_t flows);
  // Room for `flows` flows with `pairs` pairs, `kills` kills and `gens` gens in all.
  void reserve(size_t flows, size_t pairs = 0, size_t kills = 0, size_t gens = 0);
  // No flows; the room stays.
  void clear();
  // Gives back to the system what flows [first, last) hold, where their lists and ends fill
  // whole pages of memory of the table's own (large tables: PageAllocator); the entries at
  // the range's edges stay. The flows must not be read again; the table's size is unchanged.
  // Safe beside reads of other flows and beside Release of ranges that do not overlap, on
  // other threads: a range's last flow keeps its ends, which the next range's first reads.
  void Release(size_t first, size_t last);
  // Every flow's entries of each kind, flow after flow (flow f's from begins(f) on).
  absl::Span<const uint32_t> kill_entries() const { return kills_; }
  absl::Span<const uint32_t> gen_entries() const { return gens_; }
  absl::Span<const uint32_t> pair_entries() const { return pairs_; }  // words (PackPair)

  size_t size() const { return identity_.size(); }
  // Where flow f's lists begin in the table's kills, gens and pairs: the entries of every flow
  // before it.
  struct Begins {
    uint64_t kills = 0, gens = 0, pairs = 0;
  };
  Begins begins(size_t f) const {
    return f == 0 ? Begins{} : Begins{KillEnd(f - 1), GenEnd(f - 1), pair_end_[f - 1]};
  }
  // For a reader that knows every flow's sizes before it reads their lists (a binary file):
  // Resize makes the table, which must be empty, `flows` flows long with these many entries
  // in all, and Fill sets each flow in place, in any order, on several threads at once (each
  // filling flows of its own). Fill gives flow f, whose lists begin at `at` (the entries of the
  // flows before it) and take these sizes, its flag and ends, and returns its lists' room for
  // the caller to fill. No flow may be read before it is filled.
  void Resize(size_t flows, uint64_t kills, uint64_t gens, uint64_t pairs);
  Lists Fill(size_t f, bool identity, const Begins& at, uint32_t kills, uint32_t gens,
             uint32_t pairs);
  bool empty() const { return identity_.empty(); }
  FlowView operator[](size_t f) const;
  // The bytes that the flows' flags and ends take beyond their lists: 5 a flow, and 4 more
  // for each of the kills and the gens once some flow has one.
  uint64_t ends_bytes() const {
    return identity_.size() + 4 * (kill_end_.size() + gen_end_.size() + pair_end_.size());
  }
  // Entries of every flow: kills, gens and pairs.
  uint64_t kill_count() const { return kills_.size(); }
  uint64_t gen_count() const { return gens_.size(); }
  uint64_t pair_count() const { return pairs_.size(); }

  class const_iterator {
   public:
    using value_type = FlowView;
    using difference_type = std::ptrdiff_t;
    const_iterator(const FlowTable* table, size_t f) : table_(table), f_(f) {}
    FlowView operator*() const { return (*table_)[f_]; }
    const_iterator& operator++() {
      ++f_;
      return *this;
    }
    friend bool operator==(const const_iterator&, const const_iterator&) = default;

   private:
    const FlowTable* table_;
    size_t f_;
  };
  const_iterator begin() const { return const_iterator(this, 0); }
  const_iterator end() const { return const_iterator(this, size()); }

  // The same flows, with the same entries added and not yet ended: however the ends are kept.
  friend bool operator==(const FlowTable& a, const FlowTable& b);

 private:
  // Refuses lists past 2^32 entries, as memory is refused (std::bad_array_new_length, a
  // bad_alloc, which every reader turns into its message): a problem file (4 GiB at most)
  // cannot list that many, and the device takes fewer words in all.
  static void CheckEntries(uint64_t kills, uint64_t gens, uint64_t pairs);
  // Ends a flow whose lists end where the lists do now.
  void EndLists(bool identity);
  // Where flow f's kills and gens end.
  uint32_t KillEnd(size_t f) const { return kill_end_.empty() ? 0 : kill_end_[f]; }
  uint32_t GenEnd(size_t f) const { return gen_end_.empty() ? 0 : gen_end_[f]; }

  PageVector<uint8_t> identity_;
  // Where flow f's lists end; they begin where flow f - 1's end. 32-bit (CheckEntries): 12
  // bytes a flow. kill_end_ is empty while no flow has a kill, or holds an end for every flow
  // (zeros for those before the first kill), and gen_end_ likewise.
  PageVector<uint32_t> kill_end_, gen_end_, pair_end_;
  PageVector<uint32_t> kills_, gens_;
  PageVector<uint32_t> pairs_;  // words (PackPair)
};

// Names, each a view of one array of their bytes: 4 bytes of index a name beside its bytes,
// where a vector of strings takes 32 (and an allocation past 15 bytes). A problem's node names
// are most of the memory a solve holds besides the device's, and are read back only to write
// the answer. Their bytes are fewer than 2^32 in all (a problem file's are: it has at most
// 4 GiB): a name past that is refused as memory is (std::bad_array_new_length, a bad_alloc,
// which every reader turns into its message).
class NameList {
 public:
  using value_type = std::string_view;

  NameList() = default;
  NameList(std::initializer_list<std::string_view> names) {
    for (std::string_view name : names) push_back(name);
  }

  size_t size() const { return ends_.size(); }
  bool empty() const { return ends_.empty(); }
  std::string_view operator[](size_t i) const {
    const uint64_t begin = i == 0 ? 0 : ends_[i - 1];
    return std::string_view(bytes_.data() + begin, ends_[i] - begin);
  }
  std::string_view back() const { return (*this)[size() - 1]; }
  // `name` may be one of the list's own.
  void push_back(std::string_view name) {
    if (Holds(name)) return push_back(std::string(name));
    CheckBytes(uint64_t{bytes_.size()} + name.size());
    ReserveHugeRoom(bytes_, bytes_.size() + name.size());
    ReserveHugeRoom(ends_, ends_.size() + 1);
    bytes_.insert(bytes_.end(), name.begin(), name.end());
    ends_.push_back(static_cast<uint32_t>(bytes_.size()));
  }
  void emplace_back(std::string_view name) { push_back(name); }
  void pop_back() {
    ends_.pop_back();
    bytes_.resize(ends_.empty() ? 0 : ends_.back());
  }
  // Names i onwards move (a test's edit, not a reader's). `name` may be one of the list's own.
  void Set(size_t i, std::string_view name);
  void reserve(size_t names, size_t bytes = 0) {
    ends_.reserve(names);
    bytes_.reserve(bytes);
  }

  using const_iterator = IndexIterator<NameList>;
  const_iterator begin() const { return const_iterator(this, 0); }
  const_iterator end() const { return const_iterator(this, size()); }

  friend bool operator==(const NameList&, const NameList&) = default;

 private:
  // Refuses a list of more bytes than its ends count (see the class comment).
  static void CheckBytes(uint64_t bytes);
  // Whether `name`'s bytes are in the list's own array (which an insertion may move).
  bool Holds(std::string_view name) const {
    return !bytes_.empty() && std::less_equal<const char*>()(bytes_.data(), name.data()) &&
           std::less<const char*>()(name.data(), bytes_.data() + bytes_.size());
  }

  PageVector<char> bytes_;
  PageVector<uint32_t> ends_;  // where each name's bytes end; they begin where the last's end
};

struct Procedure {
  std::string name;
  uint32_t start = 0;
  uint32_t exit = 0;
};

// An intraprocedural edge: a normal edge, or a call-to-return edge of a call site.
struct Edge {
  uint32_t from = 0;
  uint32_t to = 0;
  uint32_t flow = 0;  // index into Problem::flows
};

struct Callee {
  uint32_t procedure = 0;
  uint32_t call_flow = 0;    // call node facts -> callee start facts
  uint32_t return_flow = 0;  // callee exit facts -> return site facts
};

// A call node with its return site (in the same procedure), call-to-return flow, and one or
// more callees: Problem::callees from the site before's callees_end (0 for the first site) up
// to its own (Problem::CalleesOf). The callees of every site lie in one array, site after site,
// rather than in a heap block of each site's (5 MB less at the end of reading a
// 5M-path-edge problem, and no allocation for each call site read).
struct CallSite {
  uint32_t call = 0;
  uint32_t return_site = 0;
  uint32_t call_to_return_flow = 0;
  uint32_t callees_end = 0;
};

// The most callees a problem may have in all: callees_end is 32 bits.
inline constexpr uint64_t kMaxProblemCallees = UINT32_MAX;

struct Problem {
  std::vector<std::string> fact_names;  // [0] is the zero fact
  NameList node_names;
  PageVector<uint32_t> node_procedure;  // per node
  PageVector<Procedure> procedures;
  FlowTable flows;
  PageVector<Edge> edges;  // normal edges
  PageVector<CallSite> call_sites;
  PageVector<Callee> callees;  // every call site's, site after site (CallSite::callees_end)
  std::vector<std::pair<uint32_t, uint32_t>> seeds;  // (procedure start node, fact)

  uint32_t fact_count() const { return static_cast<uint32_t>(fact_names.size()); }
  uint32_t node_count() const { return static_cast<uint32_t>(node_names.size()); }
  // The callees of call site `site`, of a problem that Validate accepts or that was built by
  // AddCallSite and AddCallee alone (whose sites' ends never go back).
  absl::Span<const Callee> CalleesOf(size_t site) const {
    const uint32_t begin = site == 0 ? 0 : call_sites[site - 1].callees_end;
    return absl::MakeConstSpan(callees.data() + begin, call_sites[site].callees_end - begin);
  }
  // Adds a call site whose callees follow (AddCallee), and a callee to the last call site.
  // The callees must number at most kMaxProblemCallees (the caller checks).
  void AddCallSite(const CallSite& site) {
    call_sites.push_back(site);
    call_sites.back().callees_end = static_cast<uint32_t>(callees.size());
  }
  void AddCallee(const Callee& callee) {
    callees.push_back(callee);
    call_sites.back().callees_end = static_cast<uint32_t>(callees.size());
  }
};

// The parts of a problem that compiling it reads (Compile), besides its flows, which it is
// done with in this order.
enum class ProblemPart : uint8_t {
  kEdges,
  kCallSites,
  kProcedures,  // and each node's procedure, which compiling does not read
};
// Gives back `part`, memory and all (assigning `{}` to a vector keeps its memory).
void FreePart(Problem* problem, ProblemPart part);
// Gives back the flows, edges, call sites and procedures (and each node's), memory and all: a
// solver that has compiled the problem reads its names, counts and seeds alone
// (ResidentOptions::compiled).
void FreeCompiledParts(Problem* problem);

// Checks every structural rule: ids in range, at least the zero fact, flows normalized and
// naming existing facts, edges within one procedure, return sites in the call's procedure, at
// most one call site per node, callees listed, seeds at procedure starts. InvalidArgument
// naming the first violation.
absl::Status Validate(const Problem& problem);
// Validate's checks of flows [first, last) alone (normalized, naming existing facts), and
// Validate without reading flows [0, flows_checked), which ValidateFlows has checked (they
// may be gone since: FlowTable::Release). The same errors as Validate's.
absl::Status ValidateFlows(const Problem& problem, size_t first, size_t last);
// As ValidateFlows, for flows [first, last) of `flows` in a problem of `facts` facts.
absl::Status ValidateFlows(const FlowTable& flows, uint64_t facts, size_t first, size_t last);
absl::Status Validate(const Problem& problem, size_t flows_checked);

// The solution: every (node, fact) such that the fact holds at the node on some realizable
// path from a seed, sorted by node id then fact id.
struct Solution {
  PageVector<std::pair<uint32_t, uint32_t>> facts;
  friend bool operator==(const Solution&, const Solution&) = default;
};

}  // namespace sluice::ifds

#endif  // SLUICE_IFDS_PROBLEM_H_
