// Arrays filled whole by a run of writes (IrModel::ArrayFilledAt): the strong update an array
// gets where each of its elements is written in turn before anything reads it, which its one
// location (an array is one leaf) would otherwise only ever get weakly. C++ builds an
// initializer list's array so, an element constructed at a time (`for (auto [k, v] :
// {std::pair{...}, std::pair{...}})`), as C code fills a small array an element a statement.
#include <algorithm>
#include <utility>

#include "llvm/IR/Instructions.h"
#include "llvm/IR/IntrinsicInst.h"
#include "sluice/analyzer/ir_model.h"
#include "sluice/analyzer/ir_model_internal.h"

namespace sluice::analyzer {

using internal::ObjectOf;

namespace {

// Byte ranges [begin, end), kept sorted and merged: whether they cover [begin, end) whole.
class Ranges {
 public:
  void Add(uint64_t begin, uint64_t end) {
    ranges_.emplace_back(begin, end);
    std::sort(ranges_.begin(), ranges_.end());
    std::vector<std::pair<uint64_t, uint64_t>> merged;
    for (const auto& [b, e] : ranges_) {
      if (!merged.empty() && b <= merged.back().second) {
        merged.back().second = std::max(merged.back().second, e);
      } else {
        merged.emplace_back(b, e);
      }
    }
    ranges_.swap(merged);
  }
  bool Cover(uint64_t begin, uint64_t end) const {
    return ranges_.size() == 1 && ranges_[0].first <= begin && ranges_[0].second >= end;
  }

