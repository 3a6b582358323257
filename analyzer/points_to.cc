// IrModel's Andersen points-to analysis (analyzer/ir_model.h): the value ids, the constraints
// the IR gives, their solution, and the leaves a pointer may reach.
#include <algorithm>
#include <deque>
#include <tuple>

#include "llvm/IR/Constants.h"
#include "llvm/IR/GetElementPtrTypeIterator.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/IntrinsicInst.h"
#include "llvm/IR/Operator.h"
#include "sluice/analyzer/ir_model.h"
#include "sluice/analyzer/ir_model_internal.h"

namespace sluice::analyzer {

using internal::CopiesMemory;
using internal::kUnknownOffset;
using internal::ObjectOf;
using internal::OffsetOf;
using internal::Pack;

uint32_t IrModel::ValueId(const llvm::Value* value) {
  auto [it, inserted] = value_ids_.emplace(value, static_cast<uint32_t>(points_to_.size()));
  if (!inserted) return it->second;
  points_to_.emplace_back();
  if (const auto* constant = llvm::dyn_cast<llvm::Constant>(value)) {
    // An address made an integer (`(uintptr_t)&g`) is its pointer's.
    if (const auto* expression = llvm::dyn_cast<llvm::ConstantExpr>(constant);
        expression != nullptr && expression->getOpcode() == llvm::Instruction::PtrToInt) {
      constant = expression->getOperand(0);
    }
    llvm::APInt offset(layout_.getIndexTypeSizeInBits(constant->getType()->isPointerTy()
                                                          ? constant->getType()
                                                          : llvm::Type::getInt8PtrTy(
                                                                value->getContext())),
                       0);
    const llvm::Value* base = constant->getType()->isPointerTy()
                                  ? constant->stripAndAccumulateConstantOffsets(
                                        layout_, offset, /*AllowNonInbounds=*/true)
                                  : constant;
    auto object = object_of_site_.find(base);
    if (object != object_of_site_.end()) {
      const int64_t delta = offset.getSExtValue();
      points_to_.back().push_back(Normalize(
          Pack(object->second, delta < 0 ? kUnknownOffset : static_cast<uint64_t>(delta))));
    }
  } else {
    auto object = object_of_site_.find(value);
    if (object != object_of_site_.end() && llvm::isa<llvm::AllocaInst>(value)) {
      points_to_.back().push_back(Pack(object->second, 0));
    }
  }
  return it->second;
}

const IrModel::PointsTo& IrModel::PointsToOf(const llvm::Value* value) const {
  static const PointsTo kNothing;
  auto it = value_ids_.find(value);
  return it == value_ids_.end() ? kNothing : points_to_[it->second];
}

std::vector<uint32_t> IrModel::LeavesOf(Pointee pointee, uint64_t size) const {
  std::vector<uint32_t> out;
  AppendLeavesOf(pointee, size, &out);
  return out;
}

void IrModel::AppendLeavesOf(Pointee pointee, uint64_t size, std::vector<uint32_t>* out) const {
  const MemoryObject& object = objects_[ObjectOf(pointee)];
  const size_t before = out->size();
  const uint32_t offset = OffsetOf(pointee);
  if (offset != kUnknownOffset) {
    const uint64_t end = size == kToEnd ? kToEnd : offset + size;
    for (uint32_t i = 0; i < object.leaf_count; ++i) {
      const Leaf& leaf = leaves_[object.first_leaf + i];
      const uint64_t leaf_end = leaf.size == kToEnd ? kToEnd : leaf.offset + leaf.size;
      if (leaf.offset < end && offset < leaf_end) out->push_back(object.first_leaf + i);
    }
    // An offset past every field (pointer arithmetic out of the object): all of it.
    if (out->size() != before) return;
  }
  for (uint32_t i = 0; i < object.leaf_count; ++i) out->push_back(object.first_leaf + i);
}

uint64_t IrModel::Extent(const llvm::Value* pointer, uint64_t size) const {
  if (size != kToEnd) return size;
  // Casts only (stripPointerCasts would also strip all-zero getelementptrs, which are what
  // `r.line` is when the field comes first).
  while (const auto* cast = llvm::dyn_cast<llvm::Operator>(pointer)) {
    if (cast->getOpcode() != llvm::Instruction::BitCast &&
        cast->getOpcode() != llvm::Instruction::AddrSpaceCast) {
      break;
    }
    pointer = cast->getOperand(0);
  }
  const auto* gep = llvm::dyn_cast<llvm::GEPOperator>(pointer);
  if (gep == nullptr) return kToEnd;
  llvm::Type* source = gep->getSourceElementType();
  const auto* first = gep->getNumIndices() > 0
                          ? llvm::dyn_cast<llvm::ConstantInt>(gep->idx_begin()->get())
                          : nullptr;
  // Into an array (`buf + i`, an array field decayed to its first element): that array.
  if (source->isArrayTy() && source->isSized() && first != nullptr && first->isZero()) {
    return layout_.getTypeAllocSize(source).getFixedSize();
  }
  // To a field or element that is itself a struct or an array: that aggregate.
  llvm::Type* result = gep->getResultElementType();
  if ((result->isStructTy() || result->isArrayTy()) && result->isSized()) {
    return layout_.getTypeAllocSize(result).getFixedSize();
  }
  return kToEnd;
}

std::vector<uint32_t> IrModel::Leaves(const llvm::Value* pointer, uint64_t size) const {
  size = Extent(pointer, size);
  std::vector<uint32_t> out;
  for (Pointee pointee : PointsToOf(pointer)) AppendLeavesOf(pointee, size, &out);
  // (Pointees in order give leaves nearly in order: objects' leaves are numbered in turn.)
  if (!std::is_sorted(out.begin(), out.end())) std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::vector<uint32_t> IrModel::StrongLeaves(const llvm::Value* pointer, uint64_t size) const {
  size = Extent(pointer, size);
  uint32_t recent = 0;
  uint64_t recent_offset = 0;
  const bool last = MostRecent(pointer, &recent, &recent_offset);
  const PointsTo& points_to = PointsToOf(pointer);
  if (!last && points_to.size() != 1) return {};
  const Pointee pointee =
      last ? Normalize(Pack(recent, recent_offset)) : *points_to.begin();
  const MemoryObject& object = objects_[ObjectOf(pointee)];
  if ((!last && (object.kind == MemoryObject::Kind::kHeap ||
                 object.kind == MemoryObject::Kind::kExternal)) ||
      OffsetOf(pointee) == kUnknownOffset) {
    return {};
  }
  // A local of a recursive function is every activation's: only its own function writing it
  // directly (not through a pointer it was given) is sure to write the current one.
  if (object.kind == MemoryObject::Kind::kLocal && recursive_.contains(object.owner)) {
    uint64_t offset = 0;
    if (internal::ConstantBase(pointer, layout_, &offset) != object.site) return {};
  }
  const uint64_t start = OffsetOf(pointee);
  std::vector<uint32_t> out;
  for (uint32_t leaf_id : LeavesOf(pointee, size)) {
    const Leaf& leaf = leaves_[leaf_id];
    if (size == kToEnd) {
      // A write of unknown length (strcpy, fgets, a library call): it replaces the location
      // it starts in (the whole array), not the fields after it.
      if (leaf.offset <= start && (leaf.size == kToEnd || start < leaf.offset + leaf.size)) {
        out.push_back(leaf_id);
      }
      continue;
    }
    if (leaf.size != kToEnd && leaf.offset >= start && leaf.offset + leaf.size <= start + size) {
      out.push_back(leaf_id);
    }
  }
  return out;
}

bool IrModel::CopiesAllToAll(const llvm::Value* dst, const llvm::Value* src) const {
  const PointsTo& to = PointsToOf(dst);
  const PointsTo& from = PointsToOf(src);
  return !(to.size() == 1 && from.size() == 1 && OffsetOf(*to.begin()) != kUnknownOffset &&
           OffsetOf(*from.begin()) != kUnknownOffset);
}

std::vector<std::pair<uint32_t, uint32_t>> IrModel::CopyPairs(const llvm::Value* dst,
                                                              const llvm::Value* src,
                                                              uint64_t size) const {
  std::vector<std::pair<uint32_t, uint32_t>> out;
  const PointsTo& to = PointsToOf(dst);
  const PointsTo& from = PointsToOf(src);
  if (!CopiesAllToAll(dst, src)) {
    // Field to field, by offset from the start of the copy.
    const uint64_t dst_start = OffsetOf(*to.begin());
    const uint64_t src_start = OffsetOf(*from.begin());
    for (uint32_t s : LeavesOf(*from.begin(), size)) {
      const Leaf& leaf = leaves_[s];
      const uint64_t relative = leaf.offset > src_start ? leaf.offset - src_start : 0;
      const uint64_t length = leaf.size == kToEnd ? kToEnd : leaf.size;
      for (uint32_t d : LeavesOf(Pack(ObjectOf(*to.begin()), dst_start + relative), length)) {
        out.emplace_back(s, d);
      }
    }
  } else {
    for (uint32_t s : Leaves(src, size)) {
      for (uint32_t d : Leaves(dst, size)) out.emplace_back(s, d);
    }
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::vector<uint32_t> IrModel::CreatedLeaves(const llvm::CallBase& call) const {
  std::vector<uint32_t> out;
  const auto add = [&](uint32_t o) {
    for (uint32_t i = 0; i < objects_[o].leaf_count; ++i) {
      out.push_back(objects_[o].first_leaf + i);
    }
  };
  if (auto it = object_of_site_.find(&call); it != object_of_site_.end()) {
    add(it->second);
  } else if (const std::vector<uint32_t>* objects = ObjectsOfAllocation(call);
             objects != nullptr && Callees(call).empty()) {
    // The library allocation inside an allocating function makes one of its calls' objects.
    for (uint32_t o : *objects) add(o);
  }
  return out;
}

void IrModel::SolvePointsTo() {
  std::vector<Constraint> constraints;
  // What may hold an address: pointers, integers as wide as one (`(uintptr_t)p`), and bytes
  // (a pointer copied a byte at a time). An integer wider than a byte and narrower than a
  // pointer, or a floating-point number, holds none that code could make a pointer again:
  // giving a hash of an address (`(unsigned)(size_t)p`) its pointees would have what it is
  // stored beside point where the address did.
  const unsigned pointer_bits = layout_.getPointerSizeInBits();
  const auto carries = [pointer_bits](const llvm::Type* type) {
    if (const auto* vector = llvm::dyn_cast<llvm::VectorType>(type)) {
      type = vector->getElementType();
    }
    if (type->isIntegerTy()) {
      return type->getIntegerBitWidth() <= 8 || type->getIntegerBitWidth() >= pointer_bits;
    }
    return !type->isFloatingPointTy();
  };
  auto copy = [&](const llvm::Value* dst, const llvm::Value* src, int64_t shift = 0,
                  bool unknown = false, bool inbounds = false,
                  llvm::StructType* typed = nullptr) {
    if (!carries(dst->getType())) return;
    constraints.push_back({Constraint::Kind::kCopy, ValueId(dst), ValueId(src), shift, unknown,
                           kToEnd, inbounds, typed});
  };
  auto size_of = [&](llvm::Type* type) -> uint64_t {
    return type->isSized() ? layout_.getTypeStoreSize(type).getFixedSize() : kToEnd;
  };
  for (const llvm::Function* function : functions_) {
    for (const llvm::BasicBlock& block : *function) {
      for (const llvm::Instruction& instruction : block) {
        const llvm::Instruction* i = &instruction;
        // Addresses of globals used directly (`store i32 0, i32* @g`, `fgets(@buf, ...)`) point
        // to their global whether or not a constraint names them.
        for (const llvm::Value* operand : i->operands()) {
          if (llvm::isa<llvm::Constant>(operand) && operand->getType()->isPointerTy()) {
            ValueId(operand);
          }
        }
        if (llvm::isa<llvm::AllocaInst>(i)) {
          ValueId(i);
        } else if (const auto* gep = llvm::dyn_cast<llvm::GetElementPtrInst>(i)) {
          // Constant indexes move the offset; a variable index moves within an array, which
          // is one location, so it counts as 0. A variable first index (pointer arithmetic)
          // stays in an array it points into, and is anywhere in any other object.
          int64_t offset = 0;
          for (auto it = llvm::gep_type_begin(gep), end = llvm::gep_type_end(gep); it != end;
               ++it) {
            const auto* index = llvm::dyn_cast<llvm::ConstantInt>(it.getOperand());
            if (index == nullptr && it == llvm::gep_type_begin(gep)) offset = kVariableShift;
            if (offset == kVariableShift) continue;
            if (llvm::StructType* structure = it.getStructTypeOrNull()) {
              offset += static_cast<int64_t>(layout_.getStructLayout(structure)->getElementOffset(
                  static_cast<unsigned>(index->getZExtValue())));
            } else if (index != nullptr && it.getIndexedType()->isSized()) {
              offset += index->getSExtValue() *
                        static_cast<int64_t>(
                            layout_.getTypeAllocSize(it.getIndexedType()).getFixedSize());
            }
          }
          auto* typed = llvm::dyn_cast<llvm::StructType>(gep->getSourceElementType());
          // (Not a literal struct: Clang reads a struct passed or returned in registers
          // through one, `{ i8*, i64 }`, that need not be laid out as the C struct is.)
          const bool field = typed != nullptr && !typed->isLiteral() && typed->isSized() &&
                             gep->getNumIndices() > 1;
          copy(i, gep->getPointerOperand(), offset, false, gep->isInBounds(),
               field ? typed : nullptr);
        } else if (llvm::isa<llvm::CastInst>(i) || llvm::isa<llvm::SelectInst>(i) ||
                   llvm::isa<llvm::PHINode>(i) || llvm::isa<llvm::FreezeInst>(i) ||
                   llvm::isa<llvm::ExtractValueInst>(i) || llvm::isa<llvm::InsertValueInst>(i)) {
          // (An aggregate value, a struct returned in registers, holds its members' pointees
          // together.)
          for (const llvm::Value* operand : i->operands()) {
            if (!llvm::isa<llvm::BasicBlock>(operand)) copy(i, operand);
          }
        } else if (const auto* binary = llvm::dyn_cast<llvm::BinaryOperator>(i)) {
          // Address arithmetic on integers keeps the pointees of its operands (a sum, a mask,
          // a tag, `(a + 15) / 16 * 16`), but a difference that subtracts an address (`p - q`)
          // is a distance: it has none, and a difference otherwise has its first operand's
          // (`p - 8`).
          if (binary->getOpcode() == llvm::Instruction::Sub) {
            if (!llvm::isa<llvm::PtrToIntOperator>(binary->getOperand(1))) {
              copy(i, binary->getOperand(0), 0, true);
            }
          } else {
            for (const llvm::Value* operand : i->operands()) copy(i, operand, 0, true);
          }
        } else if (const auto* load = llvm::dyn_cast<llvm::LoadInst>(i)) {
          if (!carries(load->getType())) continue;
          constraints.push_back({Constraint::Kind::kLoad, ValueId(i),
                                 ValueId(load->getPointerOperand()), 0, false,
                                 size_of(load->getType())});
        } else if (const auto* store = llvm::dyn_cast<llvm::StoreInst>(i)) {
          if (!carries(store->getValueOperand()->getType())) continue;
          constraints.push_back({Constraint::Kind::kStore, ValueId(store->getPointerOperand()),
                                 ValueId(store->getValueOperand()), 0, false,
                                 size_of(store->getValueOperand()->getType())});
        } else if (const auto* call = llvm::dyn_cast<llvm::CallBase>(i)) {
          const std::vector<const llvm::Function*>& callees = Callees(*call);
          auto site = object_of_site_.find(call);
          // An allocation an allocating function returns points to each of its calls' objects.
          const std::vector<uint32_t>* clones = ObjectsOfAllocation(*call);
          if (clones != nullptr) {
            for (uint32_t o : *clones) points_to_[ValueId(call)].push_back(Pack(o, 0));
          }
          // What a reallocation copies, where it is no parameter of an allocating function
          // returning it (then each call of that function copies its argument instead).
          for (const llvm::Value* source : CopiedBy(*call)) {
            if (CopiesParameter(*call, source)) continue;
            constraints.push_back({Constraint::Kind::kCopyContents, ValueId(call),
                                   ValueId(source), 0, false, kToEnd});
          }
          for (const llvm::Function* callee : callees) {
            for (unsigned a = 0; a < call->arg_size() && a < callee->arg_size(); ++a) {
              copy(callee->getArg(a), call->getArgOperand(a));
            }
            // A call of allocation wrappers that is a site of its own gets its object only:
            // the memory this call allocates is what nothing else may point to. So does a call
            // of allocating functions that returns what they allocate, whether it is an object
            // of its own or what its own function returns.
            if (clones != nullptr) continue;
            if (site != object_of_site_.end() &&
                (!objects_[site->second].cloned || AllocatingCall(*call))) {
              continue;
            }
            for (const llvm::BasicBlock& callee_block : *callee) {
              if (const auto* ret = llvm::dyn_cast<llvm::ReturnInst>(callee_block.getTerminator())) {
                if (ret->getReturnValue() != nullptr) copy(call, ret->getReturnValue());
              }
            }
          }
          if (!callees.empty()) {
            if (site != object_of_site_.end()) {
              points_to_[ValueId(call)].push_back(Pack(site->second, 0));
            }
            continue;
          }
          const std::string name = ExternalName(*call);
          // (Nothing else gives a call's value a pointee: its set was empty.)
          if (site != object_of_site_.end()) {
            points_to_[ValueId(call)].push_back(Pack(site->second, 0));
          }
          if (const std::optional<unsigned> returned = ReturnedArgument(*call)) {
            copy(call, call->getArgOperand(*returned));
          }
          if (CopiesMemory(name) && call->arg_size() > 1) {
            constraints.push_back({Constraint::Kind::kCopyContents,
                                   ValueId(call->getArgOperand(0)),
                                   ValueId(call->getArgOperand(1)), 0, false, kToEnd});
          }
        }
      }
    }
  }
  // Pointers in global initializers.
  for (const llvm::GlobalVariable& global : module_.globals()) {
    if (!global.hasInitializer()) continue;
    const uint32_t object = object_of_site_.at(&global);
    std::vector<std::pair<const llvm::Constant*, uint64_t>> pending = {
        {global.getInitializer(), 0}};
    while (!pending.empty()) {
      auto [constant, offset] = pending.back();
      pending.pop_back();
      if (constant->getType()->isStructTy() && !llvm::isa<llvm::ConstantAggregateZero>(constant)) {
        const llvm::StructLayout* layout =
            layout_.getStructLayout(llvm::cast<llvm::StructType>(constant->getType()));
        for (unsigned e = 0; e < constant->getNumOperands(); ++e) {
          pending.emplace_back(llvm::cast<llvm::Constant>(constant->getOperand(e)),
                               offset + layout->getElementOffset(e));
        }
      } else if (const auto* array = llvm::dyn_cast<llvm::ConstantArray>(constant)) {
        const uint64_t element = layout_.getTypeAllocSize(array->getType()->getElementType());
        for (unsigned e = 0; e < array->getNumOperands(); ++e) {
          pending.emplace_back(array->getOperand(e), offset + e * element);
        }
      } else if (constant->getType()->isPointerTy()) {
        const PointsTo targets = points_to_[ValueId(constant)];
        for (uint32_t leaf : LeavesOf(Pack(object, offset), 1)) {
          contents_.resize(leaves_.size());
          contents_[leaf].insert(contents_[leaf].end(), targets.begin(), targets.end());
        }
      }
    }
  }
  contents_.resize(leaves_.size());

  Solve(constraints);
}

namespace {

// Whether two struct types are one C type: the same, laid out alike, or named alike but for
// the suffix that linking modules adds (`struct.S` and `struct.S.12`).
bool SameStruct(llvm::StructType* a, llvm::StructType* b) {
  if (a == b || a->isLayoutIdentical(b)) return true;
  if (!a->hasName() || !b->hasName()) return false;
  const auto base = [](llvm::StringRef name) {
    while (true) {
      const size_t dot = name.rfind('.');
      if (dot == llvm::StringRef::npos || dot + 1 == name.size()) return name;
      const llvm::StringRef suffix = name.substr(dot + 1);
      if (suffix.find_first_not_of("0123456789") != llvm::StringRef::npos) return name;
      name = name.substr(0, dot);
    }
  };
  return base(a->getName()) == base(b->getName());
}

// Whether a struct of type `want` may live at `offset` in a union of type `type`: whatever
// fits. (The IR gives a union as one of its members and padding, so which members it has is
// not told.)
bool UnionMayHold(const llvm::DataLayout& layout, llvm::StructType* type, uint64_t offset,
                  llvm::StructType* want) {
  return offset + layout.getTypeAllocSize(want).getFixedSize() <=
         layout.getTypeAllocSize(type).getFixedSize();
}

// What the struct rules below need of a module: its layout, and which struct types are C
// unions. Clang names a union's type "union.X", but linking modules can give it the name of an
// identical struct of another module: debug info says which (IrModel::NoteUnions).
struct TypeRules {
  const llvm::DataLayout& layout;
  const absl::flat_hash_set<const llvm::StructType*>& linked_unions;

  bool IsUnion(llvm::StructType* type) const {
    return (type->hasName() && type->getName().startswith("union.")) ||
           linked_unions.contains(type);
  }
};

// The first scalar a type is laid out with (its first member's, and so on); null for none.
llvm::Type* FirstScalar(llvm::Type* type) {
  while (true) {
    if (auto* structure = llvm::dyn_cast<llvm::StructType>(type)) {
      if (structure->isOpaque() || structure->getNumElements() == 0) return nullptr;
      type = structure->getElementType(0);
    } else if (auto* array = llvm::dyn_cast<llvm::ArrayType>(type)) {
      if (array->getNumElements() == 0) return nullptr;
      type = array->getElementType();
    } else {
      return type;
    }
  }
}

// Whether memory laid out as struct `have` may be read as struct `want`: one C type, or two
// that begin alike (a common first member, as `struct sockaddr_storage` and `struct
// sockaddr_in` do, or structs that share a header), which programs read as one another.
bool Compatible(llvm::StructType* have, llvm::StructType* want) {
  if (SameStruct(have, want)) return true;
  llvm::Type* first = FirstScalar(have);
  return first != nullptr && first == FirstScalar(want);
}

// Whether memory any type may live in: a union (what fits), a struct whose layout is not told
// (opaque, or a literal one, as Clang gives a global a union initializes), and, where
// `storage`, an array of scalars (bytes, words, doubles: a pool a program may cast,
// `(struct hdr *)buf`), which a constant one is not.
bool AnyStruct(const TypeRules& rules, llvm::Type* type, uint64_t offset,
               llvm::StructType* want, bool storage) {
  if (auto* structure = llvm::dyn_cast<llvm::StructType>(type)) {
    if (structure->isOpaque() || structure->isLiteral()) return true;
    return rules.IsUnion(structure) && UnionMayHold(rules.layout, structure, offset, want);
  }
  if (auto* array = llvm::dyn_cast<llvm::ArrayType>(type)) {
    return storage && !array->getElementType()->isAggregateType();
  }
  return false;
}

// Whether a struct of type `want` may live anywhere in memory of type `type`: a member
// compatible with it, or memory any type may live in.
bool MayContain(const TypeRules& rules, llvm::Type* type, llvm::StructType* want,
                bool storage) {
  if (AnyStruct(rules, type, 0, want, storage)) return true;
  if (auto* structure = llvm::dyn_cast<llvm::StructType>(type)) {
    if (Compatible(structure, want)) return true;
    for (llvm::Type* element : structure->elements()) {
      if (MayContain(rules, element, want, storage)) return true;
    }
    return false;
  }
  if (auto* array = llvm::dyn_cast<llvm::ArrayType>(type)) {
    return MayContain(rules, array->getElementType(), want, storage);
  }
  return false;
}

// Whether memory of type `type` may hold a struct of type `want` at `offset`, as C's effective
// types allow and programs rely on: a compatible struct there, or one whose first member (or
// its first member's, and so on) is one, or memory any type may live in. A pointee inside an
// array stands for every element: the array may hold `want` anywhere in an element.
bool MayHold(const TypeRules& rules, llvm::Type* type, uint64_t offset,
             llvm::StructType* want, bool storage) {
  while (true) {
    if (AnyStruct(rules, type, offset, want, storage)) return true;
    if (auto* structure = llvm::dyn_cast<llvm::StructType>(type)) {
      if (offset == 0 && Compatible(structure, want)) return true;
      if (rules.IsUnion(structure)) return false;  // (AnyStruct: `want` does not fit)
      const llvm::StructLayout* fields = rules.layout.getStructLayout(structure);
      if (offset >= fields->getSizeInBytes()) return false;
      const unsigned field = fields->getElementContainingOffset(offset);
      offset -= fields->getElementOffset(field);
      type = structure->getElementType(field);
      continue;
    }
    if (auto* array = llvm::dyn_cast<llvm::ArrayType>(type)) {
      return MayContain(rules, array, want, storage);
    }
    return false;
  }
}

// Dense numbers for the pointees, so that a points-to set is a sorted array and passing a set
// on is a merge. Each object has a block: its unknown offset first, then the start of
// each of its leaves in offset order, so the pointees of one object lie together; an offset
// inside a scalar leaf (a byte of an int) gets a number past every block when first seen.
class PointeeIds {
 public:
  PointeeIds(const std::vector<MemoryObject>& objects, const std::vector<Leaf>& leaves)
      : objects_(objects), leaves_(leaves) {
    base_.reserve(objects.size());
    for (uint32_t o = 0; o < objects.size(); ++o) {
      base_.push_back(static_cast<uint32_t>(pointee_.size()));
      pointee_.push_back(Pack(o, kUnknownOffset));
      for (uint32_t i = 0; i < objects[o].leaf_count; ++i) {
        pointee_.push_back(Pack(o, leaves[objects[o].first_leaf + i].offset));
      }
    }
  }

  // The number of a normalized pointee.
  uint32_t Of(uint64_t pointee) {
    const uint32_t object = ObjectOf(pointee);
    const uint32_t offset = OffsetOf(pointee);
    if (offset == kUnknownOffset) return base_[object];
    const MemoryObject& o = objects_[object];
    const auto begin = leaves_.begin() + o.first_leaf;
    const auto end = begin + o.leaf_count;
    const auto it = std::lower_bound(begin, end, uint64_t{offset},
                                     [](const Leaf& leaf, uint64_t at) { return leaf.offset < at; });
    if (it != end && it->offset == offset) {
      return base_[object] + 1 + static_cast<uint32_t>(it - begin);
    }
    const auto [at, added] = inside_.try_emplace(pointee, static_cast<uint32_t>(pointee_.size()));
    if (added) pointee_.push_back(pointee);
    return at->second;
  }
  uint64_t Pointee(uint32_t id) const { return pointee_[id]; }
  // The number of the unknown offset of the object `id` points into.
  uint32_t Unknown(uint32_t id) const { return base_[ObjectOf(pointee_[id])]; }
  bool IsUnknown(uint32_t id) const { return OffsetOf(pointee_[id]) == kUnknownOffset; }

 private:
  const std::vector<MemoryObject>& objects_;
  const std::vector<Leaf>& leaves_;
  std::vector<uint32_t> base_;     // by object: the number of its unknown offset
  std::vector<uint64_t> pointee_;  // by number
  absl::flat_hash_map<uint64_t, uint32_t> inside_;
};

}  // namespace

// Andersen's analysis by difference propagation. Nodes are the values (their ids) and, after
// them, the contents of every leaf. Copies are edges; a load, store or memory copy adds edges
// once the pointer it goes through is known to point somewhere; each node passes on only what
// it has not passed on before. Sets are sorted arrays of pointee numbers (PointeeIds). Offsets
// are normalized (IrModel::Normalize), so every object has finitely many pointees and a
// pointer stepped in a loop still reaches the fixed point.
void IrModel::Solve(const std::vector<Constraint>& constraints) {
  // A set of pointee numbers, sorted.
  using Set = std::vector<uint32_t>;
  const auto contains = [](const Set& set, uint32_t id) {
    return std::binary_search(set.begin(), set.end(), id);
  };
  const auto insert = [](Set& set, uint32_t id) {
    const auto at = std::lower_bound(set.begin(), set.end(), id);
    if (at != set.end() && *at == id) return false;
    set.insert(at, id);
    return true;
  };
  Set merged;
  // Adds the sorted `more` (none of them in `set`).
  const auto merge = [&merged](Set& set, const Set& more) {
    if (more.size() * 8 < set.size()) {
      for (uint32_t id : more) set.insert(std::lower_bound(set.begin(), set.end(), id), id);
      return;
    }
    merged.resize(set.size() + more.size());
    std::merge(set.begin(), set.end(), more.begin(), more.end(), merged.begin());
    set.swap(merged);
  };
  const uint32_t values = static_cast<uint32_t>(points_to_.size());
  // A memory copy gets a node of its own between the leaves it reads and those it writes, so
  // that it costs edges in the sum of the two, not their product.
  std::vector<uint32_t> copy_node(constraints.size(), 0);
  uint32_t nodes = values + static_cast<uint32_t>(leaves_.size());
  for (uint32_t i = 0; i < constraints.size(); ++i) {
    if (constraints[i].kind == Constraint::Kind::kCopyContents) copy_node[i] = nodes++;
  }
  PointeeIds ids(objects_, leaves_);
  std::vector<Set> pts(nodes);
  for (uint32_t v = 0; v < values; ++v) {
    for (Pointee p : points_to_[v]) pts[v].push_back(ids.Of(p));
    std::sort(pts[v].begin(), pts[v].end());
    pts[v].erase(std::unique(pts[v].begin(), pts[v].end()), pts[v].end());
    PointsTo().swap(points_to_[v]);
  }
  for (uint32_t l = 0; l < leaves_.size(); ++l) {
    for (Pointee p : contents_[l]) pts[values + l].push_back(ids.Of(p));
    std::sort(pts[values + l].begin(), pts[values + l].end());
    pts[values + l].erase(std::unique(pts[values + l].begin(), pts[values + l].end()),
                          pts[values + l].end());
  }
  contents_.clear();

  struct Edge {
    uint32_t dst;
    int64_t shift;
    bool unknown;
    bool inbounds;
    llvm::StructType* typed;
    // Whether it passes every pointee on as it is.
    bool plain() const { return shift == 0 && !unknown && typed == nullptr; }
  };
  std::vector<std::vector<Edge>> edges(nodes);
  absl::flat_hash_set<std::tuple<uint32_t, uint32_t, int64_t, bool, bool, llvm::StructType*>>
      edge_set;
  // The load, store and memory-copy constraints that go through each value.
  std::vector<std::vector<uint32_t>> through(nodes);
  for (uint32_t i = 0; i < constraints.size(); ++i) {
    const Constraint& c = constraints[i];
    switch (c.kind) {
      case Constraint::Kind::kCopy:
        if (edge_set.emplace(c.src, c.dst, c.shift, c.unknown, c.inbounds, c.typed).second) {
          edges[c.src].push_back({c.dst, c.shift, c.unknown, c.inbounds, c.typed});
        }
        break;
      case Constraint::Kind::kLoad:
        through[c.src].push_back(i);
        break;
      case Constraint::Kind::kStore:
        through[c.dst].push_back(i);
        break;
      case Constraint::Kind::kCopyContents:
        through[c.src].push_back(i);
        if (c.dst != c.src) through[c.dst].push_back(i);
        break;
    }
  }

  // Nodes on a cycle of plain copies end up with the same set: each such cycle is collapsed
  // into one node (its representative), found again whenever the edges have grown by half.
  std::vector<uint32_t> rep(nodes);
  for (uint32_t n = 0; n < nodes; ++n) rep[n] = n;
  const auto find = [&rep](uint32_t n) {
    while (rep[n] != n) n = rep[n] = rep[rep[n]];
    return n;
  };
  // What each node has received and not yet passed on.
  std::vector<Set> pending(nodes);
  // First in, first out: a node waits while more arrives for it, and passes it on at once
  // (last in, first out passed many small deltas: twice the time on cp-demangle and minigzip).
  std::deque<uint32_t> worklist;
  std::vector<bool> queued(nodes, false);
  const auto enqueue = [&](uint32_t node) {
    if (!queued[node]) {
      queued[node] = true;
      worklist.push_back(node);
    }
  };
  // One pointee. A pointer into an object at an unknown offset stands for every offset of it:
  // a known offset beside it adds nothing.
  const auto add = [&](uint32_t node, uint32_t id) {
    node = find(node);
    if (!ids.IsUnknown(id) && contains(pts[node], ids.Unknown(id))) return;
    if (!insert(pts[node], id)) return;
    insert(pending[node], id);
    enqueue(node);
  };
  // Adds what `from` (another node's set, or a delta) holds and node lacks, and says whether
  // there was any. (Known offsets of an object it holds at an unknown offset are dropped when
  // the node passes them on.)
  Set fresh;
  const auto add_all = [&](uint32_t node, const Set& from) {
    node = find(node);
    Set& to = pts[node];
    fresh.clear();
    if (from.size() * 8 < to.size()) {
      for (uint32_t id : from) {
        if (!contains(to, id)) fresh.push_back(id);
      }
    } else {
      std::set_difference(from.begin(), from.end(), to.begin(), to.end(),
                          std::back_inserter(fresh));
    }
    if (fresh.empty()) return false;
    merge(to, fresh);
    merge(pending[node], fresh);
    enqueue(node);
    return true;
  };
  constexpr Pointee kNoPointee = ~Pointee{0};
  // A struct's field of a pointer into a declared object (a local or a global: its type is
  // its effective type) that holds no such struct there is read or written on no run without
  // undefined behaviour, as LLVM's type-based alias analysis also assumes. (A callback's
  // `void *` context may point to any caller's struct: each callee's fields reach its own.)
  absl::flat_hash_map<std::pair<Pointee, llvm::StructType*>, bool> holds_struct;
  const TypeRules rules{layout_, linked_unions_};
  const auto may_hold = [&](Pointee pointee, llvm::StructType* want) {
    const MemoryObject& object = objects_[ObjectOf(pointee)];
    if ((object.kind != MemoryObject::Kind::kLocal &&
         object.kind != MemoryObject::Kind::kGlobal) ||
        object.type == nullptr || !object.type->isSized()) {
      return true;
    }
    const auto [it, added] = holds_struct.try_emplace({pointee, want}, false);
    if (added) {
      const auto* global = llvm::dyn_cast_or_null<llvm::GlobalVariable>(object.site);
      const bool storage = global == nullptr || !global->isConstant();
      // At an unknown offset, or in an object too big for leaves of its own (one location,
      // every pointee at its start): anywhere in it.
      const bool anywhere = OffsetOf(pointee) == kUnknownOffset ||
                            (object.leaf_count == 1 && leaves_[object.first_leaf].array);
      it->second = anywhere ? MayContain(rules, object.type, want, storage)
                            : MayHold(rules, object.type, OffsetOf(pointee), want, storage);
    }
    return it->second;
  };
  const auto moved = [&](Pointee pointee, const Edge& e) -> Pointee {
    if (e.typed != nullptr && !may_hold(pointee, e.typed)) return kNoPointee;
    if (e.unknown || OffsetOf(pointee) == kUnknownOffset) {
      return Pack(ObjectOf(pointee), kUnknownOffset);
    }
    if (e.shift == kVariableShift) {
      // An object that is one array is where arithmetic on a pointer into it stays; in any
      // other object (a struct, even one whose first field is an array: `(char *)&r + i`)
      // the pointer may land anywhere.
      const MemoryObject& object = objects_[ObjectOf(pointee)];
      return object.leaf_count == 1 && leaves_[object.first_leaf].array
                 ? Normalize(pointee)
                 : Pack(ObjectOf(pointee), kUnknownOffset);
    }
    const int64_t offset = int64_t{OffsetOf(pointee)} + e.shift;
    // An inbounds step out of an object of known size (before it, or past its end) is poison:
    // the pointer is not into this object on any run without undefined behaviour. (A pointer
    // that may point to objects of several types, `strm->state` to deflate's and inflate's,
    // would otherwise make every field of the smaller one unknown.)
    const uint64_t size = objects_[ObjectOf(pointee)].size;
    if (e.inbounds && size != 0 && (offset < 0 || static_cast<uint64_t>(offset) > size)) {
      return kNoPointee;
    }
    return Normalize(Pack(ObjectOf(pointee),
                          offset < 0 ? kUnknownOffset : static_cast<uint64_t>(offset)));
  };
  size_t edge_count = edge_set.size();
  // A new plain edge passes on everything its source holds now; later arrivals follow it.
  const auto add_edge = [&](uint32_t src, uint32_t dst) {
    src = find(src);
    dst = find(dst);
    if (src == dst || !edge_set.emplace(src, dst, 0, false, false, nullptr).second) return;
    edges[src].push_back({dst, 0, false, false, nullptr});
    ++edge_count;
    add_all(dst, pts[src]);
  };
  // Tarjan's algorithm over the representatives and their plain edges; every component of
  // several nodes becomes one, which then passes its whole set on once more.
  // Visit numbers grow across searches: a node numbered before this search began is unvisited
  // in it. `roots`: where to search from (null: everywhere).
  std::vector<uint64_t> order(nodes, 0), low(nodes, 0);
  std::vector<uint32_t> stack, members;
  std::vector<bool> on_stack(nodes, false);
  std::vector<std::pair<uint32_t, size_t>> frames;
  uint64_t visited = 0;
  const auto collapse = [&](const std::vector<uint32_t>* roots) {
    const uint64_t first = ++visited;
    const size_t count = roots != nullptr ? roots->size() : nodes;
    for (size_t r = 0; r < count; ++r) {
      const uint32_t root = roots != nullptr ? find((*roots)[r]) : static_cast<uint32_t>(r);
      if (find(root) != root || order[root] >= first) continue;
      order[root] = low[root] = visited++;
      stack.push_back(root);
      on_stack[root] = true;
      frames.emplace_back(root, 0);
      while (!frames.empty()) {
        const uint32_t n = frames.back().first;
        if (frames.back().second < edges[n].size()) {
          const Edge& e = edges[n][frames.back().second++];
          if (!e.plain()) continue;
          const uint32_t d = find(e.dst);
          if (order[d] < first) {
            order[d] = low[d] = visited++;
            stack.push_back(d);
            on_stack[d] = true;
            frames.emplace_back(d, 0);
          } else if (on_stack[d]) {
            low[n] = std::min(low[n], order[d]);
          }
          continue;
        }
        frames.pop_back();
        if (!frames.empty()) {
          low[frames.back().first] = std::min(low[frames.back().first], low[n]);
        }
        if (low[n] != order[n]) continue;
        members.clear();
        uint32_t m;
        do {
          m = stack.back();
          stack.pop_back();
          on_stack[m] = false;
          members.push_back(m);
        } while (m != n);
        if (members.size() == 1) continue;
        for (uint32_t other : members) {
          if (other == n) continue;
          rep[other] = n;
          Set more;
          std::set_difference(pts[other].begin(), pts[other].end(), pts[n].begin(),
                              pts[n].end(), std::back_inserter(more));
          merge(pts[n], more);
          Set().swap(pts[other]);
          edges[n].insert(edges[n].end(), edges[other].begin(), edges[other].end());
          std::vector<Edge>().swap(edges[other]);
          through[n].insert(through[n].end(), through[other].begin(), through[other].end());
          std::vector<uint32_t>().swap(through[other]);
          Set().swap(pending[other]);
        }
        pending[n] = pts[n];
        enqueue(n);
      }
    }
  };
  // A value whose only source is one plain copy (a cast, a getelementptr of offset 0) holds
  // what that source holds, always: it is merged into it before solving, so a chain of such
  // copies passes each pointee on once, not once a link. (Loads are sources too: a load's
  // value is never merged.)
  {
    std::vector<uint32_t> sources(values, 0), source(values, 0);
    for (const Constraint& c : constraints) {
      if (c.kind == Constraint::Kind::kLoad && c.dst < values) sources[c.dst] += 2;
      if (c.kind != Constraint::Kind::kCopy || c.dst >= values) continue;
      sources[c.dst] += (c.plain() && c.src != c.dst) ? 1 : 2;
      source[c.dst] = c.src;
    }
    for (uint32_t v = 0; v < values; ++v) {
      if (sources[v] != 1 || !pts[v].empty()) continue;
      const uint32_t into = find(source[v]);
      if (into == v) continue;
      rep[v] = into;
      edges[into].insert(edges[into].end(), edges[v].begin(), edges[v].end());
      std::vector<Edge>().swap(edges[v]);
      through[into].insert(through[into].end(), through[v].begin(), through[v].end());
      std::vector<uint32_t>().swap(through[v]);
    }
  }
  for (uint32_t n = 0; n < nodes; ++n) {
    if (pts[n].empty() || find(n) != n) continue;
    pending[n] = pts[n];
    enqueue(n);
  }
  collapse(nullptr);
  size_t edges_at_collapse = edge_count;

  Set delta;
  std::vector<uint32_t> suspects;
  absl::flat_hash_set<uint64_t> suspected;
  std::vector<uint32_t> dropped, leaves;
  std::vector<Pointee> delta_pointees;
  while (!worklist.empty()) {
    const uint32_t n = worklist.front();
    worklist.pop_front();
    queued[n] = false;
    if (find(n) != n) continue;  // collapsed into another node, which was queued
    delta.swap(pending[n]);
    pending[n].clear();
    // Known offsets of objects the set has since taken at an unknown offset pass on nothing
    // the unknown offset does not: they leave the set and the delta.
    dropped.clear();
    delta_pointees.clear();
    for (uint32_t id : delta) {
      if (!ids.IsUnknown(id) && contains(pts[n], ids.Unknown(id))) {
        dropped.push_back(id);
      } else {
        delta_pointees.push_back(ids.Pointee(id));
      }
    }
    if (!dropped.empty()) {
      for (Set* set : {&delta, &pts[n]}) {
        merged.clear();
        std::set_difference(set->begin(), set->end(), dropped.begin(), dropped.end(),
                            std::back_inserter(merged));
        set->swap(merged);
      }
    }
    for (size_t e = 0; e < edges[n].size(); ++e) {
      const Edge edge = edges[n][e];
      if (edge.plain()) {
        // Lazy cycle detection (Hardekopf and Lin): an edge whose two ends hold the same set
        // may lie on a cycle; the search for one starts at its end, once per edge.
        const uint32_t d = find(edge.dst);
        if (d != n && !add_all(d, delta) && pts[d].size() == pts[n].size() &&
            pts[d] == pts[n] && suspected.insert(uint64_t{n} << 32 | d).second) {
          suspects.push_back(d);
        }
        continue;
      }
      for (Pointee p : delta_pointees) {
        const Pointee to = moved(p, edge);
        if (to != kNoPointee) add(edge.dst, ids.Of(to));
      }
    }
    for (size_t t = 0; t < through[n].size(); ++t) {
      const uint32_t i = through[n][t];
      const Constraint& c = constraints[i];
      for (Pointee p : delta_pointees) {
        leaves.clear();
        AppendLeavesOf(p, c.kind == Constraint::Kind::kCopyContents ? kToEnd : c.size, &leaves);
        for (uint32_t leaf : leaves) {
          switch (c.kind) {
            case Constraint::Kind::kLoad:
              add_edge(values + leaf, c.dst);
              break;
            case Constraint::Kind::kStore:
              add_edge(c.src, values + leaf);
              break;
            case Constraint::Kind::kCopyContents:
              // Every source leaf's contents reach every destination leaf, through the copy.
              if (find(c.src) == n) add_edge(values + leaf, copy_node[i]);
              if (find(c.dst) == n) add_edge(copy_node[i], values + leaf);
              break;
            case Constraint::Kind::kCopy:
              break;
          }
        }
      }
    }
    if (!suspects.empty()) {
      collapse(&suspects);
      suspects.clear();
    }
    if (edge_count - edges_at_collapse > std::max<size_t>(4096, edges_at_collapse / 2)) {
      collapse(nullptr);
      edges_at_collapse = edge_count;
    }
  }
  // The objects whose address some memory may hold: any leaf's contents but a parameter's
  // slot (a slot's address never leaves its function, and it holds what the call passed).
  absl::flat_hash_set<uint32_t> slot_objects;
  for (const llvm::Function* function : functions_) {
    for (const auto& [slot, argument] : ParameterSlots(*function)) {
      auto it = object_of_site_.find(slot);
      if (it != object_of_site_.end()) slot_objects.insert(it->second);
    }
  }
  std::vector<std::vector<uint32_t>> holds(objects_.size());
  for (uint32_t l = 0; l < leaves_.size(); ++l) {
    if (slot_objects.contains(leaves_[l].object)) continue;
    std::vector<uint32_t>& out = holds[leaves_[l].object];
    for (uint32_t id : pts[find(values + l)]) out.push_back(ObjectOf(ids.Pointee(id)));
  }
  for (std::vector<uint32_t>& out : holds) {
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
  }
  ComputeReach(holds);
  // A heap object with fields that some pointer may point into at an unknown offset is one
  // location again: its leaves are one place, named after the object. (Only a pointer can
  // reach into it: an integer made from pointers, `p - q`, holds their pointees too, but what
  // is made a pointer again, or loaded as one, is a pointer value of its own.)
  std::vector<bool> pointer(nodes, false);
  for (const auto& [value, id] : value_ids_) {
    if (value->getType()->isPtrOrPtrVectorTy()) pointer[find(id)] = true;
  }
  for (uint32_t n = 0; n < values; ++n) {
    if (find(n) != n || !pointer[n]) continue;
    for (uint32_t id : pts[n]) {
      if (!ids.IsUnknown(id)) continue;
      const uint32_t o = ObjectOf(ids.Pointee(id));
      if (objects_[o].kind != MemoryObject::Kind::kHeap || objects_[o].leaf_count < 2 ||
          objects_[o].smashed) {
        continue;
      }
      objects_[o].smashed = true;
      for (uint32_t i = 0; i < objects_[o].leaf_count; ++i) {
        leaves_[objects_[o].first_leaf + i].name = objects_[o].name;
        leaves_[objects_[o].first_leaf + i].label = objects_[o].name;
      }
    }
  }
  // The same sets whatever the order things arrived in: known offsets of an object the set
  // also holds at an unknown offset are dropped.
  // Values merged into one node share its set: it is made once.
  constexpr uint32_t kNotYet = ~uint32_t{0};
  std::vector<uint32_t> made(nodes, kNotYet);  // by node: the value whose set is its
  for (uint32_t v = 0; v < values; ++v) {
    const uint32_t n = find(v);
    PointsTo& out = points_to_[v];
    if (made[n] != kNotYet) {
      out = points_to_[made[n]];
      continue;
    }
    made[n] = v;
    const Set& set = pts[n];
    out.reserve(set.size());
    for (uint32_t id : set) {
      if (ids.IsUnknown(id) || !contains(set, ids.Unknown(id))) out.push_back(ids.Pointee(id));
    }
    std::sort(out.begin(), out.end());
    Set().swap(pts[n]);
  }
}

IrModel::Pointee IrModel::Normalize(Pointee pointee) const {
  const uint32_t offset = OffsetOf(pointee);
  if (offset == kUnknownOffset) return pointee;
  const MemoryObject& object = objects_[ObjectOf(pointee)];
  const auto begin = leaves_.begin() + object.first_leaf;
  const auto end = begin + object.leaf_count;
  // The last leaf starting at or before the offset (leaves are in offset order).
  auto it = std::upper_bound(begin, end, uint64_t{offset},
                             [](uint64_t o, const Leaf& leaf) { return o < leaf.offset; });
  if (it != begin) {
    const Leaf& leaf = *(it - 1);
    if (leaf.size == kToEnd || offset < leaf.offset + leaf.size) {
      // Inside an array every element is the one location: its start stands for all of them.
      return leaf.array ? Pack(ObjectOf(pointee), leaf.offset) : pointee;
    }
    // Padding between fields is still inside the object: an access there reaches the fields
    // it overlaps (or all of them), and the offset stays known.
    if (it != end) return pointee;
  }
  return Pack(ObjectOf(pointee), kUnknownOffset);
}

void IrModel::DirectAccesses(const llvm::Instruction& instruction,
                             std::vector<std::pair<const llvm::Value*, uint64_t>>* out) const {
  auto size_of = [&](llvm::Type* type) -> uint64_t {
    return type->isSized() ? layout_.getTypeStoreSize(type).getFixedSize() : kToEnd;
  };
  if (const auto* load = llvm::dyn_cast<llvm::LoadInst>(&instruction)) {
    out->emplace_back(load->getPointerOperand(), size_of(load->getType()));
  } else if (const auto* store = llvm::dyn_cast<llvm::StoreInst>(&instruction)) {
    out->emplace_back(store->getPointerOperand(), size_of(store->getValueOperand()->getType()));
  } else if (const auto* rmw = llvm::dyn_cast<llvm::AtomicRMWInst>(&instruction)) {
    out->emplace_back(rmw->getPointerOperand(), kToEnd);
  } else if (const auto* xchg = llvm::dyn_cast<llvm::AtomicCmpXchgInst>(&instruction)) {
    out->emplace_back(xchg->getPointerOperand(), kToEnd);
  } else if (const auto* call = llvm::dyn_cast<llvm::CallBase>(&instruction)) {
    if (!Callees(*call).empty() || llvm::isa<llvm::DbgInfoIntrinsic>(call)) return;
    for (unsigned a = 0; a < call->arg_size(); ++a) {
      if (call->getArgOperand(a)->getType()->isPointerTy()) {
        out->emplace_back(call->getArgOperand(a), kToEnd);
      }
    }
  }
}

}  // namespace sluice::analyzer
