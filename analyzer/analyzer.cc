// The analyses as IFDS problems (docs/analyzer.md): facts, the ICFG, flow functions, checks.
#include "sluice/analyzer/analyzer.h"

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <map>
#include <set>
#include <tuple>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "llvm/Demangle/Demangle.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/DebugInfo.h"
#include "llvm/IR/DebugInfoMetadata.h"
#include "llvm/IR/GlobalVariable.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/IntrinsicInst.h"
#include "sluice/analyzer/front_end.h"
#include "sluice/analyzer/ir_model.h"
#include "sluice/analyzer/liveness.h"
#include "sluice/base/heap.h"
#include "sluice/ifds/text_format.h"
#include "sluice/ifds/witness.h"

namespace sluice::analyzer {

const char* AnalysisName(Analysis analysis) {
  return analysis == Analysis::kUninit ? "uninit" : "taint";
}

// A place a finding can be reported: the node, and the facts that make it a finding there.
struct Check {
  uint32_t node = 0;
  std::vector<std::pair<uint32_t, std::string>> facts;  // fact id, what it names
  Finding finding;  // message and variable filled in when it fires
  bool per_fact = false;  // uninit: one finding per fact that holds
};

struct AnalyzedProgram::Data {
  ifds::Problem problem;
  ProgramStats stats;
  std::vector<std::string> system_header_directories;  // LoadedModule's
  Analysis analysis = Analysis::kUninit;
  std::vector<Check> checks;

  // A write into the pool (docs/analyzer.md, "The pool"): where one of `facts` holds at `node`
  // in a solution, the flow of edge `edge` makes `fact` (`pool` or `pool~held`) hold (Refine).
  struct PoolWrite {
    uint32_t edge = 0;
    uint32_t node = 0;
    uint32_t fact = 0;
    std::vector<uint32_t> facts;
    bool made = false;
    // Once made: the chain of the fact it writes there in the solution that made it, in which
    // only writes made before had a part (empty if none was found). A finding's path that
    // starts at this write starts where that chain does (Findings).
    std::vector<ifds::WitnessStep> chain;
  };
  std::vector<PoolWrite> pool_writes;

  // What a finding's path is told with, kept once the module is gone.
  struct Site {
    uint32_t file = 0;  // into `files`
    uint32_t line = 0;
    uint32_t column = 0;
  };
  std::vector<SourceLocation> files;  // file and directory only
  std::vector<Site> sites;            // by node
  std::vector<std::string> procedure_names;  // by procedure: the function's source name
  // A fact as a step names it: a memory location's name ("r.count"), empty for a value. The
  // shared facts by id; a function's own from its first id.
  std::vector<std::string> shared_labels;
  struct OwnLabels {
    uint32_t first = 0;
    std::vector<std::string> labels;
  };
  std::vector<OwnLabels> own_labels;  // by procedure
  // By node, where its flow generates facts: what that says of them ("is declared without a
  // value").
  absl::flat_hash_map<uint32_t, std::string> origins;
  // By node, a declaration's variable: what its origin names where the fact made is the pool's.
  absl::flat_hash_map<uint32_t, std::string> declared;
  uint32_t pool_fact = ~uint32_t{0}, held_fact = ~uint32_t{0};  // the pool's, if it has any
  bool Pooled(uint32_t fact) const { return fact == pool_fact || fact == held_fact; }

  SourceLocation Location(uint32_t node) const {
    SourceLocation location = files[sites[node].file];
    location.line = sites[node].line;
    location.column = sites[node].column;
    return location;
  }
  const std::string& Label(uint32_t node, uint32_t fact) const {
    static const std::string kNone;
    if (fact < shared_labels.size()) return shared_labels[fact];
    const OwnLabels& own = own_labels[problem.node_procedure[node]];
    const uint32_t k = fact - own.first;
    return fact >= own.first && k < own.labels.size() ? own.labels[k] : kNone;
  }
  // The steps of `finding`'s path from a witness chain (ifds/witness.h). `untraced`: the chain
  // starts at a write into the pool whose value's own chain was not found.
  std::vector<FlowStep> Path(const std::vector<ifds::WitnessStep>& chain, const Finding& finding,
                             bool untraced) const;
};

namespace {

constexpr uint32_t kNoFact = ~uint32_t{0};

// Functions that only read what their pointer arguments point to (uninit: they do not
// initialize it).
bool OnlyReads(std::string_view name) {
  static const absl::flat_hash_set<std::string_view> kReaders = {
      "printf", "fprintf", "sprintf", "snprintf", "dprintf", "vprintf", "vfprintf", "puts",
      "fputs", "strlen", "strnlen", "strcmp", "strncmp", "strcasecmp", "strncasecmp", "memcmp",
      "atoi", "atol", "atoll", "atof", "strtol", "strtoul", "strtoll", "strtoull", "strtod",
      "write", "send", "sendto", "system", "popen", "execl", "execlp", "execle", "execv",
      "execvp", "execve", "execvpe", "free", "perror", "syslog", "strchr", "strrchr", "strstr",
      "fwrite", "putchar", "fputc", "putc", "strdup", "strndup", "open", "fopen", "access",
      "unlink", "remove", "rename", "chdir", "mkdir", "stat", "lstat"};
  return kReaders.contains(name);
}

bool AllocatesUninitialized(std::string_view name) {
  return name == "malloc" || name == "realloc" || name == "aligned_alloc" || name == "valloc" ||
         name == "memalign" || name == "reallocarray" || name == "_Znwm" || name == "_Znam";
}

bool CopiesStrings(std::string_view name) {
  return name == "memcpy" || name == "memmove" || name == "strcpy" || name == "strncpy" ||
         name == "strcat" || name == "strncat" || name == "stpcpy";
}

bool FormatsInto(std::string_view name) {
  return name == "sprintf" || name == "snprintf" || name == "vsprintf" || name == "vsnprintf";
}

// Replaces what a fact, node or procedure name may not hold (ifds/text_format.h).
std::string Sanitize(std::string_view raw) {
  std::string out;
  for (char c : raw) {
    const bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                    std::string_view("_.$:@'<>[]/+*!?~^&|%=-").find(c) != std::string_view::npos;
    out += ok ? c : '_';
  }
  if (out.empty()) out = "_";
  for (size_t at = out.find("->"); at != std::string::npos; at = out.find("->")) out[at + 1] = '_';
  return out;
}

SourceLocation LocationOf(const llvm::Instruction& instruction) {
  SourceLocation location;
  // A local's alloca has no place of its own: the variable's declaration is its place. The
  // variable has a line and no column; the declare that names it has the place of its name
  // (Clang's), taken where it is on that line.
  if (const auto* alloca = llvm::dyn_cast<llvm::AllocaInst>(&instruction)) {
    for (const llvm::DbgVariableIntrinsic* declare :
         llvm::FindDbgDeclareUses(const_cast<llvm::AllocaInst*>(alloca))) {
      const llvm::DILocalVariable* variable = declare->getVariable();
      if (variable == nullptr || variable->getLine() == 0) continue;
      location.file = variable->getFilename().str();
      location.directory = variable->getDirectory().str();
      location.line = variable->getLine();
      if (const llvm::DILocation* named = declare->getDebugLoc().get();
          named != nullptr && named->getLine() == variable->getLine() &&
          named->getFilename() == variable->getFilename()) {
        location.column = named->getColumn();
      }
      return location;
    }
  }
  if (const llvm::DILocation* debug = instruction.getDebugLoc().get()) {
    location.file = debug->getFilename().str();
    location.directory = debug->getDirectory().str();
    location.line = debug->getLine();
    location.column = debug->getColumn();
  } else if (const llvm::DISubprogram* program = instruction.getFunction()->getSubprogram()) {
    location.file = program->getFilename().str();
    location.directory = program->getDirectory().str();
    location.line = program->getLine();
  }
  return location;
}

bool Skipped(const llvm::Instruction& instruction) {
  if (llvm::isa<llvm::DbgInfoIntrinsic>(instruction)) return true;
  if (const auto* intrinsic = llvm::dyn_cast<llvm::IntrinsicInst>(&instruction)) {
    return intrinsic->isLifetimeStartOrEnd() || intrinsic->isAssumeLikeIntrinsic();
  }
  return false;
}

class ProblemBuilder {
 public:
  ProblemBuilder(const IrModel& model, const AnalyzerOptions& options,
                 AnalyzedProgram::Data* data)
      : model_(model), options_(options), data_(data), problem_(data->problem) {}

  absl::Status Build() {
    FindPooled();
    if (absl::Status s = NumberFacts(); !s.ok()) return s;
    BuildNodes();
    BuildEdges();
    Seed();
    data_->stats.call_sites = static_cast<uint32_t>(problem_.call_sites.size());
    data_->stats.checks = static_cast<uint32_t>(data_->checks.size());
    data_->stats.pool_writes = static_cast<uint32_t>(data_->pool_writes.size());
    for (const ifds::FlowView flow : problem_.flows) {
      data_->stats.flow_pairs += flow.kills.size() + flow.gens.size() + flow.pairs.size();
    }
    return ifds::Validate(problem_);
  }

 private:
  bool taint() const { return options_.analysis == Analysis::kTaint; }

  // --- facts ---------------------------------------------------------------------------

  // A constant global (a string literal, a `static const` table) can never be written, so it
  // is never uninitialized nor tainted: it has no fact.
  bool ReadOnly(uint32_t leaf) const {
    const MemoryObject& object = model_.objects()[model_.leaves()[leaf].object];
    const auto* global = llvm::dyn_cast_or_null<llvm::GlobalVariable>(object.site);
    return object.kind == MemoryObject::Kind::kGlobal && global != nullptr && global->isConstant();
  }

  bool SharedLeaf(uint32_t leaf) const {
    const MemoryObject& object = model_.objects()[model_.leaves()[leaf].object];
    return object.kind != MemoryObject::Kind::kLocal || model_.Escapes(leaf);
  }

