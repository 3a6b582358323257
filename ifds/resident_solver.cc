#include "sluice/ifds/resident_solver.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "sluice/base/status_macros.h"
#include "sluice/client/resident_buffers.h"
#include "sluice/ifds/compile.h"
#include "sluice/kernels/basic.h"
#include "sluice/kernels/ifds.h"
#include "sluice/kernels/kernel_args.h"
#include "sluice/kernels/kernel_id.h"

namespace sluice::ifds {
namespace {

namespace k = kernels::ifds;
using S = k::State;
constexpr uint32_t kSegments = k::kSegments;

constexpr const char* kTableNames[k::kNumTables] = {
    "path edges", "incoming calls", "end summaries", "summary edges", "path edges at calls"};
constexpr uint32_t kAllJoined = (1u << k::kNumJoined) - 1;

template <class T>
absl::Span<const uint8_t> Bytes(const std::vector<T>& v) {
  return {reinterpret_cast<const uint8_t*>(v.data()), v.size() * sizeof(T)};
}

uint64_t CeilDiv(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

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

// A table whose first guess is below kSmallTableSlots starts at twice a guess from the
// problem's shape (at the flows' yield, already a bound, where that is lower), and at least at
// kSmallTableFloor slots (see Solver::Init).
constexpr uint64_t kSmallTableSlots = uint64_t{1} << 18;
constexpr uint64_t kSmallTableFloor = uint64_t{1} << 14;

// A table grows by room for this many iterations like the last: a growth moves every tuple of the
// table (and rebuilds a joined table's chains), so steps of a few percent, which twice the last
// iteration gives in the middle of a solve, move each tuple five times or more by its end. The
// room scales with the rate the table fills at, which falls as a solve converges, so the last
// growths stay small and the tables end well filled (docs/benchmarks.md, 2026-12-04).
constexpr uint64_t kGrowthIterations = 12;

// The compiled problem is uploaded in pieces (see Solver::Init), each given back once on the
// device: the image and the device's copy of it are never both whole, and beside the device's
// memory a piece at most is left. An eighth of the image, at least 1 MiB and at most 16: a
// piece's giving back costs every core running this process a TLB flush, which on a VM may
// wait for a descheduled core (1 MiB pieces made a 103 MiB upload take 0.06-0.6 s), while a
// 1M-path-edge solve peaked 14 MB higher with its 21 MiB image held whole beside its copy.
size_t UploadPieceBytes(size_t image_bytes) {
  constexpr size_t kMin = size_t{1} << 20, kMax = size_t{16} << 20;
  return std::clamp<size_t>((image_bytes / 8 + kMin - 1) / kMin * kMin, kMin, kMax);
}

// A grown table's slot count: its tuples plus `headroom` more at 7/10 of it, so that it stays
// clear of the growth threshold (17/20) for a while; always larger than before.
uint64_t Regrow(uint64_t slots, uint64_t count, uint64_t headroom) {
  return std::max(slots + 2, CeilDiv(10 * (count + headroom), 7) + 1);
}

class Solver {
 public:
  Solver(ResidentDispatch& d, const Problem& p, const ResidentOptions& o)
      : d_(d), p_(p), o_(o), buffers_(d) {}

  absl::StatusOr<Solution> Run(ResidentStats* stats);

 private:
  absl::Status Init();
  // Puts the compiled problem in graph_: the image's bytes, and the staged lists.
  absl::Status Upload(CompiledProblem* compiled);
  // A window: `prefix_` (the first window's seeding, or what a growth left to do),
  // then up to `iterations` iterations.
  absl::Status Window(uint32_t iterations);
  // Grows every segment, heads table and list that is full or getting full: each segment moves
  // on its own (a rehash, then the old buffer goes), so old and new coexist for one segment at
  // a time. What the moves invalidate (chains) is rebuilt by the next window's prefix, and after an
  // overflow the halted iteration's additions join its delta there.
  absl::Status Grow(bool overflowed);
  absl::Status MoveSegment(int t, uint32_t s, uint64_t slots);
  // A list moves to a larger buffer with what it holds: its current delta, and after an overflow
  // what the halted iteration added (for the merge).
  absl::Status MoveList(int t, uint64_t half, bool overflowed);
  absl::StatusOr<Solution> Results();
  absl::Status ReadState(const std::vector<uint8_t>& bytes);
  bool Converged() const;
  bool NeedsGrowth() const;
  uint64_t Total(int t) const;
  uint64_t TableSlots(int t) const;  // the segments of a table always have one size
  std::vector<Resource> Bindings() const;
  // Empties a buffer the next window uses (new buffers are empty already: zeroed).
  void Clear(Resource* buffer) { prefix_.push_back(Step{&clear_, {buffer, 1}, std::nullopt}); }

  ResidentDispatch& d_;
  const Problem& p_;
  const ResidentOptions& o_;
  ResidentBuffers buffers_;
  Resource graph_, state_;
  std::array<std::array<Resource, kSegments>, k::kNumTables> table_;
  std::array<std::array<uint64_t, kSegments>, k::kNumTables> slots_{};
  std::array<Resource, k::kNumTables> heads_;       // joined tables only
  std::array<uint64_t, k::kNumTables> head_slots_{};
  std::array<Resource, k::kNumTables> list_;
  std::array<uint64_t, k::kNumTables> half_{};  // tuples per half of a list
  Resource calls_;  // the calls made: see k::ClaimCall
  std::array<uint32_t, S::kSlots> state_words_{};
  std::vector<Resource> bindings_;
  // What the next window runs before its iterations. Programs live in `prefix_programs_`.
  std::vector<Step> prefix_;
  std::vector<Program> prefix_programs_;
  uint32_t windows_ = 0;
  uint32_t growths_ = 0;
  uint32_t partial_growths_ = 0;
  uint32_t overflow_growths_ = 0;
  ResidentStats phases_;  // the phases' seconds and bytes
  bool seeded_ = false;  // every seed has been inserted, and processed as a delta

  // Programs are built once; steps point at them. Each names the kernel version the solver's
  // state layout was written for: a backend with another version refuses it, naming it.
  const Program clear_ = Program::Of(kernels::kFillU32Kernel, {0});
  const Program guard_ = Program::Of(kLoopGuardKernelId, {S::kActive});
  const Program seed_ = Program::Of(k::kSeedKernel);
  const Program pe_ = Program::Of(k::kPeDeltaKernel);
  const Program inc_ = Program::Of(k::kIncDeltaKernel);
  const Program es_ = Program::Of(k::kEsDeltaKernel);
  const Program sum_ = Program::Of(k::kSumDeltaKernel);
  const Program merge_ = Program::Of(k::kMergeKernel);
  const Program advance_ = Program::Of(k::kAdvanceKernel);
  const Program resume_ = Program::Of(k::kResumeKernel);
  const Program activate_ = Program::Of(k::kActivateKernel);
};

std::vector<Resource> Solver::Bindings() const {
  std::vector<Resource> b(k::kNumBindings);
  b[k::kGraph] = graph_;
  b[k::kState] = state_;
  for (int t = 0; t < k::kNumTables; ++t) {
    for (uint32_t s = 0; s < kSegments; ++s) b[k::TableBinding(t, s)] = table_[t][s];
    if (k::Joined(t)) b[k::HeadsBinding(t)] = heads_[t];
    b[k::kDeltas + t] = list_[t];
  }
  b[k::kCalls] = calls_;
  return b;
}

uint64_t Solver::Total(int t) const { return state_words_[S::Count(t)]; }

uint64_t Solver::TableSlots(int t) const { return kSegments * slots_[t][0]; }

absl::Status Solver::Init() {
  if (o_.initial_capacity > kMaxTableSlots) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "an initial capacity of %d slots is more than a table may have (%d)",
        o_.initial_capacity, kMaxTableSlots));
  }
  const size_t staged = o_.staged == nullptr ? 0 : o_.staged->flows();
  if (staged > p_.flows.size()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%d flows are staged, and the problem has %d", staged, p_.flows.size()));
  }
  if (o_.staged != nullptr && !o_.staged->flushed()) {
    return absl::FailedPreconditionError(
        "the staged flows are not all on the device (StagedFlowLists::Flush)");
  }
  const uint64_t call_sites = p_.call_sites.size();  // part_compiled may give them back
  absl::StatusOr<CompiledProblem> compiling;
  {
    PhaseTimer timer(&phases_.compile_seconds);
    compiling = Compile(p_, /*threads=*/0, o_.flows_compiled,
                        {.count = staged,
                         .outputs = o_.staged != nullptr ? o_.staged->outputs()
                                                         : absl::Span<const uint32_t>()},
                        o_.part_compiled);
  }
  ASSIGN_OR_RETURN(CompiledProblem compiled, std::move(compiling));
  phases_.compiled_bytes = compiled.words().size() * 4;
  if (o_.compiled) o_.compiled();  // p_'s flows, edges and call sites may be gone from here
  const uint64_t facts = std::min<uint64_t>(p_.fact_count(), 64);
  for (int t = 0; t < k::kNumTables; ++t) {
    uint64_t slots = o_.initial_capacity;
    bool small = false, by_flows = false;
    if (slots == 0) {
      // A guess from the problem's shape, about what it tends to need: allocating tables the
      // problem never uses costs small solves most of their set-up and holds memory, and a
      // segment that turns out too small grows between iterations, on its own. A small
      // problem's tables start at twice the shape's guess and at least a few thousand slots (a
      // few MiB in all): each growth costs round trips to a remote device, which under other
      // clients' load wait for the device's turn, while the memory is nothing.
      slots = t == k::kPe    ? std::min<uint64_t>(p_.node_count() * facts, 1u << 22)
              : t == k::kPec ? std::min<uint64_t>(call_sites * facts, 1u << 20)
                             : std::min<uint64_t>(uint64_t{compiled.call_edges} *
                                                      std::min<uint64_t>(facts, 16),
                                                  1u << 20);
      // Where the flows can yield clearly fewer facts along each kind of edge (Reach: explicit
      // pairs over a few facts in scope, as front ends list them), that many: twice it for the
      // relations of calls, which meet every context a procedure is entered in. That is a
      // bound already (the relations of calls held 40-60% of it on front-end-shaped problems),
      // so it is not doubled again where it is small: at about 1M path edges the four small
      // tables held 21 of the solve's 55 MiB, each about 30% full. Their heads are then 3/4 of
      // the slots, not half (a summary's group is mostly its own: 3 groups in 4 tuples).
      const CompiledProblem::Reach& reach = compiled.reach;
      const uint64_t yields = t == k::kPe    ? reach.intra + reach.calls
                              : t == k::kPec ? reach.call_to_return
                              : t == k::kInc ? 2 * reach.calls
                                             : 2 * reach.returns;
      by_flows = yields < slots / 2;
      if (by_flows) slots = yields;
      small = slots < kSmallTableSlots;
      if (small) {
        slots = std::clamp<uint64_t>(by_flows ? slots : 2 * slots, kSmallTableFloor,
                                     kSmallTableSlots);
      }
    }
    slots_[t].fill(std::max<uint64_t>(2, CeilDiv(slots, kSegments)));
    if (k::Joined(t)) {
      const uint64_t heads = !small ? slots / 4 : by_flows ? slots * 3 / 4 : slots / 2;
      head_slots_[t] = std::max<uint64_t>(2, heads);
    }
    half_[t] = std::max<uint64_t>(2, o_.initial_capacity != 0
                                         ? o_.initial_capacity
                                         : std::max<uint64_t>(slots / 8, 64));
  }
  ASSIGN_OR_RETURN(graph_, buffers_.Allocate(compiled.words().size() * 4));
  RETURN_IF_ERROR(Upload(&compiled));
  ASSIGN_OR_RETURN(state_, buffers_.Allocate(S::kSlots * 4));
  const uint64_t call_bits =
      std::min(uint64_t{compiled.call_edges} * p_.fact_count(), o_.max_call_bits);
  ASSIGN_OR_RETURN(calls_, buffers_.Allocate(4 * std::max<uint64_t>(1, CeilDiv(call_bits, 32))));
  for (int t = 0; t < k::kNumTables; ++t) {
    for (uint32_t s = 0; s < kSegments; ++s) {
      ASSIGN_OR_RETURN(table_[t][s], buffers_.Allocate(slots_[t][s] * k::SlotBytes(t)));
    }
    if (k::Joined(t)) {
      ASSIGN_OR_RETURN(heads_[t], buffers_.Allocate(head_slots_[t] * k::kHeadBytes));
    }
    ASSIGN_OR_RETURN(list_[t], buffers_.Allocate(2 * half_[t] * 8));
  }
  bindings_ = Bindings();
  // The tables, lists and state start empty (new buffers are zeroed), so only the problem
  // travels; the first window seeds.
  prefix_.push_back(Step{&seed_, bindings_, std::nullopt});
  prefix_.push_back(Step{&advance_, bindings_, std::nullopt});
  return absl::OkStatus();
}

