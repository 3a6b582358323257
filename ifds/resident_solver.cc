#include "ifds/resident_solver.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "base/status_macros.h"
#include "client/resident_buffers.h"
#include "ifds/compile.h"
#include "kernels/bodies/basic.h"
#include "kernels/bodies/ifds.h"
#include "kernels/kernel_args.h"
#include "kernels/kernel_id.h"

namespace sluice::ifds {
namespace {

namespace k = kernels::ifds;
using S = k::State;

constexpr uint32_t kFill = 0xffffffffu;  // fills u64 tables with kEmpty
constexpr const char* kRelationNames[k::kNumRelations] = {"path edges", "incoming calls",
                                                         "end summaries", "summary edges"};

// The least power of two >= v, at least 2; callers keep v at most 2^63.
uint64_t NextPow2(uint64_t v) {
  uint64_t p = 2;
  while (p < v && p < (uint64_t{1} << 63)) p <<= 1;
  return p;
}

template <class T>
absl::Span<const uint8_t> Bytes(const std::vector<T>& v) {
  return {reinterpret_cast<const uint8_t*>(v.data()), v.size() * sizeof(T)};
}

// A table's new slot count: at least double when it overflowed, grown so that `used` is at most
// half of it, never shrunk.
uint64_t Regrow(uint64_t capacity, uint64_t used, bool overflowed) {
  uint64_t next = std::max(capacity, NextPow2(2 * used + 2));
  if (overflowed) next = std::max(next, 2 * capacity);
  return next;
}

class Solver {
 public:
  Solver(ResidentDispatch& d, const Problem& p, const ResidentOptions& o)
      : d_(d), p_(p), o_(o), buffers_(d) {}

  absl::StatusOr<Solution> Run(ResidentStats* stats);

 private:
  // Device tables: relation sets and lists, index key tables and entries (slot counts).
  struct Capacity {
    std::array<uint64_t, k::kNumRelations> set{}, list{};
    std::array<uint64_t, k::kNumIndexes> keys{}, entries{};
  };

  absl::Status Init();
  // A window: on the first, the tables are filled empty; until seeding has completed without
  // an overflow, the seeds are (re)inserted and become the first delta; then `iterations`.
  absl::Status Window(bool first, uint32_t iterations);
  absl::Status Grow(bool overflowed);
  absl::StatusOr<Solution> Results();
  absl::Status ReadState(const std::vector<uint8_t>& bytes);
  bool Converged() const;
  bool NeedsGrowth() const;
  std::vector<Resource> Bindings() const;
  // The steps that fill fresh set and index tables with the empty marker.
  void FillSteps(const std::vector<int>& sets, const std::vector<int>& keys,
                 std::vector<Step>* steps);

  ResidentDispatch& d_;
  const Problem& p_;
  const ResidentOptions& o_;
  ResidentBuffers buffers_;
  Capacity cap_;
  Resource graph_, state_;
  std::array<Resource, k::kNumRelations> set_, list_;
  std::array<Resource, k::kNumIndexes> keys_, entries_;
  std::array<uint32_t, S::kSlots> state_words_{};
  std::vector<Resource> bindings_;
  uint32_t windows_ = 0;
  uint32_t growths_ = 0;
  uint32_t partial_growths_ = 0;
  uint32_t overflow_growths_ = 0;
  ResidentStats phases_;  // the *_seconds fields
  bool seeded_ = false;  // every seed is in the path-edge list and has been a delta

