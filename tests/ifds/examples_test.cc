// The hand-written examples, whose answers are known, on both solvers.
#include <fstream>
#include <sstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sluice/client/local_dispatch.h"
#include "sluice/ifds/binary_format.h"
#include "sluice/ifds/output.h"
#include "sluice/ifds/reference_solver.h"
#include "sluice/ifds/resident_solver.h"
#include "tests/testing/status_matchers.h"

namespace sluice::ifds {
namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

class ExamplesTest : public ::testing::TestWithParam<std::string> {};

TEST_P(ExamplesTest, BothSolversGiveTheKnownAnswer) {
  const std::string base = std::string(SLUICE_SOURCE_DIR) + "/examples/" + GetParam();
  ASSERT_OK_AND_ASSIGN(Problem problem, LoadProblem(base + ".ifds"));
  const std::string expected = ReadFile(base + ".expected.tsv");
  ASSERT_FALSE(expected.empty());

  EXPECT_EQ(FormatTsv(problem, SolveReference(problem), false), expected) << "reference";
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<LocalDispatch> dispatch, LocalDispatch::CreateCpu());
  ASSERT_OK_AND_ASSIGN(Solution resident, SolveResident(*dispatch, problem));
  EXPECT_EQ(FormatTsv(problem, resident, false), expected) << "resident";
}

INSTANTIATE_TEST_SUITE_P(Examples, ExamplesTest,
                         ::testing::Values("uninitialized", "taint", "mutual_recursion"));

TEST(ExamplesTest, TheSanitizerCleansAndThePaperFindsNoUninitializedUseAtPrint) {
  const std::string dir = std::string(SLUICE_SOURCE_DIR) + "/examples/";
  ASSERT_OK_AND_ASSIGN(Problem taint, LoadProblem(dir + "taint.ifds"));
  const std::string tsv = FormatTsv(taint, SolveReference(taint), false);
  EXPECT_THAT(tsv, ::testing::Not(::testing::HasSubstr("m2\ta\n")));
  EXPECT_THAT(tsv, ::testing::HasSubstr("m4\tb\n"));
  EXPECT_THAT(tsv, ::testing::HasSubstr("m6\tc\n"));
  // The point of the 1995 paper: only realizable paths count, so at print(a, g) nothing is
  // possibly uninitialized, although an unrealizable path would say g.
  ASSERT_OK_AND_ASSIGN(Problem paper, LoadProblem(dir + "uninitialized.ifds"));
  EXPECT_THAT(FormatTsv(paper, SolveReference(paper), false),
              ::testing::Not(::testing::HasSubstr("n9\t")));
}

}  // namespace
}  // namespace sluice::ifds
