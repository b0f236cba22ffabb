#include "shapes.h"
double tri(double b, double h) { return b * h / 2; }
