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
// a run at a time (see "The CPU launcher's ranges" below).
//
// Every index that comes from buffer contents is checked: the compiled graph's header, node,
// flow, procedure and fact ids, chain locations. Bad data raises kStatusIndexOutOfBounds; a full
// table or delta list raises kStatusCapacityOverflow.
#ifndef SLUICE_KERNELS_BODIES_IFDS_H_
#define SLUICE_KERNELS_BODIES_IFDS_H_

#include <cstdint>

#include "kernels/atomics.h"
#include "kernels/hd.h"
#include "kernels/ifds.h"
#include "kernels/kernel_args.h"

namespace sluice::kernels::ifds {

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
    g.ok = g.facts > 0 && g.facts <= 0xffff && g.nodes <= kMaxId && g.procedures <= kMaxId &&
           g.call_edges <= kMaxId;
    return g;
  }
  // Section `s`, or an empty span if the header places it outside the buffer.
  SLUICE_HD DeviceSpan<uint32_t> operator[](uint32_t s) const {
    const uint64_t offset = words[GraphLayout::kSectionTable + 2 * s];
    const uint64_t length = words[GraphLayout::kSectionTable + 2 * s + 1];
    if (offset > words.size || length > words.size - offset) return DeviceSpan<uint32_t>{words.data, 0};
    return DeviceSpan<uint32_t>{words.data + offset, length};
  }
  // The callee procedure of call edge `e`, or kNone when the graph has no such edge.
  SLUICE_HD uint32_t Callee(uint32_t e) const {
    const DeviceSpan<uint32_t> calls = (*this)[GraphLayout::kCallEdges];
    return calls.Contains(5ull * e + 4) ? calls[5ull * e + 1] : kNone;
  }
};

// ---- Packing ------------------------------------------------------------------------------

// Every key: 1 (kTag) | top:31 | mid:16 | low:16.
SLUICE_HD inline uint64_t Pack(uint32_t top31, uint32_t mid16, uint32_t low16) {
  return kTag | (uint64_t{top31 & kMaxId} << 32) | (uint64_t{mid16 & 0xffff} << 16) |
         (low16 & 0xffff);
}
SLUICE_HD inline uint64_t PackPe(uint32_t d1, uint32_t n, uint32_t d2) { return Pack(n, d2, d1); }
SLUICE_HD inline uint32_t Top(uint64_t k) { return static_cast<uint32_t>(k >> 32) & kMaxId; }
SLUICE_HD inline uint32_t Mid(uint64_t k) { return static_cast<uint32_t>(k >> 16) & 0xffff; }
SLUICE_HD inline uint32_t Low(uint64_t k) { return static_cast<uint32_t>(k) & 0xffff; }
// A group: 1 (kTag) | id:31 | fact:16.
SLUICE_HD inline uint64_t Group(uint32_t id, uint32_t fact) {
  return kTag | (uint64_t{id & kMaxId} << 16) | (fact & 0xffff);
}

// splitmix64's finalizer: cheap and mixes every input bit into every output bit.
SLUICE_HD inline uint64_t Mix(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  return x;
}
// Where a key lives: its segment (low bits of its hash) and home slot (the top 32 bits scaled to
// the table's slot count, which need not be a power of two).
SLUICE_HD inline uint32_t SegmentOf(uint64_t hash) {
  return static_cast<uint32_t>(hash & (kSegments - 1));
}
SLUICE_HD inline uint64_t HomeOf(uint64_t hash, uint64_t slots) {
  return ((hash >> 32) * slots) >> 32;  // slots < 2^32 (the catalog checks)
}
// The home slot's cell of a key whose hash is `hash` in `keys` (the first cell when empty): what
// the CPU's ranges prefetch.
SLUICE_HD inline const uint64_t* HomeCell(const DeviceSpan<uint64_t>& keys, uint64_t hash) {
  return keys.data + (keys.size == 0 ? 0 : HomeOf(hash, keys.size));
}
SLUICE_HD inline uint32_t Location(uint32_t segment, uint64_t slot) {
  return (segment << kSegmentShift) | static_cast<uint32_t>(slot);
}
SLUICE_HD inline uint32_t SegmentAt(uint32_t location) { return location >> kSegmentShift; }
SLUICE_HD inline uint64_t SlotAt(uint32_t location) { return location & kMaxSegmentSlots; }

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

