// The typed conformance suite: every contract of the resident-dispatch interface, checked
// against any implementation through a DispatchHarness. Instantiate with
//   INSTANTIATE_TYPED_TEST_SUITE_P(Name, ConformanceTest, ::testing::Types<MyHarness>);
#ifndef SLUICE_TESTS_CLIENT_CONFORMANCE_SUITE_H_
#define SLUICE_TESTS_CLIENT_CONFORMANCE_SUITE_H_

#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sluice/client/resident_dispatch.h"
#include "tests/testing/bytes.h"
#include "tests/testing/dispatch_harness.h"
#include "tests/testing/harness_test.h"
#include "tests/testing/status_matchers.h"

namespace sluice::testing {

template <class Harness>
class ConformanceTest : public HarnessTest<Harness> {
 protected:
  using HarnessTest<Harness>::harness_;
  using HarnessTest<Harness>::dispatch_;

  ResidentDispatch& d() { return *dispatch_; }

  DeviceCounters Counters() {
    absl::StatusOr<DeviceCounters> counters = harness_->Counters();
    EXPECT_TRUE(counters.ok()) << counters.status();
    return counters.ok() ? *counters : DeviceCounters{};
  }

  // Allocates and fills a buffer with `bytes`.
  Resource Make(const std::vector<uint8_t>& bytes) {
    absl::StatusOr<Resource> r = d().Allocate(bytes.size());
    EXPECT_TRUE(r.ok()) << r.status();
    if (!r.ok()) return Resource();
    EXPECT_OK(d().Upload(*r, bytes));
    return *r;
  }

