#include "sluice/base/fair_share.h"

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"

namespace sluice {
namespace {

bool Never() { return false; }

// Waits, within a bound, for `done`; true if it came.
template <typename Fn>
bool Within(absl::Duration bound, Fn done) {
  const absl::Time until = absl::Now() + bound;
  while (!done()) {
    if (absl::Now() > until) return false;
    std::this_thread::yield();
  }
  return true;
}

TEST(FairShareTest, ATurnWithoutAMemberNeverWaits) {
  FairShare::Turn turn(nullptr);
  EXPECT_TRUE(turn.Acquire(Never));
  EXPECT_FALSE(turn.ShouldYield());
  EXPECT_TRUE(turn.Yield(Never));
}

TEST(FairShareTest, AMemberAloneHoldsTheDeviceAndIsNeverAskedToYield) {
  FairShare share(absl::ZeroDuration());
  std::shared_ptr<FairShare::Member> alone = share.Join();
  FairShare::Turn turn(alone.get());
  ASSERT_TRUE(turn.Acquire(Never));
  EXPECT_TRUE(turn.held());
  EXPECT_FALSE(turn.ShouldYield()) << "nobody waits";
  turn.Release();
  EXPECT_FALSE(turn.held());
  EXPECT_EQ(share.holds(), 1u);
}

TEST(FairShareTest, TurnsOfOneMemberHoldTogether) {
  FairShare share(absl::Seconds(100));
  std::shared_ptr<FairShare::Member> client = share.Join();
  FairShare::Turn first(client.get());
  FairShare::Turn second(client.get());
  ASSERT_TRUE(first.Acquire(Never));
  ASSERT_TRUE(second.Acquire(Never)) << "a client's sessions run side by side";
  EXPECT_EQ(share.holds(), 1u);
}

TEST(FairShareTest, AWaitingMemberGetsTheDeviceOnceTheHolderYields) {
  FairShare share(absl::Milliseconds(1));
  std::shared_ptr<FairShare::Member> a = share.Join();
  std::shared_ptr<FairShare::Member> b = share.Join();
  FairShare::Turn holder(a.get());
  ASSERT_TRUE(holder.Acquire(Never));

  std::atomic<bool> b_holds{false};
  absl::Notification b_may_release;
  std::thread waiter([&] {
    FairShare::Turn turn(b.get());
    ASSERT_TRUE(turn.Acquire(Never));
    b_holds = true;
    b_may_release.WaitForNotification();
  });
  // b waits while a holds; once a's quantum is spent a is asked to yield.
  ASSERT_TRUE(Within(absl::Seconds(10), [&] { return holder.ShouldYield(); }));
  EXPECT_FALSE(b_holds.load());
  // a yields: b runs, and a's turn waits for it back until b is done.
  std::atomic<bool> a_back{false};
  std::thread yielder([&] {
    ASSERT_TRUE(holder.Yield(Never));
    a_back = true;
  });
  ASSERT_TRUE(Within(absl::Seconds(10), [&] { return b_holds.load(); }));
  EXPECT_FALSE(a_back.load());
  b_may_release.Notify();
  waiter.join();
  yielder.join();
  EXPECT_TRUE(a_back.load());
  EXPECT_TRUE(holder.held());
  EXPECT_EQ(share.holds(), 3u);
  EXPECT_GT(share.held(*b), absl::ZeroDuration());
}

TEST(FairShareTest, AWaiterThatStopsGivesUpAndTheHolderKeepsTheDevice) {
  FairShare share(absl::ZeroDuration());
  std::shared_ptr<FairShare::Member> a = share.Join();
  std::shared_ptr<FairShare::Member> b = share.Join();
  FairShare::Turn holder(a.get());
  ASSERT_TRUE(holder.Acquire(Never));

  std::atomic<bool> stop{false};
  std::atomic<bool> gave_up{false};
  std::thread waiter([&] {
    FairShare::Turn turn(b.get());
    EXPECT_FALSE(turn.Acquire([&] { return stop.load(); }));
    EXPECT_FALSE(turn.held());
    gave_up = true;
  });
  ASSERT_TRUE(Within(absl::Seconds(10), [&] { return holder.ShouldYield(); }));
  stop = true;
  waiter.join();
  EXPECT_TRUE(gave_up.load());
  EXPECT_FALSE(holder.ShouldYield()) << "nobody waits any more";
  EXPECT_TRUE(holder.held());
}

TEST(FairShareTest, AClientWithEightBusyTurnsGetsNoMoreTimeThanAClientWithOne) {
  // Eight threads of `many` and one of `one` work in slices, pausing where asked, until the
  // device has changed hands often enough to compare what each member held.
  FairShare share(absl::Microseconds(500));
  std::shared_ptr<FairShare::Member> many = share.Join();
  std::shared_ptr<FairShare::Member> one = share.Join();
  std::atomic<bool> stop{false};
  const auto work = [&](FairShare::Member* member) {
    FairShare::Turn turn(member);
    const auto stopped = [&] { return stop.load(); };
    if (!turn.Acquire(stopped)) return;
    while (!stop.load()) {
      const absl::Time slice_end = absl::Now() + absl::Microseconds(50);
      while (absl::Now() < slice_end) {
      }
      if (turn.ShouldYield() && !turn.Yield(stopped)) return;
    }
  };
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i) threads.emplace_back(work, many.get());
  threads.emplace_back(work, one.get());
  // Counted once both are busy (whoever came first had the device to itself until then).
  bool changed_hands = Within(absl::Seconds(60), [&] { return share.holds() >= 20; });
  const absl::Duration many_before = share.held(*many);
  const absl::Duration one_before = share.held(*one);
  changed_hands = changed_hands && Within(absl::Seconds(60), [&] { return share.holds() >= 220; });
  stop = true;
  for (std::thread& t : threads) t.join();
  ASSERT_TRUE(changed_hands);
  const absl::Duration many_held = share.held(*many) - many_before;
  const absl::Duration one_held = share.held(*one) - one_before;
  const double ratio = absl::FDivDuration(many_held, one_held);
  EXPECT_GT(ratio, 0.67) << "held: many " << many_held << ", one " << one_held;
  EXPECT_LT(ratio, 1.5) << "held: many " << many_held << ", one " << one_held;
}

TEST(FairShareTest, BusyMembersGetDeviceTimeInProportionToTheirWeights) {
  // One thread each of a member of weight 1 and one of weight 3 work in slices until the device
  // has changed hands often enough to compare what each held.
  FairShare share(absl::Microseconds(500));
  std::shared_ptr<FairShare::Member> light = share.Join(1);
  std::shared_ptr<FairShare::Member> heavy = share.Join(3);
  std::atomic<bool> stop{false};
  const auto work = [&](FairShare::Member* member) {
    FairShare::Turn turn(member);
    const auto stopped = [&] { return stop.load(); };
    if (!turn.Acquire(stopped)) return;
    while (!stop.load()) {
      const absl::Time slice_end = absl::Now() + absl::Microseconds(50);
      while (absl::Now() < slice_end) {
      }
      if (turn.ShouldYield() && !turn.Yield(stopped)) return;
    }
  };
  std::thread a(work, light.get());
  std::thread b(work, heavy.get());
  bool changed_hands = Within(absl::Seconds(60), [&] { return share.holds() >= 20; });
  const absl::Duration light_before = share.held(*light);
  const absl::Duration heavy_before = share.held(*heavy);
  changed_hands = changed_hands && Within(absl::Seconds(60), [&] { return share.holds() >= 220; });
  stop = true;
  a.join();
  b.join();
  ASSERT_TRUE(changed_hands);
  const absl::Duration light_held = share.held(*light) - light_before;
  const absl::Duration heavy_held = share.held(*heavy) - heavy_before;
  const double ratio = absl::FDivDuration(heavy_held, light_held);
  EXPECT_GT(ratio, 2.0) << "held: weight 3 " << heavy_held << ", weight 1 " << light_held;
  EXPECT_LT(ratio, 4.5) << "held: weight 3 " << heavy_held << ", weight 1 " << light_held;
}

TEST(FairShareTest, AWeightChangedWhileHoldingAppliesFromThen) {
  FairShare share(absl::Milliseconds(1));
  std::shared_ptr<FairShare::Member> member = share.Join(1);
  FairShare::Turn turn(member.get());
  ASSERT_TRUE(turn.Acquire(Never));
  share.SetWeight(*member, 5);
  EXPECT_TRUE(turn.held()) << "the hold goes on";
  EXPECT_FALSE(turn.ShouldYield()) << "nobody waits";
  turn.Release();
  EXPECT_EQ(share.holds(), 1u);
}

TEST(FairShareTest, WithAZeroQuantumTwoBusyMembersBothWork) {
  // With no quantum and no credit the device changes hands at every safe point; both members
  // must still get work done (a hold is charged from when its first turn takes the device, not
  // from when the member was chosen, so it is never spent before its thread wakes).
  FairShare share(absl::ZeroDuration(), absl::ZeroDuration());
  std::shared_ptr<FairShare::Member> a = share.Join();
  std::shared_ptr<FairShare::Member> b = share.Join();
  std::atomic<bool> stop{false};
  std::atomic<int> slices[2] = {0, 0};
  const auto work = [&](FairShare::Member* member, std::atomic<int>* done) {
    FairShare::Turn turn(member);
    const auto stopped = [&] { return stop.load(); };
    if (!turn.Acquire(stopped)) return;
    while (!stop.load()) {
      const absl::Time slice_end = absl::Now() + absl::Microseconds(20);
      while (absl::Now() < slice_end) {
      }
      done->fetch_add(1);
      if (turn.ShouldYield() && !turn.Yield(stopped)) return;
    }
  };
  std::thread first(work, a.get(), &slices[0]);
  std::thread second(work, b.get(), &slices[1]);
  const bool both_worked = Within(absl::Seconds(60), [&] {
    return slices[0].load() >= 200 && slices[1].load() >= 200;
  });
  stop = true;
  first.join();
  second.join();
  EXPECT_TRUE(both_worked) << "slices: " << slices[0].load() << ", " << slices[1].load()
                           << " in " << share.holds() << " holds";
}

}  // namespace
}  // namespace sluice
