// Kernel bodies of the semi-naive resident IFDS solver (docs/architecture.md). What the host
// needs of them (bindings, state words, layouts, kernel ids) is in kernels/ifds.h.
//
// Each relation is held once: its packed 64-bit tuples are the slots of an open-addressing hash
// table placed by the whole tuple (so probe runs stay short), split into kSegments segments
// (separate buffers, so that one segment grows at a time and old and new memory coexist for an
// eighth of a table only):
//   PE  (d1, n, d2)  path edges          key n:31 | d2:16 | d1:16
//   INC (e, d3, d2)  incoming calls      key e:31 | d3:16 | d2:16   joined by (callee(e), d3)
//   ES  (p, d3, d4)  end summaries       key p:31 | d3:16 | d4:16   joined by (p, d3)
//   SUM (c, d2, d5)  summary edges       key c:31 | d2:16 | d5:16   joined by (c, d2)
//   PEC (d1, c, d2)  path edges at calls key c:31 | d2:16 | d1:16   joined by (c, d2)
// The four joined tables are their own join indexes: a segment's slots are followed by a u32
// link per slot, and a heads table (group key -> first location) starts, for each group, a
// chain through the links of every tuple of that group (the textbook's MINC, MES, MSUM and MPE;
// PEC holds the path edges at call nodes, added as they are processed). A location is
// segment:3 | slot:29. A new tuple is linked into its group's chain by the insert that places
// it. No pass both inserts into a joined table and walks it (the path-edge pass inserts INC, ES
// and PEC and walks SUM; the INC and ES passes insert SUM; the SUM pass walks PEC and inserts
// path edges), so no walk meets a chain being written; a tuple linked early is joined early,
// which derives nothing wrong.
//
// Every tuple a table holds is either processed or listed: the lists hold keys in two halves,
// the current delta read by this iteration and the next one its inserts append to. An insert
// reserves its place in the next list before it takes a slot, so a full list refuses the insert
// (an overflow) rather than losing a tuple; after an overflow the halted iteration reruns with
// what it added merged into its delta, and no work is ever lost. PEC's list only counts.
//
// One iteration: each relation's delta joins the full relations (both directions for INC x ES
// and PE x SUM), new tuples are inserted (fresh, into the next delta, and linked); then the
// next delta becomes current. Every kernel starts by checking the status word: once
// something overflowed, the rest of the window does nothing and the host grows the tables and
// collects the deltas again.
//
// The same bodies run on a GPU, one thread per index, and on the CPU device, where the passes
// that probe tables at random run a whole range of indexes per worker (Body::RunRange): they
// prefetch each probe's first slot well before it is made and reserve places in the delta lists
// a run at a time (kernels/bodies/ifds_ranges.h).
//
// Every index that comes from buffer contents is checked: the compiled graph's header, node,
// flow, procedure and fact ids, chain locations. Bad data raises kStatusIndexOutOfBounds; a full
// table or delta list raises kStatusCapacityOverflow.
#ifndef SLUICE_KERNELS_BODIES_IFDS_H_
#define SLUICE_KERNELS_BODIES_IFDS_H_

#include <cstdint>

#include "sluice/kernels/atomics.h"
#include "sluice/kernels/bodies/ifds_ranges.h"
#include "sluice/kernels/bodies/ifds_tables.h"
#include "sluice/kernels/hd.h"
#include "sluice/kernels/ifds.h"
#include "sluice/kernels/kernel_args.h"