  std::vector<uint8_t> Read(const Resource& r) {
    absl::StatusOr<std::vector<uint8_t>> bytes = d().Download(r);
    EXPECT_TRUE(bytes.ok()) << bytes.status();
    return bytes.ok() ? *bytes : std::vector<uint8_t>{};
  }
};

TYPED_TEST_SUITE_P(ConformanceTest);

using ::testing::ElementsAre;
using ::testing::Each;
using ::testing::Eq;
using ::testing::Not;
using ::testing::SizeIs;
using Code = absl::StatusCode;
constexpr size_t kMax = std::numeric_limits<size_t>::max();

TYPED_TEST_P(ConformanceTest, AllocateGivesExactlyTheRequestedZeroedBytes) {
  for (size_t n : {size_t{1}, size_t{3}, size_t{4096}, size_t{100001}}) {
    ASSERT_OK_AND_ASSIGN(Resource r, this->d().Allocate(n));
    std::vector<uint8_t> bytes = this->Read(r);
    EXPECT_THAT(bytes, SizeIs(n));
    EXPECT_THAT(bytes, Each(Eq(0)));
    EXPECT_OK(this->d().Free(r));
  }
}

TYPED_TEST_P(ConformanceTest, ZeroLengthBuffersWork) {
  ASSERT_OK_AND_ASSIGN(Resource r, this->d().Allocate(0));
  EXPECT_OK(this->d().Upload(r, {}));
  EXPECT_THAT(this->Read(r), SizeIs(0));
  ASSERT_OK_AND_ASSIGN(std::vector<uint8_t> empty, this->d().DownloadRange(r, 0, 0));
  EXPECT_THAT(empty, SizeIs(0));
  EXPECT_THAT(this->d().DownloadRange(r, 0, 1), StatusIs(Code::kOutOfRange));
  EXPECT_THAT(this->d().DownloadRange(r, 1, 0), StatusIs(Code::kOutOfRange));
  EXPECT_OK(this->d().Free(r));
}

TYPED_TEST_P(ConformanceTest, UploadThenDownloadRoundTrips) {
  const std::vector<uint8_t> bytes = Pattern(12345, 7);
  Resource r = this->Make(bytes);
  EXPECT_EQ(this->Read(r), bytes);
}

TYPED_TEST_P(ConformanceTest, UploadShorterThanBufferWritesOnlyAPrefix) {
  Resource r = this->Make(std::vector<uint8_t>(8, 0xAA));
  ASSERT_OK(this->d().Upload(r, std::vector<uint8_t>{1, 2, 3}));
  EXPECT_THAT(this->Read(r), ElementsAre(1, 2, 3, 0xAA, 0xAA, 0xAA, 0xAA, 0xAA));
}

TYPED_TEST_P(ConformanceTest, UploadLongerThanBufferIsOutOfRangeAndChangesNothing) {
  Resource r = this->Make(std::vector<uint8_t>(8, 5));
  EXPECT_THAT(this->d().Upload(r, std::vector<uint8_t>(9, 1)), StatusIs(Code::kOutOfRange));
  EXPECT_THAT(this->Read(r), Each(Eq(5)));
}

TYPED_TEST_P(ConformanceTest, UploadManyIsOneBatchWithOneSynchronization) {
  std::vector<Resource> resources;
  std::vector<std::vector<uint8_t>> payloads;
  std::vector<BufferUpload> uploads;
  uint64_t total = 0;
  for (int i = 0; i < 16; ++i) {
    ASSERT_OK_AND_ASSIGN(Resource r, this->d().Allocate(1000 + i));
    resources.push_back(r);
    payloads.push_back(Pattern(1000 + i, static_cast<uint8_t>(i)));
    total += payloads.back().size();
  }
  for (int i = 0; i < 16; ++i) uploads.push_back({resources[i], payloads[i]});
  const DeviceCounters before = this->Counters();
  ASSERT_OK(this->d().UploadMany(uploads));
  const DeviceCounters after = this->Counters();
  EXPECT_EQ(after.synchronizations - before.synchronizations, 1u);
  EXPECT_EQ(after.bytes_uploaded - before.bytes_uploaded, total);
  for (int i = 0; i < 16; ++i) EXPECT_EQ(this->Read(resources[i]), payloads[i]);
}

TYPED_TEST_P(ConformanceTest, UploadManyChecksEveryUploadBeforeWritingAny) {
  Resource a = this->Make(std::vector<uint8_t>(16, 1));
  Resource b = this->Make(std::vector<uint8_t>(4, 2));
  const std::vector<uint8_t> fits(16, 9);
  const std::vector<uint8_t> too_long(5, 9);
  const std::vector<BufferUpload> bad_range = {{a, fits}, {b, too_long}};
  EXPECT_THAT(this->d().UploadMany(bad_range), StatusIs(Code::kOutOfRange));
  ASSERT_OK_AND_ASSIGN(Resource gone, this->d().Allocate(4));
  ASSERT_OK(this->d().Free(gone));
  const std::vector<BufferUpload> bad_handle = {{a, fits}, {gone, fits}};
  EXPECT_THAT(this->d().UploadMany(bad_handle), StatusIs(Code::kNotFound));
  EXPECT_THAT(this->Read(a), Each(Eq(1)));
  EXPECT_THAT(this->Read(b), Each(Eq(2)));
}

TYPED_TEST_P(ConformanceTest, UploadAtManyWritesTrueRangesInOneSynchronization) {
  Resource a = this->Make(std::vector<uint8_t>(10, 0));
  Resource b = this->Make(std::vector<uint8_t>(6, 0));
  const std::vector<uint8_t> two = {7, 8};
  const std::vector<uint8_t> three = {4, 5, 6};
  const std::vector<RangedUpload> uploads = {{a, 8, two}, {b, 3, three}, {a, 0, two}};
  const DeviceCounters before = this->Counters();
  ASSERT_OK(this->d().UploadAtMany(uploads));
  const DeviceCounters after = this->Counters();
  EXPECT_EQ(after.synchronizations - before.synchronizations, 1u);
  EXPECT_EQ(after.bytes_uploaded - before.bytes_uploaded, 7u);
  EXPECT_THAT(this->Read(a), ElementsAre(7, 8, 0, 0, 0, 0, 0, 0, 7, 8));
  EXPECT_THAT(this->Read(b), ElementsAre(0, 0, 0, 4, 5, 6));
}

TYPED_TEST_P(ConformanceTest, OverflowingUploadOffsetsAreRejectedAndChangeNothing) {
  Resource r = this->Make(std::vector<uint8_t>(64, 3));
  const std::vector<uint8_t> two = {1, 2};
  for (size_t offset : {kMax, kMax - 1, size_t{63}, size_t{65}}) {
    const std::vector<RangedUpload> uploads = {{r, 0, two}, {r, offset, two}};
    EXPECT_THAT(this->d().UploadAtMany(uploads), StatusIs(Code::kOutOfRange)) << offset;
  }
  EXPECT_THAT(this->Read(r), Each(Eq(3)));
}

TYPED_TEST_P(ConformanceTest, AnUploadErrorNamesTheCallersRange) {
  Resource a = this->Make(std::vector<uint8_t>(16, 3));
  Resource b = this->Make(std::vector<uint8_t>(8, 3));
  const std::vector<uint8_t> bytes(6, 1);
  // Range 2 ends two bytes past its buffer; the first two are fine.
  const std::vector<RangedUpload> uploads = {{a, 0, bytes}, {a, 10, bytes}, {b, 4, bytes}};
  EXPECT_THAT(this->d().UploadAtMany(uploads),
              StatusIs(Code::kOutOfRange,
                       ::testing::HasSubstr("upload range 2: the range at offset 4 of length 6 "
                                            "is outside the buffer of 8 bytes")));
  EXPECT_THAT(this->Read(a), Each(Eq(3)));
}

TYPED_TEST_P(ConformanceTest, AProgramRunsOnlyTheKernelVersionItIsPinnedTo) {
  Resource r = this->Make(std::vector<uint8_t>(16, 0));
  // fill_u32 is version 1 in this catalog: pinned to it, or to no version, it runs.
  EXPECT_OK(this->d().Dispatch(Program{"fill_u32", {7}, 1}, {&r, 1}, std::nullopt));
  EXPECT_OK(this->d().Dispatch(Program{"fill_u32", {8}, 0}, {&r, 1}, std::nullopt));
  // Pinned to another version: refused, naming the kernel and both versions, and nothing runs.
  const Program other{"fill_u32", {9}, 2};
  EXPECT_THAT(this->d().Dispatch(other, {&r, 1}, std::nullopt),
              StatusIs(Code::kFailedPrecondition,
                       ::testing::HasSubstr("kernel fill_u32 is version 1 on this backend; the "
                                            "caller was written for version 2")));
  const Step steps[] = {{&other, {&r, 1}, std::nullopt}};
  EXPECT_THAT(this->d().DispatchSequenceReadRangesInto(steps, {}, {}),
              StatusIs(Code::kFailedPrecondition));
  EXPECT_EQ(FromBytes<uint32_t>(this->Read(r)), std::vector<uint32_t>(4, 8));
}

TYPED_TEST_P(ConformanceTest, RangedReadOfFourBytesMovesFourBytes) {
  const size_t size = size_t{32} << 20;
  ASSERT_OK_AND_ASSIGN(Resource r, this->d().Allocate(size));
  const std::vector<uint8_t> marker = {0xDE, 0xAD, 0xBE, 0xEF};
  ASSERT_OK(this->d().UploadAtMany({{r, size - 100, marker}}));
  const DeviceCounters before = this->Counters();
  ASSERT_OK_AND_ASSIGN(std::vector<uint8_t> bytes, this->d().DownloadRange(r, size - 100, 4));
  const DeviceCounters after = this->Counters();
  EXPECT_EQ(bytes, marker);
  EXPECT_EQ(after.bytes_downloaded - before.bytes_downloaded, 4u);
  EXPECT_EQ(after.synchronizations - before.synchronizations, 1u);
}

TYPED_TEST_P(ConformanceTest, OverflowingReadRangesAreOutOfRange) {
  Resource r = this->Make(Pattern(100, 1));
  EXPECT_THAT(this->d().DownloadRange(r, kMax, 8), StatusIs(Code::kOutOfRange));
  EXPECT_THAT(this->d().DownloadRange(r, 8, kMax - 4), StatusIs(Code::kOutOfRange));
  EXPECT_THAT(this->d().DownloadRange(r, 101, 0), StatusIs(Code::kOutOfRange));
  EXPECT_THAT(this->d().DownloadRange(r, 96, 5), StatusIs(Code::kOutOfRange));
  ASSERT_OK_AND_ASSIGN(std::vector<uint8_t> tail, this->d().DownloadRange(r, 96, 4));
  EXPECT_THAT(tail, SizeIs(4));
  ASSERT_OK_AND_ASSIGN(std::vector<uint8_t> end, this->d().DownloadRange(r, 100, 0));
  EXPECT_THAT(end, SizeIs(0));
}

TYPED_TEST_P(ConformanceTest, IntoVariantsReuseCallerStorage) {
  const std::vector<uint8_t> bytes = Pattern(4096, 3);
  Resource r = this->Make(bytes);
  std::vector<uint8_t> out;
  out.reserve(1 << 16);
  const uint8_t* storage = out.data();
  ASSERT_OK(this->d().DownloadInto(r, &out));
  EXPECT_EQ(out, bytes);
  EXPECT_EQ(out.data(), storage);
  ASSERT_OK(this->d().DownloadRangeInto(r, 10, 20, &out));
  EXPECT_EQ(out, std::vector<uint8_t>(bytes.begin() + 10, bytes.begin() + 30));
  EXPECT_EQ(out.data(), storage);
}

TYPED_TEST_P(ConformanceTest, DownloadRangesIntoReadsEveryRangeInOneSynchronization) {
  const std::vector<uint8_t> a_bytes = Pattern(300, 1);
  const std::vector<uint8_t> b_bytes = Pattern(50, 2);
  Resource a = this->Make(a_bytes);
  Resource b = this->Make(b_bytes);
  std::vector<uint8_t> o1, o2, o3;
  std::vector<std::vector<uint8_t>*> outs = {&o1, &o2, &o3};
  const std::vector<ReadRange> ranges = {{a, 0, 10}, {b, 40, 10}, {a, 290, 10}};
  const DeviceCounters before = this->Counters();
  ASSERT_OK(this->d().DownloadRangesInto(ranges, absl::MakeSpan(outs)));
  const DeviceCounters after = this->Counters();
  EXPECT_EQ(after.synchronizations - before.synchronizations, 1u);
  EXPECT_EQ(after.bytes_downloaded - before.bytes_downloaded, 30u);
  EXPECT_EQ(o1, std::vector<uint8_t>(a_bytes.begin(), a_bytes.begin() + 10));
  EXPECT_EQ(o2, std::vector<uint8_t>(b_bytes.begin() + 40, b_bytes.end()));
  EXPECT_EQ(o3, std::vector<uint8_t>(a_bytes.begin() + 290, a_bytes.end()));
}

TYPED_TEST_P(ConformanceTest, MismatchedOutputsAreInvalidArgument) {
  Resource r = this->Make(Pattern(8, 1));
  std::vector<uint8_t> o1;
  std::vector<std::vector<uint8_t>*> one = {&o1};
  std::vector<std::vector<uint8_t>*> null_output = {nullptr};
  const std::vector<ReadRange> two = {{r, 0, 4}, {r, 4, 4}};
  EXPECT_THAT(this->d().DownloadRangesInto(two, absl::MakeSpan(one)),
              StatusIs(Code::kInvalidArgument));
  const std::vector<ReadRange> single = {{r, 0, 4}};
  EXPECT_THAT(this->d().DownloadRangesInto(single, absl::MakeSpan(null_output)),
              StatusIs(Code::kInvalidArgument));
  std::vector<std::vector<uint8_t>*> same_twice = {&o1, &o1};
  EXPECT_THAT(this->d().DownloadRangesInto(two, absl::MakeSpan(same_twice)),
              StatusIs(Code::kInvalidArgument));
  const Program fill{"fill_u32", {9}};
  const std::vector<Resource> bind = {r};
  const std::vector<Step> steps = {{&fill, bind, std::nullopt}};
  EXPECT_THAT(this->d().DispatchSequenceReadRangesInto(steps, two, absl::MakeSpan(one)),
              StatusIs(Code::kInvalidArgument));
  EXPECT_EQ(this->Read(r), Pattern(8, 1)) << "a rejected sequence must not run";
}

TYPED_TEST_P(ConformanceTest, SpanReadsLandInCallerMemoryAndNowhereElse) {
  const std::vector<uint8_t> a_bytes = Pattern(300, 1);
  const std::vector<uint8_t> b_bytes = Pattern(50, 2);
  Resource a = this->Make(a_bytes);
  Resource b = this->Make(b_bytes);
  // One caller array; the reads land in three windows of it, the rest keeps its guard bytes.
  std::vector<uint8_t> memory(64, 0xEE);
  const absl::Span<uint8_t> all = absl::MakeSpan(memory);
  const std::vector<absl::Span<uint8_t>> outs = {all.subspan(40, 10), all.subspan(5, 10),
                                                 all.subspan(20, 0)};
  const std::vector<ReadRange> ranges = {{a, 0, 10}, {b, 40, 10}, {a, 300, 0}};
  const DeviceCounters before = this->Counters();
  ASSERT_OK(this->d().DownloadRangesIntoSpans(ranges, outs));
  const DeviceCounters after = this->Counters();
  EXPECT_EQ(after.synchronizations - before.synchronizations, 1u);
  EXPECT_EQ(after.bytes_downloaded - before.bytes_downloaded, 20u);
  std::vector<uint8_t> expected(64, 0xEE);
  std::copy(a_bytes.begin(), a_bytes.begin() + 10, expected.begin() + 40);
  std::copy(b_bytes.begin() + 40, b_bytes.end(), expected.begin() + 5);
  EXPECT_EQ(memory, expected);

  ASSERT_OK(this->d().DownloadRangeIntoSpan(a, 290, all.subspan(50, 10)));
  std::copy(a_bytes.end() - 10, a_bytes.end(), expected.begin() + 50);
  EXPECT_EQ(memory, expected);
  EXPECT_THAT(this->d().DownloadRangeIntoSpan(a, 291, all.subspan(50, 10)),
              StatusIs(Code::kOutOfRange));

  // A repeated sequence's reads land in spans too, behind the same one synchronization.
  ASSERT_OK_AND_ASSIGN(Resource c, this->d().Allocate(4 * 8));
  const Program fill{"fill_u32", {5}};
  const Program add{"atomic_add_u32", {6, 3}};  // word 6 += 3, one thread
  const std::vector<Resource> bind = {c};
  const std::vector<Step> prefix = {{&fill, bind, std::nullopt}};
  const std::vector<Step> body = {{&add, bind, std::nullopt}};
  uint32_t words[3] = {0, 0, 0};
  const std::vector<absl::Span<uint8_t>> word_out = {
      absl::MakeSpan(reinterpret_cast<uint8_t*>(words) + 4, 8)};
  const std::vector<ReadRange> read_c = {{c, 4 * 6, 8}};
  const DeviceCounters before_run = this->Counters();
  ASSERT_OK(this->d().DispatchRepeatedSequenceReadRangesIntoSpans(prefix, body, 4, read_c,
                                                                  word_out));
  EXPECT_EQ(this->Counters().synchronizations - before_run.synchronizations, 1u);
  EXPECT_THAT(words, ElementsAre(0, 17, 5));
  ASSERT_OK(this->d().DispatchSequenceReadRangesIntoSpans(prefix, read_c, word_out));
  EXPECT_THAT(words, ElementsAre(0, 5, 5));
}

TYPED_TEST_P(ConformanceTest, MismatchedSpanOutputsAreInvalidArgumentAndRunNothing) {
  Resource r = this->Make(Pattern(8, 1));
  std::vector<uint8_t> memory(16, 0xEE);
  const absl::Span<uint8_t> all = absl::MakeSpan(memory);
  const std::vector<ReadRange> two = {{r, 0, 4}, {r, 4, 4}};
  struct Case {
    std::vector<absl::Span<uint8_t>> outputs;
    const char* what;
  };
  const Case cases[] = {
      {{all.subspan(0, 4)}, "fewer outputs than ranges"},
      {{all.subspan(0, 4), all.subspan(4, 4), all.subspan(8, 4)}, "more outputs than ranges"},
      {{all.subspan(0, 4), all.subspan(4, 3)}, "an output shorter than its range"},
      {{all.subspan(0, 4), all.subspan(4, 5)}, "an output longer than its range"},
      {{all.subspan(0, 4), all.subspan(2, 4)}, "two outputs overlapping"},
      {{all.subspan(4, 4), all.subspan(4, 4)}, "one output given twice"},
      {{all.subspan(0, 4), absl::Span<uint8_t>(nullptr, 4)}, "a null output"},
  };
  const Program fill{"fill_u32", {9}};
  const std::vector<Resource> bind = {r};
  const std::vector<Step> steps = {{&fill, bind, std::nullopt}};
  for (const Case& c : cases) {
    EXPECT_THAT(this->d().DownloadRangesIntoSpans(two, c.outputs),
                StatusIs(Code::kInvalidArgument))
        << c.what;
    EXPECT_THAT(this->d().DispatchSequenceReadRangesIntoSpans(steps, two, c.outputs),
                StatusIs(Code::kInvalidArgument))
        << c.what;
  }
  EXPECT_EQ(this->Read(r), Pattern(8, 1)) << "a rejected sequence must not run";
  EXPECT_THAT(memory, Each(Eq(0xEE))) << "nothing is written into a rejected call's outputs";
}

TYPED_TEST_P(ConformanceTest, FreeTwiceIsNotFound) {
  ASSERT_OK_AND_ASSIGN(Resource r, this->d().Allocate(16));
  EXPECT_OK(this->d().Free(r));
  EXPECT_THAT(this->d().Free(r), StatusIs(Code::kNotFound));
}

TYPED_TEST_P(ConformanceTest, FreedAndDefaultResourcesAreNotFound) {
  ASSERT_OK_AND_ASSIGN(Resource r, this->d().Allocate(16));
  ASSERT_OK(this->d().Free(r));
  EXPECT_THAT(this->d().Download(r), StatusIs(Code::kNotFound));
  EXPECT_THAT(this->d().DownloadRange(r, 0, 4), StatusIs(Code::kNotFound));
  // However long the range: a freed buffer is NotFound before its length means anything
  // (past a remote daemon's per-request limit, a read goes in pieces).
  EXPECT_THAT(this->d().DownloadRange(r, 0, size_t{5} << 30), StatusIs(Code::kNotFound));
  EXPECT_THAT(this->d().DownloadRange(r, 0, kMax), StatusIs(Code::kNotFound));
  EXPECT_THAT(this->d().Upload(r, std::vector<uint8_t>{1}), StatusIs(Code::kNotFound));
  const std::vector<uint8_t> one = {1};
  const RangedUpload at_end{r, 15, one};
  EXPECT_THAT(this->d().UploadAtMany({&at_end, 1}), StatusIs(Code::kNotFound));
  const Program fill{"fill_u32", {1}};
  EXPECT_THAT(this->d().Dispatch(fill, std::vector<Resource>{r}, std::nullopt),
              StatusIs(Code::kNotFound));
  EXPECT_THAT(this->d().Download(Resource()), StatusIs(Code::kNotFound));
  EXPECT_THAT(this->d().Free(Resource()), StatusIs(Code::kNotFound));
}

TYPED_TEST_P(ConformanceTest, ResourceOfAnotherDispatcherIsFailedPrecondition) {
  // Another dispatcher on the same backend: a resource belongs to the instance that made it.
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ResidentDispatch> other, this->harness_->NewDispatch());
  ASSERT_OK_AND_ASSIGN(Resource foreign, other->Allocate(16));
  ASSERT_OK(other->Upload(foreign, std::vector<uint8_t>(16, 4)));
  EXPECT_THAT(this->d().Download(foreign), StatusIs(Code::kFailedPrecondition));
  EXPECT_THAT(this->d().DownloadRange(foreign, 0, 4), StatusIs(Code::kFailedPrecondition));
  EXPECT_THAT(this->d().Upload(foreign, std::vector<uint8_t>(16, 1)),
              StatusIs(Code::kFailedPrecondition));
  const Program fill{"fill_u32", {1}};
  EXPECT_THAT(this->d().Dispatch(fill, std::vector<Resource>{foreign}, std::nullopt),
              StatusIs(Code::kFailedPrecondition));
  EXPECT_THAT(this->d().Free(foreign), StatusIs(Code::kFailedPrecondition));
  ASSERT_OK_AND_ASSIGN(std::vector<uint8_t> still, other->Download(foreign));
  EXPECT_THAT(still, Each(Eq(4)));
}

