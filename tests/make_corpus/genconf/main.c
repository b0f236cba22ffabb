#include <stdio.h>
#include "version.h"
const char *version(void);
int main(void) { printf("app %s prefix %s config %d\n", version(), PREFIX, HAVE_CONFIG); return 0; }
