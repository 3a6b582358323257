// What the analyses know of a module (docs/analyzer.md): its memory locations (a leaf per
// scalar field, one per array, one per heap site), an Andersen points-to analysis over them,
// the call graph (direct calls, indirect calls resolved by type), and the locations each
// function reads or writes, itself or through what it calls.
#ifndef SLUICE_ANALYZER_IR_MODEL_H_
#define SLUICE_ANALYZER_IR_MODEL_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "llvm/IR/DataLayout.h"
#include "llvm/IR/DebugInfoMetadata.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/InstrTypes.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/Module.h"

namespace sluice::analyzer {

// Bytes to the end of a location: a write or read whose length is unknown.
inline constexpr uint64_t kToEnd = ~uint64_t{0};

struct MemoryObject {
  enum class Kind { kLocal, kGlobal, kHeap, kExternal };
  Kind kind = Kind::kLocal;
  const llvm::Function* owner = nullptr;  // the function of a local
  const llvm::Value* site = nullptr;      // the alloca, global or call
  std::string name;                       // the source name ("" for compiler temporaries)
  bool named = false;                     // from debug info: findings may name it
  uint32_t first_leaf = 0;
  uint32_t leaf_count = 0;
  uint64_t size = 0;  // bytes, where its type says (0: not known)
  // Its IR type: what a local or global is declared as (a heap object's is a guess).
  llvm::Type* type = nullptr;
  // A heap object with fields some pointer may point into at an unknown offset: its leaves
  // are one location (one fact, the object's name).
  bool smashed = false;
  // An object of one call of an allocating function (IrModel::FindAllocatingFunctions): what
  // that call returns, and nothing the allocating function's body names but as one of all
  // its calls' objects. It has no recency.
  bool cloned = false;
};

struct Leaf {
  uint32_t object = 0;
  uint64_t offset = 0;
  uint64_t size = kToEnd;
  bool array = false;
  // An array of structs: the bytes of it that are its elements' padding (between fields, and
  // the tail Clang gives a field of its own), which hold no value: [begin, end) in the object,
  // sorted. Empty for any other leaf, or an array of more than kMaxPaddedElements.
  std::vector<std::pair<uint64_t, uint64_t>> padding;
  static constexpr uint64_t kMaxPaddedElements = 1024;
  std::string name;  // "x", "s.a", "buf", "heap@f.c:12"; "s.field1" for a field with no name
  // What a user reads: `name` without the fields the debug info does not name (a library
  // class's members: std::string `cmd`'s leaves are all "cmd").
  std::string label;
};

// The source-level name of a function: its debug name, else its IR name.
std::string DisplayName(const llvm::Function& function);
// The name a finding gives its function: C++'s qualified and demangled ("P::get() const",
// where the debug name is "get", which any class's get has), else DisplayName.
std::string QualifiedName(const llvm::Function& function);
// A symbol as C++ source writes it ("Shell::Run(char const*)" for _ZN5Shell3RunEPKc); any
// other (C's) as it is.
std::string Demangled(const std::string& symbol);
// A C++ name without its template arguments: "std::vector<int>::push_back" is
// "std::vector::push_back", "std::operator>><char>" "std::operator>>" (and an IR type's
// name is its class's without the class's own).
std::string WithoutTemplateArguments(std::string_view name);

class IrModel {
 public:
  // Calls to functions named in `summarized` are external calls even where the module defines
  // the function (the taint rules' functions are summarized by their rules). Allocators named
  // in `sources` (taint sources) make no allocation wrapper: a wrapper's site would not carry
  // what the source gives.
  IrModel(const llvm::Module& module, const absl::flat_hash_set<std::string>& summarized,
          const absl::flat_hash_set<std::string>& sources = {});

  const llvm::Module& module() const { return module_; }
  const std::vector<MemoryObject>& objects() const { return objects_; }
  const std::vector<Leaf>& leaves() const { return leaves_; }
  // The defined functions, in module order.
  const std::vector<const llvm::Function*>& functions() const { return functions_; }