// The slots of a table: keys, then (joined tables and heads) a u32 per slot.
struct SlotView {
  DeviceSpan<uint64_t> keys;
  DeviceSpan<uint32_t> links;
};
SLUICE_HD inline SlotView ViewOf(const BindingView& b, uint64_t slot_bytes) {
  // Every insert and probe views its segment: dividing by the two slot sizes as constants
  // spares a division instruction (tens of cycles) per view.
  const uint64_t slots = slot_bytes == 8    ? b.bytes / 8
                         : slot_bytes == 12 ? b.bytes / 12
                                            : b.bytes / slot_bytes;
  SlotView v{DeviceSpan<uint64_t>{reinterpret_cast<uint64_t*>(b.data), slots},
             DeviceSpan<uint32_t>{nullptr, 0}};
  if (slot_bytes == 12) {
    v.links = DeviceSpan<uint32_t>{reinterpret_cast<uint32_t*>(b.data + 8 * slots), slots};
  }
  return v;
}
SLUICE_HD inline SlotView Segment(const KernelArgs& a, int t, uint32_t s) {
  return ViewOf(a.binding[TableBinding(t, s)], SlotBytes(t));
}
SLUICE_HD inline SlotView HeadsOf(const KernelArgs& a, int t) {
  return ViewOf(a.binding[HeadsBinding(t)], kHeadBytes);
}
// Half `half` of table t's list.
SLUICE_HD inline DeviceSpan<uint64_t> ListHalf(const KernelArgs& a, int t, uint32_t half) {
  const DeviceSpan<uint64_t> all = a.As<uint64_t>(kDeltas + t);
  const uint64_t size = all.size / 2;
  return DeviceSpan<uint64_t>{all.data + (half & 1) * size, size};
}
SLUICE_HD inline DeviceSpan<uint64_t> CurrentList(const KernelArgs& a, int t) {
  return ListHalf(a, t, *StateWord(a, State::kParity));
}
SLUICE_HD inline DeviceSpan<uint64_t> NextList(const KernelArgs& a, int t) {
  return ListHalf(a, t, *StateWord(a, State::kParity) ^ 1u);
}

// The join group of a key of joined table t: (callee, d3) for INC (kEmpty when the graph has no
// such call edge), (top, mid) for the others.
SLUICE_HD inline uint64_t GroupOfKey(const Graph& g, int t, uint64_t key) {
  if (t != kInc) return Group(Top(key), Mid(key));
  const uint32_t callee = g.Callee(Top(key));
  return callee == kNone ? kEmpty : Group(callee, Mid(key));
}

// Places in the next lists, one per new tuple. An insert reserves its place before it takes a
// slot, so every tuple a table takes is listed and a full list refuses the insert (an overflow)
// rather than losing a tuple.
//
// SharedPlaces, one thread's inserts: each place comes from the list's counter. A refused
// reservation is given back, so the count ends at the places handed out (a place below the half
// is handed out once: the count never falls below the half again). A place whose slot another
// thread took first stays a hole (kEmpty), counted in Holes(t).
struct SharedPlaces {
  // The place for a new tuple of table t, or nullptr when t's next list is full.
  SLUICE_HD uint64_t* Reserve(const KernelArgs& a, int t) {
    const DeviceSpan<uint64_t> next = NextList(a, t);
    uint32_t* listed = StateWord(a, State::Next(t));
    const uint32_t at = atomics::FetchAdd(listed, 1u);
    if (!next.Contains(at)) {
      atomics::FetchAdd(listed, ~0u);
      return nullptr;
    }
    return &next[at];
  }
  // The reserved place now holds a tuple.
  SLUICE_HD void Used(int) {}
  // Another thread took the slot: the reserved place stays empty.
  SLUICE_HD void Lost(const KernelArgs& a, int t, uint64_t* place) {
    *place = kEmpty;
    atomics::FetchAdd(StateWord(a, State::Holes(t)), 1u);
  }
};

// Inserts `key` (whose Mix is `hash`) into table t; a new tuple goes to a place from `places`,
// and its location to *placed. Raises an overflow (inserting nothing) when the table is too
// full or the list is.
template <class Places>
SLUICE_HD inline void InsertHashed(const KernelArgs& a, int t, uint64_t key, uint64_t hash,
                                   Places& places, uint32_t* placed);