namespace sluice::kernels::ifds {

// Calls emit(fact) for every fact of f(d), checking the flow's ranges and the facts it names.
template <class Emit>
SLUICE_HD void ApplyFlow(const KernelArgs& a, const Graph& g, uint32_t f, uint32_t d,
                         Emit&& emit) {
  constexpr uint64_t kWords = GraphLayout::kFlowHeaderWords;
  constexpr uint32_t kIdentity = GraphLayout::kIdentityBit;
  const DeviceSpan<uint32_t> headers = g[GraphLayout::kFlowHeaders];
  if (!headers.Contains(kWords * f + 2 * kWords - 1)) {
    Raise(a, kStatusIndexOutOfBounds);
    return;
  }
  // Flow f's lists run from its header's begins to the next header's.
  const uint32_t* h = &headers[kWords * f];
  const bool identity = (h[0] & kIdentity) != 0;
  const uint32_t kill_begin = h[0] & ~kIdentity, kill_end = h[kWords] & ~kIdentity;
  const uint32_t gen_begin = h[1], gen_end = h[kWords + 1];
  const uint32_t pair_begin = h[2], pair_end = h[kWords + 2];
  const DeviceSpan<uint32_t> kills = g[GraphLayout::kKills];
  const DeviceSpan<uint32_t> gens = g[GraphLayout::kGens];
  const DeviceSpan<uint32_t> pairs = g[GraphLayout::kPairs];
  if (kill_begin > kill_end || kill_end > kills.size || gen_begin > gen_end ||
      gen_end > gens.size || pair_begin > pair_end || pair_end > pairs.size) {
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
    for (uint32_t i = gen_begin; i < gen_end && !a.Stopping(i - gen_begin); ++i) out(gens[i]);
  } else if (identity) {
    uint32_t lo = kill_begin, hi = kill_end;  // binary search of the sorted kills
    while (lo < hi) {
      const uint32_t mid = lo + (hi - lo) / 2;
      if (kills[mid] < d) lo = mid + 1; else hi = mid;
    }
    if (lo == kill_end || kills[lo] != d) out(d);
  }
  // The first pair whose source is d (or after it); d is a 16-bit fact, from a tuple.
  const uint32_t first = GraphLayout::PackPair(d, 0);
  uint32_t lo = pair_begin, hi = pair_end;
  while (lo < hi) {
    const uint32_t mid = lo + (hi - lo) / 2;
    if (pairs[mid] < first) lo = mid + 1; else hi = mid;
  }
  for (uint32_t i = lo; i < pair_end && GraphLayout::PairSource(pairs[i]) == d; ++i) {
    if (a.Stopping(i - lo)) return;
    out(GraphLayout::PairTarget(pairs[i]));
  }
}

// Whether this thread makes call edge e's call for fact d2 at its call node: applies the call
// flow and inserts INC(e, d3, d2) and PE(d3, start, d3) for each result. Neither depends on the
// path edge's d1, so the call is made once: bit e * facts + d2 of the calls bitmap (kCalls)
// claims it. Pairs past the bitmap's end are never claimed: their calls are made every time,
// which is correct, only slower (the host sizes the bitmap, and may keep it small). An
// iteration that overflows may have lost the inserts of a call it claimed: the host clears the
// bitmap before the rerun (the calls of completed iterations all went in).
SLUICE_HD inline bool ClaimCall(const KernelArgs& a, uint32_t facts, uint32_t e, uint32_t d2) {
  const DeviceSpan<uint32_t> calls = a.As<uint32_t>(kCalls);
  const uint64_t bit = uint64_t{e} * facts + d2;
  if (!calls.Contains(bit >> 5)) return true;
  uint32_t* word = &calls[bit >> 5];
  const uint32_t mask = 1u << (bit & 31);
  // Most calls were made already: a plain look first spares the locked update.
  if ((atomics::Load(word) & mask) != 0) return false;
  return (atomics::FetchOr(word, mask) & mask) == 0;
}

// A kernel whose threads insert and walk chains: Body::Visit(a, g, t, insert, walk) calls
// insert(table, key) for each tuple it derives, and walk(group, context) for each chain of
// Body::Walk::kWalked whose tuples derive more (Body::Walk::Each).
template <class Body>
struct Inserting {
  SLUICE_HD static void Run(const KernelArgs& a, uint64_t t, uint64_t) {
    const Graph g = Graph::Open(a);
    if (!g.ok) return Raise(a, kStatusIndexOutOfBounds);
    DirectInserts insert{a};
    DirectWalks<typename Body::Walk, DirectInserts> walk{a, g, insert};
    Body::Visit(a, g, t, insert, walk);
  }
  // The CPU launcher's entry: a range of threads, their walks interleaved and their inserts
  // queued.
  static void RunRange(const KernelArgs& a, uint64_t begin, uint64_t end, uint64_t) {
    const Graph g = Graph::Open(a);
    if (!g.ok) return Raise(a, kStatusIndexOutOfBounds);
    QueuedInserts insert(a);
    QueuedWalks<typename Body::Walk, QueuedInserts> walk(a, g, insert);
    for (uint64_t t = begin; t < end; ++t) Body::Visit(a, g, t, insert, walk);
    walk.Close();
    insert.Close();
  }
};

// Tuple `t` of relation r's current delta; false when there is none (or a hole).
SLUICE_HD inline bool DeltaTuple(const KernelArgs& a, int r, uint64_t t, uint64_t* key) {
  const DeviceSpan<uint64_t> current = CurrentList(a, r);
  if (!current.Contains(t)) return false;
  *key = current[t];
  return *key != kEmpty;
}

// ---- Kernels --------------------------------------------------------------------------------

// The body of kSeedKernel.
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
    Insert(a, kPe, PackPe(fact, node, fact));
  }
};

