// The analyzer's parts: the taint rules files, the front end (inputs, linking, Clang's errors,
// compile_commands.json), the problem it builds (valid, written and read back in Sluice's
// formats with the same solution), library seeds, and the three report formats.
#include <algorithm>
#include <iterator>
#include <bit>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "sluice/analyzer/analyzer.h"
#include "sluice/analyzer/report.h"
#include "sluice/analyzer/taint_config.h"
#include "sluice/ifds/binary_format.h"
#include "sluice/ifds/reference_solver.h"
#include "sluice/ifds/text_format.h"
#include "sluice/ifds/witness.h"
#include "tests/testing/status_matchers.h"

namespace sluice::analyzer {
namespace {

namespace fs = std::filesystem;
using ::sluice::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::Field;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;

class TempDir {
 public:
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "sluice-analyzer-test-XXXXXX").string();
    path_ = mkdtemp(pattern.data());
  }
  ~TempDir() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  std::string Write(const std::string& name, const std::string& text) const {
    const fs::path file = fs::path(path_) / name;
    std::ofstream(file) << text;
    return file.string();
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::vector<Finding> Analyze(const std::vector<std::string>& inputs, AnalyzerOptions options) {
  absl::StatusOr<std::unique_ptr<AnalyzedProgram>> program =
      AnalyzedProgram::Build(inputs, options);
  EXPECT_TRUE(program.ok()) << program.status();
  if (!program.ok()) return {};
  return (*program)->Findings(ifds::SolveReference((*program)->problem()));
}

AnalyzerOptions Taint() {
  AnalyzerOptions options;
  options.analysis = Analysis::kTaint;
  options.taint = DefaultTaintConfig();
  return options;
}

// --- taint rules ---------------------------------------------------------------------------

TEST(TaintConfigTest, BuiltInRulesParseAndNameLibc) {
  const TaintConfig config = DefaultTaintConfig();
  EXPECT_GE(config.sources.size(), 10u);
  EXPECT_GE(config.sinks.size(), 10u);
  const TaintRule* getenv = TaintConfig::Find(config.sources, "getenv");
  ASSERT_NE(getenv, nullptr);
  EXPECT_TRUE(getenv->result);
  const TaintRule* execl = TaintConfig::Find(config.sinks, "execl");
  ASSERT_NE(execl, nullptr);
  EXPECT_TRUE(execl->Names(0));
  EXPECT_TRUE(execl->Names(7));
  const TaintRule* snprintf = TaintConfig::Find(config.sinks, "snprintf");
  ASSERT_NE(snprintf, nullptr);
  EXPECT_FALSE(snprintf->Names(0));
  EXPECT_TRUE(snprintf->Names(2));
}

TEST(TaintConfigTest, AFileAddsToTheDefaultsUnlessItSaysOtherwise) {
  ASSERT_OK_AND_ASSIGN(TaintConfig added, ParseTaintConfig(R"([[sink]]
function = "log_line"
arguments = [1, 0, 1]
)",
                                                           "rules.toml"));
  EXPECT_EQ(added.sinks.size(), DefaultTaintConfig().sinks.size() + 1);
  const TaintRule* rule = TaintConfig::Find(added.sinks, "log_line");
  ASSERT_NE(rule, nullptr);
  EXPECT_THAT(rule->arguments, ElementsAre(0u, 1u));

  ASSERT_OK_AND_ASSIGN(TaintConfig alone, ParseTaintConfig(R"(defaults = false
[[source]]
function = "read_secret"
result = true
)",
                                                           "rules.toml"));
  EXPECT_THAT(alone.sources, SizeIs(1));
  EXPECT_THAT(alone.sinks, IsEmpty());
}

TEST(TaintConfigTest, MalformedRulesAreRefusedWithTheirPlace) {
  EXPECT_THAT(ParseTaintConfig("[[sink]\nfunction = 1", "r.toml"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("r.toml:1:")));
  EXPECT_THAT(ParseTaintConfig("[[sinks]]\nfunction = \"f\"\narguments = [0]\n", "r.toml"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("unknown key \"sinks\"")));
  EXPECT_THAT(ParseTaintConfig("[[sink]]\narguments = [0]\n", "r.toml"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("needs function")));
  EXPECT_THAT(ParseTaintConfig("[[source]]\nfunction = \"f\"\n", "r.toml"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("names neither its result nor an argument")));
  EXPECT_THAT(ParseTaintConfig("[[sink]]\nfunction = \"f\"\narguments = [-1]\n", "r.toml"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("r.toml:3:")));
  EXPECT_THAT(ParseTaintConfig("[[sink]]\nfunction = \"f\"\narguments = [0]\ncolour = 1\n",
                               "r.toml"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("unknown key \"colour\"")));
  EXPECT_THAT(ParseTaintConfig("[[sink]]\nfunction = \"f\"\nresult = true\n", "r.toml"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("a sink is about")));
  EXPECT_THAT(LoadTaintConfig("/nonexistent/rules.toml"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("/nonexistent/rules.toml")));
}

// --- the front end -------------------------------------------------------------------------

TEST(FrontEndTest, BadInputsAreRefusedNamingTheFile) {
  TempDir dir;
  EXPECT_THAT(AnalyzedProgram::Build({dir.path() + "/missing.c"}, {}),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("missing.c")));
  EXPECT_THAT(AnalyzedProgram::Build({dir.Write("broken.c", "int main( {")}, {}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("broken.c: clang failed")));
  EXPECT_THAT(AnalyzedProgram::Build({dir.Write("garbage.ll", "this is not IR")}, {}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("garbage.ll")));
  EXPECT_THAT(AnalyzedProgram::Build({dir.Write("garbage.bc", std::string("BC\xc0\xde\x01", 5))},
                                     {}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("garbage.bc")));
  EXPECT_THAT(AnalyzedProgram::Build({dir.Write("notes.txt", "hello")}, {}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("notes.txt: not an input")));
  EXPECT_THAT(AnalyzedProgram::Build({}, {}), StatusIs(absl::StatusCode::kInvalidArgument));
  // Two definitions of main cannot be linked.
  const std::string a = dir.Write("a.c", "int main(void) { return 0; }\n");
  const std::string b = dir.Write("b.c", "int main(void) { return 1; }\n");
  EXPECT_THAT(AnalyzedProgram::Build({a, b}, {}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("cannot link")));
}

