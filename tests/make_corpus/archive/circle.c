#include "shapes.h"
double circle(double r) { return 3.14159 * r * r; }
