// Where a function's SSA values die: a backward liveness analysis at instruction granularity.
// The problem builder kills a value's fact at its last use, so that a value that no later
// instruction reads stops being a fact the solver carries through the rest of the function
// (docs/analyzer.md, "SSA values"). A phi's operands count as used at the phi itself (not at
// the end of each predecessor): a little longer-lived than they need be, never shorter.
#ifndef SLUICE_ANALYZER_LIVENESS_H_
#define SLUICE_ANALYZER_LIVENESS_H_

#include <cstdint>
#include <functional>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/Instruction.h"

namespace sluice::analyzer {

class ValueLiveness {
 public:
  // `tracked`: the values that have facts (the others are ignored); `is_node`: the
  // instructions that are ICFG nodes (the others neither use nor define anything here).
  ValueLiveness(const llvm::Function& function,
                const std::function<bool(const llvm::Value*)>& tracked,
                const std::function<bool(const llvm::Instruction&)>& is_node);

  // The tracked values that no instruction after `instruction` reads, on any path, before
  // they are defined again: the ones it uses for the last time, and itself when nothing uses
  // it. A `ret`'s returned value is not among them (the return flow reads it at the exit).
  std::vector<const llvm::Value*> DyingAt(const llvm::Instruction& instruction) const;
  // The tracked values live after `terminator` that are not live on entry to `successor`
  // (values only the other successors read).
  std::vector<const llvm::Value*> DeadOnEdge(const llvm::Instruction& terminator,
                                             const llvm::BasicBlock& successor) const;

 private:
  using Bits = std::vector<uint64_t>;
  void Uses(const llvm::Instruction& instruction, std::vector<uint32_t>* out) const;
  bool Test(const Bits& bits, uint32_t i) const { return (bits[i / 64] >> (i % 64)) & 1; }

  std::vector<const llvm::Value*> values_;
  absl::flat_hash_map<const llvm::Value*, uint32_t> index_;
  absl::flat_hash_map<const llvm::BasicBlock*, Bits> live_in_, live_out_;
  absl::flat_hash_map<const llvm::Instruction*, std::vector<uint32_t>> dying_;
};

}  // namespace sluice::analyzer

#endif  // SLUICE_ANALYZER_LIVENESS_H_