TEST(FrontEndTest, SourcesAndIrAreLinkedIntoOneProgram) {
  TempDir dir;
  // The source is in C; its helper, in another file, is given as IR compiled beforehand.
  const std::string helper = dir.Write("helper.c", R"(#include <stdlib.h>
char *config_path(void) { return getenv("CONFIG"); }
)");
  const std::string helper_ll = dir.path() + "/helper.ll";
  ASSERT_EQ(std::system(("\"" + std::string(SLUICE_CLANG) + "\" -O0 -g -S -emit-llvm -o " +
                         helper_ll + " " + helper)
                            .c_str()),
            0);
  const std::string main_c = dir.Write("main.c", R"(#include <stdlib.h>
char *config_path(void);
int main(void) {
  char *path = config_path();
  return system(path);
}
)");
  const std::vector<Finding> findings = Analyze({main_c, helper_ll}, Taint());
  ASSERT_THAT(findings, SizeIs(1));
  EXPECT_EQ(findings[0].sink, "system");
  EXPECT_EQ(findings[0].argument, 1u);
  EXPECT_EQ(findings[0].variable, "path");
  EXPECT_EQ(findings[0].location.line, 5u);
  EXPECT_EQ(findings[0].function, "main");
  EXPECT_THAT(findings[0].location.file, HasSubstr("main.c"));
}

TEST(FrontEndTest, CompileCommandsGiveEachSourceItsFlags) {
  TempDir dir;
  const std::string source = dir.Write("tool.c", R"(#include <stdio.h>
int main(void) {
  int x;
#ifdef INIT
  x = 1;
#endif
  printf("%d\n", x);
  return 0;
}
)");
  AnalyzerOptions options;
  EXPECT_THAT(Analyze({source}, options), SizeIs(1));
  const std::string commands = dir.Write("compile_commands.json",
                                         nlohmann::json::array({{{"directory", dir.path()},
                                                                 {"file", "tool.c"},
                                                                 {"command",
                                                                  "cc -DINIT -O2 -c -o tool.o "
                                                                  "tool.c"}}})
                                             .dump());
  options.front_end.compile_commands = commands;
  EXPECT_THAT(Analyze({source}, options), IsEmpty());
  // Without files, every source the database lists.
  EXPECT_THAT(Analyze({}, options), IsEmpty());
  options.front_end.compile_commands = dir.Write("bad.json", "{\"not\": \"a list\"}");
  EXPECT_THAT(AnalyzedProgram::Build({source}, options),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("bad.json")));
}

// A finding in a header of the system's (a directory Clang searches for #include <...> by
// itself, or that -isystem names, in --cflags or a compile command) is told from the
// program's: compilers leave out their warnings there.
TEST(FrontEndTest, FindingsInSystemHeadersAreToldFromTheProgramsOwn) {
  TempDir dir;
  std::filesystem::create_directories(dir.path() + "/vendor");
  std::filesystem::create_directories(dir.path() + "/own");
  // Each header's function reads a variable it never set.
  const auto header = [](const std::string& function) {
    return "static inline int " + function + "(void) {\n  int unset;\n  return unset;\n}\n";
  };
  dir.Write("vendor/vendor.h", header("vendors"));
  dir.Write("own/own.h", header("owns"));
  const std::string source = dir.Write("tool.c", R"(#include <vendor.h>
#include "own/own.h"
int main(void) { return vendors() + owns(); }
)");
  const auto in_system_headers = [&](AnalyzerOptions options) {
    absl::StatusOr<std::unique_ptr<AnalyzedProgram>> program =
        AnalyzedProgram::Build({source}, options);
    EXPECT_TRUE(program.ok()) << program.status();
    std::vector<std::string> files;
    if (!program.ok()) return files;
    for (const Finding& f : (*program)->Findings(ifds::SolveReference((*program)->problem()))) {
      if ((*program)->InSystemHeader(f)) files.push_back(f.location.file);
    }
    return files;
  };
  AnalyzerOptions options;
  options.front_end.cflags = {"-isystem", dir.path() + "/vendor", "-I", dir.path()};
  // Two findings, one of them in a system header.
  EXPECT_THAT(in_system_headers(options), ElementsAre(HasSubstr("vendor/vendor.h")));
  options.front_end.cflags = {"-I" + dir.path() + "/vendor", "-I", dir.path()};
  EXPECT_THAT(in_system_headers(options), IsEmpty()) << "-I is the program's own";
  options.front_end.cflags = {};
  options.front_end.compile_commands =
      dir.Write("compile_commands.json",
                nlohmann::json::array({{{"directory", dir.path()},
                                        {"file", "tool.c"},
                                        {"command", "cc -isystemvendor -I. -c tool.c"}}})
                    .dump());
  EXPECT_THAT(in_system_headers(options), ElementsAre(HasSubstr("vendor/vendor.h")));
  // Clang's own directories: the C library's headers are among them.
  options.front_end.compile_commands.clear();
  const std::string libc = dir.Write("libc.c", R"(#include <stdio.h>
int main(void) { return 0; }
)");
  absl::StatusOr<std::unique_ptr<AnalyzedProgram>> program =
      AnalyzedProgram::Build({libc}, options);
  ASSERT_TRUE(program.ok()) << program.status();
  Finding in_stdio;
  in_stdio.location.file = "/usr/include/x86_64-linux-gnu/../stdio.h";
  EXPECT_TRUE((*program)->InSystemHeader(in_stdio));
  in_stdio.location.file = "/usr/include2/stdio.h";
  EXPECT_FALSE((*program)->InSystemHeader(in_stdio)) << "a directory's name, not its prefix";
  in_stdio.location.file = "stdio.h";
  EXPECT_FALSE((*program)->InSystemHeader(in_stdio)) << "relative, and no directory";
  in_stdio.location.directory = "/usr/include";
  EXPECT_TRUE((*program)->InSystemHeader(in_stdio)) << "relative to its directory";
}

