// What the host side of the resident IFDS solver needs of its kernels (ifds/resident_solver.cc,
// ifds/compile.cc): the tables and their bindings, the state words, the growth policy shared
// with ifds_advance, the compiled graph's layout, the results' windows, and each kernel's id
// (name and behaviour version) with what it does. The bodies, and the design they implement,
// are in kernels/bodies/ifds.h, which only the launchers include.
#ifndef SLUICE_KERNELS_IFDS_H_
#define SLUICE_KERNELS_IFDS_H_

#include <cstdint>

#include "sluice/kernels/hd.h"
#include "sluice/kernels/kernel_args.h"
#include "sluice/kernels/kernel_id.h"

namespace sluice::kernels::ifds {

// An empty slot or list place is 0, what every new buffer holds (allocations are zeroed), so a
// table or list needs no fill before use. Every key and group a table holds has bit 63 (kTag)
// set: none is 0.
inline constexpr uint64_t kEmpty = 0;
inline constexpr uint64_t kTag = uint64_t{1} << 63;
inline constexpr uint32_t kNone = 0xffffffffu;
// Ids in a key's top field (nodes, call edges, procedures) stay below 2^31.
inline constexpr uint32_t kMaxId = 0x7fffffffu;
inline constexpr uint32_t kSegments = 8;
inline constexpr uint32_t kSegmentShift = 29;
// A chain location is segment:3 | slot:29. Heads and links hold a location plus one, so that 0,
// what a new buffer holds, ends a chain (kEndOfChain).
inline constexpr uint64_t kMaxSegmentSlots = (uint64_t{1} << kSegmentShift) - 1;
inline constexpr uint32_t kEndOfChain = 0;

// ---- Bindings shared by every IFDS solver kernel --------------------------------------------

// The relations processed as deltas come first; PEC, an index of path edges, is not.
enum Table { kPe, kInc, kEs, kSum, kNumRelations, kPec = kNumRelations, kNumTables };
inline constexpr int kNumJoined = kNumTables - 1;  // INC, ES, SUM, PEC: chained

SLUICE_HD constexpr bool Joined(int t) { return t != kPe; }

enum Binding {
  kGraph,   // u32: the compiled problem (see Graph)
  kState,   // u32: see State
  kTables,  // kTables + kSegments * t + s is segment s of table t (see SegmentView)
  kHeads = kTables + kSegments * kNumTables,  // kHeads + t - 1: joined table t's heads
  kDeltas = kHeads + kNumJoined,              // u64: kDeltas + t, the two halves of t's list
  kCalls = kDeltas + kNumTables,              // u32: the calls made (see ClaimCall)
  kNumBindings
};

SLUICE_HD constexpr int TableBinding(int t, uint32_t s) {
  return kTables + static_cast<int>(kSegments) * t + static_cast<int>(s);
}
SLUICE_HD constexpr int HeadsBinding(int t) { return kHeads + t - 1; }

// Bytes per slot: a path-edge segment holds keys; a joined table's segment and heads hold keys
// (u64), then one u32 per slot (a link, or a chain's first location).
SLUICE_HD constexpr uint64_t SlotBytes(int t) { return Joined(t) ? 12 : 8; }
inline constexpr uint64_t kHeadBytes = 12;

// The u32 state words the host reads after every window. The list counters every insert
// updates each have a cache line of their own, away from the words every thread reads.
struct State {
  enum Slot : uint32_t {
    kStatus = 0,     // kStatus* bits
    kIteration = 1,  // iterations completed
    kActive = 2,     // nonzero while another iteration has work and no table should grow: the
                     // windows' loop guard
    kParity = 3,     // which half of every list is the current one
    kCurrentBase = 4,
    kCountBase = kCurrentBase + kNumTables,
    kHeadBase = kCountBase + kNumTables,
    kHoleBase = kHeadBase + static_cast<uint32_t>(kNumJoined),
    kNextBase = 32,
    kNextStride = 16,
    kSlots = kNextBase + kNextStride * kNumTables,
  };
  // Per table: tuples in the current list (PEC: what its last iteration added), and appended
  // to the next one.
  static constexpr uint32_t Current(int t) { return kCurrentBase + t; }
  static constexpr uint32_t Next(int t) { return kNextBase + kNextStride * t; }
  // Per table: the tuples it holds, counted when an iteration ends; the segments share them
  // evenly, as the hash spreads tuples.
  static constexpr uint32_t Count(int t) { return kCountBase + t; }
  // Per joined table: the groups its heads hold.
  static constexpr uint32_t Heads(int t) { return kHeadBase + t - 1; }
  // Per table: holes in its next list (places reserved by inserts that lost a race).
  static constexpr uint32_t Holes(int t) { return kHoleBase + t; }
};
static_assert(uint32_t{State::kHoleBase} + kNumTables <= uint32_t{State::kNextBase});

// Growth thresholds, shared by the host (between windows) and ifds_advance (between
// iterations), so that a window the device ends for growth is always followed by one.
// A table should grow when an iteration adding twice as much as the last (`recent`) would take
// it past 17/20 full. Within an iteration an insert probes at most kMaxProbe slots from its home:
// a table so full (or so clustered) that it finds neither its tuple nor an empty slot by then
// refuses it (an overflow). With no deletions a tuple always lies before the first empty slot
// from its home, so the bound never lets a duplicate in.
inline constexpr uint32_t kMaxProbe = 4096;
SLUICE_HD inline bool WantsGrowth(uint64_t count, uint64_t recent, uint64_t slots) {
  return 20 * (count + 2 * recent) > 17 * slots;
}
// The new groups that `recent` new tuples of a joined table bring, at the table's ratio so far
// (`groups` among its `count` tuples; a tuple a group before any).
SLUICE_HD inline uint64_t RecentGroups(uint64_t recent, uint64_t groups, uint64_t count) {
  return count == 0 ? recent : (recent * groups + count - 1) / count;
}
// Whether a joined table's heads should grow: as a table, with its recent new groups.
SLUICE_HD inline bool HeadsWantGrowth(uint64_t groups, uint64_t recent, uint64_t count,
                                      uint64_t slots) {
  return WantsGrowth(groups, RecentGroups(recent, groups, count), slots);
}
// A list should grow once its current half is more than half used: deltas often grow from
// one iteration to the next (and one that outgrows its half costs a rerun, not an answer).
SLUICE_HD inline bool ListWantsGrowth(uint64_t current, uint64_t half) {
  return 2 * current > half;
}

// The compiled problem: a u32 header, then sections located by (offset, length) pairs.
struct GraphLayout {
  enum Word : uint32_t {
    kMagic = 0, kVersion, kFacts, kNodes, kProcedures, kFlows, kCallEdgeCount, kSeeds,
    kSectionCount, kSectionTable,
  };
  enum Section : uint32_t {
    kIntraOffsets,  // nodes + 1: CSR over intraprocedural edges (normal and call-to-return)
    kIntraEdges,    // 2 per edge: target node, flow
    kCallOffsets,   // nodes + 1: CSR over call edges by call node
    kCallEdges,     // 5 per call edge: call node, callee procedure, return site, call flow,
                    //   return flow
    kProcStart,     // per procedure: start node
    kExitProc,      // per node: the procedure it is the exit of, or kNone
    kReturnSite,    // per node: its call site's return site, or kNone
    kFlowHeaders,   // 3 per flow, and 3 more past the last: where its kills, gens and pairs
                    //   begin (each list ends where the next flow's begins), the kills' word
                    //   holding the identity flag in its top bit (kIdentityBit)
    kKills, kGens,  // 1 per kill, 1 per gen: a fact
    kPairs,         // 1 per pair (d, t): PackPair(d, t), sorted (by d, then t)
    kSeedList,      // 2 per seed: node, fact
    kNumSections,
  };
  static constexpr uint32_t kMagicValue = 0x44464953;  // "SIFD"
  static constexpr uint32_t kVersionValue = 3;
  static constexpr uint32_t kFlowHeaderWords = 3;
  static constexpr uint32_t kIdentityBit = 0x80000000u;
  static constexpr uint32_t kHeaderWords = kSectionTable + 2 * kNumSections;
  // A pair is one word, its source fact in the high half: facts are 16-bit (kMaxFacts), and a
  // flow's pairs sorted as words are sorted by source, as the kernels' binary search needs.
  SLUICE_HD static constexpr uint32_t PackPair(uint32_t source, uint32_t target) {
    return source << 16 | target;
  }
  SLUICE_HD static constexpr uint32_t PairSource(uint32_t pair) { return pair >> 16; }
  SLUICE_HD static constexpr uint32_t PairTarget(uint32_t pair) { return pair & 0xffffu; }
};

// ---- Results ---------------------------------------------------------------------------------

// The parameters of ifds_results and ifds_results_list: which nodes the window covers, and the
// marks words per node.
struct ResultWindow {
  enum Param { kFirstNode, kNodes, kWordsPerNode };
  static constexpr uint64_t kBlock = 2048;  // marks words per block
  SLUICE_HD static uint64_t Words(const KernelArgs& a) {
    return a.param[kNodes] * a.param[kWordsPerNode];
  }
  SLUICE_HD static uint64_t Blocks(uint64_t words) { return (words + kBlock - 1) / kBlock; }
  // The end of block `block`'s words.
  SLUICE_HD static uint64_t End(uint64_t block, uint64_t words) {
    return (block + 1) * kBlock < words ? (block + 1) * kBlock : words;
  }
};

// ---- Kernels --------------------------------------------------------------------------------

// ifds_seed: thread t inserts the path edge (d, s, d) for seed t = (s, d).
inline constexpr KernelId kSeedKernel{"ifds_seed", 7};

// ifds_pe_delta: for a new path edge (d1, n, d2):
//   intraprocedural edges n -> m:     PE(d1, m, d3)        for d3 in f(d2)
//   call edges e at n to callee p:    INC(e, d3, d2), PE(d3, start(p), d3)  for d3 in call(d2),
//                                     once per (e, d2) (ClaimCall)
//   n a call node:                    PEC(d1, n, d2), PE(d1, return(n), d5) for SUM(n, d2, d5)
//   n the exit of p:                  ES(p, d1, d2)
inline constexpr KernelId kPeDeltaKernel{"ifds_pe_delta", 8};

// ifds_inc_delta: a new incoming call INC(e, d3, d2) meets every end summary ES(p_e, d3, d4).
inline constexpr KernelId kIncDeltaKernel{"ifds_inc_delta", 8};

// ifds_es_delta: a new end summary ES(p, d3, d4) meets every incoming call INC(e, d3, d2) of p.
inline constexpr KernelId kEsDeltaKernel{"ifds_es_delta", 8};

// ifds_sum_delta: a new summary SUM(c, d2, d5) meets every path edge PE(d1, c, d2) (in PEC).
inline constexpr KernelId kSumDeltaKernel{"ifds_sum_delta", 8};

// ifds_advance (one thread): the next lists become current. A halted iteration leaves
// everything for the rerun, and ends the window.
inline constexpr KernelId kAdvanceKernel{"ifds_advance", 8};

// ifds_merge: after an overflow, what the halted iteration added (its next lists) joins the
// current deltas, so that the rerun processes it too; the next lists start empty. One pass per
// relation moves, then one thread counts. The host makes room in the current halves first.
inline constexpr KernelId kMergeKernel{"ifds_merge", 5};

// ifds_reindex: the chains of the joined tables in param 0 (bit t - 1) built again from every
// tuple they hold, into heads the host filled empty: after a segment moved (its locations
// changed) or the heads grew. One pass
// resets the head counts, then one pass per segment links.
inline constexpr KernelId kReindexKernel{"ifds_reindex", 5};

// ifds_resume (one thread), first after a growth that followed an overflow: clears it, so that
// the iteration it halted can rerun once the host has grown what was full. Out-of-bounds
// reports stay (they mean a bug or bad data).
inline constexpr KernelId kResumeKernel{"ifds_resume", 4};

// ifds_activate (one thread), last after every growth: sets the active word again (the window
// before ended for the growth).
inline constexpr KernelId kActivateKernel{"ifds_activate", 4};

// ifds_rehash: moves the keys of segment `segment` of table `table` into a new, larger buffer (a
// joined table's links are rebuilt by ifds_reindex). Bindings: the old segment, the new one
// (zeroed: empty), a status word. One thread per old slot re-inserts its tuple, probing as far
// as it must (the host sizes the new segment well below full). A tuple that does not belong in
// this segment, or finds no room, is reported in the status word out of bounds.
inline constexpr KernelId kRehashKernel{"ifds_rehash", 7};

// ifds_results: marks the window's pairs and counts them. Bindings: the path-edge segments, the
// marks (zeroed: at least nodes * words_per_node words), the counts (at least one per block of
// 2048 marks words, plus one), the result state (u32 [status, count]). One pass per segment marks
// (a pair whose fact does not fit its row is reported out of bounds), one pass per block
// counts, one thread turns the counts into offsets and writes the total to the state.
inline constexpr KernelId kResultsKernel{"ifds_results", 6};

// ifds_results_list: lists the window's marked pairs in order, after ifds_results. Bindings: the
// marks, the counts (as ifds_results left them), the list (u64: n << 16 | d2; room for the
// count ifds_results reported). One thread per block of 2048 marks words; params as
// ifds_results'.
inline constexpr KernelId kResultsListKernel{"ifds_results_list", 1};

}  // namespace sluice::kernels::ifds

#endif  // SLUICE_KERNELS_IFDS_H_