// The body of kPeDeltaKernel.
struct PeDelta : Inserting<PeDelta> {
  // The summaries SUM(n, d2, d5) of a path edge at a call node: context (d1, return(n)).
  struct Walk {
    static constexpr int kWalked = kSum;
    template <class Inserts>
    SLUICE_HD static void Each(const KernelArgs&, const Graph&, WalkContext c, uint64_t sum,
                               Inserts& insert) {
      insert(kPe, PackPe(c.x, c.y, Low(sum)));
    }
  };
  template <class Inserts, class Walks>
  SLUICE_HD static void Visit(const KernelArgs& a, const Graph& g, uint64_t t, Inserts& insert,
                              Walks& walk) {
    uint64_t key = 0;
    if (Halted(a) || !DeltaTuple(a, kPe, t, &key)) return;
    const uint32_t n = Top(key), d2 = Mid(key), d1 = Low(key);
    if (n >= g.nodes) return Raise(a, kStatusIndexOutOfBounds);

    const DeviceSpan<uint32_t> intra_offsets = g[GraphLayout::kIntraOffsets];
    const DeviceSpan<uint32_t> intra = g[GraphLayout::kIntraEdges];
    if (!intra_offsets.Contains(uint64_t{n} + 1)) return Raise(a, kStatusIndexOutOfBounds);
    const uint32_t ib = intra_offsets[n], ie = intra_offsets[n + 1];
    if (ib > ie || 2ull * ie > intra.size) return Raise(a, kStatusIndexOutOfBounds);
    for (uint32_t e = ib; e < ie; ++e) {
      if (a.Stopping(e - ib)) return;
      const uint32_t m = intra[2 * e];
      if (m >= g.nodes) {
        Raise(a, kStatusIndexOutOfBounds);
        continue;
      }
      ApplyFlow(a, g, intra[2 * e + 1], d2, [&](uint32_t d3) { insert(kPe, PackPe(d1, m, d3)); });
    }

    const DeviceSpan<uint32_t> call_offsets = g[GraphLayout::kCallOffsets];
    const DeviceSpan<uint32_t> calls = g[GraphLayout::kCallEdges];
    const DeviceSpan<uint32_t> proc_start = g[GraphLayout::kProcStart];
    if (!call_offsets.Contains(uint64_t{n} + 1)) return Raise(a, kStatusIndexOutOfBounds);
    const uint32_t cb = call_offsets[n], ce = call_offsets[n + 1];
    if (cb > ce || 5ull * ce > calls.size) return Raise(a, kStatusIndexOutOfBounds);
    for (uint32_t e = cb; e < ce; ++e) {
      if (a.Stopping(e - cb)) return;
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
      if (!ClaimCall(a, g.facts, e, d2)) continue;
      ApplyFlow(a, g, calls[5ull * e + 3], d2, [&](uint32_t d3) {
        insert(kInc, Pack(e, d3, d2));
        insert(kPe, PackPe(d3, start, d3));
      });
    }
    if (cb < ce) {
      const DeviceSpan<uint32_t> return_site = g[GraphLayout::kReturnSite];
      const uint32_t r = return_site.Contains(n) ? return_site[n] : kNone;
      if (r >= g.nodes) return Raise(a, kStatusIndexOutOfBounds);
      // Indexed for the summaries still to come (a rerun adds it again: no harm).
      insert(kPec, key);
      walk(Group(n, d2), WalkContext{d1, r});
    }
    const DeviceSpan<uint32_t> exit_proc = g[GraphLayout::kExitProc];
    if (!exit_proc.Contains(n)) return Raise(a, kStatusIndexOutOfBounds);
    const uint32_t p = exit_proc[n];
    if (p != kNone) {
      if (p >= g.procedures) return Raise(a, kStatusIndexOutOfBounds);
      insert(kEs, Pack(p, d1, d2));
    }
  }
};