  absl::Status NumberFacts() {
    const std::vector<Leaf>& leaves = model_.leaves();
    leaf_fact_.assign(leaves.size(), kNoFact);
    std::vector<std::string> shared_names;
    for (uint32_t leaf = 0; leaf < leaves.size(); ++leaf) {
      if (!SharedLeaf(leaf) || ReadOnly(leaf)) continue;
      const MemoryObject& object = model_.objects()[leaves[leaf].object];
      if (object.smashed && leaf != object.first_leaf) {  // one location: its first leaf's
        leaf_fact_[leaf] = leaf_fact_[object.first_leaf];
        continue;
      }
      leaf_fact_[leaf] = 1 + static_cast<uint32_t>(shared_names.size());
      shared_leaf_.push_back(leaf);
      shared_names.push_back(object.kind == MemoryObject::Kind::kGlobal
                                 ? "@" + leaves[leaf].name
                             : object.kind == MemoryObject::Kind::kLocal
                                 ? DisplayName(*object.owner) + ":" + leaves[leaf].name
                                 : leaves[leaf].name);
    }
    // The older objects of a heap site with a last object of its own (IrModel::MostRecent).
    old_fact_.assign(leaves.size(), kNoFact);
    for (uint32_t leaf = 0; leaf < leaves.size(); ++leaf) {
      if (leaf_fact_[leaf] == kNoFact || !model_.HasRecency(leaves[leaf].object)) continue;
      old_fact_[leaf] = 1 + static_cast<uint32_t>(shared_names.size());
      shared_leaf_.push_back(leaf);
      shared_names.push_back(leaves[leaf].name + "~older");
    }
    // The pool's two facts (FindPooled), after every leaf's.
    if (data_->stats.pooled_objects > 0) {
      pool_fact_ = 1 + static_cast<uint32_t>(shared_names.size());
      shared_names.push_back("pool");
      held_fact_ = 1 + static_cast<uint32_t>(shared_names.size());
      shared_names.push_back("pool~held");
      data_->pool_fact = pool_fact_;
      data_->held_fact = held_fact_;
    }
    // Each function's own facts: its private locals, its arguments, its values.
    absl::flat_hash_map<const llvm::Function*, std::vector<uint32_t>> private_leaves;
    for (uint32_t leaf = 0; leaf < leaves.size(); ++leaf) {
      if (leaf_fact_[leaf] == kNoFact && !SharedLeaf(leaf)) {
        private_leaves[model_.objects()[leaves[leaf].object].owner].push_back(leaf);
      }
    }
    struct Own {
      std::vector<uint32_t> leaves;
      std::vector<const llvm::Value*> values;
      bool copies = false;  // has a place of its own for copies (CopyThrough)
    };
    std::vector<Own> own(model_.functions().size());
    uint64_t total_private = 0;
    uint64_t max_private = 0;
    for (size_t f = 0; f < model_.functions().size(); ++f) {
      const llvm::Function* function = model_.functions()[f];
      own[f].leaves = private_leaves[function];
      for (const llvm::Argument& argument : function->args()) own[f].values.push_back(&argument);
      for (const llvm::BasicBlock& block : *function) {
        for (const llvm::Instruction& instruction : block) {
          if (!instruction.getType()->isVoidTy() && !llvm::isa<llvm::AllocaInst>(instruction) &&
              !Skipped(instruction)) {
            own[f].values.push_back(&instruction);
          }
        }
      }
      own[f].copies = CopiesThroughLibrary(*function);
      const uint64_t count = own[f].leaves.size() + own[f].values.size() + own[f].copies;
      total_private += count;
      max_private = std::max(max_private, count);
    }
    const uint64_t shared = shared_names.size();
    readable_ = !options_.shared_slots && 1 + shared + total_private <= ifds::kMaxFacts;
    if (!readable_ && 1 + shared + max_private > ifds::kMaxFacts) {
      return absl::ResourceExhaustedError(absl::StrFormat(
          "the problem needs %d facts shared by every function plus %d of the largest "
          "function's own; the device holds %d facts in all",
          shared, max_private, ifds::kMaxFacts - 1));
    }
    data_->stats.readable_fact_names = readable_;
    data_->stats.shared_facts = static_cast<uint32_t>(shared);
    data_->stats.max_private_facts = static_cast<uint32_t>(max_private);
    data_->stats.locations = static_cast<uint32_t>(leaves.size());

    absl::flat_hash_set<std::string> used;
    auto unique = [&used](std::string name) {
      name = Sanitize(name);
      if (used.insert(name).second) return name;
      for (int k = 2;; ++k) {
        std::string candidate = absl::StrCat(name, "~", k);
        if (used.insert(candidate).second) return candidate;
      }
    };
    problem_.fact_names.push_back("0");
    used.insert("0");
    data_->shared_labels.push_back("");
    for (uint32_t leaf : shared_leaf_) data_->shared_labels.push_back(leaves[leaf].label);
    if (pool_fact_ != kNoFact) {
      data_->shared_labels.push_back(PoolLabel());
      data_->shared_labels.push_back(PoolLabel());
    }
    for (std::string& name : shared_names) problem_.fact_names.push_back(unique(std::move(name)));
    uint32_t next = 1 + static_cast<uint32_t>(shared);
    for (size_t f = 0; f < own.size(); ++f) {
      const std::string function = DisplayName(*model_.functions()[f]);
      uint32_t id = readable_ ? next : 1 + static_cast<uint32_t>(shared);
      uint32_t unnamed = 0;
      AnalyzedProgram::Data::OwnLabels& labels = data_->own_labels.emplace_back();
      labels.first = id;
      for (uint32_t leaf : own[f].leaves) {
        labels.labels.push_back(leaves[leaf].label);
        leaf_fact_[leaf] = id++;
        if (readable_) problem_.fact_names.push_back(unique(function + ":" + leaves[leaf].name));
      }
      for (const llvm::Value* value : own[f].values) {
        value_fact_[value] = id++;
        if (readable_) {
          problem_.fact_names.push_back(unique(
              value->hasName() ? function + ":%" + value->getName().str()
                               : absl::StrCat(function, ":%", unnamed++)));
        }
      }
      if (own[f].copies) {
        copy_fact_[model_.functions()[f]] = id++;
        if (readable_) problem_.fact_names.push_back(unique(function + ":%copy"));
      }
      next = id;
    }
    if (!readable_) {
      for (uint64_t slot = 0; slot < max_private; ++slot) {
        problem_.fact_names.push_back(absl::StrCat("slot", slot));
      }
    }
    // The facts whose places the pool holds for (a function's own, while its edges are built).
    feeds_pool_.assign(problem_.fact_names.size(), false);
    for (uint32_t leaf = 0; leaf < leaves.size(); ++leaf) {
      if (!pooled_[leaf]) continue;
      if (SharedLeaf(leaf)) {
        for (uint32_t fact : LeafFacts({leaf})) feeds_pool_[fact] = true;
      } else {
        pooled_own_[model_.objects()[leaves[leaf].object].owner].push_back(leaf);
      }
    }
    return absl::OkStatus();
  }

  // Whether `function` calls a library function that copies memory (its copies may go through
  // a place of its own: CopyThrough).
  bool CopiesThroughLibrary(const llvm::Function& function) const {
    for (const llvm::BasicBlock& block : function) {
      for (const llvm::Instruction& instruction : block) {
        const auto* call = llvm::dyn_cast<llvm::CallBase>(&instruction);
        if (call != nullptr && model_.Callees(*call).empty() &&
            CopiesStrings(model_.ExternalName(*call))) {
          return true;
        }
      }
    }
    return false;
  }

  uint32_t ValueFact(const llvm::Value* value) const {
    auto it = value_fact_.find(value);
    return it == value_fact_.end() ? kNoFact : it->second;
  }

  // --- nodes -------------------------------------------------------------------------

  uint32_t AddNode(std::string name, uint32_t procedure, const SourceLocation& location) {
    problem_.node_names.push_back(name);
    problem_.node_procedure.push_back(procedure);
    auto [file, added] = file_ids_.try_emplace(std::make_pair(location.file, location.directory),
                                               static_cast<uint32_t>(data_->files.size()));
    if (added) data_->files.push_back({.file = location.file, .directory = location.directory});
    data_->sites.push_back({file->second, location.line, location.column});
    return static_cast<uint32_t>(problem_.node_names.size() - 1);
  }

  static SourceLocation FunctionLocation(const llvm::Function& function) {
    SourceLocation location;
    if (const llvm::DISubprogram* program = function.getSubprogram()) {
      location.file = program->getFilename().str();
      location.directory = program->getDirectory().str();
      location.line = program->getLine();
    }
    return location;
  }

  void BuildNodes() {
    absl::flat_hash_set<std::string> used;
    for (const llvm::Function* function : model_.functions()) {
      std::string name = Sanitize(function->getName().str());
      for (int k = 2; !used.insert(name).second; ++k) {
        name = absl::StrCat(Sanitize(function->getName().str()), "~", k);
      }
      const uint32_t procedure = static_cast<uint32_t>(problem_.procedures.size());
      procedure_of_[function] = procedure;
      ifds::Procedure p;
      p.name = name;
      data_->procedure_names.push_back(QualifiedName(*function));
      const SourceLocation here = FunctionLocation(*function);
      p.start = AddNode(name + ":entry", procedure, here);
      uint32_t index = 0;
      for (const llvm::BasicBlock& block : *function) {
        for (const llvm::Instruction& instruction : block) {
          if (Skipped(instruction)) continue;
          node_of_[&instruction] =
              AddNode(absl::StrCat(name, ":", index++), procedure, LocationOf(instruction));
          data_->stats.ir_instructions++;
        }
      }
      p.exit = AddNode(name + ":exit", procedure, here);
      problem_.procedures.push_back(std::move(p));
    }
    data_->stats.functions = static_cast<uint32_t>(model_.functions().size());
  }

  uint32_t FirstNode(const llvm::BasicBlock& block) const {
    for (const llvm::Instruction& instruction : block) {
      if (!Skipped(instruction)) return node_of_.at(&instruction);
    }
    return kNoFact;  // every block has a terminator, which is never skipped
  }

  uint32_t NextNode(const llvm::Instruction& instruction) const {
    for (const llvm::Instruction* next = instruction.getNextNode(); next != nullptr;
         next = next->getNextNode()) {
      if (!Skipped(*next)) return node_of_.at(next);
    }
    return kNoFact;
  }

  // --- flows -------------------------------------------------------------------------

  struct FlowSpec {
    bool identity = true;
    std::vector<uint32_t> kills;
    std::vector<uint32_t> gens;
    std::vector<std::pair<uint32_t, uint32_t>> pairs;
    // A copy of every fact of `via_from` to every fact of `via_to`, made through the
    // function's copy place on an edge of its own (BuildEdges) rather than as their product.
    std::vector<uint32_t> via_from, via_to;