// Linking gives a union the type of an identical struct of another file, and that type's name
// (LLVM's IR linker merges types by their bodies): the union is still known as one, from debug
// info, so a member that begins unlike the struct still lives in it.
TEST(FrontEndTest, AUnionLinkedUnderAStructsNameHoldsEachOfItsMembers) {
  TempDir dir;
  const std::string main_c = dir.Write("main.c", R"(struct Pair { int *p; long n; };
struct Wrap { struct Pair pair; };
int read_other(void);
struct Wrap keep;
int main(void) {
  int y = 1;
  keep.pair.p = &y;
  return read_other() + *keep.pair.p;
}
)");
  const std::string other_c = dir.Write("other.c", R"(struct Pair { int *p; long n; };
struct Other { long m; int *q; };
union Box { struct Pair pair; struct Other other; };
int read_other(void) {
  union Box box;
  int x;
  box.other.q = &x;
  return *box.other.q;
}
)");
  AnalyzerOptions options;
  options.analysis = Analysis::kUninit;
  // Alone, and linked after the file whose struct its union's type becomes.
  for (const std::vector<std::string>& inputs :
       {std::vector<std::string>{other_c}, std::vector<std::string>{main_c, other_c}}) {
    const std::vector<Finding> findings = Analyze(inputs, options);
    ASSERT_THAT(findings, SizeIs(1)) << inputs.size() << " files";
    EXPECT_EQ(findings[0].variable, "x");
    EXPECT_EQ(findings[0].location.line, 8u);
    EXPECT_THAT(findings[0].location.file, HasSubstr("other.c"));
  }
}

// --- the problem ---------------------------------------------------------------------------

TEST(ProblemTest, WrittenInSluicesFormatsItSolvesTheSame) {
  TempDir dir;
  const std::string source = dir.Write("p.c", R"(#include <stdio.h>
#include <stdlib.h>
#include <string.h>
static void copy(char *to, const char *from) { strcpy(to, from); }
int main(void) {
  char buf[64];
  char *env = getenv("X");
  if (env) copy(buf, env);
  printf(buf);
  return 0;
}
)");
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<AnalyzedProgram> program,
                       AnalyzedProgram::Build({source}, Taint()));
  const ifds::Problem& problem = program->problem();
  EXPECT_OK(ifds::Validate(problem));
  EXPECT_EQ(program->stats().functions, 2u);
  EXPECT_EQ(program->stats().call_sites, 1u);
  EXPECT_TRUE(program->stats().readable_fact_names);
  const ifds::Solution solution = ifds::SolveReference(problem);
  EXPECT_THAT(program->Findings(solution), ElementsAre(Field(&Finding::sink, "printf")));

  ASSERT_OK_AND_ASSIGN(ifds::Problem text, ifds::ParseText(ifds::WriteText(problem), "p.ifds"));
  ASSERT_OK_AND_ASSIGN(ifds::Problem binary,
                       ifds::ParseBinary(ifds::WriteBinary(problem), "p.bin"));
  EXPECT_EQ(ifds::SolveReference(binary), solution);
  // The text format may renumber; compare by names.
  EXPECT_EQ(ifds::SolveReference(text).facts.size(), solution.facts.size());
}

// Whether fact `fact` (by name) holds at node `node` (by name).
bool HoldsAt(const ifds::Problem& problem, const ifds::Solution& solution,
             const std::string& node, const std::string& fact) {
  const auto n = std::find(problem.node_names.begin(), problem.node_names.end(), node);
  const auto f = std::find(problem.fact_names.begin(), problem.fact_names.end(), fact);
  EXPECT_NE(n, problem.node_names.end()) << node;
  EXPECT_NE(f, problem.fact_names.end()) << fact;
  const std::pair<uint32_t, uint32_t> pair(n - problem.node_names.begin(),
                                           f - problem.fact_names.begin());
  return std::binary_search(solution.facts.begin(), solution.facts.end(), pair);
}

TEST(ProblemTest, AValueIsAFactUntilItsLastUseOnEachPath) {
  TempDir dir;
  // Nodes: entry; %v = 0, %c = 1, br = 2; use: call = 3, br = 4; skip: br = 5; done: ret = 6.
  const std::string ir = dir.Write("branch.ll", R"(declare i32 @source()
declare void @sink(i32)
define i32 @main(i32 %argc) {
entry:
  %v = call i32 @source()
  %c = icmp sgt i32 %argc, 1
  br i1 %c, label %use, label %skip
use:
  call void @sink(i32 %v)
  br label %done
skip:
  br label %done
done:
  ret i32 0
}
)");
  AnalyzerOptions options = Taint();
  ASSERT_OK_AND_ASSIGN(options.taint, ParseTaintConfig(R"(defaults = false
[[source]]
function = "source"
result = true
[[sink]]
function = "sink"
arguments = [0]
)",
                                                       "rules.toml"));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<AnalyzedProgram> program,
                       AnalyzedProgram::Build({ir}, options));
  const ifds::Problem& problem = program->problem();
  const ifds::Solution solution = ifds::SolveReference(problem);
  EXPECT_THAT(program->Findings(solution), ElementsAre(Field(&Finding::sink, "sink")));
  EXPECT_TRUE(HoldsAt(problem, solution, "main:1", "main:%v"));
  EXPECT_TRUE(HoldsAt(problem, solution, "main:3", "main:%v")) << "read by the sink";
  EXPECT_FALSE(HoldsAt(problem, solution, "main:4", "main:%v")) << "after its last use";
  EXPECT_FALSE(HoldsAt(problem, solution, "main:5", "main:%v")) << "on the path not reading it";
  EXPECT_FALSE(HoldsAt(problem, solution, "main:exit", "main:%v"));
}

TEST(ProblemTest, ConstantGlobalsHaveNoFacts) {
  TempDir dir;
  const std::string source = dir.Write("c.c", R"(#include <stdio.h>
#include <stdlib.h>
static const char *const kNames[] = {"a", "b"};
static char greeting[16] = "hello";
int main(void) {
  printf("%s %s\n", kNames[0], greeting);
  system(getenv("CMD"));
  return 0;
}
)");
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<AnalyzedProgram> program,
                       AnalyzedProgram::Build({source}, Taint()));
  const std::vector<std::string>& facts = program->problem().fact_names;
  for (const std::string& fact : facts) {
    EXPECT_THAT(fact, ::testing::Not(HasSubstr(".str"))) << "string literals are constants";
    EXPECT_NE(fact, "@kNames");
  }
  EXPECT_NE(std::find(facts.begin(), facts.end(), "@greeting"), facts.end())
      << "a global that may be written has its fact";
  EXPECT_THAT(program->Findings(ifds::SolveReference(program->problem())),
              ElementsAre(Field(&Finding::sink, "system")));
}

