// The list of every kernel body, as an X-macro: both launchers (CPU and CUDA) build their
// dispatch tables from it, so a body added here is runnable on every backend.
#ifndef SLUICE_KERNELS_BODIES_H_
#define SLUICE_KERNELS_BODIES_H_

#include <cstdint>

#include "kernels/bodies/basic.h"
#include "kernels/bodies/bfs.h"
#include "kernels/bodies/ifds.h"

// The three passes of one radix-sort round.
#define SLUICE_SORT_ROUND_(X, r)                                  \
  X(kSortU64Count##r, ::sluice::kernels::SortU64Count<r>)         \
  X(kSortU64Offsets##r, ::sluice::kernels::SortU64Offsets<r>)     \
  X(kSortU64Scatter##r, ::sluice::kernels::SortU64Scatter<r>)

// X(enumerator, body type)
#define SLUICE_KERNEL_BODIES(X)                                   \
  X(kFillU32, ::sluice::kernels::FillU32)                         \
  X(kIotaU32, ::sluice::kernels::IotaU32)                         \
  X(kCopyRangeU32, ::sluice::kernels::CopyRangeU32)               \
  X(kAtomicAddU32, ::sluice::kernels::AtomicAddU32)               \
  X(kScanU32BlockSums, ::sluice::kernels::ScanU32BlockSums)       \
  X(kScanU32BlockOffsets, ::sluice::kernels::ScanU32BlockOffsets) \
  X(kScanU32Apply, ::sluice::kernels::ScanU32Apply)               \
  X(kCompactU32BlockCounts, ::sluice::kernels::CompactU32BlockCounts) \
  X(kCompactU32BlockOffsets, ::sluice::kernels::CompactU32BlockOffsets) \
  X(kCompactU32Scatter, ::sluice::kernels::CompactU32Scatter)     \
  SLUICE_SORT_ROUND_(X, 0)                                        \
  SLUICE_SORT_ROUND_(X, 1)                                        \
  SLUICE_SORT_ROUND_(X, 2)                                        \
  SLUICE_SORT_ROUND_(X, 3)                                        \
  SLUICE_SORT_ROUND_(X, 4)                                        \
  SLUICE_SORT_ROUND_(X, 5)                                        \
  SLUICE_SORT_ROUND_(X, 6)                                        \
  SLUICE_SORT_ROUND_(X, 7)                                        \
  X(kSortU64CopyBack, ::sluice::kernels::SortU64CopyBack)         \
  X(kBfsExpand, ::sluice::kernels::BfsExpand)                     \
  X(kBfsAdvanceCopy, ::sluice::kernels::BfsAdvanceCopy)           \
  X(kBfsAdvanceFinish, ::sluice::kernels::BfsAdvanceFinish)     \
  X(kIfdsSeed, ::sluice::kernels::ifds::Seed)                     \
  X(kIfdsPeDelta, ::sluice::kernels::ifds::PeDelta)               \
  X(kIfdsIncDelta, ::sluice::kernels::ifds::IncDelta)             \
  X(kIfdsEsDelta, ::sluice::kernels::ifds::EsDelta)               \
  X(kIfdsSumDelta, ::sluice::kernels::ifds::SumDelta)             \
  X(kIfdsIndexPe, ::sluice::kernels::ifds::IndexPass<0>)          \
  X(kIfdsIndexInc, ::sluice::kernels::ifds::IndexPass<1>)         \
  X(kIfdsIndexEs, ::sluice::kernels::ifds::IndexPass<2>)          \
  X(kIfdsIndexSum, ::sluice::kernels::ifds::IndexPass<3>)         \
  X(kIfdsAdvance, ::sluice::kernels::ifds::Advance)               \
  X(kIfdsRebuildPe, ::sluice::kernels::ifds::RebuildPass<0>)      \
  X(kIfdsRebuildInc, ::sluice::kernels::ifds::RebuildPass<1>)     \
  X(kIfdsRebuildEs, ::sluice::kernels::ifds::RebuildPass<2>)      \
  X(kIfdsRebuildSum, ::sluice::kernels::ifds::RebuildPass<3>)     \
  X(kIfdsMarkIndexed, ::sluice::kernels::ifds::MarkIndexed)       \
  X(kIfdsResults, ::sluice::kernels::ifds::Results)

namespace sluice {

enum class BodyId : uint16_t {
#define SLUICE_BODY_ENUM_(id, type) id,
  SLUICE_KERNEL_BODIES(SLUICE_BODY_ENUM_)
#undef SLUICE_BODY_ENUM_
  kNumBodies
};

}  // namespace sluice

#endif  // SLUICE_KERNELS_BODIES_H_
