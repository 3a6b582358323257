// Kernel bodies of the semi-naive resident IFDS solver (DESIGN.md section 5).
//
// Relations, each an append-only list of packed 64-bit tuples deduplicated by an open-addressing
// hash set (a tuple enters the list only when its set insertion is new, so a relation's delta is
// a contiguous range of its list):
//   PE  (d1, n, d2)  path edges            key d1:16 | n:32 | d2:16
//   INC (e, d3, d2)  incoming calls        key e:32  | d3:16 | d2:16   (e: call edge id)
//   ES  (p, d3, d4)  end summaries         key p:32  | d3:16 | d4:16
//   SUM (c, d2, d5)  summary edges         key c:32  | d2:16 | d5:16   (to c's return site)
// Join indexes, multimaps from a key to a list of values (heads in the key table, entries linked):
//   MPE  (c, d2) -> d1        path edges at call nodes
//   MINC (p, d3) -> (e, d2)
//   MES  (p, d3) -> d4
//   MSUM (c, d2) -> d5
//
// One iteration: each relation's delta joins with the full indexes (both directions for
// INC x ES and PE x SUM), new tuples are appended; then the new tuples are indexed and the deltas
// advance. Indexes are only read during joins and only written by the index pass, so no pass
// reads what another thread of it writes. Every kernel starts by checking the status word: once
// something overflowed, the rest of the window does nothing and the host grows and rebuilds.
//
// Every index that comes from buffer contents is checked: the compiled graph's header, node,
// flow, procedure and fact ids, list positions, multimap links. Bad data raises
// kStatusIndexOutOfBounds; a full table raises kStatusCapacityOverflow.
#ifndef SLUICE_KERNELS_BODIES_IFDS_H_
#define SLUICE_KERNELS_BODIES_IFDS_H_

#include <cstdint>

#include "kernels/atomics.h"
#include "kernels/hd.h"
#include "kernels/kernel_args.h"
#include "kernels/kernel_id.h"

namespace sluice::kernels::ifds {

inline constexpr uint64_t kEmpty = ~uint64_t{0};
inline constexpr uint32_t kNone = 0xffffffffu;
// Linear probing gives up after this many slots; the host keeps tables at most half full.
inline constexpr uint32_t kMaxProbe = 128;

// ---- Bindings shared by every IFDS kernel -------------------------------------------------

enum Binding {
  kGraph,                // u32: the compiled problem (see Graph)
  kPeSet, kPeList,       // u64
  kIncSet, kIncList,
  kEsSet, kEsList,
  kSumSet, kSumList,
  kMpeKeys, kMpeEntries,     // u64 pairs: keys [key, head], entries [value, next]
  kMincKeys, kMincEntries,
  kMesKeys, kMesEntries,
  kMsumKeys, kMsumEntries,
  kState,                // u32: see State
  kNumBindings
};

enum Relation { kPe, kInc, kEs, kSum, kNumRelations };
enum Index { kMpe, kMinc, kMes, kMsum, kNumIndexes };

// The u32 state words the host reads after every window.
struct State {
  enum Slot : uint32_t {
    kStatus = 0,     // kStatus* bits
    kIteration = 1,  // iterations completed
    kActive = 2,     // nonzero while another iteration has work and no table should grow: the
                     // windows' loop guard
    kRelationBase = 3,
    kIndexBase = kRelationBase + 4 * kNumRelations,
    kSlots = kIndexBase + 2 * kNumIndexes,
  };
  // Per relation: list length, delta [begin, end), and how far the list is indexed.
  static constexpr uint32_t Count(int r) { return kRelationBase + 4 * r; }
  static constexpr uint32_t DeltaBegin(int r) { return kRelationBase + 4 * r + 1; }
  static constexpr uint32_t DeltaEnd(int r) { return kRelationBase + 4 * r + 2; }
  static constexpr uint32_t Indexed(int r) { return kRelationBase + 4 * r + 3; }
  // Per index: distinct keys, and entries used.
  static constexpr uint32_t Keys(int m) { return kIndexBase + 2 * m; }
  static constexpr uint32_t Entries(int m) { return kIndexBase + 2 * m + 1; }
};

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
    kFlowHeaders,   // 7 per flow: identity, kills [begin, end), gens [begin, end),
                    //   pairs [begin, end)
    kKills, kGens, kPairSources, kPairTargets,
    kSeedList,      // 2 per seed: node, fact
    kNumSections,
  };
  static constexpr uint32_t kMagicValue = 0x44464953;  // "SIFD"
  static constexpr uint32_t kVersionValue = 1;
  static constexpr uint32_t kHeaderWords = kSectionTable + 2 * kNumSections;
};

