// The BFS step kernels' specs (bodies: kernels/bodies/bfs.h).
#include <vector>

#include "sluice/kernels/bodies/bfs.h"
#include "sluice/kernels/specs/families.h"

namespace sluice::specs {
namespace {

using kernels::BfsAdvance;
using kernels::BfsExpand;
using kernels::BfsState;

// Sizes are checked by the bindings' size rules; this is what they cannot say.
absl::Status ValidateBfsExpand(const KernelCall& call) {
  const uint64_t nodes = Elements(call, BfsExpand::kRowOffsets, 4) - 1;
  if (nodes > kU32Max - 1) {
    return absl::InvalidArgumentError("bfs_expand: at most 2^32 - 2 nodes");
  }
  return absl::OkStatus();
}

}  // namespace

void AddBfsKernels(std::vector<KernelSpec>* k) {
  k->push_back(KernelSpec{
      .name = kernels::kBfsExpandKernel.name,
      .version = kernels::kBfsExpandKernel.version,
      .summary = "one BFS level over a CSR graph: claim unvisited neighbours of the frontier",
      .bindings =
          {{"row_offsets", 4, Access::kRead, 1,
            "CSR row offsets, nodes + 1 elements: at most 2^32 - 2 nodes"},
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
  k->push_back(KernelSpec{
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
}

}  // namespace sluice::specs
