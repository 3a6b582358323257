// `sluice analyze` as a user runs it: C to findings in-process and through a real daemon, SARIF,
// --stats, --emit-problem (solved by `sluice solve` to the same answer), and bad input of every
// kind refused with exit 2 and a message that names it.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/testing/daemon_process.h"
#include "tests/testing/status_matchers.h"

namespace sluice::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

const std::string kPrograms = std::string(SLUICE_SOURCE_DIR) + "/tests/analyzer/programs/";

ProgramRun RunSluice(std::vector<std::string> args) {
  args.insert(args.begin(), BinaryPath("sluice"));
  return RunProgram(args, absl::Seconds(120));
}

class AnalyzeCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "sluice-analyze-cli-XXXXXX").string();
    dir_ = mkdtemp(pattern.data());
  }
  void TearDown() override {
    std::error_code ignored;
    fs::remove_all(dir_, ignored);
  }
  std::string Write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ + "/" + name) << text;
    return dir_ + "/" + name;
  }
  std::string dir_;
};

TEST_F(AnalyzeCliTest, ThroughADaemonTheFindingsAreTheInProcessOnes) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<DaemonProcess> daemon,
                       DaemonProcess::Start({"--backend=cpu", "--cpu_memory=1G"}));
  const std::vector<std::string> args = {"analyze", "--analysis=taint", "--config",
                                         kPrograms + "taint.toml",
                                         kPrograms + "taint_07_strcpy_strcat.c"};
  const ProgramRun local = RunSluice(args);
  ASSERT_EQ(local.exit_code, 0) << local.err;
  std::vector<std::string> remote_args = args;
  remote_args.push_back("--server=" + daemon->address());
  remote_args.push_back("--stats");
  const ProgramRun remote = RunSluice(remote_args);
  ASSERT_EQ(remote.exit_code, 0) << remote.err;
  EXPECT_EQ(remote.out, local.out);
  EXPECT_THAT(local.out, HasSubstr("taint_07_strcpy_strcat.c:"));
  EXPECT_THAT(local.out, HasSubstr("warning: tainted data reaches 'system'"));
  EXPECT_THAT(remote.err, HasSubstr("via sluiced at " + daemon->address()));
  EXPECT_THAT(remote.err, HasSubstr("problem: "));
  EXPECT_THAT(remote.err, HasSubstr(" nodes, "));
  EXPECT_THAT(remote.err, HasSubstr("findings: "));
}

