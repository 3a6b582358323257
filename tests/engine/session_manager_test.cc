#include "sluice/engine/session_manager.h"

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sluice/base/status_macros.h"
#include "sluice/engine/cpu_device.h"
#include "tests/testing/status_matchers.h"

namespace sluice {
namespace {

using ::sluice::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;
using Code = absl::StatusCode;
using Ticket = std::unique_ptr<SessionManager::Ticket>;

constexpr uint64_t kMiB = uint64_t{1} << 20;
constexpr uint64_t kGiB = uint64_t{1} << 30;

class SessionManagerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK_AND_ASSIGN(device_, CpuDevice::Create({.memory_limit = 256 * kMiB, .threads = 1}));
  }
  std::shared_ptr<CpuDevice> device_;
};

TEST_F(SessionManagerTest, OneClientHoldsAtMostItsShareOfSessions) {
  SessionManager manager(device_, {.max_sessions = 8, .max_sessions_per_client = 3});
  std::vector<Ticket> greedy;
  for (int i = 0; i < 3; ++i) {
    ASSERT_OK_AND_ASSIGN(Ticket t, manager.Open("host\ngreedy"));
    greedy.push_back(std::move(t));
  }
  EXPECT_THAT(manager.Open("host\ngreedy"),
              StatusIs(Code::kResourceExhausted, HasSubstr("--max_sessions_per_client")));
  EXPECT_EQ(manager.client_sessions("host\ngreedy"), 3u);
  EXPECT_EQ(manager.active_sessions(), 3u) << "a refused open holds no slot";

  // Another name, or the same name from another host, is another client.
  ASSERT_OK_AND_ASSIGN(Ticket other, manager.Open("host\nmodest"));
  ASSERT_OK_AND_ASSIGN(Ticket elsewhere, manager.Open("other-host\ngreedy"));
  EXPECT_EQ(manager.client_sessions("host\nmodest"), 1u);

  // A closed session gives its client the slot back.
  greedy.pop_back();
  EXPECT_EQ(manager.client_sessions("host\ngreedy"), 2u);
  ASSERT_OK(manager.Open("host\ngreedy").status());
  greedy.clear();
  EXPECT_EQ(manager.client_sessions("host\ngreedy"), 0u);
}

TEST_F(SessionManagerTest, TheDefaultShareIsAQuarterOfTheSessionsAndAtLeastOne) {
  EXPECT_EQ((SessionManager::Options{.max_sessions = 256}).SessionsPerClient(), 64u);
  EXPECT_EQ((SessionManager::Options{.max_sessions = 3}).SessionsPerClient(), 1u);
  EXPECT_EQ((SessionManager::Options{.max_sessions = 3, .max_sessions_per_client = 5})
                .SessionsPerClient(),
            5u);
}

TEST_F(SessionManagerTest, AClientsSessionsShareOneMemoryQuota) {
  SessionManager::Options options{.max_sessions = 8, .client_memory = 10 * kMiB};
  options.limits.memory_quota = 8 * kMiB;
  SessionManager manager(device_, options);
  ASSERT_OK_AND_ASSIGN(Ticket a, manager.Open("h\nheavy"));
  ASSERT_OK_AND_ASSIGN(Ticket b, manager.Open("h\nheavy"));
  ASSERT_OK_AND_ASSIGN(Ticket c, manager.Open("h\nlight"));
  ASSERT_OK_AND_ASSIGN(uint64_t in_a, a->session().Allocate(6 * kMiB));
  EXPECT_THAT(b->session().Allocate(6 * kMiB),
              StatusIs(Code::kResourceExhausted, HasSubstr("the client's memory quota")));
  EXPECT_EQ(b->session().buffer_count(), 0u);
  EXPECT_EQ(device_->memory().used, 6 * kMiB) << "the refused allocation took nothing";
  ASSERT_OK(b->session().Allocate(4 * kMiB).status());
  // Another client has its own quota.
  ASSERT_OK(c->session().Allocate(8 * kMiB).status());
  EXPECT_THAT(b->session().Allocate(1 * kMiB),
              StatusIs(Code::kResourceExhausted, HasSubstr("the client's memory quota")));
  // What a session frees, or what a closed session held, is the client's again.
  ASSERT_OK(a->session().Free(in_a));
  ASSERT_OK(b->session().Allocate(4 * kMiB).status());
  b.reset();
  ASSERT_OK(a->session().Allocate(8 * kMiB).status());
}

