// A catalog kernel as a caller names it: its name and the version of its behaviour. Each
// kernel's id is a constant next to its body (kernels/bodies/*.h); a caller that names a kernel
// by its id gets the kernel it was written for or a FailedPrecondition naming the kernel, never
// another behaviour under the same name. The loop guard, which runs no body and which the
// dispatch interface itself names, has its id here.
#ifndef SLUICE_KERNELS_KERNEL_ID_H_
#define SLUICE_KERNELS_KERNEL_ID_H_

#include <cstdint>
#include <string_view>

namespace sluice {

struct KernelId {
  std::string_view name;
  uint32_t version = 0;  // bumped whenever the kernel's behaviour changes
};

// The loop guard: as the first step of a repeated group, the repetition ends before an
// iteration that starts with the u32 at element `index` (its one parameter) of its one binding
// equal to zero.
inline constexpr KernelId kLoopGuardKernelId{"repeat_while_u32", 1};

}  // namespace sluice

#endif  // SLUICE_KERNELS_KERNEL_ID_H_