TYPED_TEST_P(ConformanceTest, AbsurdAllocationsAreResourceExhausted) {
  EXPECT_THAT(this->d().Allocate(kMax), StatusIs(Code::kResourceExhausted));
  EXPECT_THAT(this->d().Allocate(size_t{1} << 62), StatusIs(Code::kResourceExhausted));
  ASSERT_OK_AND_ASSIGN(Resource r, this->d().Allocate(8));
  EXPECT_OK(this->d().Free(r));
}

TYPED_TEST_P(ConformanceTest, BackendIdentityIsStableAndVersioned) {
  const std::string id(this->d().backend_id());
  EXPECT_FALSE(id.empty());
  EXPECT_NE(this->d().backend_version(), "unversioned");
  EXPECT_FALSE(this->d().backend_version().empty());
  // Stable: a second dispatcher on the same backend and device reports the same identity.
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ResidentDispatch> other, this->harness_->NewDispatch());
  EXPECT_EQ(other->backend_id(), id);
  EXPECT_EQ(other->backend_version(), this->d().backend_version());
}

TYPED_TEST_P(ConformanceTest, DispatchRunsAKernelOnResidentBuffers) {
  ASSERT_OK_AND_ASSIGN(Resource r, this->d().Allocate(40));
  const Program iota{"iota_u32", {5, 3}};
  ASSERT_OK(this->d().Dispatch(iota, std::vector<Resource>{r}, std::nullopt));
  EXPECT_THAT(FromBytes<uint32_t>(this->Read(r)),
              ElementsAre(5, 8, 11, 14, 17, 20, 23, 26, 29, 32));
}

