#include "sluice/base/idle_work.h"

#include <sched.h>

#include <memory>
#include <new>
#include <optional>
#include <thread>
#include <utility>

#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"

namespace sluice {
namespace {

// Where the work ran: its thread's scheduling class, and that of a thread it started.
struct Classes {
  int own = -1;
  int started = -1;
};

TEST(IdleWorkTest, TheWorkRunsInTheIdleClassAndSoDoThreadsItStarts) {
  const int before = sched_getscheduler(0);
  IdleWork<Classes> work([] {
    Classes c;
    c.own = sched_getscheduler(0);
    std::thread([&c] { c.started = sched_getscheduler(0); }).join();
    return c;
  });
  std::optional<Classes> classes = work.Take(absl::Seconds(30));
  ASSERT_TRUE(classes.has_value());
  EXPECT_EQ(classes->own, SCHED_IDLE);
  EXPECT_EQ(classes->started, SCHED_IDLE);
  EXPECT_FALSE(work.Take().has_value()) << "a result is taken once";
  // The calling thread keeps its own class.
  EXPECT_EQ(sched_getscheduler(0), before);
}

TEST(IdleWorkTest, AResultIsWaitedForAtMostTheTimeGiven) {
  const auto go = std::make_shared<absl::Notification>();  // the work owns what it reads
  IdleWork<int> work([go] {
    go->WaitForNotification();
    return 7;
  });
  EXPECT_FALSE(work.done());
  EXPECT_EQ(work.Take(), std::nullopt) << "not done, no wait: nothing, at once";
  EXPECT_EQ(work.Take(absl::Milliseconds(20)), std::nullopt) << "not done within the wait";
  go->Notify();
  EXPECT_EQ(work.Take(absl::Seconds(30)), 7) << "done within the wait";
  EXPECT_TRUE(work.done());
}

TEST(IdleWorkTest, WorkNotDoneOutlivesItsOwner) {
  // The work waits on `go`, which it shares: it outlives the IdleWork, and owns what it
  // writes.
  const auto go = std::make_shared<absl::Notification>();
  const auto wrote = std::make_shared<absl::Notification>();
  const auto value = std::make_shared<int>(0);
  {
    IdleWork<int> work([go, wrote, value] {
      go->WaitForNotification();
      *value = 7;
      wrote->Notify();
      return 7;
    });
    EXPECT_EQ(work.Take(), std::nullopt);
  }  // its owner goes first
  go->Notify();
  ASSERT_TRUE(wrote->WaitForNotificationWithTimeout(absl::Seconds(30)));
  EXPECT_EQ(*value, 7);
}

TEST(IdleWorkTest, WorkThatThrowsEndsWithNoResult) {
  IdleWork<int> work([]() -> int { throw std::bad_alloc(); });
  EXPECT_EQ(work.Take(absl::Seconds(30)), std::nullopt);
  EXPECT_TRUE(work.done()) << "ended, with no result";
}

}  // namespace
}  // namespace sluice