// Applies call edge e's return flow to d4 and adds SUM(c_e, d2, d5) for every result.
template <class Inserts>
SLUICE_HD void Summarize(const KernelArgs& a, const Graph& g, uint32_t e, uint32_t d2,
                         uint32_t d4, Inserts& insert) {
  const DeviceSpan<uint32_t> calls = g[GraphLayout::kCallEdges];
  if (!calls.Contains(5ull * e + 4)) return Raise(a, kStatusIndexOutOfBounds);
  const uint32_t c = calls[5ull * e];
  if (c >= g.nodes) return Raise(a, kStatusIndexOutOfBounds);
  ApplyFlow(a, g, calls[5ull * e + 4], d4,
            [&](uint32_t d5) { insert(kSum, Pack(c, d2, d5)); });
}

// The body of kIncDeltaKernel.
struct IncDelta : Inserting<IncDelta> {
  // Context (e, d2).
  struct Walk {
    static constexpr int kWalked = kEs;
    template <class Inserts>
    SLUICE_HD static void Each(const KernelArgs& a, const Graph& g, WalkContext c, uint64_t es,
                               Inserts& insert) {
      Summarize(a, g, c.x, c.y, Low(es), insert);
    }
  };
  template <class Inserts, class Walks>
  SLUICE_HD static void Visit(const KernelArgs& a, const Graph& g, uint64_t t, Inserts&,
                              Walks& walk) {
    uint64_t key = 0;
    if (Halted(a) || !DeltaTuple(a, kInc, t, &key)) return;
    const uint32_t e = Top(key), d3 = Mid(key), d2 = Low(key);
    const uint32_t p = g.Callee(e);
    if (p == kNone) return Raise(a, kStatusIndexOutOfBounds);
    walk(Group(p, d3), WalkContext{e, d2});
  }
};

// The body of kEsDeltaKernel.
struct EsDelta : Inserting<EsDelta> {
  // Context (d4, unused).
  struct Walk {
    static constexpr int kWalked = kInc;
    template <class Inserts>
    SLUICE_HD static void Each(const KernelArgs& a, const Graph& g, WalkContext c, uint64_t inc,
                               Inserts& insert) {
      Summarize(a, g, Top(inc), Low(inc), c.x, insert);
    }
  };
  template <class Inserts, class Walks>
  SLUICE_HD static void Visit(const KernelArgs& a, const Graph&, uint64_t t, Inserts&,
                              Walks& walk) {
    uint64_t key = 0;
    if (Halted(a) || !DeltaTuple(a, kEs, t, &key)) return;
    const uint32_t p = Top(key), d3 = Mid(key), d4 = Low(key);
    walk(Group(p, d3), WalkContext{d4, 0});
  }
};

// The body of kSumDeltaKernel.
struct SumDelta : Inserting<SumDelta> {
  // The path edges PE(d1, c, d2) at the call: context (return(c), d5).
  struct Walk {
    static constexpr int kWalked = kPec;
    template <class Inserts>
    SLUICE_HD static void Each(const KernelArgs&, const Graph&, WalkContext c, uint64_t pe,
                               Inserts& insert) {
      insert(kPe, PackPe(Low(pe), c.x, c.y));
    }
  };
  template <class Inserts, class Walks>
  SLUICE_HD static void Visit(const KernelArgs& a, const Graph& g, uint64_t t, Inserts&,
                              Walks& walk) {
    uint64_t key = 0;
    if (Halted(a) || !DeltaTuple(a, kSum, t, &key)) return;
    const uint32_t c = Top(key), d2 = Mid(key), d5 = Low(key);
    const DeviceSpan<uint32_t> return_site = g[GraphLayout::kReturnSite];
    if (!return_site.Contains(c)) return Raise(a, kStatusIndexOutOfBounds);
    const uint32_t r = return_site[c];
    if (r >= g.nodes) return Raise(a, kStatusIndexOutOfBounds);
    walk(Group(c, d2), WalkContext{r, d5});
  }
};

