#include "count.h"
long count_lines(const char *s) { long n = 0; for (; *s; s++) if (*s == '\n') n++; return n; }