// A view of the compiled problem. Opening reads the counts only; each section is located and
// bounds-checked when it is used, and every index into it is checked against its length, so a
// corrupt header yields empty sections and out-of-bounds flags, never a stray access.
struct Graph {
  bool ok = false;
  uint32_t facts = 0, nodes = 0, procedures = 0, flows = 0, call_edges = 0, seeds = 0;
  DeviceSpan<uint32_t> words;

  SLUICE_HD static Graph Open(const KernelArgs& a) {
    Graph g;
    g.words = a.As<uint32_t>(kGraph);
    const DeviceSpan<uint32_t>& w = g.words;
    // The catalog guarantees the header's words exist.
    if (w[GraphLayout::kMagic] != GraphLayout::kMagicValue ||
        w[GraphLayout::kVersion] != GraphLayout::kVersionValue ||
        w[GraphLayout::kSectionCount] != GraphLayout::kNumSections) {
      return g;
    }
    g.facts = w[GraphLayout::kFacts];
    g.nodes = w[GraphLayout::kNodes];
    g.procedures = w[GraphLayout::kProcedures];
    g.flows = w[GraphLayout::kFlows];
    g.call_edges = w[GraphLayout::kCallEdgeCount];
    g.seeds = w[GraphLayout::kSeeds];
    g.ok = g.facts > 0 && g.facts <= 0xffff && g.nodes < kNone;
    return g;
  }
  // Section `s`, or an empty span if the header places it outside the buffer.
  SLUICE_HD DeviceSpan<uint32_t> operator[](uint32_t s) const {
    const uint64_t offset = words[GraphLayout::kSectionTable + 2 * s];
    const uint64_t length = words[GraphLayout::kSectionTable + 2 * s + 1];
    if (offset > words.size || length > words.size - offset) return DeviceSpan<uint32_t>{words.data, 0};
    return DeviceSpan<uint32_t>{words.data + offset, length};
  }
};

// ---- Packing ------------------------------------------------------------------------------

SLUICE_HD inline uint64_t Pack(uint32_t high32, uint32_t mid16, uint32_t low16) {
  return (uint64_t{high32} << 32) | (uint64_t{mid16 & 0xffff} << 16) | (low16 & 0xffff);
}
SLUICE_HD inline uint64_t PackPe(uint32_t d1, uint32_t n, uint32_t d2) {
  return (uint64_t{d1 & 0xffff} << 48) | (uint64_t{n} << 16) | (d2 & 0xffff);
}
SLUICE_HD inline uint32_t High32(uint64_t k) { return static_cast<uint32_t>(k >> 32); }
SLUICE_HD inline uint32_t Mid16(uint64_t k) { return static_cast<uint32_t>(k >> 16) & 0xffff; }
SLUICE_HD inline uint32_t Low16(uint64_t k) { return static_cast<uint32_t>(k) & 0xffff; }
SLUICE_HD inline uint64_t IndexKey(uint32_t id, uint32_t fact) {
  return (uint64_t{id} << 16) | (fact & 0xffff);
}

// splitmix64's finalizer: cheap and mixes every input bit into the low bits used as the slot.
SLUICE_HD inline uint64_t Mix(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  return x;
}

// ---- Shared device helpers ------------------------------------------------------------------

SLUICE_HD inline uint32_t* StateWord(const KernelArgs& a, uint32_t slot) {
  return &a.As<uint32_t>(kState)[slot];  // the catalog guarantees kSlots words
}
SLUICE_HD inline void Raise(const KernelArgs& a, uint32_t bits) {
  atomics::FetchOr(StateWord(a, State::kStatus), bits);
}
SLUICE_HD inline bool Halted(const KernelArgs& a) {
  return atomics::Load(StateWord(a, State::kStatus)) != 0;
}

