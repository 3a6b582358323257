#include "sluice/base/executor.h"

#include <atomic>
#include <thread>

#include "absl/synchronization/blocking_counter.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"

namespace sluice {
namespace {

constexpr absl::Duration kBound = absl::Seconds(10);

TEST(ExecutorTest, StartsNoThreadUntilThereIsWork) {
  Executor executor(8);
  EXPECT_EQ(executor.threads(), 0);
  absl::Notification done;
  executor.Schedule([&] { done.Notify(); });
  ASSERT_TRUE(done.WaitForNotificationWithTimeout(kBound));
  EXPECT_EQ(executor.threads(), 1);
}

TEST(ExecutorTest, ATaskNeverWaitsBehindBusyThreadsWhileThreadsAreLeft) {
  // Six tasks that each wait for all six to be running: each counts only if every one of them
  // got a thread of its own. With a fixed pool of four the first four would time out before
  // the last two ran (so the wait below is bounded either way).
  constexpr int kTasks = 6;
  std::atomic<int> finished{0};
  {
    Executor executor(kTasks);
    absl::BlockingCounter running(kTasks);
    absl::Notification all_running;
    for (int i = 0; i < kTasks; ++i) {
      executor.Schedule([&] {
        running.DecrementCount();
        if (all_running.WaitForNotificationWithTimeout(kBound)) finished.fetch_add(1);
      });
    }
    running.Wait();
    all_running.Notify();
    EXPECT_EQ(executor.threads(), kTasks);
  }  // the destructor lets the tasks finish
  EXPECT_EQ(finished.load(), kTasks);
}

TEST(ExecutorTest, NeverStartsMoreThanItsLimitAndRunsEverythingScheduled) {
  std::atomic<int> ran{0};
  {
    Executor executor(2);
    absl::Notification release;
    for (int i = 0; i < 100; ++i) {
      executor.Schedule([&] {
        release.WaitForNotificationWithTimeout(kBound);
        ran.fetch_add(1);
      });
    }
    EXPECT_EQ(executor.threads(), 2);
    release.Notify();
  }  // the destructor runs what is queued, then joins
  EXPECT_EQ(ran.load(), 100);
}

}  // namespace
}  // namespace sluice
