// Not built: a file that breaks the layers, so that the layer check is seen to fail on one.
#include "sluice/server/grpc/daemon.h"
