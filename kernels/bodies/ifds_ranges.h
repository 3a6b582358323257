// The CPU launcher's ranges of the resident IFDS solver's kernels (kernels/bodies/ifds.h has
// the design): where a GPU runs thousands of threads at once, one CPU worker runs a whole range
// of them and keeps many cache misses in flight with queued, prefetching forms of the inserts,
// links and walks of ifds_tables.h. Host code only (the bodies' RunRange).
#ifndef SLUICE_KERNELS_BODIES_IFDS_RANGES_H_
#define SLUICE_KERNELS_BODIES_IFDS_RANGES_H_

#include <cstdint>

#include "sluice/kernels/atomics.h"
#include "sluice/kernels/bodies/ifds_tables.h"
#include "sluice/kernels/hd.h"
#include "sluice/kernels/ifds.h"
#include "sluice/kernels/kernel_args.h"

namespace sluice::kernels::ifds {

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
      if (a_.Stopping(way.steps)) return false;
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

}  // namespace sluice::kernels::ifds

#endif  // SLUICE_KERNELS_BODIES_IFDS_RANGES_H_
