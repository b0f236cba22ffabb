/* tests/test_calls.h - the short forms the tests call depeng through: one
   line per invocation, symbol node, bind or inference, with the parameters
   as parallel arrays of names and values (strings). Each fills the API's
   desc and calls it, so the tests exercise the desc calls themselves; the
   short forms only keep hundreds of test lines readable. Include after
   depeng.h (and depeng_nn.h for the symbol, executor and store forms). */
#ifndef DEPENG_TEST_CALLS_H
#define DEPENG_TEST_CALLS_H
#include <string.h>

#ifndef DEPENG_NO_NDARRAY
/* dp_invoke with string parameters; outputs[i] NULL are made and returned
   there; scalar is given only to an operator that takes one; req NULL:
   DP_REQ_WRITE. */
static inline dp_result invoke_str(dp_engine *eng, const char *name, int nin, dp_ndarray *const *inputs, int nkw,
                                   const char *const *keys, const char *const *values, double scalar, int nout,
                                   dp_ndarray **outputs, const dp_req *req) {
    dp_invoke_desc d;
    dp_ndarray *made[DP_MAX_OP_ARRAYS];
    const dp_operator *op = name ? dp_operator_find(name) : NULL;
    dp_result r;
    int i;
    memset(&d, 0, sizeof d);
    d.op = name;
    if (nin < 0 || nin > DP_MAX_OP_ARRAYS || nout < 0 || nout > DP_MAX_OP_ARRAYS || nkw < 0 || nkw > DP_MAX_PARAMS)
        return DP_ERROR_INVALID_ARGS;
    d.num_inputs = nin;
    for (i = 0; i < nin && inputs; i++) d.inputs[i] = inputs[i];
    if (nin && !inputs) d.num_inputs = -1;                 /* refused by dp_invoke, as the old call refused it */
    for (i = 0; i < nkw; i++) { d.params[i].name = keys ? keys[i] : NULL; d.params[i].s = values ? values[i] : NULL; }
    if (op && op->takes_scalar) d.scalar = scalar;
    d.num_outputs = nout;
    /* a count the operator does not have is refused by dp_invoke; read no
       more outputs than the operator makes (the caller's array may hold no more) */
    for (i = 0; i < nout && outputs && !(op && op->num_outputs >= 0 && i >= op->num_outputs); i++) {
        d.outputs[i] = outputs[i];
        d.req[i] = req ? req[i] : DP_REQ_WRITE;
    }
    if (!outputs) return dp_invoke(eng, &d, NULL);
    r = dp_invoke(eng, &d, made);
    for (i = 0; r == DP_OK && i < nout; i++) if (!outputs[i]) outputs[i] = made[i];
    return r;
}
#endif
/* dp_var_state_get's answer (DP_VAR_INVALID when it fails). */
static inline dp_var_state var_state(dp_engine *eng, dp_var var) {
    dp_var_state st = DP_VAR_INVALID;
    (void)dp_var_state_get(eng, var, &st);
    return st;
}
#ifndef DEPENG_NO_NDARRAY
/* dp_operator_parse_params from parallel arrays of strings. */
static inline dp_result parse_params_str(dp_engine *eng, const dp_operator *op, int n, const char *const *keys,
                                         const char *const *values, dp_params *out) {
    dp_param list[DP_MAX_PARAMS + 1];
    int i;
    if (n < 0 || n > DP_MAX_PARAMS) return DP_ERROR_INVALID_ARGS;
    memset(list, 0, sizeof list);
    for (i = 0; i < n; i++) { list[i].name = keys[i]; list[i].s = values[i]; }
    return dp_operator_parse_params(eng, op, list, out);
}
#endif

#ifdef DEPENG_NN_H
/* dp_sym_node with its inputs counted and string parameters. */
static inline dp_result sym_op(const char *op, const char *name, int nin, dp_symbol *const *inputs, int nkw,
                               const char *const *keys, const char *const *values, dp_symbol **out) {
    dp_sym_node_desc d;
    int i;
    memset(&d, 0, sizeof d);
    if (nin < 0 || nin > DP_MAX_OP_ARRAYS || nkw < 0 || nkw > DP_MAX_PARAMS) { if (out) *out = NULL; return DP_ERROR_INVALID_ARGS; }
    d.op = op; d.name = name; d.num_inputs = nin;
    for (i = 0; i < nin && inputs; i++) d.inputs[i] = inputs[i];
    for (i = 0; i < nkw; i++) { d.params[i].name = keys[i]; d.params[i].s = values[i]; }
    return dp_sym_node(&d, out);
}
static inline dp_result sym_infer(const dp_symbol *s, int n, const char *const *names, const dp_shape *shapes, const dp_dtype *dtypes,
                                  dp_shape *arg_shapes, dp_dtype *arg_dtypes, dp_shape *out_shapes, dp_dtype *out_dtypes) {
    dp_sym_infer_desc d;
    memset(&d, 0, sizeof d);
    d.num_known = n; d.names = names; d.shapes = shapes; d.dtypes = dtypes;
    d.arg_shapes = arg_shapes; d.arg_dtypes = arg_dtypes; d.out_shapes = out_shapes; d.out_dtypes = out_dtypes;
    return dp_sym_infer(s, &d);
}
static inline dp_result exec_bind(dp_engine *eng, const dp_symbol *sym, dp_ctx ctx, int n, dp_ndarray *const *args,
                                  dp_ndarray *const *grads, const dp_req *grad_reqs, dp_executor **out) {
    dp_exec_desc d;
    memset(&d, 0, sizeof d);
    d.ctx = ctx; d.num_args = n; d.args = args; d.grads = grads; d.grad_reqs = grad_reqs;
    return dp_exec_bind(eng, sym, &d, out);
}
/* exec_bind with auxiliary states (dp_sym_list_auxiliary_states order) */
static inline dp_result exec_bind_aux(dp_engine *eng, const dp_symbol *sym, dp_ctx ctx, int n, dp_ndarray *const *args,
                                      dp_ndarray *const *grads, int naux, dp_ndarray *const *aux, dp_executor **out) {
    dp_exec_desc d;
    memset(&d, 0, sizeof d);
    d.ctx = ctx; d.num_args = n; d.args = args; d.grads = grads; d.num_aux = naux; d.aux = aux;
    return dp_exec_bind(eng, sym, &d, out);
}
static inline dp_result kv_set_optimizer(dp_kvstore *kv, const char *update, int n, const char *const *keys, const char *const *values) {
    dp_optimizer_desc d;
    int i;
    memset(&d, 0, sizeof d);
    if (n < 0 || n > DP_MAX_PARAMS) return DP_ERROR_INVALID_ARGS;
    d.update = update;
    for (i = 0; i < n; i++) { d.params[i].name = keys[i]; d.params[i].s = values[i]; }
    return dp_kv_set_optimizer(kv, &d);
}
#endif
#endif
