// Every kernel body by name, as an X-macro, and the enum of their ids: what the catalog and the
// launchers' dispatch tables are built from, so a body added here is runnable on every backend.
// Names only: the bodies themselves are in kernels/bodies.h, which only the launchers and the
// tests of bodies include, so that naming a body (the catalog) compiles none.
#ifndef SLUICE_KERNELS_BODY_LIST_H_
#define SLUICE_KERNELS_BODY_LIST_H_

#include <cstdint>

// The three passes of one radix-sort round.
#define SLUICE_SORT_ROUND_(X, r)                                  \
  X(kSortU64Count##r, ::sluice::kernels::SortU64Count<r>)         \
  X(kSortU64Offsets##r, ::sluice::kernels::SortU64Offsets<r>)     \
  X(kSortU64Scatter##r, ::sluice::kernels::SortU64Scatter<r>)

// One pass per segment (kernels::ifds::kSegments) of table group `g`: kIfdsReindex1_2 is the
// reindex pass of joined table 2's segment 2.
#define SLUICE_IFDS_PER_SEGMENT_(X, name, body, g)                            \
  X(kIfds##name##g##_0, ::sluice::kernels::ifds::body<8 * g + 0>)             \
  X(kIfds##name##g##_1, ::sluice::kernels::ifds::body<8 * g + 1>)             \
  X(kIfds##name##g##_2, ::sluice::kernels::ifds::body<8 * g + 2>)             \
  X(kIfds##name##g##_3, ::sluice::kernels::ifds::body<8 * g + 3>)             \
  X(kIfds##name##g##_4, ::sluice::kernels::ifds::body<8 * g + 4>)             \
  X(kIfds##name##g##_5, ::sluice::kernels::ifds::body<8 * g + 5>)             \
  X(kIfds##name##g##_6, ::sluice::kernels::ifds::body<8 * g + 6>)             \
  X(kIfds##name##g##_7, ::sluice::kernels::ifds::body<8 * g + 7>)

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
  X(kIfdsAdvance, ::sluice::kernels::ifds::Advance)               \
  X(kIfdsMergePe, ::sluice::kernels::ifds::MergePass<0>)          \
  X(kIfdsMergeInc, ::sluice::kernels::ifds::MergePass<1>)         \
  X(kIfdsMergeEs, ::sluice::kernels::ifds::MergePass<2>)          \
  X(kIfdsMergeSum, ::sluice::kernels::ifds::MergePass<3>)         \
  X(kIfdsMergeFinish, ::sluice::kernels::ifds::MergeFinish)       \
  X(kIfdsReindexReset, ::sluice::kernels::ifds::ReindexReset)     \
  SLUICE_IFDS_PER_SEGMENT_(X, Reindex, ReindexPass, 0)           \
  SLUICE_IFDS_PER_SEGMENT_(X, Reindex, ReindexPass, 1)           \
  SLUICE_IFDS_PER_SEGMENT_(X, Reindex, ReindexPass, 2)           \
  SLUICE_IFDS_PER_SEGMENT_(X, Reindex, ReindexPass, 3)           \
  X(kIfdsResume, ::sluice::kernels::ifds::Resume)                 \
  X(kIfdsActivate, ::sluice::kernels::ifds::Activate)             \
  X(kIfdsRehash, ::sluice::kernels::ifds::RehashPass)             \
  X(kIfdsResults0, ::sluice::kernels::ifds::ResultsPass<0>)       \
  X(kIfdsResults1, ::sluice::kernels::ifds::ResultsPass<1>)       \
  X(kIfdsResults2, ::sluice::kernels::ifds::ResultsPass<2>)       \
  X(kIfdsResults3, ::sluice::kernels::ifds::ResultsPass<3>)       \
  X(kIfdsResults4, ::sluice::kernels::ifds::ResultsPass<4>)       \
  X(kIfdsResults5, ::sluice::kernels::ifds::ResultsPass<5>)       \
  X(kIfdsResults6, ::sluice::kernels::ifds::ResultsPass<6>)       \
  X(kIfdsResults7, ::sluice::kernels::ifds::ResultsPass<7>)       \
  X(kIfdsResultsCount, ::sluice::kernels::ifds::ResultsCount)     \
  X(kIfdsResultsOffsets, ::sluice::kernels::ifds::ResultsOffsets) \
  X(kIfdsResultsList, ::sluice::kernels::ifds::ResultsList)

namespace sluice {

enum class BodyId : uint16_t {
#define SLUICE_BODY_ENUM_(id, type) id,
  SLUICE_KERNEL_BODIES(SLUICE_BODY_ENUM_)
#undef SLUICE_BODY_ENUM_
  kNumBodies
};

}  // namespace sluice

#endif  // SLUICE_KERNELS_BODY_LIST_H_
