// Not built: the public header that reaches a kernel body through the engine, for the layer
// check (client/local_dispatch may include the engine; nothing it includes may reach bodies).
#include "sluice/engine/leaky.h"
