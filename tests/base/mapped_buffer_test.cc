#include "sluice/base/mapped_buffer.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "sluice/base/heap.h"
#include "tests/testing/status_matchers.h"

namespace sluice {
namespace {

TEST(MappedBufferTest, HoldsZeroedBytesOfItsSizeAndMovesThem) {
  ASSERT_OK_AND_ASSIGN(MappedBuffer buffer, MappedBuffer::Allocate(10000));
  ASSERT_EQ(buffer.size(), 10000u);
  for (size_t i = 0; i < buffer.size(); ++i) ASSERT_EQ(buffer.data()[i], 0) << i;
  buffer.As<uint32_t>()[2499] = 7;
  EXPECT_EQ(buffer.As<uint32_t>().size(), 2500u);
  MappedBuffer moved = std::move(buffer);
  EXPECT_EQ(buffer.size(), 0u);  // NOLINT(bugprone-use-after-move): moved from is empty
  EXPECT_EQ(buffer.data(), nullptr);
  EXPECT_EQ(moved.As<uint32_t>()[2499], 7u);
  ASSERT_OK_AND_ASSIGN(MappedBuffer empty, MappedBuffer::Allocate(0));
  EXPECT_EQ(empty.size(), 0u);
  moved = std::move(empty);
  EXPECT_EQ(moved.size(), 0u);
}

TEST(MappedBufferTest, WhatItHeldIsTheSystemsAgainOnceItGoes) {
  ReleaseFreeHeapMemory();
  const uint64_t before = ResidentBytes();
  if (before == 0) GTEST_SKIP() << "no /proc to read the resident set from";
  constexpr size_t kBytes = size_t{256} << 20;
  {
    ASSERT_OK_AND_ASSIGN(MappedBuffer buffer, MappedBuffer::Allocate(kBytes));
    for (size_t i = 0; i < kBytes; i += 4096) buffer.data()[i] = 1;  // every page touched
    EXPECT_GE(ResidentBytes(), before + kBytes / 2);
  }
  EXPECT_LT(ResidentBytes(), before + kBytes / 4) << "unmapped at once, not kept";
}

TEST(MappedBufferTest, DiscardGivesBackTheWholePagesInsideItsRangeOnly) {
  const auto page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  ASSERT_OK_AND_ASSIGN(MappedBuffer buffer, MappedBuffer::Allocate(10 * page + 100));
  for (size_t i = 0; i < buffer.size(); ++i) buffer.data()[i] = 1;
  buffer.Discard(page + 1, 3 * page);  // pages 2 and 3 lie wholly inside; 1 and 4 do not
  for (size_t i = 0; i < buffer.size(); ++i) {
    const bool inside = i >= 2 * page && i < 4 * page;
    ASSERT_EQ(buffer.data()[i], inside ? 0 : 1) << i;
  }
  buffer.Discard(9 * page, size_t{1} << 62);  // to the end, partial last page included
  for (size_t i = 9 * page; i < buffer.size(); ++i) ASSERT_EQ(buffer.data()[i], 0) << i;
  EXPECT_EQ(buffer.data()[9 * page - 1], 1);
  buffer.Discard(buffer.size() + page, page);  // past the end: nothing
  buffer.Discard(0, 0);
  EXPECT_EQ(buffer.data()[0], 1);
  EXPECT_EQ(buffer.size(), 10 * page + 100);
}

// A PageVector's large array is a mapping of its own: elements' whole pages go back (reading
// zero), the elements around them keep their values; a small array is the heap's and keeps
// everything.
TEST(PageVectorTest, DiscardingElementsGivesBackTheirWholePagesOnly) {
  const auto page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t per_page = page / sizeof(uint64_t);
  PageVector<uint64_t> large(PageAllocator<uint64_t>::kMinBytes / sizeof(uint64_t) * 2, 7);
  ASSERT_EQ(reinterpret_cast<uintptr_t>(large.data()) % page, 0u) << "a mapping of its own";
  DiscardElements(large, per_page + 1, 4 * per_page);  // pages 2 and 3 lie wholly inside
  for (size_t i = 0; i < large.size(); ++i) {
    const bool inside = i >= 2 * per_page && i < 4 * per_page;
    ASSERT_EQ(large[i], inside ? 0u : 7u) << i;
  }
  large.push_back(8);  // still a vector: it grows, keeping what it holds
  EXPECT_EQ(large.back(), 8u);
  EXPECT_EQ(large[per_page + 1], 7u);
  PageVector<uint64_t> small(per_page * 4, 7);
  DiscardElements(small, 0, small.size());
  for (const uint64_t v : small) ASSERT_EQ(v, 7u);
}

// A PageVector of a huge page and more starts at a huge page's boundary, where the system can
// back it with huge pages, and stays there as it grows; a smaller large one starts at a page's.
TEST(PageVectorTest, AnArrayOfAHugePageOrMoreStartsAtAHugePage) {
  const auto page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  constexpr size_t kHuge = internal::kHugePageBytes;
  PageVector<uint32_t> huge(kHuge / sizeof(uint32_t) + 1, 3);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(huge.data()) % kHuge, 0u);
  for (const uint32_t v : huge) ASSERT_EQ(v, 3u);
  huge.resize(3 * huge.size(), 5);  // grown: a huge-page mapping again, the values moved
  EXPECT_EQ(reinterpret_cast<uintptr_t>(huge.data()) % kHuge, 0u);
  EXPECT_EQ(huge[kHuge / sizeof(uint32_t)], 3u);
  EXPECT_EQ(huge.back(), 5u);
  PageVector<uint8_t> below(PageAllocator<uint8_t>::kMinBytes, 1);  // mapped at a page
  EXPECT_EQ(reinterpret_cast<uintptr_t>(below.data()) % page, 0u);
}

// The advice flags (/proc/self/smaps' VmFlags) of the mapping that holds `data`: "hg" where it
// asks for huge pages, "nh" where it asks for small ones; empty where /proc cannot tell.
std::vector<std::string> AdviceOf(const void* data) {
  std::ifstream smaps("/proc/self/smaps");
  const auto at = reinterpret_cast<uintptr_t>(data);
  bool inside = false;
  for (std::string line; std::getline(smaps, line);) {
    uintptr_t begin = 0, end = 0;
    // A mapping's first line is its range ("7f10...-7f12... rw-p ..."); its fields' follow.
    if (std::sscanf(line.c_str(), "%" SCNxPTR "-%" SCNxPTR, &begin, &end) == 2) {
      inside = begin <= at && at < end;
    } else if (inside && line.rfind("VmFlags:", 0) == 0) {
      std::vector<std::string> advice;
      std::istringstream flags(line.substr(8));
      for (std::string flag; flags >> flag;) {
        if (flag == "hg" || flag == "nh") advice.push_back(flag);
      }
      return advice;
    }
  }
  return {};
}

// Huge pages are asked for unless the process turned them off (a client of a daemon), when
// small pages are, so that a system with huge pages always on gives small ones all the same.
TEST(MappedBufferTest, HugePagesTurnedOffAreSmallPagesAskedFor) {
  constexpr size_t kBytes = 2 * internal::kHugePageBytes;
  void* huge = internal::MapHugePages(kBytes);
  internal::SetHugePages(false);
  void* small = internal::MapHugePages(kBytes);
  internal::SetHugePages(true);
  ASSERT_NE(huge, nullptr);
  ASSERT_NE(small, nullptr);
  if (AdviceOf(huge).empty()) GTEST_SKIP() << "no VmFlags in /proc/self/smaps";
  EXPECT_EQ(AdviceOf(huge), std::vector<std::string>{"hg"});
  EXPECT_EQ(AdviceOf(small), std::vector<std::string>{"nh"});
  // Mapped alike otherwise: at a huge page's boundary, zeroed, unmapped whole.
  EXPECT_EQ(reinterpret_cast<uintptr_t>(small) % internal::kHugePageBytes, 0u);
  EXPECT_EQ(static_cast<const uint8_t*>(small)[kBytes - 1], 0);
  internal::UnmapHugePages(huge, kBytes);
  internal::UnmapHugePages(small, kBytes);
}

// Whether every page of [data, data + bytes) is mapped (mincore fails with ENOMEM on a range
// that is not).
bool Mapped(const void* data, size_t bytes) {
  const auto page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  std::vector<unsigned char> resident((bytes + page - 1) / page);
  return mincore(const_cast<void*>(data), bytes, resident.data()) == 0;
}

// A huge-page mapping whose last part is half a huge page or more runs on to the next huge
// page's boundary, so that this part can be a huge page too; a shorter last part is mapped as
// it is. UnmapHugePages takes all of it back.
TEST(MappedBufferTest, AHugePageMappingEndsAtAHugePageAndIsUnmappedWhole) {
  constexpr size_t kHuge = internal::kHugePageBytes;
  const auto page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  for (const size_t bytes : {kHuge, kHuge + kHuge / 2, 3 * kHuge - page}) {
    const size_t whole = (bytes + kHuge - 1) / kHuge * kHuge;
    auto* data = static_cast<uint8_t*>(internal::MapHugePages(bytes));
    ASSERT_NE(data, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(data) % kHuge, 0u);
    EXPECT_TRUE(Mapped(data, whole)) << bytes;
    data[bytes - 1] = 1;
    internal::UnmapHugePages(data, bytes);
    for (size_t at = 0; at < whole; at += page) {
      ASSERT_FALSE(Mapped(data + at, page)) << bytes << " bytes: page at " << at << " left";
    }
  }
  // A short last part: mapped to its last page only.
  const size_t bytes = kHuge + kHuge / 2 - page;
  auto* data = static_cast<uint8_t*>(internal::MapHugePages(bytes));
  ASSERT_NE(data, nullptr);
  EXPECT_TRUE(Mapped(data, bytes));
  EXPECT_FALSE(Mapped(data + bytes, page));
  internal::UnmapHugePages(data, bytes);
  EXPECT_FALSE(Mapped(data, page));
}

// Room made for an array that grows large goes straight to a huge page's once past a
// sixteenth of one, and only then.
TEST(PageVectorTest, HugeRoomIsMadeOncePastASixteenthOfAHugePage) {
  constexpr size_t kRoom = internal::kHugePageBytes / sizeof(uint64_t);
  PageVector<uint64_t> v;
  ReserveHugeRoom(v, kRoom / 16);
  EXPECT_LT(v.capacity(), kRoom);
  v.push_back(1);
  ReserveHugeRoom(v, kRoom / 16 + 1);
  EXPECT_EQ(v.capacity(), kRoom);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(v.data()) % internal::kHugePageBytes, 0u);
  EXPECT_EQ(v[0], 1u);
  ReserveHugeRoom(v, kRoom + 1);  // past the huge room: push_back's own growth
  EXPECT_EQ(v.capacity(), kRoom);
  // An element type whose size does not divide a huge page still gets a whole one's room.
  struct Odd {
    char bytes[40];
  };
  PageVector<Odd> odd;
  ReserveHugeRoom(odd, internal::kHugePageBytes / sizeof(Odd));
  EXPECT_GE(odd.capacity() * sizeof(Odd), internal::kHugePageBytes);
}

