// Allocation wrappers (docs/analyzer.md, "The memory model"): defined functions such as
// `xmalloc` or zlib's `zcalloc` that return fresh memory from an allocator, or null, and do
// nothing else with it. A call of one that allocates one struct, kept in a variable it is read
// through, is an allocation site of its own, with fields, named after the caller's line.
#include <algorithm>
#include <string_view>

#include "absl/container/flat_hash_set.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/Instructions.h"
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
// on entry (and that holds nothing else but constants: xmalloc's `if (size == 0) size = 1`;
// the size is then taken to be the parameter, which a call of one struct's size passes): its
// index, or -1.
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
    return *constant <= (uint64_t{1} << 32);  // (more is no struct's size, and may wrap)
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

// The bytes a call allocates where a callee allocates `constant` times its parameters of these
// indexes and the call passes constants for them; 0 otherwise.
uint64_t ConstantBytes(const llvm::CallBase& call, const std::vector<unsigned>& parameters,
                       uint64_t constant) {
  uint64_t bytes = constant;
  for (unsigned k : parameters) {
    const auto* count =
        k < call.arg_size() ? llvm::dyn_cast<llvm::ConstantInt>(call.getArgOperand(k)) : nullptr;
    if (count == nullptr || count->getValue().getActiveBits() > 32) return 0;
    bytes *= count->getZExtValue();
    if (bytes > (uint64_t{1} << 32)) return 0;
  }
  return bytes;
}

// What `function`'s returns return, followed back through casts, phis, selects and the
// variables it is kept in, to the calls it comes from: false where anything else is there (but
// null), or a call `allocation` does not take.
template <class IsAllocation>
bool ReturnedCalls(const llvm::Function& function, IsAllocation allocation,
                   std::vector<const llvm::CallBase*>* calls) {
  calls->clear();
  if (!function.getReturnType()->isPointerTy()) return false;
  absl::flat_hash_set<const llvm::Value*> seen;
  std::vector<const llvm::Value*> pending;
  for (const llvm::BasicBlock& block : function) {
    const auto* ret = llvm::dyn_cast<llvm::ReturnInst>(block.getTerminator());
    if (ret != nullptr && ret->getReturnValue() != nullptr) pending.push_back(ret->getReturnValue());
  }
  while (!pending.empty()) {
    const llvm::Value* value = pending.back();
    pending.pop_back();
    if (IsNull(value) || !seen.insert(value).second) continue;
    if (const auto* cast = llvm::dyn_cast<llvm::CastInst>(value)) {
      if (!llvm::isa<llvm::BitCastInst>(cast) && !llvm::isa<llvm::AddrSpaceCastInst>(cast)) {
        return false;
      }
      pending.push_back(cast->getOperand(0));
    } else if (const auto* phi = llvm::dyn_cast<llvm::PHINode>(value)) {
      for (const llvm::Value* incoming : phi->incoming_values()) pending.push_back(incoming);
    } else if (const auto* select = llvm::dyn_cast<llvm::SelectInst>(value)) {
      pending.push_back(select->getTrueValue());
      pending.push_back(select->getFalseValue());
    } else if (const auto* load = llvm::dyn_cast<llvm::LoadInst>(value)) {
      if (!IsPrivateSlot(load->getPointerOperand())) return false;
      for (const llvm::User* user : load->getPointerOperand()->users()) {
        if (const auto* store = llvm::dyn_cast<llvm::StoreInst>(user)) {
          pending.push_back(store->getValueOperand());
        }
      }
    } else if (const auto* call = llvm::dyn_cast<llvm::CallBase>(value)) {
      if (!allocation(*call)) return false;
      calls->push_back(call);
    } else {
      return false;  // a parameter, a global, a load from memory, arithmetic, ...
    }
  }
  return !calls->empty();
}

}  // namespace

