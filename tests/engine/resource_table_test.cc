#include "sluice/engine/resource_table.h"

#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <limits>
#include <memory>
#include <set>
#include <thread>
#include <vector>

#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sluice/base/mapped_buffer.h"
#include "sluice/engine/cpu_device.h"
#include "tests/testing/status_matchers.h"

namespace sluice {
namespace {

using ::sluice::testing::StatusIs;
using ::testing::HasSubstr;
using Code = absl::StatusCode;

class ResourceTableTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::shared_ptr<CpuDevice>> device =
        CpuDevice::Create({.memory_limit = 1 << 20, .threads = 1});
    ASSERT_TRUE(device.ok());
    device_ = *device;
  }
  std::shared_ptr<CpuDevice> device_;
};

TEST_F(ResourceTableTest, CheckRangeNeverOverflows) {
  constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();
  EXPECT_OK(CheckRange(10, 0, 10));
  EXPECT_OK(CheckRange(10, 10, 0));
  EXPECT_OK(CheckRange(0, 0, 0));
  EXPECT_THAT(CheckRange(10, 11, 0), StatusIs(Code::kOutOfRange));
  EXPECT_THAT(CheckRange(10, 1, 10), StatusIs(Code::kOutOfRange));
  EXPECT_THAT(CheckRange(10, kMax, 2), StatusIs(Code::kOutOfRange));
  EXPECT_THAT(CheckRange(10, 2, kMax - 1), StatusIs(Code::kOutOfRange));
  EXPECT_THAT(CheckRange(kMax, kMax, 1), StatusIs(Code::kOutOfRange));
}

TEST_F(ResourceTableTest, HandlesAreDistinctAndNotSequential) {
  ResourceTable table(device_.get(), {});
  std::set<uint64_t> handles;
  std::vector<uint64_t> order;
  for (int i = 0; i < 64; ++i) {
    ASSERT_OK_AND_ASSIGN(uint64_t h, table.Allocate(8));
    EXPECT_TRUE(handles.insert(h).second);
    order.push_back(h);
  }
  int sequential = 0;
  for (size_t i = 1; i < order.size(); ++i) sequential += order[i] == order[i - 1] + 1;
  EXPECT_EQ(sequential, 0);
}

TEST_F(ResourceTableTest, FreeWhilePinnedIsDeferred) {
  ResourceTable table(device_.get(), {});
  ASSERT_OK_AND_ASSIGN(uint64_t h, table.Allocate(1000));
  const uint64_t before = device_->memory().used;
  {
    ASSERT_OK_AND_ASSIGN(ResourceTable::Pins pins, table.Pin(std::vector<uint64_t>{h, h}));
    ASSERT_OK(table.Free(h));
    // The handle is gone at once...
    EXPECT_THAT(table.Size(h), StatusIs(Code::kNotFound));
    EXPECT_THAT(table.Free(h), StatusIs(Code::kNotFound));
    EXPECT_THAT(table.Pin(std::vector<uint64_t>{h}), StatusIs(Code::kNotFound));
    // ...but the memory stays while the pins hold it, and stays writable.
    EXPECT_EQ(device_->memory().used, before);
    pins.buffers()[0].data[999] = 1;
  }
  EXPECT_EQ(device_->memory().used, before - 1000);
  EXPECT_EQ(table.bytes_in_use(), 0u);
}

TEST_F(ResourceTableTest, AChosenHandleIsTakenUnlessTheTableHoldsIt) {
  ResourceTable table(device_.get(), {});
  const uint64_t chosen = 0x5eed'0000'0000'0001;
  ASSERT_OK_AND_ASSIGN(uint64_t h, table.Allocate(16, chosen));
  EXPECT_EQ(h, chosen);
  ASSERT_OK_AND_ASSIGN(uint64_t size, table.Size(chosen));
  EXPECT_EQ(size, 16u);
  const uint64_t used = device_->memory().used;
  EXPECT_THAT(table.Allocate(32, chosen), StatusIs(Code::kAlreadyExists));
  EXPECT_EQ(device_->memory().used, used) << "a refused allocation must hold no memory";
  EXPECT_EQ(table.bytes_in_use(), ResourceTable::kMinCountedBytes);  // 16 bytes count 512
  {
    // Freed while pinned, the handle still names memory: it is not handed out again yet.
    ASSERT_OK_AND_ASSIGN(ResourceTable::Pins pins, table.Pin(std::vector<uint64_t>{chosen}));
    ASSERT_OK(table.Free(chosen));
    EXPECT_THAT(table.Allocate(8, chosen), StatusIs(Code::kAlreadyExists));
  }
  ASSERT_OK_AND_ASSIGN(h, table.Allocate(8, chosen));
  EXPECT_EQ(h, chosen);
  ASSERT_OK_AND_ASSIGN(size, table.Size(chosen));
  EXPECT_EQ(size, 8u);
}