// How many of the pages of [data, data + bytes) are resident.
size_t ResidentPages(void* data, size_t bytes) {
  const auto page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  std::vector<unsigned char> resident((bytes + page - 1) / page);
  if (mincore(data, bytes, resident.data()) != 0) return 0;
  size_t count = 0;
  for (const unsigned char r : resident) count += r & 1;
  return count;
}

TEST(MappedBufferTest, PopulatedPagesAreBackedBeforeTheyAreWrittenAndReadZero) {
  const auto page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t bytes = 64 * page;
  void* data = internal::MapPages(bytes);
  ASSERT_NE(data, nullptr);
  EXPECT_EQ(ResidentPages(data, bytes), 0u) << "a fresh mapping holds no pages";
  if (!internal::PopulatePages(data, bytes)) {
    internal::UnmapPages(data, bytes);
    GTEST_SKIP() << "the system does not populate pages (Linux before 5.14)";
  }
  EXPECT_EQ(ResidentPages(data, bytes), 64u);
  const auto* bytes_read = static_cast<const uint8_t*>(data);
  for (size_t i = 0; i < bytes; ++i) ASSERT_EQ(bytes_read[i], 0) << i;
  EXPECT_TRUE(internal::PopulatePages(data, 0));
  internal::UnmapPages(data, bytes);
}