  // The defined functions a call may reach (empty: an external or unresolved call).
  const std::vector<const llvm::Function*>& Callees(const llvm::CallBase& call) const;
  // The external function a call with no defined callee names, by its libc name
  // ("memcpy" for llvm.memcpy.*); "" for an unresolved indirect call.
  std::string ExternalName(const llvm::CallBase& call) const;
  // The argument an external call returns a pointer into, if it does: C's strcpy and the like
  // their first; a C++ library member its object (c_str, data and operator[] point into the
  // string, append and operator= return *this), and a free C++ library function that returns
  // a reference of its first argument's type that argument (a stream's operator<< and >>).
  std::optional<unsigned> ReturnedArgument(const llvm::CallBase& call) const;
  // Where an external C++ function called by `call` (one the library defines: std::string's
  // members, say) hands back what it makes of its other arguments, by argument: its result
  // returned through memory (an sret argument), the object it constructs, or changes as a
  // member that is not const (a constructor, append, operator=), and what it is given by a
  // reference that is not const (the stream of `std::operator<<(std::ostream&, ...)`). None
  // for C's functions and destructors, nor through const members' objects and const
  // references (compare, operator==).
  std::vector<unsigned> CxxOutputs(const llvm::CallBase& call) const;

  // The leaves `pointer` may reach in [offset, offset + size) of each object it may point to
  // (kToEnd: to the object's end; unknown offsets: the whole object), sorted.
  std::vector<uint32_t> Leaves(const llvm::Value* pointer, uint64_t size) const;
  // The leaves a write of `size` bytes through `pointer` replaces: all of them when the
  // pointer may point to one place only, in one object that is not a heap or external one, or
  // into the last object of a heap site (MostRecent), and the write covers those leaves
  // entirely; else none (a weak update).
  std::vector<uint32_t> StrongLeaves(const llvm::Value* pointer, uint64_t size) const;
  // Leaves of `dst` that a copy from `src` of `size` bytes may write, each with the source
  // leaves it may receive (matched by offset when both sides are single places).
  std::vector<std::pair<uint32_t, uint32_t>> CopyPairs(const llvm::Value* dst,
                                                       const llvm::Value* src,
                                                       uint64_t size) const;
  // Whether a copy from `src` to `dst` pairs every source leaf with every destination leaf
  // (not matched by offset): CopyPairs is then the product of Leaves(src, size) and
  // Leaves(dst, size), which a caller may rather route through one place of its own.
  bool CopiesAllToAll(const llvm::Value* dst, const llvm::Value* src) const;
  // Whether `pointer` points into the object its allocation site made last (IrModel's recency
  // abstraction, analyzer/recency.cc): that object, and the offset into it.
  bool MostRecent(const llvm::Value* pointer, uint32_t* object, uint64_t* offset) const;
  // Whether some pointer points to the last object of this heap object's site: its leaves are
  // then two places each, the last object's and the older objects'.
  bool HasRecency(uint32_t object) const { return recency_objects_.contains(object); }
  // The allocation wrapper (analyzer/allocation_wrappers.cc) a call to a defined function
  // allocates through, where the call is a heap site of its own: it calls exactly one function,
  // a wrapper, it is not itself what a wrapper returns, and it allocates one struct kept in a
  // variable the program reads it through (the object has fields, IrModel::HeapType).
  // `zeroed`: the memory comes zeroed (every allocator behind it is calloc). Null where the
  // call is no such site (a wrapper's other calls share the allocation's object inside it).
  const llvm::Function* WrapperSite(const llvm::CallBase& call, bool* zeroed) const;
  // The leaves of the heap or external object a call creates (none if it creates none).
  std::vector<uint32_t> CreatedLeaves(const llvm::CallBase& call) const;

  // The leaves `function` reads or writes, itself or through anything it calls.
  const std::vector<uint32_t>& Accessed(const llvm::Function& function) const;