TYPED_TEST_P(ConformanceTest, BadProgramsAreRejectedWithSpecificCodes) {
  Resource r = this->Make(std::vector<uint8_t>(16, 0));
  Resource small = this->Make(std::vector<uint8_t>(8, 0));
  const std::vector<Resource> one = {r};
  EXPECT_THAT(this->d().Dispatch(Program{"no_such_kernel", {}}, one, std::nullopt),
              StatusIs(Code::kNotFound));
  EXPECT_THAT(this->d().Dispatch(Program{"fill_u32", {1}}, std::vector<Resource>{r, r},
                                 std::nullopt),
              StatusIs(Code::kInvalidArgument));
  EXPECT_THAT(this->d().Dispatch(Program{"fill_u32", {}}, one, std::nullopt),
              StatusIs(Code::kInvalidArgument));
  EXPECT_THAT(this->d().Dispatch(Program{"fill_u32", {uint64_t{1} << 40}}, one, std::nullopt),
              StatusIs(Code::kInvalidArgument));
  // bfs_advance needs a 4-element state; 8 bytes is too small.
  EXPECT_THAT(this->d().Dispatch(Program{"bfs_advance", {}}, std::vector<Resource>{r, r, small},
                                 std::nullopt),
              StatusIs(Code::kInvalidArgument));
  EXPECT_THAT(this->d().Dispatch(Program{"fill_u32", {1}}, one, Grid{1u << 20, 1u << 20, 1}),
              StatusIs(Code::kInvalidArgument));
  EXPECT_THAT(this->Read(r), Each(Eq(0)));
}

