#include "sluice/ifds/problem.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <new>

#include "absl/strings/str_format.h"
#include "sluice/base/status_macros.h"

namespace sluice::ifds {
namespace {

// Lists written by a program (WriteText, a front end) usually come sorted and unique already:
// one pass finds that, and the sort is for the rest. Entries from `begin` on.
template <class List>
void SortUnique(List* v, size_t begin = 0) {
  using T = typename List::value_type;
  const auto first = v->begin() + static_cast<ptrdiff_t>(begin);
  if (std::adjacent_find(first, v->end(), std::greater_equal<T>()) == v->end()) return;
  std::sort(first, v->end());
  v->erase(std::unique(first, v->end()), v->end());
}

}  // namespace

void Flow::Normalize() {
  SortUnique(&kills);
  if (!kills.empty() && kills.front() == kZeroFact) kills.erase(kills.begin());
  SortUnique(&gens);
  SortUnique(&pairs.words());
}

void FlowView::Apply(uint32_t d, std::vector<uint32_t>* out) const {
  if (d == kZeroFact) {
    out->push_back(kZeroFact);
    out->insert(out->end(), gens.begin(), gens.end());
  } else if (identity && !std::binary_search(kills.begin(), kills.end(), d)) {
    out->push_back(d);
  }
  const absl::Span<const uint32_t> words = pairs.words();
  auto it = std::lower_bound(words.begin(), words.end(), PackPair(d, 0));
  for (; it != words.end() && UnpackPair(*it).first == d; ++it) {
    out->push_back(UnpackPair(*it).second);
  }
}

namespace {
template <class T>
bool SortedUnique(absl::Span<const T> v) {
  return std::adjacent_find(v.begin(), v.end(), std::greater_equal<T>()) == v.end();
}
}  // namespace

bool FlowView::Normalized() const {
  return SortedUnique(kills) && SortedUnique(gens) && SortedUnique(pairs.words()) &&
         (kills.empty() || kills.front() != kZeroFact);
}

void FlowTable::CheckEntries(uint64_t kills, uint64_t gens, uint64_t pairs) {
  if (std::max({kills, gens, pairs}) > std::numeric_limits<uint32_t>::max()) {
    throw std::bad_array_new_length();
  }
}

namespace {

// Makes `ends`, a table's kill or gen ends, hold an end for each of its `flows` flows, where
// it holds none (no flow had an entry of that kind: every end is 0).
void KeepEnds(size_t flows, PageVector<uint32_t>* ends) {
  if (ends->empty()) ends->assign(flows, 0);
}

// Ends the last flow's list of `entries` in `ends` (kills or gens), where some flow has one.
void EndList(size_t flows, const PageVector<uint32_t>& entries, PageVector<uint32_t>* ends) {
  if (entries.empty() && ends->empty()) return;
  KeepEnds(flows, ends);
  ends->push_back(static_cast<uint32_t>(entries.size()));
}

}  // namespace

void FlowTable::EndLists(bool identity) {
  CheckEntries(kills_.size(), gens_.size(), pairs_.size());
  EndList(size(), kills_, &kill_end_);
  EndList(size(), gens_, &gen_end_);
  identity_.push_back(identity ? 1 : 0);
  pair_end_.push_back(static_cast<uint32_t>(pairs_.size()));
}

bool operator==(const FlowTable& a, const FlowTable& b) {
  if (a.identity_ != b.identity_ || a.pair_end_ != b.pair_end_ || a.kills_ != b.kills_ ||
      a.gens_ != b.gens_ || a.pairs_ != b.pairs_) {
    return false;
  }
  for (size_t f = 0; f < a.size(); ++f) {
    if (a.KillEnd(f) != b.KillEnd(f) || a.GenEnd(f) != b.GenEnd(f)) return false;
  }
  return true;
}

void FlowTable::push_back(const FlowView& flow) {
  kills_.insert(kills_.end(), flow.kills.begin(), flow.kills.end());
  gens_.insert(gens_.end(), flow.gens.begin(), flow.gens.end());
  pairs_.insert(pairs_.end(), flow.pairs.words().begin(), flow.pairs.words().end());
  EndLists(flow.identity);
}

void FlowTable::Append(const FlowTable& other) {
  CheckEntries(kills_.size() + other.kills_.size(), gens_.size() + other.gens_.size(),
               pairs_.size() + other.pairs_.size());
  // Ends kept where either table keeps them (the other's are then 0 where it keeps none).
  const auto append_ends = [&](const PageVector<uint32_t>& from, uint64_t base,
                               PageVector<uint32_t>* to) {
    if (from.empty() && to->empty()) return;
    KeepEnds(size(), to);
    for (size_t f = 0; f < other.size(); ++f) {
      to->push_back(static_cast<uint32_t>(base + (from.empty() ? 0 : from[f])));
    }
  };
  append_ends(other.kill_end_, kills_.size(), &kill_end_);
  append_ends(other.gen_end_, gens_.size(), &gen_end_);
  append_ends(other.pair_end_, pairs_.size(), &pair_end_);
  identity_.insert(identity_.end(), other.identity_.begin(), other.identity_.end());
  kills_.insert(kills_.end(), other.kills_.begin(), other.kills_.end());
  gens_.insert(gens_.end(), other.gens_.begin(), other.gens_.end());
  pairs_.insert(pairs_.end(), other.pairs_.begin(), other.pairs_.end());
}

void FlowTable::clear() {
  identity_.clear();
  kill_end_.clear();
  gen_end_.clear();
  pair_end_.clear();
  kills_.clear();
  gens_.clear();
  pairs_.clear();
}

FlowTable::Lists FlowTable::Extend(bool identity, size_t kills, size_t gens, size_t pairs) {
  kills_.resize(kills_.size() + kills);
  gens_.resize(gens_.size() + gens);
  pairs_.resize(pairs_.size() + pairs);
  EndLists(identity);
  return Lists{absl::MakeSpan(kills_.data() + kills_.size() - kills, kills),
               absl::MakeSpan(gens_.data() + gens_.size() - gens, gens),
               absl::MakeSpan(pairs_.data() + pairs_.size() - pairs, pairs)};
}

void NameList::CheckBytes(uint64_t bytes) {
  if (bytes > std::numeric_limits<uint32_t>::max()) throw std::bad_array_new_length();
}

void NameList::Set(size_t i, std::string_view name) {
  if (Holds(name)) return Set(i, std::string(name));
  const uint64_t begin = i == 0 ? 0 : ends_[i - 1];
  const uint64_t old_size = ends_[i] - begin;
  CheckBytes(uint64_t{bytes_.size()} - old_size + name.size());
  bytes_.erase(bytes_.begin() + static_cast<ptrdiff_t>(begin),
               bytes_.begin() + static_cast<ptrdiff_t>(begin + old_size));
  bytes_.insert(bytes_.begin() + static_cast<ptrdiff_t>(begin), name.begin(), name.end());
  for (size_t j = i; j < ends_.size(); ++j) {
    ends_[j] = static_cast<uint32_t>(ends_[j] - old_size + name.size());
  }
}

void FlowTable::EndFlow(bool identity) {
  const Begins b = begins(size());
  SortUnique(&kills_, b.kills);
  if (kills_.size() > b.kills && kills_[b.kills] == kZeroFact) {
    kills_.erase(kills_.begin() + static_cast<ptrdiff_t>(b.kills));
  }
  SortUnique(&gens_, b.gens);
  SortUnique(&pairs_, b.pairs);
  EndLists(identity);
}

void FlowTable::Truncate(size_t flows) {
  flows = std::min(flows, size());
  const Begins b = begins(flows);
  identity_.resize(flows);
  if (!kill_end_.empty()) kill_end_.resize(flows);
  if (!gen_end_.empty()) gen_end_.resize(flows);
  pair_end_.resize(flows);
  kills_.resize(b.kills);
  gens_.resize(b.gens);
  pairs_.resize(b.pairs);
}

void FlowTable::Resize(size_t flows, uint64_t kills, uint64_t gens, uint64_t pairs) {
  CheckEntries(kills, gens, pairs);
  identity_.resize(flows);
  kill_end_.resize(kills > 0 ? flows : 0);
  gen_end_.resize(gens > 0 ? flows : 0);
  pair_end_.resize(flows);
  kills_.resize(kills);
  gens_.resize(gens);
  pairs_.resize(pairs);
}

FlowTable::Lists FlowTable::Fill(size_t f, bool identity, const Begins& at, uint32_t kills,
                                 uint32_t gens, uint32_t pairs) {
  identity_[f] = identity ? 1 : 0;
  if (!kill_end_.empty()) kill_end_[f] = static_cast<uint32_t>(at.kills + kills);
  if (!gen_end_.empty()) gen_end_[f] = static_cast<uint32_t>(at.gens + gens);
  pair_end_[f] = static_cast<uint32_t>(at.pairs + pairs);
  return Lists{absl::MakeSpan(kills_.data() + at.kills, kills),
               absl::MakeSpan(gens_.data() + at.gens, gens),
               absl::MakeSpan(pairs_.data() + at.pairs, pairs)};
}

void FlowTable::reserve(size_t flows, size_t pairs, size_t kills, size_t gens) {
  identity_.reserve(flows);
  if (kills > 0) kill_end_.reserve(flows);
  if (gens > 0) gen_end_.reserve(flows);
  pair_end_.reserve(flows);
  pairs_.reserve(pairs);
  kills_.reserve(kills);
  gens_.reserve(gens);
}

void FlowTable::Release(size_t first, size_t last) {
  if (first >= last) return;
  const Begins from = begins(first);
  const Begins to{KillEnd(last - 1), GenEnd(last - 1), pair_end_[last - 1]};
  DiscardElements(kills_, from.kills, to.kills);
  DiscardElements(gens_, from.gens, to.gens);
  DiscardElements(pairs_, from.pairs, to.pairs);
  DiscardElements(identity_, first, last - 1);
  DiscardElements(kill_end_, first, last - 1);
  DiscardElements(gen_end_, first, last - 1);
  DiscardElements(pair_end_, first, last - 1);
}

FlowView FlowTable::operator[](size_t f) const {
  const Begins b = begins(f);
  const uint64_t kill_begin = b.kills, gen_begin = b.gens, pair_begin = b.pairs;
  return FlowView{
      identity_[f] != 0,
      absl::MakeConstSpan(kills_.data() + kill_begin, KillEnd(f) - kill_begin),
      absl::MakeConstSpan(gens_.data() + gen_begin, GenEnd(f) - gen_begin),
      PairList(absl::MakeConstSpan(pairs_.data() + pair_begin, pair_end_[f] - pair_begin))};
}

void FreePart(Problem* problem, ProblemPart part) {
  switch (part) {
    case ProblemPart::kEdges:
      PageVector<Edge>().swap(problem->edges);
      return;
    case ProblemPart::kCallSites:
      PageVector<CallSite>().swap(problem->call_sites);
      PageVector<Callee>().swap(problem->callees);
      return;
    case ProblemPart::kProcedures:
      PageVector<Procedure>().swap(problem->procedures);
      PageVector<uint32_t>().swap(problem->node_procedure);
      return;
  }
}

void FreeCompiledParts(Problem* problem) {
  problem->flows = FlowTable();
  for (const ProblemPart part :
       {ProblemPart::kEdges, ProblemPart::kCallSites, ProblemPart::kProcedures}) {
    FreePart(problem, part);
  }
}

absl::Status ValidateFlows(const Problem& p, size_t first, size_t last) {
  return ValidateFlows(p.flows, p.fact_names.size(), first, last);
}

absl::Status ValidateFlows(const FlowTable& flows, uint64_t facts, size_t first, size_t last) {
  for (size_t k = first; k < last && k < flows.size(); ++k) {
    const FlowView f = flows[k];
    if (!f.Normalized()) return absl::InvalidArgumentError("a flow function is not normalized");
    for (uint32_t d : f.kills) {
      if (d >= facts) return absl::InvalidArgumentError("a flow function kills an unknown fact");
    }
    for (uint32_t d : f.gens) {
      if (d >= facts) {
        return absl::InvalidArgumentError("a flow function generates an unknown fact");
      }
    }
    for (const auto& [a, b] : f.pairs) {
      if (a >= facts || b >= facts) {
        return absl::InvalidArgumentError("a flow function maps an unknown fact");
      }
    }
  }
  return absl::OkStatus();
}

absl::Status Validate(const Problem& p) { return Validate(p, 0); }

absl::Status Validate(const Problem& p, size_t flows_checked) {
  const uint64_t facts = p.fact_names.size();
  const uint64_t nodes = p.node_names.size();
  if (facts == 0) return absl::InvalidArgumentError("a problem needs at least the zero fact");
  if (facts > kMaxFacts) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%d facts; at most %d are supported", facts, kMaxFacts));
  }
  if (nodes > kMaxNodes) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%d nodes; at most %d are supported", nodes, kMaxNodes));
  }
  if (p.node_procedure.size() != nodes) {
    return absl::InvalidArgumentError("every node needs a procedure");
  }
  for (uint64_t n = 0; n < nodes; ++n) {
    if (p.node_procedure[n] >= p.procedures.size()) {
      return absl::InvalidArgumentError(
          absl::StrFormat("node %s belongs to no procedure", p.node_names[n]));
    }
  }
  for (const Procedure& proc : p.procedures) {
    if (proc.start >= nodes || proc.exit >= nodes) {
      return absl::InvalidArgumentError(
          absl::StrFormat("procedure %s: start or exit is not a node", proc.name));
    }
    const uint32_t self = static_cast<uint32_t>(&proc - p.procedures.data());
    if (p.node_procedure[proc.start] != self || p.node_procedure[proc.exit] != self) {
      return absl::InvalidArgumentError(
          absl::StrFormat("procedure %s: start and exit must be its own nodes", proc.name));
    }
  }
  RETURN_IF_ERROR(ValidateFlows(p, flows_checked, p.flows.size()));
  const uint64_t flows = p.flows.size();
  for (const Edge& e : p.edges) {
    if (e.from >= nodes || e.to >= nodes || e.flow >= flows) {
      return absl::InvalidArgumentError("an edge names an unknown node or flow");
    }
    if (p.node_procedure[e.from] != p.node_procedure[e.to]) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "edge %s -> %s crosses procedures; use a call site", p.node_names[e.from],
          p.node_names[e.to]));
    }
  }
  std::vector<bool> is_call(nodes, false);
  uint64_t callees_begin = 0;
  for (size_t site = 0; site < p.call_sites.size(); ++site) {
    const CallSite& c = p.call_sites[site];
    if (c.call >= nodes || c.return_site >= nodes || c.call_to_return_flow >= flows) {
      return absl::InvalidArgumentError("a call site names an unknown node or flow");
    }
    if (is_call[c.call]) {
      return absl::InvalidArgumentError(
          absl::StrFormat("node %s has more than one call site", p.node_names[c.call]));
    }
    is_call[c.call] = true;
    if (p.node_procedure[c.call] != p.node_procedure[c.return_site]) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "call %s returns to %s in another procedure", p.node_names[c.call],
          p.node_names[c.return_site]));
    }
    // Each site's callees follow the last's, within the problem's.
    if (c.callees_end < callees_begin || c.callees_end > p.callees.size()) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "call site %s says its callees end at %d, before the last site's (%d) or past the "
          "problem's %d", p.node_names[c.call], c.callees_end, callees_begin, p.callees.size()));
    }
    const absl::Span<const Callee> callees = p.CalleesOf(site);
    callees_begin = c.callees_end;
    if (callees.empty() || callees.size() > 0xffff) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "call site %s has %d callees (1 to 65535 allowed)", p.node_names[c.call],
          callees.size()));
    }
    for (const Callee& callee : callees) {
      if (callee.procedure >= p.procedures.size() || callee.call_flow >= flows ||
          callee.return_flow >= flows) {
        return absl::InvalidArgumentError("a callee names an unknown procedure or flow");
      }
    }
  }
  if (callees_begin != p.callees.size()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%d callees belong to no call site", p.callees.size() - callees_begin));
  }
  for (const auto& [n, d] : p.seeds) {
    if (n >= nodes || d >= facts) {
      return absl::InvalidArgumentError("a seed names an unknown node or fact");
    }
    if (p.procedures[p.node_procedure[n]].start != n) {
      return absl::InvalidArgumentError(
          absl::StrFormat("seed at %s: seeds must be at a procedure's start node",
                          p.node_names[n]));
    }
  }
  return absl::OkStatus();
}

}  // namespace sluice::ifds
