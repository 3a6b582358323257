// Where a local's address first leaves its function's hands (IrModel::Unescaped): until then
// nothing but the function's own loads and stores can reach the local, whatever the
// flow-insensitive points-to sets say of later.
#include <algorithm>

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

}  // namespace sluice::analyzer
