// A static analyzer for C and C++ programs over LLVM IR (docs/analyzer.md): it reads .ll/.bc
// files or compiles sources with Clang, builds the interprocedural CFG, the call graph and a
// points-to analysis, and turns an analysis (possibly-uninitialized variables, or taint) into
// an IFDS problem in Sluice's model plus the checks that make findings of its solution. Any
// IFDS solver may solve the problem; the checks read only the solution.
//
// This header knows nothing of LLVM: the module lives only while the problem is built.
#ifndef SLUICE_ANALYZER_ANALYZER_H_
#define SLUICE_ANALYZER_ANALYZER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "sluice/analyzer/taint_config.h"
#include "sluice/ifds/problem.h"

namespace sluice::analyzer {

enum class Analysis { kUninit, kTaint };
const char* AnalysisName(Analysis analysis);  // "uninit", "taint"

struct FrontEndOptions {
  // Clang, for sources (.c, .cc, .cpp, .cxx, .C); empty: the one found at build time.
  std::string clang;
  // Extra flags for every source (after -O0 -g -emit-llvm).
  std::vector<std::string> cflags;
  // A compile_commands.json: each source given is compiled with the flags its entry names
  // (defines, includes, the language standard); sources it does not list get `cflags` only.
  std::string compile_commands;
  // Where intermediate bitcode goes; empty: a fresh directory under $TMPDIR, removed after.
  std::string work_dir;
};

struct AnalyzerOptions {
  Analysis analysis = Analysis::kUninit;
  TaintConfig taint;  // the rules of the taint analysis
  FrontEndOptions front_end;
  // Number every function's own facts from the same base, as a program too large for one id
  // per fact is numbered (tests check both numberings give the same findings).
  bool shared_slots = false;
  // A library copy (memcpy, strcpy, ...) through pointers to several places pairs every source
  // location with every destination location; past this many pairs it goes through a place of
  // its own instead (the same findings, a sum of pairs for their product; 0: always).
  uint64_t copy_pairs_limit = 4096;
  // A pointer that may point to this many objects or more that can be written (points-to has
  // lost track of it) reads and writes the facts those objects share, the pool, rather than
  // each object's (docs/analyzer.md, "The pool"). Without it each context a function is
  // analyzed in carries what follows from every such object again. 0: never.
  uint32_t pool_objects = 64;
  // Phase reports ("compiling 3 sources", "points-to", ...) for long runs; may be empty.
  std::function<void(const std::string&)> progress;
};

struct SourceLocation {
  std::string file;  // as the debug info names it: the path given to the compiler
  std::string directory;  // the compilation directory, for a relative `file`
  uint32_t line = 0;  // 0 when the instruction has no debug location
  uint32_t column = 0;
};

// How far the searches of each finding's own path may go (docs/analyzer.md, "Paths"): pairs
// visited for one finding, and calls deep, by the first search, which finds the shortest
// chain; pairs visited by the longer search of a finding left, which goes as deep as a search
// goes (ifds::Witnesses::kMaxDepth), and by all the searches. The tabulation gives those still
// left theirs, and a finding it did not reach gets a longer search again, within what is left.
inline constexpr uint64_t kPathSearchBudget = 100'000;
inline constexpr uint32_t kPathSearchDepth = 8;
inline constexpr uint64_t kPathLastSearchBudget = 30'000'000;
inline constexpr uint64_t kPathSearchesBudget = 100'000'000;

// A place on a finding's path and what happens there.
struct FlowStep {
  SourceLocation location;
  std::string message;  // "'x' is declared without a value", "passed into 'f'", ...
};

struct Finding {
  std::string rule;  // "uninitialized-read" or "tainted-sink"
  std::string message;
  std::string function;  // the function the finding is in (its source name)
  std::string variable;  // uninit: the variable read; taint: the tainted variable or value
  std::string sink;      // taint: the sink function; empty for uninit
  uint32_t argument = 0;  // taint: the sink's argument, from 1
  SourceLocation location;
  // Where the value comes from and how it gets here: the origin (the declaration or
  // allocation left without a value; the call to a taint source) first, then each place it is
  // stored into another variable, passed into a call or returned from one, and the finding's
  // own place last. Empty when no path was found within the search's budget.
  std::vector<FlowStep> path;
  // Uninit: the other reads of the same uninitialized value (their paths start at this one's
  // origin), in source order.
  struct Reread {
    SourceLocation location;
    std::string variable;  // what is read there: this one's variable, or a copy of it
  };
  std::vector<Reread> read_again;
};

struct ProgramStats {
  uint64_t ir_instructions = 0;  // in defined functions
  uint32_t functions = 0;        // defined
  uint32_t external_functions = 0;
  uint32_t call_sites = 0;       // calls to defined functions (ICFG call nodes)
  uint32_t indirect_calls = 0;   // of those, through a pointer
  uint32_t locations = 0;        // memory locations (fields, arrays, heap sites)
  uint32_t allocation_wrappers = 0;  // functions whose struct allocations are sites of their own
  uint32_t shared_facts = 0;     // facts numbered once for the program
  uint32_t max_private_facts = 0;  // the largest function's own facts
  uint32_t pooled_objects = 0;  // objects that share the pool (AnalyzerOptions::pool_objects)
  uint32_t pool_writes = 0;     // places a write may make the pool hold (Refine)
  uint32_t pool_refinements = 0;  // times Refine changed the problem
  bool readable_fact_names = true;  // false: facts share ids across functions (slots)
  uint64_t flow_pairs = 0;  // kills + gens + pairs over the problem's distinct flow functions
  uint32_t checks = 0;      // places a finding can be reported
  double front_end_seconds = 0;  // compiling and linking
  double points_to_seconds = 0;  // the memory model, points-to and the call graph
  double build_seconds = 0;      // the ICFG and the problem
};

// An analysis of one program, ready to solve: the IFDS problem and the checks.
class AnalyzedProgram {
 public:
  // Loads, links (several inputs become one module), analyzes. InvalidArgument for input that
  // cannot be read or compiled (naming the file and Clang's or LLVM's message), NotFound for a
  // missing file, ResourceExhausted if the problem needs more facts than the device holds.
  static absl::StatusOr<std::unique_ptr<AnalyzedProgram>> Build(
      const std::vector<std::string>& inputs, const AnalyzerOptions& options);
  ~AnalyzedProgram();

