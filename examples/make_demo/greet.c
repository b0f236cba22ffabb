#include <stdio.h>
#include "util.h"

void greet(const char *who) { printf("hello, %s\n", who); }
