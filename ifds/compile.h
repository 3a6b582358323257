// Compiles an IFDS problem into the flat u32 image the device kernels read (the layout of
// kernels/bodies/ifds.h GraphLayout): CSR adjacency for intraprocedural and call edges, per-node
// exit and return-site tables, flattened flow functions, and the seeds.
#ifndef SLUICE_IFDS_COMPILE_H_
#define SLUICE_IFDS_COMPILE_H_

#include <cstdint>
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
};

// `problem` must pass Validate. ResourceExhausted if the image would not fit 32-bit offsets.
// The flows are written on `threads` threads (0: one per core, for problems large enough to
// gain from it); the image is the same on any number.
absl::StatusOr<CompiledProblem> Compile(const Problem& problem, unsigned threads = 0);

}  // namespace sluice::ifds

#endif  // SLUICE_IFDS_COMPILE_H_