  // Programs are built once; steps point at them. Each names the kernel version the solver's
  // state layout was written for: a backend with another version refuses it, naming it.
  const Program fill_ = Program::Of(kernels::kFillU32Kernel, {kFill});
  const Program guard_ = Program::Of(kLoopGuardKernelId, {S::kActive});
  const Program seed_ = Program::Of(k::kSeedKernel);
  const Program pe_ = Program::Of(k::kPeDeltaKernel);
  const Program inc_ = Program::Of(k::kIncDeltaKernel);
  const Program es_ = Program::Of(k::kEsDeltaKernel);
  const Program sum_ = Program::Of(k::kSumDeltaKernel);
  const Program index_ = Program::Of(k::kIndexKernel);
  const Program advance_ = Program::Of(k::kAdvanceKernel);
  const Program mark_ = Program::Of(k::kMarkIndexedKernel);
};

std::vector<Resource> Solver::Bindings() const {
  std::vector<Resource> b(k::kNumBindings);
  b[k::kGraph] = graph_;
  for (int r = 0; r < k::kNumRelations; ++r) {
    b[k::kPeSet + 2 * r] = set_[r];
    b[k::kPeList + 2 * r] = list_[r];
  }
  for (int m = 0; m < k::kNumIndexes; ++m) {
    b[k::kMpeKeys + 2 * m] = keys_[m];
    b[k::kMpeEntries + 2 * m] = entries_[m];
  }
  b[k::kState] = state_;
  return b;
}

void Solver::FillSteps(const std::vector<int>& sets, const std::vector<int>& keys,
                       std::vector<Step>* steps) {
  for (int r : sets) steps->push_back(Step{&fill_, {&set_[r], 1}, std::nullopt});
  for (int m : keys) steps->push_back(Step{&fill_, {&keys_[m], 1}, std::nullopt});
}

absl::Status Solver::Init() {
  if (o_.initial_capacity > kMaxTableSlots) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "an initial capacity of %d slots is more than a table may have (%d)",
        o_.initial_capacity, kMaxTableSlots));
  }
  ASSIGN_OR_RETURN(CompiledProblem compiled, Compile(p_));
  const uint64_t nodes = p_.node_count();
  for (int r = 0; r < k::kNumRelations; ++r) {
    uint64_t slots = o_.initial_capacity;
    if (slots == 0) {
      // A guess from the problem's shape, twice what it tends to need: filling tables the
      // problem never uses costs small solves most of their set-up, and a table that turns out
      // too small grows between iterations, rebuilding only itself.
      const uint64_t facts = std::min<uint64_t>(p_.fact_count(), 64);
      slots = r == k::kPe ? std::clamp<uint64_t>(2 * nodes * facts, 1024, 1u << 22)
                          : std::clamp<uint64_t>(2 * uint64_t{compiled.call_edges} *
                                                     std::min<uint64_t>(facts, 16),
                                                 256, 1u << 20);
    }
    cap_.set[r] = cap_.list[r] = cap_.keys[r] = cap_.entries[r] = NextPow2(slots);
  }
  if (o_.initial_capacity == 0) {
    // Only path edges at call nodes are indexed: a small share of all path edges.
    const uint64_t facts = std::min<uint64_t>(p_.fact_count(), 64);
    cap_.keys[k::kPe] = cap_.entries[k::kPe] = NextPow2(
        std::clamp<uint64_t>(4 * p_.call_sites.size() * facts, 256, 1u << 20));
  }
  ASSIGN_OR_RETURN(graph_, buffers_.Allocate(compiled.words.size() * 4));
  ASSIGN_OR_RETURN(state_, buffers_.Allocate(S::kSlots * 4));
  for (int r = 0; r < k::kNumRelations; ++r) {
    ASSIGN_OR_RETURN(set_[r], buffers_.Allocate(cap_.set[r] * 8));
    ASSIGN_OR_RETURN(list_[r], buffers_.Allocate(cap_.list[r] * 8));
    ASSIGN_OR_RETURN(keys_[r], buffers_.Allocate(cap_.keys[r] * 16));
    ASSIGN_OR_RETURN(entries_[r], buffers_.Allocate(cap_.entries[r] * 16));
  }
  bindings_ = Bindings();
  // The state starts zeroed (new buffers are); only the problem travels.
  return d_.Upload(graph_, Bytes(compiled.words));
}

absl::Status Solver::ReadState(const std::vector<uint8_t>& bytes) {
  if (bytes.size() != sizeof(state_words_)) {
    return absl::InternalError("the solver state read back has the wrong size");
  }
  std::memcpy(state_words_.data(), bytes.data(), bytes.size());
  return absl::OkStatus();
}