    void Kill(uint32_t fact) {
      if (fact != kNoFact) kills.push_back(fact);
    }
    void Gen(uint32_t fact) {
      if (fact != kNoFact) gens.push_back(fact);
    }
    void Pair(uint32_t from, uint32_t to) {
      if (from != kNoFact && to != kNoFact) pairs.emplace_back(from, to);
    }
    // `fact` is never made (a value nothing reads afterwards).
    void Drop(uint32_t fact) {
      if (fact == kNoFact) return;
      gens.erase(std::remove(gens.begin(), gens.end(), fact), gens.end());
      pairs.erase(std::remove_if(pairs.begin(), pairs.end(),
                                 [fact](const auto& p) { return p.second == fact; }),
                  pairs.end());
    }
  };

  // Values are facts only while they are live: each one's fact is killed where it dies, and a
  // value nothing reads is never made.
  void KillDying(const std::vector<const llvm::Value*>& dying, const llvm::Value* self,
                 FlowSpec* flow) const {
    for (const llvm::Value* value : dying) {
      flow->Kill(ValueFact(value));
      if (value == self) flow->Drop(ValueFact(value));
    }
  }

  // A flow. With `pool_writes`, the flow of a normal edge the next AddEdge adds: what it would
  // carry into the pool from a fact of another place (a value, a place outside the pool)
  // becomes a PoolWrite of that edge instead, which a solution showing the fact there turns
  // into a generation of the pool (AnalyzedProgram::Refine). So the pool is made from the zero
  // fact only, and never in the context of one fact a function was given: each such context
  // would otherwise carry all that follows from the pool again.
  uint32_t AddFlow(FlowSpec spec, bool pool_writes = false) {
    if (held_fact_ != kNoFact) {
      // Whatever makes one of the pool's objects hold a fact makes `pool~held` hold it too (a
      // pair from a fact of one of them need not: `pool~held` holds wherever that fact does).
      const size_t gens = spec.gens.size(), pairs = spec.pairs.size();
      for (size_t g = 0; g < gens; ++g) {
        if (feeds_pool_[spec.gens[g]]) spec.gens.push_back(held_fact_);
      }
      for (size_t p = 0; p < pairs; ++p) {
        const auto [from, to] = spec.pairs[p];
        if (from != to && feeds_pool_[to] && !feeds_pool_[from]) {
          spec.pairs.emplace_back(from, held_fact_);
        }
      }
      if (pool_writes) {
        const auto into_pool = [this](const std::pair<uint32_t, uint32_t>& p) {
          const bool pool = p.first == pool_fact_ || p.first == held_fact_;
          return !pool && (p.second == pool_fact_ || p.second == held_fact_);
        };
        for (const auto& p : spec.pairs) {
          if (into_pool(p)) pending_writes_.push_back(p);
        }
        spec.pairs.erase(std::remove_if(spec.pairs.begin(), spec.pairs.end(), into_pool),
                         spec.pairs.end());
      }
    }
    ifds::Flow flow;
    flow.identity = spec.identity;
    flow.kills = std::move(spec.kills);
    flow.gens = std::move(spec.gens);
    flow.pairs.reserve(spec.pairs.size());
    for (const auto& pair : spec.pairs) flow.pairs.push_back(pair);
    flow.Normalize();
    std::string key;
    key.reserve(16 + 4 * (flow.kills.size() + flow.gens.size() + flow.pairs.size()));
    key += flow.identity ? 'I' : 'N';
    auto put = [&key](uint32_t v) { key.append(reinterpret_cast<const char*>(&v), sizeof v); };
    put(static_cast<uint32_t>(flow.kills.size()));
    for (uint32_t k : flow.kills) put(k);
    put(static_cast<uint32_t>(flow.gens.size()));
    for (uint32_t g : flow.gens) put(g);
    for (uint32_t word : flow.pairs.words()) put(word);
    auto [it, inserted] = flow_ids_.emplace(std::move(key), problem_.flows.size());
    if (inserted) problem_.flows.push_back(std::move(flow));
    return it->second;
  }

  // The facts of leaves: a heap leaf with recency is two, its site's last object and the older
  // ones.
  std::vector<uint32_t> LeafFacts(const std::vector<uint32_t>& leaves) const {
    std::vector<uint32_t> out;
    for (uint32_t leaf : leaves) {
      if (leaf_fact_[leaf] != kNoFact) out.push_back(leaf_fact_[leaf]);
      if (old_fact_[leaf] != kNoFact) out.push_back(old_fact_[leaf]);
    }
    return out;
  }
  // The facts of the last object's leaves only: what an allocation makes, what a store into
  // the last object replaces.
  std::vector<uint32_t> LastFacts(const std::vector<uint32_t>& leaves) const {
    std::vector<uint32_t> out;
    for (uint32_t leaf : leaves) {
      if (leaf_fact_[leaf] != kNoFact) out.push_back(leaf_fact_[leaf]);
    }
    return out;
  }
  // The facts a pointer reaches with `size` bytes: only the last object's where it is known to
  // point there.
  std::vector<uint32_t> PointerFacts(const llvm::Value* pointer, uint64_t size) const {
    return PointerFacts(pointer, model_.Leaves(pointer, size));
  }
  // The same, of `leaves` the caller has from model_.Leaves(pointer, ...).
  std::vector<uint32_t> PointerFacts(const llvm::Value* pointer,
                                     const std::vector<uint32_t>& leaves) const {
    uint32_t object = 0;
    uint64_t offset = 0;
    return model_.MostRecent(pointer, &object, &offset) ? LastFacts(leaves) : LeafFacts(leaves);
  }
  // What a write of `size` bytes through `pointer` replaces (IrModel::StrongLeaves).
  std::vector<uint32_t> StrongFacts(const llvm::Value* pointer, uint64_t size) const {
    return LastFacts(model_.StrongLeaves(pointer, size));
  }

  // --- the pool ------------------------------------------------------------------------
  //
  // A pointer that may point to many objects (options_.pool_objects or more) is one points-to
  // has lost track of. Read through, it would make a value of every object's fact: in each
  // context where one of those objects' facts holds (a function is analyzed once for each fact
  // it is given), the value and all that follows from it would hold again, so a function given
  // hundreds of such objects carries hundreds of copies of the same facts. Written through, it
  // would make a fact of every object. So these accesses go through two facts those objects
  // share instead, the pool:
  // - `pool`: what writes through such pointers stored. Every read of any of the objects (a
  //   load, a copy's source, a library call's argument) reads it beside the object's own fact.
  // - `pool~held`: what any of the objects may have held. Whatever makes one of their facts
  //   hold (a declaration or allocation without a value, a store, a copy, a taint source) makes
  //   it hold too, and a read through such a pointer reads it and `pool` instead of each
  //   object's fact.
  // Nothing replaces what the pool holds (only each object's own fact is replaced by a store),
  // and the pool holds a value wherever one of its objects may have held it, so nothing is
  // missed. What is lost: a read through such a pointer sees what any of the objects ever held
  // on the way there, though a store has replaced it since, and a store replacing an object's
  // content no longer clears what a write through such a pointer gave it.

  // How many objects sorted `leaves` lie in, counting up to `enough` (an object's leaves are
  // numbered together, so they are adjacent); with `writable`, only objects that may be
  // written (a constant global has no fact: reading or writing it costs nothing).
  uint32_t Objects(const std::vector<uint32_t>& leaves, bool writable, uint32_t enough) const {
    uint32_t objects = 0;
    uint32_t last = ~uint32_t{0};
    for (uint32_t leaf : leaves) {
      if (writable && ReadOnly(leaf)) continue;
      const uint32_t object = model_.leaves()[leaf].object;
      if (object != last && ++objects >= enough) break;
      last = object;
    }
    return objects;
  }
  // Whether `leaves` lie in options_.pool_objects objects or more that may be written.
  bool Spread(const std::vector<uint32_t>& leaves) const {
    return options_.pool_objects > 0 && leaves.size() >= options_.pool_objects &&
           Objects(leaves, /*writable=*/true, options_.pool_objects) >= options_.pool_objects;
  }

  // The pool's objects: every leaf some access through a pointer reaches with spread leaves.
  // (Accesses are loads, stores, atomics and library calls' pointer arguments. Where one was
  // missed, SpreadAccess is false and the access reads or writes each leaf's own fact, which
  // is sound too.)
  void FindPooled() {
    pooled_.assign(model_.leaves().size(), false);
    const auto note = [this](const llvm::Value* pointer, uint64_t size) {
      const std::vector<uint32_t> leaves = model_.Leaves(pointer, size);
      if (!Spread(leaves)) return;
      for (uint32_t leaf : leaves) pooled_[leaf] = true;
    };
    for (const llvm::Function* function : model_.functions()) {
      for (const llvm::BasicBlock& block : *function) {
        for (const llvm::Instruction& instruction : block) {
          if (Skipped(instruction)) continue;
          if (const auto* load = llvm::dyn_cast<llvm::LoadInst>(&instruction)) {
            note(load->getPointerOperand(), SizeOf(load->getType()));
          } else if (const auto* store = llvm::dyn_cast<llvm::StoreInst>(&instruction)) {
            note(store->getPointerOperand(), SizeOf(store->getValueOperand()->getType()));
          } else if (llvm::isa<llvm::AtomicRMWInst>(instruction) ||
                     llvm::isa<llvm::AtomicCmpXchgInst>(instruction)) {
            note(instruction.getOperand(0), kToEnd);
          } else if (const auto* call = llvm::dyn_cast<llvm::CallBase>(&instruction);
                     call != nullptr && model_.Callees(*call).empty()) {
            for (const llvm::Value* argument : call->args()) {
              if (argument->getType()->isPointerTy()) note(argument, kToEnd);
            }
          }
        }
      }
    }
    std::vector<uint32_t> pooled;
    for (uint32_t leaf = 0; leaf < pooled_.size(); ++leaf) {
      if (pooled_[leaf]) pooled.push_back(leaf);
    }
    data_->stats.pooled_objects = Objects(pooled, /*writable=*/false, ~uint32_t{0});
  }

  std::string PoolLabel() const {
    return absl::StrFormat("one of %d objects", data_->stats.pooled_objects);
  }

