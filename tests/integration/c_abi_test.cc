// The C ABI (client/c/sluice.h), from C: tests/client/c_abi_check.c, compiled as C11 and linked
// with libsluice_c.so only, checks every contract in-process and against a real sluiced; and
// the library exports its C functions and nothing else.
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/daemon_process.h"
#include "tests/testing/status_matchers.h"

namespace sluice::testing {
namespace {

TEST(CAbiTest, EveryCheckPassesInProcess) {
  const ProgramRun run = RunProgram({BinaryPath("sluice_c_abi_check"), "local"});
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(run.out, ::testing::HasSubstr("every check passed"));
}

TEST(CAbiTest, EveryCheckPassesAgainstADaemon) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<DaemonProcess> daemon,
                       DaemonProcess::Start({"--backend=cpu", "--cpu_memory=1G"}));
  const ProgramRun run = RunProgram({BinaryPath("sluice_c_abi_check"), daemon->address()});
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(run.out, ::testing::HasSubstr("every check passed"));
}

TEST(CAbiTest, TheLibraryExportsOnlyItsCFunctions) {
  const ProgramRun nm = RunProgram({"/usr/bin/nm", "-D", "--defined-only", SLUICE_C_LIBRARY});
  ASSERT_EQ(nm.exit_code, 0) << nm.err;
  int functions = 0;
  for (absl::string_view line : absl::StrSplit(nm.out, '\n', absl::SkipEmpty())) {
    // "ADDRESS TYPE NAME": the version node (SLUICE_C_1) aside, every name is sluice_*.
    const std::vector<absl::string_view> fields = absl::StrSplit(line, ' ', absl::SkipEmpty());
    ASSERT_EQ(fields.size(), 3u) << line;
    if (fields[2] == "SLUICE_C_1") continue;
    EXPECT_TRUE(absl::StartsWith(fields[2], "sluice_")) << "exported: " << line;
    EXPECT_EQ(fields[1], "T") << "not a function: " << line;
    ++functions;
  }
  EXPECT_GE(functions, 20) << nm.out;
}

}  // namespace
}  // namespace sluice::testing