absl::Status Solver::Window(bool first, uint32_t iterations) {
  std::vector<Step> prefix;
  if (first) FillSteps({0, 1, 2, 3}, {0, 1, 2, 3}, &prefix);
  if (!seeded_) {
    // Seeds already listed are found present; those an overflow dropped are inserted now. The
    // delta is still empty until this advance, so the whole list becomes the first delta.
    prefix.push_back(Step{&seed_, bindings_, std::nullopt});
    prefix.push_back(Step{&index_, bindings_, std::nullopt});
    prefix.push_back(Step{&advance_, bindings_, std::nullopt});
  }
  std::vector<Step> repeated;
  if (o_.early_exit) repeated.push_back(Step{&guard_, {&state_, 1}, std::nullopt});
  for (const Program* program : {&pe_, &inc_, &es_, &sum_, &index_, &advance_}) {
    repeated.push_back(Step{program, bindings_, std::nullopt});
  }
  std::vector<uint8_t> state;
  std::vector<std::vector<uint8_t>*> outputs = {&state};
  const std::vector<ReadRange> reads = {{state_, 0, sizeof(state_words_)}};
  RETURN_IF_ERROR(d_.DispatchRepeatedSequenceReadRangesInto(prefix, repeated, iterations, reads,
                                                            absl::MakeSpan(outputs)));
  ++windows_;
  RETURN_IF_ERROR(ReadState(state));
  // The prefix's advance counts as an iteration unless the seeding halted on an overflow.
  seeded_ = state_words_[S::kIteration] > 0;
  return absl::OkStatus();
}

bool Solver::Converged() const {
  for (int r = 0; r < k::kNumRelations; ++r) {
    if (state_words_[S::DeltaBegin(r)] != state_words_[S::DeltaEnd(r)]) return false;
  }
  return true;
}

bool Solver::NeedsGrowth() const {
  for (int r = 0; r < k::kNumRelations; ++r) {
    if (k::WantsGrowth(state_words_[S::Count(r)], state_words_[S::Keys(r)],
                       state_words_[S::Entries(r)],
                       {cap_.set[r], cap_.list[r], cap_.keys[r], cap_.entries[r]})) {
      return true;
    }
  }
  return false;
}

