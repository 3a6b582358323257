// The kernel catalog: for each kernel a client may name, its version, its bindings (element
// size, access, minimum length), its scalar parameters, the passes it runs and how each pass's
// thread count follows from the bindings. Validation of a call against the catalog happens here,
// before anything is enqueued, so an invalid step never reaches a device.
#ifndef SLUICE_KERNELS_CATALOG_H_
#define SLUICE_KERNELS_CATALOG_H_

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "sluice/kernels/body_list.h"
#include "sluice/kernels/grid.h"
#include "sluice/kernels/kernel_args.h"

namespace sluice {

enum class Access { kRead, kWrite, kReadWrite };
std::string_view AccessName(Access access);

struct ParamSpec {
  std::string_view name;
  uint64_t max_value;  // larger values are InvalidArgument
  std::string_view doc;
  uint64_t min_value = 0;  // smaller values are InvalidArgument
};

struct KernelCall;
struct BindingSpec;

// A lower bound on a binding's element count that follows from the call:
//   multiply * ceil((add + the named parameters' values + the named bindings' element counts
//                    + each product's value) / divide)
// elements, where a product's value is the product of its parameters' values, and a total
// below zero counts as zero; every step saturates at 2^64 - 1. Published in GetInfo (the same
// fields, SizeRule in sluice.proto), so that a client in any language can size its buffers;
// the catalog validates calls with these same rules and no hidden others.
struct SizeRule {
  std::vector<int> params;    // parameters whose values are summed
  std::vector<int> bindings;  // bindings whose element counts are summed
  int64_t add = 0;
  uint64_t divide = 1;
  uint64_t multiply = 1;
  std::vector<std::vector<int>> products = {};  // each: parameters whose values multiply

  // The bound for `call` against `specs` (the kernel's bindings), saturating at 2^64 - 1.
  uint64_t MinElements(const KernelCall& call, absl::Span<const BindingSpec> specs) const;
  // The rule in words, naming parameters and bindings ("src_offset + count").
  std::string Describe(absl::Span<const BindingSpec> specs,
                       absl::Span<const ParamSpec> params) const;
};

struct BindingSpec {
  std::string_view name;
  uint32_t element_size;  // bytes per element; a buffer holds its bytes / element_size
                          // elements (rounded down: trailing bytes are not an element)
  Access access;
  uint64_t min_elements;  // fewer whole elements than this is InvalidArgument
  std::string_view doc;
  // Bounds that depend on the call; each must hold too (InvalidArgument otherwise).
  std::vector<SizeRule> size_rules = {};
};

// How a pass's thread count follows from the call.
struct ThreadRule {
  enum class Kind {
    kOne,              // a single thread
    kBindingElements,  // whole elements of binding `source`
    kParam,            // the value of parameter `source`
    kCountInBinding,   // the u32 at element `count_index` of binding `source`, read on the
                       // device when the pass starts; capped at elements of `cap_binding`
  };
  Kind kind;
  int source = 0;
  uint32_t count_index = 0;
  uint32_t divisor = 1;  // threads = ceil(base / divisor)
  int cap_binding = -1;
  bool overridable = false;  // a grid override replaces this pass's count
  int base_index = -1;       // kCountInBinding: threads = source[count_index] - source[base_index]
};

struct PassSpec {
  BodyId body;
  ThreadRule threads;
  // About how much work one thread index does, relative to a plain element-wise pass: the CPU
  // launcher hands out proportionally fewer indexes per task, so that a pass of a few thousand
  // heavy threads (a join walking chains) still spreads over every core.
  uint32_t cost = 1;
};

// What the catalog knows of a call, before any device memory is touched.
struct KernelCall {
  absl::Span<const uint64_t> binding_bytes;
  absl::Span<const uint64_t> params;
  // Which buffer each binding is (equal ids: one buffer bound twice), when known; empty skips
  // the aliasing checks.
  absl::Span<const uint64_t> binding_ids = {};
};

struct KernelSpec {
  std::string_view name;
  uint32_t version;
  std::string_view summary;
  std::vector<BindingSpec> bindings;
  std::vector<ParamSpec> params;
  std::vector<PassSpec> passes;
  std::string_view default_grid;  // the default grid in words, for catalog listings
  // Checks beyond the generic ones (cross-binding sizes, parameter ranges); may be null.
  absl::Status (*validate)(const KernelCall& call) = nullptr;
  // Pairs of bindings that may be one buffer although one of them is written (scan in place,
  // a copy between disjoint ranges of one buffer). Any other buffer bound twice where either
  // binding is written is InvalidArgument: the passes would read what they are overwriting.
  std::vector<std::pair<int, int>> may_alias = {};
  // A loop guard runs no passes: as the first step of a repeated group it ends the repetition
  // before any iteration that starts with the u32 at element params[0] of binding 0 equal to
  // zero. The device reads the word itself (on a GPU, without the host). Anywhere else it is
  // InvalidArgument.
  bool loop_guard = false;
};

// One pass ready to launch: which body, how many threads, and about how much work each thread
// does (a blocked pass's block size, times its PassSpec::cost; 1 for a plain element-wise
// pass).
struct PassLaunch {
  BodyId body;
  ThreadCount threads;
  uint32_t work_per_thread = 1;
};

class KernelCatalog {
 public:
  // The catalog of every built-in kernel. Immutable; thread-safe.
  static const KernelCatalog& Builtin();

  // Returns the kernel named `name`, or NotFound.
  absl::StatusOr<const KernelSpec*> Find(std::string_view name) const;

  const std::vector<KernelSpec>& kernels() const { return kernels_; }

  // A short stable digest of every kernel's name and version; changes whenever a kernel's
  // behaviour does. Part of backend_version().
  const std::string& fingerprint() const { return fingerprint_; }

  // Checks a call against `spec`: binding and parameter counts, binding sizes, parameter
  // limits, indirect-count positions, buffers bound twice, the grid override and the kernel's
  // own checks.
  // Returns InvalidArgument naming the kernel and the offending binding or parameter.
  static absl::Status Validate(const KernelSpec& spec, const KernelCall& call,
                               const std::optional<Grid>& grid);

  // The passes of a validated call, with thread counts resolved as far as the host can
  // (indirect counts are resolved by the launcher when the pass starts).
  static std::vector<PassLaunch> Plan(const KernelSpec& spec, const KernelCall& call,
                                      const std::optional<Grid>& grid);

 private:
  explicit KernelCatalog(std::vector<KernelSpec> kernels);

  std::vector<KernelSpec> kernels_;
  std::string fingerprint_;
};

}  // namespace sluice

#endif  // SLUICE_KERNELS_CATALOG_H_
