#include "sluice/ifds/witness.h"

#include <algorithm>
#include <deque>
#include <tuple>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/hash/hash.h"

namespace sluice::ifds {
namespace {

constexpr uint32_t kNone = ~uint32_t{0};

// Calls emit(d') for every fact d' that `flow` maps to d (kZeroFact where it generates d).
template <typename Emit>
void Sources(const FlowView& flow, uint32_t d, Emit&& emit) {
  if (std::binary_search(flow.gens.begin(), flow.gens.end(), d)) emit(kZeroFact);
  if (flow.identity && !std::binary_search(flow.kills.begin(), flow.kills.end(), d)) emit(d);
  for (const auto& [from, to] : flow.pairs) {
    if (to == d) emit(from);
  }
}

// The callee a backward search is inside of, entered (forwards) by a call site: frames are
// interned, so a pair met again in the same context is met once.
struct Frame {
  uint32_t parent = 0;  // 0: no frame (the procedure of the pair explained, or any caller)
  uint32_t call_site = 0;
  uint32_t depth = 0;
};

// A pair the backward search reached, and the step that leads from it (forwards) towards the
// pair explained.
struct Visit {
  uint32_t node, fact, frame;
  uint32_t next;  // the visit this one leads to; kNone for the pair explained
  WitnessStep::Kind kind;  // how `next` is reached from here
  uint32_t call_site;
};

// A path edge of the tabulation (FromTabulation), <start, d1> -> <node, d2>, and the one it
// was first made from.
struct PathEdge {
  uint32_t node;
  uint16_t d1, d2;
  uint32_t from;   // the path edge it was made from; kNoEdge for a seed
  uint32_t other;  // kReturn: the callee's exit path edge; kCall: the call site
  WitnessStep::Kind kind;  // kOrigin (a seed), kEdge, kCall (a callee's start), kReturn
};
constexpr uint32_t kNoEdge = ~uint32_t{0};

// The chain to path edge `id`'s (node, d2), read backwards from it: a return enters the callee
// at its exit and leaves it, at its start, for the call it returns to (kept on `calls`); a start
// reached with no such call goes to the call that first entered it. Empty where the path edges
// lead back to a seed of a fact other than the zero fact.
std::vector<WitnessStep> ChainTo(const std::vector<PathEdge>& edges,
                                 const std::vector<uint32_t>& site_at, uint32_t id) {
  std::vector<WitnessStep> chain;
  std::vector<uint32_t> calls;
  for (;;) {
    const PathEdge& e = edges[id];
    if (e.d2 == kZeroFact) {
      chain.push_back(WitnessStep{WitnessStep::Kind::kOrigin, e.node, kZeroFact, 0});
      break;
    }
    if (e.kind == WitnessStep::Kind::kOrigin) return {};  // a seed of another fact
    if (e.kind == WitnessStep::Kind::kReturn) {
      chain.push_back(WitnessStep{e.kind, e.node, e.d2, site_at[edges[e.from].node]});
      calls.push_back(e.from);
      id = e.other;
    } else if (e.kind == WitnessStep::Kind::kCall && !calls.empty()) {
      const uint32_t caller = calls.back();
      calls.pop_back();
      chain.push_back(WitnessStep{e.kind, e.node, e.d2, site_at[edges[caller].node]});
      id = caller;
    } else {
      chain.push_back(WitnessStep{e.kind, e.node, e.d2,
                                  e.kind == WitnessStep::Kind::kCall ? e.other : 0});
      id = e.from;
    }
  }
  std::reverse(chain.begin(), chain.end());
  return chain;
}

}  // namespace

Witnesses::Witnesses(const Problem& problem, const Solution& solution)
    : problem_(problem), solution_(solution) {
  const size_t nodes = problem.node_names.size();
  edges_in_.resize(nodes);
  returning_to_.resize(nodes);
  entering_.resize(nodes);
  site_at_.assign(nodes, kNone);
  // Each node's first pair, found from the last pair down; a node without pairs begins where
  // the next one does.
  pairs_at_.assign(nodes + 1, solution.facts.size());
  for (uint64_t k = solution.facts.size(); k-- > 0;) {
    if (solution.facts[k].first < nodes) pairs_at_[solution.facts[k].first] = k;
  }
  for (size_t n = nodes; n-- > 0;) pairs_at_[n] = std::min(pairs_at_[n], pairs_at_[n + 1]);
  for (uint32_t e = 0; e < problem.edges.size(); ++e) edges_in_[problem.edges[e].to].push_back(e);
  for (uint32_t c = 0; c < problem.call_sites.size(); ++c) {
    const CallSite& site = problem.call_sites[c];
    site_at_[site.call] = c;
    returning_to_[site.return_site].push_back(c);
    const absl::Span<const Callee> callees = problem.CalleesOf(c);
    for (uint32_t k = 0; k < callees.size(); ++k) {
      entering_[problem.procedures[callees[k].procedure].start].emplace_back(c, k);
    }
  }
}

bool Witnesses::Holds(uint32_t node, uint32_t fact) const {
  if (node + size_t{1} >= pairs_at_.size()) return false;
  const auto begin = solution_.facts.begin();
  return std::binary_search(begin + static_cast<ptrdiff_t>(pairs_at_[node]),
                            begin + static_cast<ptrdiff_t>(pairs_at_[node + 1]),
                            std::make_pair(node, fact));
}

std::vector<WitnessStep> Witnesses::FromTabulation(uint32_t node, uint32_t fact) const {
  const std::pair<uint32_t, uint32_t> pair(node, fact);
  return FromTabulation(absl::MakeConstSpan(&pair, 1)).front();
}

std::vector<std::vector<WitnessStep>> Witnesses::FromTabulation(
    absl::Span<const std::pair<uint32_t, uint32_t>> pairs) const {
  const Problem& p = problem_;
  const size_t nodes = p.node_names.size();
  // The zero fact has no chain; the pairs asked for that no path edge reaches yet (a pair
  // outside the solution none ever will): the tabulation stops once there are none.
  absl::flat_hash_set<uint64_t> wanted;
  for (const auto& [node, fact] : pairs) {
    if (fact != kZeroFact && Holds(node, fact)) {
      wanted.insert((uint64_t{node} << 16) | fact);
    }
  }
  std::vector<std::vector<WitnessStep>> chains(pairs.size());
  if (wanted.empty()) return chains;
  size_t missing = wanted.size();
  std::vector<std::vector<uint32_t>> edges_out(nodes);
  for (uint32_t e = 0; e < p.edges.size(); ++e) edges_out[p.edges[e].from].push_back(e);
  std::vector<uint32_t> exit_of(nodes, kNone);
  for (uint32_t q = 0; q < p.procedures.size(); ++q) exit_of[p.procedures[q].exit] = q;
  // Path edges <start, d1> -> <node, d2>, each with what it was first made from, and the first
  // path edge at each (node, d2).
  std::vector<PathEdge> edges;
  absl::flat_hash_map<uint64_t, uint32_t> first_at;
  // By (procedure, d1): the path edges at calls entering it with d1 (and by which callee of
  // their site), and its exit's path edges from d1: the summaries.
  const auto entry_key = [](uint32_t q, uint32_t d) { return (uint64_t{q} << 16) | d; };
  absl::flat_hash_map<uint64_t, std::vector<std::pair<uint32_t, uint32_t>>> incoming;
  absl::flat_hash_map<uint64_t, std::vector<uint32_t>> summaries;
  absl::flat_hash_set<uint64_t> made;  // (d1, node, d2)
  std::deque<uint32_t> work;
  const auto propagate = [&](uint32_t d1, uint32_t node, uint32_t d2, WitnessStep::Kind kind,
                             uint32_t from, uint32_t other) {
    if (edges.size() >= kMaxTabulatedEdges) return;
    if (!made.insert((uint64_t{d1} << 48) | (uint64_t{node} << 16) | d2).second) return;
    const auto id = static_cast<uint32_t>(edges.size());
    edges.push_back(PathEdge{node, static_cast<uint16_t>(d1), static_cast<uint16_t>(d2), from,
                             other, kind});
    const uint64_t at = (uint64_t{node} << 16) | d2;
    if (first_at.try_emplace(at, id).second && wanted.contains(at)) --missing;
    work.push_back(id);
  };
  for (const auto& [n, d] : p.seeds) propagate(d, n, d, WitnessStep::Kind::kOrigin, kNoEdge, 0);
  std::vector<uint32_t> to, back;
  // Once the bound is met no path edge is made: what is left to do would make none.
  while (!work.empty() && missing > 0 && edges.size() < kMaxTabulatedEdges) {
    const uint32_t id = work.front();
    work.pop_front();
    const PathEdge e = edges[id];
    const auto apply = [&](uint32_t flow, uint32_t d, std::vector<uint32_t>* out) {
      out->clear();
      p.flows[flow].Apply(d, out);
    };
    if (const uint32_t c = site_at_[e.node]; c != kNone) {
      const CallSite& site = p.call_sites[c];
      apply(site.call_to_return_flow, e.d2, &to);
      for (uint32_t d3 : to) propagate(e.d1, site.return_site, d3, WitnessStep::Kind::kEdge, id, 0);
      const absl::Span<const Callee> callees = p.CalleesOf(c);
      for (uint32_t k = 0; k < callees.size(); ++k) {
        const Callee& callee = callees[k];
        const uint32_t start = p.procedures[callee.procedure].start;
        apply(callee.call_flow, e.d2, &to);
        for (uint32_t d4 : to) {
          propagate(d4, start, d4, WitnessStep::Kind::kCall, id, c);
          incoming[entry_key(callee.procedure, d4)].emplace_back(id, k);
          // What the callee already returns from d4 comes back to this call too.
          const auto done = summaries.find(entry_key(callee.procedure, d4));
          if (done == summaries.end()) continue;
          for (const uint32_t exit_edge : done->second) {
            apply(callee.return_flow, edges[exit_edge].d2, &back);
            for (uint32_t d3 : back) {
              propagate(e.d1, site.return_site, d3, WitnessStep::Kind::kReturn, id, exit_edge);
            }
          }
        }
      }
    }
    if (const uint32_t q = exit_of[e.node]; q != kNone) {
      summaries[entry_key(q, e.d1)].push_back(id);
      const auto callers = incoming.find(entry_key(q, e.d1));
      if (callers != incoming.end()) {
        for (const auto& [caller, k] : callers->second) {
          const uint32_t c = site_at_[edges[caller].node];
          const CallSite& site = p.call_sites[c];
          apply(p.CalleesOf(c)[k].return_flow, e.d2, &back);
          for (uint32_t d3 : back) {
            propagate(edges[caller].d1, site.return_site, d3, WitnessStep::Kind::kReturn, caller,
                      id);
          }
        }
      }
    }
    for (uint32_t out : edges_out[e.node]) {
      apply(p.edges[out].flow, e.d2, &to);
      for (uint32_t d3 : to) propagate(e.d1, p.edges[out].to, d3, WitnessStep::Kind::kEdge, id, 0);
    }
  }
  for (size_t k = 0; k < pairs.size(); ++k) {
    if (pairs[k].second == kZeroFact) continue;
    const auto first = first_at.find((uint64_t{pairs[k].first} << 16) | pairs[k].second);
    if (first != first_at.end()) chains[k] = ChainTo(edges, site_at_, first->second);
  }
  return chains;
}

bool Witnesses::Realizable(const std::vector<WitnessStep>& chain) {
  std::vector<uint32_t> entered;  // the calls entered and not yet returned from
  for (const WitnessStep& step : chain) {
    if (step.kind == WitnessStep::Kind::kCall) {
      entered.push_back(step.call_site);
    } else if (step.kind == WitnessStep::Kind::kReturn) {
      if (entered.empty()) continue;  // out of a callee the chain began in
      if (entered.back() != step.call_site) return false;
      entered.pop_back();
    }
  }
  return true;
}

std::vector<WitnessStep> Witnesses::Explain(uint32_t node, uint32_t fact, uint64_t budget,
                                            uint32_t max_depth, uint64_t* visited) const {
  if (visited != nullptr) *visited = 0;
  if (fact == kZeroFact || node >= problem_.node_names.size() || !Holds(node, fact)) return {};
  std::vector<Frame> frames = {Frame{}};
  absl::flat_hash_map<std::pair<uint32_t, uint32_t>, uint32_t> frame_ids;  // (parent, site)
  std::vector<Visit> visits = {Visit{node, fact, 0, kNone, WitnessStep::Kind::kEdge, 0}};
  struct Count {  // how many pairs were met, however the search ends
    const std::vector<Visit>& visits;
    uint64_t* out;
    ~Count() {
      if (out != nullptr) *out = visits.size();
    }
  } count{visits, visited};
  absl::flat_hash_set<std::tuple<uint32_t, uint32_t, uint32_t>> seen = {{node, fact, 0}};
  // The origin, once found: the node generating the fact, and the visit it leads to; or a
  // remembered chain's pair that leads to it (origin_node kKnown, `known` its place).
  constexpr uint32_t kKnown = kNone - 1;
  uint32_t origin_node = kNone, origin_next = kNone;
  WitnessStep::Kind origin_kind = WitnessStep::Kind::kEdge;
  uint32_t origin_site = 0;
  std::pair<uint32_t, uint32_t> known{0, 0};
  // Whether a remembered chain leads to (m, d), noted in `known`.
  const auto remembered = [&](uint32_t m, uint32_t d) {
    const auto it = known_.find(std::make_pair(m, d));
    if (it == known_.end()) return false;
    known = it->second;
    return true;
  };
  if (remembered(node, fact)) {
    const std::vector<WitnessStep>& chain = remembered_[known.first];
    return std::vector<WitnessStep>(chain.begin(), chain.begin() + known.second + 1);
  }

  for (uint32_t at = 0; at < visits.size() && origin_node == kNone; ++at) {
    if (visits.size() > budget) return {};
    const Visit v = visits[at];
    // (m, d') leads to v by `kind` through `flow`, in `frame`.
    const auto through = [&](uint32_t m, uint32_t flow, uint32_t frame, WitnessStep::Kind kind,
                             uint32_t site) {
      Sources(problem_.flows[flow], v.fact, [&](uint32_t d) {
        if (origin_node != kNone) return;
        if (d == kZeroFact) {
          if (Holds(m, kZeroFact)) {
            origin_node = m;
            origin_next = at;
            origin_kind = kind;
            origin_site = site;
          }
          return;
        }
        if (!Holds(m, d) || !seen.emplace(m, d, frame).second) return;
        if (frame == 0 && remembered(m, d)) {
          origin_node = kKnown;
          origin_next = at;
          origin_kind = kind;
          origin_site = site;
          return;
        }
        visits.push_back(Visit{m, d, frame, at, kind, site});
      });
    };
    for (uint32_t e : edges_in_[v.node]) {
      const Edge& edge = problem_.edges[e];
      through(edge.from, edge.flow, v.frame, WitnessStep::Kind::kEdge, 0);
    }
    for (uint32_t c : returning_to_[v.node]) {
      const CallSite& site = problem_.call_sites[c];
      through(site.call, site.call_to_return_flow, v.frame, WitnessStep::Kind::kEdge, 0);
      if (frames[v.frame].depth >= std::min(max_depth, kMaxDepth)) continue;
      // Into each callee from its exit, remembering the call that entered it.
      auto [it, added] = frame_ids.try_emplace(std::make_pair(v.frame, c),
                                               static_cast<uint32_t>(frames.size()));
      if (added) frames.push_back(Frame{v.frame, c, frames[v.frame].depth + 1});
      for (const Callee& callee : problem_.CalleesOf(c)) {
        through(problem_.procedures[callee.procedure].exit, callee.return_flow, it->second,
                WitnessStep::Kind::kReturn, c);
      }
    }
    const Frame frame = frames[v.frame];
    for (const auto& [c, k] : entering_[v.node]) {
      // Inside a callee only the call that entered it; above, any caller.
      if (v.frame != 0 && c != frame.call_site) continue;
      const CallSite& site = problem_.call_sites[c];
      through(site.call, problem_.CalleesOf(c)[k].call_flow, frame.parent,
              WitnessStep::Kind::kCall, c);
    }
  }
  if (origin_node == kNone) return {};
  std::vector<WitnessStep> steps;
  if (origin_node == kKnown) {
    const std::vector<WitnessStep>& chain = remembered_[known.first];
    steps.assign(chain.begin(), chain.begin() + known.second + 1);
  } else {
    steps.push_back(WitnessStep{WitnessStep::Kind::kOrigin, origin_node, kZeroFact, 0});
  }
  WitnessStep::Kind kind = origin_kind;
  uint32_t site = origin_site;
  for (uint32_t at = origin_next; at != kNone; at = visits[at].next) {
    steps.push_back(WitnessStep{kind, visits[at].node, visits[at].fact, site});
    kind = visits[at].kind;
    site = visits[at].call_site;
  }
  return steps;
}

void Witnesses::Remember(const std::vector<WitnessStep>& chain) {
  if (chain.size() < 2) return;
  const auto id = static_cast<uint32_t>(remembered_.size());
  remembered_.push_back(chain);
  for (uint32_t k = 1; k < chain.size(); ++k) {
    known_.try_emplace(std::make_pair(chain[k].node, chain[k].fact), id, k);
  }
}

std::vector<WitnessStep> Witnesses::Search(uint32_t node, uint32_t fact, uint64_t budget,
                                           uint64_t* visited) const {
  uint64_t spent = 0;
  std::vector<WitnessStep> chain;
  for (const uint32_t depth : {0u, 1u, 2u, 4u, 8u, 16u, 32u, kMaxDepth}) {
    if (spent >= budget) break;
    uint64_t met = 0;
    chain = Explain(node, fact, budget - spent, depth, &met);
    spent += met;
    if (!chain.empty()) break;
  }
  if (visited != nullptr) *visited = spent;
  return chain;
}

}  // namespace sluice::ifds