absl::Status Solver::Upload(CompiledProblem* compiled) {
  // The staged flows' places, the first words of the sections of flow headers, kills, gens
  // and pairs, are filled on the device (in bytes of the image: [skip[l].first,
  // skip[l].second)).
  std::array<uint64_t, StagedFlowLists::kNumLists> starts{};
  std::array<std::pair<size_t, size_t>, StagedFlowLists::kNumLists> skip{};
  if (o_.staged != nullptr) {
    for (int l = 0; l < StagedFlowLists::kNumLists; ++l) {
      const uint32_t section = k::GraphLayout::kFlowHeaders + l;
      starts[l] = compiled->words()[k::GraphLayout::kSectionTable + 2 * section];
      const auto list = static_cast<StagedFlowLists::List>(l);
      skip[l] = {4 * starts[l], 4 * (starts[l] + o_.staged->words(list))};
    }
  }
  // The image goes up a piece at a time, each piece given back to the system once it is on
  // the device: this process never holds the whole image beside a whole copy of it (the CPU
  // device's memory is this process's own).
  const size_t size = compiled->buffer.size();
  size_t host_bytes = size;  // what goes up from the image
  for (const auto& [skip_begin, skip_end] : skip) host_bytes -= skip_end - skip_begin;
  const size_t piece_bytes = UploadPieceBytes(host_bytes);
  std::vector<RangedUpload> pieces;
  for (size_t at = 0; at < size; at += piece_bytes) {
    const size_t end = at + std::min(piece_bytes, size - at);
    // The piece, less the staged lists' places (in order, apart).
    pieces.clear();
    size_t from = at;
    for (const auto& [skip_begin, skip_end] : skip) {
      if (skip_begin >= skip_end || skip_end <= from || skip_begin >= end) continue;
      if (skip_begin > from) {
        pieces.push_back(RangedUpload{
            graph_, from, absl::MakeConstSpan(compiled->buffer.data() + from, skip_begin - from)});
      }
      from = std::min(skip_end, end);
    }
    if (from < end) {
      pieces.push_back(RangedUpload{
          graph_, from, absl::MakeConstSpan(compiled->buffer.data() + from, end - from)});
    }
    if (!pieces.empty()) RETURN_IF_ERROR(d_.UploadAtMany(pieces));
    for (const RangedUpload& piece : pieces) phases_.upload_bytes += piece.bytes.size();
    compiled->buffer.Discard(at, end - at);
  }
  if (o_.staged != nullptr) RETURN_IF_ERROR(o_.staged->CopyInto(graph_, starts));
  return absl::OkStatus();
}

