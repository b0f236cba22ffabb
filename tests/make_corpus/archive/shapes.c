#include <stdio.h>
#include "shapes.h"
int main(void) { printf("%g\n%g\n%g\n", square(2), circle(1), tri(3, 4)); return 0; }
