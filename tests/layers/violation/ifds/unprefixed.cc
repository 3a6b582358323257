// Breaks the prefix rule: names a header of the tree without "sluice/".
#include "base/status_macros.h"