TYPED_TEST_P(ConformanceTest, GridOverrideSetsTheThreadCount) {
  Resource counter = this->Make(std::vector<uint8_t>(8, 0));
  const Program add{"atomic_add_u32", {1, 3}};
  ASSERT_OK(this->d().Dispatch(add, std::vector<Resource>{counter}, Grid{10, 3, 2}));
  EXPECT_THAT(FromBytes<uint32_t>(this->Read(counter)), ElementsAre(0, 180));
  ASSERT_OK(this->d().Dispatch(add, std::vector<Resource>{counter}, std::nullopt));
  EXPECT_THAT(FromBytes<uint32_t>(this->Read(counter)), ElementsAre(0, 183));
  ASSERT_OK(this->d().Dispatch(add, std::vector<Resource>{counter}, Grid{0, 1, 1}));
  EXPECT_THAT(FromBytes<uint32_t>(this->Read(counter)), ElementsAre(0, 183));
}

TYPED_TEST_P(ConformanceTest, SequenceWithReadsSynchronizesOnce) {
  ASSERT_OK_AND_ASSIGN(Resource a, this->d().Allocate(4 * 100));
  ASSERT_OK_AND_ASSIGN(Resource b, this->d().Allocate(4 * 100));
  const Program fill{"fill_u32", {7}};
  const Program iota{"iota_u32", {0, 1}};
  const Program copy{"copy_range_u32", {10, 50, 5}};
  const std::vector<Resource> ra = {a};
  const std::vector<Resource> rb = {b};
  const std::vector<Resource> ab = {a, b};
  const std::vector<Step> steps = {
      {&fill, rb, std::nullopt}, {&iota, ra, std::nullopt}, {&copy, ab, std::nullopt}};
  std::vector<uint8_t> head, copied;
  std::vector<std::vector<uint8_t>*> outs = {&head, &copied};
  const std::vector<ReadRange> reads = {{b, 0, 8}, {b, 4 * 50, 4 * 6}};
  const DeviceCounters before = this->Counters();
  ASSERT_OK(this->d().DispatchSequenceReadRangesInto(steps, reads, absl::MakeSpan(outs)));
  const DeviceCounters after = this->Counters();
  EXPECT_EQ(after.synchronizations - before.synchronizations, 1u);
  EXPECT_EQ(after.bytes_downloaded - before.bytes_downloaded, 32u);
  EXPECT_THAT(FromBytes<uint32_t>(head), ElementsAre(7, 7));
  EXPECT_THAT(FromBytes<uint32_t>(copied), ElementsAre(10, 11, 12, 13, 14, 7));
}

TYPED_TEST_P(ConformanceTest, InvalidProgramAtStepThreeExecutesNothing) {
  Resource r = this->Make(std::vector<uint8_t>(64, 0));
  const Program fill{"fill_u32", {1}};
  const Program iota{"iota_u32", {1, 1}};
  const Program bad{"copy_range_u32", {0, 0, 1000}};  // count past both buffers
  const std::vector<Resource> one = {r};
  const std::vector<Resource> two = {r, r};
  const std::vector<Step> steps = {{&fill, one, std::nullopt},
                                   {&iota, one, std::nullopt},
                                   {&fill, one, std::nullopt},
                                   {&bad, two, std::nullopt}};
  std::vector<uint8_t> out;
  std::vector<std::vector<uint8_t>*> outs = {&out};
  const std::vector<ReadRange> reads = {{r, 0, 4}};
  const DeviceCounters before = this->Counters();
  EXPECT_THAT(this->d().DispatchSequenceReadRangesInto(steps, reads, absl::MakeSpan(outs)),
              StatusIs(Code::kInvalidArgument));
  const Program unknown{"not_a_kernel", {}};
  const std::vector<Step> repeated = {{&unknown, one, std::nullopt}};
  EXPECT_THAT(this->d().DispatchRepeatedSequenceReadRangesInto(absl::MakeConstSpan(steps).subspan(0, 3), repeated, 2,
                                                               reads, absl::MakeSpan(outs)),
              StatusIs(Code::kNotFound));
  const DeviceCounters after = this->Counters();
  EXPECT_EQ(after.launches, before.launches);
  EXPECT_EQ(after.bytes_downloaded, before.bytes_downloaded);
  EXPECT_THAT(this->Read(r), Each(Eq(0)));
}

