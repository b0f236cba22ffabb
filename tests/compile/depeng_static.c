/* Compile test: DEPENG_STATIC makes every function static, warning-free. */
#define DEPENG_STATIC
#define DEPENG_IMPLEMENTATION
#include "depeng.h"
#include "depeng_nn.h"
int main(void){return dp_result_string(DP_OK)[0]=='o'?0:1;}
