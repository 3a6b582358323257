// The reference IFDS solver: the classic worklist tabulation of Reps, Horwitz and Sagiv (1995)
// with end summaries and incoming-call sets (as in Naeem, Lhoták and Rodriguez 2010, which
// handles several callees per call site). Single-threaded, deterministic and kept simple: it is
// the oracle every other solver is compared with.
#ifndef SLUICE_IFDS_REFERENCE_SOLVER_H_
#define SLUICE_IFDS_REFERENCE_SOLVER_H_

#include <cstdint>

#include "sluice/ifds/problem.h"

namespace sluice::ifds {

struct ReferenceStats {
  uint64_t path_edges = 0;
  uint64_t end_summaries = 0;
  uint64_t incoming = 0;
};

// Solves a problem that passes Validate.
Solution SolveReference(const Problem& problem, ReferenceStats* stats = nullptr);

}  // namespace sluice::ifds

#endif  // SLUICE_IFDS_REFERENCE_SOLVER_H_