TYPED_TEST_P(ConformanceTest, RepeatedSequenceRunsTheGroupRepeatCountTimes) {
  const Program add{"atomic_add_u32", {0, 1}};
  const Program add_other{"atomic_add_u32", {1, 10}};
  for (uint32_t count : {0u, 1u, 2u, 1000u}) {
    Resource counter = this->Make(std::vector<uint8_t>(8, 0));
    const std::vector<Resource> bind = {counter};
    const std::vector<Step> prefix = {{&add_other, bind, std::nullopt}};
    const std::vector<Step> repeated = {{&add, bind, std::nullopt},
                                        {&add, bind, std::nullopt}};
    std::vector<uint8_t> out;
    std::vector<std::vector<uint8_t>*> outs = {&out};
    const std::vector<ReadRange> reads = {{counter, 0, 8}};
    const DeviceCounters before = this->Counters();
    ASSERT_OK(this->d().DispatchRepeatedSequenceReadRangesInto(prefix, repeated, count, reads,
                                                               absl::MakeSpan(outs)));
    const DeviceCounters after = this->Counters();
    EXPECT_EQ(after.synchronizations - before.synchronizations, 1u) << count;
    EXPECT_THAT(FromBytes<uint32_t>(out), ElementsAre(2 * count, 10)) << count;
    EXPECT_OK(this->d().Free(counter));
  }
}

TYPED_TEST_P(ConformanceTest, EmptyRepeatedGroupRunsOnlyThePrefix) {
  Resource r = this->Make(std::vector<uint8_t>(8, 0));
  const Program add{"atomic_add_u32", {0, 1}};
  const std::vector<Resource> bind = {r};
  const std::vector<Step> prefix = {{&add, bind, std::nullopt}};
  std::vector<uint8_t> out;
  std::vector<std::vector<uint8_t>*> outs = {&out};
  const std::vector<ReadRange> reads = {{r, 0, 8}};
  const DeviceCounters before = this->Counters();
  ASSERT_OK(this->d().DispatchRepeatedSequenceReadRangesInto(prefix, {}, 5, reads,
                                                             absl::MakeSpan(outs)));
  const DeviceCounters after = this->Counters();
  EXPECT_THAT(FromBytes<uint32_t>(out), ElementsAre(1, 0)) << "the prefix ran once";
  EXPECT_EQ(after.launches - before.launches, 1u);
}

TYPED_TEST_P(ConformanceTest, PrefixRunsFirstThenTheGroupsStepsInOrderThenTheReads) {
  Resource r = this->Make(std::vector<uint8_t>(8, 0));
  const std::vector<Resource> bind = {r};
  const Program fill_three{"fill_u32", {3}};
  const Program fill_one{"fill_u32", {1}};
  const Program add{"atomic_add_u32", {0, 1}};
  const std::vector<Step> prefix = {{&fill_three, bind, std::nullopt}};
  std::vector<uint8_t> out;
  std::vector<std::vector<uint8_t>*> outs = {&out};
  const std::vector<ReadRange> reads = {{r, 0, 8}};
  // A group after the prefix: 3 + 2 (the prefix last would leave 3).
  const std::vector<Step> adds = {{&add, bind, std::nullopt}};
  ASSERT_OK(this->d().DispatchRepeatedSequenceReadRangesInto(prefix, adds, 2, reads,
                                                             absl::MakeSpan(outs)));
  EXPECT_THAT(FromBytes<uint32_t>(out), ElementsAre(5, 3));
  // Within the group, in order: fill then add leaves 2 (add then fill would leave 1).
  const std::vector<Step> fill_then_add = {{&fill_one, bind, std::nullopt},
                                           {&add, bind, std::nullopt}};
  ASSERT_OK(this->d().DispatchRepeatedSequenceReadRangesInto(prefix, fill_then_add, 3, reads,
                                                             absl::MakeSpan(outs)));
  EXPECT_THAT(FromBytes<uint32_t>(out), ElementsAre(2, 1));
  // And in a plain sequence.
  const std::vector<Step> add_then_fill = {{&add, bind, std::nullopt},
                                           {&fill_one, bind, std::nullopt}};
  ASSERT_OK(this->d().DispatchSequenceReadRangesInto(add_then_fill, reads, absl::MakeSpan(outs)));
  EXPECT_THAT(FromBytes<uint32_t>(out), ElementsAre(1, 1));
}

TYPED_TEST_P(ConformanceTest, ABadReadRangeRefusesTheWholeCallBeforeAnyStepRuns) {
  Resource r = this->Make(std::vector<uint8_t>(64, 0));
  ASSERT_OK_AND_ASSIGN(Resource freed, this->d().Allocate(64));
  ASSERT_OK(this->d().Free(freed));
  const Program fill{"fill_u32", {1}};
  const std::vector<Resource> bind = {r};
  const std::vector<Step> steps = {{&fill, bind, std::nullopt}};
  std::vector<uint8_t> first, second;
  std::vector<std::vector<uint8_t>*> outs = {&first, &second};
  struct Case {
    std::vector<ReadRange> reads;
    Code code;
  };
  // Longer than any request may move, too: the range is wrong before the length is too much.
  const Case cases[] = {{{{r, 0, 4}, {r, 0, 65}}, Code::kOutOfRange},
                        {{{r, 0, 4}, {r, 64, 1}}, Code::kOutOfRange},
                        {{{r, 0, 4}, {r, 0, kMax}}, Code::kOutOfRange},
                        {{{r, 0, 4}, {freed, 0, 4}}, Code::kNotFound},
                        {{{r, 0, 4}, {freed, 0, kMax}}, Code::kNotFound}};
  const DeviceCounters before = this->Counters();
  for (const Case& c : cases) {
    EXPECT_THAT(this->d().DispatchSequenceReadRangesInto(steps, c.reads, absl::MakeSpan(outs)),
                StatusIs(c.code));
    EXPECT_THAT(this->d().DispatchRepeatedSequenceReadRangesInto(steps, steps, 2, c.reads,
                                                                 absl::MakeSpan(outs)),
                StatusIs(c.code));
  }
  const DeviceCounters after = this->Counters();
  EXPECT_EQ(after.launches, before.launches);
  EXPECT_EQ(after.bytes_downloaded, before.bytes_downloaded);
  EXPECT_THAT(this->Read(r), Each(Eq(0)));
}