enum class Insert { kNew, kPresent, kFull };

// Inserts `key` into a power-of-two table of u64 keys (`stride` words per slot, key first).
// Returns the slot through `slot_out` when not full.
SLUICE_HD inline Insert TableInsert(DeviceSpan<uint64_t> table, uint32_t stride, uint64_t key,
                                    uint64_t* slot_out) {
  const uint64_t slots = table.size / stride;
  if (slots == 0) return Insert::kFull;
  const uint64_t mask = slots - 1;  // slots is a power of two (checked by the catalog)
  uint64_t slot = Mix(key) & mask;
  for (uint32_t probe = 0; probe < kMaxProbe && probe < slots; ++probe) {
    uint64_t* cell = &table[slot * stride];
    uint64_t seen = atomics::Load(cell);
    if (seen == kEmpty) seen = atomics::CompareExchange(cell, kEmpty, key);
    if (seen == kEmpty) {
      *slot_out = slot;
      return Insert::kNew;
    }
    if (seen == key) {
      *slot_out = slot;
      return Insert::kPresent;
    }
    slot = (slot + 1) & mask;
  }
  return Insert::kFull;
}

// Finds `key`; returns its slot or kEmpty.
SLUICE_HD inline uint64_t TableFind(DeviceSpan<uint64_t> table, uint32_t stride, uint64_t key) {
  const uint64_t slots = table.size / stride;
  if (slots == 0) return kEmpty;
  const uint64_t mask = slots - 1;
  uint64_t slot = Mix(key) & mask;
  for (uint32_t probe = 0; probe < kMaxProbe && probe < slots; ++probe) {
    const uint64_t seen = table[slot * stride];
    if (seen == key) return slot;
    if (seen == kEmpty) return kEmpty;
    slot = (slot + 1) & mask;
  }
  return kEmpty;
}

// Slot counts of relation r's tables and of its index.
struct TableSlotCounts {
  uint64_t set = 0, list = 0, keys = 0, entries = 0;
};

SLUICE_HD inline TableSlotCounts TableSlots(const KernelArgs& a, int r) {
  return {a.As<uint64_t>(kPeSet + 2 * r).size, a.As<uint64_t>(kPeList + 2 * r).size,
          a.As<uint64_t>(kMpeKeys + 2 * r).size / 2, a.As<uint64_t>(kMpeEntries + 2 * r).size / 2};
}

// Whether relation r's tables should grow before the next iteration: its set or list more than
// half full, its index with more than half its key slots or three quarters of its entries used.
// The host (between windows) and ifds_advance (between iterations) ask this same question, so
// a window that the device ends for growth is always followed by one.
SLUICE_HD inline bool WantsGrowth(uint64_t count, uint64_t keys, uint64_t entries,
                                  const TableSlotCounts& slots) {
  return 2 * count > slots.set || 2 * count > slots.list || 2 * keys > slots.keys ||
         4 * entries > 3 * slots.entries;
}

// Adds a tuple to relation `r` (its set and list); a new tuple is appended to the list.
SLUICE_HD inline void AddTuple(const KernelArgs& a, int r, uint64_t key) {
  uint64_t slot = 0;
  const Insert result = TableInsert(a.As<uint64_t>(kPeSet + 2 * r), 1, key, &slot);
  if (result == Insert::kFull) {
    Raise(a, kStatusCapacityOverflow);
    return;
  }
  if (result == Insert::kPresent) return;
  DeviceSpan<uint64_t> list = a.As<uint64_t>(kPeList + 2 * r);
  const uint32_t at = atomics::FetchAdd(StateWord(a, State::Count(r)), 1u);
  if (list.Contains(at)) {
    list[at] = key;
  } else {
    Raise(a, kStatusCapacityOverflow);  // the host rebuilds the set from the list and reruns
  }
}

