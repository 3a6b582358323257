// Not built: an engine header that includes a kernel body (allowed here, but not under a
// public client header).
#include "sluice/kernels/bodies/body.h"
