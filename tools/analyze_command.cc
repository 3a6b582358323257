// sluice analyze: C/C++ sources or LLVM IR to an IFDS problem (uninitialized variables or
// taint), solved by the resident solver (in-process or through a daemon) or the reference
// solver, reported as text, JSON or SARIF (docs/analyzer.md).
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "nlohmann/json.hpp"
#include "sluice/analyzer/analyzer.h"
#include "sluice/analyzer/report.h"
#include "sluice/analyzer/taint_config.h"
#include "sluice/ifds/binary_format.h"
#include "sluice/ifds/resident_solver.h"
#include "sluice/ifds/text_format.h"
#include "sluice/tools/cli.h"

ABSL_DECLARE_FLAG(std::string, format);
ABSL_DECLARE_FLAG(std::string, solver);
ABSL_DECLARE_FLAG(bool, stats);
ABSL_DECLARE_FLAG(uint64_t, initial_capacity);
ABSL_DECLARE_FLAG(std::string, analysis);
ABSL_DECLARE_FLAG(std::string, config);
ABSL_DECLARE_FLAG(std::string, cflags);
ABSL_DECLARE_FLAG(std::string, compile_commands);
ABSL_DECLARE_FLAG(std::string, clang);
ABSL_DECLARE_FLAG(std::string, emit_problem);
ABSL_DECLARE_FLAG(std::string, out);
ABSL_DECLARE_FLAG(bool, shared_slots);
ABSL_DECLARE_FLAG(uint32_t, pool_objects);
ABSL_DECLARE_FLAG(bool, print_rules);
ABSL_DECLARE_FLAG(uint64_t, max_findings);
ABSL_DECLARE_FLAG(bool, summary);
ABSL_DECLARE_FLAG(bool, system_headers);