// Calls visit(value) for every value of `key` in index `m`. Traversal is bounded by the entry
// capacity, so corrupted links cannot loop forever.
template <class Visit>
SLUICE_HD void ForEachValue(const KernelArgs& a, int m, uint64_t key, Visit&& visit) {
  DeviceSpan<uint64_t> keys = a.As<uint64_t>(kMpeKeys + 2 * m);
  DeviceSpan<uint64_t> entries = a.As<uint64_t>(kMpeEntries + 2 * m);
  const uint64_t slot = TableFind(keys, 2, key);
  if (slot == kEmpty) return;
  const uint64_t capacity = entries.size / 2;
  uint64_t at = keys[slot * 2 + 1];
  for (uint64_t steps = 0; at != kEmpty && steps <= capacity; ++steps) {
    if (at >= capacity) {
      Raise(a, kStatusIndexOutOfBounds);
      return;
    }
    visit(entries[at * 2]);
    at = entries[at * 2 + 1];
  }
}

// Adds `value` under `key` in index `m`.
SLUICE_HD inline void IndexAdd(const KernelArgs& a, int m, uint64_t key, uint64_t value) {
  DeviceSpan<uint64_t> keys = a.As<uint64_t>(kMpeKeys + 2 * m);
  DeviceSpan<uint64_t> entries = a.As<uint64_t>(kMpeEntries + 2 * m);
  uint64_t slot = 0;
  const Insert result = TableInsert(keys, 2, key, &slot);
  if (result == Insert::kFull) {
    Raise(a, kStatusCapacityOverflow);
    return;
  }
  if (result == Insert::kNew) atomics::FetchAdd(StateWord(a, State::Keys(m)), 1u);
  const uint32_t at = atomics::FetchAdd(StateWord(a, State::Entries(m)), 1u);
  if (uint64_t{at} >= entries.size / 2) {
    Raise(a, kStatusCapacityOverflow);
    return;
  }
  entries[uint64_t{at} * 2] = value;
  entries[uint64_t{at} * 2 + 1] = atomics::Exchange(&keys[slot * 2 + 1], at);
}

// Calls emit(fact) for every fact of f(d), checking the flow's ranges and the facts it names.
template <class Emit>
SLUICE_HD void ApplyFlow(const KernelArgs& a, const Graph& g, uint32_t f, uint32_t d,
                         Emit&& emit) {
  const DeviceSpan<uint32_t> headers = g[GraphLayout::kFlowHeaders];
  if (!headers.Contains(7ull * f + 6)) {
    Raise(a, kStatusIndexOutOfBounds);
    return;
  }
  const uint32_t* h = &headers[7ull * f];
  const DeviceSpan<uint32_t> kills = g[GraphLayout::kKills];
  const DeviceSpan<uint32_t> gens = g[GraphLayout::kGens];
  const DeviceSpan<uint32_t> sources = g[GraphLayout::kPairSources];
  const DeviceSpan<uint32_t> targets = g[GraphLayout::kPairTargets];
  if (h[1] > h[2] || h[2] > kills.size || h[3] > h[4] || h[4] > gens.size || h[5] > h[6] ||
      h[6] > sources.size || h[6] > targets.size) {
    Raise(a, kStatusIndexOutOfBounds);
    return;
  }
  const auto out = [&](uint32_t fact) {
    if (fact < g.facts) {
      emit(fact);
    } else {
      Raise(a, kStatusIndexOutOfBounds);
    }
  };
  if (d == 0) {
    out(0);
    for (uint32_t i = h[3]; i < h[4]; ++i) out(gens[i]);
  } else if (h[0] != 0) {
    uint32_t lo = h[1], hi = h[2];  // binary search of the sorted kills
    while (lo < hi) {
      const uint32_t mid = lo + (hi - lo) / 2;
      if (kills[mid] < d) lo = mid + 1; else hi = mid;
    }
    if (lo == h[2] || kills[lo] != d) out(d);
  }
  uint32_t lo = h[5], hi = h[6];  // first pair whose source is d
  while (lo < hi) {
    const uint32_t mid = lo + (hi - lo) / 2;
    if (sources[mid] < d) lo = mid + 1; else hi = mid;
  }
  for (uint32_t i = lo; i < h[6] && sources[i] == d; ++i) out(targets[i]);
}