  // Whether an access to `leaves` goes through the pool only: they are spread, all pooled.
  bool SpreadAccess(const std::vector<uint32_t>& leaves) const {
    return pool_fact_ != kNoFact && Spread(leaves) &&
           std::all_of(leaves.begin(), leaves.end(), [this](uint32_t l) { return pooled_[l]; });
  }
  bool AnyPooled(const std::vector<uint32_t>& leaves) const {
    return pool_fact_ != kNoFact &&
           std::any_of(leaves.begin(), leaves.end(), [this](uint32_t l) { return pooled_[l]; });
  }
  // The facts a read of `size` bytes through `pointer` reads.
  std::vector<uint32_t> ReadFacts(const llvm::Value* pointer, uint64_t size) const {
    return ReadFacts(pointer, model_.Leaves(pointer, size));
  }
  std::vector<uint32_t> ReadFacts(const llvm::Value* pointer,
                                  const std::vector<uint32_t>& leaves) const {
    if (SpreadAccess(leaves)) return {pool_fact_, held_fact_};
    std::vector<uint32_t> facts = PointerFacts(pointer, leaves);
    if (AnyPooled(leaves)) facts.push_back(pool_fact_);
    return facts;
  }
  // The facts a value written through `pointer` goes to: the pool, or each place's own.
  std::vector<uint32_t> WrittenFacts(const llvm::Value* pointer, uint64_t size) const {
    const std::vector<uint32_t> leaves = model_.Leaves(pointer, size);
    if (SpreadAccess(leaves)) return {pool_fact_};
    return PointerFacts(pointer, leaves);
  }

  uint64_t SizeOf(llvm::Type* type) const {
    const llvm::DataLayout& layout = model_.module().getDataLayout();
    return type->isSized() ? layout.getTypeStoreSize(type).getFixedSize() : kToEnd;
  }

  static uint64_t ConstantLength(const llvm::CallBase& call, unsigned index) {
    if (index < call.arg_size()) {
      if (const auto* c = llvm::dyn_cast<llvm::ConstantInt>(call.getArgOperand(index))) {
        return c->getZExtValue();
      }
    }
    return kToEnd;
  }

  // Facts a tainted argument shows as: its value, and what it points to.
  void ArgumentFacts(const llvm::Value* argument,
                     std::vector<std::pair<uint32_t, std::string>>* out) const {
    const uint32_t value = ValueFact(argument);
    if (value != kNoFact) out->emplace_back(value, model_.SourceName(argument));
    const std::vector<uint32_t> leaves = model_.Leaves(argument, kToEnd);
    if (SpreadAccess(leaves)) {
      out->emplace_back(pool_fact_, PoolLabel());
      out->emplace_back(held_fact_, PoolLabel());
      return;
    }
    uint32_t object = 0;
    uint64_t offset = 0;
    const bool last = model_.MostRecent(argument, &object, &offset);
    for (uint32_t leaf : leaves) {
      for (uint32_t fact : last ? LastFacts({leaf}) : LeafFacts({leaf})) {
        out->emplace_back(fact, model_.leaves()[leaf].label);
      }
    }
    if (AnyPooled(leaves)) out->emplace_back(pool_fact_, PoolLabel());
  }

  // A library copy of `length` bytes from `src` to `dst`: its pairs, or, when every source
  // leaf pairs with every destination leaf and that product passes the options' limit, the two
  // lists to copy through the function's copy place (the same relation, as a sum).
  void Copy(const llvm::CallBase& call, const llvm::Value* dst, const llvm::Value* src,
            uint64_t length, FlowSpec* flow) {
    const std::vector<uint32_t> sources = model_.Leaves(src, length);
    const std::vector<uint32_t> destinations = model_.Leaves(dst, length);
    if (SpreadAccess(destinations)) {
      for (uint32_t from : ReadFacts(src, sources)) flow->Pair(from, pool_fact_);
      return;
    }
    if (SpreadAccess(sources)) {
      for (uint32_t to : PointerFacts(dst, destinations)) {
        flow->Pair(pool_fact_, to);
        flow->Pair(held_fact_, to);
      }
      return;
    }
    const auto place = copy_fact_.find(call.getFunction());
    if (model_.CopiesAllToAll(dst, src) && !call.isTerminator() && place != copy_fact_.end()) {
      std::vector<uint32_t> from = ReadFacts(src, sources);
      std::vector<uint32_t> to = PointerFacts(dst, destinations);
      if (uint64_t{from.size()} * to.size() > options_.copy_pairs_limit) {
        flow->via_from = std::move(from);
        flow->via_to = std::move(to);
        return;
      }
    }
    uint32_t object = 0;
    uint64_t offset = 0;
    const bool from_last = model_.MostRecent(src, &object, &offset);
    const bool to_last = model_.MostRecent(dst, &object, &offset);
    for (auto [s, d] : model_.CopyPairs(dst, src, length)) {
      for (uint32_t from : from_last ? LastFacts({s}) : LeafFacts({s})) {
        for (uint32_t to : to_last ? LastFacts({d}) : LeafFacts({d})) flow->Pair(from, to);
      }
    }
    if (AnyPooled(sources)) {
      for (uint32_t to : PointerFacts(dst, destinations)) flow->Pair(pool_fact_, to);
    }
  }

  void ExternalFlow(const llvm::CallBase& call, FlowSpec* flow) {
    const std::string name = model_.ExternalName(call);
    const uint32_t result = ValueFact(&call);
    const unsigned args = call.arg_size();
    // An array this call begins to fill (a copy into its first element) holds what it is
    // filled with (ArrayFilledAt).
    for (uint32_t fact : LastFacts(model_.ArrayFilledAt(call))) flow->Kill(fact);
    // A new object of a site with recency: the one made before joins the older ones.
    for (uint32_t leaf : model_.CreatedLeaves(call)) {
      if (old_fact_[leaf] == kNoFact) continue;
      flow->Pair(leaf_fact_[leaf], old_fact_[leaf]);
      flow->Kill(leaf_fact_[leaf]);
    }
    if (!taint()) {
      if (AllocatesUninitialized(name)) {
        for (uint32_t fact : LastFacts(model_.CreatedLeaves(call))) flow->Gen(fact);
      } else if (CopiesStrings(name) && args >= 2) {
        const uint64_t length = ConstantLength(call, 2);
        const llvm::Value* dst = call.getArgOperand(0);
        for (uint32_t fact : StrongFacts(dst, length)) flow->Kill(fact);
        Copy(call, dst, call.getArgOperand(1), length, flow);
      } else if (name == "memset" && args >= 3) {
        const uint64_t length = ConstantLength(call, 2);
        const llvm::Value* dst = call.getArgOperand(0);
        for (uint32_t fact : StrongFacts(dst, length)) flow->Kill(fact);
        for (uint32_t fact : WrittenFacts(dst, length)) {
          flow->Pair(ValueFact(call.getArgOperand(1)), fact);
        }
      } else if (FormatsInto(name) && args >= 1) {
        // The string it formats replaces what its buffer held (where that is one place), but
        // for snprintf into none of it.
        const bool sized = name == "snprintf" || name == "vsnprintf";
        if (!sized || ConstantLength(call, 1) != 0) {
          for (uint32_t fact : StrongFacts(call.getArgOperand(0), kToEnd)) flow->Kill(fact);
        }
      } else if (!OnlyReads(name) && name != "calloc") {
        // A library function given a pointer is assumed to write what it points to.
        for (unsigned a = 0; a < args; ++a) {
          if (call.getArgOperand(a)->getType()->isPointerTy()) {
            for (uint32_t fact : PointerFacts(call.getArgOperand(a), kToEnd)) {
              flow->Kill(fact);
            }
          }
        }
      }
      return;
    }
    // Taint: sanitizers, sources, then how the call moves data.
    bool sanitized_result = false;
    for (const TaintRule& rule : options_.taint.sanitizers) {
      if (rule.function != name) continue;
      sanitized_result |= rule.result;
      for (unsigned a = 0; a < args; ++a) {
        if (!rule.Names(a)) continue;
        for (uint32_t fact : PointerFacts(call.getArgOperand(a), kToEnd)) {
          flow->Kill(fact);
        }
      }
    }
    bool source_result = false;
    for (const TaintRule& rule : options_.taint.sources) {
      if (rule.function != name) continue;
      source_result |= rule.result;
      for (unsigned a = 0; a < args; ++a) {
        if (!rule.Names(a)) continue;
        for (uint32_t fact : WrittenFacts(call.getArgOperand(a), kToEnd)) {
          flow->Gen(fact);
        }
      }
    }
    if (source_result) {
      flow->Gen(result);
      for (uint32_t fact : LastFacts(model_.CreatedLeaves(call))) flow->Gen(fact);
    }
    if (CopiesStrings(name) && args >= 2) {
      const uint64_t length = ConstantLength(call, 2);
      const llvm::Value* dst = call.getArgOperand(0);
      for (uint32_t fact : StrongFacts(dst, length)) flow->Kill(fact);
      Copy(call, dst, call.getArgOperand(1), length, flow);
    } else if (name == "memset" && args >= 3) {
      const uint64_t length = ConstantLength(call, 2);
      const llvm::Value* dst = call.getArgOperand(0);
      for (uint32_t fact : StrongFacts(dst, length)) flow->Kill(fact);
      for (uint32_t fact : WrittenFacts(dst, length)) {
        flow->Pair(ValueFact(call.getArgOperand(1)), fact);
      }
    } else if (FormatsInto(name) && args >= 2) {
      const llvm::Value* dst = call.getArgOperand(0);
      const std::vector<uint32_t> written = WrittenFacts(dst, kToEnd);
      for (uint32_t fact : StrongFacts(dst, kToEnd)) flow->Kill(fact);
      for (unsigned a = 1; a < args; ++a) {
        std::vector<std::pair<uint32_t, std::string>> from;
        ArgumentFacts(call.getArgOperand(a), &from);
        for (const auto& [fact, ignored] : from) {
          for (uint32_t to : written) flow->Pair(fact, to);
        }
      }
    } else if (name == "strdup" || name == "strndup") {
      if (args >= 1) {
        for (uint32_t from : ReadFacts(call.getArgOperand(0), kToEnd)) {
          for (uint32_t to : LastFacts(model_.CreatedLeaves(call))) flow->Pair(from, to);
        }
      }
    }
    // The result is tainted when an argument is, or points to tainted memory.
    if (result != kNoFact && !sanitized_result && !source_result) {
      for (unsigned a = 0; a < args; ++a) {
        std::vector<std::pair<uint32_t, std::string>> from;
        ArgumentFacts(call.getArgOperand(a), &from);
        for (const auto& [fact, ignored] : from) flow->Pair(fact, result);
      }
    }
    // So is what a C++ library call makes through memory (a string it constructs, appends to
    // or returns by value) when another argument is tainted or points to tainted memory.
    if (sanitized_result || source_result) return;
    for (const unsigned out : model_.CxxOutputs(call)) {
      const std::vector<uint32_t> written = WrittenFacts(call.getArgOperand(out), kToEnd);
      for (unsigned a = 0; a < args; ++a) {
        if (a == out) continue;
        std::vector<std::pair<uint32_t, std::string>> from;
        ArgumentFacts(call.getArgOperand(a), &from);
        for (const auto& [fact, ignored] : from) {
          for (uint32_t to : written) flow->Pair(fact, to);
        }
      }
    }
  }

