// What a caller needs of the general-purpose catalog kernels (fill, iota, copy_range,
// atomic_add, exclusive scan, ordered stream compaction, radix sort): each kernel's id (name and
// behaviour version) and what it does. The bodies are in kernels/bodies/basic.h, which only the
// launchers and the catalog's sources include.
#ifndef SLUICE_KERNELS_BASIC_H_
#define SLUICE_KERNELS_BASIC_H_

#include "sluice/kernels/kernel_id.h"

namespace sluice::kernels {

// fill_u32: out[i] = value.
inline constexpr KernelId kFillU32Kernel{"fill_u32", 1};

// iota_u32: out[i] = start + i * step (mod 2^32).
inline constexpr KernelId kIotaU32Kernel{"iota_u32", 1};

// copy_range_u32: dst[dst_offset + i] = src[src_offset + i] for i < count. The ranges are
// validated before launch; the body checks again so that a grid override cannot escape them.
inline constexpr KernelId kCopyRangeU32Kernel{"copy_range_u32", 2};

// atomic_add_u32: every thread adds `value` to counters[index]; with a grid of n threads the
// counter grows by n * value.
inline constexpr KernelId kAtomicAddU32Kernel{"atomic_add_u32", 1};

// exclusive_scan_u32: out[i] = in[0] + ... + in[i-1] (mod 2^32), total[0] = sum of all.
// Three passes: per-block sums into scratch, a scan of the block sums, per-block apply.
// `in` and `out` may be the same buffer.
inline constexpr KernelId kExclusiveScanU32Kernel{"exclusive_scan_u32", 2};

// compact_u32: keeps values[i] where flags[i] != 0, in order, at the front of `out`;
// count[0] = number kept. If `out` is too small the excess is dropped and the capacity
// overflow bit is set in status[0] (count still reports the true number).
inline constexpr KernelId kCompactU32Kernel{"compact_u32", 2};

// sort_u64: sorts keys[0, count) ascending by their low ceil(bits / 8) bytes, stably (bits = 64
// sorts whole keys). A least-significant-digit radix sort, one byte a round; each round is three
// passes: per-block digit counts (digit-major in scratch: scratch[digit * blocks + block]), one
// thread scanning them, and a stable per-block scatter. Rounds ping-pong between keys and alt;
// after an odd number of rounds a last pass copies the result back into keys.
inline constexpr KernelId kSortU64Kernel{"sort_u64", 1};

}  // namespace sluice::kernels

#endif  // SLUICE_KERNELS_BASIC_H_