// The position of delta tuple `t` of relation `r`, or false when it is outside the list.
SLUICE_HD inline bool DeltaTuple(const KernelArgs& a, int r, uint64_t t, uint64_t* key) {
  DeviceSpan<uint64_t> list = a.As<uint64_t>(kPeList + 2 * r);
  const uint64_t at = uint64_t{*StateWord(a, State::DeltaBegin(r))} + t;
  if (!list.Contains(at)) return false;
  *key = list[at];
  return true;
}

// ---- Kernels --------------------------------------------------------------------------------

// ifds_seed: thread t inserts the path edge (d, s, d) for seed t = (s, d).
inline constexpr KernelId kSeedKernel{"ifds_seed", 2};
struct Seed {
  SLUICE_HD static void Run(const KernelArgs& a, uint64_t t, uint64_t) {
    const Graph g = Graph::Open(a);
    if (!g.ok) return Raise(a, kStatusIndexOutOfBounds);
    if (Halted(a) || t >= g.seeds) return;
    const DeviceSpan<uint32_t> seeds = g[GraphLayout::kSeedList];
    if (!seeds.Contains(2 * t + 1)) return Raise(a, kStatusIndexOutOfBounds);
    const uint32_t node = seeds[2 * t];
    const uint32_t fact = seeds[2 * t + 1];
    if (node >= g.nodes || fact >= g.facts) return Raise(a, kStatusIndexOutOfBounds);
    AddTuple(a, kPe, PackPe(fact, node, fact));
  }
};

// ifds_pe_delta: for a new path edge (d1, n, d2):
//   intraprocedural edges n -> m:     PE(d1, m, d3)        for d3 in f(d2)
//   call edges e at n to callee p:    INC(e, d3, d2), PE(d3, start(p), d3)  for d3 in call(d2)
//   summaries at n:                   PE(d1, return(n), d5) for d5 in MSUM(n, d2)
//   n the exit of p:                  ES(p, d1, d2)
inline constexpr KernelId kPeDeltaKernel{"ifds_pe_delta", 2};
struct PeDelta {
  SLUICE_HD static void Run(const KernelArgs& a, uint64_t t, uint64_t) {
    const Graph g = Graph::Open(a);
    if (!g.ok) return Raise(a, kStatusIndexOutOfBounds);
    uint64_t key = 0;
    if (Halted(a) || !DeltaTuple(a, kPe, t, &key)) return;
    const uint32_t d1 = static_cast<uint32_t>(key >> 48);
    const uint32_t n = static_cast<uint32_t>(key >> 16);
    const uint32_t d2 = Low16(key);
    if (n >= g.nodes) return Raise(a, kStatusIndexOutOfBounds);

    const DeviceSpan<uint32_t> intra_offsets = g[GraphLayout::kIntraOffsets];
    const DeviceSpan<uint32_t> intra = g[GraphLayout::kIntraEdges];
    if (!intra_offsets.Contains(uint64_t{n} + 1)) return Raise(a, kStatusIndexOutOfBounds);
    const uint32_t ib = intra_offsets[n], ie = intra_offsets[n + 1];
    if (ib > ie || 2ull * ie > intra.size) return Raise(a, kStatusIndexOutOfBounds);
    for (uint32_t e = ib; e < ie; ++e) {
      const uint32_t m = intra[2 * e];
      if (m >= g.nodes) {
        Raise(a, kStatusIndexOutOfBounds);
        continue;
      }
      ApplyFlow(a, g, intra[2 * e + 1], d2, [&](uint32_t d3) { AddTuple(a, kPe, PackPe(d1, m, d3)); });
    }

    const DeviceSpan<uint32_t> call_offsets = g[GraphLayout::kCallOffsets];
    const DeviceSpan<uint32_t> calls = g[GraphLayout::kCallEdges];
    const DeviceSpan<uint32_t> proc_start = g[GraphLayout::kProcStart];
    if (!call_offsets.Contains(uint64_t{n} + 1)) return Raise(a, kStatusIndexOutOfBounds);
    const uint32_t cb = call_offsets[n], ce = call_offsets[n + 1];
    if (cb > ce || 5ull * ce > calls.size) return Raise(a, kStatusIndexOutOfBounds);
    for (uint32_t e = cb; e < ce; ++e) {
      const uint32_t callee = calls[5ull * e + 1];
      if (!proc_start.Contains(callee)) {
        Raise(a, kStatusIndexOutOfBounds);
        continue;
      }
      const uint32_t start = proc_start[callee];
      if (start >= g.nodes) {
        Raise(a, kStatusIndexOutOfBounds);
        continue;
      }
      ApplyFlow(a, g, calls[5ull * e + 3], d2, [&](uint32_t d3) {
        AddTuple(a, kInc, Pack(e, d3, d2));
        AddTuple(a, kPe, PackPe(d3, start, d3));
      });
    }
    if (cb < ce) {
      const DeviceSpan<uint32_t> return_site = g[GraphLayout::kReturnSite];
      const uint32_t r = return_site.Contains(n) ? return_site[n] : kNone;
      if (r >= g.nodes) return Raise(a, kStatusIndexOutOfBounds);
      ForEachValue(a, kMsum, IndexKey(n, d2), [&](uint64_t d5) {
        AddTuple(a, kPe, PackPe(d1, r, static_cast<uint32_t>(d5)));
      });
    }
    const DeviceSpan<uint32_t> exit_proc = g[GraphLayout::kExitProc];
    if (!exit_proc.Contains(n)) return Raise(a, kStatusIndexOutOfBounds);
    const uint32_t p = exit_proc[n];
    if (p != kNone) {
      if (p >= g.procedures) return Raise(a, kStatusIndexOutOfBounds);
      AddTuple(a, kEs, Pack(p, d1, d2));
    }
  }
};