// The same, given the keys of the key's segment `s`.
template <class Places>
SLUICE_HD inline void InsertInSegment(const KernelArgs& a, int t, uint32_t s,
                                      const DeviceSpan<uint64_t>& table, uint64_t key,
                                      uint64_t hash, Places& places, uint32_t* placed) {
  const uint64_t slots = table.size;
  uint64_t slot = slots == 0 ? 0 : HomeOf(hash, slots);
  for (uint64_t probe = 0; probe < kMaxProbe && probe < slots; ++probe) {
    uint64_t seen = atomics::Load(&table[slot]);
    if (seen == kEmpty) {
      uint64_t* place = places.Reserve(a, t);
      if (place == nullptr) return Raise(a, kStatusCapacityOverflow);
      seen = atomics::CompareExchange(&table[slot], kEmpty, key);
      if (seen == kEmpty) {
        *place = key;
        places.Used(t);
        *placed = Location(s, slot);
        return;
      }
      // Another thread took the slot; the probe looks at what that thread wrote.
      places.Lost(a, t, place);
    }
    if (seen == key) return;
    slot = slot + 1 == slots ? 0 : slot + 1;
  }
  Raise(a, kStatusCapacityOverflow);
}
template <class Places>
SLUICE_HD inline void InsertHashed(const KernelArgs& a, int t, uint64_t key, uint64_t hash,
                                   Places& places, uint32_t* placed) {
  const uint32_t s = SegmentOf(hash);
  InsertInSegment(a, t, s, Segment(a, t, s).keys, key, hash, places, placed);
}

SLUICE_HD inline void Link(const KernelArgs& a, const Graph& g, int t, uint64_t key,
                           uint32_t location);

// Inserts `key` into table t; a new tuple of a joined table is linked into its group's chain
// at once (no pass walks a table that it inserts into).
SLUICE_HD inline void Insert(const KernelArgs& a, int t, uint64_t key) {
  SharedPlaces places;
  uint32_t placed = kNone;
  InsertHashed(a, t, key, Mix(key), places, &placed);
  if (placed != kNone && Joined(t)) Link(a, Graph::Open(a), t, key, placed);
}

// Where a kernel thread's inserts go. On a GPU each thread inserts at once: thousands of
// threads in flight hide the probes' latency.
struct DirectInserts {
  const KernelArgs& a;
  SLUICE_HD void operator()(int t, uint64_t key) const { Insert(a, t, key); }
};

// ---- The CPU launcher's ranges ---------------------------------------------------------------
//
// On the CPU one worker runs a whole range of kernel threads (Body::RunRange), where a GPU runs
// thousands at once and hides each probe's cache miss behind the others. The bodies that probe
// at random keep many misses in flight instead with a Staggered queue: each item is pushed with
// the address it will probe first, which is prefetched then, and processed kDepth pushes later.
// Items are processed before the range returns, so a pass's work is all done when it ends, as
// on a GPU; the order among a pass's threads was never fixed.
// Fetches the line at `p` for writing (exclusive, so that a locked update of it needs no
// further trip). GCC emits PREFETCHW for a write prefetch only when told the target has it;
// every x86-64 CPU of the last decade does, and older ones execute it as a no-op.
inline void PrefetchForWrite(const void* p) {
#if defined(__x86_64__)
  asm volatile("prefetchw %0" : : "m"(*static_cast<const char*>(p)));
#else
  __builtin_prefetch(p, 1, 3);
#endif
}

template <class Item, uint32_t kDepth = 16>
class Staggered {
  static_assert((kDepth & (kDepth - 1)) == 0, "a power of two");

 public:
  template <class Process>
  void Push(const Item& item, const void* probe, Process&& process) {
    PrefetchForWrite(probe);
    Item& back = ring_[(head_ + size_) % kDepth];
    if (size_ == kDepth) {
      // The oldest goes now; the new item takes its place at the back.
      process(back);
      head_ = (head_ + 1) % kDepth;
    } else {
      ++size_;
    }
    back = item;
  }
  template <class Process>
  void Drain(Process&& process) {
    for (; size_ > 0; --size_, head_ = (head_ + 1) % kDepth) process(ring_[head_]);
  }

