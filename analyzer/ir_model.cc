#include "sluice/analyzer/ir_model.h"

#include <algorithm>
#include <filesystem>

#include "absl/strings/str_format.h"
#include "llvm/BinaryFormat/Dwarf.h"
#include "llvm/Demangle/Demangle.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/DebugInfoMetadata.h"
#include "llvm/IR/GetElementPtrTypeIterator.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/IntrinsicInst.h"
#include "llvm/IR/Operator.h"
#include "sluice/analyzer/ir_model_internal.h"

namespace sluice::analyzer {

using internal::IsAllocator;
using internal::kMaxLeavesPerObject;
using internal::kMaxStructDepth;
using internal::ObjectOf;
using internal::ReturnsFirstArgument;

namespace {

const llvm::DIType* StripTypedefs(const llvm::DIType* type) {
  while (const auto* derived = llvm::dyn_cast_or_null<llvm::DIDerivedType>(type)) {
    const unsigned tag = derived->getTag();
    if (tag != llvm::dwarf::DW_TAG_typedef && tag != llvm::dwarf::DW_TAG_const_type &&
        tag != llvm::dwarf::DW_TAG_volatile_type && tag != llvm::dwarf::DW_TAG_restrict_type &&
        tag != llvm::dwarf::DW_TAG_atomic_type) {
      break;
    }
    type = derived->getBaseType();
  }
  return type;
}

// The member of a struct's debug type at a byte offset.
const llvm::DIDerivedType* MemberAt(const llvm::DIType* type, uint64_t byte_offset) {
  const auto* composite = llvm::dyn_cast_or_null<llvm::DICompositeType>(StripTypedefs(type));
  if (composite == nullptr) return nullptr;
  for (const llvm::DINode* element : composite->getElements()) {
    const auto* member = llvm::dyn_cast_or_null<llvm::DIDerivedType>(element);
    if (member != nullptr && member->getTag() == llvm::dwarf::DW_TAG_member &&
        member->getOffsetInBits() == byte_offset * 8 && !member->isBitField()) {
      return member;
    }
  }
  return nullptr;
}

// Whether `structure`'s element `i` is the tail padding Clang gives a field of its own (an
// array of bytes ending a packed struct, as a class whose padding a derived class may reuse
// has): no member of `type`, the struct's debug type, nor a base class, has a byte of it.
bool TailPadding(const llvm::StructType& structure, unsigned i, uint64_t byte_offset,
                 uint64_t size, const llvm::DIType* type) {
  const auto* composite = llvm::dyn_cast_or_null<llvm::DICompositeType>(StripTypedefs(type));
  const auto* bytes = llvm::dyn_cast<llvm::ArrayType>(structure.getElementType(i));
  if (composite == nullptr || !structure.isPacked() || i + 1 != structure.getNumElements() ||
      bytes == nullptr || !bytes->getElementType()->isIntegerTy(8)) {
    return false;
  }
  for (const llvm::DINode* element : composite->getElements()) {
    const auto* member = llvm::dyn_cast_or_null<llvm::DIDerivedType>(element);
    if (member == nullptr || member->isStaticMember() ||
        (member->getTag() != llvm::dwarf::DW_TAG_member &&
         member->getTag() != llvm::dwarf::DW_TAG_inheritance)) {
      continue;
    }
    uint64_t bits = member->getSizeInBits();
    if (bits == 0 && member->getBaseType() != nullptr) {
      bits = member->getBaseType()->getSizeInBits();
    }
    const uint64_t begin = member->getOffsetInBits();
    if (bits == 0 || (begin < (byte_offset + size) * 8 && byte_offset * 8 < begin + bits)) {
      return false;  // a member of a size not known may have those bytes
    }
  }
  return true;
}

// The bytes of a value of `type` at `offset` that hold a value, appended to `data` in order:
// a scalar's, and those of a struct's fields and an array's elements, past padding.
void DataBytes(llvm::Type* type, const llvm::DIType* di_type, uint64_t offset,
               const llvm::DataLayout& layout, int depth,
               std::vector<std::pair<uint64_t, uint64_t>>* data) {
  auto* structure = llvm::dyn_cast<llvm::StructType>(type);
  if (structure != nullptr && !structure->isOpaque() && depth < kMaxStructDepth) {
    const llvm::StructLayout* fields = layout.getStructLayout(structure);
    for (unsigned i = 0; i < structure->getNumElements(); ++i) {
      llvm::Type* field = structure->getElementType(i);
      const uint64_t at = fields->getElementOffset(i);
      if (TailPadding(*structure, i, at, layout.getTypeAllocSize(field).getFixedSize(),
                      di_type)) {
        continue;
      }
      const llvm::DIDerivedType* member = MemberAt(di_type, at);
      DataBytes(field, member != nullptr ? member->getBaseType() : nullptr, offset + at, layout,
                depth + 1, data);
    }
    return;
  }
  auto* array = llvm::dyn_cast<llvm::ArrayType>(type);
  if (array != nullptr && depth < kMaxStructDepth) {
    const auto* composite = llvm::dyn_cast_or_null<llvm::DICompositeType>(StripTypedefs(di_type));
    const llvm::DIType* element =
        composite != nullptr && composite->getTag() == llvm::dwarf::DW_TAG_array_type
            ? composite->getBaseType()
            : nullptr;
    const uint64_t stride = layout.getTypeAllocSize(array->getElementType()).getFixedSize();
    for (uint64_t k = 0; k < array->getNumElements(); ++k) {
      DataBytes(array->getElementType(), element, offset + k * stride, layout, depth + 1, data);
    }
    return;
  }
  const uint64_t size = type->isSized() ? layout.getTypeStoreSize(type).getFixedSize() : 0;
  if (size > 0) data->emplace_back(offset, offset + size);
}

std::string SiteName(const llvm::Instruction& instruction, std::string_view prefix) {
  const llvm::DILocation* location = instruction.getDebugLoc().get();
  if (location == nullptr) {
    return absl::StrFormat("%s@%s", prefix, instruction.getFunction()->getName().str());
  }
  return absl::StrFormat("%s@%s:%d", prefix,
                         std::filesystem::path(location->getFilename().str()).filename().string(),
                         location->getLine());
}

}  // namespace

std::string DisplayName(const llvm::Function& function) {
  if (const llvm::DISubprogram* program = function.getSubprogram()) {
    if (!program->getName().empty()) return program->getName().str();
  }
  return function.getName().str();
}

std::string WithoutTemplateArguments(std::string_view name) {
  // An operator's own brackets ("operator>>", "operator<=>") are its name's.
  static constexpr std::string_view kOperators[] = {
      "<<=", ">>=", "<=>", "->*", "<<", ">>", "<=", ">=", "->", "<", ">"};
  std::string out;
  int depth = 0;
  for (size_t i = 0; i < name.size(); ++i) {
    if (depth == 0 && name.substr(i).starts_with("operator") &&
        (i == 0 || name[i - 1] == ':' || name[i - 1] == ' ')) {
      out += "operator";
      i += 8;
      for (const std::string_view op : kOperators) {
        if (name.substr(i).starts_with(op)) {
          out += op;
          i += op.size();
          break;
        }
      }
      if (i >= name.size()) break;
    }
    const char c = name[i];
    if (c == '<') ++depth;
    if (depth == 0) out += c;
    if (c == '>' && depth > 0) --depth;
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

std::string Demangled(const std::string& symbol) {
  // A name the demangler does not take comes back as it went in.
  return symbol.rfind("_Z", 0) == 0 ? llvm::demangle(symbol) : symbol;
}

std::string QualifiedName(const llvm::Function& function) {
  const std::string linkage = function.getName().str();
  if (std::string demangled = Demangled(linkage); demangled != linkage) return demangled;
  return DisplayName(function);
}

namespace {

// The parameters of a demangled parameter list ("(char const*, std::allocator<char> const&)"),
// split at its commas outside brackets.
std::vector<std::string_view> Parameters(std::string_view list) {
  std::vector<std::string_view> out;
  if (list.size() <= 2 || list.front() != '(' || list.back() != ')') return out;
  list = list.substr(1, list.size() - 2);
  int depth = 0;
  size_t begin = 0;
  for (size_t i = 0; i <= list.size(); ++i) {
    const char c = i < list.size() ? list[i] : ',';
    if (c == '<' || c == '(' || c == '[') ++depth;
    if (c == '>' || c == ')' || c == ']') --depth;
    if (c == ',' && depth == 0) {
      std::string_view parameter = list.substr(begin, i - begin);
      while (!parameter.empty() && parameter.front() == ' ') parameter.remove_prefix(1);
      out.push_back(parameter);
      begin = i + 1;
    }
  }
  return out;
}

// Whether a demangled parameter is a reference to something the callee may change ("std::ostream&",
// "char const*&"), not to a constant ("std::string const&") nor an rvalue ("T&&").
bool WritableReference(std::string_view parameter) {
  if (!parameter.ends_with("&") || parameter.ends_with("&&")) return false;
  parameter.remove_suffix(1);
  return !parameter.ends_with(" const") && !parameter.ends_with(" const volatile");
}

// Whether a mangled member function's object is const: "_ZNK...", its qualifiers (restrict,
// volatile, const) right after the N.
bool ConstMember(std::string_view symbol) {
  if (!symbol.starts_with("_ZN")) return false;
  for (size_t i = 3; i < symbol.size() && (symbol[i] == 'r' || symbol[i] == 'V' ||
                                          symbol[i] == 'K');
       ++i) {
    if (symbol[i] == 'K') return true;
  }
  return false;
}

// A demangler's string of `symbol` (getFunctionBaseName and the like), owned.
template <typename Get>
std::string DemanglerString(llvm::ItaniumPartialDemangler& demangler, Get get) {
  size_t size = 0;
  char* text = (demangler.*get)(nullptr, &size);
  if (text == nullptr) return "";
  std::string out(text);
  std::free(text);
  return out;
}

// A library function's name in the name of what it returns: C's as it is, C++'s qualified
// without its parameters or template arguments ("std::__cxx11::basic_string::c_str").
std::string ShortName(const std::string& symbol) {
  llvm::ItaniumPartialDemangler demangler;
  if (symbol.rfind("_Z", 0) != 0 || demangler.partialDemangle(symbol.c_str()) ||
      !demangler.isFunction()) {
    return symbol;
  }
  const std::string name =
      DemanglerString(demangler, &llvm::ItaniumPartialDemangler::getFunctionName);
  return name.empty() ? symbol : WithoutTemplateArguments(name);
}

}  // namespace

std::optional<IrModel::CxxCall> IrModel::CxxCallOf(const llvm::CallBase& call) const {
  const auto* function =
      llvm::dyn_cast<llvm::Function>(call.getCalledOperand()->stripPointerCasts());
  if (function == nullptr || !function->getName().startswith("_Z")) return std::nullopt;
  const std::string symbol = function->getName().str();
  llvm::ItaniumPartialDemangler demangler;
  if (demangler.partialDemangle(symbol.c_str()) || !demangler.isFunction()) return std::nullopt;
  CxxCall cxx;
  // The result's memory comes first where there is one (the Itanium ABI's order).
  cxx.sret = call.arg_size() > 0 && call.paramHasAttr(0, llvm::Attribute::StructRet);
  const std::string base =
      DemanglerString(demangler, &llvm::ItaniumPartialDemangler::getFunctionBaseName);
  cxx.destructor = !base.empty() && base[0] == '~';
  cxx.constructor = demangler.isCtorOrDtor() && !cxx.destructor;
  const std::string list =
      DemanglerString(demangler, &llvm::ItaniumPartialDemangler::getFunctionParameters);
  for (const std::string_view parameter : Parameters(list)) cxx.parameters.emplace_back(parameter);
  const size_t arguments = call.arg_size() - (cxx.sret ? 1 : 0);
  cxx.member =
      demangler.isCtorOrDtor() ||
      (arguments == cxx.parameters.size() + 1 &&
       class_names_.contains(WithoutTemplateArguments(DemanglerString(
           demangler, &llvm::ItaniumPartialDemangler::getFunctionDeclContextName))));
  cxx.const_member = cxx.member && ConstMember(symbol);
  cxx.one_each = arguments == cxx.parameters.size() + (cxx.member ? 1 : 0);
  const unsigned object = cxx.sret ? 1 : 0;
  if (cxx.member && (object >= call.arg_size() ||
                     !call.getArgOperand(object)->getType()->isPointerTy())) {
    cxx.member = false;
    cxx.one_each = false;
  }
  return cxx;
}

std::optional<unsigned> IrModel::ReturnedArgument(const llvm::CallBase& call) const {
  if (call.arg_size() == 0 || !call.getType()->isPointerTy()) return std::nullopt;
  if (ReturnsFirstArgument(ExternalName(call))) return 0;
  const std::optional<CxxCall> cxx = CxxCallOf(call);
  if (!cxx.has_value()) return std::nullopt;
  // A member's pointer or reference is into its object (c_str, data, operator[], append's
  // *this); a free function's reference of its first argument's type is that argument (a
  // stream's operator<< and >>).
  if (cxx->member) return cxx->object();
  if (call.hasRetAttr(llvm::Attribute::Dereferenceable) &&
      call.getArgOperand(0)->getType() == call.getType()) {
    return 0;
  }
  return std::nullopt;
}

std::vector<unsigned> IrModel::CxxOutputs(const llvm::CallBase& call) const {
  std::vector<unsigned> outputs;
  const std::optional<CxxCall> cxx = CxxCallOf(call);
  if (!cxx.has_value() || cxx->destructor) return outputs;  // a destructor takes nothing in
  if (cxx->sret) outputs.push_back(0);
  if (cxx->member && !cxx->const_member) outputs.push_back(cxx->object());
  // And what it is given by reference to change, where each argument is a parameter's.
  if (!cxx->one_each) return outputs;
  const unsigned first = cxx->object() + (cxx->member ? 1 : 0);
  for (size_t p = 0; p < cxx->parameters.size(); ++p) {
    if (WritableReference(cxx->parameters[p])) {
      outputs.push_back(first + static_cast<unsigned>(p));
    }
  }
  return outputs;
}

IrModel::IrModel(const llvm::Module& module, const absl::flat_hash_set<std::string>& summarized,
                 const absl::flat_hash_set<std::string>& sources)
    : module_(module), layout_(module.getDataLayout()), summarized_(summarized),
      sources_(sources) {
  for (const llvm::StructType* type : module.getIdentifiedStructTypes()) {
    std::string_view name(type->getName().data(), type->getName().size());
    if (!name.starts_with("class.") && !name.starts_with("struct.")) continue;
    name.remove_prefix(name.find('.') + 1);
    // Types of one name are told apart by a suffix: "class.std::vector.0".
    if (const size_t dot = name.rfind('.'); dot != std::string_view::npos &&
                                            dot + 1 < name.size() &&
                                            name.find_first_not_of("0123456789", dot + 1) ==
                                                std::string_view::npos) {
      name = name.substr(0, dot);
    }
    class_names_.insert(WithoutTemplateArguments(name));
  }
  for (const llvm::Function& function : module) {
    if (!function.isDeclaration()) functions_.push_back(&function);
  }
  BuildCallGraph();
  FindAllocationWrappers();
  FindAllocatingFunctions();
  BuildObjects();
  ComputeClones();
  SolvePointsTo();
  ComputeAccesses();
  // Callees first, so each call's callee is summarized before its caller (but in recursion).
  for (const llvm::Function* function : callees_first_) ComputeWrittenFirst(*function);
  ComputeRecency();
  ComputeEscapes();
  for (const llvm::Function* function : functions_) ComputeArrayFills(*function);
}

void IrModel::BuildCallGraph() {
  // Indirect calls reach the defined functions of their type whose address is taken.
  absl::flat_hash_map<const llvm::FunctionType*, std::vector<const llvm::Function*>> by_type;
  for (const llvm::Function* function : functions_) {
    if (function->hasAddressTaken()) by_type[function->getFunctionType()].push_back(function);
  }
  absl::flat_hash_set<const llvm::Function*> externals;
  for (const llvm::Function* function : functions_) {
    for (const llvm::BasicBlock& block : *function) {
      for (const llvm::Instruction& instruction : block) {
        const auto* call = llvm::dyn_cast<llvm::CallBase>(&instruction);
        if (call == nullptr || call->isInlineAsm()) continue;
        const llvm::Value* called = call->getCalledOperand()->stripPointerCasts();
        std::vector<const llvm::Function*>& callees = callees_[call];
        if (const auto* direct = llvm::dyn_cast<llvm::Function>(called)) {
          if (!direct->isDeclaration() && !summarized_.contains(direct->getName().str())) {
            callees.push_back(direct);
          } else if (!direct->isIntrinsic()) {
            externals.insert(direct);
          }
          continue;
        }
        ++indirect_calls_;
        auto it = by_type.find(call->getFunctionType());
        if (it == by_type.end()) continue;
        for (const llvm::Function* callee : it->second) {
          if (!summarized_.contains(callee->getName().str())) callees.push_back(callee);
        }
      }
    }
  }
  external_functions_ = static_cast<uint32_t>(externals.size());
}

const std::vector<const llvm::Function*>& IrModel::Callees(const llvm::CallBase& call) const {
  static const std::vector<const llvm::Function*> kNone;
  auto it = callees_.find(&call);
  return it == callees_.end() ? kNone : it->second;
}

std::string IrModel::ExternalName(const llvm::CallBase& call) const {
  const auto* function =
      llvm::dyn_cast<llvm::Function>(call.getCalledOperand()->stripPointerCasts());
  if (function == nullptr) return "";
  switch (function->getIntrinsicID()) {
    case llvm::Intrinsic::memcpy:
    case llvm::Intrinsic::memcpy_inline:
      return "memcpy";
    case llvm::Intrinsic::memmove:
      return "memmove";
    case llvm::Intrinsic::memset:
      return "memset";
    default:
      return function->getName().str();
  }
}

void IrModel::Flatten(llvm::Type* type, uint64_t offset, const std::string& name,
                      const std::string& label, const llvm::DIType* di_type, uint32_t object,
                      int depth) {
  auto* structure = llvm::dyn_cast<llvm::StructType>(type);
  if (structure != nullptr && !structure->isOpaque() && structure->getNumElements() > 0 &&
      depth < kMaxStructDepth) {
    const llvm::StructLayout* layout = layout_.getStructLayout(structure);
    for (unsigned i = 0; i < structure->getNumElements(); ++i) {
      const uint64_t field_offset = layout->getElementOffset(i);
      // Padding holds no value: no location (a copy of the struct copies none).
      if (TailPadding(*structure, i, field_offset,
                      layout_.getTypeAllocSize(structure->getElementType(i)).getFixedSize(),
                      di_type)) {
        continue;
      }
      const llvm::DIDerivedType* member = MemberAt(di_type, field_offset);
      const bool named = member != nullptr && !member->getName().empty();
      const std::string field = named ? member->getName().str() : absl::StrFormat("field%d", i);
      Flatten(structure->getElementType(i), offset + field_offset, name + "." + field,
              named ? label + "." + field : label,
              member != nullptr ? member->getBaseType() : nullptr, object, depth + 1);
    }
    return;
  }
  Leaf leaf;
  leaf.object = object;
  leaf.offset = offset;
  leaf.size = type->isSized() ? layout_.getTypeAllocSize(type).getFixedSize() : kToEnd;
  leaf.array = type->isArrayTy() || type->isVectorTy();
  // An array of structs: the bytes between the data of its elements.
  if (auto* array = llvm::dyn_cast<llvm::ArrayType>(type);
      array != nullptr && array->getElementType()->isStructTy() &&
      array->getNumElements() <= Leaf::kMaxPaddedElements) {
    std::vector<std::pair<uint64_t, uint64_t>> data;
    DataBytes(type, di_type, offset, layout_, depth, &data);
    uint64_t at = offset;
    for (const auto& [begin, end] : data) {
      if (begin > at) leaf.padding.emplace_back(at, begin);
      at = std::max(at, end);
    }
    if (leaf.size != kToEnd && at < offset + leaf.size) {
      leaf.padding.emplace_back(at, offset + leaf.size);
    }
  }
  leaf.name = name;
  leaf.label = label;
  leaves_.push_back(std::move(leaf));
}

void IrModel::NoteUnions(llvm::Type* type, const llvm::DIType* di_type, int depth) {
  const auto* composite = llvm::dyn_cast_or_null<llvm::DICompositeType>(StripTypedefs(di_type));
  if (composite == nullptr || depth >= kMaxStructDepth) return;
  if (auto* array = llvm::dyn_cast<llvm::ArrayType>(type)) {
    if (composite->getTag() == llvm::dwarf::DW_TAG_array_type) {
      NoteUnions(array->getElementType(), composite->getBaseType(), depth + 1);
    }
    return;
  }
  auto* structure = llvm::dyn_cast<llvm::StructType>(type);
  if (structure == nullptr || structure->isOpaque() || structure->isLiteral()) return;
  if (composite->getTag() == llvm::dwarf::DW_TAG_union_type) {
    if (!structure->getName().startswith("union.")) linked_unions_.insert(structure);
    return;  // (its IR member is one of its members, which one the IR does not say)
  }
  const llvm::StructLayout* layout = layout_.getStructLayout(structure);
  for (unsigned i = 0; i < structure->getNumElements(); ++i) {
    const llvm::DIDerivedType* member = MemberAt(di_type, layout->getElementOffset(i));
    if (member != nullptr) {
      NoteUnions(structure->getElementType(i), member->getBaseType(), depth + 1);
    }
  }
}

void IrModel::AddObject(MemoryObject object, llvm::Type* type, const llvm::DIType* di_type,
                        bool open_ended) {
  if (type != nullptr) NoteUnions(type, di_type, 0);
  const uint32_t id = static_cast<uint32_t>(objects_.size());
  object.first_leaf = static_cast<uint32_t>(leaves_.size());
  if (type != nullptr && type->isSized()) {
    Flatten(type, 0, object.name, object.name, di_type, id, 0);
  }
  if (type != nullptr && type->isSized() && !open_ended) {
    object.size = layout_.getTypeAllocSize(type).getFixedSize();
  }
  // The trailing array (the last field, a leaf of its own) holds every byte past the fields.
  if (open_ended && leaves_.size() > object.first_leaf) leaves_.back().size = kToEnd;
  object.type = type;
  const uint32_t count = static_cast<uint32_t>(leaves_.size()) - object.first_leaf;
  if (count == 0 || count > kMaxLeavesPerObject) {
    leaves_.resize(object.first_leaf);
    Leaf whole;
    whole.object = id;
    whole.size = kToEnd;
    whole.array = true;
    whole.name = object.name;
    whole.label = object.name;
    leaves_.push_back(std::move(whole));
  }
  object.leaf_count = static_cast<uint32_t>(leaves_.size()) - object.first_leaf;
  object_of_site_[object.site] = id;
  objects_.push_back(std::move(object));
}

uint64_t IrModel::AllocatorBytes(const llvm::CallBase& call, const std::string& name) {
  const auto constant = [&call](unsigned i) -> uint64_t {
    const auto* c = i < call.arg_size() ? llvm::dyn_cast<llvm::ConstantInt>(call.getArgOperand(i))
                                        : nullptr;
    return c != nullptr && c->getValue().getActiveBits() <= 32 ? c->getZExtValue() : 0;
  };
  if (name == "malloc" || name == "_Znwm") return constant(0);
  if (name == "calloc") return constant(0) * constant(1);
  return 0;
}

// The struct one allocation of `bytes` makes, with its debug type, where the heap object can
// have fields of its own: a `malloc` or `calloc` (or an allocation wrapper's call) of exactly
// one struct's size whose result is kept in a recency variable (internal::RecencySlot) that the
// program reads that struct through. Null otherwise (the object is one location).
llvm::Type* IrModel::HeapType(
    const llvm::CallBase& call, uint64_t bytes,
    const absl::flat_hash_map<const llvm::Value*, const llvm::DILocalVariable*>& declared,
    const llvm::DIType** di_type, bool* open_ended, bool through_casts) const {
  *open_ended = false;
  const llvm::AllocaInst* slot = internal::RecencySlot(call);
  if (slot == nullptr) return nullptr;
  llvm::StructType* type = nullptr;
  // The loads of the variable (and, with `through_casts`, their casts and the loads of the
  // variables those are kept in, as `Table *t = gco2t(o)` keeps an object Lua allocated as a
  // `GCObject`), and the struct types they are indexed as.
  // (Each with the variable it was loaded from, whose debug type names the struct's fields.)
  std::vector<std::pair<const llvm::Value*, const llvm::AllocaInst*>> pointers;
  for (const llvm::User* user : slot->users()) {
    if (llvm::isa<llvm::LoadInst>(user)) pointers.emplace_back(user, slot);
  }
  const llvm::AllocaInst* typed_slot = slot;
  for (size_t i = 0; i < pointers.size() && pointers.size() < 256; ++i) {
    const auto [pointer, from] = pointers[i];
    for (const llvm::User* use : pointer->users()) {
      if (through_casts && llvm::isa<llvm::BitCastInst>(use)) {
        pointers.emplace_back(use, from);
        continue;
      }
      if (const auto* store = llvm::dyn_cast<llvm::StoreInst>(use);
          through_casts && store != nullptr && store->getValueOperand() == pointer) {
        const auto* kept = llvm::dyn_cast<llvm::AllocaInst>(store->getPointerOperand());
        if (kept == nullptr || kept == slot) continue;
        for (const llvm::User* kept_user : kept->users()) {
          if (llvm::isa<llvm::LoadInst>(kept_user)) pointers.emplace_back(kept_user, kept);
        }
        continue;
      }
      const auto* gep = llvm::dyn_cast<llvm::GEPOperator>(use);
      if (gep == nullptr || gep->getPointerOperand() != pointer) continue;
      auto* structure = llvm::dyn_cast<llvm::StructType>(gep->getSourceElementType());
      if (structure == nullptr) continue;
      if (type != nullptr && type != structure) return nullptr;
      type = structure;
      typed_slot = from;
    }
  }
  if (type == nullptr || !type->isSized() || type->getNumElements() == 0) return nullptr;
  if (bytes == 0) {
    // A size not known (`sizeof(T) + n * sizeof(E)`, a parameter's): a struct that ends in an
    // array of at most one element is C's flexible array member, or the older `E a[1]`.
    const auto* last = llvm::dyn_cast<llvm::ArrayType>(type->elements().back());
    if (last == nullptr || last->getNumElements() > 1) return nullptr;
    *open_ended = true;
  } else if (layout_.getTypeAllocSize(type).getFixedSize() != bytes) {
    return nullptr;
  }
  auto it = declared.find(typed_slot);
  if (it != declared.end() && it->second != nullptr) {
    const auto* pointer = llvm::dyn_cast_or_null<llvm::DIDerivedType>(
        StripTypedefs(it->second->getType()));
    if (pointer != nullptr && pointer->getTag() == llvm::dwarf::DW_TAG_pointer_type) {
      *di_type = pointer->getBaseType();
    }
  }
  return type;
}

void IrModel::BuildObjects() {
  for (const llvm::GlobalVariable& global : module_.globals()) {
    MemoryObject object;
    object.kind = MemoryObject::Kind::kGlobal;
    object.site = &global;
    object.name = global.getName().str();
    llvm::SmallVector<llvm::DIGlobalVariableExpression*, 1> debug;
    global.getDebugInfo(debug);
    const llvm::DIType* di_type = nullptr;
    if (!debug.empty() && debug[0]->getVariable() != nullptr) {
      object.name = debug[0]->getVariable()->getName().str();
      object.named = true;
      di_type = debug[0]->getVariable()->getType();
    }
    AddObject(std::move(object), global.getValueType(), di_type);
  }
  for (const llvm::Function* function : functions_) {
    absl::flat_hash_map<const llvm::Value*, const llvm::DILocalVariable*> declared;
    for (const llvm::BasicBlock& block : *function) {
      for (const llvm::Instruction& instruction : block) {
        if (const auto* declare = llvm::dyn_cast<llvm::DbgDeclareInst>(&instruction)) {
          if (declare->getAddress() != nullptr) {
            declared.emplace(declare->getAddress(), declare->getVariable());
          }
        }
      }
    }
    for (const llvm::BasicBlock& block : *function) {
      for (const llvm::Instruction& instruction : block) {
        if (const auto* alloca = llvm::dyn_cast<llvm::AllocaInst>(&instruction)) {
          MemoryObject object;
          object.kind = MemoryObject::Kind::kLocal;
          object.owner = function;
          object.site = alloca;
          object.name = alloca->getName().str();
          const llvm::DIType* di_type = nullptr;
          auto it = declared.find(alloca);
          if (it != declared.end() && it->second != nullptr) {
            object.name = it->second->getName().str();
            object.named = true;
            di_type = it->second->getType();
          }
          llvm::Type* type = alloca->getAllocatedType();
          if (alloca->isArrayAllocation()) {
            // alloca T, N (a VLA): one location.
            AddObject(std::move(object), nullptr, nullptr);
          } else {
            AddObject(std::move(object), type, di_type);
          }
          continue;
        }
        const auto* call = llvm::dyn_cast<llvm::CallBase>(&instruction);
        if (call == nullptr) continue;
        if (bool zeroed = false; WrapperCall(*call, &zeroed) != nullptr) {
          const llvm::DIType* di_type = nullptr;
          bool open_ended = false;
          llvm::Type* type =
              HeapType(*call, WrapperCallBytes(*call), declared, &di_type, &open_ended);
          if (type == nullptr) continue;
          MemoryObject object;
          object.kind = MemoryObject::Kind::kHeap;
          object.site = call;
          object.name = SiteName(instruction, "heap");
          object.named = true;
          AddObject(std::move(object), type, di_type, open_ended);
          continue;
        }
        const std::vector<const llvm::Function*>& callees = Callees(*call);
        if (!callees.empty()) {
          // A call of an allocating function, but one its own function returns: an object of
          // its own, one location. (Also where its result is not used: the function may keep
          // what it allocates.)
          const bool allocates =
              std::any_of(callees.begin(), callees.end(),
                          [&](const llvm::Function* f) { return allocating_.contains(f); });
          if (allocates && !returned_allocations_.contains(call)) {
            MemoryObject object;
            object.kind = MemoryObject::Kind::kHeap;
            object.site = call;
            object.name = SiteName(instruction, "heap");
            object.named = true;
            object.cloned = true;
            // With fields where it is one struct's size, kept and read as that struct.
            const llvm::DIType* di_type = nullptr;
            bool open_ended = false;
            llvm::Type* type = HeapType(*call, AllocatingCallBytes(*call), declared, &di_type,
                                        &open_ended, true);
            AddObject(std::move(object), type, di_type, open_ended);
          }
          continue;
        }
        const std::string name = ExternalName(*call);
        // (An allocation an allocating function returns is each of its calls' objects.)
        if (IsAllocator(name) && returned_allocations_.contains(call)) continue;
        if (IsAllocator(name)) {
          MemoryObject object;
          object.kind = MemoryObject::Kind::kHeap;
          object.site = call;
          object.name = SiteName(instruction, "heap");
          object.named = true;
          const llvm::DIType* di_type = nullptr;
          bool open_ended = false;
          llvm::Type* type =
              HeapType(*call, AllocatorBytes(*call, name), declared, &di_type, &open_ended);
          AddObject(std::move(object), type, di_type, open_ended);
        } else if (call->getType()->isPointerTy() && !ReturnedArgument(*call).has_value()) {
          MemoryObject object;
          object.kind = MemoryObject::Kind::kExternal;
          object.site = call;
          object.name = SiteName(instruction, name.empty() ? "indirect" : ShortName(name));
          object.named = true;
          AddObject(std::move(object), nullptr, nullptr);
        }
      }
    }
  }
}

void IrModel::ComputeAccesses() {
  escapes_.assign(leaves_.size(), false);
  absl::flat_hash_map<const llvm::Function*, std::vector<uint32_t>> direct;
  std::vector<std::pair<const llvm::Value*, uint64_t>> accesses;
  for (const llvm::Function* function : functions_) {
    std::vector<uint32_t>& mine = direct[function];
    for (const llvm::BasicBlock& block : *function) {
      for (const llvm::Instruction& instruction : block) {
        accesses.clear();
        DirectAccesses(instruction, &accesses);
        for (const auto& [pointer, size] : accesses) {
          std::vector<uint32_t> leaves = Leaves(pointer, size);
          mine.insert(mine.end(), leaves.begin(), leaves.end());
        }
        if (const auto* call = llvm::dyn_cast<llvm::CallBase>(&instruction)) {
          std::vector<uint32_t> created = CreatedLeaves(*call);
          mine.insert(mine.end(), created.begin(), created.end());
        }
      }
    }
    std::sort(mine.begin(), mine.end());
    mine.erase(std::unique(mine.begin(), mine.end()), mine.end());
    for (uint32_t leaf : mine) {
      const MemoryObject& object = objects_[leaves_[leaf].object];
      if (object.kind == MemoryObject::Kind::kLocal && object.owner != function) {
        escapes_[leaf] = true;
      }
    }
  }
  // What a function reaches through its callees: the functions of one strongly connected
  // component of the call graph (recursion) reach the same, the union of what each accesses
  // and of what the components they call reach. Tarjan's algorithm finds the components
  // callees first, so each is complete when its callers need it.
  absl::flat_hash_map<const llvm::Function*, uint32_t> index_of;
  for (uint32_t f = 0; f < functions_.size(); ++f) index_of[functions_[f]] = f;
  std::vector<std::vector<uint32_t>> calls(functions_.size());
  for (const auto& [call, callees] : callees_) {
    std::vector<uint32_t>& out = calls[index_of.at(call->getFunction())];
    for (const llvm::Function* callee : callees) out.push_back(index_of.at(callee));
  }
  for (std::vector<uint32_t>& out : calls) {
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
  }
  std::vector<uint32_t> merged;
  internal::StronglyConnected(calls, [&](const std::vector<uint32_t>& members) {
    std::vector<uint32_t> reach;
    for (uint32_t m : members) {
      const std::vector<uint32_t>& own = direct[functions_[m]];
      merged.clear();
      std::set_union(reach.begin(), reach.end(), own.begin(), own.end(),
                     std::back_inserter(merged));
      reach.swap(merged);
      for (uint32_t callee : calls[m]) {
        auto it = accessed_.find(functions_[callee]);
        if (it == accessed_.end()) continue;  // a member of this component
        merged.clear();
        std::set_union(reach.begin(), reach.end(), it->second.begin(), it->second.end(),
                       std::back_inserter(merged));
        reach.swap(merged);
      }
    }
    for (uint32_t m : members) {
      accessed_[functions_[m]] = reach;
      callees_first_.push_back(functions_[m]);
      const bool self = std::binary_search(calls[m].begin(), calls[m].end(), m);
      if (members.size() > 1 || self) recursive_.insert(functions_[m]);
    }
  });
}

const std::vector<uint32_t>& IrModel::Accessed(const llvm::Function& function) const {
  static const std::vector<uint32_t> kNone;
  auto it = accessed_.find(&function);
  return it == accessed_.end() ? kNone : it->second;
}

std::string IrModel::SourceName(const llvm::Value* value) const {
  value = value->stripPointerCasts();
  if (const auto* load = llvm::dyn_cast<llvm::LoadInst>(value)) {
    const llvm::Type* type = load->getType();
    std::vector<uint32_t> leaves =
        Leaves(load->getPointerOperand(),
               type->isSized() ? layout_.getTypeStoreSize(load->getType()).getFixedSize() : 1);
    if (leaves.size() == 1 && objects_[leaves_[leaves[0]].object].named) {
      return leaves_[leaves[0]].label;
    }
    return "";
  }
  if (const auto* cast = llvm::dyn_cast<llvm::CastInst>(value)) {
    return SourceName(cast->getOperand(0));
  }
  const PointsTo& points_to = PointsToOf(value);
  if (points_to.size() == 1) {
    const MemoryObject& object = objects_[ObjectOf(*points_to.begin())];
    if (!object.named) return "";
    std::vector<uint32_t> leaves = LeavesOf(*points_to.begin(), 1);
    return leaves.size() == 1 && !leaves_[leaves[0]].array ? leaves_[leaves[0]].label
                                                            : object.name;
  }
  return "";
}

}  // namespace sluice::analyzer
