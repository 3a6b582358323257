#include "kernels/catalog.h"

#include <algorithm>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "kernels/bodies.h"

namespace sluice {
namespace {

using kernels::BfsAdvance;
using kernels::BfsExpand;
using kernels::BfsState;
using kernels::CompactU32;
using kernels::CopyRangeU32;
using kernels::kScanBlock;
using kernels::ScanU32;
using kernels::SortU64;

constexpr uint64_t kU32Max = 0xffffffffu;
constexpr uint64_t kU64Max = ~uint64_t{0};

uint64_t Elements(const KernelCall& call, int binding, uint32_t element_size) {
  return call.binding_bytes[binding] / element_size;
}

ThreadRule ElementsOf(int binding, bool overridable = true, uint32_t divisor = 1) {
  return ThreadRule{.kind = ThreadRule::Kind::kBindingElements,
                    .source = binding,
                    .divisor = divisor,
                    .overridable = overridable};
}

ThreadRule OneThread() { return ThreadRule{.kind = ThreadRule::Kind::kOne}; }

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

// Sizes are checked by the bindings' size rules; this is what they cannot say.
absl::Status ValidateBfsExpand(const KernelCall& call) {
  const uint64_t nodes = Elements(call, BfsExpand::kRowOffsets, 4) - 1;
  if (nodes > kU32Max - 1) {
    return absl::InvalidArgumentError("bfs_expand: at most 2^32 - 2 nodes");
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

// The bindings every IFDS solver kernel takes (kernels/bodies/ifds.h).
std::vector<BindingSpec> IfdsBindings() {
  namespace k = kernels::ifds;
  std::vector<BindingSpec> b(k::kNumBindings);
  b[k::kGraph] = {"graph", 4, Access::kRead, k::GraphLayout::kHeaderWords,
                  "the compiled problem: header and sections"};
  b[k::kState] = {"state", 4, Access::kReadWrite, k::State::kSlots,
                  "status, iteration, parity, per-table list and head counts, per-segment counts"};
  static const char* const table_names[k::kNumTables][k::kSegments] = {
      {"pe_0", "pe_1", "pe_2", "pe_3", "pe_4", "pe_5", "pe_6", "pe_7"},
      {"inc_0", "inc_1", "inc_2", "inc_3", "inc_4", "inc_5", "inc_6", "inc_7"},
      {"es_0", "es_1", "es_2", "es_3", "es_4", "es_5", "es_6", "es_7"},
      {"sum_0", "sum_1", "sum_2", "sum_3", "sum_4", "sum_5", "sum_6", "sum_7"},
      {"pec_0", "pec_1", "pec_2", "pec_3", "pec_4", "pec_5", "pec_6", "pec_7"}};
  static const char* const head_names[k::kNumJoined] = {"inc_heads", "es_heads", "sum_heads",
                                                         "pec_heads"};
  static const char* const list_names[k::kNumTables] = {"pe_list", "inc_list", "es_list",
                                                         "sum_list", "pec_list"};
  for (int t = 0; t < k::kNumTables; ++t) {
    for (uint32_t s = 0; s < k::kSegments; ++s) {
      b[k::TableBinding(t, s)] = {
          table_names[t][s], static_cast<uint32_t>(k::SlotBytes(t)), Access::kReadWrite, 1,
          k::Joined(t) ? "a hash-table segment: u64 packed tuples, then a u32 chain link per "
                         "slot; fewer than 2^29 slots"
                       : "a hash-table segment of u64 packed tuples; fewer than 2^29 slots"};
    }
    if (k::Joined(t)) {
      b[k::HeadsBinding(t)] = {head_names[t - 1], static_cast<uint32_t>(k::kHeadBytes),
                               Access::kReadWrite, 1,
                               "chain heads: u64 group keys, then a u32 first location per slot"};
    }
    b[k::kDeltas + t] = {list_names[t], 8, Access::kReadWrite, 2,
                         "two halves of packed tuples: the current delta and the next"};
  }
  b[k::kCalls] = {"calls", 4, Access::kReadWrite, 1,
                  "a bitmap: bit e * facts + d2 is set once call edge e was made for fact d2 "
                  "(pairs past its end are made every time)"};
  return b;
}

// Slots are placed by scaling a 32-bit hash to a table's size, and chains name them in 29 bits.
absl::Status ValidateSlots(std::string_view kernel, int binding, uint64_t bytes,
                           uint64_t slot_bytes) {
  if (bytes / slot_bytes > kernels::ifds::kMaxSegmentSlots) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: binding %d holds %d slots; a table segment holds fewer than 2^29", kernel, binding,
        bytes / slot_bytes));
  }
  return absl::OkStatus();
}

// A results window: rows of at least one word, and marks and counts that hold the window.
absl::Status ValidateResultWindow(std::string_view kernel, const KernelCall& call, int marks,
                                  int counts) {
  namespace k = kernels::ifds;
  const uint64_t nodes = call.params[k::ResultWindow::kNodes];
  const uint64_t row = call.params[k::ResultWindow::kWordsPerNode];
  if (row == 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: words_per_node is 0; a row holds at least one word", kernel));
  }
  const uint64_t words = nodes * row;  // both below 2^32: no overflow
  if (Elements(call, marks, 4) < words) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: marks holds %d words; the window needs nodes * words_per_node = %d", kernel,
        Elements(call, marks, 4), words));
  }
  const uint64_t blocks = k::ResultWindow::Blocks(words);
  if (Elements(call, counts, 4) < blocks + 1) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: counts holds %d words; the window's %d blocks need %d", kernel,
        Elements(call, counts, 4), blocks, blocks + 1));
  }
  return absl::OkStatus();
}