TEST(MappedBufferTest, AnAbsurdSizeIsResourceExhausted) {
  absl::StatusOr<MappedBuffer> huge = MappedBuffer::Allocate(size_t{1} << 62);
  EXPECT_EQ(huge.status().code(), absl::StatusCode::kResourceExhausted);
}

TEST(MappedBufferTest, AHugePagedBufferStartsAtAHugePageAndHoldsZeroedBytesLikeAnother) {
  const auto page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  constexpr size_t kHuge = internal::kHugePageBytes;
  for (const size_t bytes : {size_t{1000}, kHuge, 5 * kHuge + 100}) {
    ASSERT_OK_AND_ASSIGN(MappedBuffer buffer, MappedBuffer::Allocate(bytes, /*huge_pages=*/true));
    ASSERT_EQ(buffer.size(), bytes);
    if (bytes >= kHuge) {
      EXPECT_EQ(reinterpret_cast<uintptr_t>(buffer.data()) % kHuge, 0u);
    }
    for (size_t i = 0; i < bytes; ++i) ASSERT_EQ(buffer.data()[i], 0) << i;
    for (size_t i = 0; i < bytes; ++i) buffer.data()[i] = 1;
    buffer.Discard(page, 2 * page);
    for (size_t i = 0; i < bytes; ++i) {
      ASSERT_EQ(buffer.data()[i], i >= page && i < 3 * page ? 0 : 1) << i;
    }
  }
}

}  // namespace
}  // namespace sluice
