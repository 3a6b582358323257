#include "sluice/base/mapped_file.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "sluice/base/heap.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace sluice {
namespace {

using ::sluice::testing::StatusIs;

const size_t kPage = static_cast<size_t>(sysconf(_SC_PAGESIZE));

// A file of `bytes`, open for reading and writing; closed when it goes.
class TestFile {
 public:
  TestFile(const testing::ScopedTempDir& dir, const std::string& bytes)
      : path_(dir.File("mapped")) {
    fd_ = open(path_.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    EXPECT_GE(fd_, 0);
    EXPECT_EQ(write(fd_, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
  }
  ~TestFile() { close(fd_); }
  int fd() const { return fd_; }

 private:
  std::string path_;
  int fd_ = -1;
};

std::string RandomBytes(size_t size, uint32_t seed) {
  std::mt19937 random(seed);
  std::string bytes(size, '\0');
  for (char& c : bytes) c = static_cast<char>('a' + random() % 26);
  return bytes;
}

TEST(MappedFileTest, HoldsTheFilesBytesFollowedByZeros) {
  const testing::ScopedTempDir dir("sluice-mapped");
  for (const size_t size : {size_t{1}, kPage - 1, kPage, 3 * kPage + 17}) {
    const std::string bytes = RandomBytes(size, static_cast<uint32_t>(size));
    const TestFile file(dir, bytes);
    ASSERT_OK_AND_ASSIGN(const MappedFile mapped, MappedFile::Map(file.fd(), size));
    EXPECT_EQ(mapped.bytes(), bytes);
    // The rest of the last page and a page after it read as zeros.
    const size_t end = (size + kPage - 1) / kPage * kPage + kPage;
    for (size_t i = size; i < end; ++i) ASSERT_EQ(mapped.bytes().data()[i], '\0') << i;
    EXPECT_FALSE(mapped.changed());
  }
}

TEST(MappedFileTest, AnEmptyFileIsNotMapped) {
  const testing::ScopedTempDir dir("sluice-mapped");
  const TestFile file(dir, "");
  EXPECT_THAT(MappedFile::Map(file.fd(), 0), StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(MappedFileTest, AFileThatShrinksReadsAsZerosPastItsNewEndAndSaysItChanged) {
  const testing::ScopedTempDir dir("sluice-mapped");
  const std::string bytes = RandomBytes(8 * kPage, 8);
  const TestFile file(dir, bytes);
  ASSERT_OK_AND_ASSIGN(const MappedFile mapped, MappedFile::Map(file.fd(), bytes.size()));
  EXPECT_EQ(mapped.bytes().substr(0, kPage), bytes.substr(0, kPage));
  ASSERT_EQ(ftruncate(file.fd(), 2 * kPage + 5), 0);
  // Without the guard, the first read past the file's new end would raise SIGBUS.
  for (size_t i = 3 * kPage; i < bytes.size(); ++i) {
    ASSERT_EQ(mapped.bytes()[i], '\0') << i;
  }
  EXPECT_TRUE(mapped.changed());
  // What the file still holds reads as before.
  EXPECT_EQ(mapped.bytes().substr(0, 2 * kPage + 5), bytes.substr(0, 2 * kPage + 5));
}

TEST(MappedFileTest, ASigbusOfAnyOtherMappingStillEndsTheProcess) {
  const testing::ScopedTempDir dir("sluice-mapped");
  const std::string bytes = RandomBytes(4 * kPage, 4);
  EXPECT_EXIT(
      {
        const TestFile guarded(dir, bytes);
        // The guard is installed with the first mapped file.
        absl::StatusOr<MappedFile> mapped = MappedFile::Map(guarded.fd(), bytes.size());
        if (!mapped.ok()) _exit(1);
        const TestFile other(dir, bytes);
        void* const raw = mmap(nullptr, bytes.size(), PROT_READ, MAP_PRIVATE, other.fd(), 0);
        if (raw == MAP_FAILED || ftruncate(other.fd(), 0) != 0) _exit(2);
        const volatile char* const p = static_cast<const char*>(raw);
        _exit(p[2 * kPage] == 0 ? 3 : 4);  // SIGBUS before either
      },
      ::testing::KilledBySignal(SIGBUS), "");
}

TEST(MappedFileTest, DiscardGivesBackPagesThatReadTheFileAgain) {
  const testing::ScopedTempDir dir("sluice-mapped");
  constexpr size_t kBytes = size_t{64} << 20;
  const std::string bytes = RandomBytes(kBytes, 64);
  const TestFile file(dir, bytes);
  ASSERT_OK_AND_ASSIGN(const MappedFile mapped, MappedFile::Map(file.fd(), kBytes));
  ReleaseFreeHeapMemory();
  // The resident set is read from /proc: where there is none (0), only the bytes are checked.
  const uint64_t before = ResidentBytes();
  uint64_t sum = 0;
  for (size_t i = 0; i < kBytes; i += kPage) sum += static_cast<uint8_t>(mapped.bytes()[i]);
  EXPECT_GT(sum, 0u);
  if (before != 0) {
    EXPECT_GE(ResidentBytes(), before + kBytes / 2);
  }
  mapped.Discard(0, size_t{1} << 62);  // to the end, clipped
  if (before != 0) {
    EXPECT_LT(ResidentBytes(), before + kBytes / 4);
  }
  EXPECT_EQ(mapped.bytes(), bytes);
  mapped.Discard(kBytes + kPage, kPage);  // past the end: nothing
  EXPECT_EQ(mapped.bytes(), bytes);
}

TEST(MappedFileTest, AtMostTheGuardsTableOfFilesAreMappedAtOnce) {
  const testing::ScopedTempDir dir("sluice-mapped");
  const TestFile file(dir, "ifds 1\n");
  std::vector<MappedFile> held;
  for (size_t k = 0; k < MappedFile::kMaxMapped; ++k) {
    ASSERT_OK_AND_ASSIGN(MappedFile mapped, MappedFile::Map(file.fd(), 7));
    held.push_back(std::move(mapped));
  }
  EXPECT_THAT(MappedFile::Map(file.fd(), 7), StatusIs(absl::StatusCode::kResourceExhausted));
  held.pop_back();
  ASSERT_OK_AND_ASSIGN(MappedFile again, MappedFile::Map(file.fd(), 7));
  EXPECT_EQ(again.bytes(), "ifds 1\n");
  MappedFile moved = std::move(again);
  EXPECT_EQ(again.bytes(), "");  // NOLINT(bugprone-use-after-move): moved from is empty
  EXPECT_EQ(moved.bytes(), "ifds 1\n");
}

}  // namespace
}  // namespace sluice
