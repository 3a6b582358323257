// Not built: a public client header that compiles the kernel catalog, for the layer check.
#include "sluice/kernels/catalog.h"
