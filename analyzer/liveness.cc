#include "sluice/analyzer/liveness.h"

#include <algorithm>
#include <bit>

#include "llvm/IR/CFG.h"
#include "llvm/IR/Instructions.h"

namespace sluice::analyzer {

ValueLiveness::ValueLiveness(const llvm::Function& function,
                             const std::function<bool(const llvm::Value*)>& tracked,
                             const std::function<bool(const llvm::Instruction&)>& is_node) {
  for (const llvm::Argument& argument : function.args()) {
    if (tracked(&argument)) {
      index_.emplace(&argument, values_.size());
      values_.push_back(&argument);
    }
  }
  for (const llvm::BasicBlock& block : function) {
    for (const llvm::Instruction& instruction : block) {
      if (is_node(instruction) && tracked(&instruction)) {
        index_.emplace(&instruction, values_.size());
        values_.push_back(&instruction);
      }
    }
  }
  const size_t words = (values_.size() + 63) / 64;
  for (const llvm::BasicBlock& block : function) {
    live_in_[&block].assign(words, 0);
    live_out_[&block].assign(words, 0);
  }
  // Per block: the values it reads before defining them (gen) and the ones it defines (kill).
  absl::flat_hash_map<const llvm::BasicBlock*, std::pair<Bits, Bits>> transfer;
  std::vector<uint32_t> uses;
  for (const llvm::BasicBlock& block : function) {
    Bits gen(words, 0), kill(words, 0);
    for (auto it = block.rbegin(); it != block.rend(); ++it) {
      if (!is_node(*it)) continue;
      if (auto self = index_.find(&*it); self != index_.end()) {
        kill[self->second / 64] |= uint64_t{1} << (self->second % 64);
        gen[self->second / 64] &= ~(uint64_t{1} << (self->second % 64));
      }
      uses.clear();
      Uses(*it, &uses);
      for (uint32_t u : uses) gen[u / 64] |= uint64_t{1} << (u % 64);
    }
    transfer.emplace(&block, std::make_pair(std::move(gen), std::move(kill)));
  }
  // live_out(B) = the union of live_in over B's successors; live_in(B) = gen | (out & ~kill).
  // Blocks in reverse order converge in few rounds on the forward layout Clang emits.
  std::vector<const llvm::BasicBlock*> order;
  for (const llvm::BasicBlock& block : function) order.push_back(&block);
  std::reverse(order.begin(), order.end());
  for (bool changed = true; changed;) {
    changed = false;
    for (const llvm::BasicBlock* block : order) {
      Bits& out = live_out_[block];
      for (const llvm::BasicBlock* successor : llvm::successors(block)) {
        const Bits& in = live_in_[successor];
        for (size_t w = 0; w < words; ++w) out[w] |= in[w];
      }
      const auto& [gen, kill] = transfer.at(block);
      Bits& in = live_in_[block];
      for (size_t w = 0; w < words; ++w) {
        const uint64_t next = gen[w] | (out[w] & ~kill[w]);
        if (next != in[w]) {
          in[w] = next;
          changed = true;
        }
      }
    }
  }
  // Walking each block backwards from its live-out: a value used by an instruction and not
  // live after it dies there; a value defined and not live after its definition dies at once.
  for (const llvm::BasicBlock& block : function) {
    Bits live = live_out_[&block];
    for (auto it = block.rbegin(); it != block.rend(); ++it) {
      if (!is_node(*it)) continue;
      std::vector<uint32_t>& dying = dying_[&*it];
      if (auto self = index_.find(&*it); self != index_.end()) {
        if (!Test(live, self->second)) dying.push_back(self->second);
        live[self->second / 64] &= ~(uint64_t{1} << (self->second % 64));
      }
      uses.clear();
      Uses(*it, &uses);
      const auto* ret = llvm::dyn_cast<llvm::ReturnInst>(&*it);
      for (uint32_t u : uses) {
        const bool returned = ret != nullptr && ret->getReturnValue() == values_[u];
        if (!Test(live, u) && !returned) dying.push_back(u);
        live[u / 64] |= uint64_t{1} << (u % 64);
      }
      std::sort(dying.begin(), dying.end());
      dying.erase(std::unique(dying.begin(), dying.end()), dying.end());
    }
  }
}

void ValueLiveness::Uses(const llvm::Instruction& instruction, std::vector<uint32_t>* out) const {
  for (const llvm::Value* operand : instruction.operands()) {
    if (auto it = index_.find(operand); it != index_.end()) out->push_back(it->second);
  }
}

std::vector<const llvm::Value*> ValueLiveness::DyingAt(
    const llvm::Instruction& instruction) const {
  std::vector<const llvm::Value*> out;
  if (auto it = dying_.find(&instruction); it != dying_.end()) {
    for (uint32_t v : it->second) out.push_back(values_[v]);
  }
  return out;
}

std::vector<const llvm::Value*> ValueLiveness::DeadOnEdge(
    const llvm::Instruction& terminator, const llvm::BasicBlock& successor) const {
  std::vector<const llvm::Value*> out;
  const Bits& after = live_out_.at(terminator.getParent());
  const Bits& in = live_in_.at(&successor);
  for (size_t w = 0; w < after.size(); ++w) {
    for (uint64_t bits = after[w] & ~in[w]; bits != 0; bits &= bits - 1) {
      out.push_back(values_[w * 64 + static_cast<uint32_t>(std::countr_zero(bits))]);
    }
  }
  return out;
}

}  // namespace sluice::analyzer
