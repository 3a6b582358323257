// The general-purpose kernels' specs: fill, iota, copy_range, atomic_add, exclusive scan, ordered
// stream compaction and radix sort (bodies: kernels/bodies/basic.h).
#include <vector>

#include "absl/strings/str_format.h"
#include "sluice/kernels/bodies/basic.h"
#include "sluice/kernels/specs/families.h"

namespace sluice::specs {
namespace {

using kernels::CompactU32;
using kernels::CopyRangeU32;
using kernels::kScanBlock;
using kernels::ScanU32;
using kernels::SortU64;

// Sizes are checked by the bindings' size rules; this is what they cannot say.
absl::Status ValidateCopyRange(const KernelCall& call) {
  const uint64_t src_offset = call.params[CopyRangeU32::kSrcOffset];
  const uint64_t dst_offset = call.params[CopyRangeU32::kDstOffset];
  const uint64_t count = call.params[CopyRangeU32::kCount];
  if (!call.binding_ids.empty() &&
      call.binding_ids[CopyRangeU32::kSrc] == call.binding_ids[CopyRangeU32::kDst] &&
      src_offset < dst_offset + count && dst_offset < src_offset + count) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "copy_range_u32: src and dst are one buffer and [%d, +%d) overlaps [%d, +%d)",
        src_offset, count, dst_offset, count));
  }
  return absl::OkStatus();
}

std::vector<PassSpec> SortPasses() {
  static constexpr BodyId kRounds[SortU64::kMaxRounds][3] = {
#define SLUICE_SORT_IDS_(r) \
  {BodyId::kSortU64Count##r, BodyId::kSortU64Offsets##r, BodyId::kSortU64Scatter##r},
      SLUICE_SORT_IDS_(0) SLUICE_SORT_IDS_(1) SLUICE_SORT_IDS_(2) SLUICE_SORT_IDS_(3)
      SLUICE_SORT_IDS_(4) SLUICE_SORT_IDS_(5) SLUICE_SORT_IDS_(6) SLUICE_SORT_IDS_(7)
#undef SLUICE_SORT_IDS_
  };
  const ThreadRule per_block{.kind = ThreadRule::Kind::kParam,
                             .source = SortU64::kCount,
                             .divisor = kScanBlock};
  std::vector<PassSpec> passes;
  for (const auto& round : kRounds) {
    passes.push_back({round[0], per_block});
    passes.push_back({round[1], OneThread()});
    passes.push_back({round[2], per_block});
  }
  passes.push_back({BodyId::kSortU64CopyBack,
                    ThreadRule{.kind = ThreadRule::Kind::kParam, .source = SortU64::kCount}});
  return passes;
}

}  // namespace

