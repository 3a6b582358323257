#include "sluice/base/command_line.h"

#include <cstdint>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sluice/base/byte_size.h"

ABSL_FLAG(int, test_count, 3, "how many of something");
ABSL_FLAG(bool, test_verbose, false, "say more");
ABSL_FLAG(std::string, test_name, "", "what it is called");
ABSL_FLAG(sluice::ByteSize, test_memory, sluice::ByteSize{uint64_t{64} << 30}, "bytes to use");

namespace sluice {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::Optional;

struct ParseRun {
  ParsedCommandLine parsed;
  std::string out;
  std::string err;
};

ParseRun Parse(std::vector<std::string> args, bool dashed_names = false) {
  args.insert(args.begin(), "/some/dir/prog");
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  ParseRun run;
  run.parsed = ParseCommandLine(
      static_cast<int>(argv.size()), argv.data(),
      {.usage = "prog [flags]: does a thing", .flag_sources = {"command_line_test"},
       .dashed_names = dashed_names});
  run.out = ::testing::internal::GetCapturedStdout();
  run.err = ::testing::internal::GetCapturedStderr();
  return run;
}

TEST(CommandLineTest, HelpListsTheProgramsFlagsWithDefaultsOnStdoutAndExitsZero) {
  for (const char* help : {"--help", "-h", "-help"}) {
    const ParseRun run = Parse({"--test_count=9", help, "--no_such_flag"});
    EXPECT_THAT(run.parsed.exit_code, Optional(0)) << help;
    EXPECT_THAT(run.out, HasSubstr("prog [flags]: does a thing\n\nFlags:\n"));
    EXPECT_THAT(run.out, HasSubstr("  --test_count=3\n      how many of something\n"));
    EXPECT_THAT(run.out, HasSubstr("  --test_name=\"\"\n"));
    // Byte counts are shown in the unit they were written in.
    EXPECT_THAT(run.out, HasSubstr("  --test_memory=64G\n"));
    // Only flags from the given sources: absl's own are left out.
    EXPECT_THAT(run.out, Not(HasSubstr("flagfile")));
    EXPECT_EQ(run.err, "");
  }
  // Sorted by name.
  const std::string help = FlagsHelp({.flag_sources = {"command_line_test"}});
  EXPECT_LT(help.find("--test_count"), help.find("--test_memory"));
  EXPECT_LT(help.find("--test_memory"), help.find("--test_name"));
}

TEST(CommandLineTest, BadFlagsAreUsageErrorsNamingTheFlag) {
  struct Case {
    std::vector<std::string> args;
    const char* message;
  };
  const Case cases[] = {
      {{"--no_such_flag=1"}, "prog: unknown flag --no_such_flag (see --help)\n"},
      {{"-no_such_flag"}, "prog: unknown flag --no_such_flag (see --help)\n"},
      {{"--test-count=1"}, "prog: unknown flag --test-count (see --help)\n"},
      {{"--test_count=many"}, "'many'"},
      {{"--test_count", "many"}, "'many'"},
      {{"--test_memory=12Q"}, "expected a byte count such as"},
      {{"--test_verbose=maybe"}, "'maybe'"},
      {{"--notest_count"}, "unknown flag --notest_count"},
      {{"pos", "--test_count"}, "prog: flag --test_count needs a value\n"},
  };
  for (const Case& c : cases) {
    const ParseRun run = Parse(c.args);
    EXPECT_THAT(run.parsed.exit_code, Optional(kExitUsageError)) << c.args[0];
    EXPECT_THAT(run.err, HasSubstr(c.message)) << c.args[0];
    EXPECT_EQ(run.out, "");
  }
}

TEST(CommandLineTest, GoodFlagsAreSetAndTheRestIsPositionalInOrder) {
  const ParseRun run = Parse({"first", "--test-count=7", "--test_verbose", "--test-name", "x-y",
                         "--test_memory=512M", "second", "--", "--test_count=8"},
                        /*dashed_names=*/true);
  EXPECT_EQ(run.parsed.exit_code, std::nullopt) << run.err;
  EXPECT_THAT(run.parsed.positional,
              ElementsAre("/some/dir/prog", "first", "second", "--test_count=8"));
  EXPECT_EQ(absl::GetFlag(FLAGS_test_count), 7);
  EXPECT_TRUE(absl::GetFlag(FLAGS_test_verbose));
  // The value after a flag is a value, not a flag name: its dashes stay.
  EXPECT_EQ(absl::GetFlag(FLAGS_test_name), "x-y");
  EXPECT_EQ(absl::GetFlag(FLAGS_test_memory).bytes, uint64_t{512} << 20);
}

TEST(CommandLineTest, AFlagsValueIsNeverTakenForAFlag) {
  // "-h" after a flag that takes a value is that value, not a request for help; a value's
  // dashes are its own.
  const ParseRun run = Parse({"--test-name", "-h", "--test_count", "-5"}, /*dashed_names=*/true);
  EXPECT_EQ(run.parsed.exit_code, std::nullopt) << run.err;
  EXPECT_EQ(run.out, "");
  EXPECT_EQ(absl::GetFlag(FLAGS_test_name), "-h");
  EXPECT_EQ(absl::GetFlag(FLAGS_test_count), -5);
  const ParseRun dashes = Parse({"--test-name", "-a-b"}, /*dashed_names=*/true);
  EXPECT_EQ(dashes.parsed.exit_code, std::nullopt) << dashes.err;
  EXPECT_EQ(absl::GetFlag(FLAGS_test_name), "-a-b");
}

TEST(CommandLineTest, UndefokNamesFlagsToIgnore) {
  const ParseRun run = Parse({"--undefok=not_here,gone", "--not_here=1", "--nogone", "x"});
  EXPECT_EQ(run.parsed.exit_code, std::nullopt) << run.err;
  EXPECT_THAT(run.parsed.positional, ElementsAre("/some/dir/prog", "x"));
  EXPECT_THAT(Parse({"--undefok=not_here", "--other=1"}).parsed.exit_code,
              Optional(kExitUsageError));
}

TEST(ByteSizeTest, ParsesUnitsAndPrintsTheLargestExactUnit) {
  std::string error;
  ByteSize size;
  ASSERT_TRUE(AbslParseFlag("3K", &size, &error));
  EXPECT_EQ(size.bytes, 3072u);
  ASSERT_TRUE(AbslParseFlag("2t", &size, &error));
  EXPECT_EQ(size.bytes, uint64_t{2} << 40);
  EXPECT_FALSE(AbslParseFlag("17179869184G", &size, &error));
  EXPECT_THAT(error, HasSubstr("overflows"));
  EXPECT_FALSE(AbslParseFlag("M", &size, &error));
  EXPECT_FALSE(AbslParseFlag("-1", &size, &error));
  EXPECT_EQ(AbslUnparseFlag(ByteSize{0}), "0");
  EXPECT_EQ(AbslUnparseFlag(ByteSize{1000}), "1000");
  EXPECT_EQ(AbslUnparseFlag(ByteSize{3 << 20}), "3M");
  EXPECT_EQ(AbslUnparseFlag(ByteSize{(uint64_t{1} << 40) + 1024}), "1073741825K");
  EXPECT_EQ(AbslUnparseFlag(ByteSize{uint64_t{1} << 40}), "1T");
  // What is printed parses back to the same count.
  for (uint64_t bytes : {uint64_t{0}, uint64_t{4096}, uint64_t{6} << 30, ~uint64_t{0}}) {
    ASSERT_TRUE(AbslParseFlag(AbslUnparseFlag(ByteSize{bytes}), &size, &error));
    EXPECT_EQ(size.bytes, bytes);
  }
}

}  // namespace
}  // namespace sluice