absl::Status Solver::ReadState(const std::vector<uint8_t>& bytes) {
  if (bytes.size() != sizeof(state_words_)) {
    return absl::InternalError("the solver state read back has the wrong size");
  }
  std::memcpy(state_words_.data(), bytes.data(), bytes.size());
  return absl::OkStatus();
}

absl::Status Solver::Window(uint32_t iterations) {
  std::vector<Step> repeated;
  if (o_.early_exit) repeated.push_back(Step{&guard_, {&state_, 1}, std::nullopt});
  for (const Program* program : {&pe_, &inc_, &es_, &sum_, &advance_}) {
    repeated.push_back(Step{program, bindings_, std::nullopt});
  }
  std::vector<uint8_t> state;
  std::vector<std::vector<uint8_t>*> outputs = {&state};
  const std::vector<ReadRange> reads = {{state_, 0, sizeof(state_words_)}};
  RETURN_IF_ERROR(d_.DispatchRepeatedSequenceReadRangesInto(prefix_, repeated, iterations, reads,
                                                            absl::MakeSpan(outputs)));
  ++windows_;
  prefix_.clear();
  prefix_programs_.clear();
  RETURN_IF_ERROR(ReadState(state));
  // Seeding is done once an iteration has processed the seeds (an overflow halts it before).
  seeded_ = seeded_ || state_words_[S::kIteration] > 0;
  return absl::OkStatus();
}