TYPED_TEST_P(ConformanceTest, LoopGuardEndsTheRepetitionOnceItsWordIsZero) {
  // word[0] is a budget the group spends one by one; word[1] counts the iterations that ran.
  const Program guard{"repeat_while_u32", {0}};
  const Program spend{"atomic_add_u32", {0, 0xffffffffu}};  // adds -1 (mod 2^32)
  const Program count_one{"atomic_add_u32", {1, 1}};
  // Prefixes that overwrite the uploaded budget: the guard reads its word as the prefix left it.
  const Program set_two{"iota_u32", {2, 0}};  // every word 2
  const Program clear{"fill_u32", {0}};
  struct Case {
    uint32_t budget, repeat, left, ran;
    const Program* prefix = nullptr;
  };
  // 64 and 130 cross the CUDA device's batches of iterations per graph launch. With set_two,
  // word[1] starts at 2 as well.
  for (const Case& c : {Case{3, 10, 0, 3}, Case{3, 2, 1, 2}, Case{0, 5, 0, 0},
                        Case{200, 150, 50, 150}, Case{130, 1000, 0, 130}, Case{64, 64, 0, 64},
                        Case{0, 5, 0, 2 + 2, &set_two}, Case{5, 5, 0, 0, &clear}}) {
    Resource word = this->Make(ToBytes(std::vector<uint32_t>{c.budget, 0}));
    const std::vector<Resource> bind = {word};
    std::vector<Step> prefix;
    if (c.prefix != nullptr) prefix.push_back({c.prefix, bind, std::nullopt});
    const std::vector<Step> repeated = {{&guard, bind, std::nullopt},
                                        {&spend, bind, std::nullopt},
                                        {&count_one, bind, std::nullopt}};
    std::vector<uint8_t> out;
    std::vector<std::vector<uint8_t>*> outs = {&out};
    const std::vector<ReadRange> reads = {{word, 0, 8}};
    const DeviceCounters before = this->Counters();
    ASSERT_OK(this->d().DispatchRepeatedSequenceReadRangesInto(prefix, repeated, c.repeat, reads,
                                                               absl::MakeSpan(outs)));
    const DeviceCounters after = this->Counters();
    EXPECT_EQ(after.synchronizations - before.synchronizations, 1u);
    EXPECT_THAT(FromBytes<uint32_t>(out), ElementsAre(c.left, c.ran))
        << "budget " << c.budget << ", repeat " << c.repeat << ", prefix "
        << (c.prefix != nullptr ? c.prefix->kernel : "none");
    EXPECT_OK(this->d().Free(word));
  }
}

TYPED_TEST_P(ConformanceTest, LoopGuardAnywhereButFirstRepeatedStepIsInvalidArgument) {
  Resource word = this->Make(ToBytes(std::vector<uint32_t>{5, 0}));
  const std::vector<Resource> bind = {word};
  const Program guard{"repeat_while_u32", {0}};
  const Program guard_past_end{"repeat_while_u32", {2}};
  const Program add{"atomic_add_u32", {1, 1}};
  const Step guard_step{&guard, bind, std::nullopt};
  const Step add_step{&add, bind, std::nullopt};
  std::vector<uint8_t> out;
  std::vector<std::vector<uint8_t>*> outs = {&out};
  const std::vector<ReadRange> reads = {{word, 0, 8}};
  const std::vector<Step> alone = {guard_step};
  const std::vector<Step> guard_second = {add_step, guard_step};
  const std::vector<Step> past_end = {{&guard_past_end, bind, std::nullopt}, add_step};
  EXPECT_THAT(this->d().Dispatch(guard, bind, std::nullopt), StatusIs(Code::kInvalidArgument));
  EXPECT_THAT(this->d().DispatchRepeatedSequenceReadRangesInto(alone, {&add_step, 1}, 3, reads,
                                                               absl::MakeSpan(outs)),
              StatusIs(Code::kInvalidArgument));
  EXPECT_THAT(this->d().DispatchRepeatedSequenceReadRangesInto({}, guard_second, 3, reads,
                                                               absl::MakeSpan(outs)),
              StatusIs(Code::kInvalidArgument));
  EXPECT_THAT(this->d().DispatchRepeatedSequenceReadRangesInto({}, past_end, 3, reads,
                                                               absl::MakeSpan(outs)),
              StatusIs(Code::kInvalidArgument));
  EXPECT_THAT(this->d().Dispatch(guard, bind, Grid{1, 1, 1}), StatusIs(Code::kInvalidArgument));
  EXPECT_THAT(FromBytes<uint32_t>(this->Read(word)), ElementsAre(5, 0)) << "nothing ran";
  // Alone in the group, the guard is valid and runs nothing.
  ASSERT_OK(this->d().DispatchRepeatedSequenceReadRangesInto({}, alone, 3, reads,
                                                             absl::MakeSpan(outs)));
  EXPECT_THAT(FromBytes<uint32_t>(out), ElementsAre(5, 0));
}