TEST(ProblemTest, ALibraryWithoutMainSeedsEveryExportedFunction) {
  TempDir dir;
  const std::string source = dir.Write("lib.c", R"(#include <stdlib.h>
static int helper(int *p) { return *p; }
int api_one(void) { int x; return helper(&x); }
int api_two(void) { int y = 2; return helper(&y); }
)");
  AnalyzerOptions options;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<AnalyzedProgram> program,
                       AnalyzedProgram::Build({source}, options));
  EXPECT_THAT(program->problem().seeds, SizeIs(2));
  const std::vector<Finding> findings =
      program->Findings(ifds::SolveReference(program->problem()));
  ASSERT_THAT(findings, SizeIs(1));
  EXPECT_EQ(findings[0].variable, "x");
  EXPECT_EQ(findings[0].function, "helper");
}

// An allocating function nothing calls (a library's entry) keeps its allocation's object: what
// it reads of its own fresh memory is still found.
TEST(ProblemTest, AnAllocatingFunctionNothingCallsKeepsItsAllocationsObject) {
  TempDir dir;
  const std::string source = dir.Write("lib.c", R"(#include <stdlib.h>
int *make_pair(size_t n) {
  int *p = realloc(NULL, n * sizeof *p);
  if (p == NULL) exit(1);
  p[1] = p[0];
  return p;
}
)");
  AnalyzerOptions options;
  const std::vector<Finding> findings = Analyze({source}, options);
  ASSERT_THAT(findings, SizeIs(1));
  EXPECT_EQ(findings[0].variable, "heap@lib.c:3");
  EXPECT_EQ(findings[0].location.line, 5u);
  EXPECT_EQ(findings[0].function, "make_pair");
}

// --- reports -------------------------------------------------------------------------------

// A copy through pointers to several places pairs every source with every destination; past
// the limit it goes through a place of its own, with the same facts after it.
TEST(ProblemTest, ACopyOfAllToAllGoesThroughAPlaceOfItsOwnWithTheSameFindings) {
  TempDir dir;
  const std::string source = dir.Write("copy.c", R"(#include <stdlib.h>
#include <string.h>
int main(int argc, char **argv) {
  char a[16], b[16], x[16], y[16];
  strcpy(a, getenv("A"));
  strcpy(b, "fixed");
  char *from = argc > 1 ? a : b;
  char *to = argc > 2 ? x : y;
  strcpy(to, from);
  system(x);
  system(y);
  system(b);
  return 0;
}
)");
  const auto findings = [&](uint64_t limit, bool* routed) {
    AnalyzerOptions options = Taint();
    options.copy_pairs_limit = limit;
    absl::StatusOr<std::unique_ptr<AnalyzedProgram>> program =
        AnalyzedProgram::Build({source}, options);
    EXPECT_TRUE(program.ok()) << program.status();
    const ifds::Problem& problem = (*program)->problem();
    *routed = std::any_of(
        problem.node_names.begin(), problem.node_names.end(),
        [](std::string_view n) { return n.find("~copy") != std::string_view::npos; });
    std::vector<uint32_t> lines;
    for (const Finding& f : (*program)->Findings(ifds::SolveReference(problem))) {
      lines.push_back(f.location.line);
    }
    return lines;
  };
  bool routed = false;
  EXPECT_THAT(findings(1'000'000, &routed), ElementsAre(10, 11));
  EXPECT_FALSE(routed);
  EXPECT_THAT(findings(0, &routed), ElementsAre(10, 11));
  EXPECT_TRUE(routed);
}

// A write through a pointer to many objects goes to the pool: what is stored there is still
// read from each of those objects, but it is one fact where it was one per object, and it is
// made from the zero fact where a solution shows the value written (AnalyzedProgram::Refine).
TEST(ProblemTest, AWriteThroughAPointerToManyObjectsGoesToThePoolAndIsStillRead) {
  TempDir dir;
  const std::string source = dir.Write("pool.c", R"(int pick(int k) {
  int x, y, z;
  x = 1;
  y = 2;
  z = 3;
  int *p = k > 1 ? &x : k > 2 ? &y : &z;
  int u;
  if (k > 3) u = 4;
  *p = u;
  return y + k;
}
int main(int argc, char **argv) {
  return pick(argc);
}
)");
  struct Run {
    std::vector<uint32_t> lines;
    uint64_t path_edges = 0;
    uint32_t pooled = 0;
    uint32_t refinements = 0;
    std::vector<std::string> path;   // of the finding at line 9
    std::vector<std::string> again;  // its reads again
  };
  const auto run = [&](uint32_t pool_objects) {
    AnalyzerOptions options;
    options.pool_objects = pool_objects;
    absl::StatusOr<std::unique_ptr<AnalyzedProgram>> program =
        AnalyzedProgram::Build({source}, options);
    EXPECT_TRUE(program.ok()) << program.status();
    Run out;
    if (!program.ok()) return out;
    ifds::ReferenceStats stats;
    absl::StatusOr<ifds::Solution> solved =
        (*program)->Solve([&stats](const ifds::Problem& problem) {
          return ifds::SolveReference(problem, &stats);
        });
    EXPECT_TRUE(solved.ok()) << solved.status();
    if (!solved.ok()) return out;
    const ifds::Solution& solution = *solved;
    out.path_edges = stats.path_edges;
    out.pooled = (*program)->stats().pooled_objects;
    out.refinements = (*program)->stats().pool_refinements;
    // Solved again, the problem as refined gives the same solution: Refine leaves it.
    EXPECT_FALSE((*program)->Refine(ifds::SolveReference((*program)->problem())));
    for (const Finding& f : (*program)->Findings(solution)) {
      out.lines.push_back(f.location.line);
      for (const Finding::Reread& again : f.read_again) out.lines.push_back(again.location.line);
      if (f.location.line == 9) {
        for (const FlowStep& step : f.path) out.path.push_back(step.message);
        for (const Finding::Reread& again : f.read_again) out.again.push_back(again.variable);
      }
    }
    std::sort(out.lines.begin(), out.lines.end());
    return out;
  };
  const Run each = run(0);
  const Run pooled = run(3);
  const Run spread_less = run(4);
  // `u` at line 9, and `y` at line 10 where `*p = u` may have written it.
  EXPECT_THAT(each.lines, ElementsAre(9, 10));
  EXPECT_THAT(pooled.lines, ElementsAre(9, 10));
  EXPECT_EQ(each.pooled, 0u);
  EXPECT_EQ(pooled.pooled, 3u);
  EXPECT_EQ(spread_less.pooled, 0u);  // `p` points to three objects, not four
  // The first solution shows `u` stored into the pool; the pool is made there and the
  // problem solved again, which shows `y` reading it. That read's path goes back through the
  // write to `u`'s declaration: it is `u`'s value read again, one finding.
  EXPECT_EQ(pooled.refinements, 1u);
  EXPECT_EQ(each.refinements, 0u);
  ASSERT_FALSE(pooled.path.empty());
  EXPECT_EQ(pooled.path.front(), "'u' is declared without a value");
  EXPECT_THAT(pooled.again, ElementsAre("y"));
  EXPECT_EQ(spread_less.path_edges, each.path_edges);
}