 private:
  Item ring_[kDepth];
  uint32_t head_ = 0, size_ = 0;
};

// A range's places in the next lists, reserved a run at a time: the list counters, which every
// new tuple bumped (one cache line that the workers passed between them), are touched once per
// run. Runs start at kFirstRun places and double up to kLastRun, so that a range that adds
// little leaves few holes. A place whose slot another worker took first serves the range's next
// new tuple; the places left when the range closes become holes.
class RangePlaces {
 public:
  static constexpr uint32_t kFirstRun = 8;
  static constexpr uint32_t kLastRun = 64;

  SLUICE_HD uint64_t* Reserve(const KernelArgs& a, int t) {
    Run& run = runs_[t];
    if (run.at == run.end && !Refill(a, t, &run)) return nullptr;
    return run.at;
  }
  SLUICE_HD void Used(int t) { ++runs_[t].at; }
  SLUICE_HD void Lost(const KernelArgs&, int, uint64_t*) {}

  // The places reserved and not used become holes.
  void Close(const KernelArgs& a) {
    for (int t = 0; t < kNumTables; ++t) {
      Run& run = runs_[t];
      if (run.at == run.end) continue;
      for (uint64_t* place = run.at; place != run.end; ++place) *place = kEmpty;
      atomics::FetchAdd(StateWord(a, State::Holes(t)), static_cast<uint32_t>(run.end - run.at));
      run.at = run.end = nullptr;
    }
  }

 private:
  struct Run {
    uint64_t* at = nullptr;
    uint64_t* end = nullptr;
    uint32_t size = kFirstRun;  // of the next run
  };

  // A new run of places [at, end): run->size of them, or what is left below the half (the
  // rest is given back at once, so the count ends at the places handed out).
  SLUICE_HD static bool Refill(const KernelArgs& a, int t, Run* run) {
    const DeviceSpan<uint64_t> next = NextList(a, t);
    uint32_t* listed = StateWord(a, State::Next(t));
    const uint64_t want = run->size;
    const uint64_t base = atomics::FetchAdd(listed, static_cast<uint32_t>(want));
    const uint64_t end = base + want < next.size ? base + want : next.size;
    if (end < base + want) {
      const uint64_t back = base + want - (base < end ? end : base);
      atomics::FetchAdd(listed, static_cast<uint32_t>(0u - back));
    }
    if (base >= end) return false;
    run->at = next.data + base;
    run->end = next.data + end;
    // The run's lines are written soon, each before a locked exchange that would wait for its
    // store miss: fetched now, they are there.
#if !defined(__CUDA_ARCH__)  // ranges run on the CPU only
    for (const uint64_t* line = run->at; line < run->end; line += 8) PrefetchForWrite(line);
#endif
    if (run->size < kLastRun) run->size *= 2;
    return true;
  }
  Run runs_[kNumTables];
};


// The chain head of `group` in joined table t's heads (viewed as `heads`): the existing one,
// or (when `add`) a new one; nullptr when absent (or, adding, when the heads are full: an
// overflow). `hash` is Mix(group). A new head is counted in *created when that is given (a
// range adds its count once), else in the state at once.
SLUICE_HD inline uint32_t* HeadIn(const KernelArgs& a, int t, const SlotView& heads,
                                  uint64_t group, uint64_t hash, bool add,
                                  uint32_t* created = nullptr) {
  const uint64_t slots = heads.keys.size;
  uint64_t slot = slots == 0 ? 0 : HomeOf(hash, slots);
  for (uint64_t probe = 0; probe < kMaxProbe && probe < slots; ++probe) {
    uint64_t seen = atomics::Load(&heads.keys[slot]);
    if (seen == kEmpty) {
      if (!add) return nullptr;
      seen = atomics::CompareExchange(&heads.keys[slot], kEmpty, group);
      if (seen == kEmpty) {
        if (created != nullptr) {
          ++*created;
        } else {
          atomics::FetchAdd(StateWord(a, State::Heads(t)), 1u);
        }
        return &heads.links[slot];
      }
    }
    if (seen == group) return &heads.links[slot];
    slot = slot + 1 == slots ? 0 : slot + 1;
  }
  if (add) Raise(a, kStatusCapacityOverflow);
  return nullptr;
}
SLUICE_HD inline uint32_t* HeadOf(const KernelArgs& a, int t, uint64_t group, uint64_t hash,
                                  bool add, uint32_t* created = nullptr) {
  return HeadIn(a, t, HeadsOf(a, t), group, hash, add, created);
}

