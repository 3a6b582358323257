// What a caller needs of the BFS step kernels: the layout of their `state` binding, and each
// kernel's id (name and behaviour version) and what it does. The bodies are in
// kernels/bodies/bfs.h, which only the launchers and the catalog's sources include.
#ifndef SLUICE_KERNELS_BFS_H_
#define SLUICE_KERNELS_BFS_H_

#include <cstdint>

#include "sluice/kernels/kernel_id.h"

namespace sluice::kernels {

// Layout of the u32 `state` binding shared by bfs_expand and bfs_advance.
struct BfsState {
  enum Slot : uint32_t { kFrontierCount, kNextCount, kLevel, kStatus, kSlots };
};

inline constexpr uint32_t kUnreachedLevel = 0xffffffffu;

// bfs_expand: thread t takes frontier node u = frontier[t] and, for each edge (u, v), claims v
// in the visited bitset; the claiming thread sets levels[v] = level + 1 and appends v to `next`.
// Node ids, row offsets and column indices are all checked; bad data raises the index flag,
// a full `next` raises the overflow flag.
inline constexpr KernelId kBfsExpandKernel{"bfs_expand", 2};

// bfs_advance: makes `next` the new frontier. Pass 1 copies next[t] to frontier[t]; pass 2
// (one thread) moves the counts, clears the next count and advances the level when the
// frontier is not empty.
inline constexpr KernelId kBfsAdvanceKernel{"bfs_advance", 2};

}  // namespace sluice::kernels

#endif  // SLUICE_KERNELS_BFS_H_