// A value written into the pool, read back from it and written again: the second write holds
// only once the first is made, so the problem is solved three times, and a read after the
// second goes back through both writes to the declaration left without a value (each write's
// chain found in the solution that made it). Without those chains the read after the second
// write would be a finding of its own, starting at that write.
TEST(ProblemTest, APathThroughThePoolGoesBackThroughEachWriteToItsOrigin) {
  TempDir dir;
  const std::string source = dir.Write("pool2.c", R"(int x = 1, y = 2, z = 3, w = 4, v = 5, t = 6;
int main(int argc, char **argv) {
  int *p = argc > 1 ? &x : argc > 2 ? &y : &z;
  int *q = argc > 3 ? &w : argc > 4 ? &v : &t;
  int u;
  if (argc > 5) u = 7;
  *p = u;
  int m = *p;
  *q = m;
  return w;
}
)");
  AnalyzerOptions options;
  options.pool_objects = 3;
  absl::StatusOr<std::unique_ptr<AnalyzedProgram>> program =
      AnalyzedProgram::Build({source}, options);
  ASSERT_TRUE(program.ok()) << program.status();
  absl::StatusOr<ifds::Solution> solved = (*program)->Solve(
      [](const ifds::Problem& problem) { return ifds::SolveReference(problem); });
  ASSERT_TRUE(solved.ok()) << solved.status();
  EXPECT_EQ((*program)->stats().pooled_objects, 6u);
  EXPECT_EQ((*program)->stats().pool_refinements, 2u);
  const std::vector<Finding> findings = (*program)->Findings(*solved);
  ASSERT_EQ(findings.size(), 1u);
  const Finding& u = findings[0];
  EXPECT_EQ(u.location.line, 7u);
  ASSERT_FALSE(u.path.empty());
  EXPECT_EQ(u.path.front().message, "'u' is declared without a value");
  std::vector<uint32_t> again;
  for (const Finding::Reread& read : u.read_again) again.push_back(read.location.line);
  EXPECT_THAT(again, ElementsAre(8, 9, 10));  // `*p`, `m` and `w` (read from the pool)
}

// --- paths ---------------------------------------------------------------------------------

// docs/analyzer.md states the bounds of paths, copies and the reads listed again as the code
// has them.
TEST(PathTest, TheDocumentedBoundsAreTheCodes) {
  std::ifstream in(std::string(SLUICE_SOURCE_DIR) + "/docs/analyzer.md");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_FALSE(text.empty());
  // Lines wrap anywhere: compare with every run of blanks as one space.
  std::string doc;
  for (char c : text) {
    const bool blank = c == ' ' || c == '\n';
    if (!blank || (!doc.empty() && doc.back() != ' ')) doc += blank ? ' ' : c;
  }
  const auto thousands = [](uint64_t n) {
    std::string digits = std::to_string(n);
    for (int at = static_cast<int>(digits.size()) - 3; at > 0; at -= 3) digits.insert(at, ",");
    return digits;
  };
  for (const std::string& stated :
       {"more than " + std::to_string(AnalyzerOptions{}.copy_pairs_limit) + " pairs",
        "at most " + std::to_string(kPathSearchDepth) + " calls deep",
        "32 and " + std::to_string(ifds::Witnesses::kMaxDepth) + " calls deep",
        "At most " + thousands(kPathSearchBudget) + " pairs for one finding",
        std::to_string(kPathSearchesBudget / 1'000'000) + " million for all of them",
        "at most " + std::to_string(kPathLastSearchBudget / 1'000'000) +
            " million pairs, within what is left of the " +
            std::to_string(kPathSearchesBudget / 1'000'000) + " million",
        "2^" + std::to_string(std::bit_width(ifds::Witnesses::kMaxTabulatedEdges) - 1) +
            " path edges",
        "in text the first " + std::to_string(kTextRereads),
        "then the first " + std::to_string(kSarifRereads) + " reads again",
        "may point to " + std::to_string(AnalyzerOptions{}.pool_objects) + " objects or more"}) {
    EXPECT_NE(doc.find(stated), std::string::npos) << stated;
  }
  EXPECT_EQ(kPathSearchesBudget % 1'000'000, 0u);
  EXPECT_EQ(kPathLastSearchBudget % 1'000'000, 0u);
  EXPECT_TRUE(std::has_single_bit(ifds::Witnesses::kMaxTabulatedEdges));
}

// (line, message) of a step of a finding's path.
using Step = std::pair<uint32_t, std::string>;

// The uninit findings of one source.
std::vector<Finding> AnalyzeUninit(const std::string& source) {
  AnalyzerOptions options;
  options.analysis = Analysis::kUninit;
  return Analyze({source}, options);
}