  // Bytes a function writes through one of its pointer parameters: `size` bytes from `offset`
  // past where the parameter points.
  struct ParameterWrite {
    unsigned argument = 0;
    uint64_t offset = 0;
    uint64_t size = 0;
    friend bool operator==(const ParameterWrite&, const ParameterWrite&) = default;
  };
  // What `function` writes through its pointer parameters, itself or through what it calls, on
  // every path from its entry to a return, before anything it does may read those bytes.
  const std::vector<ParameterWrite>& WrittenFirst(const llvm::Function& function) const;
  // The leaves a call to `callee` replaces: what the callee writes first through an argument
  // that may point to one place only, in a local or global object (not into an array), where
  // those bytes cover a leaf that is not an array entirely. The callee reads none of them
  // before writing them, so their content before the call does not reach past it.
  std::vector<uint32_t> ReplacedByCall(const llvm::CallBase& call,
                                       const llvm::Function& callee) const;
  // The array leaves of the function's own locals that a run of writes beginning at
  // `instruction` fills whole before anything may read them (analyzer/array_fills.cc): each
  // element written in turn, by stores or by calls that write it first through a pointer at a
  // constant offset from the local, or by copies of a known length there, along one block or
  // blocks that follow each other only (an invoke's normal way), with nothing between that
  // may read the array: a load through a pointer that may point to it, or a call that may
  // reach it (ReachedObjects) other than to write an element first (one given another pointer
  // into the array too may read through it: it ends a run and begins none). The run's first
  // write replaces such an array, as a strong update would, and the writes after it add what
  // they write: what the array holds once it is filled.
  const std::vector<uint32_t>& ArrayFilledAt(const llvm::Instruction& instruction) const;
  // Whether a local leaf is accessed by a function other than its own.
  bool Escapes(uint32_t leaf) const { return escapes_[leaf]; }
  // The objects a call's callees may reach but through globals or library objects (sorted):
  // those its arguments point to, and the locals whose address memory those objects lead to
  // holds (what they hold, what that holds, and so on). As far as points-to follows pointers,
  // a callee can reach a local in no other way: memory it allocates itself is new, and holds
  // nothing of the caller's.
  std::vector<uint32_t> ReachedObjects(const llvm::CallBase& call) const;
  // Whether memory that globals or the objects library functions return lead to may hold the
  // address of a local: every function may reach it.
  bool ReachedFromEverywhere(uint32_t object) const;
  // Whether a local of the calling function has had its address used as a value (stored,
  // passed to a call, ...) on no path to `call` but by `call` itself: the callee cannot reach
  // it (analyzer/escape.cc).
  bool Unescaped(const llvm::CallBase& call, uint32_t object) const;

  // The name a value has in the source ("cmd", "s.a"), following casts, address arithmetic
  // and loads back to a variable; "" when it has none.
  std::string SourceName(const llvm::Value* value) const;

  uint32_t indirect_calls() const { return indirect_calls_; }
  uint32_t allocation_wrappers() const { return static_cast<uint32_t>(wrappers_.size()); }
  uint32_t external_functions() const { return external_functions_; }

 private:
  using Pointee = uint64_t;  // object << 32 | offset (kUnknownOffset: anywhere in it)
  using PointsTo = std::vector<Pointee>;  // sorted, once solved

