// What analyzer/ir_model.cc (objects, the call graph, accesses) and analyzer/points_to.cc (the
// Andersen points-to analysis) share about pointees and the library functions they model.
// Private to analyzer/.
#ifndef SLUICE_ANALYZER_IR_MODEL_INTERNAL_H_
#define SLUICE_ANALYZER_IR_MODEL_INTERNAL_H_

#include <algorithm>
#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "llvm/ADT/PostOrderIterator.h"
#include "llvm/IR/CFG.h"
#include "llvm/IR/DataLayout.h"
#include "llvm/IR/InstrTypes.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/IntrinsicInst.h"

namespace sluice::analyzer::internal {

inline constexpr uint32_t kUnknownOffset = 0xffffffff;
// An object with more scalar fields than this is one location.
inline constexpr uint32_t kMaxLeavesPerObject = 256;
inline constexpr int kMaxStructDepth = 8;

inline uint64_t Pack(uint32_t object, uint64_t offset) {
  return (uint64_t{object} << 32) | (offset >= kUnknownOffset ? kUnknownOffset : offset);
}
inline uint32_t ObjectOf(uint64_t pointee) { return static_cast<uint32_t>(pointee >> 32); }
inline uint32_t OffsetOf(uint64_t pointee) { return static_cast<uint32_t>(pointee); }

inline bool IsAllocator(std::string_view name) {
  return name == "malloc" || name == "calloc" || name == "realloc" || name == "aligned_alloc" ||
         name == "valloc" || name == "memalign" || name == "strdup" || name == "strndup" ||
         name == "reallocarray" || name == "_Znwm" || name == "_Znam";
}

// External functions whose result points where their first argument does.
inline bool ReturnsFirstArgument(std::string_view name) {
  return name == "memcpy" || name == "memmove" || name == "memset" || name == "strcpy" ||
         name == "strncpy" || name == "strcat" || name == "strncat" || name == "stpcpy" ||
         name == "strchr" || name == "strrchr" || name == "strstr" || name == "strpbrk" ||
         name == "strtok" || name == "strtok_r" || name == "memchr" || name == "fgets" ||
         name == "gets" || name == "strchrnul" || name == "rawmemchr";
}

// External functions that copy memory from their second argument to their first. (A
// reallocation copies its block into what it returns: IrModel::CopiedBy.)
inline bool CopiesMemory(std::string_view name) {
  return name == "memcpy" || name == "memmove" || name == "strcpy" || name == "strncpy" ||
         name == "strcat" || name == "strncat" || name == "stpcpy";
}

// A pointer's base past casts and constant getelementptrs (at most 32), with the offset they
// add; null where that offset is negative or not constant.
const llvm::Value* ConstantBase(const llvm::Value* pointer, const llvm::DataLayout& layout,
                                uint64_t* offset);

// The variable an allocation's result is stored into at once (before any other call), when it
// is stored nowhere else, that variable holds nothing else and its address goes nowhere: a load
// of it is then the site's last object until something runs the site again
// (analyzer/recency.cc). Null otherwise.
const llvm::AllocaInst* RecencySlot(const llvm::CallBase& call);

// Whether a call only marks what the code around it does (debug information, a local's
// lifetime: llvm.dbg.*, llvm.lifetime.*), reading and writing nothing.
inline bool MarksOnly(const llvm::CallBase& call) {
  const auto* intrinsic = llvm::dyn_cast<llvm::IntrinsicInst>(&call);
  return intrinsic != nullptr &&
         (llvm::isa<llvm::DbgInfoIntrinsic>(intrinsic) || intrinsic->isLifetimeStartOrEnd());
}

// A forward data-flow analysis of a function's blocks, in reverse post order to its fixed
// point: each reached block's state on entry. `step(instruction, state)` applies an
// instruction to a state; `join(into, from)` merges a predecessor's state into a successor's
// and says whether that changed it.
template <class State, class Step, class Join>
absl::flat_hash_map<const llvm::BasicBlock*, State> ForwardDataflow(
    const llvm::Function& function, State entry, Step step, Join join) {
  absl::flat_hash_map<const llvm::BasicBlock*, State> in;
  in.emplace(&function.getEntryBlock(), std::move(entry));
  llvm::ReversePostOrderTraversal<const llvm::Function*> order(&function);
  for (bool changed = true; changed;) {
    changed = false;
    for (const llvm::BasicBlock* block : order) {
      auto found = in.find(block);
      if (found == in.end()) continue;
      State state = found->second;
      for (const llvm::Instruction& instruction : *block) step(instruction, state);
      for (const llvm::BasicBlock* next : llvm::successors(block)) {
        auto [it, inserted] = in.try_emplace(next, state);
        if (inserted || join(it->second, state)) changed = true;
      }
    }
  }
  return in;
}

// Tarjan's algorithm, iteratively, over nodes 0..n-1 and their edges (`edges[node]`, a
// vector of nodes): calls `component(members)` for each strongly connected component, every
// component after those it has edges to, so what a component leads to is known when it is
// found.
template <class Component>
void StronglyConnected(const std::vector<std::vector<uint32_t>>& edges, Component component) {
  constexpr uint32_t kUnvisited = ~uint32_t{0};
  const uint32_t n = static_cast<uint32_t>(edges.size());
  std::vector<uint32_t> order(n, kUnvisited), low(n, 0), stack;
  std::vector<bool> on_stack(n, false);
  std::vector<std::pair<uint32_t, size_t>> frames;  // (node, next edge to follow)
  uint32_t visited = 0;
  const auto visit = [&](uint32_t node) {
    order[node] = low[node] = visited++;
    stack.push_back(node);
    on_stack[node] = true;
    frames.emplace_back(node, 0);
  };
  for (uint32_t root = 0; root < n; ++root) {
    if (order[root] != kUnvisited) continue;
    visit(root);
    while (!frames.empty()) {
      auto& [node, next] = frames.back();
      if (next < edges[node].size()) {
        const uint32_t target = edges[node][next++];
        if (order[target] == kUnvisited) {
          visit(target);
        } else if (on_stack[target]) {
          low[node] = std::min(low[node], order[target]);
        }
        continue;
      }
      const uint32_t done = node;
      frames.pop_back();
      if (!frames.empty()) {
        low[frames.back().first] = std::min(low[frames.back().first], low[done]);
      }
      if (low[done] != order[done]) continue;
      // `done` roots a component: its members are on the stack above it.
      const auto first = std::find(stack.rbegin(), stack.rend(), done).base() - 1;
      const std::vector<uint32_t> members(first, stack.end());
      stack.erase(first, stack.end());
      for (uint32_t m : members) on_stack[m] = false;
      component(members);
    }
  }
}

}  // namespace sluice::analyzer::internal

#endif  // SLUICE_ANALYZER_IR_MODEL_INTERNAL_H_