 private:
  std::vector<std::pair<uint64_t, uint64_t>> ranges_;
};

}  // namespace

const std::vector<uint32_t>& IrModel::ArrayFilledAt(const llvm::Instruction& instruction) const {
  static const std::vector<uint32_t> kNone;
  auto it = array_fills_.find(&instruction);
  return it == array_fills_.end() ? kNone : it->second;
}

void IrModel::ComputeArrayFills(const llvm::Function& function) {
  // An array leaf of one of the function's locals written so far in the run that began at
  // `first`, by the writes that name its bytes (a store or a callee's first writes through a
  // pointer at a constant offset from the local itself).
  struct Run {
    const llvm::Instruction* first = nullptr;
    Ranges written;
  };
  absl::flat_hash_map<uint32_t, Run> runs;  // by leaf
  // A write of `size` bytes at `offset` into local object `object`, by `instruction`.
  const auto write = [&](const llvm::Instruction& instruction, uint32_t object, uint64_t offset,
                         uint64_t size) {
    const MemoryObject& o = objects_[object];
    for (uint32_t leaf = o.first_leaf; leaf < o.first_leaf + o.leaf_count; ++leaf) {
      const Leaf& l = leaves_[leaf];
      if (!l.array || l.size == kToEnd || offset < l.offset || offset + size > l.offset + l.size) {
        continue;
      }
      Run& run = runs[leaf];
      if (run.first == nullptr) {
        run.first = &instruction;
        // Its elements' padding holds no value: a copy of one element may leave it out.
        for (const auto& [begin, end] : l.padding) run.written.Add(begin, end);
      }
      run.written.Add(offset, offset + size);
      if (run.written.Cover(l.offset, l.offset + l.size)) {
        array_fills_[run.first].push_back(leaf);
        runs.erase(leaf);
      }
      return;
    }
  };
  // The local object `pointer` points into at a constant offset from its start (its alloca
  // with constant getelementptrs and casts), or ~0.
  const auto local_at = [&](const llvm::Value* pointer, uint64_t* offset) -> uint32_t {
    const llvm::Value* base = internal::ConstantBase(pointer, layout_, offset);
    if (base == nullptr || !llvm::isa<llvm::AllocaInst>(base)) return ~uint32_t{0};
    auto it = object_of_site_.find(base);
    if (it == object_of_site_.end() || objects_[it->second].kind != MemoryObject::Kind::kLocal) {
      return ~uint32_t{0};
    }
    return it->second;
  };
  // Ends the runs in the objects `pointer` may point to: what it reads may be any of theirs.
  const auto read = [&](const llvm::Value* pointer) {
    for (const Pointee pointee : PointsToOf(pointer)) {
      const uint32_t object = ObjectOf(pointee);
      absl::erase_if(runs,
                     [&](const auto& entry) { return leaves_[entry.first].object == object; });
    }
  };
  absl::flat_hash_set<const llvm::BasicBlock*> done;
  for (const llvm::BasicBlock& start : function) {
    // A run goes on along a chain of blocks each the only successor of the one before and
    // with no other predecessor (past a call that may throw, an invoke, whose other way is
    // the unwinding, which the analysis does not follow), and ends where the chain does.
    runs.clear();
    for (const llvm::BasicBlock* block = &start; block != nullptr && done.insert(block).second;) {
      for (const llvm::Instruction& instruction : *block) {
        uint64_t offset = 0;
        if (const auto* load = llvm::dyn_cast<llvm::LoadInst>(&instruction)) {
          read(load->getPointerOperand());
        } else if (const auto* store = llvm::dyn_cast<llvm::StoreInst>(&instruction)) {
          const llvm::Type* type = store->getValueOperand()->getType();
          const uint32_t object = local_at(store->getPointerOperand(), &offset);
          if (object != ~uint32_t{0} && type->isSized()) {
            write(instruction, object, offset,
                  layout_.getTypeStoreSize(const_cast<llvm::Type*>(type)).getFixedSize());
          }
        } else if (const auto* call = llvm::dyn_cast<llvm::CallBase>(&instruction)) {
          if (internal::MarksOnly(*call)) continue;
          // A call that reaches an array goes on with its run only where it is given a pointer
          // to it only to write there first (a constructor of one of its elements, a copy of a
          // known length into it): anything else it may do there may read it.
          const std::vector<const llvm::Function*>& callees = Callees(*call);
          struct Write {
            uint32_t object;
            unsigned argument;  // the pointer it writes through
            uint64_t offset, size;
          };
          std::vector<Write> writes;
          if (const auto* fill = llvm::dyn_cast<llvm::MemIntrinsic>(call)) {
            const auto* length = llvm::dyn_cast<llvm::ConstantInt>(fill->getLength());
            const uint32_t object = local_at(fill->getRawDest(), &offset);
            if (length != nullptr && object != ~uint32_t{0}) {
              writes.push_back({object, 0, offset, length->getZExtValue()});
            }
          } else if (callees.size() == 1) {
            for (const ParameterWrite& w : WrittenFirst(*callees[0])) {
              if (w.argument >= call->arg_size()) continue;
              const uint32_t object = local_at(call->getArgOperand(w.argument), &offset);
              if (object != ~uint32_t{0}) {
                writes.push_back({object, w.argument, offset + w.offset, w.size});
              }
            }
          }
          // An array this call writes goes on unless another of its arguments may point into
          // it (a copy's source), which it may read; such a call begins no run either. Others
          // go on where the call cannot reach them: neither its arguments nor what globals
          // lead to lead to them (ReachedObjects).
          const auto given_otherwise = [&](uint32_t object) {
            for (unsigned a = 0; a < call->arg_size(); ++a) {
              if (std::any_of(writes.begin(), writes.end(), [&](const Write& w) {
                    return w.object == object && w.argument == a;
                  })) {
                continue;
              }
              for (const Pointee pointee : PointsToOf(call->getArgOperand(a))) {
                if (ObjectOf(pointee) == object) return true;
              }
            }
            return false;
          };
          std::vector<uint32_t> read_too;
          for (const Write& w : writes) {
            if (given_otherwise(w.object)) read_too.push_back(w.object);
          }
          std::erase_if(writes, [&](const Write& w) {
            return std::find(read_too.begin(), read_too.end(), w.object) != read_too.end();
          });
          std::vector<uint32_t> reached;
          if (!runs.empty()) reached = ReachedObjects(*call);
          absl::erase_if(runs, [&](const auto& entry) {
            const uint32_t object = leaves_[entry.first].object;
            if (std::any_of(writes.begin(), writes.end(),
                            [&](const Write& w) { return w.object == object; })) {
              return false;
            }
            return ReachedFromEverywhere(object) ||
                   std::binary_search(reached.begin(), reached.end(), object);
          });
          for (const Write& w : writes) write(instruction, w.object, w.offset, w.size);
        } else if (llvm::isa<llvm::AtomicRMWInst>(instruction) ||
                   llvm::isa<llvm::AtomicCmpXchgInst>(instruction)) {
          read(instruction.getOperand(0));
        }
      }
      const llvm::BasicBlock* next = block->getUniqueSuccessor();
      if (const auto* invoke = llvm::dyn_cast<llvm::InvokeInst>(block->getTerminator())) {
        next = invoke->getNormalDest();
      }
      block = next != nullptr && next->getUniquePredecessor() == block ? next : nullptr;
    }
  }
}

}  // namespace sluice::analyzer
