// OrderedWork: pieces made on several threads come back in order, each made once, with no
// more made ahead than the window allows, and an early end stops the makers.
#include "sluice/base/ordered_work.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "gtest/gtest.h"

namespace sluice {
namespace {

TEST(OrderedWorkTest, PiecesComeInOrderEachMadeOnceWithinTheWindow) {
  for (const unsigned threads : {1u, 2u, 5u}) {
    for (const size_t window : {size_t{0}, size_t{1}, size_t{3}}) {
      SCOPED_TRACE(testing::Message() << threads << " threads, window " << window);
      constexpr size_t kPieces = 500;
      std::vector<std::atomic<int>> made(kPieces);
      std::atomic<size_t> held{0}, most_held{0};
      {
        OrderedWork<std::vector<uint64_t>> work(
            kPieces, threads, window, [&](size_t k, std::vector<uint64_t>& slot) {
              ++made[k];
              const size_t now = ++held;
              size_t most = most_held.load();
              while (now > most && !most_held.compare_exchange_weak(most, now)) {
              }
              slot.assign(k % 7 + 1, k * k);
            });
        for (size_t k = 0; k < kPieces; ++k) {
          const std::vector<uint64_t>& piece = work.Take(k);
          ASSERT_EQ(piece, std::vector<uint64_t>(k % 7 + 1, k * k));
          --held;
          work.Release(k);
        }
      }
      EXPECT_TRUE(std::all_of(made.begin(), made.end(), [](const auto& m) { return m == 1; }));
      // Made and not yet released: the slots, one being taken and the window ahead of it.
      EXPECT_LE(most_held.load(), window + 1);
    }
  }
}

TEST(OrderedWorkTest, EndingEarlyStopsTheMakersWithinTheWindow) {
  std::atomic<size_t> made{0};
  {
    OrderedWork<int> work(100000, 4, 2, [&](size_t k, int& slot) {
      ++made;
      slot = static_cast<int>(k);
    });
    EXPECT_EQ(work.Take(0), 0);
    work.Release(0);
    EXPECT_EQ(work.Take(1), 1);
  }  // piece 1 never released: the makers stop
  // Pieces claimable: those before one released piece plus the window's 3 slots.
  EXPECT_LE(made.load(), 1u + 3u);
}

TEST(OrderedWorkTest, WhatAMakeThrowsIsThrownByTheTakeOfItsPiece) {
  for (const unsigned threads : {1u, 3u}) {
    OrderedWork<int> work(6, threads, 2, [](size_t k, int& slot) {
      if (k == 3) throw std::runtime_error("piece 3");
      slot = static_cast<int>(k);
    });
    for (size_t k = 0; k < 3; ++k) {
      EXPECT_EQ(work.Take(k), static_cast<int>(k));
      work.Release(k);
    }
    EXPECT_THROW(work.Take(3), std::runtime_error);
    work.Release(3);
    EXPECT_EQ(work.Take(4), 4) << "the pieces after it are made as ever";
  }
}

}  // namespace
}  // namespace sluice