absl::Status ValidateIfdsTables(const KernelCall& call) {
  namespace k = kernels::ifds;
  for (int t = 0; t < k::kNumTables; ++t) {
    for (uint32_t s = 0; s < k::kSegments; ++s) {
      const int b = k::TableBinding(t, s);
      RETURN_IF_ERROR(ValidateSlots("IFDS", b, call.binding_bytes[b], k::SlotBytes(t)));
    }
    if (k::Joined(t)) {
      const int b = k::HeadsBinding(t);
      RETURN_IF_ERROR(ValidateSlots("IFDS", b, call.binding_bytes[b], k::kHeadBytes));
    }
  }
  return absl::OkStatus();
}

ThreadRule StateCount(uint32_t slot, int cap_binding) {
  return ThreadRule{.kind = ThreadRule::Kind::kCountInBinding,
                    .source = kernels::ifds::kState,
                    .count_index = slot,
                    .cap_binding = cap_binding};
}

void AddIfdsKernels(std::vector<KernelSpec>* k) {
  namespace ifds = kernels::ifds;
  using S = ifds::State;
  // The solver's kernels take the same bindings; their ids (names, versions) are next to their
  // bodies.
  const auto spec = [&](KernelId id, std::string_view summary, std::vector<PassSpec> passes,
                        std::string_view grid, std::vector<ParamSpec> params = {}) {
    k->push_back(KernelSpec{.name = id.name,
                            .version = id.version,
                            .summary = summary,
                            .bindings = IfdsBindings(),
                            .params = std::move(params),
                            .passes = std::move(passes),
                            .default_grid = grid,
                            .validate = ValidateIfdsTables});
  };
  spec(ifds::kSeedKernel, "IFDS seed scatter: a path edge (d, s, d) per seed",
       {{BodyId::kIfdsSeed, ThreadRule{.kind = ThreadRule::Kind::kCountInBinding,
                                       .source = ifds::kGraph,
                                       .count_index = ifds::GraphLayout::kSeeds,
                                       .cap_binding = ifds::kGraph}}},
       "one thread per seed (graph header)");
  // A path edge's thread applies a few flows and inserts what they give; a join's thread walks
  // a chain and inserts for every tuple on it (tens, often).
  const auto delta = [&](KernelId id, std::string_view summary, BodyId body, int r) {
    spec(id, summary,
         {{body, StateCount(S::Current(r), ifds::kDeltas + r), r == ifds::kPe ? 8u : 32u}},
         "one thread per delta tuple (state, read on the device)");
  };
  delta(ifds::kPeDeltaKernel,
        "IFDS: new path edges through intraprocedural edges, calls, summaries and exits",
        BodyId::kIfdsPeDelta, ifds::kPe);
  delta(ifds::kIncDeltaKernel, "IFDS: new incoming calls joined with end summaries",
        BodyId::kIfdsIncDelta, ifds::kInc);
  delta(ifds::kEsDeltaKernel, "IFDS: new end summaries joined with incoming calls",
        BodyId::kIfdsEsDelta, ifds::kEs);
  delta(ifds::kSumDeltaKernel, "IFDS: new summary edges joined with path edges at call nodes",
        BodyId::kIfdsSumDelta, ifds::kSum);
  spec(ifds::kAdvanceKernel, "IFDS: the next lists become the current deltas; the active "
                              "word is cleared when no delta is left or a table should grow",
       {{BodyId::kIfdsAdvance, OneThread()}}, "one thread");
  const BodyId merge[] = {BodyId::kIfdsMergePe, BodyId::kIfdsMergeInc, BodyId::kIfdsMergeEs,
                          BodyId::kIfdsMergeSum};
  std::vector<PassSpec> merge_passes;
  for (int r = 0; r < ifds::kNumRelations; ++r) {
    merge_passes.push_back({merge[r], StateCount(S::Next(r), ifds::kDeltas + r)});
  }
  merge_passes.push_back({BodyId::kIfdsMergeFinish, OneThread()});
  spec(ifds::kMergeKernel,
       "IFDS: what a halted iteration added joins the current deltas, for its rerun",
       std::move(merge_passes), "per relation one thread per tuple added, then one thread");
#define SLUICE_IFDS_SEGMENT_BODIES_(name, g)                                         \
  {BodyId::kIfds##name##g##_0, BodyId::kIfds##name##g##_1, BodyId::kIfds##name##g##_2, \
   BodyId::kIfds##name##g##_3, BodyId::kIfds##name##g##_4, BodyId::kIfds##name##g##_5, \
   BodyId::kIfds##name##g##_6, BodyId::kIfds##name##g##_7}
  static constexpr BodyId kReindex[ifds::kNumJoined][ifds::kSegments] = {
      SLUICE_IFDS_SEGMENT_BODIES_(Reindex, 0), SLUICE_IFDS_SEGMENT_BODIES_(Reindex, 1),
      SLUICE_IFDS_SEGMENT_BODIES_(Reindex, 2), SLUICE_IFDS_SEGMENT_BODIES_(Reindex, 3)};
#undef SLUICE_IFDS_SEGMENT_BODIES_
  std::vector<PassSpec> reindex = {{BodyId::kIfdsReindexReset, OneThread()}};
  for (int t = 1; t < ifds::kNumTables; ++t) {
    for (uint32_t s = 0; s < ifds::kSegments; ++s) {
      reindex.push_back({kReindex[t - 1][s], ElementsOf(ifds::TableBinding(t, s), false)});
    }
  }
  spec(ifds::kReindexKernel,
       "IFDS: the chains of the named joined tables built again from every tuple, into heads "
       "filled empty",
       std::move(reindex), "one thread per slot of every joined table's segments",
       {{"tables", (1u << ifds::kNumJoined) - 1,
         "bit t - 1 set: reindex joined table t (inc, es, sum, pec)"}});
  spec(ifds::kResumeKernel, "IFDS: clear an overflow so that the halted iteration can rerun",
       {{BodyId::kIfdsResume, OneThread()}}, "one thread");
  spec(ifds::kActivateKernel, "IFDS: set the active word after a growth",
       {{BodyId::kIfdsActivate, OneThread()}}, "one thread");

  k->push_back(KernelSpec{
      .name = ifds::kRehashKernel.name,
      .version = ifds::kRehashKernel.version,
      .summary = "IFDS: move the tuples of one table segment into a larger buffer",
      .bindings = {{"old", 8, Access::kRead, 0, "the segment"},
                   {"new", 8, Access::kReadWrite, 1, "the new segment, filled empty"},
                   {"status", 4, Access::kReadWrite, 1,
                    "status word: a tuple that finds no place is reported out of bounds"}},
      .params = {{"table", ifds::kNumTables - 1, "pe, inc, es, sum, pec: 0 to 4"},
                 {"segment", ifds::kSegments - 1, "the segment, 0 to 7"}},
      .passes = {{BodyId::kIfdsRehash, ElementsOf(ifds::Rehash::kOld, false)}},
      .default_grid = "one thread per old slot",
      .validate =
          [](const KernelCall& call) {
            return ValidateSlots("ifds_rehash", ifds::Rehash::kNew,
                                 call.binding_bytes[ifds::Rehash::kNew],
                                 ifds::SlotBytes(static_cast<int>(call.params[0])));
          },
  });

  std::vector<BindingSpec> result_bindings;
  static const char* const segment_names[] = {"pe_0", "pe_1", "pe_2", "pe_3",
                                              "pe_4", "pe_5", "pe_6", "pe_7"};
  for (uint32_t s = 0; s < ifds::kSegments; ++s) {
    result_bindings.push_back({segment_names[s], 8, Access::kRead, 1, "a path-edge segment"});
  }
  result_bindings.push_back({"marks", 4, Access::kReadWrite, 1,
                             "the window's bitmap, filled zero: nodes * words_per_node words"});
  result_bindings.push_back({"counts", 4, Access::kReadWrite, 1,
                             "one per block of 2048 marks words, plus one: left as offsets"});
  result_bindings.push_back(
      {"result_state", 4, Access::kReadWrite, 2, "u32[2]: status, pairs marked"});
  const BodyId result_bodies[] = {BodyId::kIfdsResults0, BodyId::kIfdsResults1,
                                  BodyId::kIfdsResults2, BodyId::kIfdsResults3,
                                  BodyId::kIfdsResults4, BodyId::kIfdsResults5,
                                  BodyId::kIfdsResults6, BodyId::kIfdsResults7};
  std::vector<PassSpec> result_passes;
  for (uint32_t s = 0; s < ifds::kSegments; ++s) {
    result_passes.push_back(
        {result_bodies[s], ElementsOf(ifds::Results::kSegment0 + static_cast<int>(s), false)});
  }
  result_passes.push_back(
      {BodyId::kIfdsResultsCount, ElementsOf(ifds::Results::kMarks, false, ifds::ResultWindow::kBlock)});
  result_passes.push_back({BodyId::kIfdsResultsOffsets, OneThread()});
  const std::vector<ParamSpec> window_params = {
      {"first_node", kU32Max, "the window's first node"},
      {"nodes", kU32Max, "nodes in the window"},
      {"words_per_node", 2048, "u32 words per node's row of facts: ceil(facts / 32), 1 or more"}};
  k->push_back(KernelSpec{
      .name = ifds::kResultsKernel.name,
      .version = ifds::kResultsKernel.version,
      .summary = "IFDS: the distinct (node, fact) pairs of every path edge in a window of "
                 "nodes, marked in a bitmap and counted per block",
      .bindings = std::move(result_bindings),
      .params = window_params,
      .passes = std::move(result_passes),
      .default_grid = "one thread per path-edge slot; one per block of 2048 marks words; one",
      .validate =
          [](const KernelCall& call) {
            for (int s = 0; s < static_cast<int>(ifds::kSegments); ++s) {
              RETURN_IF_ERROR(ValidateSlots("ifds_results", s, call.binding_bytes[s], 8));
            }
            return ValidateResultWindow("ifds_results", call, ifds::Results::kMarks,
                                        ifds::Results::kCounts);
          },
  });
  k->push_back(KernelSpec{
      .name = ifds::kResultsListKernel.name,
      .version = ifds::kResultsListKernel.version,
      .summary = "IFDS: the pairs ifds_results marked, listed in order (node << 16 | fact)",
      .bindings = {{"marks", 4, Access::kRead, 1, "the marks ifds_results left"},
                   {"counts", 4, Access::kRead, 1, "the offsets ifds_results left"},
                   {"out", 8, Access::kWrite, 1,
                    "the pairs: room for the count ifds_results reported (more are dropped)"}},
      .params = window_params,
      .passes = {{BodyId::kIfdsResultsList,
                  ElementsOf(ifds::ResultsList::kMarks, false, ifds::ResultWindow::kBlock)}},
      .default_grid = "one thread per block of 2048 marks words",
      .validate =
          [](const KernelCall& call) {
            return ValidateResultWindow("ifds_results_list", call, ifds::ResultsList::kMarks,
                                        ifds::ResultsList::kCounts);
          },
  });
}

std::vector<KernelSpec> BuiltinKernels() {
  std::vector<KernelSpec> k;
  const BindingSpec kStatusBinding{"status", 4, Access::kReadWrite, 1,
                                   "status word; overflow bits are ORed into element 0"};

  k.push_back(KernelSpec{
      .name = kernels::kFillU32Kernel.name,
      .version = kernels::kFillU32Kernel.version,
      .summary = "out[i] = value for every element of out",
      .bindings = {{"out", 4, Access::kWrite, 0, "elements to fill"}},
      .params = {{"value", kU32Max, "the value written"}},
      .passes = {{BodyId::kFillU32, ElementsOf(0)}},
      .default_grid = "one thread per element of out",
  });
  k.push_back(KernelSpec{
      .name = kernels::kIotaU32Kernel.name,
      .version = kernels::kIotaU32Kernel.version,
      .summary = "out[i] = start + i * step (mod 2^32)",
      .bindings = {{"out", 4, Access::kWrite, 0, "elements to write"}},
      .params = {{"start", kU32Max, "value of out[0]"}, {"step", kU32Max, "increment"}},
      .passes = {{BodyId::kIotaU32, ElementsOf(0)}},
      .default_grid = "one thread per element of out",
  });
  k.push_back(KernelSpec{
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
  k.push_back(KernelSpec{
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
  k.push_back(KernelSpec{
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
  k.push_back(KernelSpec{
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
  k.push_back(KernelSpec{
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
  k.push_back(KernelSpec{
      .name = kernels::kBfsExpandKernel.name,
      .version = kernels::kBfsExpandKernel.version,
      .summary = "one BFS level over a CSR graph: claim unvisited neighbours of the frontier",
      .bindings =
          {{"row_offsets", 4, Access::kRead, 1, "CSR row offsets, nodes + 1 elements"},
           {"columns", 4, Access::kRead, 0, "CSR column indices"},
           {"visited", 4, Access::kReadWrite, 0, "visited bitset, ceil(nodes / 32) words",
            {{.bindings = {BfsExpand::kRowOffsets}, .add = -1, .divide = 32}}},
           {"levels", 4, Access::kReadWrite, 0, "BFS level per node",
            {{.bindings = {BfsExpand::kRowOffsets}, .add = -1}}},
           {"frontier", 4, Access::kRead, 0, "current frontier node ids"},
           {"next", 4, Access::kReadWrite, 0, "next frontier; overflow sets the status bit"},
           {"state", 4, Access::kReadWrite, BfsState::kSlots,
            "u32[4]: frontier count, next count, level, status"}},
      .params = {},
      .passes = {{BodyId::kBfsExpand,
                  ThreadRule{.kind = ThreadRule::Kind::kCountInBinding,
                             .source = BfsExpand::kState,
                             .count_index = BfsState::kFrontierCount,
                             .cap_binding = BfsExpand::kFrontier}}},
      .default_grid = "state[0] threads (read on the device), at most elements of frontier",
      .validate = ValidateBfsExpand,
  });
  k.push_back(KernelSpec{
      .name = kernels::kBfsAdvanceKernel.name,
      .version = kernels::kBfsAdvanceKernel.version,
      .summary = "make next the frontier: copy, move the counts, advance the level",
      .bindings = {{"frontier", 4, Access::kWrite, 0, "receives the next frontier"},
                   {"next", 4, Access::kRead, 0, "the next frontier"},
                   {"state", 4, Access::kReadWrite, BfsState::kSlots,
                    "u32[4]: frontier count, next count, level, status"}},
      .params = {},
      .passes = {{BodyId::kBfsAdvanceCopy,
                  ThreadRule{.kind = ThreadRule::Kind::kCountInBinding,
                             .source = BfsAdvance::kState,
                             .count_index = BfsState::kNextCount,
                             .cap_binding = BfsAdvance::kNext}},
                 {BodyId::kBfsAdvanceFinish, OneThread()}},
      .default_grid = "state[1] threads (read on the device), then one thread",
  });
  k.push_back(KernelSpec{
      .name = kLoopGuardKernelId.name,
      .version = kLoopGuardKernelId.version,
      .summary = "loop guard: as the first repeated step, the repetition ends before an "
                 "iteration that starts with word[index] == 0",
      .bindings = {{"word", 4, Access::kRead, 1, "holds the guard word",
                    {{.params = {0}, .add = 1}}}},
      .params = {{"index", kU32Max, "element of word that must be nonzero to go on"}},
      .passes = {},
      .default_grid = "no threads: the device reads the word before each iteration",
      .loop_guard = true,
  });
  AddIfdsKernels(&k);
  return k;
}

std::string Fingerprint(const std::vector<KernelSpec>& kernels) {
  // FNV-1a over every name, version and pass list: stable across builds and platforms.
  uint64_t hash = 0xcbf29ce484222325ull;
  auto mix = [&hash](std::string_view bytes) {
    for (unsigned char c : bytes) {
      hash ^= c;
      hash *= 0x100000001b3ull;
    }
  };
  for (const KernelSpec& spec : kernels) {
    mix(spec.name);
    mix(absl::StrCat(":", spec.version, ":", spec.bindings.size(), ":", spec.params.size(),
                     spec.loop_guard ? ":guard" : ""));
    for (const auto& [first, second] : spec.may_alias) mix(absl::StrCat("=", first, ",", second));
    for (const PassSpec& pass : spec.passes) mix(absl::StrCat(static_cast<int>(pass.body), ","));
    mix(";");
  }
  return absl::StrFormat("%016x", hash);
}

}  // namespace

uint64_t SizeRule::MinElements(const KernelCall& call, absl::Span<const BindingSpec> specs) const {
  constexpr uint64_t kMax = ~uint64_t{0};
  uint64_t sum = 0;
  bool saturated = false;
  const auto accumulate = [&](uint64_t value) {
    if (value > kMax - sum) {
      saturated = true;
    } else {
      sum += value;
    }
  };
  for (int p : params) accumulate(call.params[p]);
  for (int b : bindings) accumulate(call.binding_bytes[b] / specs[b].element_size);
  if (saturated) return kMax;
  uint64_t total = 0;
  if (add >= 0) {
    if (static_cast<uint64_t>(add) > kMax - sum) return kMax;
    total = sum + static_cast<uint64_t>(add);
  } else {
    // -(add + 1) + 1 avoids negating INT64_MIN.
    const uint64_t subtract = static_cast<uint64_t>(-(add + 1)) + 1;
    if (sum <= subtract) return 0;
    total = sum - subtract;
  }
  const uint64_t d = divide == 0 ? 1 : divide;
  const uint64_t quotient = total / d + (total % d != 0 ? 1 : 0);
  const uint64_t m = multiply == 0 ? 1 : multiply;
  if (quotient > kMax / m) return kMax;
  return quotient * m;
}

std::string SizeRule::Describe(absl::Span<const BindingSpec> specs,
                               absl::Span<const ParamSpec> param_specs) const {
  std::vector<std::string> terms;
  for (int p : params) terms.emplace_back(param_specs[p].name);
  for (int b : bindings) terms.emplace_back(specs[b].name);
  std::string text = absl::StrJoin(terms, " + ");
  if (add > 0) absl::StrAppend(&text, " + ", add);
  if (add < 0) absl::StrAppend(&text, " - ", static_cast<uint64_t>(-(add + 1)) + 1);
  if (divide > 1) {
    text = terms.size() > 1 || add != 0 ? absl::StrCat("ceil((", text, ") / ", divide, ")")
                                        : absl::StrCat("ceil(", text, " / ", divide, ")");
  }
  if (multiply > 1) text = absl::StrCat(multiply, " * ", text);
  return text;
}

std::string_view AccessName(Access access) {
  switch (access) {
    case Access::kRead:
      return "read";
    case Access::kWrite:
      return "write";
    case Access::kReadWrite:
      return "read_write";
  }
  return "unknown";
}

KernelCatalog::KernelCatalog(std::vector<KernelSpec> kernels)
    : kernels_(std::move(kernels)), fingerprint_(Fingerprint(kernels_)) {}

const KernelCatalog& KernelCatalog::Builtin() {
  static const KernelCatalog* const catalog = new KernelCatalog(BuiltinKernels());
  return *catalog;
}

absl::StatusOr<const KernelSpec*> KernelCatalog::Find(std::string_view name) const {
  for (const KernelSpec& spec : kernels_) {
    if (spec.name == name) return &spec;
  }
  // The name comes from a client: quote it escaped and bounded.
  const absl::string_view shown(name.data(), std::min<size_t>(name.size(), 64));
  return absl::NotFoundError(absl::StrFormat("no kernel named \"%s\"%s in the catalog",
                                             absl::CHexEscape(shown),
                                             name.size() > shown.size() ? "..." : ""));
}

absl::Status KernelCatalog::Validate(const KernelSpec& spec, const KernelCall& call,
                                     const std::optional<Grid>& grid) {
  if (call.binding_bytes.size() != spec.bindings.size()) {
    return absl::InvalidArgumentError(absl::StrFormat("%s: takes %d bindings, got %d", spec.name,
                                                      spec.bindings.size(),
                                                      call.binding_bytes.size()));
  }
  if (call.params.size() != spec.params.size()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: takes %d parameters, got %d", spec.name, spec.params.size(), call.params.size()));
  }
  for (size_t b = 0; b < spec.bindings.size(); ++b) {
    const BindingSpec& binding = spec.bindings[b];
    const uint64_t elements = call.binding_bytes[b] / binding.element_size;
    if (elements < binding.min_elements) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: binding %d (%s) holds %d elements of %d bytes, needs at least %d", spec.name, b,
          binding.name, elements, binding.element_size, binding.min_elements));
    }
    for (const SizeRule& rule : binding.size_rules) {
      const uint64_t needed = rule.MinElements(call, spec.bindings);
      if (elements < needed) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "%s: binding %d (%s) holds %d elements of %d bytes, needs at least %s = %d",
            spec.name, b, binding.name, elements, binding.element_size,
            rule.Describe(spec.bindings, spec.params), needed));
      }
    }
  }
  if (!call.binding_ids.empty() && call.binding_ids.size() != call.binding_bytes.size()) {
    return absl::InternalError(absl::StrFormat("%s: %d binding ids for %d bindings", spec.name,
                                               call.binding_ids.size(),
                                               call.binding_bytes.size()));
  }
  if (!call.binding_ids.empty()) {
    for (size_t i = 0; i < spec.bindings.size(); ++i) {
      for (size_t j = i + 1; j < spec.bindings.size(); ++j) {
        if (call.binding_ids[i] != call.binding_ids[j]) continue;
        const bool written = spec.bindings[i].access != Access::kRead ||
                             spec.bindings[j].access != Access::kRead;
        const bool allowed = std::any_of(
            spec.may_alias.begin(), spec.may_alias.end(), [&](const std::pair<int, int>& p) {
              return (p.first == static_cast<int>(i) && p.second == static_cast<int>(j)) ||
                     (p.first == static_cast<int>(j) && p.second == static_cast<int>(i));
            });
        if (written && !allowed) {
          return absl::InvalidArgumentError(absl::StrFormat(
              "%s: bindings %d (%s) and %d (%s) are one buffer, which the kernel writes; bind "
              "distinct buffers",
              spec.name, i, spec.bindings[i].name, j, spec.bindings[j].name));
        }
      }
    }
  }
  for (size_t p = 0; p < spec.params.size(); ++p) {
    if (call.params[p] > spec.params[p].max_value) {
      return absl::InvalidArgumentError(
          absl::StrFormat("%s: parameter %d (%s) = %d exceeds its limit %d", spec.name, p,
                          spec.params[p].name, call.params[p], spec.params[p].max_value));
    }
  }
  for (const PassSpec& pass : spec.passes) {
    const ThreadRule& rule = pass.threads;
    if (rule.kind == ThreadRule::Kind::kParam && call.params[rule.source] > kMaxGridThreads) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: parameter %s asks for more than 2^32 threads", spec.name,
          spec.params[rule.source].name));
    }
    if (rule.kind == ThreadRule::Kind::kCountInBinding &&
        (rule.count_index >= call.binding_bytes[rule.source] / 4 ||
         (rule.base_index >= 0 &&
          static_cast<uint64_t>(rule.base_index) >= call.binding_bytes[rule.source] / 4))) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: count slot %d is outside binding %s", spec.name, rule.count_index,
          spec.bindings[rule.source].name));
    }
  }
  if (grid.has_value()) {
    const bool overridable = std::any_of(spec.passes.begin(), spec.passes.end(),
                                         [](const PassSpec& p) { return p.threads.overridable; });
    if (!overridable) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: its grid is fixed (%s); a grid override is not accepted", spec.name,
          spec.default_grid));
    }
    const uint64_t xy = uint64_t{(*grid)[0]} * (*grid)[1];
    if (xy > kMaxGridThreads || xy * (*grid)[2] > kMaxGridThreads) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: grid %dx%dx%d exceeds 2^32 threads", spec.name, (*grid)[0], (*grid)[1],
          (*grid)[2]));
    }
  }
  if (spec.validate != nullptr) return spec.validate(call);
  return absl::OkStatus();
}