TEST_F(AnalyzeCliTest, SarifAndJsonCarryTheSameFindings) {
  const std::string program = kPrograms + "uninit_18_struct_fields.c";
  const ProgramRun sarif =
      RunSluice({"analyze", "--analysis=uninit", "--format=sarif", program});
  ASSERT_EQ(sarif.exit_code, 0) << sarif.err;
  const ProgramRun json =
      RunSluice({"analyze", "--analysis=uninit", "--format=json", "--stats", program});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const nlohmann::json log = nlohmann::json::parse(sarif.out);
  const nlohmann::json out = nlohmann::json::parse(json.out);
  EXPECT_EQ(log["version"], "2.1.0");
  ASSERT_GT(out["findings"].size(), 0u);
  ASSERT_EQ(log["runs"][0]["results"].size(), out["findings"].size());
  for (size_t i = 0; i < out["findings"].size(); ++i) {
    EXPECT_EQ(log["runs"][0]["results"][i]["message"]["text"], out["findings"][i]["message"]);
    EXPECT_EQ(log["runs"][0]["results"][i]["locations"][0]["physicalLocation"]["region"]
                 ["startLine"],
              out["findings"][i]["line"]);
  }
  EXPECT_GT(out["stats"]["problem"]["nodes"].get<int>(), 0);
  EXPECT_GT(out["stats"]["solver"]["path_edges"].get<int>(), 0);
  EXPECT_EQ(out["stats"]["findings"], out["findings"].size());
  // Every phase: the front end, points-to and the problem's build, the solver's (compile,
  // upload, fixed point, results), the findings' and the output's.
  EXPECT_THAT(json.err, ::testing::ContainsRegex(
                            "front end: [0-9.]+ s, points-to: [0-9.]+ s, problem: [0-9.]+ s"));
  EXPECT_THAT(json.err,
              ::testing::ContainsRegex("findings: [0-9]+ \\(with their paths: [0-9.]+ s\\)"));
  for (const char* phase : {"front_end_seconds", "points_to_seconds", "build_seconds",
                            "findings_seconds"}) {
    EXPECT_GE(out["stats"][phase].get<double>(), 0.0) << phase;
  }
  EXPECT_THAT(json.err, ::testing::ContainsRegex(
                            "phases: compile [0-9.]+ s, upload [0-9.]+ s \\(.* at [0-9]+ MB/s\\), "
                            "fixed point [0-9.]+ s .*, results [0-9.]+ s"));
  EXPECT_THAT(json.err, ::testing::ContainsRegex("output: [0-9.]+ s \\([0-9.]+ [KM]?i?B at"));
  // Where the solution lies: the functions with the most (node, fact) pairs, most first, their
  // pairs summing to at most the solution's.
  const nlohmann::json& busiest = out["stats"]["busiest_functions"];
  ASSERT_GT(busiest.size(), 0u);
  EXPECT_LE(busiest.size(), 5u);
  uint64_t pairs = 0;
  for (size_t i = 0; i < busiest.size(); ++i) {
    EXPECT_GT(busiest[i]["pairs"].get<uint64_t>(), 0u);
    EXPECT_GT(busiest[i]["facts"].get<uint64_t>(), 0u);
    EXPECT_LE(busiest[i]["facts"].get<uint64_t>(), busiest[i]["pairs"].get<uint64_t>());
    if (i > 0) {
      EXPECT_LE(busiest[i]["pairs"], busiest[i - 1]["pairs"]);
    }
    pairs += busiest[i]["pairs"].get<uint64_t>();
  }
  EXPECT_LE(pairs, out["stats"]["solver"]["solution_pairs"].get<uint64_t>());
  EXPECT_THAT(json.err, ::testing::HasSubstr("most node/fact pairs: " +
                                             busiest[0]["name"].get<std::string>() + " "));
  for (const char* phase : {"compile", "upload", "windows", "growth", "results"}) {
    EXPECT_TRUE(out["stats"]["solver"]["phase_seconds"].contains(phase)) << phase;
  }
}

// A Latin-1 source (its finding's line not UTF-8) under a Latin-1 name: the SARIF and JSON
// logs are written, valid UTF-8, where the program once aborted on them.
TEST_F(AnalyzeCliTest, ALatin1SourceUnderALatin1NameGetsItsLogs) {
  const std::string program =
      Write("caf\xe9.c", "int main(void) { /* caf\xe9 */ int x; return x; }\n");
  for (const char* format : {"--format=sarif", "--format=json"}) {
    const ProgramRun run = RunSluice({"analyze", "--analysis=uninit", format, program});
    ASSERT_EQ(run.exit_code, 0) << format << ": " << run.err;
    const nlohmann::json log = nlohmann::json::parse(run.out);
    EXPECT_EQ(std::string(format) == "--format=sarif" ? log["runs"][0]["results"].size()
                                                       : log["findings"].size(),
              1u)
        << format;
  }
}

