// Writing solutions: `node<TAB>fact` lines sorted bytewise by node name then fact name, or JSON.
#ifndef SLUICE_IFDS_OUTPUT_H_
#define SLUICE_IFDS_OUTPUT_H_

#include <cstdint>
#include <string>

#include "sluice/ifds/problem.h"

namespace sluice::ifds {

// One "node\tfact\n" line per fact holding at a node, sorted bytewise by node name, then fact
// name. The zero fact is left out unless `include_zero`.
std::string FormatTsv(const Problem& problem, const Solution& solution, bool include_zero);

// {"results":[{"node":"n","facts":["a","b"]},...]} in the same order, plus `extra` members
// (already JSON, e.g. "\"stats\":{...}") when not empty.
std::string FormatJson(const Problem& problem, const Solution& solution, bool include_zero,
                       const std::string& extra = "");

// A 64-bit FNV-1a digest of the solution's (node id, fact id) pairs in order (the order every
// solver returns: by node, then fact): two solutions of one problem are equal exactly when
// their digests are, up to hash collisions. `sluice solve --stats` and `sluice analyze
// --stats` print it, so solvers, runs and machines can be compared without the full answer.
uint64_t SolutionDigest(const Solution& solution);

}  // namespace sluice::ifds

#endif  // SLUICE_IFDS_OUTPUT_H_
