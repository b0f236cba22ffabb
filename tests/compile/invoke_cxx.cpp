/* What C++ users write for dp_invoke (no compound literals, no designated
   initialisers before C++20): a value-initialised desc, fields assigned,
   parameters from the dp_param_* helpers. Compiled by make compile-checks
   as C++11 and C++17, -Wall -Wextra -pedantic -Werror. */
#include "depeng.h"
#include "depeng_nn.h"
dp_result invoke_sgd(dp_engine *eng, dp_ndarray *w, dp_ndarray *g);
dp_result invoke_sgd(dp_engine *eng, dp_ndarray *w, dp_ndarray *g) {
    dp_invoke_desc d = {};
    dp_shape axis = {1, {0}};
    dp_ndarray *s = nullptr;
    dp_result r;
    d.op = "sgd_update"; d.inputs[0] = w; d.inputs[1] = g; d.outputs[0] = w;
    d.params[0] = dp_param_float("lr", 0.1);
    d.params[1] = dp_param_str("wd", "1e-4");
    if ((r = dp_invoke(eng, &d, nullptr)) != DP_OK) return r;
    dp_invoke_desc m = {};
    m.op = "mean"; m.inputs[0] = w;
    m.params[0] = dp_param_shape("axis", &axis);
    m.params[1] = dp_param_bool("keepdims", true);
    if ((r = dp_invoke(eng, &m, &s)) == DP_OK) dp_nd_release(s);
    dp_optimizer_desc od = {};
    od.update = "adam_update"; od.params[0] = dp_param_float("lr", 1e-3);
    dp_optimizer *opt = nullptr;
    if ((r = dp_optimizer_create(w, &od, &opt)) == DP_OK) dp_optimizer_destroy(opt);
    return r;
}