TEST_F(ResourceTableTest, PinOfAnUnknownHandlePinsNothingAndSaysWhich) {
  ResourceTable table(device_.get(), {});
  ASSERT_OK_AND_ASSIGN(uint64_t h, table.Allocate(10));
  size_t failed = 99;
  EXPECT_THAT(table.Pin(std::vector<uint64_t>{h, h ^ 1, h}, &failed), StatusIs(Code::kNotFound));
  EXPECT_EQ(failed, 1u);
  ASSERT_OK(table.Free(h));
  EXPECT_EQ(device_->memory().used, 0u) << "a failed Pin must leave no pin behind";
}

TEST_F(ResourceTableTest, QuotaAndBufferLimitAreResourceExhausted) {
  ResourceTable table(device_.get(), {.memory_quota = 2048, .max_buffers = 3});
  ASSERT_OK(table.Allocate(1000).status());
  EXPECT_THAT(table.Allocate(1049), StatusIs(Code::kResourceExhausted));
  ASSERT_OK(table.Allocate(536).status());
  ASSERT_OK(table.Allocate(0).status());  // counts 512: the quota is full
  EXPECT_THAT(table.Allocate(0), StatusIs(Code::kResourceExhausted, HasSubstr("most buffers")));
  EXPECT_EQ(table.bytes_in_use(), 2048u);
}

TEST_F(ResourceTableTest, ABufferCountsAtLeastTheSmallestAllocationAgainstEveryQuota) {
  // However small, a buffer holds the device's smallest allocation and an entry: an empty
  // one counts 512 bytes, in the session's quota and the client's.
  const uint64_t each = ResourceTable::kMinCountedBytes;
  auto client = std::make_shared<MemoryAccountant>(100 * each);
  ResourceTable table(device_.get(), {.memory_quota = 10 * each, .shared_quota = client});
  std::vector<uint64_t> handles;
  for (int k = 0; k < 10; ++k) {
    ASSERT_OK_AND_ASSIGN(uint64_t h, table.Allocate(k % 2 == 0 ? 0 : 1));
    handles.push_back(h);
  }
  EXPECT_EQ(table.bytes_in_use(), 10 * each);
  EXPECT_EQ(client->used(), 10 * each);
  EXPECT_THAT(table.Allocate(0), StatusIs(Code::kResourceExhausted,
                                          HasSubstr("0 bytes requested (a buffer counts 512)")));
  ASSERT_OK(table.Free(handles.back()));
  EXPECT_EQ(client->used(), 9 * each);
  ASSERT_OK(table.Allocate(0).status());
  ResourceTable other(device_.get(), {.shared_quota = client});
  for (int k = 0; k < 90; ++k) ASSERT_OK(other.Allocate(0).status());
  EXPECT_THAT(other.Allocate(0), StatusIs(Code::kResourceExhausted));
}

TEST_F(ResourceTableTest, ADiscreetTableSaysNothingOfOtherSessionsUseOfTheDevice) {
  // The device holds 1 MiB; another session holds most of it.
  ResourceTable other(device_.get(), {});
  ASSERT_OK(other.Allocate(900 << 10).status());
  ResourceTable plain(device_.get(), {});
  EXPECT_THAT(plain.Allocate(200 << 10),
              StatusIs(Code::kResourceExhausted, ::testing::HasSubstr("921600")))
      << "a daemon without tenants states the device's figures";
  ResourceTable discreet(device_.get(), {.discreet = true});
  const absl::StatusOr<uint64_t> refused = discreet.Allocate(200 << 10);
  EXPECT_THAT(refused, StatusIs(Code::kResourceExhausted,
                                ::testing::HasSubstr("the device has no room for 204800 more")));
  EXPECT_THAT(refused.status().message(), ::testing::Not(::testing::HasSubstr("921600")));
  EXPECT_EQ(discreet.bytes_in_use(), 0u);
}

