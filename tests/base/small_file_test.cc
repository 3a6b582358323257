#include "sluice/base/small_file.h"

#include <cstdio>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace sluice {
namespace {

using ::sluice::testing::StatusIs;
using ::testing::HasSubstr;
using Code = absl::StatusCode;

void Write(const std::string& path, const std::string& bytes) {
  std::FILE* f = std::fopen(path.c_str(), "w");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(std::fwrite(bytes.data(), 1, bytes.size(), f), bytes.size());
  ASSERT_EQ(std::fclose(f), 0);
}

// A file read whole up to its bound; a directory, a missing file, a file past the bound and a
// device that never ends are errors that say so (they threw, or read without end, before).
TEST(SmallFileTest, ReadsAFileUpToItsBoundAndRefusesWhatIsNotOne) {
  const testing::ScopedTempDir dir("sluice-small-file");
  const std::string path = dir.File("rules.toml");
  Write(path, std::string(1000, 'r'));
  ASSERT_OK_AND_ASSIGN(const std::string text, ReadSmallFile(path, 1000, "the rules file"));
  EXPECT_EQ(text, std::string(1000, 'r'));
  EXPECT_THAT(ReadSmallFile(path, 999, "the rules file"),
              StatusIs(Code::kInvalidArgument, HasSubstr("is larger than 999 bytes")));
  EXPECT_THAT(ReadSmallFile(dir.path(), 1000, "the rules file"),
              StatusIs(Code::kInvalidArgument, HasSubstr("it is a directory")));
  EXPECT_THAT(ReadSmallFile(dir.File("none"), 1000, "the rules file"),
              StatusIs(Code::kNotFound, HasSubstr("cannot read the rules file")));
  EXPECT_THAT(ReadSmallFile("/dev/zero", 1 << 20, "the rules file"),
              StatusIs(Code::kInvalidArgument, HasSubstr("is larger than 1048576 bytes")));
  Write(path, "");
  ASSERT_OK_AND_ASSIGN(const std::string empty, ReadSmallFile(path, 1000, "the rules file"));
  EXPECT_TRUE(empty.empty());
  EXPECT_THAT(ReadPemFile(path, "the CA certificates"),
              StatusIs(Code::kInvalidArgument, HasSubstr("is empty")));
  EXPECT_THAT(ReadPemFile(dir.path(), "the CA certificates"),
              StatusIs(Code::kInvalidArgument, HasSubstr("it is a directory")));
  EXPECT_THAT(ReadPemFile("/dev/zero", "the CA certificates"),
              StatusIs(Code::kInvalidArgument, HasSubstr("is larger than")));
}

}  // namespace
}  // namespace sluice