// An allocation: a call of a library allocator of fresh memory (that is no taint source) or of
// wrappers only. `zeroed`: its memory comes zeroed.
bool IrModel::IsAllocation(const llvm::CallBase& call, bool* zeroed) const {
  const std::vector<const llvm::Function*>& callees = Callees(call);
  if (callees.empty()) {
    const std::string name = ExternalName(call);
    if (!AllocatesFresh(name) || sources_.contains(name)) return false;
    *zeroed = name == "calloc";
    return true;
  }
  *zeroed = true;
  for (const llvm::Function* callee : callees) {
    auto it = wrappers_.find(callee);
    if (it == wrappers_.end()) return false;
    *zeroed &= it->second.zeroed;
  }
  return true;
}

bool IrModel::WrapsAllocations(const llvm::Function& function, Wrapper* wrapper) const {
  wrapper->zeroed = true;
  const bool wraps = ReturnedCalls(
      function,
      [&](const llvm::CallBase& call) {
        bool zeroed = false;
        if (!IsAllocation(call, &zeroed)) return false;
        wrapper->zeroed &= zeroed;
        return true;
      },
      &wrapper->allocations);
  if (!wraps) return false;
  // Nothing else may reach what those allocations make: from each, through casts, phis,
  // selects and the variables it is kept in, it is only compared and returned.
  absl::flat_hash_set<const llvm::Value*> carriers(wrapper->allocations.begin(),
                                                   wrapper->allocations.end());
  std::vector<const llvm::Value*> pending(wrapper->allocations.begin(),
                                          wrapper->allocations.end());
  while (!pending.empty()) {
    const llvm::Value* value = pending.back();
    pending.pop_back();
    for (const llvm::User* user : value->users()) {
      if (llvm::isa<llvm::ICmpInst>(user) || llvm::isa<llvm::ReturnInst>(user)) continue;
      if (const auto* store = llvm::dyn_cast<llvm::StoreInst>(user)) {
        if (store->getValueOperand() != value || !IsPrivateSlot(store->getPointerOperand())) {
          return false;
        }
        for (const llvm::User* slot_user : store->getPointerOperand()->users()) {
          if (llvm::isa<llvm::LoadInst>(slot_user) && carriers.insert(slot_user).second) {
            pending.push_back(slot_user);
          }
        }
        continue;
      }
      const bool moves = llvm::isa<llvm::BitCastInst>(user) ||
                         llvm::isa<llvm::AddrSpaceCastInst>(user) ||
                         llvm::isa<llvm::PHINode>(user) || llvm::isa<llvm::SelectInst>(user);
      if (!moves) return false;  // read, written, stored elsewhere, passed on, ...
      if (carriers.insert(user).second) pending.push_back(user);
    }
  }
  wrapper->sized = SameSize(wrapper->allocations, &wrapper->size_parameters,
                            &wrapper->size_constant);
  return true;
}

bool IrModel::AllocationSize(const llvm::CallBase& call, std::vector<unsigned>* parameters,
                             uint64_t* constant) const {
  parameters->clear();
  *constant = 1;
  const std::vector<const llvm::Function*>& callees = Callees(call);
  if (callees.empty()) {
    const std::string name = ExternalName(call);
    const bool one = name == "malloc" || name == "_Znwm" || name == "_Znam";
    const bool two = name == "calloc";
    const bool resized = name == "realloc";  // (its size is its second argument)
    if (!one && !two && !resized) return false;
    const unsigned first = resized ? 1 : 0;
    return call.arg_size() > first + (two ? 1 : 0) &&
           Factors(call.getArgOperand(first), parameters, constant) &&
           (!two || Factors(call.getArgOperand(1), parameters, constant));
  }
  if (callees.size() != 1) return false;
  // The callee's size, in this function's parameters.
  const std::vector<unsigned>* inner_parameters = nullptr;
  if (auto it = wrappers_.find(callees[0]); it != wrappers_.end() && it->second.sized) {
    inner_parameters = &it->second.size_parameters;
    *constant = it->second.size_constant;
  } else if (auto at = allocating_.find(callees[0]); at != allocating_.end() && at->second.sized) {
    inner_parameters = &at->second.size_parameters;
    *constant = at->second.size_constant;
  } else {
    return false;
  }
  for (unsigned k : *inner_parameters) {
    if (k >= call.arg_size() || !Factors(call.getArgOperand(k), parameters, constant)) {
      return false;
    }
  }
  return true;
}