// Links the tuple at `location` of joined table t into the chain of its group `group` (whose
// Mix is `hash`); `heads` and `segment` view t's heads and the segment of `location`.
SLUICE_HD inline void LinkIn(const KernelArgs& a, int t, const SlotView& heads,
                             const SlotView& segment, uint64_t group, uint64_t hash,
                             uint32_t location, uint32_t* created = nullptr) {
  uint32_t* head = HeadIn(a, t, heads, group, hash, true, created);
  if (head == nullptr) return;
  const uint64_t slot = SlotAt(location);
  if (!segment.links.Contains(slot)) return Raise(a, kStatusIndexOutOfBounds);
  segment.links[slot] = atomics::Exchange(head, location + 1);
}
SLUICE_HD inline void LinkInGroup(const KernelArgs& a, int t, uint64_t group, uint64_t hash,
                                  uint32_t location) {
  LinkIn(a, t, HeadsOf(a, t), Segment(a, t, SegmentAt(location)), group, hash, location);
}

// Links the tuple `key` at `location` of joined table t into its group's chain.
SLUICE_HD inline void Link(const KernelArgs& a, const Graph& g, int t, uint64_t key,
                           uint32_t location) {
  const uint64_t group = GroupOfKey(g, t, key);
  if (group == kEmpty) return Raise(a, kStatusIndexOutOfBounds);
  LinkInGroup(a, t, group, Mix(group), location);
}

// Joined table t's heads and segments, viewed once for a whole range.
struct TableViews {
  SlotView heads;
  SlotView segments[kSegments];
  static TableViews Of(const KernelArgs& a, int t) {
    TableViews v;
    v.heads = HeadsOf(a, t);
    for (uint32_t s = 0; s < kSegments; ++s) v.segments[s] = Segment(a, t, s);
    return v;
  }
};

// A range's links: each group's head slot (key and link) is prefetched when the link is queued,
// and the new heads are counted once, when the range closes.
class QueuedLinks {
 public:
  QueuedLinks(const KernelArgs& a, int t)
      : a_(a), t_(t), g_(Graph::Open(a)), views_(TableViews::Of(a, t)) {}
  QueuedLinks(const QueuedLinks&) = delete;
  QueuedLinks& operator=(const QueuedLinks&) = delete;

  void operator()(uint64_t key, uint32_t location) {
    const uint64_t group = GroupOfKey(g_, t_, key);
    if (group == kEmpty) return Raise(a_, kStatusIndexOutOfBounds);
    const uint64_t hash = Mix(group);
    const SlotView& heads = views_.heads;
    const uint64_t home = heads.keys.size == 0 ? 0 : HomeOf(hash, heads.keys.size);
    if (heads.links.Contains(home)) PrefetchForWrite(&heads.links[home]);
    // The tuple's own link, which the link writes: a store miss would stall the head's locked
    // exchange that follows it.
    const SlotView& segment = views_.segments[SegmentAt(location)];
    if (segment.links.Contains(SlotAt(location))) {
      PrefetchForWrite(&segment.links[SlotAt(location)]);
    }
    queue_.Push(Pending{group, hash, location}, heads.keys.data + home,
                [this](const Pending& p) { Apply(p); });
  }

  void Close() {
    queue_.Drain([this](const Pending& p) { Apply(p); });
    if (created_ != 0) atomics::FetchAdd(StateWord(a_, State::Heads(t_)), created_);
  }

 private:
  struct Pending {
    uint64_t group, hash;
    uint32_t location;
  };
  void Apply(const Pending& p) {
    LinkIn(a_, t_, views_.heads, views_.segments[SegmentAt(p.location)], p.group, p.hash,
           p.location, &created_);
  }

  const KernelArgs& a_;
  const int t_;
  const Graph g_;
  const TableViews views_;
  uint32_t created_ = 0;
  Staggered<Pending> queue_;
};