// All slots of table t.
SLUICE_HD inline uint64_t TableSlots(const KernelArgs& a, int t) {
  uint64_t slots = 0;
  for (uint32_t s = 0; s < kSegments; ++s) slots += Segment(a, t, s).keys.size;
  return slots;
}

// Whether any table, heads table or list should grow before the next iteration.
SLUICE_HD inline bool AnyWantsGrowth(const KernelArgs& a) {
  for (int t = 0; t < kNumTables; ++t) {
    const uint32_t current = *StateWord(a, State::Current(t));
    if (WantsGrowth(*StateWord(a, State::Count(t)), current, TableSlots(a, t))) return true;
    if (Joined(t) && HeadsWantGrowth(*StateWord(a, State::Heads(t)), current,
                                     *StateWord(a, State::Count(t)), HeadsOf(a, t).keys.size)) {
      return true;
    }
    if (ListWantsGrowth(current, ListHalf(a, t, 0).size)) return true;
  }
  return false;
}

// The active word: another iteration has work, and nothing wants to grow.
SLUICE_HD inline void SetActive(const KernelArgs& a) {
  uint32_t active = 0;
  if (!Halted(a)) {
    for (int r = 0; r < kNumRelations; ++r) {
      if (*StateWord(a, State::Current(r)) != 0) active = 1;
    }
    if (AnyWantsGrowth(a)) active = 0;
  }
  *StateWord(a, State::kActive) = active;
}

// The body of kAdvanceKernel.
struct Advance {
  SLUICE_HD static void Run(const KernelArgs& a, uint64_t, uint64_t) {
    if (!Halted(a)) {
      for (int t = 0; t < kNumTables; ++t) {
        const uint32_t next = *StateWord(a, State::Next(t));
        *StateWord(a, State::Current(t)) = next;
        *StateWord(a, State::Count(t)) += next - *StateWord(a, State::Holes(t));
        *StateWord(a, State::Next(t)) = 0;
        *StateWord(a, State::Holes(t)) = 0;
      }
      *StateWord(a, State::kParity) ^= 1u;
      *StateWord(a, State::kIteration) += 1;
    }
    // Tables the host would grow end the window here, at an iteration boundary, rather than
    // filling up until an insert fails mid-iteration (which costs a rerun).
    SetActive(a);
  }
};

// The body of kMergeKernel.
template <int R>
struct MergePass {
  SLUICE_HD static void Run(const KernelArgs& a, uint64_t t, uint64_t) {
    if (Halted(a)) return;
    const DeviceSpan<uint64_t> next = NextList(a, R);
    const DeviceSpan<uint64_t> current = CurrentList(a, R);
    const uint64_t at = uint64_t{*StateWord(a, State::Current(R))} + t;
    if (!next.Contains(t)) return;
    if (current.Contains(at)) {
      current[at] = next[t];
    } else {
      Raise(a, kStatusIndexOutOfBounds);  // the host sized the halves for this
    }
  }
};
struct MergeFinish {
  SLUICE_HD static void Run(const KernelArgs& a, uint64_t, uint64_t) {
    if (Halted(a)) return;
    for (int t = 0; t < kNumTables; ++t) {
      const uint32_t next = *StateWord(a, State::Next(t));
      if (t < kNumRelations) {
        const uint64_t merged = uint64_t{*StateWord(a, State::Current(t))} + next;
        const uint64_t room = CurrentList(a, t).size;
        *StateWord(a, State::Current(t)) = static_cast<uint32_t>(merged < room ? merged : room);
      }
      *StateWord(a, State::Count(t)) += next - *StateWord(a, State::Holes(t));
      *StateWord(a, State::Next(t)) = 0;
      *StateWord(a, State::Holes(t)) = 0;
    }
  }
};