bool Solver::Converged() const {
  for (int r = 0; r < k::kNumRelations; ++r) {
    if (state_words_[S::Current(r)] != 0) return false;
  }
  return true;
}

bool Solver::NeedsGrowth() const {
  for (int t = 0; t < k::kNumTables; ++t) {
    const uint64_t current = state_words_[S::Current(t)];
    if (k::WantsGrowth(Total(t), current, TableSlots(t))) return true;
    if (k::Joined(t) &&
        k::HeadsWantGrowth(state_words_[S::Heads(t)], current, Total(t), head_slots_[t])) {
      return true;
    }
    if (k::ListWantsGrowth(current, half_[t])) return true;
  }
  return false;
}

absl::Status Solver::MoveSegment(int t, uint32_t s, uint64_t slots) {
  ASSIGN_OR_RETURN(Resource moved, buffers_.Allocate(slots * k::SlotBytes(t)));
  const Program rehash = Program::Of(k::kRehashKernel, {static_cast<uint64_t>(t), s});
  const std::array<Resource, 3> rehash_bindings = {table_[t][s], moved, state_};
  const std::vector<Step> steps = {{&rehash, rehash_bindings, std::nullopt}};
  RETURN_IF_ERROR(d_.DispatchSequenceReadRangesInto(steps, {}, {}));
  // Freed once the rehash has run (a free of a buffer in use is deferred).
  RETURN_IF_ERROR(buffers_.Free(table_[t][s]));
  table_[t][s] = moved;
  slots_[t][s] = slots;
  return absl::OkStatus();
}