// Applies call edge e's return flow to d4 and adds SUM(c_e, d2, d5) for every result.
SLUICE_HD inline void Summarize(const KernelArgs& a, const Graph& g, uint32_t e, uint32_t d2,
                                uint32_t d4) {
  const DeviceSpan<uint32_t> calls = g[GraphLayout::kCallEdges];
  if (!calls.Contains(5ull * e + 4)) return Raise(a, kStatusIndexOutOfBounds);
  const uint32_t c = calls[5ull * e];
  if (c >= g.nodes) return Raise(a, kStatusIndexOutOfBounds);
  ApplyFlow(a, g, calls[5ull * e + 4], d4, [&](uint32_t d5) { AddTuple(a, kSum, Pack(c, d2, d5)); });
}

// ifds_inc_delta: a new incoming call INC(e, d3, d2) meets every end summary MES(p_e, d3) -> d4.
inline constexpr KernelId kIncDeltaKernel{"ifds_inc_delta", 2};
struct IncDelta {
  SLUICE_HD static void Run(const KernelArgs& a, uint64_t t, uint64_t) {
    const Graph g = Graph::Open(a);
    if (!g.ok) return Raise(a, kStatusIndexOutOfBounds);
    uint64_t key = 0;
    if (Halted(a) || !DeltaTuple(a, kInc, t, &key)) return;
    const uint32_t e = High32(key), d3 = Mid16(key), d2 = Low16(key);
    const DeviceSpan<uint32_t> calls = g[GraphLayout::kCallEdges];
    if (!calls.Contains(5ull * e + 4)) return Raise(a, kStatusIndexOutOfBounds);
    const uint32_t p = calls[5ull * e + 1];
    ForEachValue(a, kMes, IndexKey(p, d3),
                 [&](uint64_t d4) { Summarize(a, g, e, d2, static_cast<uint32_t>(d4)); });
  }
};

// ifds_es_delta: a new end summary ES(p, d3, d4) meets every incoming call MINC(p, d3) -> (e, d2).
inline constexpr KernelId kEsDeltaKernel{"ifds_es_delta", 2};
struct EsDelta {
  SLUICE_HD static void Run(const KernelArgs& a, uint64_t t, uint64_t) {
    const Graph g = Graph::Open(a);
    if (!g.ok) return Raise(a, kStatusIndexOutOfBounds);
    uint64_t key = 0;
    if (Halted(a) || !DeltaTuple(a, kEs, t, &key)) return;
    const uint32_t p = High32(key), d3 = Mid16(key), d4 = Low16(key);
    ForEachValue(a, kMinc, IndexKey(p, d3), [&](uint64_t v) {
      Summarize(a, g, static_cast<uint32_t>(v >> 16), static_cast<uint32_t>(v & 0xffff), d4);
    });
  }
};