// The body of kReindexKernel.
struct ReindexReset {
  SLUICE_HD static void Run(const KernelArgs& a, uint64_t, uint64_t) {
    for (int t = 1; t < kNumTables; ++t) {
      if (((a.param[0] >> (t - 1)) & 1) != 0) *StateWord(a, State::Heads(t)) = 0;
    }
  }
};
// Pass I links segment I % kSegments of joined table I / kSegments + 1.
template <int I>
struct ReindexPass {
  static constexpr int T = I / static_cast<int>(kSegments) + 1;
  static constexpr uint32_t S = static_cast<uint32_t>(I) % kSegments;
  SLUICE_HD static void Run(const KernelArgs& a, uint64_t t, uint64_t) {
    if (((a.param[0] >> (T - 1)) & 1) == 0) return;
    const DeviceSpan<uint64_t> table = Segment(a, T, S).keys;
    if (!table.Contains(t) || table[t] == kEmpty) return;
    Link(a, Graph::Open(a), T, table[t], Location(S, t));
  }
  static void RunRange(const KernelArgs& a, uint64_t begin, uint64_t end, uint64_t) {
    if (((a.param[0] >> (T - 1)) & 1) == 0) return;
    const DeviceSpan<uint64_t> table = Segment(a, T, S).keys;
    QueuedLinks links(a, T);
    for (uint64_t t = begin; t < end && table.Contains(t); ++t) {
      if (table[t] != kEmpty) links(table[t], Location(S, t));
    }
    links.Close();
  }
};

// The body of kResumeKernel.
struct Resume {
  SLUICE_HD static void Run(const KernelArgs& a, uint64_t, uint64_t) {
    uint32_t* status = StateWord(a, State::kStatus);
    *status &= ~kStatusCapacityOverflow;
  }
};

// The body of kActivateKernel.
struct Activate {
  SLUICE_HD static void Run(const KernelArgs& a, uint64_t, uint64_t) { SetActive(a); }
};

// The body of kRehashKernel.
struct Rehash {
  enum Binding { kOld, kNew, kRehashStatus };
  enum Param { kTable, kSegmentIndex };
};
struct RehashPass {
  SLUICE_HD static DeviceSpan<uint64_t> Keys(const KernelArgs& a, int binding) {
    return ViewOf(a.binding[binding], SlotBytes(static_cast<int>(a.param[Rehash::kTable]))).keys;
  }
  // Puts the tuple v (whose Mix is `hash`) in the new segment.
  SLUICE_HD static void Place(const KernelArgs& a, const DeviceSpan<uint64_t>& to, uint64_t v,
                              uint64_t hash) {
    const uint32_t s = static_cast<uint32_t>(a.param[Rehash::kSegmentIndex]);
    const uint64_t slots = to.size;
    if (SegmentOf(hash) == s && slots != 0) {
      uint64_t slot = HomeOf(hash, slots);
      for (uint64_t probe = 0; probe < slots; ++probe) {
        if (a.Stopping(probe)) return;
        // A locked exchange only where the slot looks empty: most probes pass taken slots.
        if (atomics::Load(&to[slot]) == kEmpty &&
            atomics::CompareExchange(&to[slot], kEmpty, v) == kEmpty) {
          return;
        }
        slot = slot + 1 == slots ? 0 : slot + 1;
      }
    }
    a.RaiseStatus(Rehash::kRehashStatus, kStatusIndexOutOfBounds);
  }
  SLUICE_HD static void Run(const KernelArgs& a, uint64_t i, uint64_t) {
    const DeviceSpan<uint64_t> from = Keys(a, Rehash::kOld);
    if (!from.Contains(i) || from[i] == kEmpty) return;
    Place(a, Keys(a, Rehash::kNew), from[i], Mix(from[i]));
  }
  // On the CPU each tuple's new home is prefetched before it is placed.
  static void RunRange(const KernelArgs& a, uint64_t begin, uint64_t end, uint64_t) {
    const DeviceSpan<uint64_t> from = Keys(a, Rehash::kOld);
    const DeviceSpan<uint64_t> to = Keys(a, Rehash::kNew);
    struct Pending {
      uint64_t v, hash;
    };
    Staggered<Pending> queue;
    const auto place = [&](const Pending& p) { Place(a, to, p.v, p.hash); };
    for (uint64_t i = begin; i < end && from.Contains(i); ++i) {
      const uint64_t v = from[i];
      if (v == kEmpty) continue;
      const uint64_t hash = Mix(v);
      queue.Push(Pending{v, hash}, HomeCell(to, hash), place);
    }
    queue.Drain(place);
  }
};