TEST_F(SessionManagerTest, ZerosFollowTheMachine) {
  SessionManager::Options zeros;
  zeros.limits.memory_quota = 0;
  zeros.limits.max_request_bytes = 0;
  const SessionManager::Options big = zeros.FollowMachine(80 * kGiB, 512 * kGiB);
  EXPECT_EQ(big.limits.memory_quota, 40 * kGiB) << "half of the device";
  EXPECT_EQ(big.client_memory, 40 * kGiB) << "as a session";
  EXPECT_EQ(big.max_sessions_per_client, 64u);
  EXPECT_EQ(big.max_transfer_bytes, 8 * kGiB) << "a quarter of the host, at most 8G";
  EXPECT_EQ(big.limits.max_request_bytes, 4 * kGiB);
  EXPECT_EQ(big.client_transfer_bytes, 4 * kGiB + big.max_chunk_size)
      << "half the budget, but room for the largest request";
  EXPECT_OK(big.Check());

  const SessionManager::Options small = zeros.FollowMachine(1 * kGiB, 512 * kMiB);
  EXPECT_EQ(small.limits.memory_quota, 512 * kMiB);
  EXPECT_EQ(small.max_transfer_bytes, 256 * kMiB) << "at least 256M";
  EXPECT_EQ(small.limits.max_request_bytes, 256 * kMiB - small.max_chunk_size)
      << "the largest read fits the transfer budget beside a chunk";
  EXPECT_EQ(small.client_transfer_bytes, 256 * kMiB) << "all of it: the largest read needs it";
  EXPECT_OK(small.Check());

  const SessionManager::Options mid = zeros.FollowMachine(16 * kGiB, 8 * kGiB);
  EXPECT_EQ(mid.max_transfer_bytes, 2 * kGiB);
  EXPECT_EQ(mid.limits.max_request_bytes, 2 * kGiB - mid.max_chunk_size);

  // What was given stays.
  SessionManager::Options given{.client_memory = 3 * kMiB, .max_transfer_bytes = 64 * kMiB};
  given.limits.memory_quota = 5 * kMiB;
  given.limits.max_request_bytes = 16 * kMiB;
  const SessionManager::Options kept = given.FollowMachine(80 * kGiB, 512 * kGiB);
  EXPECT_EQ(kept.limits.memory_quota, 5 * kMiB);
  EXPECT_EQ(kept.client_memory, 3 * kMiB);
  EXPECT_EQ(kept.max_transfer_bytes, 64 * kMiB);
  EXPECT_EQ(kept.limits.max_request_bytes, 16 * kMiB);
  EXPECT_EQ(kept.client_transfer_bytes, 32 * kMiB) << "half the budget";
  SessionManager::Options narrow = kept;
  narrow.client_transfer_bytes = 16 * kMiB;
  EXPECT_THAT(narrow.Check(), StatusIs(Code::kInvalidArgument,
                                       HasSubstr("--client_transfer_bytes (16777216)")));

  given.limits.max_request_bytes = 64 * kMiB;
  EXPECT_THAT(given.Check(),
              StatusIs(Code::kInvalidArgument, HasSubstr("--max_transfer_bytes (67108864)")));
}