  void BuildObjects();
  // `open_ended`: `type` ends in an array that runs to the object's end, whose size is not
  // known (IrModel::HeapType).
  void AddObject(MemoryObject object, llvm::Type* type, const llvm::DIType* di_type,
                 bool open_ended = false);
  // Notes the struct types in `type` that its debug type `di_type` says are unions though their
  // name does not (linked_unions_).
  void NoteUnions(llvm::Type* type, const llvm::DIType* di_type, int depth);
  void Flatten(llvm::Type* type, uint64_t offset, const std::string& name,
               const std::string& label, const llvm::DIType* di_type, uint32_t object,
               int depth);
  // The bytes a call of a library allocator allocates where they are constant, else 0.
  static uint64_t AllocatorBytes(const llvm::CallBase& call, const std::string& name);
  // (`*open_ended`: an allocation of a size not known, read as a struct that ends in an array
  // of at most one element, C's flexible array member: the array runs to the object's end.)
  llvm::Type* HeapType(
      const llvm::CallBase& call, uint64_t bytes,
      const absl::flat_hash_map<const llvm::Value*, const llvm::DILocalVariable*>& declared,
      const llvm::DIType** di_type, bool* open_ended, bool through_casts = false) const;
  void BuildCallGraph();
  // Allocation wrappers: defined functions that return a fresh allocation (from an allocator
  // or another wrapper) or null, and only compare it or move it to the return otherwise.
  void FindAllocationWrappers();
  // Allocating functions (analyzer/allocation_wrappers.cc): defined functions, not wrappers,
  // whose every return gives memory allocated in the call (by `malloc`, `realloc`, ... or an
  // allocating function, called directly or through a pointer), or null, whatever else they
  // do with it (Lua's `luaC_newobj` links and writes it, `luaM_malloc_` calls its allocator
  // through a pointer). Each call of one is an object of its own; in the function, the
  // allocation stands for every call's object.
  void FindAllocatingFunctions();
  // After the objects are made: each allocating function's objects (clones_), and the memory
  // copies a reallocation makes, at the call that gives the object (AllocatingCopies).
  void ComputeClones();
  // Whether every function a call may reach is an allocating function.
  bool AllocatingCall(const llvm::CallBase& call) const;
  // What a reallocation copies from: `realloc`'s block, or what a call of allocating functions
  // passes where they copy a parameter's memory (non-null arguments only).
  std::vector<const llvm::Value*> CopiedBy(const llvm::CallBase& call) const;
  // Whether an allocation an allocating function returns copies `source` as one of that
  // function's parameters: the copy is then made at each of the function's calls instead.
  bool CopiesParameter(const llvm::CallBase& call, const llvm::Value* source) const;
  // The objects an allocation an allocating function returns stands for (its function's
  // clones); null for any other call.
  const std::vector<uint32_t>* ObjectsOfAllocation(const llvm::CallBase& call) const;
  // Whether `function` is such a wrapper, given those found so far: the allocations it
  // returns, whether all of them make zeroed memory, and their size.
  struct Wrapper;
  bool WrapsAllocations(const llvm::Function& function, Wrapper* wrapper) const;
  bool IsAllocation(const llvm::CallBase& call, bool* zeroed) const;
  // WrapperSite's test but for the object: the wrapper a call of allocation wrappers calls.
  const llvm::Function* WrapperCall(const llvm::CallBase& call, bool* zeroed) const;
  // The bytes a call of an allocation wrapper allocates, where its size is a product of its
  // parameters and a constant and the call passes constants for those: 0 otherwise.
  uint64_t WrapperCallBytes(const llvm::CallBase& call) const;
  // The same for a call of one allocating function.
  uint64_t AllocatingCallBytes(const llvm::CallBase& call) const;
  // The bytes one allocation allocates, as a product of its function's parameters (their
  // indexes, sorted) and a constant: a library allocator's size, or a wrapper's or allocating
  // function's size in the call's arguments. False where it is not such a product.
  bool AllocationSize(const llvm::CallBase& call, std::vector<unsigned>* parameters,
                      uint64_t* constant) const;
  // Whether every allocation has the same such size (then set), none of them unknown.
  bool SameSize(const std::vector<const llvm::CallBase*>& allocations,
                std::vector<unsigned>* parameters, uint64_t* constant) const;
  // A points-to constraint: dst = src (+ shift), dst = *src, *dst = src, or a memory copy
  // from what src points to into what dst points to. Ids are value ids.
  struct Constraint {
    enum class Kind { kCopy, kLoad, kStore, kCopyContents } kind;
    uint32_t dst = 0;
    uint32_t src = 0;
    int64_t shift = 0;
    bool unknown = false;  // kCopy: the offset becomes unknown
    uint64_t size = kToEnd;  // kLoad, kStore: the bytes accessed
    // kCopy: an inbounds getelementptr's, whose result outside the object is no pointer into
    // it (LLVM makes it poison).
    bool inbounds = false;
    // kCopy: a getelementptr's struct type, where it indexes into one: its result points into
    // no declared object that holds no such struct where the pointer does (MayHold).
    llvm::StructType* typed = nullptr;
    // A copy that passes every pointee on as it is.
    bool plain() const {
      return kind == Kind::kCopy && shift == 0 && !unknown && typed == nullptr;
    }
  };
  void SolvePointsTo();
  void Solve(const std::vector<Constraint>& constraints);
  // The pointee a pointer at this offset stands for: an offset inside an array is the array's
  // start, one outside every field of its object is unknown.
  Pointee Normalize(Pointee pointee) const;
  // A copy's shift for pointer arithmetic by a variable (IrModel::SolvePointsTo).
  static constexpr int64_t kVariableShift = INT64_MIN;
  void ComputeAccesses();
  void ComputeWrittenFirst(const llvm::Function& function);
  void ComputeArrayFills(const llvm::Function& function);
  void ComputeRecency();
  void ComputeEscapes();
  // ReachedObjects' sets, from what each object's contents may point to (`holds[object]`:
  // objects, sorted).
  void ComputeReach(const std::vector<std::vector<uint32_t>>& holds);
  // The parameter slots of a function (an alloca a pointer parameter is stored into once, on
  // entry, and only loaded from after), each with its parameter's index.
  absl::flat_hash_map<const llvm::Value*, unsigned> ParameterSlots(
      const llvm::Function& function) const;
  // The pointer parameter `pointer` is, at a constant offset past it (casts and constant
  // getelementptrs of the parameter or of a load of its slot): its index, or -1.
  int ParameterOf(const llvm::Value* pointer,
                  const absl::flat_hash_map<const llvm::Value*, unsigned>& slots,
                  uint64_t* offset) const;