absl::Status Solver::Grow(bool overflowed) {
  ++growths_;
  if (overflowed) ++overflow_growths_;
  Capacity next = cap_;
  std::vector<Step> steps;
  std::vector<Program> copies;  // kept alive until the sequence ran
  copies.reserve(k::kNumRelations);
  std::vector<Resource> retired;
  std::vector<std::array<Resource, 2>> copy_bindings;
  copy_bindings.reserve(k::kNumRelations);
  // A growth between iterations also grows the tables that are getting close (more than 3/8
  // full), so that one growth serves several tables.
  const auto soon = [overflowed](uint64_t used) { return overflowed ? used : used + used / 3; };
  for (int r = 0; r < k::kNumRelations; ++r) {
    const uint64_t count = state_words_[S::Count(r)];
    const uint64_t kept = std::min<uint64_t>(count, cap_.list[r]);
    const bool list_overflowed = count > cap_.list[r];
    next.list[r] = Regrow(cap_.list[r], soon(count), list_overflowed || (overflowed && 4 * count > cap_.list[r]));
    next.set[r] = std::max(next.list[r], Regrow(cap_.set[r], soon(count), overflowed && 4 * count > cap_.set[r]));
    // After the rebuild every listed tuple is indexed.
    const uint64_t keys = uint64_t{state_words_[S::Keys(r)]} + (kept - std::min<uint64_t>(kept, state_words_[S::Indexed(r)]));
    const uint64_t entries = r == k::kPe ? std::min<uint64_t>(kept, uint64_t{state_words_[S::Entries(r)]} + kept - std::min<uint64_t>(kept, state_words_[S::Indexed(r)]))
                                         : kept;
    next.keys[r] = Regrow(cap_.keys[r], soon(std::min<uint64_t>(keys, kept)),
                          overflowed && 4 * keys > cap_.keys[r]);
    next.entries[r] = Regrow(cap_.entries[r], soon(entries + entries / 2),
                             overflowed && 4 * entries > 3 * cap_.entries[r]);
    state_words_[S::Count(r)] = static_cast<uint32_t>(kept);
    state_words_[S::DeltaBegin(r)] = std::min<uint32_t>(state_words_[S::DeltaBegin(r)], kept);
    state_words_[S::DeltaEnd(r)] = std::min<uint32_t>(state_words_[S::DeltaEnd(r)], kept);
  }
  if (overflowed) {
    // Probing can fail at a low load: make sure something grows, or the rerun fails again.
    bool grew = false;
    for (int r = 0; r < k::kNumRelations; ++r) {
      grew = grew || next.set[r] > cap_.set[r] || next.list[r] > cap_.list[r] ||
             next.keys[r] > cap_.keys[r] || next.entries[r] > cap_.entries[r];
    }
    if (!grew) {
      for (int r = 0; r < k::kNumRelations; ++r) {
        next.set[r] *= 2;
        next.list[r] *= 2;
        next.keys[r] *= 2;
        next.entries[r] *= 2;
      }
    }
  }
  for (int r = 0; r < k::kNumRelations; ++r) {
    if (std::max({next.set[r], next.list[r], next.keys[r], next.entries[r]}) > kMaxTableSlots) {
      return absl::ResourceExhaustedError(absl::StrFormat(
          "the problem needs more than %d slots in a table of %s", kMaxTableSlots,
          kRelationNames[r]));
    }
  }
  // After an overflow every set and index may hold a tuple its list lacks: all are rebuilt.
  // Otherwise (tables merely getting full) the lists, sets and indexes agree, and only the
  // sets and indexes that move to new memory are rebuilt.
  std::vector<int> fill_sets, fill_keys;
  uint64_t rebuild_mask = 0;
  for (int r = 0; r < k::kNumRelations; ++r) {
    if (overflowed || next.set[r] != cap_.set[r]) {
      fill_sets.push_back(r);
      rebuild_mask |= uint64_t{1} << r;
    }
    if (overflowed || next.keys[r] != cap_.keys[r] || next.entries[r] != cap_.entries[r]) {
      fill_keys.push_back(r);
      state_words_[S::Indexed(r)] = 0;
      state_words_[S::Keys(r)] = 0;
      state_words_[S::Entries(r)] = 0;
    }
  }
  const Program rebuild = Program::Of(k::kRebuildKernel, {rebuild_mask});
  if (fill_sets.size() < k::kNumRelations || fill_keys.size() < k::kNumIndexes) {
    ++partial_growths_;
  }
  state_words_[S::kStatus] = 0;
  // The interrupted (or next) iteration has work exactly when a delta is not empty.
  state_words_[S::kActive] = Converged() ? 0 : 1;

  for (int r = 0; r < k::kNumRelations; ++r) {
    if (next.list[r] != cap_.list[r]) {
      ASSIGN_OR_RETURN(Resource list, buffers_.Allocate(next.list[r] * 8));
      copies.push_back(Program::Of(kernels::kCopyRangeU32Kernel,
                                   {0, 0, 2ull * state_words_[S::Count(r)]}));
      copy_bindings.push_back({list_[r], list});
      steps.push_back(Step{&copies.back(), copy_bindings.back(), std::nullopt});
      retired.push_back(list_[r]);
      list_[r] = list;
    }
    // Sets and indexes that move are rebuilt from the lists: their old memory goes first, so
    // old and new never coexist (only a list's contents are copied).
    if (next.set[r] != cap_.set[r]) {
      RETURN_IF_ERROR(buffers_.Free(set_[r]));
      ASSIGN_OR_RETURN(set_[r], buffers_.Allocate(next.set[r] * 8));
    }
    if (next.keys[r] != cap_.keys[r]) {
      RETURN_IF_ERROR(buffers_.Free(keys_[r]));
      ASSIGN_OR_RETURN(keys_[r], buffers_.Allocate(next.keys[r] * 16));
    }
    if (next.entries[r] != cap_.entries[r]) {
      RETURN_IF_ERROR(buffers_.Free(entries_[r]));
      ASSIGN_OR_RETURN(entries_[r], buffers_.Allocate(next.entries[r] * 16));
    }
  }
  cap_ = next;
  bindings_ = Bindings();
  // Fresh tables are rebuilt from the lists: sets first, then the tuples not indexed.
  FillSteps(fill_sets, fill_keys, &steps);
  steps.push_back(Step{&rebuild, bindings_, std::nullopt});
  steps.push_back(Step{&index_, bindings_, std::nullopt});
  steps.push_back(Step{&mark_, bindings_, std::nullopt});
  RETURN_IF_ERROR(d_.Upload(state_, absl::MakeConstSpan(
                                        reinterpret_cast<const uint8_t*>(state_words_.data()),
                                        sizeof(state_words_))));
  std::vector<uint8_t> state;
  std::vector<std::vector<uint8_t>*> outputs = {&state};
  const std::vector<ReadRange> reads = {{state_, 0, sizeof(state_words_)}};
  RETURN_IF_ERROR(d_.DispatchSequenceReadRangesInto(steps, reads, absl::MakeSpan(outputs)));
  for (const Resource& r : retired) RETURN_IF_ERROR(buffers_.Free(r));
  RETURN_IF_ERROR(ReadState(state));
  if ((state_words_[S::kStatus] & kStatusIndexOutOfBounds) != 0) {
    return absl::InternalError("the device reported an index outside the compiled problem");
  }
  if ((state_words_[S::kStatus] & kStatusCapacityOverflow) != 0) return Grow(true);
  return absl::OkStatus();
}

