// Why a fact holds at a node: a chain of the solution's (node, fact) pairs from where the fact
// was generated to that node, each pair reached from the one before by a flow function of the
// problem, entering and leaving callees by matching call sites. What an analysis shows a user
// as a finding's origin and path (SARIF codeFlows).
#ifndef SLUICE_IFDS_WITNESS_H_
#define SLUICE_IFDS_WITNESS_H_

#include <cstdint>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/types/span.h"
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
  // call that entered it, at most `max_depth` calls deep (0: it enters no callee it returns
  // from); above the pair's own procedure it may enter from any caller. The pairs a search may
  // visit grow with the depth (a callee's pairs are met once per call chain into it), so a
  // caller may look shallow first (Search). `visited`, if given, gets how many pairs the search
  // met. A search that meets a pair of a remembered chain may end there (Remember).
  std::vector<WitnessStep> Explain(uint32_t node, uint32_t fact, uint64_t budget,
                                   uint32_t max_depth = kMaxDepth,
                                   uint64_t* visited = nullptr) const;

  // Deep enough for C++, whose library calls nest a dozen calls and more (an allocator's
  // construct under a vector's emplace under a string's move ...): a chain that needs more
  // than 8 was found by no search at 8, and only by a tabulation of the whole problem.
  static constexpr uint32_t kMaxDepth = 64;

  // Keeps `chain` (one Explain, Search or FromTabulation gave) for the searches after it: one
  // that meets a pair of it in that pair's own procedure or a caller (not inside a callee it
  // entered from its exit) takes the chain's way from its origin to that pair, and goes on
  // from there. A prefix of a realizable chain is realizable, and what a search adds after it
  // returns only from callees it entered, so the chain is realizable too, if no longer the
  // shortest. Reads of one value in many places share most of their way back to its origin:
  // each search after the first ends where it meets that way.
  void Remember(const std::vector<WitnessStep>& chain);

  // Explain at depths 0, 1, 2, 4, 8, 16, 32 and kMaxDepth in turn, all within one `budget`:
  // the chain of the shallowest that has one. A value made in the pair's own procedure or a
  // caller is found at depth 0 without meeting any callee's pairs once per call chain, which
  // most of a deep search's pairs are.
  std::vector<WitnessStep> Search(uint32_t node, uint32_t fact, uint64_t budget,
                                  uint64_t* visited = nullptr) const;
  // A chain ending at (node, fact) from a tabulation of the problem that keeps, for each
  // path edge, the one it was first made from (Reps, Horwitz and Sagiv's algorithm, as the
  // reference solver runs it, breadth first from the seeds; at most kMaxTabulatedEdges path
  // edges). Returns go back to the call whose flow they complete, so the chain is realizable;
  // a callee entered from no call on the chain is entered from the call that first reached it.
  // Empty for a pair the tabulation did not reach within its bound, or that has no origin (a
  // seed of a fact other than the zero fact). For pairs whose Explain search would not end
  // within a budget: one pass for all of them (the second form), which stops once it has
  // reached them all (the chains are those of the whole tabulation, which it is a beginning
  // of) or made kMaxTabulatedEdges path edges.
  std::vector<WitnessStep> FromTabulation(uint32_t node, uint32_t fact) const;
  std::vector<std::vector<WitnessStep>> FromTabulation(
      absl::Span<const std::pair<uint32_t, uint32_t>> pairs) const;

  static constexpr uint64_t kMaxTabulatedEdges = uint64_t{1} << 25;

  // Whether the chain's every return goes back to the call that entered that callee, where the
  // chain entered it (a chain may start inside a callee and return from it to any caller).
  static bool Realizable(const std::vector<WitnessStep>& chain);

 private:
  bool Holds(uint32_t node, uint32_t fact) const;

  const Problem& problem_;
  const Solution& solution_;
  // By node: where its pairs begin in solution_.facts (which is sorted), and past the last.
  std::vector<uint64_t> pairs_at_;
  // By node: the edges into it, the call sites returning to it, and (for a start node) the
  // call sites' callees entering it, as (call site, callee index).
  std::vector<std::vector<uint32_t>> edges_in_;
  std::vector<std::vector<uint32_t>> returning_to_;
  std::vector<std::vector<std::pair<uint32_t, uint32_t>>> entering_;
  std::vector<uint32_t> site_at_;  // by node: its call site, or ~0
  // Remember: the chains, and where each of their pairs is first met, (chain, step).
  std::vector<std::vector<WitnessStep>> remembered_;
  absl::flat_hash_map<std::pair<uint32_t, uint32_t>, std::pair<uint32_t, uint32_t>> known_;
};

}  // namespace sluice::ifds

#endif  // SLUICE_IFDS_WITNESS_H_
