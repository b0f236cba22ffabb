#include "version.h"
const char *version(void) { return VERSION; }