absl::Status Solver::MoveList(int t, uint64_t half, bool overflowed) {
  ASSIGN_OR_RETURN(Resource moved, buffers_.Allocate(2 * half * 8));
  const uint64_t parity = state_words_[S::kParity] & 1;
  // Each half keeps its place: [0, half) or [half, 2 half), in u32 words for copy_range_u32.
  std::vector<Program> copies;
  const auto copy = [&](uint64_t which, uint64_t tuples) {
    tuples = std::min(tuples, half_[t]);
    if (tuples > 0) {
      copies.push_back(Program::Of(kernels::kCopyRangeU32Kernel,
                                   {2 * which * half_[t], 2 * which * half, 2 * tuples}));
    }
  };
  copy(parity, state_words_[S::Current(t)]);
  if (overflowed) copy(parity ^ 1, state_words_[S::Next(t)]);
  if (!copies.empty()) {
    const std::array<Resource, 2> copy_bindings = {list_[t], moved};
    std::vector<Step> steps;
    for (const Program& program : copies) steps.push_back({&program, copy_bindings, std::nullopt});
    RETURN_IF_ERROR(d_.DispatchSequenceReadRangesInto(steps, {}, {}));
  }
  RETURN_IF_ERROR(buffers_.Free(list_[t]));
  list_[t] = moved;
  half_[t] = half;
  return absl::OkStatus();
}