  FlowSpec NormalFlow(const llvm::Instruction& instruction, const ValueLiveness& liveness) {
    FlowSpec flow;
    const uint32_t self = ValueFact(&instruction);
    flow.Kill(self);
    if (const auto* alloca = llvm::dyn_cast<llvm::AllocaInst>(&instruction)) {
      for (uint32_t fact : PointerFacts(alloca, kToEnd)) {
        if (taint()) {
          flow.Kill(fact);
        } else {
          flow.Gen(fact);
        }
      }
    } else if (const auto* load = llvm::dyn_cast<llvm::LoadInst>(&instruction)) {
      for (uint32_t fact : ReadFacts(load->getPointerOperand(), SizeOf(load->getType()))) {
        flow.Pair(fact, self);
      }
    } else if (const auto* store = llvm::dyn_cast<llvm::StoreInst>(&instruction)) {
      const uint64_t size = SizeOf(store->getValueOperand()->getType());
      const llvm::Value* pointer = store->getPointerOperand();
      for (uint32_t fact : StrongFacts(pointer, size)) flow.Kill(fact);
      for (uint32_t fact : LastFacts(model_.ArrayFilledAt(*store))) flow.Kill(fact);
      const uint32_t value = ValueFact(store->getValueOperand());
      for (uint32_t fact : WrittenFacts(pointer, size)) flow.Pair(value, fact);
    } else if (llvm::isa<llvm::AtomicRMWInst>(instruction) ||
               llvm::isa<llvm::AtomicCmpXchgInst>(instruction)) {
      const llvm::Value* pointer = instruction.getOperand(0);
      for (uint32_t fact : ReadFacts(pointer, kToEnd)) flow.Pair(fact, self);
      for (uint32_t fact : WrittenFacts(pointer, kToEnd)) {
        for (unsigned o = 1; o < instruction.getNumOperands(); ++o) {
          flow.Pair(ValueFact(instruction.getOperand(o)), fact);
        }
      }
    } else if (const auto* call = llvm::dyn_cast<llvm::CallBase>(&instruction)) {
      ExternalFlow(*call, &flow);
    } else if (self != kNoFact) {
      for (const llvm::Value* operand : instruction.operands()) {
        flow.Pair(ValueFact(operand), self);
      }
    }
    KillDying(liveness.DyingAt(instruction), &instruction, &flow);
    return flow;
  }

  // The shared facts of what a callee reads or writes, but for its own locals.
  const std::vector<uint32_t>& Exported(const llvm::Function* callee) {
    auto [it, inserted] = exported_.try_emplace(callee);
    if (inserted) {
      for (uint32_t leaf : model_.Accessed(*callee)) {
        const MemoryObject& object = model_.objects()[model_.leaves()[leaf].object];
        // Another function's private locals are only ever touched there (their ids are that
        // function's own); the callee's own locals are new in each call.
        if (!SharedLeaf(leaf) || ReadOnly(leaf)) continue;
        if (object.kind == MemoryObject::Kind::kLocal && object.owner == callee) continue;
        for (uint32_t fact : LeafFacts({leaf})) it->second.push_back(fact);
      }
      if (AnyPooled(model_.Accessed(*callee))) {
        it->second.push_back(pool_fact_);
        it->second.push_back(held_fact_);
      }
      std::sort(it->second.begin(), it->second.end());
      it->second.erase(std::unique(it->second.begin(), it->second.end()), it->second.end());
    }
    return it->second;
  }

  void AddCallSite(const llvm::CallBase& call, uint32_t node, uint32_t return_site,
                   const ValueLiveness& liveness) {
    const std::vector<const llvm::Function*>& callees = model_.Callees(call);
    // Its callees follow it; its call-to-return flow is known once they are made.
    problem_.AddCallSite(ifds::CallSite{.call = node, .return_site = return_site});
    FlowSpec bypass;
    bypass.Kill(ValueFact(&call));
    // A call of allocation wrappers makes an object of its own, as a call of the allocator
    // behind them does (ExternalFlow): the one made before joins the older ones, and the new
    // one has no value unless it comes zeroed.
    // (Where the wrapper reaches code that touches the site's objects, the last one goes into
    // it as an older one: the call makes a new last object.)
    absl::flat_hash_map<uint32_t, uint32_t> aged;  // last object's fact -> older objects'
    if (bool zeroed = false; model_.WrapperSite(call, &zeroed) != nullptr) {
      const std::vector<uint32_t> created = model_.CreatedLeaves(call);
      for (uint32_t leaf : created) {
        if (old_fact_[leaf] == kNoFact) continue;
        bypass.Pair(leaf_fact_[leaf], old_fact_[leaf]);
        bypass.Kill(leaf_fact_[leaf]);
        aged[leaf_fact_[leaf]] = old_fact_[leaf];
      }
      if (!taint() && !zeroed) {
        for (uint32_t fact : LastFacts(created)) bypass.Gen(fact);
      }
    }
    const std::vector<const llvm::Value*> dying = liveness.DyingAt(call);
    KillDying(dying, &call, &bypass);
    const bool result_read = std::find(dying.begin(), dying.end(), &call) == dying.end();
    // A function other than a local's own reaches it only through the pointers it is passed,
    // what they lead to in memory, and what globals lead to: a call that reaches it none of
    // these ways neither reads nor writes it, and it goes around the call. So does a local of
    // the caller whose address nothing has been given yet.
    const std::vector<uint32_t> reached = model_.ReachedObjects(call);
    const auto unreached = [&](uint32_t fact) {
      if (fact == pool_fact_ || fact == held_fact_) return false;
      const uint32_t object = model_.leaves()[shared_leaf_[fact - 1]].object;
      if (model_.objects()[object].kind != MemoryObject::Kind::kLocal) return false;
      return model_.Unescaped(call, object) ||
             (!model_.ReachedFromEverywhere(object) &&
              !std::binary_search(reached.begin(), reached.end(), object));
    };
    std::vector<uint32_t> through_all = Exported(callees[0]);
    for (const llvm::Function* callee : callees) {
      std::vector<uint32_t> exported = Exported(callee);
      exported.erase(std::remove_if(exported.begin(), exported.end(), unreached),
                     exported.end());
      std::vector<uint32_t> both;
      std::set_intersection(through_all.begin(), through_all.end(), exported.begin(),
                            exported.end(), std::back_inserter(both));
      through_all.swap(both);
      FlowSpec in;
      in.identity = false;
      for (unsigned a = 0; a < call.arg_size() && a < callee->arg_size(); ++a) {
        in.Pair(ValueFact(call.getArgOperand(a)), ValueFact(callee->getArg(a)));
      }
      // What the callee writes before reading it does not go in: after the call it holds what
      // the callee wrote (a strong update through the argument).
      std::vector<uint32_t> replaced = LeafFacts(model_.ReplacedByCall(call, *callee));
      // As an array whose elements this call begins to write in turn (ArrayFilledAt).
      for (uint32_t fact : LeafFacts(model_.ArrayFilledAt(call))) replaced.push_back(fact);
      std::sort(replaced.begin(), replaced.end());
      FlowSpec out;
      out.identity = false;
      for (uint32_t fact : exported) {
        if (!std::binary_search(replaced.begin(), replaced.end(), fact)) {
          const auto older = aged.find(fact);
          in.Pair(fact, older != aged.end() ? older->second : fact);
        }
        out.Pair(fact, fact);
      }
      for (const llvm::BasicBlock& block : *callee) {
        if (const auto* ret = llvm::dyn_cast<llvm::ReturnInst>(block.getTerminator())) {
          if (ret->getReturnValue() != nullptr && result_read) {
            out.Pair(ValueFact(ret->getReturnValue()), ValueFact(&call));
          }
        }
      }
      problem_.AddCallee(
          {procedure_of_.at(callee), AddFlow(std::move(in)), AddFlow(std::move(out))});
    }
    for (uint32_t fact : through_all) bypass.Kill(fact);
    // An array this call begins to fill goes into it no more than around it: what it holds
    // after is what the callee wrote (ArrayFilledAt).
    for (uint32_t fact : LeafFacts(model_.ArrayFilledAt(call))) bypass.Kill(fact);
    const uint32_t bypass_flow = AddFlow(std::move(bypass));
    problem_.call_sites.back().call_to_return_flow = bypass_flow;
  }

  void AddEdge(uint32_t from, uint32_t to, uint32_t flow) {
    std::vector<std::pair<uint32_t, uint32_t>> writes;
    writes.swap(pending_writes_);
    if (to == kNoFact) return;
    std::sort(writes.begin(), writes.end(),
              [](const auto& a, const auto& b) { return a.second < b.second; });
    for (size_t k = 0; k < writes.size();) {
      AnalyzedProgram::Data::PoolWrite& write = data_->pool_writes.emplace_back();
      write.edge = static_cast<uint32_t>(problem_.edges.size());
      write.node = from;
      write.fact = writes[k].second;
      for (; k < writes.size() && writes[k].second == write.fact; ++k) {
        write.facts.push_back(writes[k].first);
      }
    }
    problem_.edges.push_back({from, to, flow});
  }
  // A normal edge: its flow's writes into the pool are PoolWrites of it (AddFlow).
  void AddEdge(uint32_t from, uint32_t to, FlowSpec flow) {
    const uint32_t id = AddFlow(std::move(flow), /*pool_writes=*/true);
    AddEdge(from, to, id);
  }

