// The resident IFDS solver's kernels' specs: every kernel takes the same bindings (bodies:
// kernels/bodies/ifds.h; what the host needs of them: kernels/ifds.h).
#include <string_view>
#include <vector>

#include "absl/strings/str_format.h"
#include "sluice/base/status_macros.h"
#include "sluice/kernels/bodies/ifds.h"
#include "sluice/kernels/specs/families.h"

namespace sluice::specs {
namespace {

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
      b[k::HeadsBinding(t)] = {
          head_names[t - 1], static_cast<uint32_t>(k::kHeadBytes), Access::kReadWrite, 1,
          "chain heads: u64 group keys, then a u32 first location per slot; fewer than 2^29 "
          "slots"};
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

}  // namespace

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
                   {"new", 8, Access::kReadWrite, 1,
                    "the new segment, filled empty: fewer than 2^29 slots of the table's (8 "
                    "bytes for pe, 12 for the others)"},
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
    result_bindings.push_back(
        {segment_names[s], 8, Access::kRead, 1, "a path-edge segment; fewer than 2^29 slots"});
  }
  // A window of `nodes` rows of `words_per_node` words, and a count per block of its words plus
  // one: what ifds_results and ifds_results_list both need.
  using Window = ifds::ResultWindow;
  const SizeRule marks_rule{.products = {{Window::kNodes, Window::kWordsPerNode}}};
  const SizeRule counts_rule{.add = static_cast<int64_t>(Window::kBlock),
                             .divide = Window::kBlock,
                             .products = {{Window::kNodes, Window::kWordsPerNode}}};
  result_bindings.push_back({"marks", 4, Access::kReadWrite, 1,
                             "the window's bitmap, filled zero: nodes * words_per_node words",
                             {marks_rule}});
  result_bindings.push_back({"counts", 4, Access::kReadWrite, 1,
                             "one per block of 2048 marks words, plus one: left as offsets",
                             {counts_rule}});
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
  result_passes.push_back({BodyId::kIfdsResultsCount,
                           ElementsOf(ifds::Results::kMarks, false, ifds::ResultWindow::kBlock)});
  result_passes.push_back({BodyId::kIfdsResultsOffsets, OneThread()});
  const std::vector<ParamSpec> window_params = {
      {"first_node", kU32Max, "the window's first node"},
      {"nodes", kU32Max, "nodes in the window"},
      {"words_per_node", 2048, "u32 words per node's row of facts: ceil(facts / 32), 1 or more",
       1}};
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
            return absl::OkStatus();
          },
  });
  k->push_back(KernelSpec{
      .name = ifds::kResultsListKernel.name,
      .version = ifds::kResultsListKernel.version,
      .summary = "IFDS: the pairs ifds_results marked, listed in order (node << 16 | fact)",
      .bindings = {{"marks", 4, Access::kRead, 1, "the marks ifds_results left", {marks_rule}},
                   {"counts", 4, Access::kRead, 1, "the offsets ifds_results left",
                    {counts_rule}},
                   {"out", 8, Access::kWrite, 1,
                    "the pairs: room for the count ifds_results reported (more are dropped)"}},
      .params = window_params,
      .passes = {{BodyId::kIfdsResultsList,
                  ElementsOf(ifds::ResultsList::kMarks, false, ifds::ResultWindow::kBlock)}},
      .default_grid = "one thread per block of 2048 marks words",
  });
}

}  // namespace sluice::specs