absl::StatusOr<Solution> Solver::Results() {
  const uint64_t edges = state_words_[S::Count(k::kPe)];
  // Result keys are node << 16 | fact: sorting them on the device by these bits orders the
  // solution by node, then fact.
  const uint64_t key_bits = 16 + std::bit_width(std::max<uint64_t>(p_.node_count(), 1) - 1);
  // Distinct (node, fact) pairs: at most one per path edge, and one per node and fact.
  uint64_t capacity =
      std::min<uint64_t>(edges, uint64_t{p_.node_count()} * std::max<uint64_t>(p_.fact_count(), 1));
  uint64_t slots = NextPow2(2 * capacity + 2);
  for (;;) {
    ResidentBuffers scratch(d_);
    // The set doubles as the sort's second buffer (it holds at least 2 * capacity slots).
    ASSIGN_OR_RETURN(Resource set, scratch.Allocate(slots * 8));
    ASSIGN_OR_RETURN(Resource out, scratch.Allocate(std::max<uint64_t>(capacity, 1) * 8));
    ASSIGN_OR_RETURN(Resource out_state, scratch.Allocate(8));
    ASSIGN_OR_RETURN(
        Resource sort_scratch,
        scratch.Allocate(4 * kernels::SortU64::kDigits * kernels::SortU64::Blocks(capacity)));
    const Program results = Program::Of(k::kResultsKernel);
    const std::vector<Resource> fill_bindings = {set};
    const std::vector<Resource> result_bindings = {list_[k::kPe], state_, set, out, out_state};
    const std::vector<Step> steps = {{&fill_, fill_bindings, std::nullopt},
                                     {&results, result_bindings, std::nullopt}};
    std::vector<uint8_t> counts;
    std::vector<std::vector<uint8_t>*> outputs = {&counts};
    const std::vector<ReadRange> reads = {{out_state, 0, 8}};
    RETURN_IF_ERROR(d_.DispatchSequenceReadRangesInto(steps, reads, absl::MakeSpan(outputs)));
    uint32_t c[2];
    std::memcpy(c, counts.data(), sizeof(c));
    if (c[1] != 0) {
      if (c[0] > capacity) {
        capacity = c[0];  // cannot happen by the bound above; grow rather than loop
        slots = std::max(slots, NextPow2(2 * capacity + 2));
      } else {
        slots *= 2;  // probing failed at a low load; try a larger table
      }
      continue;
    }
    // Sorted on the device, then read once.
    const Program sort = Program::Of(kernels::kSortU64Kernel, {c[0], key_bits});
    const std::vector<Resource> sort_bindings = {out, set, sort_scratch};
    const std::vector<Step> sort_steps = {{&sort, sort_bindings, std::nullopt}};
    std::vector<uint8_t> bytes;
    outputs = {&bytes};
    const std::vector<ReadRange> result_reads = {{out, 0, uint64_t{c[0]} * 8}};
    RETURN_IF_ERROR(
        d_.DispatchSequenceReadRangesInto(sort_steps, result_reads, absl::MakeSpan(outputs)));
    Solution solution;
    solution.facts.reserve(c[0]);
    uint64_t previous = 0;
    for (uint32_t i = 0; i < c[0]; ++i) {
      uint64_t key;
      std::memcpy(&key, bytes.data() + 8ull * i, 8);
      if (i > 0 && key <= previous) {
        return absl::InternalError("the device returned results out of order");
      }
      previous = key;
      solution.facts.emplace_back(static_cast<uint32_t>(key >> 16),
                                  static_cast<uint32_t>(key & 0xffff));
    }
    return solution;
  }
}