// A CPU device whose first allocation waits until the test lets it finish.
class GatedDevice final : public Device {
 public:
  explicit GatedDevice(std::shared_ptr<CpuDevice> cpu) : cpu_(std::move(cpu)) {}
  absl::Notification arrived, release;

  const DeviceInfo& info() const override { return cpu_->info(); }
  absl::StatusOr<DeviceBuffer> Allocate(uint64_t bytes) override {
    if (!first_.exchange(true)) {
      arrived.Notify();
      release.WaitForNotificationWithTimeout(absl::Seconds(30));
    }
    return cpu_->Allocate(bytes);
  }
  void Free(DeviceBuffer buffer) override { cpu_->Free(buffer); }
  absl::StatusOr<std::unique_ptr<Stream>> CreateStream() override { return cpu_->CreateStream(); }
  MemoryInfo memory() const override { return cpu_->memory(); }
  DeviceCounters counters() const override { return cpu_->counters(); }

 private:
  std::shared_ptr<CpuDevice> cpu_;
  std::atomic<bool> first_{false};
};

TEST_F(ResourceTableTest, AnAllocationUnderWayHoldsItsBufferSlot) {
  GatedDevice gated(device_);
  ResourceTable table(&gated, {.max_buffers = 1});
  absl::StatusOr<uint64_t> first;
  std::thread allocating([&] { first = table.Allocate(16); });
  ASSERT_TRUE(gated.arrived.WaitForNotificationWithTimeout(absl::Seconds(30)));
  // The first allocation is inside the device: the one slot is taken.
  EXPECT_THAT(table.Allocate(16), StatusIs(Code::kResourceExhausted));
  gated.release.Notify();
  allocating.join();
  ASSERT_OK(first.status());
  EXPECT_EQ(table.buffer_count(), 1u);
  EXPECT_THAT(table.Allocate(16), StatusIs(Code::kResourceExhausted));
}

TEST_F(ResourceTableTest, DeviceLimitIsResourceExhaustedAndLeavesNothingReserved) {
  ResourceTable table(device_.get(), {});
  EXPECT_THAT(table.Allocate(2 << 20), StatusIs(Code::kResourceExhausted));
  EXPECT_THAT(table.Allocate(~uint64_t{0}), StatusIs(Code::kResourceExhausted));
  EXPECT_EQ(table.bytes_in_use(), 0u);
  EXPECT_EQ(device_->memory().used, 0u);
}

TEST_F(ResourceTableTest, FreeAllAndDestructionReturnEveryByte) {
  {
    ResourceTable table(device_.get(), {});
    for (int i = 0; i < 10; ++i) ASSERT_OK(table.Allocate(1000).status());
    EXPECT_EQ(table.FreeAll(), 10u);
    EXPECT_EQ(device_->memory().used, 0u);
    for (int i = 0; i < 5; ++i) ASSERT_OK(table.Allocate(1000).status());
    EXPECT_EQ(device_->memory().used, 5000u);
  }
  EXPECT_EQ(device_->memory().used, 0u);
}

TEST_F(ResourceTableTest, FreeAllWhilePinnedDefersUntilUnpinned) {
  ResourceTable table(device_.get(), {});
  ASSERT_OK_AND_ASSIGN(uint64_t h, table.Allocate(500));
  ASSERT_OK_AND_ASSIGN(ResourceTable::Pins pins, table.Pin(std::vector<uint64_t>{h}));
  EXPECT_EQ(table.FreeAll(), 1u);
  EXPECT_EQ(device_->memory().used, 500u);
  pins = ResourceTable::Pins();
  EXPECT_EQ(device_->memory().used, 0u);
}