// ---- Results --------------------------------------------------------------------------------

// The results are the distinct (n, d2) of every path edge, in order. A window of nodes
// [first_node, first_node + nodes) is marked in a bitmap, a row of `words_per_node` u32 words
// per node with bit d2 of its row set for each pair (rows padded to whole words, so that a word
// belongs to one node); then the bits are counted per block of 2048 words, the counts
// turned into offsets, and each block lists its pairs (u64: n << 16 | d2) from its offset. The
// bitmap is what dedups and what sorts: no hash set, no sort.
SLUICE_HD inline uint32_t PopCount(uint32_t x) {
#if defined(__CUDA_ARCH__)
  return static_cast<uint32_t>(__popc(x));
#else
  // Bits summed in pairs, nibbles and bytes, inline: x86-64's baseline has no popcount
  // instruction, and __builtin_popcount is a call into libgcc there.
  x = x - ((x >> 1) & 0x55555555u);
  x = (x & 0x33333333u) + ((x >> 2) & 0x33333333u);
  x = (x + (x >> 4)) & 0x0f0f0f0fu;
  return (x * 0x01010101u) >> 24;
#endif
}
// The index of the lowest set bit of x (x != 0).
SLUICE_HD inline uint32_t LowestBit(uint32_t x) {
#if defined(__CUDA_ARCH__)
  return static_cast<uint32_t>(__ffs(static_cast<int>(x)) - 1);
#else
  return static_cast<uint32_t>(__builtin_ctz(x));
#endif
}