std::vector<Step> Steps(const Finding& f) {
  std::vector<Step> out;
  for (const FlowStep& step : f.path) out.emplace_back(step.location.line, step.message);
  return out;
}

TEST(PathTest, ATaintedValuesPathRunsFromTheSourceThroughTheReturnAndTheStore) {
  TempDir dir;
  const std::string source = dir.Write("r.c", R"(#include <stdlib.h>
static char *source(void) { return getenv("CMD"); }
int main(void) {
  char *s = source();
  return system(s);
}
)");
  const std::vector<Finding> findings = Analyze({source}, Taint());
  ASSERT_THAT(findings, SizeIs(1));
  EXPECT_THAT(Steps(findings[0]),
              ElementsAre(Step{2, "untrusted data comes from 'getenv'"},
                          Step{4, "returned from 'source'"}, Step{4, "stored into 's'"},
                          Step{5, "tainted data reaches 'system' (argument 1: 's')"}));
  EXPECT_THAT(findings[0].read_again, IsEmpty()) << "taint findings are never folded";
}

TEST(PathTest, AnUninitializedValueIsOneFindingWithItsOtherReadsFoldedIn) {
  TempDir dir;
  const std::string source = dir.Write("u.c", R"(#include <stdio.h>
static int twice(int v) { return v * 2; }
static int get(int *p) { return *p; }
int main(void) {
  int n;
  int m = twice(n);
  int k = m;
  printf("%d\n", k);
  int u;
  return get(&u);
}
)");
  const std::vector<Finding> findings = AnalyzeUninit(source);
  ASSERT_THAT(findings, SizeIs(2));
  // u, read in get() through the pointer main passed it.
  EXPECT_EQ(findings[0].variable, "u");
  EXPECT_THAT(Steps(findings[0]),
              ElementsAre(Step{9, "'u' is declared without a value"},
                          Step{10, "passed into 'get'"},
                          Step{3, "use of possibly uninitialized 'u'"}));
  // n, read at twice(n); its copies' reads (v in twice, m, k) are that value again.
  EXPECT_EQ(findings[1].variable, "n");
  EXPECT_THAT(Steps(findings[1]), ElementsAre(Step{5, "'n' is declared without a value"},
                                              Step{6, "use of possibly uninitialized 'n'"}));
  std::vector<Step> again;
  for (const Finding::Reread& r : findings[1].read_again) {
    again.emplace_back(r.location.line, r.variable);
  }
  EXPECT_THAT(again, ElementsAre(Step{2, "v"}, Step{7, "m"}, Step{8, "k"}));
}

// Memory from an allocation wrapper that makes one struct starts at the wrapper's call, named
// after it; a wrapper that may also return something else (here its argument) is none, and
// its memory starts at its own malloc.
TEST(PathTest, MemoryFromAnAllocationWrapperStartsAtTheWrappersCall) {
  TempDir dir;
  const std::string source = dir.Write("w.c", R"(#include <stdio.h>
#include <stdlib.h>
struct s { int x; int y; };
static void *grab(size_t n) { void *p = malloc(n); if (!p) exit(1); return p; }
static void *reuse(void *old, size_t n) { return old ? old : malloc(n); }
int main(void) {
  struct s *a = grab(sizeof *a);
  struct s *b = reuse(NULL, sizeof *b);
  return a->y + b->x;
}
)");
  AnalyzerOptions options;
  options.analysis = Analysis::kUninit;
  const std::vector<Finding> findings = Analyze({source}, options);
  ASSERT_THAT(findings, SizeIs(2));
  EXPECT_EQ(findings[0].variable, "heap@w.c:7.y");
  EXPECT_THAT(Steps(findings[0]),
              ElementsAre(Step{7, "memory from 'grab' has no value"},
                          Step{9, "use of possibly uninitialized 'heap@w.c:7.y'"}));
  EXPECT_EQ(findings[1].variable, "heap@w.c:5");
  EXPECT_THAT(Steps(findings[1]).front(), Step(5, "memory from 'malloc' has no value"));
  absl::StatusOr<std::unique_ptr<AnalyzedProgram>> program =
      AnalyzedProgram::Build({source}, options);
  ASSERT_TRUE(program.ok()) << program.status();
  EXPECT_EQ((*program)->stats().allocation_wrappers, 1u) << "grab; reuse may return its argument";
}

// What a wrapper does with an allocation it does not return is its own business: a function
// is a wrapper whatever the order it and the wrappers it calls are defined in.
TEST(ProblemTest, AllocationWrappersAreFoundWhateverTheOrderOfTheirDefinitions) {
  TempDir dir;
  // (Functions with external linkage are in the module in the order they are defined.)
  const std::string inner = R"(void *V(size_t n) { return malloc(n); }
)";
  const std::string outer = R"(void *W(size_t n) {
  struct s *q = V(sizeof *q);
  if (q) { q->a = 1; free(q); }
  return malloc(n);
}
)";
  const std::string head = R"(#include <stdlib.h>
struct s { int a; };
void *V(size_t n);
)";
  const std::string tail = R"(int main(void) { struct s *p = W(sizeof *p); return p->a; }
)";
  AnalyzerOptions options;
  options.analysis = Analysis::kUninit;
  for (const std::string& body : {inner + outer, outer + inner}) {
    SCOPED_TRACE(body);
    const std::string source = dir.Write("o.c", head + body + tail);
    absl::StatusOr<std::unique_ptr<AnalyzedProgram>> program =
        AnalyzedProgram::Build({source}, options);
    ASSERT_TRUE(program.ok()) << program.status();
    EXPECT_EQ((*program)->stats().allocation_wrappers, 2u);
  }
}

std::vector<Finding> TwoFindings() {
  Finding a;
  a.rule = "tainted-sink";
  a.message = "tainted data reaches 'system' (argument 1: 'cmd')";
  a.function = "main";
  a.variable = "cmd";
  a.sink = "system";
  a.argument = 1;
  a.location = {.file = "src/my tool.c", .directory = "/home/dev/proj", .line = 12, .column = 3};
  Finding b = a;
  b.location = {.file = "/abs/other.c", .directory = "", .line = 40, .column = 0};
  return {a, b};
}