// Adds the seconds since `start` to `*total` when it goes out of scope.
class PhaseTimer {
 public:
  explicit PhaseTimer(double* total) : total_(total), start_(absl::Now()) {}
  ~PhaseTimer() { *total_ += absl::ToDoubleSeconds(absl::Now() - start_); }
  PhaseTimer(const PhaseTimer&) = delete;
  PhaseTimer& operator=(const PhaseTimer&) = delete;

 private:
  double* const total_;
  const absl::Time start_;
};

absl::StatusOr<Solution> Solver::Run(ResidentStats* stats) {
  {
    PhaseTimer timer(&phases_.setup_seconds);
    RETURN_IF_ERROR(Init());
  }
  uint32_t window = std::max<uint32_t>(o_.initial_window, 1);
  bool first = true;
  for (;;) {
    {
      PhaseTimer timer(&phases_.window_seconds);
      RETURN_IF_ERROR(Window(first, window));
    }
    first = false;
    const uint32_t status = state_words_[S::kStatus];
    if ((status & kStatusIndexOutOfBounds) != 0) {
      return absl::InternalError("the device reported an index outside the compiled problem");
    }
    if ((status & kStatusCapacityOverflow) != 0) {
      PhaseTimer timer(&phases_.growth_seconds);
      RETURN_IF_ERROR(Grow(true));
      continue;  // the interrupted iteration reruns
    }
    if (o_.progress) {
      o_.progress(ResidentProgress{windows_, state_words_[S::kIteration],
                                   state_words_[S::Count(k::kPe)]});
    }
    if (Converged()) break;
    if (NeedsGrowth()) {
      PhaseTimer timer(&phases_.growth_seconds);
      RETURN_IF_ERROR(Grow(false));
    } else if (o_.early_exit && state_words_[S::kActive] == 0) {
      // Every window would end before its first iteration: never loop on that.
      return absl::InternalError(
          "the device ended a window with work left, no overflow and no table to grow");
    }
    window = std::min(window * 2, std::max(o_.max_window, 1u));
  }
  absl::StatusOr<Solution> results;
  {
    PhaseTimer timer(&phases_.results_seconds);
    results = Results();
  }
  ASSIGN_OR_RETURN(Solution solution, std::move(results));
  if (stats != nullptr) {
    stats->setup_seconds = phases_.setup_seconds;
    stats->window_seconds = phases_.window_seconds;
    stats->growth_seconds = phases_.growth_seconds;
    stats->results_seconds = phases_.results_seconds;
    stats->path_edges = state_words_[S::Count(k::kPe)];
    stats->incoming = state_words_[S::Count(k::kInc)];
    stats->end_summaries = state_words_[S::Count(k::kEs)];
    stats->summaries = state_words_[S::Count(k::kSum)];
    stats->iterations = state_words_[S::kIteration];
    stats->windows = windows_;
    stats->growths = growths_;
    stats->partial_growths = partial_growths_;
    stats->overflow_growths = overflow_growths_;
    stats->peak_device_bytes = buffers_.peak_bytes();
  }
  return solution;
}

}  // namespace

absl::StatusOr<Solution> SolveResident(ResidentDispatch& dispatch, const Problem& problem,
                                       const ResidentOptions& options, ResidentStats* stats) {
  return Solver(dispatch, problem, options).Run(stats);
}

}  // namespace sluice::ifds