// A range's inserts: each key's home slot is prefetched when it is queued, and a new tuple of a
// joined table queued for linking.
class QueuedInserts {
 public:
  explicit QueuedInserts(const KernelArgs& a)
      : a_(a), links_{{a, kInc}, {a, kEs}, {a, kSum}, {a, kPec}} {
    for (int t = 0; t < kNumTables; ++t) {
      for (uint32_t s = 0; s < kSegments; ++s) keys_[t][s] = Segment(a, t, s).keys;
    }
  }
  QueuedInserts(const QueuedInserts&) = delete;
  QueuedInserts& operator=(const QueuedInserts&) = delete;

  void operator()(int t, uint64_t key) {
    const uint64_t hash = Mix(key);
    queue_.Push(Pending{key, hash, t}, HomeCell(keys_[t][SegmentOf(hash)], hash),
                [this](const Pending& p) { Apply(p); });
  }

  // Every queued insert and link, then the places left become holes.
  void Close() {
    queue_.Drain([this](const Pending& p) { Apply(p); });
    for (QueuedLinks& links : links_) links.Close();
    places_.Close(a_);
  }

 private:
  struct Pending {
    uint64_t key, hash;
    int t;
  };
  void Apply(const Pending& p) {
    uint32_t placed = kNone;
    const uint32_t s = SegmentOf(p.hash);
    InsertInSegment(a_, p.t, s, keys_[p.t][s], p.key, p.hash, places_, &placed);
    if (placed != kNone && Joined(p.t)) links_[p.t - 1](p.key, placed);
  }

  const KernelArgs& a_;
  DeviceSpan<uint64_t> keys_[kNumTables][kSegments];
  RangePlaces places_;
  Staggered<Pending> queue_;
  QueuedLinks links_[kNumJoined];
};

// Calls visit(key) for every tuple of joined table t in `group`, following its chain. The walk
// is bounded by the table's slots, so corrupted links cannot loop forever.
template <class Visit>
SLUICE_HD void ForEachInGroup(const KernelArgs& a, int t, uint64_t group, Visit&& visit) {
  const uint32_t* head = HeadOf(a, t, group, Mix(group), false);
  if (head == nullptr) return;
  uint64_t bound = 0;
  for (uint32_t s = 0; s < kSegments; ++s) bound += Segment(a, t, s).keys.size;
  for (uint64_t steps = 0, link = *head; link != kEndOfChain; ++steps) {
    const uint32_t at = static_cast<uint32_t>(link - 1);
    const SlotView segment = Segment(a, t, SegmentAt(at));
    const uint64_t slot = SlotAt(at);
    if (steps >= bound || !segment.keys.Contains(slot)) return Raise(a, kStatusIndexOutOfBounds);
    visit(segment.keys[slot]);
    link = segment.links[slot];
  }
}

// What a chain walk carries from the tuple that starts it to each tuple on the chain.
struct WalkContext {
  uint32_t x, y;
};

// Where a kernel thread's chain walks go: Walk::Each(a, g, context, key, insert) handles each
// tuple of the chain of `group` in table Walk::kWalked. On a GPU each thread walks at once, and
// the threads in flight hide each other's misses.
template <class Walk, class Inserts>
struct DirectWalks {
  const KernelArgs& a;
  const Graph& g;
  Inserts& insert;
  SLUICE_HD void operator()(uint64_t group, WalkContext context) const {
    ForEachInGroup(a, Walk::kWalked, group,
                   [&](uint64_t key) { Walk::Each(a, g, context, key, insert); });
  }
};

// A range's chain walks on the CPU, kWays of them interleaved. A walk alone is a chain of
// dependent misses (the head, then each tuple and its link); here each step (a head lookup, or
// one tuple of the chain) prefetches what the walk's next step reads, and the other walks take
// their steps before it comes round again, so that up to kWays misses are in flight.
template <class Walk, class Inserts, uint32_t kWays = 8>
class QueuedWalks {
 public:
  QueuedWalks(const KernelArgs& a, const Graph& g, Inserts& insert)
      : a_(a), g_(g), insert_(insert), heads_(HeadsOf(a, Walk::kWalked)) {
    for (uint32_t s = 0; s < kSegments; ++s) {
      segments_[s] = Segment(a, Walk::kWalked, s);
      bound_ += segments_[s].keys.size;
    }
  }
  QueuedWalks(const QueuedWalks&) = delete;
  QueuedWalks& operator=(const QueuedWalks&) = delete;

