#include "../common.h"
#ifndef COMMON
#error COMMON must be set by the target-specific variable
#endif
int common_value(void) { return 40 + COMMON; }
