#include "sluice/engine/session.h"

#include <atomic>
#include <memory>
#include <thread>
#include <tuple>
#include <vector>

#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sluice/base/status_macros.h"
#include "sluice/engine/cpu_device.h"
#include "sluice/engine/session_manager.h"
#include "tests/testing/status_matchers.h"

namespace sluice {
namespace {

using ::sluice::testing::StatusIs;
using ::testing::HasSubstr;
using Code = absl::StatusCode;

// A CPU device whose streams can be lost, as a GPU's are when it is reset after a failure: the
// work runs on the real CPU device, and every stream reports Unavailable once `reset` is set.
// With `lose_on_allocate`, the next allocation sets it, as if the reset came during it.
class LosableDevice final : public Device {
 public:
  explicit LosableDevice(std::shared_ptr<CpuDevice> cpu) : cpu_(std::move(cpu)) {}

  std::atomic<bool> reset{false};
  std::atomic<bool> lose_on_allocate{false};
  std::atomic<bool> gone{false};  // lost for good: no new stream, lost() says so

  const DeviceInfo& info() const override { return cpu_->info(); }
  absl::StatusOr<DeviceBuffer> Allocate(uint64_t bytes) override {
    if (lose_on_allocate.exchange(false)) reset = true;
    return cpu_->Allocate(bytes);
  }
  void Free(DeviceBuffer buffer) override { cpu_->Free(buffer); }
  absl::StatusOr<std::unique_ptr<Stream>> CreateStream() override {
    if (gone) return absl::UnavailableError("the device could not be reset");
    ASSIGN_OR_RETURN(std::unique_ptr<Stream> stream, cpu_->CreateStream());
    return std::unique_ptr<Stream>(new LosableStream(std::move(stream), &reset));
  }
  MemoryInfo memory() const override { return cpu_->memory(); }
  DeviceCounters counters() const override { return cpu_->counters(); }
  bool lost() const override { return gone; }

 private:
  class LosableStream final : public Stream {
   public:
    LosableStream(std::unique_ptr<Stream> stream, const std::atomic<bool>* lost)
        : stream_(std::move(stream)), lost_(lost) {}
    absl::Status CopyIn(DeviceBuffer dst, uint64_t offset,
                        absl::Span<const uint8_t> src) override {
      return stream_->CopyIn(dst, offset, src);
    }
    absl::Status CopyOut(DeviceBuffer src, uint64_t offset, absl::Span<uint8_t> dst) override {
      return stream_->CopyOut(src, offset, dst);
    }
    absl::Status Launch(const PlannedStep& step, const Interrupt& interrupt) override {
      return stream_->Launch(step, interrupt);
    }
    absl::Status LaunchRepeated(absl::Span<const PlannedStep> steps, uint32_t count,
                                const Interrupt& interrupt) override {
      return stream_->LaunchRepeated(steps, count, interrupt);
    }
    absl::Status Synchronize() override { return stream_->Synchronize(); }
    absl::Status Usable() const override {
      if (lost_->load()) return absl::UnavailableError("the device was reset");
      return absl::OkStatus();
    }

   private:
    const std::unique_ptr<Stream> stream_;
    const std::atomic<bool>* const lost_;
  };