std::vector<PassLaunch> KernelCatalog::Plan(const KernelSpec& spec, const KernelCall& call,
                                            const std::optional<Grid>& grid) {
  std::vector<PassLaunch> passes;
  passes.reserve(spec.passes.size());
  for (const PassSpec& pass : spec.passes) {
    const ThreadRule& rule = pass.threads;
    ThreadCount count{.fixed = 0, .count_binding = -1, .count_index = 0, .divisor = 1, .cap = 0,
                      .base_index = -1};
    const uint64_t divisor = rule.divisor;
    switch (rule.kind) {
      case ThreadRule::Kind::kOne:
        count.fixed = 1;
        break;
      case ThreadRule::Kind::kBindingElements: {
        const uint64_t elements =
            call.binding_bytes[rule.source] / spec.bindings[rule.source].element_size;
        count.fixed = (elements + divisor - 1) / divisor;
        break;
      }
      case ThreadRule::Kind::kParam:
        count.fixed = (call.params[rule.source] + divisor - 1) / divisor;
        break;
      case ThreadRule::Kind::kCountInBinding: {
        count.count_binding = rule.source;
        count.count_index = rule.count_index;
        count.base_index = rule.base_index;
        count.divisor = rule.divisor;
        const uint64_t cap_elements =
            rule.cap_binding < 0
                ? kMaxGridThreads
                : call.binding_bytes[rule.cap_binding] /
                      spec.bindings[rule.cap_binding].element_size;
        count.cap = std::min<uint64_t>((cap_elements + divisor - 1) / divisor, kMaxGridThreads);
        break;
      }
    }
    if (grid.has_value() && rule.overridable) {
      count = ThreadCount{.fixed = uint64_t{(*grid)[0]} * (*grid)[1] * (*grid)[2],
                          .count_binding = -1,
                          .count_index = 0,
                          .divisor = 1,
                          .cap = 0,
                          .base_index = -1};
    }
    const bool overridden = grid.has_value() && rule.overridable;
    passes.push_back(PassLaunch{pass.body, count, (overridden ? 1 : rule.divisor) * pass.cost});
  }
  return passes;
}

}  // namespace sluice