namespace sluice {


namespace {

// The functions holding the most of the solution's (node, fact) pairs: where a problem's size
// goes. Each with its pairs and the distinct facts among them.
struct FunctionShare {
  std::string name;
  uint64_t pairs = 0;
  uint32_t facts = 0;
};
constexpr size_t kBusiestFunctions = 5;

std::vector<FunctionShare> BusiestFunctions(const analyzer::AnalyzedProgram& program,
                                            const ifds::Solution& solution) {
  const ifds::Problem& problem = program.problem();
  std::vector<FunctionShare> shares(problem.procedures.size());
  std::vector<absl::flat_hash_set<uint32_t>> facts(problem.procedures.size());
  for (const auto& [node, fact] : solution.facts) {
    if (node >= problem.node_procedure.size()) continue;
    const uint32_t procedure = problem.node_procedure[node];
    ++shares[procedure].pairs;
    facts[procedure].insert(fact);
  }
  for (size_t p = 0; p < shares.size(); ++p) {
    shares[p].name = program.FunctionName(static_cast<uint32_t>(p));
    shares[p].facts = static_cast<uint32_t>(facts[p].size());
  }
  std::sort(shares.begin(), shares.end(), [](const FunctionShare& a, const FunctionShare& b) {
    return a.pairs != b.pairs ? a.pairs > b.pairs : a.name < b.name;
  });
  if (shares.size() > kBusiestFunctions) shares.resize(kBusiestFunctions);
  while (!shares.empty() && shares.back().pairs == 0) shares.pop_back();
  return shares;
}

std::string StatsJson(const analyzer::ProgramStats& s, const ifds::Problem& problem,
                      const std::string& solver_json, uint64_t findings,
                      double findings_seconds, const std::vector<FunctionShare>& busiest) {
  std::string functions;
  for (const FunctionShare& f : busiest) {
    // A name that is not UTF-8 is written with U+FFFD for its bad bytes, not thrown on.
    const std::string name =
        nlohmann::json(f.name).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    absl::StrAppend(&functions, functions.empty() ? "" : ",", "{\"name\":", name,
                    ",\"pairs\":", f.pairs, ",\"facts\":", f.facts, "}");
  }
  return absl::StrFormat(
      "{\"program\":{\"functions\":%d,\"external_functions\":%d,\"ir_instructions\":%d,"
      "\"call_sites\":%d,\"indirect_calls\":%d,\"locations\":%d,\"allocation_wrappers\":%d,"
      "\"pooled_objects\":%d,\"pool_writes\":%d,\"pool_refinements\":%d},"
      "\"problem\":{\"procedures\":%d,\"nodes\":%d,\"facts\":%d,\"shared_facts\":%d,"
      "\"max_private_facts\":%d,\"readable_fact_names\":%s,\"flows\":%d,\"flow_pairs\":%d,"
      "\"edges\":%d,\"call_sites\":%d,\"checks\":%d},"
      "\"front_end_seconds\":%.6f,\"points_to_seconds\":%.6f,\"build_seconds\":%.6f,"
      "\"solver\":%s,\"findings\":%d,\"findings_seconds\":%.6f,"
      "\"busiest_functions\":[%s]}",
      s.functions, s.external_functions, s.ir_instructions, s.call_sites, s.indirect_calls,
      s.locations, s.allocation_wrappers, s.pooled_objects, s.pool_writes, s.pool_refinements,
      problem.procedures.size(),
      problem.node_count(), problem.fact_count(),
      s.shared_facts, s.max_private_facts, s.readable_fact_names ? "true" : "false",
      problem.flows.size(), s.flow_pairs, problem.edges.size(), problem.call_sites.size(),
      s.checks, s.front_end_seconds, s.points_to_seconds, s.build_seconds, solver_json, findings,
      findings_seconds, functions);
}

}  // namespace

int RunAnalyze(const std::vector<std::string>& files) {
  if (absl::GetFlag(FLAGS_print_rules)) {
    std::fputs(std::string(analyzer::DefaultTaintRulesToml()).c_str(), stdout);
    return kExitOk;
  }
  const std::string analysis_name = absl::GetFlag(FLAGS_analysis);
  const std::string format =
      absl::GetFlag(FLAGS_format).empty() ? "text" : absl::GetFlag(FLAGS_format);
  const std::string solver = absl::GetFlag(FLAGS_solver);
  if (analysis_name != "uninit" && analysis_name != "taint") {
    std::fprintf(stderr, "sluice analyze: --analysis is uninit or taint\n");
    return kExitUsage;
  }
  if (format != "text" && format != "sarif" && format != "json") {
    std::fprintf(stderr, "sluice analyze: --format is text, sarif or json\n");
    return kExitUsage;
  }
  if (solver != "resident" && solver != "reference") {
    std::fprintf(stderr, "sluice analyze: --solver is resident or reference\n");
    return kExitUsage;
  }
  if (absl::GetFlag(FLAGS_initial_capacity) > ifds::kMaxTableSlots) {
    std::fprintf(stderr, "sluice analyze: --initial-capacity is at most %llu slots\n",
                 static_cast<unsigned long long>(ifds::kMaxTableSlots));
    return kExitUsage;
  }
  if (files.empty() && absl::GetFlag(FLAGS_compile_commands).empty()) {
    std::fprintf(stderr,
                 "sluice analyze: give the files to analyze (.c .cc .cpp sources, .ll or .bc), "
                 "or --compile-commands\n");
    return kExitUsage;
  }
  // Neither output may be one of the inputs: the analysis would write over its own source.
  for (const std::string& output :
       {absl::GetFlag(FLAGS_out), absl::GetFlag(FLAGS_emit_problem)}) {
    if (output.empty()) continue;
    for (const std::string& file : files) {
      std::error_code unknown;  // a path that does not exist is no input
      if (std::filesystem::equivalent(output, file, unknown)) {
        std::fprintf(stderr, "sluice analyze: %s would write over the input %s\n",
                     output.c_str(), file.c_str());
        return kExitUsage;
      }
    }
  }
  analyzer::AnalyzerOptions options;
  options.analysis =
      analysis_name == "uninit" ? analyzer::Analysis::kUninit : analyzer::Analysis::kTaint;
  options.taint = analyzer::DefaultTaintConfig();
  if (!absl::GetFlag(FLAGS_config).empty()) {
    absl::StatusOr<analyzer::TaintConfig> config =
        analyzer::LoadTaintConfig(absl::GetFlag(FLAGS_config));
    if (!config.ok()) {
      std::fprintf(stderr, "sluice analyze: %s\n", std::string(config.status().message()).c_str());
      return kExitUsage;
    }
    options.taint = *std::move(config);
  }
  options.shared_slots = absl::GetFlag(FLAGS_shared_slots);
  options.pool_objects = absl::GetFlag(FLAGS_pool_objects);
  options.front_end.clang = absl::GetFlag(FLAGS_clang);
  options.front_end.compile_commands = absl::GetFlag(FLAGS_compile_commands);
  for (absl::string_view flag :
       absl::StrSplit(absl::GetFlag(FLAGS_cflags), ' ', absl::SkipEmpty())) {
    options.front_end.cflags.emplace_back(flag);
  }
  // Phases are reported once a run has taken two seconds.
  const absl::Time start = absl::Now();
  options.progress = [start](const std::string& phase) {
    const absl::Duration elapsed = absl::Now() - start;
    if (elapsed < absl::Seconds(2)) return;
    std::fprintf(stderr, "sluice analyze: %s (%.1fs)\n", phase.c_str(),
                 absl::ToDoubleSeconds(elapsed));
  };
  absl::StatusOr<std::unique_ptr<analyzer::AnalyzedProgram>> program =
      analyzer::AnalyzedProgram::Build(files, options);
  if (!program.ok()) {
    std::fprintf(stderr, "sluice analyze: %s\n", std::string(program.status().message()).c_str());
    return program.status().code() == absl::StatusCode::kResourceExhausted ? kExitFailed
                                                                            : kExitUsage;
  }
  const ifds::Problem& problem = (*program)->problem();
  options.progress(absl::StrFormat("solving: %d nodes, %d facts, a pool of %d objects",
                                   problem.node_count(), problem.fact_count(),
                                   (*program)->stats().pooled_objects));
  absl::StatusOr<SolveOutcome> solved = SolveWithFlags(problem, "sluice analyze");
  // Where writes into the pool hold, the pool is made there: solve again (docs/analyzer.md).
  while (solved.ok() && (*program)->Refine(solved->solution)) {
    options.progress(absl::StrFormat("the pool is written in more places: solving again (%d)",
                                     (*program)->stats().pool_refinements));
    solved = SolveWithFlags(problem, "sluice analyze");
  }
  if (!solved.ok()) {
    std::fprintf(stderr, "sluice analyze: %s\n", solved.status().ToString().c_str());
    return ExitCodeOf(solved.status());
  }
  // The problem as solved last (what was refined included): it solves to the same solution.
  const std::string emit = absl::GetFlag(FLAGS_emit_problem);
  if (!emit.empty()) {
    const bool binary = emit.size() > 4 && emit.substr(emit.size() - 4) == ".bin";
    if (absl::Status s = WriteFile(emit, binary ? ifds::WriteBinary(problem)
                                                : ifds::WriteText(problem));
        !s.ok()) {
      std::fprintf(stderr, "sluice analyze: %s\n", std::string(s.message()).c_str());
      return kExitFailed;
    }
  }
  // The findings and their paths (a search or a tabulation on the host: docs/analyzer.md).
  const absl::Time finding = absl::Now();
  std::vector<analyzer::Finding> findings = (*program)->Findings(solved->solution);
  const double findings_seconds = absl::ToDoubleSeconds(absl::Now() - finding);
  // Those in system headers are the libraries' code: left out, as compilers leave out their
  // warnings there, and counted.
  uint64_t in_system_headers = 0;
  if (!absl::GetFlag(FLAGS_system_headers)) {
    in_system_headers = std::erase_if(findings, [&](const analyzer::Finding& f) {
      return (*program)->InSystemHeader(f);
    });
  }
  const std::vector<FunctionShare> busiest = absl::GetFlag(FLAGS_stats)
                                                ? BusiestFunctions(**program, solved->solution)
                                                : std::vector<FunctionShare>();
  const std::string stats_json = StatsJson((*program)->stats(), problem, solved->stats_json,
                                           findings.size(), findings_seconds, busiest);
  analyzer::ReportExtras extras{.total = findings.size(),
                                .in_system_headers = in_system_headers};
  if (absl::GetFlag(FLAGS_summary)) extras.summary = analyzer::SummaryByFunction(findings);
  const uint64_t max_findings = absl::GetFlag(FLAGS_max_findings);
  if (max_findings != 0 && findings.size() > max_findings) findings.resize(max_findings);
  const absl::Time writing = absl::Now();
  std::string output;
  if (format == "text") {
    output = analyzer::FormatText(findings, extras);
  } else if (format == "json") {
    output = analyzer::FormatJson(options.analysis, findings,
                                  absl::GetFlag(FLAGS_stats) ? stats_json : "", extras);
  } else {
    output = analyzer::FormatSarif(options.analysis, findings, extras);
  }
  if (absl::Status s = WriteOutput(output); !s.ok()) {
    std::fprintf(stderr, "sluice analyze: %s\n", std::string(s.message()).c_str());
    return kExitFailed;
  }
  if (absl::GetFlag(FLAGS_stats)) {
    // The findings formatted and written (on stderr only: the JSON stats are in that output).
    const double output_seconds = absl::ToDoubleSeconds(absl::Now() - writing);
    const analyzer::ProgramStats& s = (*program)->stats();
    std::string where;
    for (const FunctionShare& f : busiest) {
      absl::StrAppend(&where, where.empty() ? "" : ", ", f.name, " ", f.pairs, " (",
                      f.facts, " facts)");
    }
    std::fprintf(stderr,
                 "program: %u functions (%u external), %llu IR instructions, %u call sites "
                 "(%u indirect calls), %u memory locations, %u allocation wrappers\n"
                 "pool: %u objects, %u writes into it, solved again %u times\n"
                 "problem: %u procedures, %u nodes, %u facts (%u shared, at most %u per "
                 "function%s), %zu flow functions with %llu flow pairs, %u checks\n"
                 "front end: %.3f s, points-to: %.3f s, problem: %.3f s\n%s"
                 "most node/fact pairs: %s\nfindings: %llu "
                 "(with their paths: %.3f s)\noutput: %.3f s (%s)\n",
                 s.functions, s.external_functions,
                 static_cast<unsigned long long>(s.ir_instructions), s.call_sites,
                 s.indirect_calls, s.locations, s.allocation_wrappers, s.pooled_objects,
                 s.pool_writes, s.pool_refinements,
                 static_cast<uint32_t>(problem.procedures.size()),
                 problem.node_count(), problem.fact_count(), s.shared_facts, s.max_private_facts,
                 s.readable_fact_names ? "" : ", ids shared across functions", problem.flows.size(),
                 static_cast<unsigned long long>(s.flow_pairs), s.checks, s.front_end_seconds,
                 s.points_to_seconds, s.build_seconds, solved->stats_text.c_str(),
                 where.empty() ? "none" : where.c_str(),
                 static_cast<unsigned long long>(extras.total), findings_seconds, output_seconds,
                 Rate(output.size(), output_seconds).c_str());
  }
  return kExitOk;
}

}  // namespace sluice
