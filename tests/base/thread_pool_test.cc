#include "sluice/base/thread_pool.h"

#include <atomic>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace sluice {
namespace {

TEST(ThreadPoolTest, ParallelForCoversEveryIndexExactlyOnce) {
  ThreadPool pool(4);
  for (uint64_t n : {0ull, 1ull, 4095ull, 4096ull, 4097ull, 1000003ull}) {
    std::vector<std::atomic<uint8_t>> hits(n);
    pool.ParallelFor(n, 1000, [&](uint64_t begin, uint64_t end) {
      for (uint64_t i = begin; i < end; ++i) hits[i].fetch_add(1);
    });
    for (uint64_t i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 1) << n << " " << i;
  }
}

TEST(ThreadPoolTest, ConcurrentCallersEachCompleteTheirOwnLoops) {
  ThreadPool pool(3);
  std::vector<std::thread> callers;
  std::vector<uint64_t> sums(6);
  for (int c = 0; c < 6; ++c) {
    callers.emplace_back([&, c] {
      for (int round = 0; round < 50; ++round) {
        std::atomic<uint64_t> sum{0};
        pool.ParallelFor(100000, 64, [&](uint64_t begin, uint64_t end) {
          uint64_t local = 0;
          for (uint64_t i = begin; i < end; ++i) local += i;
          sum.fetch_add(local);
        });
        sums[c] = sum.load();
      }
    });
  }
  for (std::thread& t : callers) t.join();
  for (uint64_t s : sums) EXPECT_EQ(s, 100000ull * 99999 / 2);
}

TEST(ThreadPoolTest, SingleThreadPoolRunsInline) {
  ThreadPool pool(1);
  EXPECT_EQ(pool.concurrency(), 1);
  const std::thread::id caller = std::this_thread::get_id();
  pool.ParallelFor(100000, 1, [&](uint64_t, uint64_t) {
    EXPECT_EQ(std::this_thread::get_id(), caller);
  });
}

// Stops once `after` ranges have started, on any thread.
struct StopAfter {
  explicit StopAfter(int after) : left(after) {}
  bool operator()() { return left.fetch_sub(1) <= 0; }
  std::atomic<int> left;
};

TEST(ThreadPoolTest, ParallelForUntilRunsExactlyThePrefixItReportsAndCanResume) {
  for (int threads : {1, 4}) {
    ThreadPool pool(threads);
    for (int after : {0, 1, 7, 100}) {
      constexpr uint64_t kN = 100003;
      std::vector<std::atomic<uint8_t>> hits(kN);
      const auto mark = [&](uint64_t from) {
        return [&, from](uint64_t begin, uint64_t end) {
          for (uint64_t i = from + begin; i < from + end; ++i) hits[i].fetch_add(1);
        };
      };
      StopAfter stop(after);
      const uint64_t ran = pool.ParallelForUntil(kN, 8, mark(0), [&] { return stop(); });
      ASSERT_LT(ran, kN) << threads << " threads, stop after " << after;
      for (uint64_t i = 0; i < kN; ++i) {
        ASSERT_EQ(hits[i].load(), i < ran ? 1 : 0) << threads << " " << after << " " << i;
      }
      // Resumed from where it stopped, every index has run exactly once.
      const uint64_t rest = pool.ParallelForUntil(kN - ran, 8, mark(ran), [] { return false; });
      EXPECT_EQ(rest, kN - ran);
      for (uint64_t i = 0; i < kN; ++i) ASSERT_EQ(hits[i].load(), 1) << i;
    }
  }
}

TEST(ThreadPoolTest, ParallelForUntilThatNeverStopsRunsEverything) {
  ThreadPool pool(3);
  std::atomic<uint64_t> sum{0};
  EXPECT_EQ(pool.ParallelForUntil(
                1000, 7,
                [&](uint64_t begin, uint64_t end) {
                  for (uint64_t i = begin; i < end; ++i) sum.fetch_add(i);
                },
                [] { return false; }),
            1000u);
  EXPECT_EQ(sum.load(), 999u * 1000 / 2);
  EXPECT_EQ(pool.ParallelForUntil(0, 7, [](uint64_t, uint64_t) {}, [] { return true; }), 0u);
}

}  // namespace
}  // namespace sluice
