// Writing solutions: `node<TAB>fact` lines sorted bytewise by node name then fact name, or JSON.
#ifndef SLUICE_IFDS_OUTPUT_H_
#define SLUICE_IFDS_OUTPUT_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "sluice/base/mapped_buffer.h"
#include "sluice/ifds/problem.h"

namespace sluice::ifds {

// The order the writers put an answer in: nodes by their names (bytewise), and each node's facts
// by theirs. Ranking a large problem's node names is a sort of them, most of what writing an
// answer costs besides formatting it: a caller may rank them on the cores its solve leaves idle
// while it runs (all of them where the device is a daemon's or a GPU, the gaps between passes on
// the CPU device: `sluice solve` does, base/idle_work.h) and hand the writers the order.
struct OutputOrder {
  PageVector<uint32_t> node_order;             // [r]: the node ranked r
  PageVector<uint32_t> fact_order, fact_rank;  // and [f]: fact f's rank
};
OutputOrder RankOutput(const Problem& problem);

// Where a writer puts the answer: a block at a time (at most kOutputBlockBytes, in order);
// an error it returns stops the writer, which returns it.
using OutputSink = absl::FunctionRef<absl::Status(std::string_view block)>;
inline constexpr size_t kOutputBlockBytes = size_t{1} << 20;

// One "node\tfact\n" line per fact holding at a node, sorted bytewise by node name, then fact
// name. The zero fact is left out unless `include_zero`. `order`, if set, is RankOutput's of
// `problem`.
absl::Status WriteTsv(const Problem& problem, const Solution& solution, bool include_zero,
                      OutputSink sink, const OutputOrder* order = nullptr);
std::string FormatTsv(const Problem& problem, const Solution& solution, bool include_zero);

// {"results":[{"node":"n","facts":["a","b"]},...]} in the same order, plus `extra` members
// (already JSON, e.g. "\"stats\":{...}") when not empty.
absl::Status WriteJson(const Problem& problem, const Solution& solution, bool include_zero,
                       std::string_view extra, OutputSink sink,
                       const OutputOrder* order = nullptr);
std::string FormatJson(const Problem& problem, const Solution& solution, bool include_zero,
                       const std::string& extra = "");

namespace internal {

// How the writers split their work: pieces of whole nodes holding about `pairs_per_piece`
// pairs, formatted on `threads` threads (0: one per core). For tests; the writers above use
// the defaults.
struct OutputPieces {
  uint64_t pairs_per_piece = uint64_t{1} << 15;
  int threads = 0;
  // Where each node's pairs begin is kept in 4 bytes a node for solutions of at most this many
  // pairs, in 8 for larger ones.
  uint64_t narrow_starts_up_to = UINT32_MAX;
};
absl::Status WriteTsv(const Problem& problem, const Solution& solution, bool include_zero,
                      const OutputPieces& options, OutputSink sink,
                      const OutputOrder* order = nullptr);
absl::Status WriteJson(const Problem& problem, const Solution& solution, bool include_zero,
                       std::string_view extra, const OutputPieces& options, OutputSink sink,
                       const OutputOrder* order = nullptr);

}  // namespace internal

// A 64-bit digest of the solution's (node id, fact id) pairs in order (the order every solver
// returns: by node, then fact), FNV-1a's steps taken a pair at a time: two solutions of one
// problem are equal exactly when their digests are, up to hash collisions. `sluice solve
// --stats` and `sluice analyze --stats` print it, so solvers, runs and machines can be compared
// without the full answer.
uint64_t SolutionDigest(const Solution& solution);

}  // namespace sluice::ifds

#endif  // SLUICE_IFDS_OUTPUT_H_
