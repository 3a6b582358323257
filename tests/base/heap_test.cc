#include "sluice/base/heap.h"

#include <unistd.h>

#include <thread>
#include <vector>

#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "tests/testing/temp_dir.h"

namespace sluice {
namespace {

// Waits at most 10 s for `trimmer` to have done `n` trims.
bool WaitForTrims(const HeapTrimmer& trimmer, uint64_t n) {
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (absl::Now() < deadline) {
    if (trimmer.trims() >= n) return true;
    std::this_thread::yield();
  }
  return trimmer.trims() >= n;
}

TEST(HeapTrimmerTest, ABurstOfPokesTrimsOnceAfterTheDelay) {
  HeapTrimmer trimmer(absl::Milliseconds(50));
  EXPECT_EQ(trimmer.trims(), 0u);
  for (int i = 0; i < 5; ++i) trimmer.Poke();
  ASSERT_TRUE(WaitForTrims(trimmer, 1));
  trimmer.Poke();
  ASSERT_TRUE(WaitForTrims(trimmer, 2));
  EXPECT_EQ(trimmer.trims(), 2u) << "one trim per burst";
}

TEST(HeapTrimmerTest, StopsWithATrimPending) {
  HeapTrimmer trimmer(absl::Hours(1));
  trimmer.Poke();
  // Destruction does not wait for the pending trim.
}

TEST(HeapTest, ResidentBytesAreReported) {
  EXPECT_GT(ResidentBytes(), 0u);
  ReleaseFreeHeapMemory();  // harmless whatever the allocator
  ReleaseThreadHeapCache();
}

// The peak is at least what the process holds now (64 MiB of it just written), in bytes: up to
// the pages the system has yet to count (it counts each thread's in batches).
TEST(HeapTest, PeakResidentBytesAreAtLeastWhatTheProcessHolds) {
  const std::vector<char> touched(size_t{64} << 20, 1);
  const uint64_t resident = ResidentBytes();
  EXPECT_GE(resident, touched.size());
  EXPECT_GE(PeakResidentBytes(), touched.size());
  EXPECT_GE(PeakResidentBytes() + (uint64_t{1} << 20), resident);
}

// A container's memory limit, read where /proc/self/cgroup says the process's group is: v2's
// memory.max, or v1's memory.limit_in_bytes under the memory hierarchy, the lowest of the group
// and its parents; nothing where none is set.
TEST(HeapTest, AControlGroupsMemoryLimitIsFoundForEitherVersion) {
  const testing::ScopedTempDir root("cgroup");
  const auto write = [&](const std::string& dir, const std::string& file,
                         const std::string& text) {
    std::filesystem::create_directories(root.path() + dir);
    std::ofstream(root.path() + dir + "/" + file) << text;
  };
  // v2: the group's own limit, a parent's lower one, "max" for none.
  write("/kubepods/pod1/c1", "memory.max", "12884901888\n");
  EXPECT_EQ(CgroupMemoryLimit("0::/kubepods/pod1/c1\n", root.path()), uint64_t{12} << 30);
  write("/kubepods/pod1", "memory.max", "8589934592\n");
  EXPECT_EQ(CgroupMemoryLimit("0::/kubepods/pod1/c1\n", root.path()), uint64_t{8} << 30);
  write("/free", "memory.max", "max\n");
  EXPECT_EQ(CgroupMemoryLimit("0::/free\n", root.path()), std::nullopt);
  // v1: the memory hierarchy's line, among the others; its "unlimited" is no limit.
  write("/memory/docker/abc", "memory.limit_in_bytes", "536870912\n");
  EXPECT_EQ(CgroupMemoryLimit("12:pids:/docker/abc\n4:memory:/docker/abc\n1:name=systemd:/\n",
                              root.path()),
            uint64_t{512} << 20);
  write("/memory/open", "memory.limit_in_bytes", "9223372036854771712\n");
  EXPECT_EQ(CgroupMemoryLimit("4:cpuacct,memory:/open\n", root.path()), std::nullopt);
  // No group named, no file, a path that would climb out of the root, garbage.
  EXPECT_EQ(CgroupMemoryLimit("", root.path()), std::nullopt);
  EXPECT_EQ(CgroupMemoryLimit("0::/nowhere\n", root.path()), std::nullopt);
  EXPECT_EQ(CgroupMemoryLimit("0::/../kubepods/pod1\n", root.path()), std::nullopt);
  write("/bad", "memory.max", "lots\n");
  EXPECT_EQ(CgroupMemoryLimit("0::/bad\n", root.path()), std::nullopt);
  // A namespaced container sees its own group as the root, its limit there.
  write("", "memory.max", "1073741824\n");
  EXPECT_EQ(CgroupMemoryLimit("0::/\n", root.path()), uint64_t{1} << 30);
  // The process's own figure is never more than the machine's.
  EXPECT_LE(PhysicalMemoryBytes(), static_cast<uint64_t>(sysconf(_SC_PHYS_PAGES)) *
                                       static_cast<uint64_t>(sysconf(_SC_PAGESIZE)));
}

}  // namespace
}  // namespace sluice