  void operator()(uint64_t group, WalkContext context) {
    while (busy_ == kWays) Turn();
    Way& way = ways_[busy_++];
    way = Way{context, group, Mix(group), kEndOfChain, 0, kHead};
    const uint64_t home = heads_.keys.size == 0 ? 0 : HomeOf(way.hash, heads_.keys.size);
    __builtin_prefetch(heads_.keys.data + home, 0, 3);
    if (heads_.links.Contains(home)) __builtin_prefetch(&heads_.links[home], 0, 3);
  }

  // Finishes every walk.
  void Close() {
    while (busy_ > 0) Turn();
  }

 private:
  enum Stage : uint8_t { kHead, kChain };
  struct Way {
    WalkContext context;
    uint64_t group, hash;
    uint32_t link;   // the next tuple's location plus one (kChain)
    uint64_t steps;  // tuples visited, bounded by the table's slots (corrupt links cannot loop)
    Stage stage;
  };

  // The next busy walk takes a step; a finished walk's place goes to the last busy one.
  void Turn() {
    if (next_ >= busy_) next_ = 0;
    if (Step(ways_[next_])) {
      ++next_;
    } else {
      ways_[next_] = ways_[--busy_];
    }
  }
  // One step of `way`: its head, or one tuple of its chain. Whether the walk goes on.
  bool Step(Way& way) {
    if (way.stage == kHead) {
      const uint32_t* head = HeadIn(a_, Walk::kWalked, heads_, way.group, way.hash, false);
      if (head == nullptr) return false;
      way.link = *head;
      way.stage = kChain;
    } else {
      const uint32_t at = way.link - 1;
      const SlotView& segment = segments_[SegmentAt(at)];
      const uint64_t slot = SlotAt(at);
      if (way.steps >= bound_ || !segment.keys.Contains(slot)) {
        Raise(a_, kStatusIndexOutOfBounds);
        return false;
      }
      ++way.steps;
      way.link = segment.links[slot];
      Walk::Each(a_, g_, way.context, segment.keys[slot], insert_);
    }
    if (way.link == kEndOfChain) return false;
    const uint32_t at = way.link - 1;
    const SlotView& next = segments_[SegmentAt(at)];
    const uint64_t slot = SlotAt(at);
    if (next.keys.Contains(slot)) {
      __builtin_prefetch(&next.keys[slot], 0, 3);
      __builtin_prefetch(&next.links[slot], 0, 3);
    }
    return true;
  }

  const KernelArgs& a_;
  const Graph& g_;
  Inserts& insert_;
  const SlotView heads_;
  SlotView segments_[kSegments];
  uint64_t bound_ = 0;
  Way ways_[kWays];
  uint32_t busy_ = 0, next_ = 0;
};

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
  return static_cast<uint32_t>(__builtin_popcount(x));
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
  // Marks the pair of path edge `key`; false when its fact does not fit a row.
  SLUICE_HD static bool Mark(const KernelArgs& a, const DeviceSpan<uint32_t>& marks,
                             uint64_t key) {
    const uint64_t n = Top(key), d2 = Mid(key);
    const uint64_t first = a.param[ResultWindow::kFirstNode];
    if (n < first || n - first >= a.param[ResultWindow::kNodes]) return true;  // another window
    const uint64_t row = a.param[ResultWindow::kWordsPerNode];
    if (d2 >= 32 * row) return false;
    const uint64_t word = (n - first) * row + d2 / 32;
    if (!marks.Contains(word)) return false;
    const uint32_t bit = 1u << (d2 % 32);
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
  static void RunRange(const KernelArgs& a, uint64_t begin, uint64_t end, uint64_t) {
    const DeviceSpan<uint64_t> table = a.As<uint64_t>(Results::kSegment0 + static_cast<int>(S));
    const DeviceSpan<uint32_t> marks = a.As<uint32_t>(Results::kMarks);
    bool ok = true;
    for (uint64_t t = begin; t < end && table.Contains(t); ++t) {
      if (table[t] != kEmpty) ok = Mark(a, marks, table[t]) && ok;
    }
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