TYPED_TEST_P(ConformanceTest, OneBufferBoundTwiceIsRejectedWhereTheKernelWritesIt) {
  Resource a = this->Make(ToBytes(std::vector<uint32_t>{5, 1, 4, 2, 3, 0, 0, 0}));
  Resource b = this->Make(std::vector<uint8_t>(64, 0));
  Resource s = this->Make(std::vector<uint8_t>(1024 * 4, 0));
  const auto invalid = StatusIs(Code::kInvalidArgument);
  // sort_u64 would read the keys it is overwriting.
  EXPECT_THAT(this->d().Dispatch(Program{"sort_u64", {4, 64}}, std::vector<Resource>{a, a, s},
                                 std::nullopt),
              invalid);
  // compact_u32's output over its own values.
  EXPECT_THAT(this->d().Dispatch(Program{"compact_u32", {}},
                                 std::vector<Resource>{a, b, a, s, s, s}, std::nullopt),
              invalid);
  // copy_range_u32 within one buffer: disjoint ranges are fine, overlapping ones are not.
  EXPECT_THAT(this->d().Dispatch(Program{"copy_range_u32", {0, 2, 4}},
                                 std::vector<Resource>{a, a}, std::nullopt),
              invalid);
  EXPECT_THAT(FromBytes<uint32_t>(this->Read(a)), ElementsAre(5, 1, 4, 2, 3, 0, 0, 0))
      << "nothing ran";
  ASSERT_OK(this->d().Dispatch(Program{"copy_range_u32", {0, 4, 4}},
                               std::vector<Resource>{a, a}, std::nullopt));
  EXPECT_THAT(FromBytes<uint32_t>(this->Read(a)), ElementsAre(5, 1, 4, 2, 5, 1, 4, 2));
  // A scan in place is allowed by its contract.
  ASSERT_OK(this->d().Dispatch(Program{"exclusive_scan_u32", {}},
                               std::vector<Resource>{a, a, b, s}, std::nullopt));
  EXPECT_THAT(FromBytes<uint32_t>(this->Read(a)), ElementsAre(0, 5, 6, 10, 12, 17, 18, 22));
}

TYPED_TEST_P(ConformanceTest, CancelFromAnotherThreadEndsTheCallInFlightAndNotTheNext) {
  Resource counter = this->Make(std::vector<uint8_t>(4, 0));
  const std::vector<Resource> bind = {counter};
  const Program add{"atomic_add_u32", {0, 1}};
  const std::vector<Step> repeated = {{&add, bind, std::nullopt}};
  std::vector<uint8_t> out;
  std::vector<std::vector<uint8_t>*> outs = {&out};
  const std::vector<ReadRange> reads = {{counter, 0, 4}};
  // Hours of iterations: only a cancel ends it in time.
  absl::Status status;
  absl::Notification done;
  std::thread caller([&] {
    status = this->d().DispatchRepeatedSequenceReadRangesInto(
        {}, repeated, std::numeric_limits<uint32_t>::max(), reads, absl::MakeSpan(outs));
    done.Notify();
  });
  // A cancel reaches only a call already in flight: cancel until the call ends.
  const absl::Time give_up = absl::Now() + absl::Seconds(60);
  while (!done.WaitForNotificationWithTimeout(absl::Milliseconds(5)) && absl::Now() < give_up) {
    this->d().Cancel();
  }
  ASSERT_TRUE(done.HasBeenNotified()) << "the call ran on after 60 s of cancels";
  caller.join();
  EXPECT_THAT(status, StatusIs(absl::StatusCode::kCancelled));
  // The dispatcher goes on: the next call runs, and sees what the cancelled one left.
  const std::vector<Step> once = {{&add, bind, std::nullopt}};
  ASSERT_OK(this->d().DispatchSequenceReadRangesInto(once, reads, absl::MakeSpan(outs)));
  const uint32_t after = FromBytes<uint32_t>(out)[0];
  EXPECT_GE(after, 1u);
  EXPECT_LT(after, std::numeric_limits<uint32_t>::max());
  // A cancel with nothing in flight cancels nothing.
  this->d().Cancel();
  ASSERT_OK(this->d().DispatchSequenceReadRangesInto(once, reads, absl::MakeSpan(outs)));
  EXPECT_EQ(FromBytes<uint32_t>(out)[0], after + 1);
}

REGISTER_TYPED_TEST_SUITE_P(ConformanceTest, AllocateGivesExactlyTheRequestedZeroedBytes,
                            CancelFromAnotherThreadEndsTheCallInFlightAndNotTheNext,
                            ZeroLengthBuffersWork, UploadThenDownloadRoundTrips,
                            UploadShorterThanBufferWritesOnlyAPrefix,
                            UploadLongerThanBufferIsOutOfRangeAndChangesNothing,
                            AnUploadErrorNamesTheCallersRange,
                            AProgramRunsOnlyTheKernelVersionItIsPinnedTo,
                            UploadManyIsOneBatchWithOneSynchronization,
                            UploadManyChecksEveryUploadBeforeWritingAny,
                            UploadAtManyWritesTrueRangesInOneSynchronization,
                            OverflowingUploadOffsetsAreRejectedAndChangeNothing,
                            RangedReadOfFourBytesMovesFourBytes,
                            OverflowingReadRangesAreOutOfRange, IntoVariantsReuseCallerStorage,
                            DownloadRangesIntoReadsEveryRangeInOneSynchronization,
                            MismatchedOutputsAreInvalidArgument,
                            SpanReadsLandInCallerMemoryAndNowhereElse,
                            MismatchedSpanOutputsAreInvalidArgumentAndRunNothing,
                            FreeTwiceIsNotFound,
                            FreedAndDefaultResourcesAreNotFound,
                            ResourceOfAnotherDispatcherIsFailedPrecondition,
                            AbsurdAllocationsAreResourceExhausted,
                            BackendIdentityIsStableAndVersioned,
                            DispatchRunsAKernelOnResidentBuffers,
                            BadProgramsAreRejectedWithSpecificCodes,
                            GridOverrideSetsTheThreadCount, SequenceWithReadsSynchronizesOnce,
                            InvalidProgramAtStepThreeExecutesNothing,
                            RepeatedSequenceRunsTheGroupRepeatCountTimes,
                            EmptyRepeatedGroupRunsOnlyThePrefix,
                            PrefixRunsFirstThenTheGroupsStepsInOrderThenTheReads,
                            ABadReadRangeRefusesTheWholeCallBeforeAnyStepRuns,
                            LoopGuardEndsTheRepetitionOnceItsWordIsZero,
                            LoopGuardAnywhereButFirstRepeatedStepIsInvalidArgument,
                            OneBufferBoundTwiceIsRejectedWhereTheKernelWritesIt);

}  // namespace sluice::testing

#endif  // SLUICE_TESTS_CLIENT_CONFORMANCE_SUITE_H_
