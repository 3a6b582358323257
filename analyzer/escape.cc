// Where a local's address first leaves its function's hands (IrModel::Unescaped): until then
// nothing but the function's own loads and stores can reach the local, whatever the
// flow-insensitive points-to sets say of later. And which locals a call may reach once it has
// (IrModel::ReachedObjects): those its arguments lead to through memory, and those globals do.
#include <algorithm>
#include <bit>
#include <cstdint>
#include <vector>

#include "llvm/ADT/BitVector.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/IntrinsicInst.h"
#include "sluice/analyzer/ir_model.h"
#include "sluice/analyzer/ir_model_internal.h"

namespace sluice::analyzer {

namespace {

// The instructions at which the address of `alloca` (or a pointer derived from it by casts and
// getelementptrs) is used as a value: stored, passed to a call, compared into or anything else
// but a load or store through it. False when it is used in a way not followed (a phi, a
// select, a return, a conversion to an integer): the local then escapes on entry.
bool EscapePoints(const llvm::AllocaInst& alloca,
                  absl::flat_hash_set<const llvm::Instruction*>* points) {
  std::vector<const llvm::Value*> derived = {&alloca};
  for (size_t i = 0; i < derived.size(); ++i) {
    for (const llvm::User* user : derived[i]->users()) {
      const auto* instruction = llvm::dyn_cast<llvm::Instruction>(user);
      if (instruction == nullptr) return false;
      if (llvm::isa<llvm::GetElementPtrInst>(instruction) ||
          llvm::isa<llvm::BitCastInst>(instruction) ||
          llvm::isa<llvm::AddrSpaceCastInst>(instruction)) {
        derived.push_back(instruction);
      } else if (const auto* load = llvm::dyn_cast<llvm::LoadInst>(instruction)) {
        if (load->getPointerOperand() != derived[i]) return false;
      } else if (const auto* store = llvm::dyn_cast<llvm::StoreInst>(instruction)) {
        if (store->getValueOperand() == derived[i]) points->insert(store);
      } else if (llvm::isa<llvm::DbgInfoIntrinsic>(instruction) ||
                 llvm::isa<llvm::ICmpInst>(instruction)) {
        continue;
      } else if (const auto* intrinsic = llvm::dyn_cast<llvm::IntrinsicInst>(instruction);
                 intrinsic != nullptr && intrinsic->isLifetimeStartOrEnd()) {
        continue;
      } else if (llvm::isa<llvm::CallBase>(instruction) ||
                 llvm::isa<llvm::AtomicRMWInst>(instruction) ||
                 llvm::isa<llvm::AtomicCmpXchgInst>(instruction)) {
        points->insert(instruction);
      } else {
        return false;
      }
    }
  }
  return true;
}

}  // namespace

// A forward may-analysis per function, one bit per local: escaped once an escape point (or the
// entry, for a local used in a way not followed) may have been passed.
void IrModel::ComputeEscapes() {
  for (const llvm::Function* function : functions_) {
    // In a recursive function a local is every activation's: an earlier one's address may have
    // been given out already.
    if (recursive_.contains(function)) continue;
    std::vector<uint32_t> locals;
    std::vector<bool> from_entry;
    absl::flat_hash_map<const llvm::Instruction*, std::vector<size_t>> escapes_at;
    for (const llvm::Instruction& instruction : function->getEntryBlock()) {
      const auto* alloca = llvm::dyn_cast<llvm::AllocaInst>(&instruction);
      if (alloca == nullptr) continue;
      auto it = object_of_site_.find(alloca);
      if (it == object_of_site_.end()) continue;
      absl::flat_hash_set<const llvm::Instruction*> points;
      const bool followed = EscapePoints(*alloca, &points);
      for (const llvm::Instruction* point : points) escapes_at[point].push_back(locals.size());
      locals.push_back(it->second);
      from_entry.push_back(!followed);
    }
    if (locals.empty()) continue;
    const size_t n = locals.size();
    llvm::BitVector entry(n);
    for (size_t i = 0; i < n; ++i) {
      if (from_entry[i]) entry.set(i);
    }
    auto step = [&](const llvm::Instruction& instruction, llvm::BitVector& escaped) {
      auto it = escapes_at.find(&instruction);
      if (it == escapes_at.end()) return;
      for (size_t i : it->second) escaped.set(i);
    };
    const auto in = internal::ForwardDataflow(
        *function, entry, step, [](llvm::BitVector& into, const llvm::BitVector& from) {
          if (!from.test(into)) return false;  // no bit the successor does not have yet
          into |= from;
          return true;
        });
    // Each call's locals not escaped before it (the call itself passing one is its escape).
    for (const llvm::BasicBlock& block : *function) {
      auto found = in.find(&block);
      if (found == in.end()) continue;
      llvm::BitVector escaped = found->second;
      for (const llvm::Instruction& instruction : block) {
        step(instruction, escaped);
        const auto* call = llvm::dyn_cast<llvm::CallBase>(&instruction);
        if (call == nullptr || Callees(*call).empty() || escaped.all()) continue;
        std::vector<uint32_t>& mine = unescaped_[call];
        for (size_t i = 0; i < n; ++i) {
          if (!escaped.test(i)) mine.push_back(locals[i]);
        }
        std::sort(mine.begin(), mine.end());
      }
    }
  }
}

bool IrModel::Unescaped(const llvm::CallBase& call, uint32_t object) const {
  auto it = unescaped_.find(&call);
  return it != unescaped_.end() &&
         std::binary_search(it->second.begin(), it->second.end(), object);
}

// The objects form a graph, an edge from each to the objects whose address its contents may
// hold. Each strongly connected component leads to the same locals: the components come
// after what they lead to, so each one's set is the union of its own locals and its
// successors' sets, made when it is found.
void IrModel::ComputeReach(const std::vector<std::vector<uint32_t>>& holds) {
  constexpr uint32_t kNone = ~uint32_t{0};
  const uint32_t objects = static_cast<uint32_t>(objects_.size());
  held_bit_.assign(objects, kNone);
  held_locals_.clear();
  for (uint32_t o = 0; o < objects; ++o) {
    for (uint32_t target : holds[o]) {
      if (objects_[target].kind == MemoryObject::Kind::kLocal && held_bit_[target] == kNone) {
        held_bit_[target] = 0;
      }
    }
  }
  for (uint32_t o = 0; o < objects; ++o) {
    if (held_bit_[o] == kNone) continue;
    held_bit_[o] = static_cast<uint32_t>(held_locals_.size());
    held_locals_.push_back(o);
  }
  const size_t words = (held_locals_.size() + 63) / 64;
  reach_sets_.assign(1, std::vector<uint64_t>(words, 0));
  absl::flat_hash_map<std::vector<uint64_t>, uint32_t> interned;
  interned.emplace(reach_sets_[0], 0);
  reach_of_.assign(objects, kNone);

  std::vector<uint32_t> successors;
  std::vector<uint64_t> set(words);
  internal::StronglyConnected(holds, [&](const std::vector<uint32_t>& members) {
    std::fill(set.begin(), set.end(), 0);
    successors.clear();
    for (uint32_t m : members) {
      if (const uint32_t bit = held_bit_[m]; bit != kNone) {
        set[bit / 64] |= uint64_t{1} << (bit % 64);
      }
      for (uint32_t target : holds[m]) {
        if (reach_of_[target] != kNone) successors.push_back(reach_of_[target]);
      }
    }
    std::sort(successors.begin(), successors.end());
    successors.erase(std::unique(successors.begin(), successors.end()), successors.end());
    for (uint32_t s : successors) {
      for (size_t w = 0; w < words; ++w) set[w] |= reach_sets_[s][w];
    }
    auto [it, added] = interned.emplace(set, static_cast<uint32_t>(reach_sets_.size()));
    if (added) reach_sets_.push_back(set);
    for (uint32_t m : members) reach_of_[m] = it->second;
  });
  reached_everywhere_.assign(words, 0);
  for (uint32_t o = 0; o < objects; ++o) {
    if (objects_[o].kind != MemoryObject::Kind::kGlobal &&
        objects_[o].kind != MemoryObject::Kind::kExternal) {
      continue;
    }
    const std::vector<uint64_t>& reach = reach_sets_[reach_of_[o]];
    for (size_t w = 0; w < words; ++w) reached_everywhere_[w] |= reach[w];
  }
}

std::vector<uint32_t> IrModel::ReachedObjects(const llvm::CallBase& call) const {
  std::vector<uint32_t> out, sets;
  for (const llvm::Value* argument : call.args()) {
    for (Pointee pointee : PointsToOf(argument)) {
      out.push_back(internal::ObjectOf(pointee));
      sets.push_back(reach_of_[out.back()]);
    }
  }
  // Each set once: many pointees (a heap's objects) share one.
  std::sort(sets.begin(), sets.end());
  sets.erase(std::unique(sets.begin(), sets.end()), sets.end());
  std::vector<uint64_t> set(reached_everywhere_.size(), 0);
  for (uint32_t s : sets) {
    const std::vector<uint64_t>& reach = reach_sets_[s];
    for (size_t w = 0; w < set.size(); ++w) set[w] |= reach[w] & ~reached_everywhere_[w];
  }
  for (size_t w = 0; w < set.size(); ++w) {
    for (uint64_t bits = set[w]; bits != 0; bits &= bits - 1) {
      out.push_back(held_locals_[w * 64 + static_cast<size_t>(std::countr_zero(bits))]);
    }
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

bool IrModel::ReachedFromEverywhere(uint32_t object) const {
  const uint32_t bit = held_bit_[object];
  return bit != ~uint32_t{0} && (reached_everywhere_[bit / 64] >> (bit % 64) & 1) != 0;
}

}  // namespace sluice::analyzer