  const std::shared_ptr<CpuDevice> cpu_;
};

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
      session_->Execute(prefix, repeated, 1, {}, [](size_t, uint64_t, uint64_t) { return absl::Span<uint8_t>(); });
  EXPECT_THAT(status, StatusIs(Code::kNotFound));
  EXPECT_THAT(std::string(status.message()), ::testing::HasSubstr("repeated step 1 binding 0"));
}

// A step with more bindings or parameters than any kernel takes is refused on its counts,
// before its handles are looked up (each a pin), and CheckExecuteCounts refuses it the same.
TEST_F(SessionTest, AStepWithMoreBindingsOrParametersThanAnyKernelTakesIsRefusedOnItsCounts) {
  ASSERT_OK_AND_ASSIGN(uint64_t h, session_->Allocate(16));
  const std::vector<uint64_t> one = {h};
  const std::vector<uint64_t> value = {1};
  const std::vector<uint64_t> unknown(kMaxBindings + 1, h ^ 0x5555);
  const std::vector<uint64_t> many_params(kMaxParams + 1, 1);
  const auto none = [](size_t, uint64_t, uint64_t) { return absl::Span<uint8_t>(); };
  const std::vector<StepRef> fine = {{"fill_u32", value, one, std::nullopt}};
  const std::vector<StepRef> bound = {{"fill_u32", value, unknown, std::nullopt}};
  const std::vector<StepRef> passed = {{"fill_u32", many_params, one, std::nullopt}};
  EXPECT_THAT(session_->Execute(fine, bound, 1, {}, none),
              StatusIs(Code::kInvalidArgument,
                       HasSubstr("repeated step 0: 65 bindings and 1 parameters; no kernel "
                                 "takes more than 64 and 8")));
  EXPECT_THAT(session_->Execute(passed, {}, 0, {}, none),
              StatusIs(Code::kInvalidArgument, HasSubstr("prefix step 0: 1 bindings and 9")));
  // As many as a kernel may take: looked up, and the unknown handle found.
  const std::vector<uint64_t> most(kMaxBindings, h ^ 0x5555);
  const std::vector<StepRef> at_most = {{"fill_u32", value, most, std::nullopt}};
  EXPECT_THAT(session_->Execute(at_most, {}, 0, {}, none), StatusIs(Code::kNotFound));
  const auto counts = [&](size_t s) {
    return s == 0 ? std::pair<uint64_t, uint64_t>{1, 1}
                  : std::pair<uint64_t, uint64_t>{kMaxBindings + 1, 1};
  };
  EXPECT_THAT(session_->CheckExecuteCounts(1, 1, 0, counts),
              StatusIs(Code::kInvalidArgument, HasSubstr("repeated step 0: 65 bindings")));
  EXPECT_OK(session_->CheckExecuteCounts(1, 0, 0, counts));
}

TEST_F(SessionTest, ReadsBeyondTheByteLimitAreResourceExhausted) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Session> limited,
                       Session::Create(device_, {.max_read_bytes = 100}));
  ASSERT_OK_AND_ASSIGN(uint64_t h, limited->Allocate(80));
  std::vector<uint8_t> sink(200);
  const std::vector<RangeRef> reads = {{h, 0, 80}, {h, 0, 80}};
  EXPECT_THAT(limited->Read(reads, [&](size_t, uint64_t, uint64_t n) { return absl::MakeSpan(sink).subspan(0, n); }),
              StatusIs(Code::kResourceExhausted));
}

TEST_F(SessionTest, ASinkMayTakeEachReadInPieces) {
  ASSERT_OK_AND_ASSIGN(uint64_t h, session_->Allocate(40));
  const std::vector<uint64_t> bind = {h};
  const std::vector<uint64_t> iota = {0, 1};
  ASSERT_OK(session_->Execute({{"iota_u32", iota, bind, std::nullopt}}, {}, 0, {},
                              [](size_t, uint64_t, uint64_t) { return absl::Span<uint8_t>(); }));
  // Two reads laid end to end in pieces of at most 3 bytes: 7 + 10 bytes.
  const std::vector<RangeRef> reads = {{h, 1, 7}, {h, 20, 10}};
  std::vector<uint8_t> out(17);
  std::vector<std::tuple<size_t, uint64_t, uint64_t>> asked;
  ASSERT_OK(session_->Read(reads, [&](size_t i, uint64_t offset, uint64_t length) {
    asked.emplace_back(i, offset, length);
    const uint64_t at = (i == 0 ? 0 : 7) + offset;
    return absl::MakeSpan(out).subspan(at, std::min<uint64_t>(length, 3));
  }));
  EXPECT_EQ(asked.size(), 3u + 4u);
  EXPECT_EQ(asked[1], std::make_tuple(size_t{0}, uint64_t{3}, uint64_t{4}));
  std::vector<uint8_t> expected;
  for (uint64_t byte = 1; byte < 8; ++byte) expected.push_back(byte % 4 == 0 ? byte / 4 : 0);
  for (uint64_t byte = 20; byte < 30; ++byte) expected.push_back(byte % 4 == 0 ? byte / 4 : 0);
  EXPECT_EQ(out, expected);
  // A sink that covers nothing is an internal error, not a loop.
  EXPECT_THAT(session_->Read(reads, [](size_t, uint64_t, uint64_t) { return absl::Span<uint8_t>(); }),
              StatusIs(Code::kInternal));
}