// C++ goes through the same Clang as C, as its C++ driver: the compiler CMake found is
// "clang-14", beside which there is no "clang-14++" (the path the analyzer once ran). A
// finding in a method names it qualified and demangled, as a C++ programmer writes it, not by
// its debug name ("Add", which any class's Add has) or its symbol (_ZNK7Counter3AddEi).
TEST_F(AnalyzeCliTest, ACxxSourceIsCompiledAndItsMethodsNamedInFull) {
  const std::string program = Write("counter.cc",
                                    "struct Counter {\n"
                                    "  int total;\n"
                                    "  int Add(int n) const { return total + n; }\n"
                                    "};\n"
                                    "int main() {\n"
                                    "  int start;\n"
                                    "  Counter c;\n"
                                    "  return c.Add(start);\n"
                                    "}\n");
  const ProgramRun run = RunSluice({"analyze", "--analysis=uninit", program});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(run.out, ::testing::HasSubstr(
                           "counter.cc:3:33: warning: use of possibly uninitialized 'c.total' "
                           "[uninitialized-read] in Counter::Add(int) const\n"));
  EXPECT_THAT(run.out, ::testing::HasSubstr(
                           "counter.cc:8:12: note: passed into 'Counter::Add(int) const'\n"));
  EXPECT_THAT(run.out, ::testing::HasSubstr(
                           "counter.cc:8:16: warning: use of possibly uninitialized 'start' "
                           "[uninitialized-read] in main\n"));
  // --stats names the busiest functions so too.
  const ProgramRun stats =
      RunSluice({"analyze", "--analysis=uninit", "--format=json", "--stats", program});
  ASSERT_EQ(stats.exit_code, 0) << stats.err;
  const nlohmann::json out = nlohmann::json::parse(stats.out);
  std::vector<std::string> busiest;
  for (const nlohmann::json& f : out["stats"]["busiest_functions"]) busiest.push_back(f["name"]);
  EXPECT_THAT(busiest, ::testing::Contains("Counter::Add(int) const"));
}

// A taint rule names a C++ function as its source does, qualified (every overload) or whole as
// the demangler writes it, not only by its symbol; its arguments count as the IR's, a
// method's object first. The sink's call with a sanitized argument is no finding.
TEST_F(AnalyzeCliTest, TaintRulesNameCxxFunctionsAsTheSourceDoes) {
  const std::string program = Write("shell.cc",
                                    "#include <cstdlib>\n"
                                    "struct Shell {\n"
                                    "  void Run(const char* cmd) { std::system(cmd); }\n"
                                    "};\n"
                                    "const char* Clean(const char* s) { return s; }\n"
                                    "int main() {\n"
                                    "  const char* home = std::getenv(\"HOME\");\n"
                                    "  Shell shell;\n"
                                    "  shell.Run(Clean(home));\n"
                                    "  shell.Run(home);\n"
                                    "  return 0;\n"
                                    "}\n");
  const std::string rules = Write("rules.toml",
                                  "[[sink]]\nfunction = \"Shell::Run\"\narguments = [1]\n"
                                  "[[sanitizer]]\nfunction = \"Clean(char const*)\"\n"
                                  "result = true\n");
  const ProgramRun run =
      RunSluice({"analyze", "--analysis=taint", "--config=" + rules, program});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  // One finding (the path as Clang's debug info names the file: absolute or relative to where
  // it ran, as the other tests here take it).
  EXPECT_THAT(run.out, HasSubstr("shell.cc:10:9: warning: tainted data reaches "
                                 "'Shell::Run(char const*)' (argument 2: 'home') [tainted-sink] "
                                 "in main\n"));
  EXPECT_THAT(run.out, HasSubstr("shell.cc:7:22: note: untrusted data comes from 'getenv'\n"));
  size_t warnings = 0;
  for (size_t at = run.out.find("warning:"); at != std::string::npos;
       at = run.out.find("warning:", at + 1)) {
    ++warnings;
  }
  EXPECT_EQ(warnings, 1u) << run.out;
}

