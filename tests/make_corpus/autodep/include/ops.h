#ifndef OPS_H
#define OPS_H
long mul(long a, long b);
long add(long a, long b);
#endif
