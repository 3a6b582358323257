// Kernel tests against host references at sizes 0, 1, odd, large and seeded random, typed over
// a DispatchHarness so the same suite runs on every device. Instantiate with
//   INSTANTIATE_TYPED_TEST_SUITE_P(Name, KernelTest, ::testing::Types<MyHarness>);
#ifndef SLUICE_TESTS_KERNELS_KERNEL_SUITE_H_
#define SLUICE_TESTS_KERNELS_KERNEL_SUITE_H_

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sluice/client/resident_dispatch.h"
#include "sluice/kernels/bodies.h"
#include "sluice/kernels/catalog.h"
#include "sluice/kernels/kernel_args.h"
#include "tests/testing/bytes.h"
#include "tests/testing/dispatch_harness.h"
#include "tests/testing/harness_test.h"
#include "tests/testing/status_matchers.h"

namespace sluice::testing {

inline const std::vector<size_t>& KernelSizes() {
  // 0, 1, odd, just past one scan block, and large and odd.
  static const std::vector<size_t> sizes = {0, 1, 7, 2049, (size_t{1} << 20) + 3};
  return sizes;
}

template <class Harness>
class KernelTest : public HarnessTest<Harness> {
 protected:
  using HarnessTest<Harness>::dispatch_;

  Resource U32(const std::vector<uint32_t>& values) {
    absl::StatusOr<Resource> r = dispatch_->Allocate(values.size() * 4);
    EXPECT_TRUE(r.ok()) << r.status();
    EXPECT_OK(dispatch_->Upload(*r, AsBytes(values)));
    return *r;
  }
  Resource U64(const std::vector<uint64_t>& values) {
    absl::StatusOr<Resource> r = dispatch_->Allocate(values.size() * 8);
    EXPECT_TRUE(r.ok()) << r.status();
    EXPECT_OK(dispatch_->Upload(*r, AsBytes(values)));
    return *r;
  }
  std::vector<uint64_t> Read64(const Resource& r) {
    absl::StatusOr<std::vector<uint8_t>> bytes = dispatch_->Download(r);
    EXPECT_TRUE(bytes.ok()) << bytes.status();
    return FromBytes<uint64_t>(bytes.ok() ? *bytes : std::vector<uint8_t>{});
  }
  // keys, alt and scratch for sort_u64 of every key.
  std::vector<Resource> SortBuffers(const std::vector<uint64_t>& keys) {
    return {U64(keys), U64(std::vector<uint64_t>(keys.size())),
            U32(std::vector<uint32_t>(256 * ((keys.size() + 2047) / 2048)))};
  }
  std::vector<uint32_t> Read(const Resource& r) {
    absl::StatusOr<std::vector<uint8_t>> bytes = dispatch_->Download(r);
    EXPECT_TRUE(bytes.ok()) << bytes.status();
    return FromBytes<uint32_t>(bytes.ok() ? *bytes : std::vector<uint8_t>{});
  }
  absl::Status Run(const std::string& kernel, std::vector<uint64_t> params,
                   std::vector<Resource> bindings, std::optional<Grid> grid = std::nullopt) {
    return dispatch_->Dispatch(Program{kernel, std::move(params)}, bindings, grid);
  }

};

TYPED_TEST_SUITE_P(KernelTest);

TYPED_TEST_P(KernelTest, FillMatchesHost) {
  for (size_t n : KernelSizes()) {
    Resource out = this->U32(RandomU32(n, 1, 1000));
    ASSERT_OK(this->Run("fill_u32", {0xC0FFEE}, {out}));
    EXPECT_EQ(this->Read(out), std::vector<uint32_t>(n, 0xC0FFEE)) << n;
  }
}

TYPED_TEST_P(KernelTest, IotaMatchesHost) {
  for (size_t n : KernelSizes()) {
    Resource out = this->U32(std::vector<uint32_t>(n));
    ASSERT_OK(this->Run("iota_u32", {0xFFFFFFF0u, 3}, {out}));
    std::vector<uint32_t> expected(n);
    for (size_t i = 0; i < n; ++i) expected[i] = static_cast<uint32_t>(0xFFFFFFF0u + 3 * i);
    EXPECT_EQ(this->Read(out), expected) << n;
  }
}

TYPED_TEST_P(KernelTest, CopyRangeMatchesHost) {
  for (size_t n : KernelSizes()) {
    const std::vector<uint32_t> src_values = RandomU32(n, 2, ~0u);
    const std::vector<uint32_t> dst_values = RandomU32(n + 5, 3, ~0u);
    Resource src = this->U32(src_values);
    Resource dst = this->U32(dst_values);
    const size_t count = n / 2;
    const size_t src_offset = n - count;
    ASSERT_OK(this->Run("copy_range_u32", {src_offset, 5, count}, {src, dst}));
    std::vector<uint32_t> expected = dst_values;
    for (size_t i = 0; i < count; ++i) expected[5 + i] = src_values[src_offset + i];
    EXPECT_EQ(this->Read(dst), expected) << n;
  }
}

TYPED_TEST_P(KernelTest, CopyRangePastEitherEndIsRejected) {
  Resource src = this->U32(std::vector<uint32_t>(10, 1));
  Resource dst = this->U32(std::vector<uint32_t>(10, 2));
  EXPECT_THAT(this->Run("copy_range_u32", {5, 0, 6}, {src, dst}),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(this->Run("copy_range_u32", {0, ~uint64_t{0}, 1}, {src, dst}),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_EQ(this->Read(dst), std::vector<uint32_t>(10, 2));
}

TYPED_TEST_P(KernelTest, ExclusiveScanMatchesHost) {
  for (size_t n : KernelSizes()) {
    const std::vector<uint32_t> in_values = RandomU32(n, 4 + n, ~0u);
    Resource in = this->U32(in_values);
    Resource out = this->U32(std::vector<uint32_t>(n, 77));
    Resource total = this->U32({0});
    Resource scratch = this->U32(std::vector<uint32_t>((n + 2047) / 2048));
    ASSERT_OK(this->Run("exclusive_scan_u32", {}, {in, out, total, scratch}));
    std::vector<uint32_t> expected(n);
    uint32_t running = 0;
    for (size_t i = 0; i < n; ++i) {
      expected[i] = running;
      running += in_values[i];
    }
    EXPECT_EQ(this->Read(out), expected) << n;
    EXPECT_EQ(this->Read(total), std::vector<uint32_t>{running}) << n;
  }
}

TYPED_TEST_P(KernelTest, ExclusiveScanInPlace) {
  const std::vector<uint32_t> values = RandomU32(5000, 5, 100);
  Resource data = this->U32(values);
  Resource total = this->U32({0});
  Resource scratch = this->U32(std::vector<uint32_t>(3));
  ASSERT_OK(this->Run("exclusive_scan_u32", {}, {data, data, total, scratch}));
  std::vector<uint32_t> got = this->Read(data);
  uint32_t running = 0;
  for (size_t i = 0; i < values.size(); ++i) {
    ASSERT_EQ(got[i], running) << i;
    running += values[i];
  }
}

TYPED_TEST_P(KernelTest, ExclusiveScanWithTooLittleScratchIsRejected) {
  Resource in = this->U32(std::vector<uint32_t>(5000, 1));
  Resource total = this->U32({0});
  Resource scratch = this->U32(std::vector<uint32_t>(2));
  EXPECT_THAT(this->Run("exclusive_scan_u32", {}, {in, in, total, scratch}),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

TYPED_TEST_P(KernelTest, CompactMatchesHostInOrder) {
  for (size_t n : KernelSizes()) {
    const std::vector<uint32_t> values = RandomU32(n, 6 + n, ~0u);
    // About two in three kept; a flag is any nonzero word, not only 1.
    std::vector<uint32_t> flags = RandomU32(n, 7 + n, ~0u);
    for (uint32_t& f : flags) f = f % 3 == 0 ? 0 : f;
    Resource v = this->U32(values);
    Resource f = this->U32(flags);
    Resource out = this->U32(std::vector<uint32_t>(n));
    Resource count = this->U32({0});
    Resource status = this->U32({0});
    Resource scratch = this->U32(std::vector<uint32_t>((n + 2047) / 2048));
    ASSERT_OK(this->Run("compact_u32", {}, {v, f, out, count, status, scratch}));
    std::vector<uint32_t> expected;
    for (size_t i = 0; i < n; ++i) {
      if (flags[i] != 0) expected.push_back(values[i]);
    }
    std::vector<uint32_t> got = this->Read(out);
    got.resize(expected.size());
    EXPECT_EQ(got, expected) << n;
    EXPECT_EQ(this->Read(count), std::vector<uint32_t>{static_cast<uint32_t>(expected.size())});
    EXPECT_EQ(this->Read(status), std::vector<uint32_t>{0});
  }
}

TYPED_TEST_P(KernelTest, CompactIntoTooSmallOutputRaisesOverflow) {
  const std::vector<uint32_t> values = RandomU32(3000, 8, ~0u);
  Resource v = this->U32(values);
  Resource f = this->U32(std::vector<uint32_t>(3000, 1));
  Resource out = this->U32(std::vector<uint32_t>(100));
  Resource count = this->U32({0});
  Resource status = this->U32({0});
  Resource scratch = this->U32(std::vector<uint32_t>(2));
  ASSERT_OK(this->Run("compact_u32", {}, {v, f, out, count, status, scratch}));
  EXPECT_EQ(this->Read(count), std::vector<uint32_t>{3000});
  EXPECT_EQ(this->Read(status), std::vector<uint32_t>{kStatusCapacityOverflow});
  EXPECT_EQ(this->Read(out), std::vector<uint32_t>(values.begin(), values.begin() + 100));
}

TYPED_TEST_P(KernelTest, AtomicAddCountsEveryThread) {
  for (size_t n : KernelSizes()) {
    Resource counters = this->U32({0, 0, 0});
    const uint32_t threads = static_cast<uint32_t>(n);
    ASSERT_OK(this->Run("atomic_add_u32", {2, 3}, {counters}, Grid{threads, 1, 1}));
    EXPECT_EQ(this->Read(counters), (std::vector<uint32_t>{0, 0, static_cast<uint32_t>(3 * n)}))
        << n;
  }
}

TYPED_TEST_P(KernelTest, AtomicAddIndexOutsideCountersIsRejected) {
  Resource counters = this->U32({0, 0});
  EXPECT_THAT(this->Run("atomic_add_u32", {2, 1}, {counters}),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

// A star plus a chain: 0 -> {1..5}, 5 -> 6 -> 7; node 8 unreachable.
struct TinyGraph {
  std::vector<uint32_t> rows = {0, 5, 5, 5, 5, 5, 6, 7, 7, 7};
  std::vector<uint32_t> columns = {1, 2, 3, 4, 5, 6, 7};
};

TYPED_TEST_P(KernelTest, BfsExpandClaimsEachNeighbourOnce) {
  TinyGraph g;
  Resource rows = this->U32(g.rows);
  Resource cols = this->U32(g.columns);
  Resource visited = this->U32({1u});
  Resource levels = this->U32({0, kernels::kUnreachedLevel, kernels::kUnreachedLevel,
                               kernels::kUnreachedLevel, kernels::kUnreachedLevel,
                               kernels::kUnreachedLevel, kernels::kUnreachedLevel,
                               kernels::kUnreachedLevel, kernels::kUnreachedLevel});
  Resource frontier = this->U32({0, 0, 0, 0, 0, 0, 0, 0, 0});
  Resource next = this->U32(std::vector<uint32_t>(9));
  Resource state = this->U32({1, 0, 0, 0});
  ASSERT_OK(this->Run("bfs_expand", {}, {rows, cols, visited, levels, frontier, next, state}));
  std::vector<uint32_t> s = this->Read(state);
  EXPECT_EQ(s, (std::vector<uint32_t>{1, 5, 0, 0}));
  std::vector<uint32_t> n = this->Read(next);
  n.resize(5);
  EXPECT_THAT(n, ::testing::UnorderedElementsAre(1, 2, 3, 4, 5));
  std::vector<uint32_t> l = this->Read(levels);
  EXPECT_THAT(std::vector<uint32_t>(l.begin(), l.begin() + 6),
              ::testing::ElementsAre(0, 1, 1, 1, 1, 1));
  ASSERT_OK(this->Run("bfs_advance", {}, {frontier, next, state}));
  EXPECT_EQ(this->Read(state), (std::vector<uint32_t>{5, 0, 1, 0}));
}

TYPED_TEST_P(KernelTest, BfsExpandFlagsBadIndicesAndOverflowWithoutTouchingOtherMemory) {
  // Column 99 is not a node; the next frontier holds only one entry.
  Resource rows = this->U32({0, 3, 3, 3});
  Resource cols = this->U32({99, 1, 2});
  Resource visited = this->U32({1u});
  Resource levels = this->U32({0, ~0u, ~0u});
  Resource frontier = this->U32({0});
  Resource next = this->U32({0});
  Resource state = this->U32({1, 0, 0, 0});
  ASSERT_OK(this->Run("bfs_expand", {}, {rows, cols, visited, levels, frontier, next, state}));
  std::vector<uint32_t> s = this->Read(state);
  EXPECT_EQ(s[3], kStatusIndexOutOfBounds | kStatusCapacityOverflow);
  EXPECT_EQ(s[1], 2u) << "both real neighbours were claimed";
  // A frontier naming a node that does not exist only raises the flag.
  Resource bad_frontier = this->U32({12345});
  Resource state2 = this->U32({1, 0, 0, 0});
  ASSERT_OK(
      this->Run("bfs_expand", {}, {rows, cols, visited, levels, bad_frontier, next, state2}));
  EXPECT_EQ(this->Read(state2), (std::vector<uint32_t>{1, 0, 0, kStatusIndexOutOfBounds}));
}

TYPED_TEST_P(KernelTest, BfsExpandRejectsGridOverrides) {
  TinyGraph g;
  Resource rows = this->U32(g.rows);
  Resource cols = this->U32(g.columns);
  Resource visited = this->U32({1u});
  Resource levels = this->U32(std::vector<uint32_t>(9));
  Resource frontier = this->U32({0});
  Resource next = this->U32(std::vector<uint32_t>(9));
  Resource state = this->U32({1, 0, 0, 0});
  EXPECT_THAT(this->Run("bfs_expand", {}, {rows, cols, visited, levels, frontier, next, state},
                        Grid{4, 1, 1}),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

// n seeded keys below 2^bits.
inline std::vector<uint64_t> RandomKeys(size_t n, uint64_t seed, int bits) {
  std::mt19937_64 rng(seed);
  std::vector<uint64_t> keys(n);
  for (uint64_t& k : keys) k = bits == 64 ? rng() : rng() & ((uint64_t{1} << bits) - 1);
  return keys;
}

TYPED_TEST_P(KernelTest, SortMatchesHost) {
  // 48 bits: six rounds (the IFDS result keys); 20: three, and 8: one, so the result is copied
  // back from alt; 64: whole keys. Keys past count stay as they were.
  for (int bits : {64, 48, 20, 8}) {
    for (size_t n : KernelSizes()) {
      std::vector<uint64_t> keys = RandomKeys(n + 3, 40 + bits, bits);
      Resource k = this->U64(keys);
      Resource alt = this->U64(std::vector<uint64_t>(n));
      Resource scratch = this->U32(std::vector<uint32_t>(256 * ((n + 2047) / 2048)));
      ASSERT_OK(this->Run("sort_u64", {n, static_cast<uint64_t>(bits)}, {k, alt, scratch}));
      std::sort(keys.begin(), keys.begin() + static_cast<std::ptrdiff_t>(n));
      EXPECT_EQ(this->Read64(k), keys) << "bits " << bits << ", n " << n;
    }
  }
}

TYPED_TEST_P(KernelTest, SortByLowBytesIsStable) {
  // Ordered by the low two bytes only: keys equal there keep their order.
  const size_t n = 100003;
  std::vector<uint64_t> keys = RandomKeys(n, 9, 64);
  const std::vector<Resource> bind = this->SortBuffers(keys);
  ASSERT_OK(this->Run("sort_u64", {n, 13}, bind));
  std::stable_sort(keys.begin(), keys.end(),
                   [](uint64_t a, uint64_t b) { return (a & 0xffff) < (b & 0xffff); });
  EXPECT_EQ(this->Read64(bind[0]), keys);
}

TYPED_TEST_P(KernelTest, SortByZeroBitsLeavesTheKeys) {
  const std::vector<uint64_t> keys = RandomKeys(5000, 12, 64);
  const std::vector<Resource> bind = this->SortBuffers(keys);
  ASSERT_OK(this->Run("sort_u64", {keys.size(), 0}, bind));
  EXPECT_EQ(this->Read64(bind[0]), keys);
}

TYPED_TEST_P(KernelTest, SortInARepeatedGroupMatchesHost) {
  // Inside a repeated group (on a GPU: inside a captured graph, without CUB).
  const size_t n = 70001;
  std::vector<uint64_t> keys = RandomKeys(n, 10, 40);
  const std::vector<Resource> bind = this->SortBuffers(keys);
  const Program sort{"sort_u64", {n, 40}};
  const Step step{&sort, bind, std::nullopt};
  ASSERT_OK(this->dispatch_->DispatchRepeatedSequenceReadRangesInto({}, {&step, 1}, 2, {}, {}));
  std::sort(keys.begin(), keys.end());
  EXPECT_EQ(this->Read64(bind[0]), keys);
}

TYPED_TEST_P(KernelTest, SortWithShortBuffersIsRejected) {
  const size_t n = 5000;
  Resource k = this->U64(RandomKeys(n, 11, 64));
  Resource alt = this->U64(std::vector<uint64_t>(n));
  Resource short_alt = this->U64(std::vector<uint64_t>(n - 1));
  Resource scratch = this->U32(std::vector<uint32_t>(256 * 3));
  Resource short_scratch = this->U32(std::vector<uint32_t>(256 * 3 - 1));
  const auto invalid = StatusIs(absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(this->Run("sort_u64", {n + 1, 64}, {k, alt, scratch}), invalid);
  EXPECT_THAT(this->Run("sort_u64", {n, 64}, {k, short_alt, scratch}), invalid);
  EXPECT_THAT(this->Run("sort_u64", {n, 64}, {k, alt, short_scratch}), invalid);
  EXPECT_THAT(this->Run("sort_u64", {n, 65}, {k, alt, scratch}), invalid);
  EXPECT_THAT(this->Run("sort_u64", {n, 64}, {k, alt, scratch}, Grid{1, 1, 1}), invalid);
  ASSERT_OK(this->Run("sort_u64", {n, 64}, {k, alt, scratch}));
}

// No buffer contents and no parameters within the catalog's limits make a kernel touch memory
// outside its bindings: every kernel, with seeded random binding sizes, parameters and
// contents (random bytes, small plausible values, or almost all zeros), either is refused by
// validation or runs and returns. Out-of-bounds accesses show as a crash here, in the ASan
// build and under compute-sanitizer (tests/gpu/run.sh), or on a GPU as a sticky error that
// fails every later call.
TYPED_TEST_P(KernelTest, AnyContentsStayWithinTheBindings) {
  std::mt19937_64 rng(20261129);
  const auto below = [&](uint64_t n) { return n == 0 ? 0 : rng() % n; };
  // SLUICE_KERNEL_FUZZ_TRIALS (at least 10) changes the count: fewer where each call is slow,
  // though with fewer than about 60 some kernel may never be reached (which fails the test).
  const char* trials_env = std::getenv("SLUICE_KERNEL_FUZZ_TRIALS");
  const int kTrials = trials_env != nullptr ? std::max(10, std::atoi(trials_env)) : 120;
  for (const KernelSpec& spec : KernelCatalog::Builtin().kernels()) {
    if (spec.loop_guard) continue;  // runs no passes; its word is checked by the conformance suite
    int ran = 0;
    for (int trial = 0; trial < kTrials; ++trial) {
      std::vector<uint64_t> params;
      for (const ParamSpec& p : spec.params) {
        // Mostly small (offsets and counts that fit), now and then the largest allowed.
        const uint64_t cap = std::min<uint64_t>(p.max_value, 300);
        params.push_back(below(16) == 0 ? p.max_value : below(below(cap + 1) + 1));
      }
      std::vector<Resource> bindings;
      const int style = trial % 3;
      // In most trials every binding has a power-of-two element count, as hash sets and index
      // tables must; in the others any count.
      const bool powers_of_two = below(4) != 0;
      bool allocated = true;
      for (const BindingSpec& b : spec.bindings) {
        uint64_t elements = powers_of_two ? uint64_t{1} << below(10) : below(600);
        while (elements < b.min_elements) elements = std::max<uint64_t>(1, 2 * elements);
        std::vector<uint8_t> bytes(elements * b.element_size);
        if (style == 0) {
          for (uint8_t& byte : bytes) byte = static_cast<uint8_t>(rng());
        } else if (style == 1) {
          // u32 words that are plausible counts and indices (a little past the ends too).
          for (size_t w = 0; w + 4 <= bytes.size(); w += 4) {
            const uint32_t v = static_cast<uint32_t>(below(2 * elements + 4));
            std::memcpy(&bytes[w], &v, 4);
          }
        } else {
          for (int k = 0; k < 3 && !bytes.empty(); ++k) {
            bytes[below(bytes.size())] = static_cast<uint8_t>(rng());
          }
        }
        if (b.name == "graph" && style != 0) {
          // A compiled IFDS problem's header that passes the kernels' first checks, over
          // sections placed anywhere (some past the end), so that the fuzzing reaches the
          // code that indexes into them.
          using Layout = kernels::ifds::GraphLayout;
          std::vector<uint32_t> words = FromBytes<uint32_t>(bytes);
          const uint32_t size = static_cast<uint32_t>(words.size());
          words[Layout::kMagic] = Layout::kMagicValue;
          words[Layout::kVersion] = Layout::kVersionValue;
          words[Layout::kSectionCount] = Layout::kNumSections;
          for (uint32_t w = Layout::kFacts; w < Layout::kSectionCount; ++w) {
            words[w] = static_cast<uint32_t>(below(40));
          }
          words[Layout::kFacts] = 1 + static_cast<uint32_t>(below(40));
          for (uint32_t section = 0; section < Layout::kNumSections; ++section) {
            const uint32_t offset = static_cast<uint32_t>(below(size + 2));
            words[Layout::kSectionTable + 2 * section] = offset;
            words[Layout::kSectionTable + 2 * section + 1] =
                static_cast<uint32_t>(below(size + 4 - std::min(offset, size)));
          }
          bytes = ToBytes(words);
        }
        absl::StatusOr<Resource> r = this->dispatch_->Allocate(bytes.size());
        if (!r.ok()) {
          ADD_FAILURE() << spec.name << ": " << r.status();
          allocated = false;
          break;
        }
        EXPECT_OK(this->dispatch_->Upload(*r, bytes));
        bindings.push_back(*r);
      }
      if (allocated) {
        const absl::Status status = this->Run(std::string(spec.name), params, bindings);
        if (status.ok()) {
          ++ran;
        } else {
          ASSERT_EQ(status.code(), absl::StatusCode::kInvalidArgument)
              << spec.name << " trial " << trial << ": " << status;
        }
      }
      for (const Resource& r : bindings) ASSERT_OK(this->dispatch_->Free(r));
    }
    EXPECT_GE(ran, std::max(1, kTrials / 20)) << spec.name << " ran " << ran << " of " << kTrials
                                 << " trials: the fuzzing must reach the kernel";
  }
}

REGISTER_TYPED_TEST_SUITE_P(KernelTest, FillMatchesHost, IotaMatchesHost, CopyRangeMatchesHost,
                            CopyRangePastEitherEndIsRejected, ExclusiveScanMatchesHost,
                            ExclusiveScanInPlace, ExclusiveScanWithTooLittleScratchIsRejected,
                            CompactMatchesHostInOrder, CompactIntoTooSmallOutputRaisesOverflow,
                            AtomicAddCountsEveryThread, AtomicAddIndexOutsideCountersIsRejected,
                            BfsExpandClaimsEachNeighbourOnce,
                            BfsExpandFlagsBadIndicesAndOverflowWithoutTouchingOtherMemory,
                            BfsExpandRejectsGridOverrides, SortMatchesHost,
                            SortByLowBytesIsStable, SortByZeroBitsLeavesTheKeys,
                            SortInARepeatedGroupMatchesHost,
                            SortWithShortBuffersIsRejected, AnyContentsStayWithinTheBindings);

}  // namespace sluice::testing

#endif  // SLUICE_TESTS_KERNELS_KERNEL_SUITE_H_
