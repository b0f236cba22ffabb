/* Compile test: the whole header, implementation included, as C11 and as C++. */
#define DEPENG_IMPLEMENTATION
#include "depeng.h"
#include "depeng_nn.h"
#ifndef DEPENG_IMPL_INCLUDED
#error "DEPENG_IMPLEMENTATION did not expand the implementation"
#endif
int main(void) { return dp_result_string(DP_OK)[0] == 'o' ? 0 : 1; }
