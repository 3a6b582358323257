#include "server/core/session.h"

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/core/cpu_device.h"
#include "tests/testing/status_matchers.h"

namespace sluice {
namespace {

using ::sluice::testing::StatusIs;
using Code = absl::StatusCode;

class SessionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK_AND_ASSIGN(device_, CpuDevice::Create({.memory_limit = 1 << 24}));
    ASSERT_OK_AND_ASSIGN(session_, Session::Create(device_, {}));
  }
  std::shared_ptr<CpuDevice> device_;
  std::unique_ptr<Session> session_;
};

TEST_F(SessionTest, ErrorsSayWhichStepAndBinding) {
  ASSERT_OK_AND_ASSIGN(uint64_t h, session_->Allocate(16));
  const std::vector<uint64_t> good = {h};
  const std::vector<uint64_t> bad = {h ^ 0x5555};
  const std::vector<uint64_t> value = {1};
  const std::vector<StepRef> prefix = {{"fill_u32", value, good, std::nullopt}};
  const std::vector<StepRef> repeated = {{"fill_u32", value, good, std::nullopt},
                                         {"fill_u32", value, bad, std::nullopt}};
  absl::Status status =
      session_->Execute(prefix, repeated, 1, {}, [](size_t, uint64_t) { return absl::Span<uint8_t>(); });
  EXPECT_THAT(status, StatusIs(Code::kNotFound));
  EXPECT_THAT(std::string(status.message()), ::testing::HasSubstr("repeated step 1 binding 0"));
}

TEST_F(SessionTest, ReadsBeyondTheByteLimitAreResourceExhausted) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Session> limited,
                       Session::Create(device_, {.max_read_bytes = 100}));
  ASSERT_OK_AND_ASSIGN(uint64_t h, limited->Allocate(80));
  std::vector<uint8_t> sink(200);
  const std::vector<RangeRef> reads = {{h, 0, 80}, {h, 0, 80}};
  EXPECT_THAT(limited->Read(reads, [&](size_t, uint64_t n) { return absl::MakeSpan(sink).subspan(0, n); }),
              StatusIs(Code::kResourceExhausted));
}

TEST_F(SessionTest, CancelStopsARepeatedSequenceAtAnIterationBoundary) {
  ASSERT_OK_AND_ASSIGN(uint64_t h, session_->Allocate(4));
  const std::vector<uint64_t> bind = {h};
  const std::vector<uint64_t> params = {0, 1};
  const std::vector<StepRef> repeated = {{"atomic_add_u32", params, bind, std::nullopt}};
  std::atomic<bool> cancel{true};
  absl::Status status = session_->Execute({}, repeated, 1000000, {},
                                          [](size_t, uint64_t) { return absl::Span<uint8_t>(); },
                                          &cancel);
  EXPECT_THAT(status, StatusIs(Code::kCancelled));
  uint32_t value = 1;
  const std::vector<RangeRef> reads = {{h, 0, 4}};
  ASSERT_OK(session_->Read(reads, [&](size_t, uint64_t) {
    return absl::MakeSpan(reinterpret_cast<uint8_t*>(&value), 4);
  }));
  EXPECT_EQ(value, 0u);
}

TEST_F(SessionTest, FreeDuringRunningWorkIsDeferredUntilTheWorkEnds) {
  // One thread runs long windows on a buffer while another frees it: the work completes on
  // valid memory and the memory returns afterwards.
  ASSERT_OK_AND_ASSIGN(uint64_t h, session_->Allocate(4096));
  const std::vector<uint64_t> bind = {h};
  const std::vector<uint64_t> params = {0, 1};
  const std::vector<StepRef> repeated = {{"atomic_add_u32", params, bind, std::nullopt}};
  std::atomic<bool> started{false};
  absl::Status run_status;
  std::thread runner([&] {
    started = true;
    run_status = session_->Execute({}, repeated, 200000, {},
                                   [](size_t, uint64_t) { return absl::Span<uint8_t>(); });
  });
  while (!started.load()) std::this_thread::yield();
  const absl::Status free_status = session_->Free(h);
  runner.join();
  // Either the free came first (the run saw NotFound) or it was deferred behind the run.
  if (free_status.ok()) {
    EXPECT_TRUE(run_status.ok() || run_status.code() == Code::kNotFound) << run_status;
  }
  EXPECT_EQ(device_->memory().used, 0u);
  EXPECT_EQ(session_->buffer_count(), 0u);
}

}  // namespace
}  // namespace sluice