// std::string's members are the C++ library's, compiled there: a string that a tainted
// argument is made into (constructed, appended to, returned by value, a stream written, read
// into through operator[]) is tainted, and one only compared with tainted data is not.
TEST_F(AnalyzeCliTest, TaintFlowsThroughTheStringsTheCxxLibraryMakes) {
  const std::string program =
      Write("strings.cc",
            "#include <cstdio>\n"
            "#include <cstdlib>\n"
            "#include <sstream>\n"
            "#include <string>\n"
            "int main() {\n"
            "  char line[256];\n"
            "  if (!std::fgets(line, sizeof line, stdin)) return 1;\n"
            "  std::string made(line);\n"
            "  std::system(made.c_str());\n"
            "  std::string appended(\"ls \");\n"
            "  appended.append(line);\n"
            "  std::system(appended.c_str());\n"
            "  std::string joined = std::string(\"ls \") + line;\n"
            "  std::system(joined.c_str());\n"
            "  std::string compared(\"ls\");\n"
            "  if (compared == line || compared.compare(line) == 0) return 2;\n"
            "  std::system(compared.c_str());\n"
            "  std::ostringstream written;\n"
            "  written << \"ls \" << line;\n"
            "  std::system(written.str().c_str());\n"
            "  std::string filled(256, '\\0');\n"
            "  if (!std::fgets(&filled[0], 256, stdin)) return 3;\n"
            "  std::system(filled.c_str());\n"
            "  return 0;\n"
            "}\n");
  const ProgramRun run = RunSluice({"analyze", "--analysis=taint", program});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  // c_str() points into its string, which names the argument (str()'s is a temporary).
  for (const auto& [line, argument] : std::vector<std::pair<int, std::string>>{
           {9, ": 'made'"}, {12, ": 'appended'"}, {14, ": 'joined'"}, {20, ""},
           {23, ": 'filled'"}}) {
    EXPECT_THAT(run.out, HasSubstr(absl::StrFormat(
                             "strings.cc:%d:3: warning: tainted data reaches 'system' (argument "
                             "1%s) [tainted-sink] in main\n",
                             line, argument)));
  }
  EXPECT_THAT(run.out, HasSubstr("strings.cc:8:15: note: stored into 'made'\n"));
  EXPECT_THAT(run.out, HasSubstr("strings.cc:11:12: note: stored into 'appended'\n"));
  EXPECT_THAT(run.out, HasSubstr("strings.cc:19:20: note: stored into 'written'\n"));
  EXPECT_THAT(run.out, Not(HasSubstr("strings.cc:17:"))) << "compared only";
}

// The built-in rules take what a C++ program reads from its input streams as untrusted: a line
// or a word into a string, a line into a buffer, a number.
TEST_F(AnalyzeCliTest, WhatTheCxxLibrarysInputStreamsReadIsTainted) {
  const std::string program = Write("streams.cc",
                                    "#include <cstdlib>\n"
                                    "#include <iostream>\n"
                                    "#include <string>\n"
                                    "int main() {\n"
                                    "  std::string line;\n"
                                    "  std::getline(std::cin, line);\n"
                                    "  std::system(line.c_str());\n"
                                    "  std::string word;\n"
                                    "  std::cin >> word;\n"
                                    "  std::system(word.c_str());\n"
                                    "  char buffer[64];\n"
                                    "  std::cin.getline(buffer, sizeof buffer);\n"
                                    "  std::system(buffer);\n"
                                    "  int size = 0;\n"
                                    "  std::cin >> size;\n"
                                    "  std::free(std::malloc(size));\n"
                                    "  return 0;\n"
                                    "}\n");
  const ProgramRun run = RunSluice({"analyze", "--analysis=taint", program});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(run.out, HasSubstr("streams.cc:7:3: warning: tainted data reaches 'system'"));
  EXPECT_THAT(run.out, HasSubstr("streams.cc:6:3: note: untrusted data comes from "
                                 "'std::basic_istream<char, std::char_traits<char> >& "
                                 "std::getline<char, std::char_traits<char>, "
                                 "std::allocator<char> >("));
  EXPECT_THAT(run.out, HasSubstr("streams.cc:10:3: warning: tainted data reaches 'system'"));
  EXPECT_THAT(run.out, HasSubstr("streams.cc:13:3: warning: tainted data reaches 'system' "
                                 "(argument 1: 'buffer')"));
  EXPECT_THAT(run.out, HasSubstr("streams.cc:12:12: note: untrusted data comes from "
                                 "'std::istream::getline(char*, long)'\n"));
  EXPECT_THAT(run.out, HasSubstr("streams.cc:16:13: warning: tainted data reaches 'malloc' "
                                 "(argument 1: 'size')"));
  EXPECT_THAT(run.out, HasSubstr("streams.cc:15:12: note: untrusted data comes from "
                                 "'std::istream::operator>>(int&)'\n"));
}