  void AddChecks(const llvm::Instruction& instruction, uint32_t node) {
    Finding finding;
    finding.function = data_->procedure_names[procedure_of_.at(instruction.getFunction())];
    finding.location = LocationOf(instruction);
    Check check;
    check.node = node;
    if (!taint()) {
      const auto* load = llvm::dyn_cast<llvm::LoadInst>(&instruction);
      if (load == nullptr) return;
      uint32_t object = 0;
      uint64_t offset = 0;
      const bool last = model_.MostRecent(load->getPointerOperand(), &object, &offset);
      const std::vector<uint32_t> leaves =
          model_.Leaves(load->getPointerOperand(), SizeOf(load->getType()));
      const bool spread = SpreadAccess(leaves);
      bool pooled = false;
      std::vector<std::string_view> names;
      for (uint32_t leaf : leaves) {
        const Leaf& l = model_.leaves()[leaf];
        if (!model_.objects()[l.object].named) continue;
        pooled |= pool_fact_ != kNoFact && pooled_[leaf];
        names.push_back(l.label);
        if (spread) continue;
        for (uint32_t fact : last ? LastFacts({leaf}) : LeafFacts({leaf})) {
          check.facts.emplace_back(fact, l.label);
        }
      }
      // What the pool holds is read as the one place read, or as the pool where there are more.
      if (pooled) {
        const std::string name = names.size() == 1 ? std::string(names[0]) : PoolLabel();
        check.facts.emplace_back(pool_fact_, name);
        if (spread) check.facts.emplace_back(held_fact_, name);
      }
      if (check.facts.empty()) return;
      finding.rule = "uninitialized-read";
      check.per_fact = true;
      check.finding = std::move(finding);
      data_->checks.push_back(std::move(check));
      return;
    }
    const auto* call = llvm::dyn_cast<llvm::CallBase>(&instruction);
    if (call == nullptr || !model_.Callees(*call).empty()) return;
    const std::string name = model_.ExternalName(*call);
    for (const TaintRule& rule : options_.taint.sinks) {
      if (rule.function != name) continue;
      for (unsigned a = 0; a < call->arg_size(); ++a) {
        if (!rule.Names(a)) continue;
        Check argument;
        argument.node = node;
        ArgumentFacts(call->getArgOperand(a), &argument.facts);
        if (argument.facts.empty()) continue;
        argument.finding = finding;
        argument.finding.rule = "tainted-sink";
        argument.finding.sink = Demangled(name);
        argument.finding.argument = a + 1;
        argument.finding.variable = model_.SourceName(call->getArgOperand(a));
        data_->checks.push_back(std::move(argument));
      }
    }
  }

  // What a node's flow generating a fact says of it, for the path's first step ("%s": the
  // variable it makes).
  void NoteOrigin(const llvm::Instruction& instruction, uint32_t node) {
    if (llvm::isa<llvm::AllocaInst>(instruction)) {
      if (!taint()) {
        data_->origins[node] = "'%s' is declared without a value";
        data_->declared[node] = model_.SourceName(&instruction);
      }
      return;
    }
    const auto* call = llvm::dyn_cast<llvm::CallBase>(&instruction);
    if (call == nullptr) return;
    if (bool zeroed = false; const llvm::Function* wrapper = model_.WrapperSite(*call, &zeroed)) {
      if (!taint() && !zeroed) {
        data_->origins[node] =
            absl::StrFormat("memory from '%s' has no value", QualifiedName(*wrapper));
      }
      return;
    }
    if (!model_.Callees(*call).empty()) return;
    const std::string name = model_.ExternalName(*call);
    if (!taint()) {
      if (AllocatesUninitialized(name)) {
        data_->origins[node] =
            absl::StrFormat("memory from '%s' has no value", Demangled(name));
      }
      return;
    }
    for (const TaintRule& rule : options_.taint.sources) {
      if (rule.function == name) {
        data_->origins[node] =
            absl::StrFormat("untrusted data comes from '%s'", Demangled(name));
        return;
      }
    }
  }

  // A copy of every fact of flow.via_from to every fact of flow.via_to, through the function's
  // copy place: the call's edge maps each source to the place (beside the rest of its flow),
  // and a node of its own after the call maps the place to each destination and forgets it.
  // The same facts hold after it as with every pair, in a sum of pairs instead of a product.
  void CopyThrough(const llvm::Instruction& instruction, uint32_t node, FlowSpec flow) {
    const uint32_t place = copy_fact_.at(instruction.getFunction());
    FlowSpec onward;
    onward.Kill(place);
    for (uint32_t d : flow.via_to) onward.Pair(place, d);
    for (uint32_t s : flow.via_from) flow.Pair(s, place);
    flow.via_from.clear();
    flow.via_to.clear();
    const uint32_t through = AddNode(std::string(problem_.node_names[node]) + "~copy",
                                     problem_.node_procedure[node], LocationOf(instruction));
    AddEdge(node, through, std::move(flow));
    AddEdge(through, NextNode(instruction), std::move(onward));
  }

  // A conditional branch on whether a site's last object is null (`if (p == NULL)` or
  // `if (!p)` through the variable `p = malloc(...)` was kept in, IrModel::MostRecent): the
  // successor on which it is null, and the object. On that edge the allocation failed: there
  // is no last object, and what the allocation gave it goes (the one made before is among the
  // older objects already).
  bool NullTestedLast(const llvm::Instruction& terminator, unsigned* null_successor,
                      uint32_t* object) const {
    const auto* branch = llvm::dyn_cast<llvm::BranchInst>(&terminator);
    if (branch == nullptr || !branch->isConditional()) return false;
    const llvm::Value* condition = branch->getCondition();
    bool negated = false;
    if (const auto* inverse = llvm::dyn_cast<llvm::BinaryOperator>(condition);
        inverse != nullptr && inverse->getOpcode() == llvm::Instruction::Xor) {
      const auto* one = llvm::dyn_cast<llvm::ConstantInt>(inverse->getOperand(1));
      if (one == nullptr || !one->isOne()) return false;
      condition = inverse->getOperand(0);
      negated = true;
    }
    const auto* compare = llvm::dyn_cast<llvm::ICmpInst>(condition);
    if (compare == nullptr || !compare->isEquality()) return false;
    const llvm::Value* pointer = nullptr;
    if (llvm::isa<llvm::ConstantPointerNull>(compare->getOperand(1))) {
      pointer = compare->getOperand(0);
    } else if (llvm::isa<llvm::ConstantPointerNull>(compare->getOperand(0))) {
      pointer = compare->getOperand(1);
    } else {
      return false;
    }
    uint64_t offset = 0;
    if (!model_.MostRecent(pointer, object, &offset) || offset != 0) return false;
    const bool null_if_true = (compare->getPredicate() == llvm::CmpInst::ICMP_EQ) != negated;
    *null_successor = null_if_true ? 0 : 1;
    return true;
  }

  void BuildEdges() {
    const uint32_t identity_flow = AddFlow(FlowSpec{});
    for (const llvm::Function* function : model_.functions()) {
      const ifds::Procedure& procedure = problem_.procedures[procedure_of_.at(function)];
      // The function's own facts of the pool's objects feed it while its edges are built.
      const auto own = pooled_own_.find(function);
      const auto feed = [&](bool on) {
        if (own == pooled_own_.end()) return;
        for (uint32_t fact : LeafFacts(own->second)) feeds_pool_[fact] = on;
      };
      feed(true);
      BuildFunctionEdges(function, procedure, identity_flow);
      feed(false);
    }
  }

  void BuildFunctionEdges(const llvm::Function* function, const ifds::Procedure& procedure,
                          uint32_t identity_flow) {
    AddEdge(procedure.start, FirstNode(function->getEntryBlock()), identity_flow);
    const ValueLiveness liveness(
        *function, [this](const llvm::Value* v) { return ValueFact(v) != kNoFact; },
        [](const llvm::Instruction& i) { return !Skipped(i); });
    for (const llvm::BasicBlock& block : *function) {
      for (const llvm::Instruction& instruction : block) {
        if (Skipped(instruction)) continue;
        const uint32_t node = node_of_.at(&instruction);
        AddChecks(instruction, node);
        NoteOrigin(instruction, node);
        const auto* call = llvm::dyn_cast<llvm::CallBase>(&instruction);
        if (call != nullptr && !model_.Callees(*call).empty()) {
          if (const auto* invoke = llvm::dyn_cast<llvm::InvokeInst>(call)) {
            AddCallSite(*call, node, FirstNode(*invoke->getNormalDest()), liveness);
            // The exceptional path bypasses the callee, as the call-to-return flow does.
            AddEdge(node, FirstNode(*invoke->getUnwindDest()),
                    problem_.call_sites.back().call_to_return_flow);
          } else if (const uint32_t next = NextNode(instruction); next != kNoFact) {
            AddCallSite(*call, node, next, liveness);
          }
          continue;
        }
        const FlowSpec flow = NormalFlow(instruction, liveness);
        if (llvm::isa<llvm::ReturnInst>(instruction)) {
          AddEdge(node, procedure.exit, flow);
        } else if (instruction.isTerminator()) {
          unsigned null_successor = 0;
          uint32_t failed = 0;
          const bool null_test = NullTestedLast(instruction, &null_successor, &failed);
          // Each successor also loses the values only the others read.
          for (unsigned s = 0; s < instruction.getNumSuccessors(); ++s) {
            const llvm::BasicBlock& successor = *instruction.getSuccessor(s);
            FlowSpec edge = flow;
            for (const llvm::Value* value : liveness.DeadOnEdge(instruction, successor)) {
              edge.Kill(ValueFact(value));
            }
            if (null_test && s == null_successor) {
              const MemoryObject& object = model_.objects()[failed];
              std::vector<uint32_t> leaves(object.leaf_count);
              for (uint32_t i = 0; i < object.leaf_count; ++i) leaves[i] = object.first_leaf + i;
              for (uint32_t fact : LastFacts(leaves)) edge.Kill(fact);
            }
            AddEdge(node, FirstNode(successor), std::move(edge));
          }
        } else if (!flow.via_from.empty() || !flow.via_to.empty()) {
          CopyThrough(instruction, node, flow);
        } else {
          AddEdge(node, NextNode(instruction), flow);
        }
      }
    }
  }

  void Seed() {
    const llvm::Function* main = model_.module().getFunction("main");
    if (main != nullptr && !main->isDeclaration()) {
      problem_.seeds.emplace_back(problem_.procedures[procedure_of_.at(main)].start,
                                  ifds::kZeroFact);
      return;
    }
    // A library: every function it exports is an entry.
    for (const llvm::Function* function : model_.functions()) {
      if (!function->hasLocalLinkage()) {
        problem_.seeds.emplace_back(problem_.procedures[procedure_of_.at(function)].start,
                                    ifds::kZeroFact);
      }
    }
  }