TEST_F(SessionTest, CancelStopsARepeatedSequenceAtAnIterationBoundary) {
  ASSERT_OK_AND_ASSIGN(uint64_t h, session_->Allocate(4));
  const std::vector<uint64_t> bind = {h};
  const std::vector<uint64_t> params = {0, 1};
  const std::vector<StepRef> repeated = {{"atomic_add_u32", params, bind, std::nullopt}};
  std::atomic<bool> cancel{true};
  absl::Status status = session_->Execute({}, repeated, 1000000, {},
                                          [](size_t, uint64_t, uint64_t) { return absl::Span<uint8_t>(); },
                                          Interrupt(&cancel, nullptr));
  EXPECT_THAT(status, StatusIs(Code::kCancelled));
  uint32_t value = 1;
  const std::vector<RangeRef> reads = {{h, 0, 4}};
  ASSERT_OK(session_->Read(reads, [&](size_t, uint64_t, uint64_t) {
    return absl::MakeSpan(reinterpret_cast<uint8_t*>(&value), 4);
  }));
  EXPECT_EQ(value, 0u);
}

TEST_F(SessionTest, ARequestPastItsDeadlineStopsInsideALongStep) {
  // 128M elements (512 MiB): filling them takes far longer than the millisecond allowed, and
  // the CPU device checks the deadline between chunks of the pass.
  constexpr uint64_t kElements = uint64_t{128} << 20;
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<CpuDevice> device,
                       CpuDevice::Create({.memory_limit = kElements * 4}));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Session> session, Session::Create(device, {}));
  ASSERT_OK_AND_ASSIGN(uint64_t h, session->Allocate(kElements * 4));
  const std::vector<uint64_t> bind = {h};
  const std::vector<uint64_t> params = {7};
  const std::vector<StepRef> prefix = {{"fill_u32", params, bind, std::nullopt}};
  const absl::Status status = session->Execute(
      prefix, {}, 0, {}, [](size_t, uint64_t, uint64_t) { return absl::Span<uint8_t>(); },
      Interrupt(nullptr, nullptr, absl::Now() + absl::Milliseconds(1)));
  EXPECT_THAT(status, StatusIs(Code::kDeadlineExceeded,
                               HasSubstr("prefix step 0: the request ran past its time limit")));
  // It stopped part-way: the last element was never reached.
  uint32_t last = 1;
  const std::vector<RangeRef> reads = {{h, (kElements - 1) * 4, 4}};
  ASSERT_OK(session->Read(reads, [&](size_t, uint64_t, uint64_t) {
    return absl::MakeSpan(reinterpret_cast<uint8_t*>(&last), 4);
  }));
  EXPECT_EQ(last, 0u);
}

