// Writing solutions: `node<TAB>fact` lines sorted bytewise by node name then fact name, or JSON.
#ifndef SLUICE_IFDS_OUTPUT_H_
#define SLUICE_IFDS_OUTPUT_H_

#include <string>

#include "ifds/problem.h"

namespace sluice::ifds {

// One "node\tfact\n" line per fact holding at a node, sorted bytewise by node name, then fact
// name. The zero fact is left out unless `include_zero`.
std::string FormatTsv(const Problem& problem, const Solution& solution, bool include_zero);

// {"results":[{"node":"n","facts":["a","b"]},...]} in the same order, plus `extra` members
// (already JSON, e.g. "\"stats\":{...}") when not empty.
std::string FormatJson(const Problem& problem, const Solution& solution, bool include_zero,
                       const std::string& extra = "");

}  // namespace sluice::ifds

#endif  // SLUICE_IFDS_OUTPUT_H_
