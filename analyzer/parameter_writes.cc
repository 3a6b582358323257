// What a function writes through its pointer parameters before it reads it (IrModel::
// WrittenFirst), and what a call therefore replaces in its caller (IrModel::ReplacedByCall):
// the strong update an out-parameter gives where the points-to sets, which are the same for
// every caller, give only a weak one.
#include <algorithm>

#include "llvm/ADT/BitVector.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/IntrinsicInst.h"
#include "sluice/analyzer/ir_model.h"
#include "sluice/analyzer/ir_model_internal.h"

namespace sluice::analyzer {

using internal::kUnknownOffset;
using internal::ObjectOf;
using internal::OffsetOf;

namespace {

// The ranges one function's summary is computed for, at most (a function writing more
// through its parameters is summarized by the first ones it writes).
constexpr size_t kMaxRanges = 1024;

bool Overlaps(uint64_t a, uint64_t a_size, uint64_t b, uint64_t b_size) {
  const uint64_t a_end = a_size == kToEnd ? kToEnd : a + a_size;
  const uint64_t b_end = b_size == kToEnd ? kToEnd : b + b_size;
  return a < b_end && b < a_end;
}

bool Covers(uint64_t outer, uint64_t outer_size, uint64_t inner, uint64_t inner_size) {
  if (inner_size == kToEnd) return false;
  if (outer_size == kToEnd) return inner >= outer;
  return inner >= outer && inner + inner_size <= outer + outer_size;
}

// Whether two sorted lists share an element.
bool Intersect(const std::vector<uint32_t>& a, const std::vector<uint32_t>& b) {
  auto i = a.begin();
  auto j = b.begin();
  while (i != a.end() && j != b.end()) {
    if (*i == *j) return true;
    if (*i < *j) {
      i = std::lower_bound(i, a.end(), *j);
    } else {
      j = std::lower_bound(j, b.end(), *i);
    }
  }
  return false;
}

}  // namespace

// A pointer parameter's slot: at -O0 each parameter is stored once, on entry, into an alloca
// that is only ever loaded from after. A load of it is the parameter's value.
absl::flat_hash_map<const llvm::Value*, unsigned> IrModel::ParameterSlots(
    const llvm::Function& function) const {
  absl::flat_hash_map<const llvm::Value*, unsigned> slots;
  for (const llvm::Argument& argument : function.args()) {
    // (A byval parameter points to the callee's own copy, not to what the caller passed.)
    if (!argument.getType()->isPointerTy() || argument.hasByValAttr()) continue;
    for (const llvm::User* user : argument.users()) {
      const auto* store = llvm::dyn_cast<llvm::StoreInst>(user);
      if (store == nullptr || store->getValueOperand() != &argument ||
          store->getParent() != &function.getEntryBlock()) {
        continue;
      }
      const auto* slot = llvm::dyn_cast<llvm::AllocaInst>(store->getPointerOperand());
      if (slot == nullptr) continue;
      const bool only_loaded = std::all_of(
          slot->user_begin(), slot->user_end(), [&](const llvm::User* other) {
            const auto* load = llvm::dyn_cast<llvm::LoadInst>(other);
            return other == store || (load != nullptr && load->getPointerOperand() == slot);
          });
      if (only_loaded) slots[slot] = argument.getArgNo();
    }
  }
  return slots;
}

int IrModel::ParameterOf(const llvm::Value* pointer,
                         const absl::flat_hash_map<const llvm::Value*, unsigned>& slots,
                         uint64_t* offset) const {
  pointer = internal::ConstantBase(pointer, layout_, offset);
  if (pointer == nullptr) return -1;
  if (const auto* argument = llvm::dyn_cast<llvm::Argument>(pointer)) {
    return argument->getType()->isPointerTy() && !argument->hasByValAttr()
               ? static_cast<int>(argument->getArgNo())
               : -1;
  }
  if (const auto* load = llvm::dyn_cast<llvm::LoadInst>(pointer)) {
    auto it = slots.find(load->getPointerOperand());
    if (it != slots.end()) return static_cast<int>(it->second);
  }
  return -1;
}

// A forward must-analysis over the function's blocks, one bit per candidate range (each a
// parameter, an offset and a size some write covers): a range is written once a write covers
// it, and spoiled once something may read it before that. It is written first where it is
// written and not spoiled at every return.
void IrModel::ComputeWrittenFirst(const llvm::Function& function) {
  const absl::flat_hash_map<const llvm::Value*, unsigned> slots = ParameterSlots(function);
  // What one instruction does: the ranges it may read first, then those it writes.
  struct Effect {
    std::vector<std::pair<const llvm::Value*, uint64_t>> reads;  // (pointer, size)
    std::vector<const llvm::Function*> callees;                   // defined ones: all they access
    std::vector<ParameterWrite> writes;
  };
  absl::flat_hash_map<const llvm::Instruction*, Effect> effects;
  std::vector<ParameterWrite> ranges;
  auto add_write = [&](Effect& effect, ParameterWrite write) {
    effect.writes.push_back(write);
    if (ranges.size() < kMaxRanges &&
        std::find(ranges.begin(), ranges.end(), write) == ranges.end()) {
      ranges.push_back(write);
    }
  };
  auto size_of = [&](llvm::Type* type) -> uint64_t {
    return type->isSized() ? layout_.getTypeStoreSize(type).getFixedSize() : kToEnd;
  };
  for (const llvm::BasicBlock& block : function) {
    for (const llvm::Instruction& instruction : block) {
      Effect effect;
      uint64_t offset = 0;
      if (const auto* load = llvm::dyn_cast<llvm::LoadInst>(&instruction)) {
        if (slots.contains(load->getPointerOperand())) continue;  // the parameter itself
        effect.reads.emplace_back(load->getPointerOperand(), size_of(load->getType()));
      } else if (const auto* store = llvm::dyn_cast<llvm::StoreInst>(&instruction)) {
        const int parameter = ParameterOf(store->getPointerOperand(), slots, &offset);
        const uint64_t size = size_of(store->getValueOperand()->getType());
        if (parameter < 0 || size == kToEnd) continue;
        add_write(effect, {static_cast<unsigned>(parameter), offset, size});
      } else if (const auto* call = llvm::dyn_cast<llvm::CallBase>(&instruction)) {
        if (internal::MarksOnly(*call)) continue;
        const std::vector<const llvm::Function*>& callees = Callees(*call);
        if (!callees.empty()) {
          effect.callees = callees;
          if (callees.size() == 1) {
            // What the callee writes first through a pointer it is given from a parameter.
            for (const ParameterWrite& write : WrittenFirst(*callees[0])) {
              if (write.argument >= call->arg_size()) continue;
              const int parameter =
                  ParameterOf(call->getArgOperand(write.argument), slots, &offset);
              if (parameter < 0) continue;
              add_write(effect, {static_cast<unsigned>(parameter), offset + write.offset,
                                 write.size});
            }
          }
        } else {
          const std::string name = ExternalName(*call);
          // (llvm.memset and llvm.memcpy have a fourth operand: whether they are volatile.)
          const auto* length =
              call->arg_size() >= 3 ? llvm::dyn_cast<llvm::ConstantInt>(call->getArgOperand(2))
                                    : nullptr;
          const bool fills = name == "memset" || name == "memcpy" || name == "memmove";
          for (unsigned a = 0; a < call->arg_size(); ++a) {
            const llvm::Value* argument = call->getArgOperand(a);
            if (!argument->getType()->isPointerTy()) continue;
            // memset and memcpy of a known length write their destination, reading nothing
            // of it; every other pointer a library call is given may be read.
            if (a == 0 && fills && length != nullptr && length->getZExtValue() > 0) {
              const int parameter = ParameterOf(argument, slots, &offset);
              if (parameter >= 0) {
                add_write(effect, {static_cast<unsigned>(parameter), offset,
                                   length->getZExtValue()});
                continue;
              }
            }
            effect.reads.emplace_back(argument, kToEnd);
          }
        }
      } else if (llvm::isa<llvm::AtomicRMWInst>(instruction) ||
                 llvm::isa<llvm::AtomicCmpXchgInst>(instruction)) {
        effect.reads.emplace_back(instruction.getOperand(0), kToEnd);
      } else {
        continue;
      }
      if (!effect.reads.empty() || !effect.callees.empty() || !effect.writes.empty()) {
        effects.emplace(&instruction, std::move(effect));
      }
    }
  }
  if (ranges.empty()) return;

  // The leaves each range may cover, wherever its parameter may point: what a read through
  // another pointer, or a call, must miss to leave it.
  const size_t n = ranges.size();
  std::vector<std::vector<uint32_t>> covered(n);
  for (size_t r = 0; r < n; ++r) {
    for (Pointee pointee : PointsToOf(function.getArg(ranges[r].argument))) {
      const uint64_t offset = OffsetOf(pointee);
      const Pointee start = offset == kUnknownOffset
                                ? pointee
                                : internal::Pack(ObjectOf(pointee), offset + ranges[r].offset);
      for (uint32_t leaf : LeavesOf(start, ranges[r].size)) covered[r].push_back(leaf);
    }
    std::sort(covered[r].begin(), covered[r].end());
    covered[r].erase(std::unique(covered[r].begin(), covered[r].end()), covered[r].end());
  }
  // The ranges each instruction may read and writes, as bits.
  struct Bits {
    llvm::BitVector reads, writes;
  };
  absl::flat_hash_map<const llvm::Instruction*, Bits> bits;
  for (const auto& [instruction, effect] : effects) {
    Bits b{llvm::BitVector(n), llvm::BitVector(n)};
    for (const auto& [pointer, size] : effect.reads) {
      uint64_t offset = 0;
      const int parameter = ParameterOf(pointer, slots, &offset);
      const std::vector<uint32_t> leaves = Leaves(pointer, size);
      for (size_t r = 0; r < n; ++r) {
        const ParameterWrite& range = ranges[r];
        if (parameter == static_cast<int>(range.argument)) {
          if (Overlaps(offset, size, range.offset, range.size)) b.reads.set(r);
        } else if (Intersect(leaves, covered[r])) {
          b.reads.set(r);
        }
      }
    }
    for (const llvm::Function* callee : effect.callees) {
      for (size_t r = 0; r < n; ++r) {
        if (Intersect(Accessed(*callee), covered[r])) b.reads.set(r);
      }
    }
    for (const ParameterWrite& write : effect.writes) {
      for (size_t r = 0; r < n; ++r) {
        if (write.argument == ranges[r].argument &&
            Covers(write.offset, write.size, ranges[r].offset, ranges[r].size)) {
          b.writes.set(r);
        }
      }
    }
    // A defined callee's ranges are written before it reads them; a library copy reads its
    // source first.
    if (!effect.callees.empty()) b.reads.reset(b.writes);
    bits.emplace(instruction, std::move(b));
  }

  // Each block's state on entry: the ranges written, and those spoiled, on the way there.
  struct State {
    llvm::BitVector written, spoiled;
  };
  const auto step = [&bits](const llvm::Instruction& instruction, State& state) {
    auto it = bits.find(&instruction);
    if (it == bits.end()) return;
    llvm::BitVector first = it->second.reads;
    first.reset(state.written);
    state.spoiled |= first;
    state.written |= it->second.writes;
  };
  const auto in = internal::ForwardDataflow(
      function, State{llvm::BitVector(n), llvm::BitVector(n)}, step,
      [](State& into, const State& from) {
        llvm::BitVector written = into.written, spoiled = into.spoiled;
        written &= from.written;
        spoiled |= from.spoiled;
        if (written == into.written && spoiled == into.spoiled) return false;
        into = {std::move(written), std::move(spoiled)};
        return true;
      });
  llvm::BitVector at_returns(n, true);
  bool returns = false;
  for (const auto& [block, entry] : in) {
    if (!llvm::isa<llvm::ReturnInst>(block->getTerminator())) continue;
    State state = entry;
    for (const llvm::Instruction& instruction : *block) step(instruction, state);
    state.written.reset(state.spoiled);
    at_returns &= state.written;
    returns = true;
  }
  if (!returns) return;
  std::vector<ParameterWrite>& out = written_first_[&function];
  for (size_t r = 0; r < n; ++r) {
    if (at_returns.test(r)) out.push_back(ranges[r]);
  }
}

const std::vector<IrModel::ParameterWrite>& IrModel::WrittenFirst(
    const llvm::Function& function) const {
  static const std::vector<ParameterWrite> kNone;
  auto it = written_first_.find(&function);
  return it == written_first_.end() ? kNone : it->second;
}

std::vector<uint32_t> IrModel::ReplacedByCall(const llvm::CallBase& call,
                                              const llvm::Function& callee) const {
  std::vector<uint32_t> out;
  for (const ParameterWrite& write : WrittenFirst(callee)) {
    if (write.argument >= call.arg_size()) continue;
    const PointsTo& points_to = PointsToOf(call.getArgOperand(write.argument));
    if (points_to.size() != 1) continue;
    const Pointee pointee = *points_to.begin();
    const MemoryObject& object = objects_[ObjectOf(pointee)];
    if (object.kind == MemoryObject::Kind::kHeap || object.kind == MemoryObject::Kind::kExternal ||
        OffsetOf(pointee) == kUnknownOffset) {
      continue;
    }
    // A local of a recursive function is every activation's: the one written may be another,
    // unless the argument is the local itself, given by its own function.
    if (object.kind == MemoryObject::Kind::kLocal && recursive_.contains(object.owner)) {
      uint64_t offset = 0;
      const llvm::Value* argument = call.getArgOperand(write.argument);
      if (internal::ConstantBase(argument, layout_, &offset) != object.site) continue;
    }
    // A pointer into an array stands for the array's start, not where in it it points: the
    // ranges the callee writes are then not known in the object.
    const uint64_t start = OffsetOf(pointee);
    bool into_array = false;
    for (uint32_t leaf : LeavesOf(pointee, 1)) into_array |= leaves_[leaf].array;
    if (into_array) continue;
    for (uint32_t i = 0; i < object.leaf_count; ++i) {
      const Leaf& leaf = leaves_[object.first_leaf + i];
      if (!leaf.array && Covers(start + write.offset, write.size, leaf.offset, leaf.size)) {
        out.push_back(object.first_leaf + i);
      }
    }
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace sluice::analyzer
