#ifndef UTIL_H
#define UTIL_H
int add(int a, int b);
void greet(const char *who);
#endif
