// Allocation wrappers (docs/analyzer.md, "The memory model"): defined functions such as
// `xmalloc` or zlib's `zcalloc` that return fresh memory from an allocator, or null, and do
// nothing else with it. A call of one that allocates one struct, kept in a variable it is read
// through, is an allocation site of its own, with fields, named after the caller's line.
#include <algorithm>

#include "llvm/IR/Constants.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/IntrinsicInst.h"
#include "sluice/analyzer/ir_model.h"
#include "sluice/analyzer/ir_model_internal.h"

namespace sluice::analyzer {

namespace {

// Allocators whose memory is fresh (not a copy of an argument's, as realloc's and strdup's is).
bool AllocatesFresh(std::string_view name) {
  return name == "malloc" || name == "calloc" || name == "aligned_alloc" || name == "valloc" ||
         name == "memalign" || name == "_Znwm" || name == "_Znam";
}

bool IsNull(const llvm::Value* value) {
  return llvm::isa<llvm::ConstantPointerNull>(value) || llvm::isa<llvm::UndefValue>(value);
}

// A variable (an alloca) that is only loaded from and stored to: it holds values, as a
// register does, and nothing else can reach what it holds.
bool IsPrivateSlot(const llvm::Value* value) {
  const auto* slot = llvm::dyn_cast<llvm::AllocaInst>(value);
  if (slot == nullptr || slot->isArrayAllocation()) return false;
  for (const llvm::User* user : slot->users()) {
    if (const auto* load = llvm::dyn_cast<llvm::LoadInst>(user)) {
      if (load->getPointerOperand() != slot) return false;
    } else if (const auto* store = llvm::dyn_cast<llvm::StoreInst>(user)) {
      if (store->getPointerOperand() != slot || store->getValueOperand() == slot) return false;
    } else {
      return false;
    }
  }
  return true;
}

// The parameter an integer value is, directly or loaded from the variable it was stored into
// on entry (and that holds nothing else but constants, as xmalloc's `if (size == 0) size = 1`
// stores: a count of one struct's size is the parameter): its index, or -1.
int ParameterIndex(const llvm::Value* value) {
  if (const auto* argument = llvm::dyn_cast<llvm::Argument>(value)) {
    return static_cast<int>(argument->getArgNo());
  }
  const auto* load = llvm::dyn_cast<llvm::LoadInst>(value);
  const auto* slot =
      load != nullptr ? llvm::dyn_cast<llvm::AllocaInst>(load->getPointerOperand()) : nullptr;
  if (slot == nullptr) return -1;
  const llvm::Argument* stored = nullptr;
  for (const llvm::User* user : slot->users()) {
    if (const auto* other = llvm::dyn_cast<llvm::LoadInst>(user);
        other != nullptr && other->getPointerOperand() == slot) {
      continue;
    }
    const auto* store = llvm::dyn_cast<llvm::StoreInst>(user);
    if (store == nullptr || store->getPointerOperand() != slot) return -1;
    if (llvm::isa<llvm::ConstantInt>(store->getValueOperand())) continue;
    if (stored != nullptr) return -1;
    stored = llvm::dyn_cast<llvm::Argument>(store->getValueOperand());
    if (stored == nullptr || store->getParent() != &store->getFunction()->getEntryBlock()) {
      return -1;
    }
  }
  return stored != nullptr ? static_cast<int>(stored->getArgNo()) : -1;
}

// A byte count as a product of parameters (their indexes, sorted) and a constant, through
// integer casts and multiplications; false where it is anything else.
bool Factors(const llvm::Value* value, std::vector<unsigned>* parameters, uint64_t* constant) {
  if (const auto* cast = llvm::dyn_cast<llvm::CastInst>(value);
      cast != nullptr && cast->isIntegerCast()) {
    // (A truncation may change the count: only widening casts keep it.)
    if (llvm::isa<llvm::TruncInst>(cast)) return false;
    return Factors(cast->getOperand(0), parameters, constant);
  }
  if (const auto* number = llvm::dyn_cast<llvm::ConstantInt>(value)) {
    if (number->getValue().getActiveBits() > 32) return false;
    *constant *= number->getZExtValue();
    return true;
  }
  if (const auto* product = llvm::dyn_cast<llvm::BinaryOperator>(value);
      product != nullptr && product->getOpcode() == llvm::Instruction::Mul) {
    return Factors(product->getOperand(0), parameters, constant) &&
           Factors(product->getOperand(1), parameters, constant);
  }
  const int index = ParameterIndex(value);
  if (index < 0) return false;
  parameters->insert(std::upper_bound(parameters->begin(), parameters->end(), unsigned(index)),
                     static_cast<unsigned>(index));
  return true;
}

}  // namespace

bool IrModel::WrapsAllocations(const llvm::Function& function, Wrapper* wrapper) const {
  if (!function.getReturnType()->isPointerTy()) return false;
  std::vector<const llvm::CallBase*>* allocations = &wrapper->allocations;
  bool* zeroed = &wrapper->zeroed;
  allocations->clear();
  *zeroed = true;
  // The size every allocation has, as parameters of the function: unknown (sized = false) as
  // soon as one has another.
  bool sized = true, first = true;
  const auto size = [&](std::vector<unsigned> parameters, uint64_t constant, bool known) {
    if (!known || (!first && (parameters != wrapper->size_parameters ||
                              constant != wrapper->size_constant))) {
      sized = false;
    }
    first = false;
    wrapper->size_parameters = std::move(parameters);
    wrapper->size_constant = constant;
  };
  // What carries an allocation's result: the calls themselves, then casts, phis, selects and
  // loads of the variables they are kept in.
  absl::flat_hash_set<const llvm::Value*> carriers;
  std::vector<const llvm::Value*> pending;
  std::vector<const llvm::Value*> joins;  // phis and selects: everything they join must carry
  std::vector<const llvm::AllocaInst*> slots;
  for (const llvm::BasicBlock& block : function) {
    for (const llvm::Instruction& instruction : block) {
      const auto* call = llvm::dyn_cast<llvm::CallBase>(&instruction);
      if (call == nullptr) continue;
      const std::vector<const llvm::Function*>& callees = Callees(*call);
      bool is_zeroed = false;
      if (callees.empty()) {
        const std::string name = ExternalName(*call);
        if (!AllocatesFresh(name)) continue;
        is_zeroed = name == "calloc";
        std::vector<unsigned> parameters;
        uint64_t constant = 1;
        const bool one = name == "malloc" || name == "_Znwm" || name == "_Znam";
        const bool known =
            call->arg_size() >= 1 && (one || (is_zeroed && call->arg_size() >= 2)) &&
            Factors(call->getArgOperand(0), &parameters, &constant) &&
            (one || Factors(call->getArgOperand(1), &parameters, &constant));
        size(std::move(parameters), constant, known);
      } else {
        const auto wraps = [this](const llvm::Function* f) { return wrappers_.contains(f); };
        if (!std::all_of(callees.begin(), callees.end(), wraps)) continue;
        is_zeroed = true;
        for (const llvm::Function* callee : callees) is_zeroed &= wrappers_.at(callee).zeroed;
        // The callee's size, in this function's parameters (one callee: an indirect call's
        // several may differ).
        const Wrapper& inner = wrappers_.at(callees[0]);
        std::vector<unsigned> parameters;
        uint64_t constant = inner.size_constant;
        bool known = callees.size() == 1 && inner.sized;
        for (unsigned k : inner.size_parameters) {
          known = known && k < call->arg_size() &&
                  Factors(call->getArgOperand(k), &parameters, &constant);
        }
        size(std::move(parameters), constant, known);
      }
      allocations->push_back(call);
      *zeroed &= is_zeroed;
      carriers.insert(call);
      pending.push_back(call);
    }
  }
  if (allocations->empty()) return false;
  bool returned = false;
  while (!pending.empty()) {
    const llvm::Value* value = pending.back();
    pending.pop_back();
    for (const llvm::User* user : value->users()) {
      if (llvm::isa<llvm::ICmpInst>(user)) continue;
      if (llvm::isa<llvm::ReturnInst>(user)) {
        returned = true;
        continue;
      }
      if (const auto* store = llvm::dyn_cast<llvm::StoreInst>(user)) {
        if (store->getValueOperand() != value || !IsPrivateSlot(store->getPointerOperand())) {
          return false;
        }
        const auto* slot = llvm::cast<llvm::AllocaInst>(store->getPointerOperand());
        if (std::find(slots.begin(), slots.end(), slot) != slots.end()) continue;
        slots.push_back(slot);
        for (const llvm::User* slot_user : slot->users()) {
          if (llvm::isa<llvm::LoadInst>(slot_user) && carriers.insert(slot_user).second) {
            pending.push_back(slot_user);
          }
        }
        continue;
      }
      const auto* cast = llvm::dyn_cast<llvm::CastInst>(user);
      const bool moves = (cast != nullptr && (llvm::isa<llvm::BitCastInst>(cast) ||
                                              llvm::isa<llvm::AddrSpaceCastInst>(cast))) ||
                         llvm::isa<llvm::PHINode>(user) || llvm::isa<llvm::SelectInst>(user);
      if (!moves) return false;  // read, written, stored elsewhere, passed on, compared by value
      if (carriers.insert(user).second) {
        pending.push_back(user);
        if (!llvm::isa<llvm::CastInst>(user)) joins.push_back(user);
      }
    }
  }
  if (!returned) return false;
  const auto carries = [&carriers](const llvm::Value* value) {
    return IsNull(value) || carriers.contains(value);
  };
  // Nothing else comes out: what the variables hold, what the phis and selects join and what
  // every return returns is an allocation's result or null.
  for (const llvm::AllocaInst* slot : slots) {
    for (const llvm::User* user : slot->users()) {
      const auto* store = llvm::dyn_cast<llvm::StoreInst>(user);
      if (store != nullptr && !carries(store->getValueOperand())) return false;
    }
  }
  for (const llvm::Value* join : joins) {
    if (const auto* select = llvm::dyn_cast<llvm::SelectInst>(join)) {
      if (!carries(select->getTrueValue()) || !carries(select->getFalseValue())) return false;
    } else {
      for (const llvm::Value* incoming : llvm::cast<llvm::PHINode>(join)->incoming_values()) {
        if (!carries(incoming)) return false;
      }
    }
  }
  for (const llvm::BasicBlock& block : function) {
    const auto* ret = llvm::dyn_cast<llvm::ReturnInst>(block.getTerminator());
    if (ret != nullptr && ret->getReturnValue() != nullptr && !carries(ret->getReturnValue())) {
      return false;
    }
  }
  wrapper->sized = sized;
  return true;
}

void IrModel::FindAllocationWrappers() {
  // The least fixed point: a function is a wrapper when what it returns comes from allocators
  // or from wrappers found before.
  Wrapper wrapper;
  for (bool grew = true; grew;) {
    grew = false;
    for (const llvm::Function* function : functions_) {
      if (wrappers_.contains(function) || !WrapsAllocations(*function, &wrapper)) continue;
      wrappers_[function] = wrapper;
      grew = true;
    }
  }
  for (const auto& [function, found] : wrappers_) {
    for (const llvm::CallBase* call : found.allocations) wrapped_allocations_.insert(call);
  }
}

const llvm::Function* IrModel::WrapperCall(const llvm::CallBase& call, bool* zeroed) const {
  const std::vector<const llvm::Function*>& callees = Callees(call);
  if (callees.empty() || wrapped_allocations_.contains(&call)) return nullptr;
  *zeroed = true;
  for (const llvm::Function* callee : callees) {
    auto it = wrappers_.find(callee);
    if (it == wrappers_.end()) return nullptr;
    *zeroed &= it->second.zeroed;
  }
  return callees[0];
}

}  // namespace sluice::analyzer

namespace sluice::analyzer {

const llvm::Function* IrModel::WrapperSite(const llvm::CallBase& call, bool* zeroed) const {
  // (Of the calls to defined functions, only these have objects.)
  if (!object_of_site_.contains(&call)) return nullptr;
  return WrapperCall(call, zeroed);
}

uint64_t IrModel::WrapperCallBytes(const llvm::CallBase& call) const {
  bool zeroed = false;
  const llvm::Function* wrapper = WrapperCall(call, &zeroed);
  if (wrapper == nullptr || Callees(call).size() != 1) return 0;
  const Wrapper& sizes = wrappers_.at(wrapper);
  if (!sizes.sized) return 0;
  uint64_t bytes = sizes.size_constant;
  for (unsigned k : sizes.size_parameters) {
    const auto* count =
        k < call.arg_size() ? llvm::dyn_cast<llvm::ConstantInt>(call.getArgOperand(k)) : nullptr;
    if (count == nullptr || count->getValue().getActiveBits() > 32) return 0;
    bytes *= count->getZExtValue();
    if (bytes > (uint64_t{1} << 32)) return 0;
  }
  return bytes;
}

}  // namespace sluice::analyzer
