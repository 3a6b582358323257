// Every annotated program in tests/analyzer/programs/ (README.md there): the findings equal the
// annotations exactly, with the reference solver, with the resident solver in-process on the
// CPU device, and with the resident solver through a real sluiced (gRPC builds); and with each
// function's facts numbered from a shared base (as large programs are), on the reference solver.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sluice/analyzer/analyzer.h"
#include "sluice/client/local_dispatch.h"
#include "sluice/ifds/reference_solver.h"
#include "sluice/ifds/resident_solver.h"
#include "tests/testing/status_matchers.h"
#if SLUICE_TEST_DAEMON
#include "sluice/client/remote_dispatch.h"
#include "tests/testing/daemon_process.h"
#endif

namespace sluice::analyzer {
namespace {

namespace fs = std::filesystem;

const fs::path kPrograms = fs::path(SLUICE_SOURCE_DIR) / "tests/analyzer/programs";

// (line, kind, name): what a finding is compared by.
using Key = std::tuple<uint32_t, std::string, std::string>;

struct Annotations {
  Analysis analysis = Analysis::kUninit;
  std::set<Key> expected;
};

std::vector<std::string> ProgramNames() {
  std::vector<std::string> names;
  for (const fs::directory_entry& entry : fs::directory_iterator(kPrograms)) {
    if (entry.path().extension() == ".c") names.push_back(entry.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

Annotations ReadAnnotations(const fs::path& path) {
  std::ifstream in(path);
  std::string line;
  Annotations out;
  const std::regex header("^// analysis: (uninit|taint)$");
  const std::regex expect("// expect: (.*)$");
  std::smatch m;
  uint32_t number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (number == 1) {
      EXPECT_TRUE(std::regex_match(line, m, header)) << path << ": line 1 names the analysis";
      out.analysis = m.size() > 1 && m[1] == "taint" ? Analysis::kTaint : Analysis::kUninit;
      continue;
    }
    if (!std::regex_search(line, m, expect)) continue;
    for (absl::string_view part : absl::StrSplit(m[1].str(), ',')) {
      std::vector<std::string> words =
          absl::StrSplit(absl::StripAsciiWhitespace(part), ' ', absl::SkipEmpty());
      EXPECT_EQ(words.size(), 2u) << path << ":" << number << ": expect KIND NAME";
      if (words.size() == 2) out.expected.emplace(number, words[0], words[1]);
    }
  }
  return out;
}

// Every read or sink the findings name: each finding's own, and the reads of the same value
// folded into it (read_again), each once.
std::set<Key> Keys(Analysis analysis, const std::vector<Finding>& findings) {
  std::set<Key> out;
  for (const Finding& f : findings) {
    out.emplace(f.location.line, AnalysisName(analysis),
                analysis == Analysis::kTaint ? f.sink : f.variable);
    for (const Finding::Reread& again : f.read_again) {
      EXPECT_TRUE(out.emplace(again.location.line, AnalysisName(analysis), again.variable).second)
          << "a read folded into two findings, or into its own line's";
    }
  }
  return out;
}

class ProgramsTest : public ::testing::TestWithParam<std::string> {
 protected:
#if SLUICE_TEST_DAEMON
  static void SetUpTestSuite() {
    absl::StatusOr<std::unique_ptr<testing::DaemonProcess>> daemon =
        testing::DaemonProcess::Start({"--backend=cpu", "--cpu_memory=1G"});
    ASSERT_TRUE(daemon.ok()) << daemon.status();
    daemon_ = std::move(*daemon).release();
  }
  static void TearDownTestSuite() {
    delete daemon_;
    daemon_ = nullptr;
  }
  static testing::DaemonProcess* daemon_;
#endif

  static AnalyzerOptions Options(Analysis analysis) {
    AnalyzerOptions options;
    options.analysis = analysis;
    if (analysis == Analysis::kTaint) {
      absl::StatusOr<TaintConfig> config = LoadTaintConfig((kPrograms / "taint.toml").string());
      EXPECT_TRUE(config.ok()) << config.status();
      if (config.ok()) options.taint = *std::move(config);
    }
    return options;
  }
};

#if SLUICE_TEST_DAEMON
testing::DaemonProcess* ProgramsTest::daemon_ = nullptr;
#endif

TEST_P(ProgramsTest, FindingsEqualTheAnnotationsWithEverySolver) {
  const fs::path path = kPrograms / (GetParam() + ".c");
  const Annotations annotations = ReadAnnotations(path);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<AnalyzedProgram> program,
                       AnalyzedProgram::Build({path.string()}, Options(annotations.analysis)));
  const ifds::Problem& problem = program->problem();

  const ifds::Solution reference = ifds::SolveReference(problem);
  const std::vector<Finding> findings = program->Findings(reference);
  EXPECT_EQ(Keys(annotations.analysis, findings), annotations.expected) << "reference solver";
  // Each finding has its path: from an origin of its analysis, to its own place.
  const std::regex origin(annotations.analysis == Analysis::kTaint
                              ? "untrusted data comes from '.*'"
                              : "'.*' is declared without a value|memory from '.*' has no value");
  for (const Finding& f : findings) {
    SCOPED_TRACE(absl::StrCat(f.location.line, ": ", f.message));
    ASSERT_GE(f.path.size(), 2u);
    EXPECT_TRUE(std::regex_match(f.path.front().message, origin)) << f.path.front().message;
    EXPECT_GT(f.path.front().location.line, 0u);
    EXPECT_EQ(f.path.back().location.line, f.location.line);
    EXPECT_EQ(f.path.back().location.column, f.location.column);
    EXPECT_EQ(f.path.back().message, f.message);
  }

  ASSERT_OK_AND_ASSIGN(std::unique_ptr<LocalDispatch> local, LocalDispatch::CreateCpu());
  ASSERT_OK_AND_ASSIGN(ifds::Solution in_process, ifds::SolveResident(*local, problem));
  EXPECT_EQ(in_process, reference) << "resident solver, in-process";
  EXPECT_EQ(Keys(annotations.analysis, program->Findings(in_process)), annotations.expected)
      << "resident solver, in-process";

#if SLUICE_TEST_DAEMON
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RemoteDispatch> remote,
                       RemoteDispatch::Connect({.target = daemon_->address()}));
  ASSERT_OK_AND_ASSIGN(ifds::Solution through_daemon, ifds::SolveResident(*remote, problem));
  EXPECT_EQ(through_daemon, reference) << "resident solver, through sluiced";
  EXPECT_EQ(Keys(annotations.analysis, program->Findings(through_daemon)), annotations.expected)
      << "resident solver, through sluiced";
#endif

  // Facts numbered per function from one base: the same findings.
  AnalyzerOptions slots = Options(annotations.analysis);
  slots.shared_slots = true;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<AnalyzedProgram> slotted,
                       AnalyzedProgram::Build({path.string()}, slots));
  EXPECT_FALSE(slotted->stats().readable_fact_names);
  EXPECT_LE(slotted->problem().fact_count(), problem.fact_count());
  const std::vector<Finding> slotted_findings =
      slotted->Findings(ifds::SolveReference(slotted->problem()));
  EXPECT_EQ(Keys(annotations.analysis, slotted_findings), annotations.expected)
      << "facts in shared slots";
  ASSERT_EQ(slotted_findings.size(), findings.size());
  // Every copy that pairs all with all through a place of its own: the same findings.
  AnalyzerOptions routed = Options(annotations.analysis);
  routed.copy_pairs_limit = 0;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<AnalyzedProgram> through,
                       AnalyzedProgram::Build({path.string()}, routed));
  EXPECT_EQ(Keys(annotations.analysis, through->Findings(ifds::SolveReference(through->problem()))),
            annotations.expected)
      << "copies through a place of their own";
  // Every write through a pointer to two objects or more goes to the pool: no line expected
  // is missed (the pool may add findings: a store after such a write no longer clears it).
  AnalyzerOptions pool = Options(annotations.analysis);
  pool.pool_objects = 2;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<AnalyzedProgram> pooled,
                       AnalyzedProgram::Build({path.string()}, pool));
  ASSERT_OK_AND_ASSIGN(const ifds::Solution pooled_solution,
                       pooled->Solve([](const ifds::Problem& problem) {
                         return absl::StatusOr<ifds::Solution>(ifds::SolveReference(problem));
                       }));
  std::set<uint32_t> pooled_lines;
  for (const Finding& f : pooled->Findings(pooled_solution)) {
    pooled_lines.insert(f.location.line);
    for (const Finding::Reread& again : f.read_again) pooled_lines.insert(again.location.line);
  }
  for (const Key& key : annotations.expected) {
    EXPECT_TRUE(pooled_lines.contains(std::get<0>(key)))
        << "writes to the pool: line " << std::get<0>(key) << " missed";
  }
  for (size_t k = 0; k < findings.size(); ++k) {
    EXPECT_EQ(slotted_findings[k].path.front().message, findings[k].path.front().message)
        << "facts in shared slots: the same origin";
  }
}