// ifds_sum_delta: a new summary SUM(c, d2, d5) meets every path edge MPE(c, d2) -> d1.
inline constexpr KernelId kSumDeltaKernel{"ifds_sum_delta", 2};
struct SumDelta {
  SLUICE_HD static void Run(const KernelArgs& a, uint64_t t, uint64_t) {
    const Graph g = Graph::Open(a);
    if (!g.ok) return Raise(a, kStatusIndexOutOfBounds);
    uint64_t key = 0;
    if (Halted(a) || !DeltaTuple(a, kSum, t, &key)) return;
    const uint32_t c = High32(key), d2 = Mid16(key), d5 = Low16(key);
    const DeviceSpan<uint32_t> return_site = g[GraphLayout::kReturnSite];
    if (!return_site.Contains(c)) return Raise(a, kStatusIndexOutOfBounds);
    const uint32_t r = return_site[c];
    if (r >= g.nodes) return Raise(a, kStatusIndexOutOfBounds);
    ForEachValue(a, kMpe, IndexKey(c, d2), [&](uint64_t d1) {
      AddTuple(a, kPe, PackPe(static_cast<uint32_t>(d1), r, d5));
    });
  }
};

// ifds_index: four passes, one per relation, each indexing the tuples appended since the last
// index pass: list positions [Indexed(r), Count(r)).
inline constexpr KernelId kIndexKernel{"ifds_index", 2};
template <int R>
struct IndexPass {
  SLUICE_HD static void Run(const KernelArgs& a, uint64_t t, uint64_t) {
    if (Halted(a)) return;
    DeviceSpan<uint64_t> list = a.As<uint64_t>(kPeList + 2 * R);
    const uint64_t at = uint64_t{*StateWord(a, State::Indexed(R))} + t;
    if (!list.Contains(at)) return;
    const uint64_t key = list[at];
    if constexpr (R == kPe) {
      const Graph g = Graph::Open(a);
      if (!g.ok) return Raise(a, kStatusIndexOutOfBounds);
      const uint32_t n = static_cast<uint32_t>(key >> 16);
      const DeviceSpan<uint32_t> call_offsets = g[GraphLayout::kCallOffsets];
      if (!call_offsets.Contains(uint64_t{n} + 1)) return Raise(a, kStatusIndexOutOfBounds);
      if (call_offsets[n] == call_offsets[n + 1]) return;  // only path edges at call nodes
      IndexAdd(a, kMpe, IndexKey(n, Low16(key)), key >> 48);
    } else if constexpr (R == kInc) {
      const Graph g = Graph::Open(a);
      if (!g.ok) return Raise(a, kStatusIndexOutOfBounds);
      const uint32_t e = High32(key);
      const DeviceSpan<uint32_t> calls = g[GraphLayout::kCallEdges];
      if (!calls.Contains(5ull * e + 4)) return Raise(a, kStatusIndexOutOfBounds);
      const uint32_t p = calls[5ull * e + 1];
      IndexAdd(a, kMinc, IndexKey(p, Mid16(key)), (uint64_t{e} << 16) | Low16(key));
    } else if constexpr (R == kEs) {
      IndexAdd(a, kMes, IndexKey(High32(key), Mid16(key)), Low16(key));
    } else {
      IndexAdd(a, kMsum, IndexKey(High32(key), Mid16(key)), Low16(key));
    }
  }
};

