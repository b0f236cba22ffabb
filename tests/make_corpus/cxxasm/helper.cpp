#include "helper.hpp"
int helper(int x) { return x + answer(); }
