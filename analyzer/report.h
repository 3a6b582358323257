// Findings as text (compiler-style lines editors understand), JSON, or SARIF 2.1.0 (what
// editors' SARIF viewers and code-scanning services read).
#ifndef SLUICE_ANALYZER_REPORT_H_
#define SLUICE_ANALYZER_REPORT_H_

#include <string>
#include <vector>

#include "sluice/analyzer/analyzer.h"

namespace sluice::analyzer {

// "file:line:column: warning: message [rule] in function", one per line.
std::string FormatText(const std::vector<Finding>& findings);

// {"analysis":..., "findings":[{...}], "stats":{...}}; `stats` is a JSON object (or empty).
std::string FormatJson(Analysis analysis, const std::vector<Finding>& findings,
                       const std::string& stats);

// One SARIF 2.1.0 log with one run: the tool and its rules, every finding as a result with its
// physical location (a file: URI, absolute when the compilation directory is known) and its
// function as a logical location.
std::string FormatSarif(Analysis analysis, const std::vector<Finding>& findings);

}  // namespace sluice::analyzer

#endif  // SLUICE_ANALYZER_REPORT_H_
