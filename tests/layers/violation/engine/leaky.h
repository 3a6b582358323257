// Not built: an engine header that includes a kernel body (allowed here, but not under a
// public client header).
#include "kernels/bodies/body.h"
