#include "sluice/base/copy.h"

#include <cstdint>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace sluice {
namespace {

// Every length and alignment of either side, small and streamed, copies exactly its bytes and
// touches nothing around them.
TEST(CopyForReaderTest, CopiesExactlyTheRangeAtAnyAlignmentAndLength) {
  std::mt19937_64 random(20261203);
  constexpr size_t kGuard = 80;
  const std::vector<uint64_t> lengths = {0,         1,         63,        64,        65,
                                         (64 << 10) - 1, 64 << 10, (64 << 10) + 1,
                                         (1 << 20) + 77, 3 << 20};
  for (const uint64_t n : lengths) {
    for (int trial = 0; trial < 6; ++trial) {
      const size_t src_shift = random() % 64, dst_shift = random() % 64;
      std::vector<uint8_t> src(n + src_shift + 2 * kGuard), dst(n + dst_shift + 2 * kGuard);
      for (uint8_t& b : src) b = static_cast<uint8_t>(random());
      for (uint8_t& b : dst) b = static_cast<uint8_t>(random());
      const std::vector<uint8_t> before = dst;
      uint8_t* const to = dst.data() + kGuard + dst_shift;
      const uint8_t* const from = src.data() + kGuard + src_shift;
      CopyForReader(to, from, n);
      for (size_t i = 0; i < dst.size(); ++i) {
        const bool inside = dst.data() + i >= to && dst.data() + i < to + n;
        const uint8_t want = inside ? from[dst.data() + i - to] : before[i];
        ASSERT_EQ(dst[i], want) << "length " << n << ", byte " << i << " of the destination";
      }
    }
  }
}

}  // namespace
}  // namespace sluice