// The body of kResultsKernel.
struct Results {
  enum Binding {
    kSegment0,
    kMarks = kSegment0 + static_cast<int>(kSegments),
    kCounts,
    kResultState,
  };
};
template <uint32_t S>
struct ResultsPass {
  // The word of `marks` that holds the pair of path edge `key`: false when its node is another
  // window's (`*word` is then `kOtherWindow`) or its fact does not fit a row.
  static constexpr uint64_t kOtherWindow = ~uint64_t{0};
  SLUICE_HD static bool WordOf(const KernelArgs& a, const DeviceSpan<uint32_t>& marks,
                               uint64_t key, uint64_t* word) {
    const uint64_t n = Top(key), d2 = Mid(key);
    const uint64_t first = a.param[ResultWindow::kFirstNode];
    *word = kOtherWindow;
    if (n < first || n - first >= a.param[ResultWindow::kNodes]) return false;
    const uint64_t row = a.param[ResultWindow::kWordsPerNode];
    *word = (n - first) * row + d2 / 32;
    return d2 < 32 * row && marks.Contains(*word);
  }
  // Marks the pair of path edge `key`; false when its fact does not fit a row.
  SLUICE_HD static bool Mark(const KernelArgs& a, const DeviceSpan<uint32_t>& marks,
                             uint64_t key) {
    uint64_t word;
    if (!WordOf(a, marks, key, &word)) return word == kOtherWindow;
    const uint32_t bit = 1u << (Mid(key) % 32);
    // Most pairs are marked already (a pair is the end of many path edges): read first.
    if ((atomics::Load(&marks[word]) & bit) == 0) atomics::FetchOr(&marks[word], bit);
    return true;
  }
  SLUICE_HD static void Run(const KernelArgs& a, uint64_t t, uint64_t) {
    const DeviceSpan<uint64_t> table = a.As<uint64_t>(Results::kSegment0 + static_cast<int>(S));
    if (!table.Contains(t) || table[t] == kEmpty) return;
    if (!Mark(a, a.As<uint32_t>(Results::kMarks), table[t])) {
      a.RaiseStatus(Results::kResultState, kStatusIndexOutOfBounds);
    }
  }
  // The table is read in order, the marks at random (a bitmap larger than the caches, at
  // scale): each key's word is prefetched and marked 32 keys later (16: 20% slower at 5M).
  static void RunRange(const KernelArgs& a, uint64_t begin, uint64_t end, uint64_t) {
    const DeviceSpan<uint64_t> table = a.As<uint64_t>(Results::kSegment0 + static_cast<int>(S));
    const DeviceSpan<uint32_t> marks = a.As<uint32_t>(Results::kMarks);
    bool ok = true;
    Staggered<uint64_t, 32> queue;
    const auto mark = [&](uint64_t key) { ok = Mark(a, marks, key) && ok; };
    for (uint64_t t = begin; t < end && table.Contains(t); ++t) {
      const uint64_t key = table[t];
      if (key == kEmpty) continue;
      uint64_t word;
      const void* probe = &table[t];  // a key of another window: nothing to fetch
      if (WordOf(a, marks, key, &word)) probe = &marks[word];
      queue.Push(key, probe, mark);
    }
    queue.Drain(mark);
    if (!ok) a.RaiseStatus(Results::kResultState, kStatusIndexOutOfBounds);
  }
};
// Block b's marked pairs, counted into counts[b].
struct ResultsCount {
  SLUICE_HD static void Run(const KernelArgs& a, uint64_t block, uint64_t) {
    const DeviceSpan<uint32_t> marks = a.As<uint32_t>(Results::kMarks);
    DeviceSpan<uint32_t> counts = a.As<uint32_t>(Results::kCounts);
    const uint64_t words = ResultWindow::Words(a);
    if (!counts.Contains(block) || block >= ResultWindow::Blocks(words)) return;
    uint32_t count = 0;
    const uint64_t end = ResultWindow::End(block, words);
    for (uint64_t w = block * ResultWindow::kBlock; w < end && marks.Contains(w); ++w) {
      count += PopCount(marks[w]);
    }
    counts[block] = count;
  }
};
// One thread: the counts become each block's first place in the list, and the total goes to
// counts[blocks] and to the result state.
struct ResultsOffsets {
  SLUICE_HD static void Run(const KernelArgs& a, uint64_t, uint64_t) {
    DeviceSpan<uint32_t> counts = a.As<uint32_t>(Results::kCounts);
    DeviceSpan<uint32_t> state = a.As<uint32_t>(Results::kResultState);
    const uint64_t blocks = ResultWindow::Blocks(ResultWindow::Words(a));
    if (!counts.Contains(blocks) || !state.Contains(1)) return;
    uint32_t running = 0;
    for (uint64_t b = 0; b < blocks; ++b) {
      const uint32_t count = counts[b];
      counts[b] = running;
      running += count;
    }
    counts[blocks] = running;
    state[1] = running;
  }
};

// The body of kResultsListKernel.
struct ResultsList {
  enum Binding { kMarks, kCounts, kOut };
  SLUICE_HD static void Run(const KernelArgs& a, uint64_t block, uint64_t) {
    const DeviceSpan<uint32_t> marks = a.As<uint32_t>(kMarks);
    const DeviceSpan<uint32_t> counts = a.As<uint32_t>(kCounts);
    DeviceSpan<uint64_t> out = a.As<uint64_t>(kOut);
    const uint64_t words = ResultWindow::Words(a);
    const uint64_t row = a.param[ResultWindow::kWordsPerNode];
    if (!counts.Contains(block) || block >= ResultWindow::Blocks(words) || row == 0) return;
    uint64_t at = counts[block];
    const uint64_t end = ResultWindow::End(block, words);
    for (uint64_t w = block * ResultWindow::kBlock; w < end && marks.Contains(w); ++w) {
      const uint64_t n = a.param[ResultWindow::kFirstNode] + w / row;
      const uint64_t first_fact = 32 * (w % row);
      for (uint32_t bits = marks[w]; bits != 0; bits &= bits - 1) {
        const uint64_t fact = first_fact + LowestBit(bits);
        if (out.Contains(at)) out[at] = (n << 16) | fact;
        ++at;
      }
    }
  }
};

}  // namespace sluice::kernels::ifds

#endif  // SLUICE_KERNELS_BODIES_IFDS_H_
