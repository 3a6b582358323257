// A launch grid: logical threads per dimension. Its own header so that the dispatch interface
// can name it without compiling the kernel catalog or any kernel body.
#ifndef SLUICE_KERNELS_GRID_H_
#define SLUICE_KERNELS_GRID_H_

#include <array>
#include <cstdint>

namespace sluice {

// A launch grid in logical threads per dimension; a kernel body sees the linear index
// x + X * (y + Y * z). Total threads are capped at kMaxGridThreads.
using Grid = std::array<uint32_t, 3>;
inline constexpr uint64_t kMaxGridThreads = uint64_t{1} << 32;

}  // namespace sluice

#endif  // SLUICE_KERNELS_GRID_H_
