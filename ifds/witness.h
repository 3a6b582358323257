// Why a fact holds at a node: a chain of the solution's (node, fact) pairs from where the fact
// was generated to that node, each pair reached from the one before by a flow function of the
// problem, entering and leaving callees by matching call sites. What an analysis shows a user
// as a finding's origin and path (SARIF codeFlows).
#ifndef SLUICE_IFDS_WITNESS_H_
#define SLUICE_IFDS_WITNESS_H_

#include <cstdint>
#include <vector>

#include "sluice/ifds/problem.h"

namespace sluice::ifds {

struct WitnessStep {
  enum class Kind : uint8_t {
    kOrigin,  // the first step: a node holding the zero fact, whose flow generates the fact
    kEdge,    // along an intraprocedural edge (a normal or a call-to-return edge)
    kCall,    // from a call node into a callee's start
    kReturn,  // from a callee's exit to the call's return site
  };
  Kind kind = Kind::kOrigin;
  uint32_t node = 0;
  uint32_t fact = 0;       // kZeroFact at the origin
  uint32_t call_site = 0;  // kCall, kReturn: into Problem::call_sites
};

// Builds the reverse indexes of `problem` once; Explain then searches backwards from a pair.
// Both must outlive it.
class Witnesses {
 public:
  Witnesses(const Problem& problem, const Solution& solution);

  // A shortest chain ending at (node, fact), its first step the origin, found within `budget`
  // pairs visited; empty when (node, fact) is not in the solution, is the zero fact, or no
  // chain was found within the budget. A chain leaves a callee only to the return site of the
  // call that entered it (at most kMaxDepth calls deep); above the pair's own procedure it may
  // enter from any caller.
  std::vector<WitnessStep> Explain(uint32_t node, uint32_t fact, uint64_t budget) const;

  static constexpr uint32_t kMaxDepth = 8;

 private:
  bool Holds(uint32_t node, uint32_t fact) const;

  const Problem& problem_;
  const Solution& solution_;
  // By node: the edges into it, the call sites returning to it, and (for a start node) the
  // call sites' callees entering it, as (call site, callee index).
  std::vector<std::vector<uint32_t>> edges_in_;
  std::vector<std::vector<uint32_t>> returning_to_;
  std::vector<std::vector<std::pair<uint32_t, uint32_t>>> entering_;
};

}  // namespace sluice::ifds

#endif  // SLUICE_IFDS_WITNESS_H_
