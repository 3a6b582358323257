#include "engine/session_manager.h"

#include <memory>
#include <string>
#include <vector>

#include "base/status_macros.h"
#include "engine/cpu_device.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace sluice {
namespace {

using ::sluice::testing::StatusIs;
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
  EXPECT_OK(big.Check());

  const SessionManager::Options small = zeros.FollowMachine(1 * kGiB, 512 * kMiB);
  EXPECT_EQ(small.limits.memory_quota, 512 * kMiB);
  EXPECT_EQ(small.max_transfer_bytes, 256 * kMiB) << "at least 256M";
  EXPECT_EQ(small.limits.max_request_bytes, 256 * kMiB - small.max_chunk_size)
      << "the largest read fits the transfer budget beside a chunk";
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

  given.limits.max_request_bytes = 64 * kMiB;
  EXPECT_THAT(given.Check(),
              StatusIs(Code::kInvalidArgument, HasSubstr("--max_transfer_bytes (67108864)")));
}

TEST_F(SessionManagerTest, TheManagerResolvesItsOptionsForItsDevice) {
  SessionManager::Options options;
  options.limits.memory_quota = 0;
  SessionManager manager(device_, options);
  EXPECT_EQ(manager.options().limits.memory_quota, 128 * kMiB);
  EXPECT_EQ(manager.options().client_memory, 128 * kMiB);
  EXPECT_NE(manager.transfers().limit(), 0u);
}

}  // namespace
}  // namespace sluice