// A read's replies hold their bytes and kReplyOverheadBytes each, two windows of them at most
// where the read streams: with small chunks and a small --max_chunk_size, more than the
// request's bytes and a chunk, and the budgets must hold that much.
TEST_F(SessionManagerTest, TheLargestRequestIsAReadsRepliesWhereTheyHoldMore) {
  EXPECT_EQ(ReplyBytes(0, 4096), kReplyOverheadBytes) << "an empty read's one reply";
  EXPECT_EQ(ReplyBytes(4097, 4096), 4097 + 2 * kReplyOverheadBytes);
  EXPECT_EQ(ReadWindowBytes(4096), 8 * kMiB);
  EXPECT_EQ(ReadWindowBytes(3 * kMiB), 6 * kMiB) << "whole chunks";
  EXPECT_EQ(ReadWindowBytes(64 * kMiB), 64 * kMiB) << "one chunk at least";
  EXPECT_EQ(ReadHoldBytes(4 * kGiB, 4096), 16 * kMiB + 4096 * kReplyOverheadBytes)
      << "two windows";
  EXPECT_EQ(ReadHoldBytes(5 * kMiB, 1 * kMiB), 5 * kMiB + 5 * kReplyOverheadBytes);

  SessionManager::Options options{.max_chunk_size = 4096, .max_transfer_bytes = 64 * kMiB,
                                  .client_transfer_bytes = 64 * kMiB};
  options.limits.max_request_bytes = 16 * kMiB;
  EXPECT_EQ(options.LargestRequestBytes(), 18 * kMiB);
  options.client_transfer_bytes = 18 * kMiB - 1;
  EXPECT_THAT(options.Check(),
              StatusIs(Code::kInvalidArgument,
                       AllOf(HasSubstr("--client_transfer_bytes (18874367)"),
                             HasSubstr("at least 18874368"), HasSubstr("4096-byte chunks"))));
  options.client_transfer_bytes = 18 * kMiB;
  EXPECT_OK(options.Check());
  options.max_chunk_size = 2 << 20;  // the default: a request's bytes and a chunk are more
  EXPECT_EQ(options.LargestRequestBytes(), 18 * kMiB);
  options.max_chunk_size = 4 << 20;
  EXPECT_EQ(options.LargestRequestBytes(), 20 * kMiB);
  EXPECT_THAT(options.Check(), StatusIs(Code::kInvalidArgument,
                                        HasSubstr("--client_transfer_bytes (18874368)")));

  // A request limit left to follow a small budget is the most the budget holds as the largest
  // request: here a read's replies in 4 KiB chunks, an eighth over its bytes.
  SessionManager::Options small{.max_chunk_size = 64 << 10, .max_transfer_bytes = 16 * kMiB};
  small.limits.max_request_bytes = 0;
  const SessionManager::Options followed = small.FollowMachine(kGiB, 8 * kGiB);
  EXPECT_LE(followed.LargestRequestBytes(), 16 * kMiB);
  EXPECT_GT(followed.limits.max_request_bytes, 14 * kMiB);
  EXPECT_LT(followed.limits.max_request_bytes, 16 * kMiB - (64 << 10));
  EXPECT_OK(followed.Check());
}

TEST_F(SessionManagerTest, TheManagerResolvesItsOptionsForItsDevice) {
  SessionManager::Options options;
  options.limits.memory_quota = 0;
  SessionManager manager(device_, options);
  EXPECT_EQ(manager.options().limits.memory_quota, 128 * kMiB);
  EXPECT_EQ(manager.options().client_memory, 128 * kMiB);
  EXPECT_NE(manager.transfers().limit(), 0u);
}

// Reads one u32 of `h` at element `index`.
uint32_t ReadU32(Session& session, uint64_t h, uint64_t index) {
  uint32_t value = 0;
  const std::vector<RangeRef> ranges = {{h, index * 4, 4}};
  const absl::Status status = session.Read(ranges, [&](size_t, uint64_t, uint64_t) {
    return absl::MakeSpan(reinterpret_cast<uint8_t*>(&value), 4);
  });
  EXPECT_TRUE(status.ok()) << status;
  return value;
}

