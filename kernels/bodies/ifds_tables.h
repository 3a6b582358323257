// The resident IFDS solver's tables as one kernel thread uses them (kernels/bodies/ifds.h has
// the design): the compiled graph's view, the packing of keys and groups, the state words,
// places in the delta lists, inserting a tuple, the chains of the joined tables (heads and
// links), and walking a chain. Every function here runs on a GPU and on the CPU alike; the
// CPU's queued forms of the same inserts, links and walks are in ifds_ranges.h.
#ifndef SLUICE_KERNELS_BODIES_IFDS_TABLES_H_
#define SLUICE_KERNELS_BODIES_IFDS_TABLES_H_

#include <cstdint>

#include "sluice/kernels/atomics.h"
#include "sluice/kernels/hd.h"
#include "sluice/kernels/ifds.h"
#include "sluice/kernels/kernel_args.h"

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
    if (a.Stopping(steps)) return;
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

}  // namespace sluice::kernels::ifds

#endif  // SLUICE_KERNELS_BODIES_IFDS_TABLES_H_