// C++ fills an initializer list's array an element at a time (a constructor of each, or a copy
// of what make_pair returns), and copies a class whose tail a derived class may reuse without
// that padding: none of it is a value not given, so reading them is no finding.
TEST_F(AnalyzeCliTest, ArraysCxxFillsInTurnAndTheirPaddingAreInitialized) {
  const std::string program =
      Write("fill.cc",
            "#include <string>\n"
            "#include <utility>\n"
            "class Span {\n"
            " public:\n"
            "  Span(long hi, unsigned lo) : hi_(hi), lo_(lo) {}\n"
            "  long hi() const { return hi_; }\n"
            " private:\n"
            "  long hi_;\n"
            "  unsigned lo_;\n"
            "};\n"
            "long Latest(Span first, Span now) {\n"
            "  Span spans[2] = {first, now};\n"
            "  return spans[1].hi();\n"
            "}\n"
            "int Count(const std::string& a, const std::string& b) {\n"
            "  int n = 0;\n"
            "  for (auto [name, value] : {std::pair{\"a\", &a}, std::pair{\"b\", &b}}) {\n"
            "    if (!value->empty()) n += name[0];\n"
            "  }\n"
            "  return n;\n"
            "}\n"
            "int Sum(int a, int b) {\n"
            "  int n = 0;\n"
            "  for (const auto& entry : {std::make_pair(1, a), std::make_pair(2, b)}) {\n"
            "    n += entry.second;\n"
            "  }\n"
            "  return n;\n"
            "}\n"
            "int main(int argc, char** argv) {\n"
            "  std::string a = argv[0], b;\n"
            "  return static_cast<int>(Latest(Span(argc, 1), Span(argc, 2))) + Count(a, b) +\n"
            "         Sum(argc, 1);\n"
            "}\n");
  const ProgramRun run =
      RunSluice({"analyze", "--analysis=uninit", "--cflags=-std=c++17", program});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(run.out, Not(HasSubstr("warning:"))) << run.out;
  // The same reads with an array written in part: a finding.
  const std::string part = Write("part.cc",
                                 "int Half(int a) {\n"
                                 "  int n[2];\n"
                                 "  n[0] = a;\n"
                                 "  return n[0];\n"
                                 "}\n"
                                 "int main(int argc, char**) { return Half(argc); }\n");
  const ProgramRun half = RunSluice({"analyze", "--analysis=uninit", part});
  ASSERT_EQ(half.exit_code, 0) << half.err;
  EXPECT_THAT(half.out, HasSubstr("part.cc:4:10: warning: use of possibly uninitialized 'n'"));
}

// Findings in system headers are left out, as compilers leave out their warnings there, and
// counted; --system-headers lists them.
TEST_F(AnalyzeCliTest, FindingsInSystemHeadersAreCountedNotListedUnlessAskedFor) {
  std::filesystem::create_directories(dir_ + "/vendor");
  Write("vendor/vendor.h", "static inline int vendors(void) {\n  int unset;\n  return unset;\n}\n");
  const std::string program = Write("tool.c",
                                    "#include <vendor.h>\n"
                                    "int main(void) {\n"
                                    "  int mine;\n"
                                    "  return vendors() + mine;\n"
                                    "}\n");
  const std::string cflags = "--cflags=-isystem " + dir_ + "/vendor";
  const ProgramRun run = RunSluice({"analyze", "--analysis=uninit", cflags, program});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(run.out, HasSubstr("tool.c:4:22: warning: use of possibly uninitialized 'mine'"));
  EXPECT_THAT(run.out, Not(HasSubstr("vendor.h")));
  EXPECT_THAT(run.out,
              HasSubstr("note: 1 finding in system headers not listed (--system-headers)\n"));
  const ProgramRun json =
      RunSluice({"analyze", "--analysis=uninit", "--format=json", cflags, program});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const nlohmann::json parsed = nlohmann::json::parse(json.out);
  EXPECT_EQ(parsed["findings"].size(), 1u);
  EXPECT_EQ(parsed["system_header_findings"], 1);
  const ProgramRun sarif =
      RunSluice({"analyze", "--analysis=uninit", "--format=sarif", cflags, program});
  ASSERT_EQ(sarif.exit_code, 0) << sarif.err;
  const nlohmann::json log = nlohmann::json::parse(sarif.out);
  EXPECT_EQ(log["runs"][0]["results"].size(), 1u);
  EXPECT_EQ(log["runs"][0]["properties"]["systemHeaderFindings"], 1);
  const ProgramRun all =
      RunSluice({"analyze", "--analysis=uninit", "--system-headers", cflags, program});
  ASSERT_EQ(all.exit_code, 0) << all.err;
  EXPECT_THAT(all.out, HasSubstr("vendor.h:3:10: warning: use of possibly uninitialized 'unset' "
                                 "[uninitialized-read] in vendors\n"));
  EXPECT_THAT(all.out, HasSubstr("tool.c:4:22: warning:"));
  EXPECT_THAT(all.out, Not(HasSubstr("system headers not listed")));
}

