// Kernel bodies for the general-purpose catalog entries: fill, iota, copy_range, atomic_add,
// exclusive scan, ordered stream compaction and radix sort. Each body is a function of one thread index;
// every data-dependent index is checked against its binding before it is touched.
#ifndef SLUICE_KERNELS_BODIES_BASIC_H_
#define SLUICE_KERNELS_BODIES_BASIC_H_

#include <cstdint>

#include "sluice/kernels/atomics.h"
#include "sluice/kernels/basic.h"
#include "sluice/kernels/hd.h"
#include "sluice/kernels/kernel_args.h"

namespace sluice::kernels {

// Elements handled by one thread in the blocked passes of scan and compaction. Large enough
// that the single-thread middle pass over block totals stays short, small enough that the
// blocked passes still spread over every core.
inline constexpr uint32_t kScanBlock = 2048;

// The body of kFillU32Kernel.
struct FillU32 {
  enum Binding { kOut };
  enum Param { kValue };
  SLUICE_HD static void Run(const KernelArgs& a, uint64_t i, uint64_t) {
    DeviceSpan<uint32_t> out = a.As<uint32_t>(kOut);
    if (out.Contains(i)) out[i] = static_cast<uint32_t>(a.param[kValue]);
  }
};

// The body of kIotaU32Kernel.
struct IotaU32 {
  enum Binding { kOut };
  enum Param { kStart, kStep };
  SLUICE_HD static void Run(const KernelArgs& a, uint64_t i, uint64_t) {
    DeviceSpan<uint32_t> out = a.As<uint32_t>(kOut);
    if (out.Contains(i)) {
      out[i] = static_cast<uint32_t>(a.param[kStart] + i * a.param[kStep]);
    }
  }
};

// The body of kCopyRangeU32Kernel.
struct CopyRangeU32 {
  enum Binding { kSrc, kDst };
  enum Param { kSrcOffset, kDstOffset, kCount };
  SLUICE_HD static void Run(const KernelArgs& a, uint64_t i, uint64_t) {
    DeviceSpan<uint32_t> src = a.As<uint32_t>(kSrc);
    DeviceSpan<uint32_t> dst = a.As<uint32_t>(kDst);
    if (i >= a.param[kCount]) return;
    const uint64_t s = a.param[kSrcOffset] + i;
    const uint64_t d = a.param[kDstOffset] + i;
    if (src.Contains(s) && dst.Contains(d)) dst[d] = src[s];
  }
};

// The body of kAtomicAddU32Kernel.
struct AtomicAddU32 {
  enum Binding { kCounters };
  enum Param { kIndex, kValue };
  SLUICE_HD static void Run(const KernelArgs& a, uint64_t, uint64_t) {
    DeviceSpan<uint32_t> counters = a.As<uint32_t>(kCounters);
    const uint64_t index = a.param[kIndex];
    if (counters.Contains(index)) {
      atomics::FetchAdd(&counters[index], static_cast<uint32_t>(a.param[kValue]));
    }
  }
};

// The body of kExclusiveScanU32Kernel.
struct ScanU32 {
  enum Binding { kIn, kOut, kTotal, kScratch };
  SLUICE_HD static uint64_t Blocks(uint64_t n) { return (n + kScanBlock - 1) / kScanBlock; }
};

struct ScanU32BlockSums {
  SLUICE_HD static void Run(const KernelArgs& a, uint64_t block, uint64_t) {
    DeviceSpan<uint32_t> in = a.As<uint32_t>(ScanU32::kIn);
    DeviceSpan<uint32_t> scratch = a.As<uint32_t>(ScanU32::kScratch);
    if (!scratch.Contains(block)) return;
    const uint64_t begin = block * kScanBlock;
    const uint64_t end = begin + kScanBlock < in.size ? begin + kScanBlock : in.size;
    uint32_t sum = 0;
    for (uint64_t i = begin; i < end; ++i) sum += in[i];
    scratch[block] = sum;
  }
};

struct ScanU32BlockOffsets {
  SLUICE_HD static void Run(const KernelArgs& a, uint64_t, uint64_t) {
    DeviceSpan<uint32_t> in = a.As<uint32_t>(ScanU32::kIn);
    DeviceSpan<uint32_t> scratch = a.As<uint32_t>(ScanU32::kScratch);
    DeviceSpan<uint32_t> total = a.As<uint32_t>(ScanU32::kTotal);
    const uint64_t blocks = ScanU32::Blocks(in.size);
    uint32_t running = 0;
    for (uint64_t b = 0; b < blocks && scratch.Contains(b); ++b) {
      const uint32_t v = scratch[b];
      scratch[b] = running;
      running += v;
    }
    if (total.size > 0) total[0] = running;
  }
};

struct ScanU32Apply {
  SLUICE_HD static void Run(const KernelArgs& a, uint64_t block, uint64_t) {
    DeviceSpan<uint32_t> in = a.As<uint32_t>(ScanU32::kIn);
    DeviceSpan<uint32_t> out = a.As<uint32_t>(ScanU32::kOut);
    DeviceSpan<uint32_t> scratch = a.As<uint32_t>(ScanU32::kScratch);
    if (!scratch.Contains(block)) return;
    const uint64_t begin = block * kScanBlock;
    const uint64_t end = begin + kScanBlock < in.size ? begin + kScanBlock : in.size;
    uint32_t running = scratch[block];
    for (uint64_t i = begin; i < end && out.Contains(i); ++i) {
      const uint32_t v = in[i];
      out[i] = running;
      running += v;
    }
  }
};

// The body of kCompactU32Kernel.
struct CompactU32 {
  enum Binding { kValues, kFlags, kOut, kCount, kStatus, kScratch };
};

struct CompactU32BlockCounts {
  SLUICE_HD static void Run(const KernelArgs& a, uint64_t block, uint64_t) {
    DeviceSpan<uint32_t> values = a.As<uint32_t>(CompactU32::kValues);
    DeviceSpan<uint32_t> flags = a.As<uint32_t>(CompactU32::kFlags);
    DeviceSpan<uint32_t> scratch = a.As<uint32_t>(CompactU32::kScratch);
    if (!scratch.Contains(block)) return;
    const uint64_t begin = block * kScanBlock;
    const uint64_t end = begin + kScanBlock < values.size ? begin + kScanBlock : values.size;
    uint32_t kept = 0;
    for (uint64_t i = begin; i < end && flags.Contains(i); ++i) kept += flags[i] != 0;
    scratch[block] = kept;
  }
};

struct CompactU32BlockOffsets {
  SLUICE_HD static void Run(const KernelArgs& a, uint64_t, uint64_t) {
    DeviceSpan<uint32_t> values = a.As<uint32_t>(CompactU32::kValues);
    DeviceSpan<uint32_t> out = a.As<uint32_t>(CompactU32::kOut);
    DeviceSpan<uint32_t> count = a.As<uint32_t>(CompactU32::kCount);
    DeviceSpan<uint32_t> scratch = a.As<uint32_t>(CompactU32::kScratch);
    const uint64_t blocks = ScanU32::Blocks(values.size);
    uint32_t running = 0;
    for (uint64_t b = 0; b < blocks && scratch.Contains(b); ++b) {
      const uint32_t v = scratch[b];
      scratch[b] = running;
      running += v;
    }
    if (count.size > 0) count[0] = running;
    if (running > out.size) a.RaiseStatus(CompactU32::kStatus, kStatusCapacityOverflow);
  }
};

struct CompactU32Scatter {
  SLUICE_HD static void Run(const KernelArgs& a, uint64_t block, uint64_t) {
    DeviceSpan<uint32_t> values = a.As<uint32_t>(CompactU32::kValues);
    DeviceSpan<uint32_t> flags = a.As<uint32_t>(CompactU32::kFlags);
    DeviceSpan<uint32_t> out = a.As<uint32_t>(CompactU32::kOut);
    DeviceSpan<uint32_t> scratch = a.As<uint32_t>(CompactU32::kScratch);
    if (!scratch.Contains(block)) return;
    const uint64_t begin = block * kScanBlock;
    const uint64_t end = begin + kScanBlock < values.size ? begin + kScanBlock : values.size;
    uint64_t position = scratch[block];
    for (uint64_t i = begin; i < end && flags.Contains(i); ++i) {
      if (flags[i] == 0) continue;
      if (out.Contains(position)) out[position] = values[i];
      ++position;
    }
  }
};

// The body of kSortU64Kernel.
struct SortU64 {
  enum Binding { kKeys, kAlt, kScratch };
  enum Param { kCount, kBits };
  static constexpr int kMaxRounds = 8;
  static constexpr uint32_t kDigits = 256;
  SLUICE_HD static uint64_t Blocks(uint64_t n) { return (n + kScanBlock - 1) / kScanBlock; }
  SLUICE_HD static int Rounds(uint64_t bits) {
    return static_cast<int>((bits < 64 ? bits : 64) + 7) / 8;
  }