absl::Status Solver::Grow(bool overflowed) {
  ++growths_;
  if (overflowed) ++overflow_growths_;
  uint32_t reindex = 0;      // bit t - 1: joined table t's chains are rebuilt
  uint32_t new_heads = 0;    // bit t - 1: joined table t's heads are a new (empty) buffer
  uint32_t moved_segments = 0;
  bool moved_any = false;
  const auto grow_table = [&](int t, uint64_t slots) -> absl::Status {
    if (kSegments * slots > kMaxTableSlots || slots > k::kMaxSegmentSlots - 1) {
      return absl::ResourceExhaustedError(absl::StrFormat(
          "the problem needs more than %d slots in the table of %s", kMaxTableSlots,
          kTableNames[t]));
    }
    for (uint32_t s = 0; s < kSegments; ++s) {
      RETURN_IF_ERROR(MoveSegment(t, s, slots));
      ++moved_segments;
    }
    if (k::Joined(t)) reindex |= 1u << (t - 1);  // its tuples' locations changed
    moved_any = true;
    return absl::OkStatus();
  };
  const auto grow_heads = [&](int t, uint64_t slots) -> absl::Status {
    if (slots > k::kMaxSegmentSlots - 1) {
      return absl::ResourceExhaustedError(absl::StrFormat(
          "the problem needs more than %d chain heads for %s", k::kMaxSegmentSlots - 1,
          kTableNames[t]));
    }
    // Heads are rebuilt, not moved: the next window reindexes them.
    RETURN_IF_ERROR(buffers_.Free(heads_[t]));
    ASSIGN_OR_RETURN(heads_[t], buffers_.Allocate(slots * k::kHeadBytes));
    head_slots_[t] = slots;
    reindex |= 1u << (t - 1);
    new_heads |= 1u << (t - 1);
    moved_any = true;
    return absl::OkStatus();
  };
  for (int t = 0; t < k::kNumTables; ++t) {
    const uint64_t current = state_words_[S::Current(t)];
    const uint64_t next = overflowed ? state_words_[S::Next(t)] : 0;
    // After an overflow the halted iteration's additions are in the table but not yet counted.
    const uint64_t recent = current + next;
    const uint64_t count = Total(t) + next;
    const bool table_grows = k::WantsGrowth(count, recent, TableSlots(t));
    if (table_grows) {
      RETURN_IF_ERROR(grow_table(t, Regrow(slots_[t][0], CeilDiv(count, kSegments),
                                           CeilDiv(kGrowthIterations * recent, kSegments))));
    }
    if (k::Joined(t)) {
      const uint64_t groups = state_words_[S::Heads(t)];
      uint64_t heads = 0;
      if (k::HeadsWantGrowth(groups, recent, count, head_slots_[t])) {
        heads = Regrow(head_slots_[t], groups, 2 * k::RecentGroups(recent, groups, count));
      }
      // The chains of a table that moved are rebuilt anyway: its heads grow with it when they
      // are fuller than the table will be (groups tend to grow with their tuples), which spares
      // a rebuild for the heads alone soon after.
      if (table_grows && count > 0) {
        heads = std::max(heads, CeilDiv(groups * TableSlots(t), count));
      }
      if (heads > head_slots_[t]) RETURN_IF_ERROR(grow_heads(t, heads));
    }
    // A list grows when it is getting full, refused an insert, or (after an overflow) cannot
    // hold the halted iteration's delta and additions merged; before the seeding is done, the
    // path edges' must hold every seed (those that went in and the rest, merged).
    const uint64_t seeds = !seeded_ && t == k::kPe ? p_.seeds.size() : 0;
    if (k::ListWantsGrowth(recent, half_[t]) || next >= half_[t] ||
        (overflowed && t < k::kNumRelations && current + next > half_[t]) ||
        seeds > half_[t]) {
      const uint64_t half = std::max({2 * half_[t], 3 * recent, seeds});
      if (half > kMaxTableSlots) {
        return absl::ResourceExhaustedError(absl::StrFormat(
            "the problem needs more than %d delta entries for %s", kMaxTableSlots,
            kTableNames[t]));
      }
      RETURN_IF_ERROR(MoveList(t, half, overflowed));
      moved_any = true;
    }
  }
  if (overflowed && !moved_any) {
    // An insert found neither its tuple nor room within its probe bound although no table is
    // full (a cluster): the fullest table, or heads table, doubles.
    int fullest = -1;
    bool heads = false;
    double load = -1;
    for (int t = 0; t < k::kNumTables; ++t) {
      const double tuples = static_cast<double>(Total(t) + state_words_[S::Next(t)]);
      if (tuples / static_cast<double>(TableSlots(t)) > load) {
        load = tuples / static_cast<double>(TableSlots(t));
        fullest = t;
        heads = false;
      }
      if (k::Joined(t) &&
          state_words_[S::Heads(t)] / static_cast<double>(head_slots_[t]) > load) {
        load = state_words_[S::Heads(t)] / static_cast<double>(head_slots_[t]);
        fullest = t;
        heads = true;
      }
    }
    RETURN_IF_ERROR(heads ? grow_heads(fullest, 2 * head_slots_[fullest])
                          : grow_table(fullest, 2 * slots_[fullest][0]));
  }
  if (!moved_any) {
    return absl::InternalError("a growth was wanted but nothing needed to grow");
  }
  // The halted iteration linked some of what it added, or none: every chain is built again
  // (linking a tuple twice would close its chain into a loop).
  if (overflowed) reindex = kAllJoined;
  if (moved_segments < k::kNumTables * kSegments) ++partial_growths_;
  bindings_ = Bindings();
  prefix_programs_.reserve(2);
  if (overflowed) {
    prefix_.push_back(Step{&resume_, bindings_, std::nullopt});
    // The halted iteration may have lost inserts of calls it claimed: the rerun makes every
    // call again.
    Clear(&calls_);
  }
  if (reindex != 0) {
    for (int t = 1; t < k::kNumTables; ++t) {
      if (((reindex & ~new_heads) >> (t - 1)) & 1) Clear(&heads_[t]);
    }
    prefix_programs_.push_back(Program::Of(k::kReindexKernel, {reindex}));
    prefix_.push_back(Step{&prefix_programs_.back(), bindings_, std::nullopt});
  }
  // After an overflow the halted iteration's additions join its delta for the rerun.
  if (overflowed) prefix_.push_back(Step{&merge_, bindings_, std::nullopt});
  if (!seeded_) {
    // The seeds that did not fit go in now; merged, they are all the first delta.
    prefix_.push_back(Step{&seed_, bindings_, std::nullopt});
    prefix_.push_back(Step{&merge_, bindings_, std::nullopt});
  }
  prefix_.push_back(Step{&activate_, bindings_, std::nullopt});
  return absl::OkStatus();
}