TEST(SessionManagerShareTest, AClientsSmallWorkRunsWhileAnotherClientsLongWorkPausesAndResumes) {
  // Two worker threads; device time is shared out by client in 1 ms holds.
  constexpr uint64_t kElements = uint64_t{16} << 20;
  constexpr uint32_t kAdds = uint32_t{1} << 20;
  constexpr uint32_t kIterations = 40;
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<CpuDevice> device,
                       CpuDevice::Create({.memory_limit = 256 * kMiB, .threads = 2}));
  SessionManager manager(device, {.share_quantum = absl::Milliseconds(1)});
  ASSERT_OK_AND_ASSIGN(Ticket heavy, manager.Open("host\nheavy"));
  ASSERT_OK_AND_ASSIGN(Ticket light, manager.Open("host\nlight"));
  ASSERT_OK_AND_ASSIGN(uint64_t out, heavy->session().Allocate(kElements * 4));
  ASSERT_OK_AND_ASSIGN(uint64_t counter, heavy->session().Allocate(4));
  ASSERT_OK_AND_ASSIGN(uint64_t mine, light->session().Allocate(4));

  // The heavy client: each iteration writes 16M elements and makes 1M atomic adds, passes that
  // are paused part-way and resumed. A pass resumed at the wrong place, or run twice, would
  // leave a wrong element or a wrong count.
  const std::vector<uint64_t> out_bind = {out};
  const std::vector<uint64_t> counter_bind = {counter};
  const std::vector<uint64_t> iota = {3, 5};
  const std::vector<uint64_t> add_one = {0, 1};
  const std::vector<StepRef> repeated = {
      {"iota_u32", iota, out_bind, std::nullopt},
      {"atomic_add_u32", add_one, counter_bind, Grid{kAdds, 1, 1}}};
  const uint64_t launches_before = device->counters().launches;
  std::atomic<bool> heavy_done{false};
  absl::Status heavy_status;
  std::thread heavy_work([&] {
    heavy_status = heavy->session().Execute({}, repeated, kIterations, {},
                                            [](size_t, uint64_t, uint64_t) {
                                              return absl::Span<uint8_t>();
                                            });
    heavy_done = true;
  });

  // Once the heavy work runs, the light client's small requests each get the device within a
  // quantum or so, long before the heavy work ends.
  const absl::Time until = absl::Now() + absl::Seconds(60);
  while (device->counters().launches == launches_before && absl::Now() < until) {
    std::this_thread::yield();
  }
  const std::vector<uint64_t> mine_bind = {mine};
  for (uint32_t i = 1; i <= 5; ++i) {
    const std::vector<uint64_t> value = {i};
    const std::vector<StepRef> fill = {{"fill_u32", value, mine_bind, std::nullopt}};
    ASSERT_OK(light->session().Execute(fill, {}, 0, {}, [](size_t, uint64_t, uint64_t) {
      return absl::Span<uint8_t>();
    }));
  }
  EXPECT_FALSE(heavy_done.load()) << "the light client waited for the heavy one to finish";
  EXPECT_EQ(ReadU32(light->session(), mine, 0), 5u);

  heavy_work.join();
  ASSERT_OK(heavy_status);
  EXPECT_EQ(ReadU32(heavy->session(), counter, 0), kAdds * kIterations);
  for (uint64_t i : {uint64_t{0}, uint64_t{4095}, uint64_t{4096}, kElements / 2 + 12345,
                     kElements - 1}) {
    EXPECT_EQ(ReadU32(heavy->session(), out, i), static_cast<uint32_t>(3 + 5 * i)) << i;
  }
  EXPECT_GE(manager.device_share().holds(), 3u) << "the device changed hands";
}

}  // namespace
}  // namespace sluice
