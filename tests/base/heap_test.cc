#include "sluice/base/heap.h"

#include <thread>
#include <vector>

#include "absl/time/clock.h"
#include "gtest/gtest.h"

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

}  // namespace
}  // namespace sluice