bool IrModel::SameSize(const std::vector<const llvm::CallBase*>& allocations,
                       std::vector<unsigned>* parameters, uint64_t* constant) const {
  std::vector<unsigned> each;
  uint64_t bytes = 1;
  for (size_t i = 0; i < allocations.size(); ++i) {
    if (!AllocationSize(*allocations[i], &each, &bytes)) return false;
    if (i > 0 && (each != *parameters || bytes != *constant)) return false;
    *parameters = each;
    *constant = bytes;
  }
  return !allocations.empty();
}

void IrModel::FindAllocationWrappers() {
  // The least fixed point: a function is a wrapper when what it returns comes from allocators
  // or from wrappers found before.
  Wrapper wrapper;
  for (bool grew = true; grew;) {
    grew = false;
    for (const llvm::Function* function : functions_) {
      // (A summarized function's calls are library calls.)
      if (wrappers_.contains(function) || summarized_.contains(function->getName().str()) ||
          !WrapsAllocations(*function, &wrapper)) {
        continue;
      }
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
  if (callees.size() != 1 || wrapped_allocations_.contains(&call)) return nullptr;
  auto it = wrappers_.find(callees[0]);
  if (it == wrappers_.end()) return nullptr;
  *zeroed = it->second.zeroed;
  return callees[0];
}

const llvm::Function* IrModel::WrapperSite(const llvm::CallBase& call, bool* zeroed) const {
  // (Of the calls to defined functions, only these have objects.)
  if (!object_of_site_.contains(&call)) return nullptr;
  return WrapperCall(call, zeroed);
}

uint64_t IrModel::WrapperCallBytes(const llvm::CallBase& call) const {
  bool zeroed = false;
  const llvm::Function* wrapper = WrapperCall(call, &zeroed);
  if (wrapper == nullptr) return 0;
  const Wrapper& sizes = wrappers_.at(wrapper);
  return sizes.sized ? ConstantBytes(call, sizes.size_parameters, sizes.size_constant) : 0;
}

bool IrModel::AllocatingCall(const llvm::CallBase& call) const {
  const std::vector<const llvm::Function*>& callees = Callees(call);
  return !callees.empty() && std::all_of(callees.begin(), callees.end(), [&](const auto* f) {
    return allocating_.contains(f);
  });
}

void IrModel::FindAllocatingFunctions() {
  // The least fixed point, as for wrappers: what each return gives comes from a library
  // allocator (a reallocation too: its memory is new, holding a copy) or from allocating
  // functions found before.
  // (A library allocation of a constant size may be a struct with fields and a last object of
  // its own, IrModel::HeapType: a constructor that returns it keeps that object.)
  const auto allocation = [&](const llvm::CallBase& call) {
    if (Callees(call).empty()) {
      const std::string name = ExternalName(call);
      return (AllocatesFresh(name) || name == "realloc" || name == "reallocarray") &&
             !sources_.contains(name) && AllocatorBytes(call, name) == 0;
    }
    return AllocatingCall(call);
  };
  // (One nothing calls, a library's entry, keeps its allocation's object: it has no calls to
  // stand for.)
  absl::flat_hash_set<const llvm::Function*> called;
  for (const auto& [call, callees] : callees_) called.insert(callees.begin(), callees.end());
  std::vector<const llvm::CallBase*> calls;
  for (bool grew = true; grew;) {
    grew = false;
    for (const llvm::Function* function : functions_) {
      if (!called.contains(function) || allocating_.contains(function) ||
          wrappers_.contains(function) ||
          summarized_.contains(function->getName().str()) ||
          !ReturnedCalls(*function, allocation, &calls)) {
        continue;
      }
      allocating_[function].allocations = calls;
      grew = true;
    }
  }
  for (const auto& [function, found] : allocating_) {
    for (const llvm::CallBase* call : found.allocations) returned_allocations_[call] = function;
  }
  // The parameters whose memory a reallocation copies: `realloc(block, n)` of a parameter, or
  // an allocating function's call given a parameter where that function copies one.
  for (bool grew = true; grew;) {
    grew = false;
    for (auto& [function, found] : allocating_) {
      for (const llvm::CallBase* call : found.allocations) {
        for (const llvm::Value* source : CopiedBy(*call)) {
          const int index = ParameterIndex(source->stripPointerCasts());
          if (index < 0) continue;
          std::vector<unsigned>& copied = found.copied_parameters;
          if (std::find(copied.begin(), copied.end(), unsigned(index)) == copied.end()) {
            copied.push_back(static_cast<unsigned>(index));
            grew = true;
          }
        }
      }
    }
  }
  // Their sizes, as wrappers' are: each found once what it calls is.
  for (bool grew = true; grew;) {
    grew = false;
    for (auto& [function, found] : allocating_) {
      if (found.sized) continue;
      found.sized = SameSize(found.allocations, &found.size_parameters, &found.size_constant);
      grew |= found.sized;
    }
  }
}

uint64_t IrModel::AllocatingCallBytes(const llvm::CallBase& call) const {
  const std::vector<const llvm::Function*>& callees = Callees(call);
  if (callees.size() != 1) return 0;
  auto it = allocating_.find(callees[0]);
  if (it == allocating_.end() || !it->second.sized) return 0;
  return ConstantBytes(call, it->second.size_parameters, it->second.size_constant);
}

std::vector<const llvm::Value*> IrModel::CopiedBy(const llvm::CallBase& call) const {
  std::vector<const llvm::Value*> out;
  const std::vector<const llvm::Function*>& callees = Callees(call);
  if (callees.empty()) {
    const std::string name = ExternalName(call);
    if ((name == "realloc" || name == "reallocarray") && call.arg_size() > 0 &&
        !IsNull(call.getArgOperand(0)->stripPointerCasts())) {
      out.push_back(call.getArgOperand(0));
    }
    return out;
  }
  for (const llvm::Function* callee : callees) {
    auto it = allocating_.find(callee);
    if (it == allocating_.end()) continue;
    for (unsigned k : it->second.copied_parameters) {
      if (k < call.arg_size() && !IsNull(call.getArgOperand(k)->stripPointerCasts())) {
        out.push_back(call.getArgOperand(k));
      }
    }
  }
  return out;
}

bool IrModel::CopiesParameter(const llvm::CallBase& call, const llvm::Value* source) const {
  return returned_allocations_.contains(&call) &&
         ParameterIndex(source->stripPointerCasts()) >= 0;
}

void IrModel::ComputeClones() {
  if (allocating_.empty()) return;
  // Each allocating function's calls, and whether each is returned by its own function.
  absl::flat_hash_map<const llvm::Function*, std::vector<const llvm::CallBase*>> calls_of;
  for (const auto& [call, callees] : callees_) {
    for (const llvm::Function* callee : callees) {
      if (allocating_.contains(callee)) calls_of[callee].push_back(call);
    }
  }
  absl::flat_hash_set<const llvm::Function*> visiting;
  const auto clones = [&](const auto& self, const llvm::Function* function) -> void {
    if (clones_.contains(function) || !visiting.insert(function).second) return;
    std::vector<uint32_t> out;
    for (const llvm::CallBase* call : calls_of[function]) {
      if (auto site = object_of_site_.find(call); site != object_of_site_.end()) {
        out.push_back(site->second);
      } else if (auto returned = returned_allocations_.find(call);
                 returned != returned_allocations_.end()) {
        self(self, returned->second);
        auto it = clones_.find(returned->second);
        if (it != clones_.end()) out.insert(out.end(), it->second.begin(), it->second.end());
      }
    }
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    clones_[function] = std::move(out);
    visiting.erase(function);
  };
  for (const auto& [function, found] : allocating_) clones(clones, function);
}

const std::vector<uint32_t>* IrModel::ObjectsOfAllocation(const llvm::CallBase& call) const {
  auto returned = returned_allocations_.find(&call);
  if (returned == returned_allocations_.end()) return nullptr;
  auto it = clones_.find(returned->second);
  return it != clones_.end() ? &it->second : nullptr;
}

}  // namespace sluice::analyzer
