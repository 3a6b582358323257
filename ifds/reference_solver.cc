#include "sluice/ifds/reference_solver.h"

#include <algorithm>
#include <deque>
#include <tuple>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"

namespace sluice::ifds {
namespace {

// Path edge <start of n's procedure, d1> -> <n, d2>.
struct PathEdge {
  uint32_t d1, n, d2;
};

uint64_t Key(uint32_t a, uint32_t b) { return (uint64_t{a} << 32) | b; }

class Tabulation {
 public:
  explicit Tabulation(const Problem& p) : p_(p) {
    out_edges_.resize(p.node_count());
    for (const Edge& e : p.edges) out_edges_[e.from].push_back(&e);
    call_site_.assign(p.node_count(), nullptr);
    for (const CallSite& c : p.call_sites) call_site_[c.call] = &c;
    exit_of_.assign(p.node_count(), -1);
    for (size_t q = 0; q < p.procedures.size(); ++q) {
      exit_of_[p.procedures[q].exit] = static_cast<int64_t>(q);
    }
  }

  Solution Run(ReferenceStats* stats) {
    for (const auto& [n, d] : p_.seeds) Propagate(d, n, d);
    std::vector<uint32_t> facts;
    while (!work_.empty()) {
      const PathEdge e = work_.front();
      work_.pop_front();
      if (const CallSite* call = call_site_[e.n]) ProcessCall(e, *call);
      if (exit_of_[e.n] >= 0) ProcessExit(e, static_cast<uint32_t>(exit_of_[e.n]));
      for (const Edge* edge : out_edges_[e.n]) {
        facts.clear();
        p_.flows[edge->flow].Apply(e.d2, &facts);
        for (uint32_t d3 : facts) Propagate(e.d1, edge->to, d3);
      }
    }
    if (stats != nullptr) {
      stats->path_edges = path_edges_.size();
      stats->end_summaries = end_summary_count_;
      stats->incoming = incoming_count_;
    }
    Solution solution;
    absl::flat_hash_set<uint64_t> seen;
    for (uint64_t pe : path_edges_) {
      const uint32_t n = static_cast<uint32_t>(pe >> 16);
      const uint32_t d2 = static_cast<uint32_t>(pe & 0xffff);
      if (seen.insert(Key(n, d2)).second) solution.facts.emplace_back(n, d2);
    }
    std::sort(solution.facts.begin(), solution.facts.end());
    return solution;
  }

 private:
  // Facts are 16-bit, nodes 32-bit: a path edge packs into 64 bits.
  static uint64_t PathKey(uint32_t d1, uint32_t n, uint32_t d2) {
    return (uint64_t{d1} << 48) | (uint64_t{n} << 16) | d2;
  }

  void Propagate(uint32_t d1, uint32_t n, uint32_t d2) {
    if (!path_edges_.insert(PathKey(d1, n, d2)).second) return;
    // Index path edges at call nodes by (node, d2) for the summaries that arrive later.
    if (call_site_[n] != nullptr) callers_of_[Key(n, d2)].push_back(d1);
    work_.push_back(PathEdge{d1, n, d2});
  }

  // An incoming call: call node c, callee index k within c's call site, and the fact d2 at c.
  // Each (call site, callee) pair is its own edge: a procedure listed twice as a callee of one
  // site has two call flows and two return flows, which must not be mixed.
  static uint64_t IncomingKey(uint32_t c, uint32_t k, uint32_t d2) {
    return (uint64_t{c} << 32) | (uint64_t{k} << 16) | d2;
  }

  void ProcessCall(const PathEdge& e, const CallSite& call) {
    std::vector<uint32_t> entry, returned;
    const absl::Span<const Callee> callees = p_.CalleesOf(&call - p_.call_sites.data());
    for (uint32_t k = 0; k < callees.size(); ++k) {
      const Callee& callee = callees[k];
      const uint32_t start = p_.procedures[callee.procedure].start;
      entry.clear();
      p_.flows[callee.call_flow].Apply(e.d2, &entry);
      for (uint32_t d3 : entry) {
        Propagate(d3, start, d3);
        const uint64_t context = Key(callee.procedure, d3);
        if (incoming_[context].insert(IncomingKey(e.n, k, e.d2)).second) ++incoming_count_;
        // Summaries already computed for this entry context apply at once.
        auto summaries = end_summary_.find(context);
        if (summaries == end_summary_.end()) continue;
        for (uint32_t d4 : summaries->second) {
          returned.clear();
          p_.flows[callee.return_flow].Apply(d4, &returned);
          for (uint32_t d5 : returned) Propagate(e.d1, call.return_site, d5);
        }
      }
    }
    std::vector<uint32_t> local;
    p_.flows[call.call_to_return_flow].Apply(e.d2, &local);
    for (uint32_t d3 : local) Propagate(e.d1, call.return_site, d3);
  }

  void ProcessExit(const PathEdge& e, uint32_t procedure) {
    const uint64_t context = Key(procedure, e.d1);
    if (!end_summary_[context].insert(e.d2).second) return;
    ++end_summary_count_;
    auto callers = incoming_.find(context);
    if (callers == incoming_.end()) return;
    // Copy: propagation below may add incoming calls to this very context.
    const std::vector<uint64_t> sites(callers->second.begin(), callers->second.end());
    std::vector<uint32_t> returned;
    for (uint64_t site : sites) {
      const uint32_t c = static_cast<uint32_t>(site >> 32);
      const uint32_t k = static_cast<uint32_t>(site >> 16) & 0xffff;
      const uint32_t d2 = static_cast<uint32_t>(site & 0xffff);
      const CallSite& call = *call_site_[c];
      returned.clear();
      p_.flows[p_.CalleesOf(&call - p_.call_sites.data())[k].return_flow].Apply(e.d2,
                                                                               &returned);
      const std::vector<uint32_t> contexts = callers_of_[Key(c, d2)];
      for (uint32_t d5 : returned) {
        for (uint32_t d1 : contexts) Propagate(d1, call.return_site, d5);
      }
    }
  }

  const Problem& p_;
  std::vector<std::vector<const Edge*>> out_edges_;
  std::vector<const CallSite*> call_site_;
  std::vector<int64_t> exit_of_;
  absl::flat_hash_set<uint64_t> path_edges_;
  std::deque<PathEdge> work_;
  absl::flat_hash_map<uint64_t, std::vector<uint32_t>> callers_of_;            // (c, d2) -> d1s
  absl::flat_hash_map<uint64_t, absl::flat_hash_set<uint64_t>> incoming_;  // (p, d3) -> (c, k, d2)
  absl::flat_hash_map<uint64_t, absl::flat_hash_set<uint32_t>> end_summary_;   // (p, d3) -> d4
  uint64_t end_summary_count_ = 0;
  uint64_t incoming_count_ = 0;
};

}  // namespace

Solution SolveReference(const Problem& problem, ReferenceStats* stats) {
  return Tabulation(problem).Run(stats);
}

}  // namespace sluice::ifds
