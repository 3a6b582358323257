// Every kernel body (kernels/bodies/*.h), for the launchers that run them: each builds its
// dispatch table from SLUICE_KERNEL_BODIES (kernels/body_list.h) over these types.
#ifndef SLUICE_KERNELS_BODIES_H_
#define SLUICE_KERNELS_BODIES_H_

#include "sluice/kernels/bodies/basic.h"
#include "sluice/kernels/bodies/bfs.h"
#include "sluice/kernels/bodies/ifds.h"
#include "sluice/kernels/body_list.h"

namespace sluice {

static_assert(kernels::ifds::kSegments == 8,
              "SLUICE_IFDS_PER_SEGMENT_ and the results passes list eight segments");

}  // namespace sluice

#endif  // SLUICE_KERNELS_BODIES_H_