TEST_F(AnalyzeCliTest, TheEmittedProblemSolvesToTheSameFactsWithEitherSolver) {
  const std::string problem = dir_ + "/problem.ifds";
  const ProgramRun run = RunSluice({"analyze", "--analysis=taint", "--emit-problem=" + problem,
                                    kPrograms + "taint_16_context_identity.c"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const ProgramRun resident = RunSluice({"solve", problem});
  const ProgramRun reference = RunSluice({"solve", "--solver=reference", problem});
  ASSERT_EQ(resident.exit_code, 0) << resident.err;
  ASSERT_EQ(reference.exit_code, 0) << reference.err;
  EXPECT_EQ(resident.out, reference.out);
  EXPECT_THAT(resident.out, HasSubstr("main:"));
  const std::string binary = dir_ + "/problem.bin";
  ASSERT_EQ(RunSluice({"analyze", "--analysis=taint", "--emit-problem=" + binary,
                       kPrograms + "taint_16_context_identity.c"})
                .exit_code,
            0);
  EXPECT_EQ(RunSluice({"solve", "--solver=reference", binary}).out, reference.out);
}

TEST_F(AnalyzeCliTest, TheReadmeExampleHasItsTwoFindingsWithEitherSolver) {
  const std::string example = std::string(SLUICE_SOURCE_DIR) + "/examples/c/viewer.c";
  const ProgramRun taint = RunSluice({"analyze", "--analysis=taint", example});
  ASSERT_EQ(taint.exit_code, 0) << taint.err;
  // The finding and its path, the file as the reader's directory makes it (as README shows).
  EXPECT_EQ(taint.out,
            "examples/c/viewer.c:10:10: warning: tainted data reaches 'system' (argument 1: "
            "'command') [tainted-sink] in view\n"
            "examples/c/viewer.c:14:24: note: untrusted data comes from 'getenv'\n"
            "examples/c/viewer.c:19:14: note: passed into 'view'\n"
            "examples/c/viewer.c:9:3: note: stored into 'command'\n");
  const ProgramRun uninit = RunSluice({"analyze", "--analysis=uninit", example});
  ASSERT_EQ(uninit.exit_code, 0) << uninit.err;
  EXPECT_EQ(uninit.out,
            "examples/c/viewer.c:20:30: warning: use of possibly uninitialized 'status' "
            "[uninitialized-read] in main\n"
            "examples/c/viewer.c:17:7: note: 'status' is declared without a value\n");
  // --stats shows each solver's answer by its digest: the same answer, the same digest.
  nlohmann::json runs[2];
  const char* solvers[2] = {"--solver=resident", "--solver=reference"};
  for (int i = 0; i < 2; ++i) {
    const ProgramRun run =
        RunSluice({"analyze", "--analysis=taint", "--format=json", "--stats", solvers[i], example});
    ASSERT_EQ(run.exit_code, 0) << run.err;
    runs[i] = nlohmann::json::parse(run.out);
    EXPECT_THAT(run.err, HasSubstr("solution: "));
  }
  EXPECT_EQ(runs[0]["findings"], runs[1]["findings"]);
  EXPECT_EQ(runs[0]["stats"]["solver"]["solver"], "resident");
  EXPECT_EQ(runs[1]["stats"]["solver"]["solver"], "reference");
  EXPECT_EQ(runs[0]["stats"]["solver"]["solution_digest"].get<std::string>().size(), 16u);
  EXPECT_EQ(runs[0]["stats"]["solver"]["solution_digest"],
            runs[1]["stats"]["solver"]["solution_digest"]);
  EXPECT_GT(runs[0]["stats"]["solver"]["solution_pairs"].get<int>(), 0);
}

TEST_F(AnalyzeCliTest, BadInputIsRefusedWithExit2NamingIt) {
  const std::string program = kPrograms + "uninit_01_straight_line.c";
  ProgramRun run = RunSluice({"analyze", program});
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_THAT(run.err, HasSubstr("--analysis is uninit or taint"));
  run = RunSluice({"analyze", "--analysis=uninit", "--format=xml", program});
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_THAT(run.err, HasSubstr("--format is text, sarif or json"));
  run = RunSluice({"analyze", "--analysis=uninit"});
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_THAT(run.err, HasSubstr("give the files to analyze"));
  run = RunSluice({"analyze", "--analysis=uninit", dir_ + "/nothing.c"});
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_THAT(run.err, HasSubstr("nothing.c: no such source file"));
  run = RunSluice({"analyze", "--analysis=uninit", Write("broken.c", "int f( {\n")});
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_THAT(run.err, HasSubstr("broken.c: clang failed"));
  EXPECT_THAT(run.err, HasSubstr("error:"));
  run = RunSluice({"analyze", "--analysis=taint", "--config",
                   Write("rules.toml", "[[sink]]\nfunction = \"f\"\n"), program});
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_THAT(run.err, HasSubstr("rules.toml:1:1: the sink rule for f names neither"));
  run = RunSluice({"analyze", "--analysis=uninit", Write("bad.ll", "define i32 @f( {\n")});
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_THAT(run.err, HasSubstr("bad.ll: not LLVM IR"));
  EXPECT_THAT(run.out, Not(HasSubstr("warning")));
  // An output that is an input would write over the source (the run succeeded before).
  const std::string source = Write("own.c", "int f(void) { return 0; }\n");
  for (const std::string& output : {"--out=" + source, "--emit-problem=" + source}) {
    run = RunSluice({"analyze", "--analysis=uninit", output, source});
    EXPECT_EQ(run.exit_code, 2) << output;
    EXPECT_THAT(run.err, HasSubstr("would write over the input")) << output;
  }
  std::ifstream kept(source);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(kept), std::istreambuf_iterator<char>()),
            "int f(void) { return 0; }\n");
  // A source that is a directory says so.
  std::filesystem::create_directory(dir_ + "/folder.c");
  run = RunSluice({"analyze", "--analysis=uninit", dir_ + "/folder.c"});
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_THAT(run.err, HasSubstr("folder.c: a directory, not a source file"));
  // And a rules file that is a directory, or a device without end, says so.
  run = RunSluice({"analyze", "--analysis=taint", "--config=" + dir_, program});
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_THAT(run.err, HasSubstr("it is a directory"));
  run = RunSluice({"analyze", "--analysis=taint", "--config=/dev/zero", program});
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_THAT(run.err, HasSubstr("is larger than 1048576 bytes"));
}