INSTANTIATE_TEST_SUITE_P(Programs, ProgramsTest, ::testing::ValuesIn(ProgramNames()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

TEST(ProgramsSuiteTest, HasAtLeastFortyAnnotatedProgramsOfEachKindOfCase) {
  const std::vector<std::string> names = ProgramNames();
  EXPECT_GE(names.size(), 40u);
  size_t uninit = 0;
  size_t taint = 0;
  size_t without_findings = 0;
  for (const std::string& name : names) {
    const Annotations a = ReadAnnotations(kPrograms / (name + ".c"));
    (a.analysis == Analysis::kTaint ? taint : uninit)++;
    if (a.expected.empty()) ++without_findings;
  }
  EXPECT_GE(uninit, 20u);
  EXPECT_GE(taint, 20u);
  // Every program expects something: "no finding" cases sit beside findings, so a program
  // that silently analyzes nothing cannot pass.
  EXPECT_EQ(without_findings, 0u);
  // docs/analyzer.md says how many there are.
  std::ifstream doc(fs::path(SLUICE_SOURCE_DIR) / "docs/analyzer.md");
  const std::string text((std::istreambuf_iterator<char>(doc)), {});
  std::smatch m;
  ASSERT_TRUE(std::regex_search(text, m, std::regex("holds (\\d+) annotated programs")));
  EXPECT_EQ(m[1].str(), std::to_string(names.size()));
}

}  // namespace
}  // namespace sluice::analyzer
