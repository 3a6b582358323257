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

}  // namespace

Witnesses::Witnesses(const Problem& problem, const Solution& solution)
    : problem_(problem), solution_(solution) {
  const size_t nodes = problem.node_names.size();
  edges_in_.resize(nodes);
  returning_to_.resize(nodes);
  entering_.resize(nodes);
  for (uint32_t e = 0; e < problem.edges.size(); ++e) edges_in_[problem.edges[e].to].push_back(e);
  for (uint32_t c = 0; c < problem.call_sites.size(); ++c) {
    const CallSite& site = problem.call_sites[c];
    returning_to_[site.return_site].push_back(c);
    for (uint32_t k = 0; k < site.callees.size(); ++k) {
      entering_[problem.procedures[site.callees[k].procedure].start].emplace_back(c, k);
    }
  }
}

bool Witnesses::Holds(uint32_t node, uint32_t fact) const {
  return std::binary_search(solution_.facts.begin(), solution_.facts.end(),
                            std::make_pair(node, fact));
}

std::vector<WitnessStep> Witnesses::Explain(uint32_t node, uint32_t fact,
                                            uint64_t budget) const {
  if (fact == kZeroFact || node >= problem_.node_names.size() || !Holds(node, fact)) return {};
  std::vector<Frame> frames = {Frame{}};
  absl::flat_hash_map<std::pair<uint32_t, uint32_t>, uint32_t> frame_ids;  // (parent, site)
  std::vector<Visit> visits = {Visit{node, fact, 0, kNone, WitnessStep::Kind::kEdge, 0}};
  absl::flat_hash_set<std::tuple<uint32_t, uint32_t, uint32_t>> seen = {{node, fact, 0}};
  // The origin, once found: the node generating the fact, and the visit it leads to.
  uint32_t origin_node = kNone, origin_next = kNone;
  WitnessStep::Kind origin_kind = WitnessStep::Kind::kEdge;
  uint32_t origin_site = 0;

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
      if (frames[v.frame].depth >= kMaxDepth) continue;
      // Into each callee from its exit, remembering the call that entered it.
      auto [it, added] = frame_ids.try_emplace(std::make_pair(v.frame, c),
                                               static_cast<uint32_t>(frames.size()));
      if (added) frames.push_back(Frame{v.frame, c, frames[v.frame].depth + 1});
      for (const Callee& callee : site.callees) {
        through(problem_.procedures[callee.procedure].exit, callee.return_flow, it->second,
                WitnessStep::Kind::kReturn, c);
      }
    }
    const Frame frame = frames[v.frame];
    for (const auto& [c, k] : entering_[v.node]) {
      // Inside a callee only the call that entered it; above, any caller.
      if (v.frame != 0 && c != frame.call_site) continue;
      const CallSite& site = problem_.call_sites[c];
      through(site.call, site.callees[k].call_flow, frame.parent, WitnessStep::Kind::kCall, c);
    }
  }
  if (origin_node == kNone) return {};
  std::vector<WitnessStep> steps = {WitnessStep{WitnessStep::Kind::kOrigin, origin_node,
                                                kZeroFact, 0}};
  WitnessStep::Kind kind = origin_kind;
  uint32_t site = origin_site;
  for (uint32_t at = origin_next; at != kNone; at = visits[at].next) {
    steps.push_back(WitnessStep{kind, visits[at].node, visits[at].fact, site});
    kind = visits[at].kind;
    site = visits[at].call_site;
  }
  return steps;
}

}  // namespace sluice::ifds