void AddBasicKernels(std::vector<KernelSpec>* k) {
  const BindingSpec kStatusBinding{"status", 4, Access::kReadWrite, 1,
                                   "status word; overflow bits are ORed into element 0"};
  k->push_back(KernelSpec{
      .name = kernels::kFillU32Kernel.name,
      .version = kernels::kFillU32Kernel.version,
      .summary = "out[i] = value for every element of out",
      .bindings = {{"out", 4, Access::kWrite, 0, "elements to fill"}},
      .params = {{"value", kU32Max, "the value written"}},
      .passes = {{BodyId::kFillU32, ElementsOf(0)}},
      .default_grid = "one thread per element of out",
  });
  k->push_back(KernelSpec{
      .name = kernels::kIotaU32Kernel.name,
      .version = kernels::kIotaU32Kernel.version,
      .summary = "out[i] = start + i * step (mod 2^32)",
      .bindings = {{"out", 4, Access::kWrite, 0, "elements to write"}},
      .params = {{"start", kU32Max, "value of out[0]"}, {"step", kU32Max, "increment"}},
      .passes = {{BodyId::kIotaU32, ElementsOf(0)}},
      .default_grid = "one thread per element of out",
  });
  k->push_back(KernelSpec{
      .name = kernels::kCopyRangeU32Kernel.name,
      .version = kernels::kCopyRangeU32Kernel.version,
      .summary = "dst[dst_offset + i] = src[src_offset + i] for i < count",
      .bindings = {{"src", 4, Access::kRead, 0, "source elements",
                    {{.params = {CopyRangeU32::kSrcOffset, CopyRangeU32::kCount}}}},
                   {"dst", 4, Access::kWrite, 0, "destination elements",
                    {{.params = {CopyRangeU32::kDstOffset, CopyRangeU32::kCount}}}}},
      .params = {{"src_offset", kU64Max, "first source element"},
                 {"dst_offset", kU64Max, "first destination element"},
                 {"count", kU32Max, "elements to copy"}},
      .passes = {{BodyId::kCopyRangeU32,
                  ThreadRule{.kind = ThreadRule::Kind::kParam,
                             .source = CopyRangeU32::kCount,
                             .overridable = true}}},
      .default_grid = "count threads",
      .validate = ValidateCopyRange,
      .may_alias = {{CopyRangeU32::kSrc, CopyRangeU32::kDst}},
  });
  k->push_back(KernelSpec{
      .name = kernels::kAtomicAddU32Kernel.name,
      .version = kernels::kAtomicAddU32Kernel.version,
      .summary = "every thread atomically adds value to counters[index]",
      .bindings = {{"counters", 4, Access::kReadWrite, 1, "counter array",
                    {{.params = {0}, .add = 1}}}},
      .params = {{"index", kU32Max, "counter to add to; must be inside counters"},
                 {"value", kU32Max, "amount each thread adds"}},
      .passes = {{BodyId::kAtomicAddU32, ThreadRule{.kind = ThreadRule::Kind::kOne,
                                                    .overridable = true}}},
      .default_grid = "one thread",
  });
  k->push_back(KernelSpec{
      .name = kernels::kExclusiveScanU32Kernel.name,
      .version = kernels::kExclusiveScanU32Kernel.version,
      .summary = "out[i] = in[0] + ... + in[i-1] (mod 2^32); total[0] = sum; in may equal out",
      .bindings = {{"in", 4, Access::kRead, 0, "input elements (n = elements of in)"},
                   {"out", 4, Access::kWrite, 0, "at least n elements",
                    {{.bindings = {ScanU32::kIn}}}},
                   {"total", 4, Access::kWrite, 1, "receives the sum of all n elements"},
                   {"scratch", 4, Access::kReadWrite, 0,
                    "at least ceil(n / 2048) elements of scratch",
                    {{.bindings = {ScanU32::kIn}, .divide = kScanBlock}}}},
      .params = {},
      .passes = {{BodyId::kScanU32BlockSums, ElementsOf(ScanU32::kIn, false, kScanBlock)},
                 {BodyId::kScanU32BlockOffsets, OneThread()},
                 {BodyId::kScanU32Apply, ElementsOf(ScanU32::kIn, false, kScanBlock)}},
      .default_grid = "fixed: ceil(n / 2048) threads, 1 thread, ceil(n / 2048) threads",
      .may_alias = {{ScanU32::kIn, ScanU32::kOut}},
  });
  k->push_back(KernelSpec{
      .name = kernels::kCompactU32Kernel.name,
      .version = kernels::kCompactU32Kernel.version,
      .summary = "ordered stream compaction: out = values[i] where flags[i] != 0; count[0] = kept",
      .bindings = {{"values", 4, Access::kRead, 0, "input elements (n = elements of values)"},
                   {"flags", 4, Access::kRead, 0, "at least n elements; nonzero keeps",
                    {{.bindings = {CompactU32::kValues}}}},
                   {"out", 4, Access::kWrite, 0, "kept values; excess sets the overflow bit"},
                   {"count", 4, Access::kWrite, 1, "receives the number of kept values"},
                   kStatusBinding,
                   {"scratch", 4, Access::kReadWrite, 0,
                    "at least ceil(n / 2048) elements of scratch",
                    {{.bindings = {CompactU32::kValues}, .divide = kScanBlock}}}},
      .params = {},
      .passes = {{BodyId::kCompactU32BlockCounts,
                  ElementsOf(CompactU32::kValues, false, kScanBlock)},
                 {BodyId::kCompactU32BlockOffsets, OneThread()},
                 {BodyId::kCompactU32Scatter,
                  ElementsOf(CompactU32::kValues, false, kScanBlock)}},
      .default_grid = "fixed: ceil(n / 2048) threads, 1 thread, ceil(n / 2048) threads",
  });
  k->push_back(KernelSpec{
      .name = kernels::kSortU64Kernel.name,
      .version = kernels::kSortU64Kernel.version,
      .summary = "sorts keys[0, count) ascending by their low ceil(bits / 8) bytes, stably "
                 "(bits = 64: whole keys); LSD radix sort, CUB on a GPU",
      .bindings = {{"keys", 8, Access::kReadWrite, 0, "the keys; sorted in place",
                    {{.params = {SortU64::kCount}}}},
                   {"alt", 8, Access::kReadWrite, 0, "at least count elements of scratch",
                    {{.params = {SortU64::kCount}}}},
                   {"scratch", 4, Access::kReadWrite, 0,
                    "at least 256 * ceil(count / 2048) elements of scratch",
                    {{.params = {SortU64::kCount},
                      .divide = kScanBlock,
                      .multiply = SortU64::kDigits}}}},
      .params = {{"count", kU32Max, "keys to sort, from the first"},
                 {"bits", 64, "low bits that decide the order, rounded up to whole bytes"}},
      .passes = SortPasses(),
      .default_grid = "fixed: per round of 8 bits, ceil(count / 2048) threads, 1 thread, "
                      "ceil(count / 2048) threads; then count threads",
  });
}

}  // namespace sluice::specs