absl::StatusOr<Solution> Solver::Results() {
  // Only the path edges are needed now: the rest, the problem too, goes before the results
  // take memory.
  RETURN_IF_ERROR(buffers_.Free(graph_));
  for (int t = 0; t < k::kNumTables; ++t) {
    if (t != k::kPe) {
      for (uint32_t s = 0; s < kSegments; ++s) RETURN_IF_ERROR(buffers_.Free(table_[t][s]));
    }
    if (k::Joined(t)) RETURN_IF_ERROR(buffers_.Free(heads_[t]));
    RETURN_IF_ERROR(buffers_.Free(list_[t]));
  }
  RETURN_IF_ERROR(buffers_.Free(calls_));
  // The pairs are marked in a bitmap of a row per node (ceil(facts / 32) words), which orders
  // them by node, then fact, and lists them; nodes go in windows of as many rows as
  // max_result_words allows, each a pass over the path edges (one, for most problems).
  const uint64_t nodes = p_.node_count();
  const uint64_t row = std::max<uint64_t>(1, CeilDiv(p_.fact_count(), 32));
  const uint64_t window = std::clamp<uint64_t>(o_.max_result_words / row, 1, 1u << 30);
  Solution solution;
  for (uint64_t first = 0; first < nodes; first += window) {
    const uint64_t count = std::min(window, nodes - first);
    const uint64_t words = count * row;
    ++phases_.result_windows;
    const std::vector<uint64_t> params = {first, count, row};
    const Program marks_program = Program::Of(k::kResultsKernel, params);
    ASSIGN_OR_RETURN(Resource marks, buffers_.Allocate(words * 4));
    ASSIGN_OR_RETURN(Resource counts,
                     buffers_.Allocate(4 * (k::ResultWindow::Blocks(words) + 1)));
    ASSIGN_OR_RETURN(Resource state, buffers_.Allocate(8));
    std::vector<Resource> bindings(table_[k::kPe].begin(), table_[k::kPe].end());
    bindings.push_back(marks);
    bindings.push_back(counts);
    bindings.push_back(state);
    std::vector<uint8_t> state_bytes;
    std::vector<std::vector<uint8_t>*> outputs = {&state_bytes};
    const std::vector<Step> steps = {{&marks_program, bindings, std::nullopt}};
    const std::vector<ReadRange> state_reads = {{state, 0, 8}};
    RETURN_IF_ERROR(d_.DispatchSequenceReadRangesInto(steps, state_reads,
                                                      absl::MakeSpan(outputs)));
    uint32_t status_and_count[2];
    std::memcpy(status_and_count, state_bytes.data(), sizeof(status_and_count));
    phases_.download_bytes += state_bytes.size();
    if (status_and_count[0] != 0) {
      return absl::InternalError(absl::StrFormat(
          "the device reported status %#x marking the results (a path edge's fact past %d)",
          status_and_count[0], p_.fact_count()));
    }
    // The last window has read the path edges for the last time.
    if (first + count >= nodes) {
      for (uint32_t s = 0; s < kSegments; ++s) RETURN_IF_ERROR(buffers_.Free(table_[k::kPe][s]));
    }
    const uint64_t pairs = status_and_count[1];
    if (pairs > 0) {
      ASSIGN_OR_RETURN(Resource out, buffers_.Allocate(pairs * 8));
      const std::vector<Resource> list_bindings = {marks, counts, out};
      const Program listed = Program::Of(k::kResultsListKernel, params);
      const std::vector<Step> list_steps = {{&listed, list_bindings, std::nullopt}};
      // Windows add to the solution: its room grows geometrically, not window by window.
      const size_t need = solution.facts.size() + pairs;
      if (need > solution.facts.capacity()) {
        solution.facts.reserve(std::max(need, 2 * solution.facts.capacity()));
      }
      uint64_t previous = solution.facts.empty()
                              ? 0
                              : (uint64_t{solution.facts.back().first} << 16) |
                                    solution.facts.back().second;
      // Read straight into the solution's room, where each 8-byte key becomes its 8-byte pair
      // in place: the host holds the solution alone, never a copy of the listing beside it.
      // The first pairs come back behind the listing, in its request; the rest in one read,
      // which the dispatch moves as it best can (a client of a daemon streams it, or brings it
      // through the memory it shares with a daemon on its host a ring's slot at a time).
      static_assert(sizeof(solution.facts[0]) == 8);
      const size_t at = solution.facts.size();
      solution.facts.resize(at + pairs);
      auto* const keys = reinterpret_cast<uint8_t*>(solution.facts.data() + at);
      const uint64_t head = std::min(std::max<uint64_t>(o_.result_first_pairs, 1), pairs);
      const std::vector<ReadRange> head_read = {{out, 0, 8 * head}};
      const std::vector<absl::Span<uint8_t>> head_into = {absl::MakeSpan(keys, 8 * head)};
      RETURN_IF_ERROR(d_.DispatchSequenceReadRangesIntoSpans(list_steps, head_read, head_into));
      if (head < pairs) {
        const std::vector<ReadRange> rest = {{out, 8 * head, 8 * (pairs - head)}};
        const std::vector<absl::Span<uint8_t>> rest_into = {
            absl::MakeSpan(keys + 8 * head, 8 * (pairs - head))};
        RETURN_IF_ERROR(d_.DownloadRangesIntoSpans(rest, rest_into));
      }
      phases_.download_bytes += 8 * pairs;
      for (uint64_t i = 0; i < pairs; ++i) {
        uint64_t key;
        std::memcpy(&key, keys + 8 * i, 8);
        const uint64_t node = key >> 16;
        if ((at + i > 0 && key <= previous) || node < first || node >= first + count) {
          return absl::InternalError("the device listed results out of order or place");
        }
        previous = key;
        solution.facts[at + i] = {static_cast<uint32_t>(node),
                                  static_cast<uint32_t>(key & 0xffff)};
      }
      RETURN_IF_ERROR(buffers_.Free(out));
    }
    RETURN_IF_ERROR(buffers_.Free(marks));
    RETURN_IF_ERROR(buffers_.Free(counts));
    RETURN_IF_ERROR(buffers_.Free(state));
  }
  return solution;
}