// A BFS step whose data keeps each thread looping: one node with `edges` edges to itself,
// named `threads` times in the frontier (visited already, so no thread writes anything but
// the visited word). A pass looks for a stop between its threads, and each thread here takes
// `edges` steps: with a frontier of 65,536, a pool task of 4,096 threads takes minutes. The
// request may run for `allowed`; how long it ran goes to `*ran`.
absl::Status RunLoopingBfs(Session& session, uint32_t threads, uint32_t edges,
                           absl::Duration allowed, absl::Duration* ran) {
  const std::vector<uint32_t> rows = {0, edges};
  const std::vector<uint32_t> columns(edges, 0);
  const std::vector<uint32_t> visited = {1}, levels = {0}, next = {0};
  const std::vector<uint32_t> frontier(threads, 0);
  const std::vector<uint32_t> state = {threads, 0, 0, 0};
  const std::vector<const std::vector<uint32_t>*> bindings = {&rows,     &columns, &visited,
                                                               &levels,   &frontier, &next,
                                                               &state};
  std::vector<uint64_t> handles;
  std::vector<RangeRef> ranges;
  for (const std::vector<uint32_t>* b : bindings) {
    ASSIGN_OR_RETURN(uint64_t h, session.Allocate(4 * b->size()));
    handles.push_back(h);
    ranges.push_back({h, 0, 4 * b->size()});
  }
  RETURN_IF_ERROR(session.Write(ranges, [&](size_t i, uint64_t, uint64_t) {
    return absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(bindings[i]->data()),
                               4 * bindings[i]->size());
  }));
  const std::vector<StepRef> prefix = {{"bfs_expand", {}, handles, std::nullopt}};
  const absl::Time started = absl::Now();
  const absl::Status status = session.Execute(
      prefix, {}, 0, {}, [](size_t, uint64_t, uint64_t) { return absl::Span<uint8_t>(); },
      Interrupt(nullptr, nullptr, started + allowed));
  *ran = absl::Now() - started;
  return status;
}

TEST_F(SessionTest, ARequestPastItsDeadlineStopsInsideAThreadWhoseDataKeepsItLooping) {
  constexpr uint32_t kEdges = uint32_t{16} << 20;  // 64 MiB of edges
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<CpuDevice> device,
                       CpuDevice::Create({.memory_limit = uint64_t{80} << 20}));
  // 16 threads: one pool task, whose threads all stop early, and which then counts as run;
  // 65,536: many tasks, each of them minutes long but for the stop.
  for (const uint32_t threads : {16u, 65536u}) {
    SCOPED_TRACE(threads);
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<Session> session, Session::Create(device, {}));
    absl::Duration ran;
    EXPECT_THAT(RunLoopingBfs(*session, threads, kEdges, absl::Milliseconds(100), &ran),
                StatusIs(Code::kDeadlineExceeded,
                         HasSubstr("prefix step 0: the request ran past its time limit")));
    EXPECT_LT(ran, absl::Seconds(30));
  }
}

TEST_F(SessionTest, ACancelledRequestRunsNoStepAndSaysWhich) {
  ASSERT_OK_AND_ASSIGN(uint64_t h, session_->Allocate(64));
  const std::vector<uint64_t> bind = {h};
  const std::vector<uint64_t> params = {7};
  const std::vector<StepRef> prefix = {{"fill_u32", params, bind, std::nullopt},
                                       {"fill_u32", params, bind, std::nullopt}};
  std::atomic<bool> cancelled{true};
  const absl::Status status = session_->Execute(
      prefix, {}, 0, {}, [](size_t, uint64_t, uint64_t) { return absl::Span<uint8_t>(); },
      Interrupt(nullptr, &cancelled));
  EXPECT_THAT(status, StatusIs(Code::kCancelled, HasSubstr("prefix step 0: cancelled")));
  uint32_t first = 1;
  const std::vector<RangeRef> reads = {{h, 0, 4}};
  ASSERT_OK(session_->Read(reads, [&](size_t, uint64_t, uint64_t) {
    return absl::MakeSpan(reinterpret_cast<uint8_t*>(&first), 4);
  }));
  EXPECT_EQ(first, 0u);
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
                                   [](size_t, uint64_t, uint64_t) { return absl::Span<uint8_t>(); });
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

