#include "sluice/base/warm_buffers.h"

#include <cstring>
#include <optional>
#include <utility>

#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "sluice/base/mapped_buffer.h"

namespace sluice {
namespace {

constexpr size_t kBytes = internal::kHugePageBytes * 2;

WarmBuffers::Lease TakeOne(WarmBuffers& store) {
  absl::StatusOr<WarmBuffers::Lease> lease = store.Take();
  EXPECT_TRUE(lease.ok()) << lease.status();
  return lease.ok() ? *std::move(lease) : WarmBuffers::Lease();
}

TEST(WarmBuffersTest, ABufferGivenBackIsTheNextTakenWithItsBytes) {
  WarmBuffers store(kBytes, 4 * kBytes);
  WarmBuffers::Lease first = TakeOne(store);
  ASSERT_EQ(first.size(), kBytes);
  EXPECT_FALSE(first.warm()) << "none was kept yet";
  EXPECT_EQ(first.data()[0], 0);
  EXPECT_EQ(first.data()[kBytes - 1], 0) << "a fresh buffer is zeros";
  std::memset(first.data(), 0x5a, kBytes);
  const uint8_t* const where = first.data();
  first = WarmBuffers::Lease();  // given back
  EXPECT_EQ(store.kept_bytes(), kBytes);

  WarmBuffers::Lease again = TakeOne(store);
  EXPECT_TRUE(again.warm());
  EXPECT_EQ(again.data(), where);
  EXPECT_EQ(again.data()[kBytes - 1], 0x5a) << "kept whole, its bytes with it";
  EXPECT_EQ(store.kept_bytes(), 0u);
  EXPECT_EQ(store.reused(), 1u);
}

TEST(WarmBuffersTest, NoMoreIsKeptThanTheLimitAndTheNewestGoesFirst) {
  WarmBuffers store(kBytes, 2 * kBytes + kBytes / 2);
  std::optional<WarmBuffers::Lease> leases[3];
  for (auto& lease : leases) lease = TakeOne(store);
  for (int i = 0; i < 3; ++i) leases[i]->data()[0] = static_cast<uint8_t>(i + 1);
  for (auto& lease : leases) lease.reset();
  EXPECT_EQ(store.kept_bytes(), 2 * kBytes) << "the third did not fit and was freed";
  WarmBuffers::Lease newest = TakeOne(store);
  EXPECT_EQ(newest.data()[0], 2) << "the last one kept is taken first";
  WarmBuffers::Lease oldest = TakeOne(store);
  EXPECT_EQ(oldest.data()[0], 1);
  WarmBuffers::Lease fresh = TakeOne(store);
  EXPECT_FALSE(fresh.warm());
  EXPECT_EQ(store.reused(), 2u);

  WarmBuffers none(kBytes, 0);
  { WarmBuffers::Lease lease = TakeOne(none); }
  EXPECT_EQ(none.kept_bytes(), 0u) << "a limit of 0 keeps nothing";
}

TEST(WarmBuffersTest, ExpireFreesWhatWasKeptBeforeTheCutoff) {
  WarmBuffers store(kBytes, 4 * kBytes);
  { WarmBuffers::Lease lease = TakeOne(store); }
  const absl::Time between = absl::Now();
  { WarmBuffers::Lease lease = TakeOne(store), other = TakeOne(store); }
  // The first went back before `between`, but the next Take took it (the newest first) and
  // gave it back after: both kept buffers went back after `between`.
  store.Expire(between);
  EXPECT_EQ(store.kept_bytes(), 2 * kBytes);
  store.Expire(absl::Now() + absl::Seconds(1));
  EXPECT_EQ(store.kept_bytes(), 0u);
  EXPECT_FALSE(TakeOne(store).warm());
}

TEST(WarmBuffersTest, ALeaseMayOutliveItsStore) {
  std::optional<WarmBuffers> store;
  store.emplace(kBytes, 4 * kBytes);
  WarmBuffers::Lease lease = TakeOne(*store);
  { WarmBuffers::Lease kept = TakeOne(*store); }
  EXPECT_EQ(store->kept_bytes(), kBytes);
  store.reset();  // frees what it kept; the lease frees its own buffer when it goes
  lease.data()[0] = 1;
  lease = WarmBuffers::Lease();
  EXPECT_EQ(lease.size(), 0u);
}

}  // namespace
}  // namespace sluice
