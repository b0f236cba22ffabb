#include "shapes.h"
double square(double s) { return s * s; }
