#include <cstdio>
#include "helper.hpp"
int main() { std::printf("%d\n", helper(0)); return 0; }