// `sluice analyze` runs as sluice-analyze beside `sluice`, so only that program loads LLVM;
// without it, `analyze` says what it could not run and the other commands work.
TEST_F(AnalyzeCliTest, AnalyzeRunsInAProgramOfItsOwnAndNoOtherCommandLoadsLlvm) {
  const ProgramRun sluice = RunProgram({"/usr/bin/ldd", BinaryPath("sluice")}, absl::Seconds(30));
  ASSERT_EQ(sluice.exit_code, 0) << sluice.err;
  EXPECT_THAT(sluice.out, Not(HasSubstr("libLLVM")));
  const ProgramRun analyzer =
      RunProgram({"/usr/bin/ldd", BinaryPath("sluice-analyze")}, absl::Seconds(30));
  ASSERT_EQ(analyzer.exit_code, 0) << analyzer.err;
  EXPECT_THAT(analyzer.out, HasSubstr("libLLVM"));

  const std::string alone = dir_ + "/sluice";
  fs::copy_file(BinaryPath("sluice"), alone);
  ProgramRun run = RunProgram({alone, "analyze", "--analysis=uninit",
                               kPrograms + "uninit_01_straight_line.c"}, absl::Seconds(30));
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_THAT(run.err, HasSubstr("sluice analyze: cannot run " + dir_ + "/sluice-analyze"));
  run = RunProgram({alone, "gen", "--procedures=2"}, absl::Seconds(30));
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(run.out, HasSubstr("procedure"));
}

