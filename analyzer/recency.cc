// The recency abstraction for heap objects (Balakrishnan and Reps, 2006): of the objects one
// allocation site makes, the one it made last is a place of its own that a store may replace,
// the older ones stay one place that stores only add to. A pointer is known to point to the
// last object where it is loaded from the variable the site's result was stored into, and
// nothing since may have run the site again (IrModel::MostRecent).
#include <algorithm>

#include "llvm/ADT/BitVector.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/IntrinsicInst.h"
#include "llvm/IR/Operator.h"
#include "sluice/analyzer/ir_model.h"
#include "sluice/analyzer/ir_model_internal.h"

namespace sluice::analyzer {

namespace internal {

const llvm::AllocaInst* RecencySlot(const llvm::CallBase& call) {
  // The call's result and its casts: stored once, into one variable, before any other call.
  std::vector<const llvm::Value*> same = {&call};
  const llvm::StoreInst* store = nullptr;
  for (size_t i = 0; i < same.size(); ++i) {
    for (const llvm::User* user : same[i]->users()) {
      if (const auto* cast = llvm::dyn_cast<llvm::BitCastInst>(user)) {
        same.push_back(cast);
      } else if (const auto* s = llvm::dyn_cast<llvm::StoreInst>(user);
                 s != nullptr && s->getValueOperand() == same[i] && store == nullptr) {
        store = s;
      } else if (!llvm::isa<llvm::ICmpInst>(user)) {
        return nullptr;
      }
    }
  }
  if (store == nullptr || store->getParent() != call.getParent()) return nullptr;
  const auto* slot = llvm::dyn_cast<llvm::AllocaInst>(store->getPointerOperand());
  if (slot == nullptr || slot->isArrayAllocation()) return nullptr;
  for (const llvm::Instruction* at = call.getNextNode(); at != store; at = at->getNextNode()) {
    if (at == nullptr || llvm::isa<llvm::CallBase>(at)) return nullptr;
  }
  // The variable holds nothing else, and its address goes nowhere.
  for (const llvm::User* user : slot->users()) {
    const auto* load = llvm::dyn_cast<llvm::LoadInst>(user);
    if (user != store && (load == nullptr || load->getPointerOperand() != slot)) return nullptr;
  }
  return slot;
}

const llvm::Value* ConstantBase(const llvm::Value* pointer, const llvm::DataLayout& layout,
                                uint64_t* offset) {
  int64_t total = 0;
  for (int depth = 0; depth < 32; ++depth) {
    if (const auto* gep = llvm::dyn_cast<llvm::GEPOperator>(pointer)) {
      llvm::APInt step(layout.getIndexTypeSizeInBits(gep->getType()), 0);
      if (!gep->accumulateConstantOffset(layout, step) || step.getMinSignedBits() > 40) {
        return nullptr;
      }
      total += step.getSExtValue();
      pointer = gep->getPointerOperand();
    } else if (const auto* cast = llvm::dyn_cast<llvm::Operator>(pointer);
               cast != nullptr && (cast->getOpcode() == llvm::Instruction::BitCast ||
                                   cast->getOpcode() == llvm::Instruction::AddrSpaceCast)) {
      pointer = cast->getOperand(0);
    } else {
      break;
    }
  }
  if (total < 0) return nullptr;
  *offset = static_cast<uint64_t>(total);
  return pointer;
}

}  // namespace internal

// A forward must-analysis per function with recency variables: a variable holds its site's
// last object from the store that follows the site until a call that may run the site again
// (a callee from which the site's function can be reached, or, when that function's address
// is taken, a library call that may call it back).
void IrModel::ComputeRecency() {
  absl::flat_hash_map<const llvm::Function*, std::vector<std::pair<const llvm::AllocaInst*,
                                                                    uint32_t>>> slots;
  for (uint32_t o = 0; o < objects_.size(); ++o) {
    const MemoryObject& object = objects_[o];
    if (object.kind != MemoryObject::Kind::kHeap) continue;
    const auto* call = llvm::cast<llvm::CallBase>(object.site);
    // Its fields are one location, nothing replaces one; or it is a call's of an allocating
    // function, which writes the object before its caller has it.
    if (object.smashed || object.cloned) continue;
    if (const llvm::AllocaInst* slot = internal::RecencySlot(*call)) {
      slots[call->getFunction()].emplace_back(slot, o);
    }
  }
  if (slots.empty()) return;
  // Who calls whom, backwards: the functions from which each one can be reached.
  absl::flat_hash_map<const llvm::Function*, std::vector<const llvm::Function*>> callers;
  for (const auto& [call, callees] : callees_) {
    for (const llvm::Function* callee : callees) callers[callee].push_back(call->getFunction());
  }
  for (const auto& [function, mine] : slots) {
    absl::flat_hash_set<const llvm::Function*> reaching = {function};
    std::vector<const llvm::Function*> pending = {function};
    while (!pending.empty()) {
      const llvm::Function* f = pending.back();
      pending.pop_back();
      for (const llvm::Function* caller : callers[f]) {
        if (reaching.insert(caller).second) pending.push_back(caller);
      }
    }
    const size_t n = mine.size();
    absl::flat_hash_map<const llvm::Value*, size_t> index;
    for (size_t i = 0; i < n; ++i) index[mine[i].first] = i;
    auto step = [&](const llvm::Instruction& instruction, llvm::BitVector& recent) {
      if (const auto* store = llvm::dyn_cast<llvm::StoreInst>(&instruction)) {
        auto it = index.find(store->getPointerOperand());
        if (it != index.end()) recent.set(it->second);
        return;
      }
      const auto* call = llvm::dyn_cast<llvm::CallBase>(&instruction);
      if (call == nullptr || llvm::isa<llvm::DbgInfoIntrinsic>(call)) return;
      if (const auto* intrinsic = llvm::dyn_cast<llvm::IntrinsicInst>(call);
          intrinsic != nullptr && intrinsic->isLifetimeStartOrEnd()) {
        return;
      }
      const std::vector<const llvm::Function*>& callees = Callees(*call);
      bool again = callees.empty() && function->hasAddressTaken();
      for (const llvm::Function* callee : callees) again |= reaching.contains(callee);
      if (again) {
        recent.reset();
        return;
      }
      // The site itself: its earlier object is no longer the last (the store sets it again).
      for (size_t i = 0; i < n; ++i) {
        if (objects_[mine[i].second].site == call) recent.reset(i);
      }
    };
    const auto in = internal::ForwardDataflow(
        *function, llvm::BitVector(n), step, [](llvm::BitVector& into, const llvm::BitVector& from) {
          llvm::BitVector both = into;
          both &= from;
          if (both == into) return false;
          into = std::move(both);
          return true;
        });
    for (const llvm::BasicBlock& block : *function) {
      auto found = in.find(&block);
      if (found == in.end()) continue;
      llvm::BitVector recent = found->second;
      for (const llvm::Instruction& instruction : block) {
        if (const auto* load = llvm::dyn_cast<llvm::LoadInst>(&instruction)) {
          auto it = index.find(load->getPointerOperand());
          if (it != index.end() && recent.test(it->second)) {
            recent_loads_[load] = mine[it->second].second;
            recency_objects_.insert(mine[it->second].second);
          }
        }
        step(instruction, recent);
      }
    }
  }
}

bool IrModel::MostRecent(const llvm::Value* pointer, uint32_t* object, uint64_t* offset) const {
  if (recent_loads_.empty()) return false;
  const llvm::Value* base = internal::ConstantBase(pointer, layout_, offset);
  if (base == nullptr) return false;
  const auto* load = llvm::dyn_cast<llvm::LoadInst>(base);
  if (load == nullptr) return false;
  auto it = recent_loads_.find(load);
  if (it == recent_loads_.end()) return false;
  *object = it->second;
  return true;
}

}  // namespace sluice::analyzer