  // What round `round` works on; `active` is false for rounds past the last.
  struct Round {
    DeviceSpan<uint64_t> src, dst;
    DeviceSpan<uint32_t> scratch;
    uint64_t count, blocks;
    int shift;
    bool active;
  };
  SLUICE_HD static Round Open(const KernelArgs& a, int round) {
    Round r;
    const DeviceSpan<uint64_t> keys = a.As<uint64_t>(kKeys);
    const DeviceSpan<uint64_t> alt = a.As<uint64_t>(kAlt);
    r.src = round % 2 == 0 ? keys : alt;
    r.dst = round % 2 == 0 ? alt : keys;
    r.scratch = a.As<uint32_t>(kScratch);
    r.count = a.param[kCount];
    r.blocks = Blocks(r.count);
    r.shift = 8 * round;
    r.active = round < Rounds(a.param[kBits]);
    return r;
  }
  // The keys [*begin, *end) of `block` in an active round whose scratch holds its counters;
  // false when there is nothing for the block to do.
  SLUICE_HD static bool Block(const Round& r, uint64_t block, uint64_t* begin, uint64_t* end) {
    if (!r.active || block >= r.blocks) return false;
    if (!r.scratch.Contains((kDigits - 1) * r.blocks + block)) return false;
    *begin = block * kScanBlock;
    *end = *begin + kScanBlock < r.count ? *begin + kScanBlock : r.count;
    return true;
  }
  SLUICE_HD static uint32_t Digit(uint64_t key, int shift) {
    return static_cast<uint32_t>(key >> shift) & (kDigits - 1);
  }
};

template <int R>
struct SortU64Count {
  SLUICE_HD static void Run(const KernelArgs& a, uint64_t block, uint64_t) {
    const SortU64::Round r = SortU64::Open(a, R);
    uint64_t begin = 0, end = 0;
    if (!SortU64::Block(r, block, &begin, &end)) return;
    for (uint32_t d = 0; d < SortU64::kDigits; ++d) r.scratch[d * r.blocks + block] = 0;
    for (uint64_t i = begin; i < end && r.src.Contains(i); ++i) {
      r.scratch[SortU64::Digit(r.src[i], r.shift) * r.blocks + block] += 1;
    }
  }
};

template <int R>
struct SortU64Offsets {
  SLUICE_HD static void Run(const KernelArgs& a, uint64_t, uint64_t) {
    const SortU64::Round r = SortU64::Open(a, R);
    if (!r.active) return;
    uint32_t running = 0;
    const uint64_t cells = SortU64::kDigits * r.blocks;
    for (uint64_t c = 0; c < cells && r.scratch.Contains(c); ++c) {
      const uint32_t v = r.scratch[c];
      r.scratch[c] = running;
      running += v;
    }
  }
};

template <int R>
struct SortU64Scatter {
  SLUICE_HD static void Run(const KernelArgs& a, uint64_t block, uint64_t) {
    const SortU64::Round r = SortU64::Open(a, R);
    uint64_t begin = 0, end = 0;
    if (!SortU64::Block(r, block, &begin, &end)) return;
    for (uint64_t i = begin; i < end && r.src.Contains(i); ++i) {
      const uint64_t key = r.src[i];
      uint32_t& position = r.scratch[SortU64::Digit(key, r.shift) * r.blocks + block];
      if (r.dst.Contains(position)) r.dst[position] = key;
      ++position;
    }
  }
};

// After an odd number of rounds the sorted keys are in alt: copy them back.
struct SortU64CopyBack {
  SLUICE_HD static void Run(const KernelArgs& a, uint64_t i, uint64_t) {
    if (SortU64::Rounds(a.param[SortU64::kBits]) % 2 == 0) return;
    const DeviceSpan<uint64_t> keys = a.As<uint64_t>(SortU64::kKeys);
    const DeviceSpan<uint64_t> alt = a.As<uint64_t>(SortU64::kAlt);
    if (i < a.param[SortU64::kCount] && keys.Contains(i) && alt.Contains(i)) keys[i] = alt[i];
  }
};

}  // namespace sluice::kernels

#endif  // SLUICE_KERNELS_BODIES_BASIC_H_