  const IrModel& model_;
  const AnalyzerOptions& options_;
  AnalyzedProgram::Data* data_;
  ifds::Problem& problem_;
  bool readable_ = true;
  std::vector<uint32_t> leaf_fact_;
  std::vector<uint32_t> shared_leaf_;  // by shared fact, less one: the leaf it is
  std::vector<uint32_t> old_fact_;     // by leaf: its older objects' fact (kNoFact: none)
  std::vector<bool> pooled_;           // by leaf: whether it is one of the pool's objects
  uint32_t pool_fact_ = kNoFact;       // the pool's `pool` fact (kNoFact: no pool)
  uint32_t held_fact_ = kNoFact;       // and its `pool~held`
  std::vector<bool> feeds_pool_;       // by fact: a pool object's (the function's own, too)
  std::vector<std::pair<uint32_t, uint32_t>> pending_writes_;  // AddFlow's, for AddEdge
  absl::flat_hash_map<const llvm::Function*, std::vector<uint32_t>> pooled_own_;  // leaves
  absl::flat_hash_map<const llvm::Value*, uint32_t> value_fact_;
  absl::flat_hash_map<const llvm::Function*, uint32_t> copy_fact_;  // CopyThrough's place
  absl::flat_hash_map<const llvm::Function*, uint32_t> procedure_of_;
  absl::flat_hash_map<const llvm::Instruction*, uint32_t> node_of_;
  absl::flat_hash_map<std::string, uint32_t> flow_ids_;
  absl::flat_hash_map<const llvm::Function*, std::vector<uint32_t>> exported_;
  absl::flat_hash_map<std::pair<std::string, std::string>, uint32_t> file_ids_;
};

}  // namespace

// Chains of a solution's pairs (docs/analyzer.md, "Paths") for `pairs`, each empty where none
// was found: a search of each one's own (the shortest chain, kPathSearchDepth calls deep);
// for those left, a longer and deeper search that ends where it meets a chain found before;
// the tabulation for those still left; then that longer search again for those it did not
// reach; kPathSearchesBudget pairs met by all the searches.
std::vector<std::vector<ifds::WitnessStep>> FindChains(
    const ifds::Problem& problem, const ifds::Solution& solution,
    const std::vector<std::pair<uint32_t, uint32_t>>& pairs) {
  std::vector<std::vector<ifds::WitnessStep>> chains(pairs.size());
  ifds::Witnesses witnesses(problem, solution);
  uint64_t spent = 0;
  const auto left = [&spent](uint64_t budget) {
    return std::min(budget, kPathSearchesBudget - std::min(spent, kPathSearchesBudget));
  };
  for (size_t k = 0; k < pairs.size() && left(1) > 0; ++k) {
    uint64_t visited = 0;
    chains[k] = witnesses.Explain(pairs[k].first, pairs[k].second, left(kPathSearchBudget),
                                  kPathSearchDepth, &visited);
    spent += visited;
  }
  for (const std::vector<ifds::WitnessStep>& chain : chains) witnesses.Remember(chain);
  // The longer search of each pair left, each chain it finds remembered for those after it.
  const auto search_left = [&] {
    for (size_t k = 0; k < pairs.size() && left(1) > 0; ++k) {
      if (!chains[k].empty()) continue;
      uint64_t visited = 0;
      chains[k] = witnesses.Search(pairs[k].first, pairs[k].second, left(kPathLastSearchBudget),
                                   &visited);
      spent += visited;
      witnesses.Remember(chains[k]);
    }
  };
  // Most chains the first search misses are deeper than it goes, and found by a deeper search
  // for far less than the tabulation costs (on a C++ file whose problem has 38M path edges:
  // 0.4 s against 40 s; docs/benchmarks.md).
  search_left();
  std::vector<std::pair<uint32_t, uint32_t>> unexplained;
  for (size_t k = 0; k < pairs.size(); ++k) {
    if (chains[k].empty()) unexplained.push_back(pairs[k]);
  }
  std::vector<std::vector<ifds::WitnessStep>> tabulated = witnesses.FromTabulation(unexplained);
  for (size_t k = 0, next = 0; k < pairs.size(); ++k) {
    if (!chains[k].empty()) continue;
    chains[k] = std::move(tabulated[next++]);
    witnesses.Remember(chains[k]);
  }
  search_left();
  return chains;
}

AnalyzedProgram::AnalyzedProgram(std::unique_ptr<Data> data) : data_(std::move(data)) {}
AnalyzedProgram::~AnalyzedProgram() = default;

bool AnalyzedProgram::Refine(const ifds::Solution& solution) {
  const auto holds = [&solution](uint32_t node, uint32_t fact) {
    return std::binary_search(solution.facts.begin(), solution.facts.end(),
                              std::make_pair(node, fact));
  };
  absl::flat_hash_map<uint32_t, std::vector<uint32_t>> made;  // edge -> the pool facts it makes
  std::vector<Data::PoolWrite*> now;                 // the writes made now
  std::vector<std::pair<uint32_t, uint32_t>> pairs;  // and the first fact each one writes
  for (Data::PoolWrite& write : data_->pool_writes) {
    if (write.made) continue;
    for (uint32_t fact : write.facts) {
      if (!holds(write.node, fact)) continue;
      write.made = true;
      made[write.edge].push_back(write.fact);
      now.push_back(&write);
      pairs.emplace_back(write.node, fact);
      break;
    }
  }
  if (made.empty()) return false;
  // Where what each write made now writes comes from, while the problem is the one solved.
  std::vector<std::vector<ifds::WitnessStep>> chains = FindChains(data_->problem, solution, pairs);
  for (size_t k = 0; k < now.size(); ++k) now[k]->chain = std::move(chains[k]);
  // What the searches and the tabulation held goes back to the system before the problem is
  // solved again, rather than sit in the allocator beside the device's memory.
  ReleaseFreeHeapMemory();
  ifds::Problem& problem = data_->problem;
  // In edge order, so that the same solution gives the same problem.
  std::vector<uint32_t> edges;
  for (const auto& [edge, facts] : made) edges.push_back(edge);
  std::sort(edges.begin(), edges.end());
  for (uint32_t e : edges) {
    const ifds::FlowView old = problem.flows[problem.edges[e].flow];
    ifds::Flow flow;
    flow.identity = old.identity;
    flow.kills.assign(old.kills.begin(), old.kills.end());
    flow.gens.assign(old.gens.begin(), old.gens.end());
    for (uint32_t fact : made[e]) flow.gens.push_back(fact);
    for (const auto pair : old.pairs) flow.pairs.push_back(pair);
    flow.Normalize();
    problem.edges[e].flow = static_cast<uint32_t>(problem.flows.size());
    problem.flows.push_back(flow);
  }
  ++data_->stats.pool_refinements;
  return true;
}

absl::StatusOr<ifds::Solution> AnalyzedProgram::Solve(
    const std::function<absl::StatusOr<ifds::Solution>(const ifds::Problem&)>& solve) {
  for (;;) {
    absl::StatusOr<ifds::Solution> solution = solve(data_->problem);
    if (!solution.ok() || !Refine(*solution)) return solution;
  }
}

const ifds::Problem& AnalyzedProgram::problem() const { return data_->problem; }
bool AnalyzedProgram::InSystemHeader(const Finding& finding) const {
  const SourceLocation& at = finding.location;
  const bool relative = !at.file.empty() && at.file[0] != '/';
  return InDirectories(relative && !at.directory.empty() ? at.directory + "/" + at.file : at.file,
                       data_->system_header_directories);
}
const ProgramStats& AnalyzedProgram::stats() const { return data_->stats; }
const std::string& AnalyzedProgram::FunctionName(uint32_t procedure) const {
  return procedure < data_->procedure_names.size() ? data_->procedure_names[procedure]
                                                   : data_->problem.procedures[procedure].name;
}

namespace {

// A taint rule may name a C++ function as its source does, qualified ("Shell::Run": every
// overload; a template's without its arguments, "std::getline", every instance too) or whole
// as the demangler writes it ("Shell::Run(char const*)"), where the IR
// names it by its symbol (_ZN5Shell3RunEPKc): such a rule becomes one for each symbol of the
// module it names. A name the module has as a symbol (C's, or a mangled one written out) is
// that symbol.
void NameCxxFunctionsBySymbol(const llvm::Module& module, TaintConfig* taint) {
  absl::flat_hash_map<std::string, std::vector<std::string>> symbols;  // by source name
  const auto add = [&](std::string name, const std::string& symbol) {
    std::vector<std::string>& named = symbols[std::move(name)];
    if (named.empty() || named.back() != symbol) named.push_back(symbol);
  };
  llvm::ItaniumPartialDemangler demangler;
  for (const llvm::Function& function : module) {
    const std::string symbol = function.getName().str();
    if (symbol.rfind("_Z", 0) != 0) continue;
    if (std::string whole = Demangled(symbol); whole != symbol) add(std::move(whole), symbol);
    if (!demangler.partialDemangle(symbol.c_str()) && demangler.isFunction()) {
      size_t size = 0;
      if (char* name = demangler.getFunctionName(nullptr, &size); name != nullptr) {
        add(name, symbol);
        // A template's functions by the template's name ("std::getline").
        if (std::string plain = WithoutTemplateArguments(name); plain != name) {
          add(std::move(plain), symbol);
        }
        std::free(name);
      }
    }
  }
  for (std::vector<TaintRule>* rules : {&taint->sources, &taint->sinks, &taint->sanitizers}) {
    std::vector<TaintRule> named;
    for (TaintRule& rule : *rules) {
      const auto it = module.getFunction(rule.function) == nullptr ? symbols.find(rule.function)
                                                                    : symbols.end();
      if (it == symbols.end()) {
        named.push_back(std::move(rule));
        continue;
      }
      for (const std::string& symbol : it->second) {
        named.push_back(rule);
        named.back().function = symbol;
      }
    }
    *rules = std::move(named);
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<AnalyzedProgram>> AnalyzedProgram::Build(
    const std::vector<std::string>& inputs, const AnalyzerOptions& given) {
  absl::Time start = absl::Now();
  absl::StatusOr<LoadedModule> loaded =
      LoadModule(inputs, given.front_end, given.progress);
  if (!loaded.ok()) return loaded.status();
  AnalyzerOptions options = given;
  if (options.analysis == Analysis::kTaint) {
    NameCxxFunctionsBySymbol(*loaded->module, &options.taint);
  }
  auto data = std::make_unique<Data>();
  data->analysis = options.analysis;
  data->system_header_directories = std::move(loaded->system_header_directories);
  data->stats.front_end_seconds = absl::ToDoubleSeconds(absl::Now() - start);
  start = absl::Now();
  absl::flat_hash_set<std::string> summarized, sources;
  if (options.analysis == Analysis::kTaint) {
    for (const auto* rules :
         {&options.taint.sources, &options.taint.sinks, &options.taint.sanitizers}) {
      for (const TaintRule& rule : *rules) summarized.insert(rule.function);
    }
    for (const TaintRule& rule : options.taint.sources) sources.insert(rule.function);
  }
  if (options.progress) options.progress("points-to and call graph");
  IrModel model(*loaded->module, summarized, sources);
  data->stats.indirect_calls = model.indirect_calls();
  data->stats.allocation_wrappers = model.allocation_wrappers();
  data->stats.external_functions = model.external_functions();
  data->stats.points_to_seconds = absl::ToDoubleSeconds(absl::Now() - start);
  start = absl::Now();
  if (options.progress) options.progress(absl::StrFormat("building the %s problem",
                                                         AnalysisName(options.analysis)));
  ProblemBuilder builder(model, options, data.get());
  if (absl::Status s = builder.Build(); !s.ok()) return s;
  data->stats.build_seconds = absl::ToDoubleSeconds(absl::Now() - start);
  return std::unique_ptr<AnalyzedProgram>(new AnalyzedProgram(std::move(data)));
}

namespace {


bool SamePlace(const SourceLocation& a, const SourceLocation& b) {
  return a.file == b.file && a.directory == b.directory && a.line == b.line &&
         a.column == b.column;
}

}  // namespace

std::vector<FlowStep> AnalyzedProgram::Data::Path(const std::vector<ifds::WitnessStep>& chain,
                                                  const Finding& finding, bool untraced) const {
  std::vector<FlowStep> path;
  const auto add = [&path](SourceLocation location, std::string message) {
    if (!path.empty() && SamePlace(path.back().location, location) &&
        path.back().message == message) {
      return;
    }
    path.push_back({std::move(location), std::move(message)});
  };
  if (chain.size() < 2) return path;
  // The origin, naming the variable it makes where it says which: a declaration that makes
  // the pool hold (one of its objects) names its own variable.
  std::string label = Label(chain[1].node, chain[1].fact);
  std::string pooled;  // the pool's label, where the declaration names its own variable
  if (const auto variable = declared.find(chain[0].node);
      variable != declared.end() && !variable->second.empty() && Pooled(chain[1].fact)) {
    pooled = std::exchange(label, variable->second);
  }
  const auto origin = origins.find(chain[0].node);
  std::string what = untraced ? "stored into '%s' here, from a value whose origin the path "
                                "search did not find within its bounds"
                     : origin != origins.end() ? origin->second
                                               : "the value starts here";
  if (const size_t at = what.find("%s"); at != std::string::npos) {
    what.replace(at, 2, label.empty() ? "the variable" : label);
  }
  if (!pooled.empty()) {
    absl::StrAppend(&what, "; it is ", pooled);
    label = std::move(pooled);
  }
  add(Location(chain[0].node), std::move(what));
  for (size_t i = 1; i < chain.size(); ++i) {
    const ifds::WitnessStep& from = chain[i - 1];
    const ifds::WitnessStep& to = chain[i];
    // What the pool holds, any read anywhere after may see: the calls and returns it is carried
    // through on its way to the read are no steps (from a write in one call of a function, the
    // chain may leave it to another caller).
    if (to.kind != ifds::WitnessStep::Kind::kEdge && Pooled(from.fact) && Pooled(to.fact)) {
      continue;
    }
    switch (to.kind) {
      case ifds::WitnessStep::Kind::kCall:
        add(Location(from.node),
            absl::StrFormat("passed into '%s'",
                            procedure_names[problem.node_procedure[to.node]]));
        break;
      case ifds::WitnessStep::Kind::kReturn:
        add(Location(problem.call_sites[to.call_site].call),
            absl::StrFormat("returned from '%s'",
                            procedure_names[problem.node_procedure[from.node]]));
        break;
      default:
        if (i == 1 || to.fact == from.fact) break;
        // Into another memory location: where it is stored.
        if (const std::string& into = Label(to.node, to.fact); !into.empty() && into != label) {
          add(Location(from.node), absl::StrFormat("stored into '%s'", into));
          label = into;
        }
        break;
    }
  }
  add(finding.location, finding.message);
  return path;
}

std::vector<Finding> AnalyzedProgram::Findings(const ifds::Solution& solution) const {
  auto holds = [&solution](uint32_t node, uint32_t fact) {
    return std::binary_search(solution.facts.begin(), solution.facts.end(),
                              std::make_pair(node, fact));
  };
  struct Reported {
    Finding finding;
    uint32_t node, fact;  // the pair that made it
    std::vector<ifds::WitnessStep> chain;
    size_t folded_into = ~size_t{0};
  };
  std::vector<Reported> out;
  std::set<std::tuple<std::string, uint32_t, uint32_t, std::string, uint32_t>> seen;
  for (const Check& check : data_->checks) {
    for (const auto& [fact, name] : check.facts) {
      if (!holds(check.node, fact)) continue;
      Finding finding = check.finding;
      if (check.per_fact) {
        finding.variable = name;
        finding.message = absl::StrFormat("use of possibly uninitialized '%s'", name);
      } else {
        if (finding.variable.empty()) finding.variable = name;
        finding.message =
            finding.variable.empty()
                ? absl::StrFormat("tainted data reaches '%s' (argument %d)", finding.sink,
                                  finding.argument)
                : absl::StrFormat("tainted data reaches '%s' (argument %d: '%s')", finding.sink,
                                  finding.argument, finding.variable);
      }
      // Uninit: once per line and variable; taint: once per call and argument.
      const auto key = check.per_fact
                           ? std::make_tuple(finding.location.file, finding.location.line,
                                             uint32_t{0}, finding.variable, uint32_t{0})
                           : std::make_tuple(finding.location.file, finding.location.line,
                                             finding.location.column, finding.sink,
                                             finding.argument);
      if (seen.insert(key).second) out.push_back({std::move(finding), check.node, fact, {}});
      if (!check.per_fact) break;
    }
  }
  // Each finding's path: a chain of the solution's pairs from the origin (FindChains).
  {
    std::vector<std::pair<uint32_t, uint32_t>> pairs;
    for (const Reported& r : out) pairs.emplace_back(r.node, r.fact);
    std::vector<std::vector<ifds::WitnessStep>> chains =
        FindChains(data_->problem, solution, pairs);
    for (size_t k = 0; k < out.size(); ++k) out[k].chain = std::move(chains[k]);
  }
  // A chain that starts where a write made the pool hold (Refine) starts where what it wrote
  // came from: the chain Refine found for it, then the rest. That chain was found in a solution
  // only writes made before had a part in, so each step back goes to an earlier write, and the
  // chain ends at an origin outside the pool, or at a write whose chain was not found.
  absl::flat_hash_map<std::pair<uint32_t, uint32_t>, const Data::PoolWrite*> pool_write;
  for (const Data::PoolWrite& write : data_->pool_writes) {
    if (write.made) pool_write.try_emplace(std::make_pair(write.node, write.fact), &write);
  }
  for (Reported& r : out) {
    bool untraced = false;
    for (size_t back = 0; r.chain.size() >= 2 && back <= data_->pool_writes.size(); ++back) {
      const auto write = pool_write.find(std::make_pair(r.chain[0].node, r.chain[1].fact));
      if (write == pool_write.end()) break;
      const std::vector<ifds::WitnessStep>& before = write->second->chain;
      untraced = before.empty();
      if (untraced) break;
      std::vector<ifds::WitnessStep> joined = before;
      joined.insert(joined.end(), r.chain.begin() + 1, r.chain.end());
      r.chain.swap(joined);
    }
    r.finding.path = data_->Path(r.chain, r.finding, untraced);
  }
  // Uninit: one finding per uninitialized origin. Reads whose paths start at the same origin
  // (one declaration or allocation left without a value, reaching them through copies, calls
  // or the variable itself) are one group, reported at its read nearest the origin, the others
  // as read again. (Grouping reads whose paths merely cross would join different origins.)
  if (data_->analysis == Analysis::kUninit) {
    // By finding: its group, named by the group's first finding in `out` (a finding without a
    // path is a group of its own).
    std::vector<size_t> group(out.size());
    absl::flat_hash_map<std::pair<uint32_t, uint32_t>, size_t> by_origin;  // (node, fact made)
    for (size_t k = 0; k < out.size(); ++k) {
      const std::vector<ifds::WitnessStep>& chain = out[k].chain;
      group[k] = chain.size() < 2
                     ? k
                     : by_origin.emplace(std::make_pair(chain[0].node, chain[1].fact), k)
                           .first->second;
    }
    // A group's first read: the one nearest its origin (the shortest path), then the first in
    // source order.
    const auto earlier = [&out](size_t a, size_t b) {
      const Finding& x = out[a].finding;
      const Finding& y = out[b].finding;
      const size_t x_steps = out[a].chain.size(), y_steps = out[b].chain.size();
      return std::tie(x_steps, x.location.file, x.location.line, x.location.column, x.variable) <
             std::tie(y_steps, y.location.file, y.location.line, y.location.column, y.variable);
    };
    std::vector<size_t> first(out.size(), ~size_t{0});  // by group: its first read
    for (size_t k = 0; k < out.size(); ++k) {
      size_t& f = first[group[k]];
      if (f == ~size_t{0} || earlier(k, f)) f = k;
    }
    for (size_t k = 0; k < out.size(); ++k) {
      const size_t f = first[group[k]];
      if (f == k) continue;
      out[k].folded_into = f;
      out[f].finding.read_again.push_back({out[k].finding.location, out[k].finding.variable});
    }
  }
  std::vector<Finding> findings;
  for (Reported& r : out) {
    if (r.folded_into == ~size_t{0}) findings.push_back(std::move(r.finding));
  }
  const auto place = [](const Finding::Reread& a, const Finding::Reread& b) {
    return std::tie(a.location.file, a.location.line, a.location.column, a.variable) <
           std::tie(b.location.file, b.location.line, b.location.column, b.variable);
  };
  for (Finding& f : findings) std::sort(f.read_again.begin(), f.read_again.end(), place);
  std::sort(findings.begin(), findings.end(), [](const Finding& a, const Finding& b) {
    return std::tie(a.location.file, a.location.line, a.location.column, a.variable, a.sink,
                    a.argument) < std::tie(b.location.file, b.location.line, b.location.column,
                                           b.variable, b.sink, b.argument);
  });
  return findings;
}

}  // namespace sluice::analyzer
