/* Compile test: the engine alone (DEPENG_NO_NDARRAY), implementation
   included, as C11 and as C++; the array half must not be declared. */
#define DEPENG_NO_NDARRAY
#define DEPENG_IMPLEMENTATION
#include "depeng.h"
#ifndef DEPENG_IMPL_INCLUDED
#error "DEPENG_IMPLEMENTATION did not expand the implementation"
#endif
#ifdef DP_MAX_DIMS
#error "DEPENG_NO_NDARRAY still declares the array half"
#endif
int main(void) { return dp_result_string(DP_OK)[0] == 'o' ? 0 : 1; }
