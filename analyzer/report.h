// Findings as text (compiler-style lines editors understand), JSON, or SARIF 2.1.0 (what
// editors' SARIF viewers and code-scanning services read).
#ifndef SLUICE_ANALYZER_REPORT_H_
#define SLUICE_ANALYZER_REPORT_H_

#include <string>
#include <vector>

#include "sluice/analyzer/analyzer.h"

namespace sluice::analyzer {

// How many reads of the same value again a text finding lists (then how many more there are),
// and a SARIF result's related locations hold (its readAgain property counts them all).
inline constexpr size_t kTextRereads = 10;
inline constexpr size_t kSarifRereads = 100;

// How many findings a function has.
struct FunctionFindings {
  std::string function;
  std::string file;  // where its first finding is
  uint64_t findings = 0;
};
// The findings by function, most first (then by function name).
std::vector<FunctionFindings> SummaryByFunction(const std::vector<Finding>& findings);

// What a report says besides the findings it lists: how many there are in all (more than it
// lists when `sluice analyze --max-findings` cut the list; 0 means as many as it lists), and
// the count by function (SummaryByFunction of them all), if asked for.
struct ReportExtras {
  uint64_t total = 0;
  // Findings in system headers, left out (AnalyzedProgram::InSystemHeader).
  uint64_t in_system_headers = 0;
  std::vector<FunctionFindings> summary;
};

// "file:line:column: warning: message [rule] in function" for each finding, followed by its
// path as "file:line:column: note: ..." lines (from the origin to the step before the finding)
// and a note for each read of the same value again (the first 10, then how many more); then,
// if the list was cut, "note: N more findings not listed (--max-findings)", if some were left
// out, "note: N findings in system headers not listed (--system-headers)", and the summary's
// lines, "note: N findings in FUNCTION (FILE)".
std::string FormatText(const std::vector<Finding>& findings, const ReportExtras& extras = {});

// {"analysis":..., "findings":[{...}], "total_findings":N, "system_header_findings":N,
// "summary":[{"function", "file", "findings"}], "stats":{...}} (the summary if asked for);
// `stats` is a JSON object (or empty).
// A finding holds its "origin" and "path" (steps of file, line, column, message) and, for a
// value read again, "read_again" (file, line, column, variable).
std::string FormatJson(Analysis analysis, const std::vector<Finding>& findings,
                       const std::string& stats, const ReportExtras& extras = {});

// One SARIF 2.1.0 log with one run: the tool and its rules, every finding as a result with its
// physical location (a file: URI, absolute when the compilation directory is known), its
// function as a logical location, its path as a code flow, and its origin and reads of the
// same value again (the first 100) as related locations, with a readAgain property counting
// the reads again. The run's properties hold totalFindings, systemHeaderFindings (those left
// out), and the summary (findingsByFunction) if asked for.
std::string FormatSarif(Analysis analysis, const std::vector<Finding>& findings,
                        const ReportExtras& extras = {});

}  // namespace sluice::analyzer

#endif  // SLUICE_ANALYZER_REPORT_H_
