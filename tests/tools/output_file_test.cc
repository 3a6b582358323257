#include "sluice/tools/output_file.h"

#include <signal.h>

#include <fstream>
#include <iterator>
#include <new>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/temp_dir.h"

namespace sluice {
namespace {

using ::testing::HasSubstr;

std::string Read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

void Put(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

using Sink = absl::FunctionRef<absl::Status(std::string_view)>;

// A file written over in place holds the new output and nothing of the old, however the writing
// ends: whole, failed by the writer, thrown out of (out of memory), or stopped by Ctrl-C, which
// the writing takes at its next block (the signal raised here, between two blocks).
TEST(OutputFileTest, AFileWrittenOverHoldsWhatWasWrittenAndNothingOfTheOld) {
  const testing::ScopedTempDir dir("sluice-output");
  const std::string path = dir.path() + "/out";
  const std::string old(10000, 'o');
  uint64_t bytes = 0;

  Put(path, old);
  ASSERT_TRUE(WriteToFile(path, [](Sink sink) { return sink("new"); }, &bytes).ok());
  EXPECT_EQ(Read(path), "new");
  EXPECT_EQ(bytes, 3u);

  Put(path, old);
  const absl::Status failed = WriteToFile(
      path,
      [](Sink sink) {
        if (absl::Status s = sink("first"); !s.ok()) return s;
        return absl::DataLossError("the writer's own error");
      },
      &bytes);
  EXPECT_EQ(failed.code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(Read(path), "first");

  Put(path, old);
  EXPECT_THROW(WriteToFile(
                   path,
                   [](Sink sink) -> absl::Status {
                     sink("first").IgnoreError();
                     throw std::bad_alloc();
                   },
                   &bytes)
                   .IgnoreError(),
               std::bad_alloc);
  EXPECT_EQ(Read(path), "first");

  // SIGINT's own handler is the writer's while it writes a regular file.
  Put(path, old);
  const absl::Status interrupted = WriteToFile(
      path,
      [](Sink sink) {
        if (absl::Status s = sink("first"); !s.ok()) return s;
        raise(SIGINT);
        return sink("second");
      },
      &bytes);
  EXPECT_EQ(interrupted.code(), absl::StatusCode::kCancelled) << interrupted;
  EXPECT_THAT(interrupted.message(), HasSubstr("interrupted while writing " + path));
  EXPECT_EQ(Read(path), "first");
  EXPECT_EQ(bytes, 5u);

  // The signal's earlier handling is back once the writing is done, and a later writing starts
  // afresh.
  struct sigaction now {};
  sigaction(SIGINT, nullptr, &now);
  EXPECT_EQ(now.sa_handler, SIG_DFL);
  ASSERT_TRUE(WriteToFile(path, [](Sink sink) { return sink("again"); }, &bytes).ok());
  EXPECT_EQ(Read(path), "again");
}

TEST(OutputFileTest, AFileThatCannotBeOpenedSaysWhy) {
  const testing::ScopedTempDir dir("sluice-output");
  uint64_t bytes = 0;
  const absl::Status s =
      WriteToFile(dir.path() + "/no/such/dir", [](Sink sink) { return sink("x"); }, &bytes);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(s.message(), HasSubstr("No such file or directory"));
}

}  // namespace
}  // namespace sluice