absl::StatusOr<Solution> Solver::Run(ResidentStats* stats) {
  {
    PhaseTimer timer(&phases_.setup_seconds);
    RETURN_IF_ERROR(Init());
  }
  if (o_.uploaded) o_.uploaded();
  uint32_t window = std::max<uint32_t>(o_.initial_window, 1);
  for (;;) {
    {
      PhaseTimer timer(&phases_.window_seconds);
      RETURN_IF_ERROR(Window(window));
    }
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
      o_.progress(ResidentProgress{windows_, state_words_[S::kIteration], Total(k::kPe)});
    }
    if (seeded_ && Converged()) break;
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
  const ResidentStats counts = {.path_edges = Total(k::kPe),
                                .incoming = Total(k::kInc),
                                .end_summaries = Total(k::kEs),
                                .summaries = Total(k::kSum)};
  absl::StatusOr<Solution> results;
  {
    PhaseTimer timer(&phases_.results_seconds);
    results = Results();
  }
  ASSIGN_OR_RETURN(Solution solution, std::move(results));
  if (stats != nullptr) {
    *stats = counts;
    stats->setup_seconds = phases_.setup_seconds;
    stats->window_seconds = phases_.window_seconds;
    stats->growth_seconds = phases_.growth_seconds;
    stats->results_seconds = phases_.results_seconds;
    stats->compile_seconds = phases_.compile_seconds;
    stats->compiled_bytes = phases_.compiled_bytes;
    stats->upload_bytes = phases_.upload_bytes;
    stats->download_bytes = phases_.download_bytes;
    stats->result_windows = phases_.result_windows;
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