// --max-findings cuts the list and says how many there are; --summary counts them all by
// function, most first.
TEST_F(AnalyzeCliTest, MaxFindingsCutsTheListAndTheSummaryCountsEveryFindingByFunction) {
  const std::string program = Write("many.c",
                                    "#include <stdio.h>\n"
                                    "int f(void) { int a, b; return a + b; }\n"
                                    "int g(void) { int c; return c; }\n"
                                    "int main(void) { printf(\"%d %d\\n\", f(), g()); }\n");
  ProgramRun run = RunSluice({"analyze", "--analysis=uninit", program});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const auto warnings = [](const std::string& out) {
    size_t count = 0;
    for (size_t at = out.find(": warning: "); at != std::string::npos;
         at = out.find(": warning: ", at + 1)) {
      ++count;
    }
    return count;
  };
  EXPECT_EQ(warnings(run.out), 3u) << run.out;
  run = RunSluice({"analyze", "--analysis=uninit", "--max-findings=1", "--summary", program});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(warnings(run.out), 1u) << run.out;
  EXPECT_THAT(run.out, HasSubstr("note: 'a' is declared without a value\n"
                                 "note: 2 more findings not listed (--max-findings)\n"
                                 "note: 2 findings in f ("));
  EXPECT_THAT(run.out, HasSubstr("note: 1 finding in g ("));
  run = RunSluice({"analyze", "--analysis=uninit", "--max-findings=2", "--summary",
                   "--format=json", program});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const nlohmann::json json = nlohmann::json::parse(run.out);
  EXPECT_EQ(json["findings"].size(), 2u);
  EXPECT_EQ(json["total_findings"], 3);
  EXPECT_EQ(json["summary"][0]["function"], "f");
  EXPECT_EQ(json["summary"][0]["findings"], 2);
}

// --stats counts the allocation wrappers (docs/analyzer.md), in text and in JSON: uninit_40's
// xmalloc, items and zeroed, not keep.
TEST_F(AnalyzeCliTest, StatsCountTheAllocationWrappers) {
  const std::string program = kPrograms + "uninit_40_allocation_wrappers.c";
  const ProgramRun json =
      RunSluice({"analyze", "--analysis=uninit", "--format=json", "--stats", program});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  EXPECT_EQ(nlohmann::json::parse(json.out)["stats"]["program"]["allocation_wrappers"], 3);
  EXPECT_THAT(json.err, HasSubstr(" memory locations, 3 allocation wrappers\n"));
}

TEST_F(AnalyzeCliTest, PrintRulesPrintsTheBuiltInRulesAsAFileItReads) {
  const ProgramRun rules = RunSluice({"analyze", "--print-rules"});
  ASSERT_EQ(rules.exit_code, 0) << rules.err;
  EXPECT_THAT(rules.out, HasSubstr("function = \"getenv\""));
  // A file of the built-in rules with defaults = false analyzes as the defaults do.
  const std::string file = Write("rules.toml", "defaults = false\n" + rules.out);
  const std::string program = kPrograms + "taint_01_getenv_system.c";
  const ProgramRun with_file =
      RunSluice({"analyze", "--analysis=taint", "--config", file, program});
  const ProgramRun built_in = RunSluice({"analyze", "--analysis=taint", program});
  ASSERT_EQ(with_file.exit_code, 0) << with_file.err;
  EXPECT_EQ(with_file.out, built_in.out);
  EXPECT_THAT(built_in.out, HasSubstr("'system'"));
  // The example docs/analyzer.md points to is that output, to the byte.
  std::ifstream shipped(std::string(SLUICE_SOURCE_DIR) + "/examples/taint-default.toml");
  const std::string example((std::istreambuf_iterator<char>(shipped)),
                            std::istreambuf_iterator<char>());
  EXPECT_EQ(example, rules.out)
      << "examples/taint-default.toml differs from `sluice analyze --print-rules`; refresh it "
         "with: build/bin/sluice analyze --print-rules > examples/taint-default.toml";
}

}  // namespace
}  // namespace sluice::testing
