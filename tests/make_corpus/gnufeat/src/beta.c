#include <stdio.h>
#include "../common.h"
int main(void) { printf("%s %d\n", NAME, common_value() + 2); return 0; }
