// The resident IFDS solver: uploads the compiled problem once, then runs the semi-naive fixed
// point on the device through nothing but the ResidentDispatch interface. Each window is one
// DispatchRepeatedSequenceReadRangesInto whose only reads are the solver's state words (delta
// ranges, counts and the status flags); convergence, growth and errors are decided from those
// few bytes. A table past half full ends the window at that iteration (the device clears the
// loop guard's word), and the solver grows it and rebuilds, on the device, the hash sets and
// indexes that moved; a table that fills up within one iteration makes the solver grow every
// table that needs it, rebuild all sets and indexes from the relation lists and rerun the
// interrupted iteration. It never returns a wrong or partial answer.
#ifndef SLUICE_IFDS_RESIDENT_SOLVER_H_
#define SLUICE_IFDS_RESIDENT_SOLVER_H_

#include <cstdint>
#include <functional>

#include "absl/status/statusor.h"
#include "sluice/client/resident_dispatch.h"
#include "sluice/ifds/compile.h"
#include "sluice/ifds/problem.h"
#include "sluice/ifds/staged_flows.h"

namespace sluice::ifds {

struct ResidentProgress {
  uint32_t windows = 0;
  uint32_t iterations = 0;
  uint64_t path_edges = 0;
};

// The most slots a table may have: the device counts tuples and index entries in 32-bit words,
// and a count must be able to pass its table's size for an overflow to show. A problem that
// needs more is ResourceExhausted.
inline constexpr uint64_t kMaxTableSlots = uint64_t{1} << 31;

struct ResidentOptions {
  // Iterations in the first window; doubles up to max_window. Each window is a round trip to
  // the device (and under other clients' load a wait for its turn), while an early exit (below)
  // ends a window on the device once it has nothing to do or a table should grow: long windows
  // cost nothing, so the first is already the longest and a small solve is one window.
  uint32_t initial_window = 256;
  uint32_t max_window = 256;
  // Slots of every table at the start (rounded up to a power of two, at least 2, at most
  // kMaxTableSlots); 0 sizes them from the problem. Tiny values force every growth path (tests
  // do this).
  uint64_t initial_capacity = 0;
  // Each window's repeated group starts with a loop guard on the state's active word, so a
  // window ends on the device once the deltas are empty, a table should grow or one
  // overflowed. Off, a window always runs its full length (idle iterations' passes find empty
  // deltas and return at once; tables fill until an insert fails); benchmarks compare both.
  bool early_exit = true;
  // The most bits of the calls bitmap: a call edge's call for a fact is made once, claimed by
  // bit edge * facts + fact; calls past the bitmap are made every time (slower, never wrong).
  // The bitmap is call edges x facts bits, at most this many (4 MiB by default).
  uint64_t max_call_bits = uint64_t{1} << 25;
  // The most u32 words of the results' bitmap at once (64 MiB by default): a problem whose
  // nodes x ceil(facts / 32) words pass it lists its results in windows of nodes, each a pass
  // over the path edges. Tiny values force many windows (tests do this).
  uint64_t max_result_words = uint64_t{1} << 24;
  // The results' listing's first this many pairs (8 bytes each, 1 MiB by default) come back
  // behind the kernel that lists them, in its request; the rest in one read. An execute's
  // reads are held whole by a daemon, where a plain read streams, so the first part is small
  // (a client of a daemon reads the rest in windows, or through the memory it shares with a
  // daemon on its host a ring's slot at a time: RemoteDispatch::kSharedReadPieceBytes).
  // Tiny values move the line between them (tests do this).
  uint64_t result_first_pairs = uint64_t{1} << 17;
  // Called after every window (for progress reports); may be empty.
  std::function<void(const ResidentProgress&)> progress;
  // Called once the problem is compiled, before the compiled form is uploaded. From then on the
  // solver reads only the problem's node and fact counts and its seeds: a caller that owns the
  // problem may free the rest here (flows, edges, call sites, procedures: FreeCompiledParts),
  // which only compiling needed, so that the problem and its compiled form and the device's
  // copy are never held at once. May be empty.
  std::function<void()> compiled;
  // Called as compiling writes each part of the problem's structure into the image (see
  // PartCompiled), on the calling thread, before `compiled`: a caller that owns the problem may
  // give that part back there (FreePart). May be empty.
  PartCompiled part_compiled;
  // Called as compiling writes each range of the problem's flows into the image, on the threads
  // that write it (see FlowsCompiled): a caller that owns the problem may give those flows back
  // there (FlowTable::Release). May be empty.
  FlowsCompiled flows_compiled;
  // The problem's first flows, on the device already (StagedFlowLists, which took them as the
  // problem was read and was flushed; the problem need not hold more of them than their
  // count): they are copied into the compiled problem there, where compiling would have
  // written them, and their chunks freed. May be null.
  StagedFlowLists* staged = nullptr;
  // Called once the compiled problem is on the device and the host's copy given back, before
  // the first window: the host holds no more of the solve until its results. May be empty.
  std::function<void()> uploaded;
};

struct ResidentStats {
  uint64_t path_edges = 0;
  uint64_t incoming = 0;
  uint64_t end_summaries = 0;
  uint64_t summaries = 0;
  uint32_t iterations = 0;
  uint32_t windows = 0;
  uint32_t growths = 0;
  uint32_t partial_growths = 0;  // growths that rebuilt only the tables that moved
  // Growths after an insert failed (a table full mid-iteration, or a rebuild that could not
  // place a tuple: everything is rebuilt and the iteration reruns). Tables that fill gradually grow between iterations instead: the device
  // ends the window when one should grow.
  uint32_t overflow_growths = 0;
  uint64_t peak_device_bytes = 0;  // largest total of the solver's buffers at once
  // Wall-clock seconds by phase: compiling and uploading the problem and allocating the tables;
  // the windows; growing tables and rebuilding them; compacting, sorting and reading results.
  double setup_seconds = 0;
  double window_seconds = 0;
  double growth_seconds = 0;
  double results_seconds = 0;
  // Within set-up: compiling the problem to the device's layout, compiled_bytes of it (the
  // rest allocates the tables and uploads the compiled problem, upload_bytes of it: all of it
  // but what was staged, ResidentOptions::staged). Within results: download_bytes read back
  // (the marks' counts and the listed pairs).
  double compile_seconds = 0;
  uint64_t compiled_bytes = 0;
  uint64_t upload_bytes = 0;
  uint64_t download_bytes = 0;
  // The results' windows: a pass over the path edges each, marking the rows of as many nodes
  // as ResidentOptions::max_result_words holds (one, for most problems).
  uint32_t result_windows = 0;
};

// Solves `problem` (which must pass Validate) on `dispatch`. Frees every buffer it allocated.
// Errors: those of the dispatcher; FailedPrecondition when the backend's version names another
// kernel catalog than this build's; ResourceExhausted when tables cannot grow further; Internal
// if the device reports an index outside the compiled problem (a bug, never a partial answer).
absl::StatusOr<Solution> SolveResident(ResidentDispatch& dispatch, const Problem& problem,
                                       const ResidentOptions& options = {},
                                       ResidentStats* stats = nullptr);

}  // namespace sluice::ifds

#endif  // SLUICE_IFDS_RESIDENT_SOLVER_H_
