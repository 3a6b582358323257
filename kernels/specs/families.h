// What the catalog's kernel families share while they describe their kernels (kernels/specs/*.cc):
// the helpers that build thread rules and read a call's sizes, and each family's entry point.
// Private to kernels/: the catalog (kernels/catalog.cc) lists the families in a fixed order,
// which the catalog's fingerprint depends on.
#ifndef SLUICE_KERNELS_SPECS_FAMILIES_H_
#define SLUICE_KERNELS_SPECS_FAMILIES_H_

#include <cstdint>
#include <vector>

#include "sluice/kernels/catalog.h"

namespace sluice::specs {

inline constexpr uint64_t kU32Max = 0xffffffffu;
inline constexpr uint64_t kU64Max = ~uint64_t{0};

// Elements of `element_size` bytes in binding `binding` of `call`.
inline uint64_t Elements(const KernelCall& call, int binding, uint32_t element_size) {
  return call.binding_bytes[binding] / element_size;
}

// One thread per element (per `divisor` elements) of binding `binding`.
inline ThreadRule ElementsOf(int binding, bool overridable = true, uint32_t divisor = 1) {
  return ThreadRule{.kind = ThreadRule::Kind::kBindingElements,
                    .source = binding,
                    .divisor = divisor,
                    .overridable = overridable};
}

inline ThreadRule OneThread() { return ThreadRule{.kind = ThreadRule::Kind::kOne}; }

// Each family appends its kernels' specs to `k` (kernels/specs/<family>.cc).
void AddBasicKernels(std::vector<KernelSpec>* k);
void AddBfsKernels(std::vector<KernelSpec>* k);
void AddIfdsKernels(std::vector<KernelSpec>* k);

}  // namespace sluice::specs

#endif  // SLUICE_KERNELS_SPECS_FAMILIES_H_