  const PointsTo& PointsToOf(const llvm::Value* value) const;
  std::vector<uint32_t> LeavesOf(Pointee pointee, uint64_t size) const;
  // LeavesOf's leaves, appended to `out`.
  void AppendLeavesOf(Pointee pointee, uint64_t size, std::vector<uint32_t>* out) const;
  // The bytes an access of `size` through `pointer` may cover. One of unknown length
  // (kToEnd) through a pointer to a field or into an array (a getelementptr, as `r.line` and
  // `&r.inner` are) stays within that field or array, so that a library call given one field
  // touches that field only; through a pointer to a whole object it runs to the object's end.
  uint64_t Extent(const llvm::Value* pointer, uint64_t size) const;
  uint32_t ValueId(const llvm::Value* value);
  // The accesses of one instruction: (pointer, size) pairs it reads or writes through.
  void DirectAccesses(const llvm::Instruction& instruction,
                      std::vector<std::pair<const llvm::Value*, uint64_t>>* out) const;

  const llvm::Module& module_;
  const llvm::DataLayout& layout_;
  std::vector<MemoryObject> objects_;
  std::vector<Leaf> leaves_;
  std::vector<const llvm::Function*> functions_;
  absl::flat_hash_map<const llvm::Value*, uint32_t> object_of_site_;
  absl::flat_hash_map<const llvm::CallBase*, std::vector<const llvm::Function*>> callees_;
  absl::flat_hash_map<const llvm::Value*, uint32_t> value_ids_;
  std::vector<PointsTo> points_to_;        // by value id
  std::vector<PointsTo> contents_;         // by leaf: what pointers it may hold (unsorted)
  // Struct types debug info says are C unions but not named "union.X": linking modules gives a
  // union the type of an identical struct of another module, and its name.
  absl::flat_hash_set<const llvm::StructType*> linked_unions_;
  absl::flat_hash_map<const llvm::Function*, std::vector<uint32_t>> accessed_;
  std::vector<bool> escapes_;
  // Which locals each object leads to (ReachedObjects): the locals whose address memory may
  // hold, a bit each, and by object the set of them it leads to, itself included (sets are
  // shared; 0 is the empty one).
  std::vector<uint32_t> held_locals_;  // by bit: the local
  std::vector<uint32_t> held_bit_;     // by object: its bit, or ~0 where it is no such local
  std::vector<uint32_t> reach_of_;     // by object: its set in reach_sets_
  std::vector<std::vector<uint64_t>> reach_sets_;
  std::vector<uint64_t> reached_everywhere_;  // what globals and library objects lead to
  std::vector<const llvm::Function*> callees_first_;  // each function after what it calls
  absl::flat_hash_set<const llvm::Function*> recursive_;  // on a cycle of the call graph
  absl::flat_hash_map<const llvm::Function*, std::vector<ParameterWrite>> written_first_;
  // By instruction: the array leaves the run of writes it begins fills (ArrayFilledAt).
  absl::flat_hash_map<const llvm::Instruction*, std::vector<uint32_t>> array_fills_;
  // Loads of a recency variable where it holds its site's last object: the object.
  absl::flat_hash_map<const llvm::LoadInst*, uint32_t> recent_loads_;
  absl::flat_hash_set<uint32_t> recency_objects_;
  // By call to a defined function: its function's locals not escaped before it, sorted.
  absl::flat_hash_map<const llvm::CallBase*, std::vector<uint32_t>> unescaped_;
  struct Wrapper {
    std::vector<const llvm::CallBase*> allocations;  // the allocations it returns
    bool zeroed = false;
    // The bytes it allocates: size_constant times its parameters of these indexes (sorted),
    // where `sized`.
    bool sized = false;
    std::vector<unsigned> size_parameters;
    uint64_t size_constant = 1;
  };
  absl::flat_hash_map<const llvm::Function*, Wrapper> wrappers_;
  // The allocations wrappers return (a call of a wrapper among them is no site of its own).
  absl::flat_hash_set<const llvm::CallBase*> wrapped_allocations_;
  // Allocating functions, each with the allocations it returns and the parameters whose
  // memory a reallocation among them copies (`realloc(block, n)` of its parameter `block`).
  struct Allocating {
    std::vector<const llvm::CallBase*> allocations;
    std::vector<unsigned> copied_parameters;
    // The bytes it allocates, as a wrapper's (Wrapper), where `sized`.
    bool sized = false;
    std::vector<unsigned> size_parameters;
    uint64_t size_constant = 1;
  };
  absl::flat_hash_map<const llvm::Function*, Allocating> allocating_;
  // The allocations allocating functions return: they point to their function's objects.
  absl::flat_hash_map<const llvm::CallBase*, const llvm::Function*> returned_allocations_;
  // By allocating function: the objects of its calls, and of the calls of the allocating
  // functions that return its result (sorted).
  absl::flat_hash_map<const llvm::Function*, std::vector<uint32_t>> clones_;
  uint32_t indirect_calls_ = 0;
  uint32_t external_functions_ = 0;
  const absl::flat_hash_set<std::string>& summarized_;
  const absl::flat_hash_set<std::string> sources_;
  // An external C++ library call as the demangler reads it.
  struct CxxCall {
    bool sret = false;          // its first argument is its result's memory
    bool member = false;        // a constructor's or member's: its object comes next
    bool constructor = false;
    bool destructor = false;
    bool const_member = false;  // a member whose object is const
    std::vector<std::string> parameters;  // as demangled
    bool one_each = false;      // each argument after the object is one of `parameters`
    // The object's argument, or the first parameter's of a free function.
    unsigned object() const { return sret ? 1 : 0; }
  };
  // Null for a call of anything but a C++ function (a mangled name the demangler reads).
  // A member is told from a free function by its context, a class the module has a type of,
  // and its object, an argument more than its parameters.
  std::optional<CxxCall> CxxCallOf(const llvm::CallBase& call) const;
  // The classes the module has types of, without template arguments
  // ("std::__cxx11::basic_string" for %"class.std::__cxx11::basic_string"), for CxxOutputs.
  absl::flat_hash_set<std::string> class_names_;
};

}  // namespace sluice::analyzer

#endif  // SLUICE_ANALYZER_IR_MODEL_H_