// A place the debug info gives no column (or no line) is written as a compiler writes it,
// without one, not as column (or line) 0.
TEST(ReportTest, TextIsOneCompilerStyleLinePerFinding) {
  EXPECT_EQ(FormatText(TwoFindings()),
            "src/my tool.c:12:3: warning: tainted data reaches 'system' (argument 1: 'cmd') "
            "[tainted-sink] in main\n"
            "/abs/other.c:40: warning: tainted data reaches 'system' (argument 1: 'cmd') "
            "[tainted-sink] in main\n");
  std::vector<Finding> lineless = TwoFindings();
  lineless[1].location.line = 0;
  EXPECT_EQ(FormatText({lineless[1]}),
            "/abs/other.c: warning: tainted data reaches 'system' (argument 1: 'cmd') "
            "[tainted-sink] in main\n");
}

TEST(ReportTest, SarifIsVersion210WithRulesLocationsAndFileUris) {
  const nlohmann::json log = nlohmann::json::parse(FormatSarif(Analysis::kTaint, TwoFindings()));
  EXPECT_EQ(log["version"], "2.1.0");
  ASSERT_EQ(log["runs"].size(), 1u);
  const nlohmann::json& run = log["runs"][0];
  EXPECT_EQ(run["tool"]["driver"]["rules"][0]["id"], "tainted-sink");
  ASSERT_EQ(run["results"].size(), 2u);
  const nlohmann::json& first = run["results"][0];
  EXPECT_EQ(first["ruleId"], "tainted-sink");
  EXPECT_EQ(first["level"], "warning");
  const nlohmann::json& where = first["locations"][0]["physicalLocation"];
  EXPECT_EQ(where["artifactLocation"]["uri"], "src/my%20tool.c");
  EXPECT_EQ(where["artifactLocation"]["uriBaseId"], "SRCROOT");
  EXPECT_EQ(run["originalUriBaseIds"]["SRCROOT"]["uri"], "file:///home/dev/proj/");
  EXPECT_EQ(where["region"]["startLine"], 12);
  EXPECT_EQ(where["region"]["startColumn"], 3);
  EXPECT_EQ(first["locations"][0]["logicalLocations"][0]["name"], "main");
  const nlohmann::json& second = run["results"][1]["locations"][0]["physicalLocation"];
  EXPECT_EQ(second["artifactLocation"]["uri"], "file:///abs/other.c");
  EXPECT_FALSE(second["region"].contains("startColumn"));
}

TEST(ReportTest, JsonListsEveryFindingWithItsFields) {
  const nlohmann::json out =
      nlohmann::json::parse(FormatJson(Analysis::kTaint, TwoFindings(), "{\"x\":1}"));
  EXPECT_EQ(out["analysis"], "taint");
  ASSERT_EQ(out["findings"].size(), 2u);
  EXPECT_EQ(out["findings"][0]["sink"], "system");
  EXPECT_EQ(out["findings"][0]["argument"], 1);
  EXPECT_EQ(out["findings"][0]["line"], 12);
  EXPECT_EQ(out["stats"]["x"], 1);
  EXPECT_EQ(out["total_findings"], 2);
  EXPECT_FALSE(out.contains("summary"));
}

// An uninitialized read of 'x' in main, at `at`.
Finding ReadOfX(SourceLocation at) {
  Finding f;
  f.rule = "uninitialized-read";
  f.message = "use of possibly uninitialized 'x'";
  f.function = "main";
  f.variable = "x";
  f.location = std::move(at);
  return f;
}

// JSON and SARIF are UTF-8; a source, a path or a name need not be. A line with UTF-8 past
// ASCII before the finding has its column counted in characters, as the log says it is (the
// debug info's counts bytes); a Latin-1 line has no snippet and its column in bytes (a
// character each); a Latin-1 file name is written with U+FFFD, where dumping it threw.
TEST(ReportTest, SourcesAndNamesThatAreNotUtf8AreWrittenAsUtf8) {
  const TempDir dir;
  // 'x' after "return " is byte 39 and character 38: the e-acute is two bytes.
  const Finding utf8 = ReadOfX(
      {.file = dir.Write("u8.c", "int main(){ /* caf\xc3\xa9 */ int x; return x; }\n"),
       .line = 1, .column = 39});
  Finding latin1 = utf8;
  latin1.location.file = dir.Write("l1.c", "int main(){ /* caf\xe9 */ int x; return x; }\n");
  latin1.location.column = 38;
  const nlohmann::json log =
      nlohmann::json::parse(FormatSarif(Analysis::kUninit, {utf8, latin1}));
  const nlohmann::json& first = log["runs"][0]["results"][0]["locations"][0]["physicalLocation"];
  EXPECT_EQ(first["region"]["startColumn"], 38);
  EXPECT_EQ(first["region"]["snippet"]["text"], "int main(){ /* caf\xc3\xa9 */ int x; return x; }");
  const nlohmann::json& second = log["runs"][0]["results"][1]["locations"][0]["physicalLocation"];
  EXPECT_EQ(second["region"]["startColumn"], 38);
  EXPECT_FALSE(second["region"].contains("snippet"));

  Finding named = utf8;
  named.location.file = "caf\xe9.c";
  named.function = "f\xff";
  const nlohmann::json out = nlohmann::json::parse(FormatJson(Analysis::kUninit, {named}, ""));
  EXPECT_EQ(out["findings"][0]["file"], "caf\xef\xbf\xbd.c");
  EXPECT_EQ(out["findings"][0]["function"], "f\xef\xbf\xbd");
  EXPECT_NO_THROW(nlohmann::json::parse(FormatSarif(Analysis::kUninit, {named})));
}

// A source with CRLF line ends (a file from Windows) gives snippets of its lines' text, without
// the carriage return.
TEST(ReportTest, ACrlfSourcesSnippetIsItsLineWithoutTheCarriageReturn) {
  const TempDir dir;
  const Finding f = ReadOfX(
      {.file = dir.Write("crlf.c", "int main(void) {\r\n  int x;\r\n  return x;\r\n}\r\n"),
       .line = 3, .column = 10});
  const nlohmann::json log = nlohmann::json::parse(FormatSarif(Analysis::kUninit, {f}));
  const nlohmann::json& region =
      log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["region"];
  EXPECT_EQ(region["snippet"]["text"], "  return x;");
  EXPECT_EQ(region["startColumn"], 10);
}