// Buffers of a huge page and more are mapped on their own (for huge pages), those from 64 KiB
// are mapped and backed at once, the rest come from the heap: in every class a buffer is zeroed,
// aligned for every element type, writable to its last byte, and returns its bytes when freed,
// however often it is reused.
TEST(CpuDeviceTest, BuffersOfEverySizeClassAreZeroedWritableAndReturned) {
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<CpuDevice> device,
                       CpuDevice::Create({.memory_limit = uint64_t{256} << 20, .threads = 1}));
  const uint64_t sizes[] = {1,         (64u << 10) - 1, 64u << 10,  (64u << 10) + 1,
                            1u << 20,  (2u << 20) - 1,  2u << 20,   (2u << 20) + 12345,
                            4u << 20,  (6u << 20) + 8,  uint64_t{96} << 20};
  for (int round = 0; round < 2; ++round) {
    for (uint64_t bytes : sizes) {
      ASSERT_OK_AND_ASSIGN(DeviceBuffer buffer, device->Allocate(bytes));
      ASSERT_EQ(buffer.bytes, bytes);
      EXPECT_EQ(reinterpret_cast<uintptr_t>(buffer.data) % 16, 0u) << bytes;
      EXPECT_EQ(device->memory().used, bytes);
      uint64_t nonzero = 0;
      for (uint64_t i = 0; i < bytes; ++i) nonzero += buffer.data[i] != 0;
      EXPECT_EQ(nonzero, 0u) << bytes << " bytes, round " << round;
      std::memset(buffer.data, 0xa5, bytes);  // dirty it, for the next round's reuse
      EXPECT_EQ(buffer.data[bytes - 1], 0xa5);
      device->Free(buffer);
      EXPECT_EQ(device->memory().used, 0u);
    }
  }
}

// A buffer from 64 KiB to a huge page is backed whole as it is made, not a page fault at a time
// as the kernels first write it (where the system populates pages at all).
TEST(CpuDeviceTest, AMidSizedBufferIsBackedWholeAsItIsMade) {
  const auto page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  void* probe = internal::MapPages(page);
  ASSERT_NE(probe, nullptr);
  const bool populates = internal::PopulatePages(probe, page);
  internal::UnmapPages(probe, page);
  if (!populates) GTEST_SKIP() << "the system does not populate pages (Linux before 5.14)";
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<CpuDevice> device,
                       CpuDevice::Create({.memory_limit = uint64_t{256} << 20, .threads = 1}));
  for (const uint64_t bytes : {uint64_t{64} << 10, uint64_t{1} << 20, (uint64_t{2} << 20) - 1}) {
    ASSERT_OK_AND_ASSIGN(DeviceBuffer buffer, device->Allocate(bytes));
    const size_t pages = (bytes + page - 1) / page;
    std::vector<unsigned char> resident(pages);
    ASSERT_EQ(mincore(buffer.data, pages * page, resident.data()), 0) << bytes;
    size_t count = 0;
    for (const unsigned char r : resident) count += r & 1;
    EXPECT_EQ(count, pages) << bytes;
    device->Free(buffer);
  }
}

// A large buffer's end past its last huge page boundary is not made a huge page by a touch: a
// table is written here and there, and its last bytes would hold a whole huge page. (Where the
// system gives no huge pages at all, a touch backs one small page either way.)
TEST(CpuDeviceTest, ALargeBuffersEndPastItsLastHugePageIsBackedASmallPageAtATime) {
  const auto page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  constexpr uint64_t kHuge = internal::kHugePageBytes;
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<CpuDevice> device,
                       CpuDevice::Create({.memory_limit = uint64_t{256} << 20, .threads = 1}));
  for (const uint64_t bytes : {kHuge + 100, 3 * kHuge + kHuge / 2 + 5 * page}) {
    ASSERT_OK_AND_ASSIGN(DeviceBuffer buffer, device->Allocate(bytes));
    buffer.data[bytes - 1] = 1;
    const uint64_t whole = bytes / kHuge * kHuge;
    const uint64_t end = (bytes + page - 1) / page * page;
    std::vector<unsigned char> resident((end - whole) / page);
    ASSERT_EQ(mincore(buffer.data + whole, end - whole, resident.data()), 0) << bytes;
    size_t count = 0;
    for (const unsigned char r : resident) count += r & 1;
    EXPECT_EQ(count, 1u) << bytes;
    EXPECT_EQ(buffer.data[bytes - 1], 1);
    device->Free(buffer);
  }
}

}  // namespace
}  // namespace sluice
