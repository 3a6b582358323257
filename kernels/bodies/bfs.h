// Kernel bodies for one level-synchronous BFS step over a CSR graph, shaped so that a whole
// window of steps runs as a repeated sequence with no host work between iterations: the frontier
// size, the next-frontier size, the level and a status word live in a small device `state`
// buffer that the expansion reads (indirect thread count) and the advance rewrites.
#ifndef SLUICE_KERNELS_BODIES_BFS_H_
#define SLUICE_KERNELS_BODIES_BFS_H_

#include <cstdint>

#include "sluice/kernels/atomics.h"
#include "sluice/kernels/bfs.h"
#include "sluice/kernels/hd.h"
#include "sluice/kernels/kernel_args.h"

namespace sluice::kernels {

// The body of kBfsExpandKernel.
struct BfsExpand {
  enum Binding { kRowOffsets, kColumns, kVisited, kLevels, kFrontier, kNext, kState };
  SLUICE_HD static void Run(const KernelArgs& a, uint64_t t, uint64_t) {
    DeviceSpan<uint32_t> rows = a.As<uint32_t>(kRowOffsets);
    DeviceSpan<uint32_t> columns = a.As<uint32_t>(kColumns);
    DeviceSpan<uint32_t> visited = a.As<uint32_t>(kVisited);
    DeviceSpan<uint32_t> levels = a.As<uint32_t>(kLevels);
    DeviceSpan<uint32_t> frontier = a.As<uint32_t>(kFrontier);
    DeviceSpan<uint32_t> next = a.As<uint32_t>(kNext);
    DeviceSpan<uint32_t> state = a.As<uint32_t>(kState);
    uint32_t* status = &state[BfsState::kStatus];
    if (!frontier.Contains(t)) return;
    const uint64_t nodes = rows.size - 1;  // rows.size >= 1 is validated before launch
    const uint32_t u = frontier[t];
    if (u >= nodes) {
      atomics::FetchOr(status, kStatusIndexOutOfBounds);
      return;
    }
    const uint32_t begin = rows[u];
    const uint32_t end = rows[u + 1];
    if (begin > end || end > columns.size) {
      atomics::FetchOr(status, kStatusIndexOutOfBounds);
      return;
    }
    const uint32_t next_level = state[BfsState::kLevel] + 1;
    for (uint32_t e = begin; e < end; ++e) {
      if (a.Stopping(e - begin)) return;
      const uint32_t v = columns[e];
      if (v >= nodes || !visited.Contains(v / 32) || !levels.Contains(v)) {
        atomics::FetchOr(status, kStatusIndexOutOfBounds);
        continue;
      }
      const uint32_t bit = 1u << (v % 32);
      if (atomics::FetchOr(&visited[v / 32], bit) & bit) continue;
      levels[v] = next_level;
      const uint32_t slot = atomics::FetchAdd(&state[BfsState::kNextCount], 1u);
      if (next.Contains(slot)) {
        next[slot] = v;
      } else {
        atomics::FetchOr(status, kStatusCapacityOverflow);
      }
    }
  }
};

// The body of kBfsAdvanceKernel.
struct BfsAdvance {
  enum Binding { kFrontier, kNext, kState };
};

struct BfsAdvanceCopy {
  SLUICE_HD static void Run(const KernelArgs& a, uint64_t t, uint64_t) {
    DeviceSpan<uint32_t> frontier = a.As<uint32_t>(BfsAdvance::kFrontier);
    DeviceSpan<uint32_t> next = a.As<uint32_t>(BfsAdvance::kNext);
    if (frontier.Contains(t) && next.Contains(t)) frontier[t] = next[t];
  }
};

struct BfsAdvanceFinish {
  SLUICE_HD static void Run(const KernelArgs& a, uint64_t, uint64_t) {
    DeviceSpan<uint32_t> frontier = a.As<uint32_t>(BfsAdvance::kFrontier);
    DeviceSpan<uint32_t> next = a.As<uint32_t>(BfsAdvance::kNext);
    DeviceSpan<uint32_t> state = a.As<uint32_t>(BfsAdvance::kState);
    uint64_t moved = state[BfsState::kNextCount];
    if (moved > next.size) moved = next.size;
    if (moved > frontier.size) {
      moved = frontier.size;
      state[BfsState::kStatus] |= kStatusCapacityOverflow;
    }
    state[BfsState::kFrontierCount] = static_cast<uint32_t>(moved);
    state[BfsState::kNextCount] = 0;
    if (moved > 0) state[BfsState::kLevel] += 1;
  }
};

}  // namespace sluice::kernels

#endif  // SLUICE_KERNELS_BODIES_BFS_H_