  const ifds::Problem& problem() const;
  const ProgramStats& stats() const;
  // The source-level name of procedure `procedure`'s function, as findings name it (C++'s
  // qualified and demangled), where the problem's procedure name is the IR's symbol.
  const std::string& FunctionName(uint32_t procedure) const;
  // Where a program has a pool (docs/analyzer.md, "The pool"), a write into it makes it hold
  // only where a solution shows that what it writes holds there. Refine turns the writes this
  // solution shows into generations of the pool and returns whether the problem changed: if
  // so, solve it again, until Refine returns false, before reading its findings (each solution
  // holds every fact of the one before, so this ends; a program without a pool never
  // changes). Solve does just that with any solver.
  bool Refine(const ifds::Solution& solution);
  absl::StatusOr<ifds::Solution> Solve(
      const std::function<absl::StatusOr<ifds::Solution>(const ifds::Problem&)>& solve);
  // The findings the solution shows, sorted by file, line, column, then variable; one per
  // (place, variable) for uninit and per (place, sink argument) for taint, each with its path;
  // uninit reads whose paths start at the same origin are one finding, at the read nearest the
  // origin, the others its read_again (docs/analyzer.md).
  // `solution` is one Refine leaves unchanged.
  std::vector<Finding> Findings(const ifds::Solution& solution) const;
  // Whether `finding` is in a system header (a header of a directory Clang searches for
  // `#include <...>` by itself, or one the flags name with -isystem): the library's code, not
  // the program's, where compilers leave out their warnings.
  bool InSystemHeader(const Finding& finding) const;

  struct Data;

 private:
  explicit AnalyzedProgram(std::unique_ptr<Data> data);
  std::unique_ptr<Data> data_;
};

}  // namespace sluice::analyzer

#endif  // SLUICE_ANALYZER_ANALYZER_H_
