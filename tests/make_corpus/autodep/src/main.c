#include <stdio.h>
#include <stdlib.h>
#include "ops.h"
int main(int argc, char **argv) {
    long a = argc > 1 ? atol(argv[1]) : 1, b = argc > 2 ? atol(argv[2]) : 1;
    printf("%ld\n", add(mul(a, b), 0));
    return 0;
}