// A finding's path: notes after its line in text, "origin" and "path" in JSON, a code flow and
// related locations in SARIF; the reads folded into it in each.
TEST(ReportTest, APathIsNotesStepsAndACodeFlowAndFoldedReadsAreListed) {
  Finding f;
  f.rule = "uninitialized-read";
  f.message = "use of possibly uninitialized 'n'";
  f.function = "main";
  f.variable = "n";
  f.location = {.file = "/src/u.c", .line = 6, .column = 17};
  f.path = {{{.file = "/src/u.c", .line = 5}, "'n' is declared without a value"},
            {{.file = "/src/u.c", .line = 2, .column = 3}, "passed into 'f'"},
            {f.location, f.message}};
  f.read_again = {{{.file = "/src/u.c", .line = 7, .column = 11}, "m"}};
  EXPECT_EQ(FormatText({f}),
            "/src/u.c:6:17: warning: use of possibly uninitialized 'n' [uninitialized-read] in "
            "main\n"
            "/src/u.c:5: note: 'n' is declared without a value\n"
            "/src/u.c:2:3: note: passed into 'f'\n"
            "/src/u.c:7:11: note: the same value read again (as 'm')\n");

  const nlohmann::json json = nlohmann::json::parse(FormatJson(Analysis::kUninit, {f}, ""));
  const nlohmann::json& item = json["findings"][0];
  EXPECT_EQ(item["origin"]["line"], 5);
  EXPECT_EQ(item["origin"]["column"], 0) << "a place without a column";
  EXPECT_EQ(item["origin"]["message"], "'n' is declared without a value");
  ASSERT_EQ(item["path"].size(), 3u);
  EXPECT_EQ(item["path"][1]["column"], 3);
  EXPECT_EQ(item["path"][2]["line"], 6);
  EXPECT_EQ(item["read_again"][0]["variable"], "m");
  EXPECT_EQ(item["read_again"][0]["line"], 7);

  const nlohmann::json sarif = nlohmann::json::parse(FormatSarif(Analysis::kUninit, {f}));
  const nlohmann::json& result = sarif["runs"][0]["results"][0];
  const nlohmann::json& steps = result["codeFlows"][0]["threadFlows"][0]["locations"];
  ASSERT_EQ(steps.size(), 3u);
  EXPECT_EQ(steps[0]["location"]["physicalLocation"]["region"]["startLine"], 5);
  EXPECT_EQ(steps[1]["location"]["message"]["text"], "passed into 'f'");
  EXPECT_EQ(steps[2]["location"]["physicalLocation"]["region"]["startColumn"], 17);
  ASSERT_EQ(result["relatedLocations"].size(), 2u);
  EXPECT_EQ(result["relatedLocations"][0]["message"]["text"], "'n' is declared without a value");
  EXPECT_EQ(result["relatedLocations"][1]["id"], 1);
  EXPECT_EQ(result["relatedLocations"][1]["physicalLocation"]["region"]["startLine"], 7);
  EXPECT_EQ(result["properties"]["readAgain"], 1);

  // Many reads again: text lists 10 and says how many more, SARIF holds 100 and counts all.
  f.read_again.assign(150, f.read_again[0]);
  const std::string text = FormatText({f});
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1 + 2 + 10 + 1);
  EXPECT_THAT(text, ::testing::EndsWith(
                        "note: and 140 more reads of the same value (--format=json lists them "
                        "all)\n"));
  const nlohmann::json many = nlohmann::json::parse(FormatSarif(Analysis::kUninit, {f}));
  EXPECT_EQ(many["runs"][0]["results"][0]["relatedLocations"].size(), 1u + 100u);
  EXPECT_EQ(many["runs"][0]["results"][0]["properties"]["readAgain"], 150);
  EXPECT_EQ(nlohmann::json::parse(FormatJson(Analysis::kUninit, {f}, ""))["findings"][0]
                ["read_again"].size(),
            150u);
}

// A cut list says how many findings there are in all, in every format; the summary counts
// them all by function, most first.
TEST(ReportTest, ACutListSaysHowManyThereAreAndTheSummaryCountsThemByFunction) {
  std::vector<Finding> all = TwoFindings();
  all.push_back(all[0]);
  all.back().function = "helper";
  all.back().location.line = 3;
  const std::vector<FunctionFindings> summary = SummaryByFunction(all);
  ASSERT_THAT(summary, SizeIs(2));
  EXPECT_EQ(summary[0].function, "main");
  EXPECT_EQ(summary[0].findings, 2u);
  EXPECT_EQ(summary[0].file, "src/my tool.c");
  EXPECT_EQ(summary[1].function, "helper");
  EXPECT_EQ(summary[1].findings, 1u);
  const ReportExtras extras{.total = all.size(), .summary = summary};
  const std::vector<Finding> listed(all.begin(), all.begin() + 1);

  EXPECT_EQ(FormatText(listed, extras),
            "src/my tool.c:12:3: warning: tainted data reaches 'system' (argument 1: 'cmd') "
            "[tainted-sink] in main\n"
            "note: 2 more findings not listed (--max-findings)\n"
            "note: 2 findings in main (src/my tool.c)\n"
            "note: 1 finding in helper (src/my tool.c)\n");
  const nlohmann::json json =
      nlohmann::json::parse(FormatJson(Analysis::kTaint, listed, "", extras));
  EXPECT_EQ(json["findings"].size(), 1u);
  EXPECT_EQ(json["total_findings"], 3);
  ASSERT_EQ(json["summary"].size(), 2u);
  EXPECT_EQ(json["summary"][0]["function"], "main");
  EXPECT_EQ(json["summary"][0]["findings"], 2);
  const nlohmann::json sarif = nlohmann::json::parse(FormatSarif(Analysis::kTaint, listed, extras));
  const nlohmann::json& run = sarif["runs"][0];
  EXPECT_EQ(run["results"].size(), 1u);
  EXPECT_EQ(run["properties"]["totalFindings"], 3);
  EXPECT_EQ(run["properties"]["findingsByFunction"][1]["function"], "helper");
}

}  // namespace
}  // namespace sluice::analyzer
