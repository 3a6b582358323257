// Compiles an IFDS problem into the flat u32 image the device kernels read (the layout of
// kernels/bodies/ifds.h GraphLayout): CSR adjacency for intraprocedural and call edges, per-node
// exit and return-site tables, flattened flow functions, and the seeds.
#ifndef SLUICE_IFDS_COMPILE_H_
#define SLUICE_IFDS_COMPILE_H_

#include <array>
#include <cstdint>
#include <functional>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "sluice/base/mapped_buffer.h"
#include "sluice/ifds/problem.h"

namespace sluice::ifds {

struct CompiledProblem {
  // The image, in memory of its own: it goes back to the system once uploaded and dropped.
  MappedBuffer buffer;
  absl::Span<const uint32_t> words() const { return buffer.As<uint32_t>(); }
  uint32_t call_edges = 0;
  uint32_t intra_edges = 0;
  // How many facts each kind of edge's flows can yield, summed over the edges of that kind: a
  // flow yields its pairs and gens, and with `id` min(facts, 64) more. A measure of how many
  // tuples the solve's tables may take, for sizing them (problems with explicit pairs over a
  // few facts in scope need far fewer than a fact per node and fact).
  struct Reach {
    uint64_t intra = 0;           // normal edges
    uint64_t call_to_return = 0;  // call-to-return edges
    uint64_t calls = 0;           // call edges' call flows
    uint64_t returns = 0;         // call edges' return flows
  } reach;
};

// Told, from the threads that write the image, of ranges of flows [first, last) that are in it
// and that compiling reads no more (ranges that do not overlap, each once): the problem's owner
// may give them back as the image grows (FlowTable::Release), so that the problem's flows and
// the image's are never both whole.
using FlowsCompiled = std::function<void(size_t first, size_t last)>;

// Told, on the thread that calls Compile, of each part of the problem's structure in turn
// (ProblemPart's order) once the image holds it and compiling reads it no more: the problem's
// owner may give it back there (FreePart), so that the structure and the image's are never
// both whole either.
using PartCompiled = std::function<void(ProblemPart part)>;

// The header of a flow whose kills, gens and pairs begin at `begins` in their sections, as the
// compiled problem holds it (GraphLayout::kFlowHeaders: the identity flag in the kills' word).
std::array<uint32_t, 3> FlowHeader(const FlowTable::Begins& begins, bool identity);

// Flows [0, count) of a problem are elsewhere (StagedFlowLists): the problem holds their
// count alone. `outputs[f]` is what flow f yields besides the identity's (its gens and pairs),
// its identity flag in the top bit (StagedFlowLists::outputs).
struct FlowsElsewhere {
  size_t count = 0;
  absl::Span<const uint32_t> outputs;
};

// `problem` must pass Validate. ResourceExhausted if the image would not fit 32-bit offsets.
// The flows are written on `threads` threads (0: one per core, for problems large enough to
// gain from it); the image is the same on any number. The places of flows `elsewhere` (their
// headers, kills, gens and pairs, from each section's start) are left unwritten, and
// untouched (no memory of the image's is taken for them), for their owner to fill; their
// outputs stand in for them in `reach`. InvalidArgument if there are fewer outputs than such
// flows, or more such flows than the problem has. `flows_compiled` and `part_compiled` are
// told of what the image holds as it is written (neither is told anything when compiling
// fails).
absl::StatusOr<CompiledProblem> Compile(const Problem& problem, unsigned threads = 0,
                                        const FlowsCompiled& flows_compiled = nullptr,
                                        const FlowsElsewhere& elsewhere = {},
                                        const PartCompiled& part_compiled = nullptr);

}  // namespace sluice::ifds

#endif  // SLUICE_IFDS_COMPILE_H_