// ifds_advance (one thread): the tuples appended this iteration become the next delta.
inline constexpr KernelId kAdvanceKernel{"ifds_advance", 3};
struct Advance {
  SLUICE_HD static void Run(const KernelArgs& a, uint64_t, uint64_t) {
    // A halted iteration leaves its delta for the rerun, and ends the window.
    uint32_t active = 0;
    if (!Halted(a)) {
      bool grow = false;
      for (int r = 0; r < kNumRelations; ++r) {
        const uint64_t capacity = a.As<uint64_t>(kPeList + 2 * r).size;
        uint32_t count = *StateWord(a, State::Count(r));
        if (count > capacity) count = static_cast<uint32_t>(capacity);
        const uint32_t begin = *StateWord(a, State::DeltaEnd(r));
        *StateWord(a, State::DeltaBegin(r)) = begin;
        *StateWord(a, State::DeltaEnd(r)) = count;
        *StateWord(a, State::Indexed(r)) = count;
        if (count != begin) active = 1;
        grow = grow || WantsGrowth(count, *StateWord(a, State::Keys(r)),
                                   *StateWord(a, State::Entries(r)), TableSlots(a, r));
      }
      *StateWord(a, State::kIteration) += 1;
      // Tables the host would grow end the window here, at an iteration boundary, rather than
      // filling up until an insert fails mid-iteration (which costs a full rebuild and a rerun).
      if (grow) active = 0;
    }
    *StateWord(a, State::kActive) = active;
  }
};

// ifds_rebuild: four passes re-inserting every listed tuple into its (fresh) set, after the host
// grew the tables; param 0 says which relations' sets to rebuild (bit r). Lists are not
// appended to.
inline constexpr KernelId kRebuildKernel{"ifds_rebuild", 3};
template <int R>
struct RebuildPass {
  SLUICE_HD static void Run(const KernelArgs& a, uint64_t t, uint64_t) {
    if (((a.param[0] >> R) & 1) == 0) return;
    DeviceSpan<uint64_t> list = a.As<uint64_t>(kPeList + 2 * R);
    if (!list.Contains(t)) return;
    uint64_t slot = 0;
    if (TableInsert(a.As<uint64_t>(kPeSet + 2 * R), 1, list[t], &slot) == Insert::kFull) {
      Raise(a, kStatusCapacityOverflow);
    }
  }
};

// ifds_mark_indexed (one thread): after a rebuild indexed whole lists.
inline constexpr KernelId kMarkIndexedKernel{"ifds_mark_indexed", 2};
struct MarkIndexed {
  SLUICE_HD static void Run(const KernelArgs& a, uint64_t, uint64_t) {
    for (int r = 0; r < kNumRelations; ++r) {
      *StateWord(a, State::Indexed(r)) = *StateWord(a, State::Count(r));
    }
  }
};

// ---- Results --------------------------------------------------------------------------------

// ifds_results: the distinct (n, d2) of every path edge, appended to `out` (u64: n << 16 | d2).
// Bindings: path-edge list, state, result set, result list, result state (u32 [count, status]).
inline constexpr KernelId kResultsKernel{"ifds_results", 2};
struct Results {
  enum Binding { kList, kSolverState, kSet, kOut, kOutState };
  SLUICE_HD static void Run(const KernelArgs& a, uint64_t t, uint64_t) {
    DeviceSpan<uint64_t> list = a.As<uint64_t>(kList);
    DeviceSpan<uint32_t> out_state = a.As<uint32_t>(kOutState);
    if (!list.Contains(t)) return;
    const uint64_t key = list[t];
    const uint64_t fact = key & 0xffffffffffffull;  // the low 48 bits: n:32 | d2:16
    uint64_t slot = 0;
    const Insert result = TableInsert(a.As<uint64_t>(kSet), 1, fact, &slot);
    if (result == Insert::kPresent) return;
    if (result == Insert::kFull) {
      atomics::FetchOr(&out_state[1], kStatusCapacityOverflow);
      return;
    }
    DeviceSpan<uint64_t> out = a.As<uint64_t>(kOut);
    const uint32_t at = atomics::FetchAdd(&out_state[0], 1u);
    if (out.Contains(at)) {
      out[at] = fact;
    } else {
      atomics::FetchOr(&out_state[1], kStatusCapacityOverflow);
    }
  }
};

}  // namespace sluice::kernels::ifds

#endif  // SLUICE_KERNELS_BODIES_IFDS_H_
