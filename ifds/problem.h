// An IFDS problem (Reps, Horwitz, Sagiv 1995): procedures with start and exit nodes, the nodes of
// the interprocedural control-flow graph, a finite set of facts (fact 0 is the zero fact), and
// distributive flow functions on normal, call, return and call-to-return edges, each a relation
// over facts in identity-with-exceptions form. Seeds are facts that hold at procedure starts.
#ifndef SLUICE_IFDS_PROBLEM_H_
#define SLUICE_IFDS_PROBLEM_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"

namespace sluice::ifds {

// Facts are 16-bit on the device (path edges pack two facts and a node into 64 bits); the
// all-ones values are reserved as empty markers.
inline constexpr uint32_t kMaxFacts = 0xffff;        // fact ids 0 .. kMaxFacts - 1
inline constexpr uint32_t kMaxNodes = 0xfffffffe;    // node ids 0 .. kMaxNodes - 1
inline constexpr uint32_t kZeroFact = 0;

// A distributive flow function as a relation over facts:
//   f(d) = { d                 if identity and d is not killed }
//        ∪ { g for g in gens   if d is the zero fact }
//        ∪ { t for (d, t) in pairs }
//        ∪ { 0                 if d is the zero fact }   (the zero fact always flows)
// Lists are sorted and free of duplicates (Normalize). The zero fact is never killed.
struct Flow {
  bool identity = false;
  std::vector<uint32_t> kills;
  std::vector<uint32_t> gens;
  std::vector<std::pair<uint32_t, uint32_t>> pairs;

  // Sorts and deduplicates every list; drops kills of the zero fact.
  void Normalize();
  // Appends f(d) to `out` (possibly with repeats).
  void Apply(uint32_t d, std::vector<uint32_t>* out) const;
  friend bool operator==(const Flow&, const Flow&) = default;
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
// more callees.
struct CallSite {
  uint32_t call = 0;
  uint32_t return_site = 0;
  uint32_t call_to_return_flow = 0;
  std::vector<Callee> callees;
};

struct Problem {
  std::vector<std::string> fact_names;  // [0] is the zero fact
  std::vector<std::string> node_names;
  std::vector<uint32_t> node_procedure;  // per node
  std::vector<Procedure> procedures;
  std::vector<Flow> flows;
  std::vector<Edge> edges;  // normal edges
  std::vector<CallSite> call_sites;
  std::vector<std::pair<uint32_t, uint32_t>> seeds;  // (procedure start node, fact)

  uint32_t fact_count() const { return static_cast<uint32_t>(fact_names.size()); }
  uint32_t node_count() const { return static_cast<uint32_t>(node_names.size()); }
};

// Checks every structural rule: ids in range, at least the zero fact, flows normalized and
// naming existing facts, edges within one procedure, return sites in the call's procedure, at
// most one call site per node, callees listed, seeds at procedure starts. InvalidArgument
// naming the first violation.
absl::Status Validate(const Problem& problem);

// The solution: every (node, fact) such that the fact holds at the node on some realizable
// path from a seed, sorted by node id then fact id.
struct Solution {
  std::vector<std::pair<uint32_t, uint32_t>> facts;
  friend bool operator==(const Solution&, const Solution&) = default;
};

}  // namespace sluice::ifds

#endif  // SLUICE_IFDS_PROBLEM_H_