TEST(SessionOnALosableDeviceTest, ASessionWhoseStreamIsLostCannotAllocate) {
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<CpuDevice> cpu, CpuDevice::Create({}));
  auto device = std::make_shared<LosableDevice>(cpu);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Session> session, Session::Create(device, {}));
  ASSERT_OK(session->Allocate(64).status());
  device->reset = true;
  EXPECT_THAT(session->Allocate(64), StatusIs(Code::kUnavailable, HasSubstr("reset")));
  EXPECT_EQ(session->buffer_count(), 1u);
  EXPECT_EQ(cpu->memory().used, 64u);
}

TEST(SessionOnALosableDeviceTest, AStreamLostDuringTheAllocationTakesNoMemory) {
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<CpuDevice> cpu, CpuDevice::Create({}));
  auto device = std::make_shared<LosableDevice>(cpu);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Session> session, Session::Create(device, {}));
  device->lose_on_allocate = true;
  EXPECT_THAT(session->Allocate(64), StatusIs(Code::kUnavailable, HasSubstr("reset")));
  EXPECT_EQ(session->buffer_count(), 0u);
  EXPECT_EQ(cpu->memory().used, 0u);
}

TEST(SessionOnALosableDeviceTest, ADeviceLostForGoodIsReportedOnceToTheManagersOwner) {
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<CpuDevice> cpu, CpuDevice::Create({}));
  auto device = std::make_shared<LosableDevice>(cpu);
  int reported = 0;
  SessionManager manager(device, {.on_device_lost = [&] { ++reported; }});
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<SessionManager::Ticket> before, manager.Open());
  EXPECT_EQ(reported, 0);
  device->gone = true;
  for (int i = 0; i < 3; ++i) {
    EXPECT_THAT(manager.Open(), StatusIs(Code::kUnavailable, HasSubstr("could not be reset")));
  }
  EXPECT_EQ(reported, 1);
  EXPECT_EQ(manager.active_sessions(), 1u) << "refused opens hold no slot";
}

TEST_F(SessionTest, AllocateDoesNotWaitForRunningWork) {
  // A repeated sequence of four billion iterations (tens of seconds at least) runs until it is
  // cancelled; an allocation made meanwhile completes, within a generous 10 s, while it still
  // runs.
  ASSERT_OK_AND_ASSIGN(uint64_t h, session_->Allocate(4));
  const std::vector<uint64_t> bind = {h};
  const std::vector<uint64_t> params = {0, 1};
  const std::vector<StepRef> repeated = {{"atomic_add_u32", params, bind, std::nullopt}};
  std::atomic<bool> cancel{false};
  absl::Status run_status;
  const uint64_t launches = device_->counters().launches;
  std::thread runner([&] {
    run_status = session_->Execute({}, repeated, 4000000000u, {},
                                   [](size_t, uint64_t, uint64_t) { return absl::Span<uint8_t>(); },
                                   Interrupt(&cancel, nullptr));
  });
  // The sequence is running once the device counts its launches (bounded wait).
  const absl::Time deadline = absl::Now() + absl::Seconds(60);
  while (device_->counters().launches == launches && absl::Now() < deadline) {
    std::this_thread::yield();
  }
  if (device_->counters().launches == launches) {
    cancel = true;
    runner.join();
    FAIL() << "the sequence never started";
  }
  absl::Notification allocated;
  absl::StatusOr<uint64_t> second;
  std::thread allocator([&] {
    second = session_->Allocate(4);
    allocated.Notify();
  });
  const bool in_time = allocated.WaitForNotificationWithTimeout(absl::Seconds(10));
  cancel = true;
  runner.join();
  allocator.join();
  EXPECT_TRUE(in_time) << "the allocation waited for the running sequence";
  EXPECT_OK(second.status());
  // Still running when the allocation returned: only the cancellation ended it.
  EXPECT_THAT(run_status, StatusIs(Code::kCancelled));
}

}  // namespace
}  // namespace sluice
