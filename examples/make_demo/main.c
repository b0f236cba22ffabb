#include <stdio.h>
#include "util.h"

int main(void) {
    greet("depeng");
    printf("2 + 3 = %d\n", add(2, 3));
    return 0;
}
