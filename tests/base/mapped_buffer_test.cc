#include "sluice/base/mapped_buffer.h"

#include <unistd.h>

#include <cstdint>
#include <utility>

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

TEST(MappedBufferTest, AnAbsurdSizeIsResourceExhausted) {
  absl::StatusOr<MappedBuffer> huge = MappedBuffer::Allocate(size_t{1} << 62);
  EXPECT_EQ(huge.status().code(), absl::StatusCode::kResourceExhausted);
}

}  // namespace
}  // namespace sluice
