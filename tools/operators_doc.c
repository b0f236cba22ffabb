/* tools/operators_doc.c - prints docs/operators.md, the reference of every
   operator registered by depeng.h and depeng_nn.h, from the registry itself (names, docs,
   counts, parameters with types, defaults, ranges and choices, dtypes,
   gradients, devices, in place and mutated inputs). make docs writes the
   file with it; tests/operators_doc_check.sh fails when they differ. */
#include "depeng.h"
#include "depeng_nn.h"
#include <stdlib.h>
#include <string.h>

static const char *type_name(dp_param_type t) {
    switch (t) {
    case DP_PARAM_INT: return "int";
    case DP_PARAM_FLOAT: return "float";
    case DP_PARAM_BOOL: return "bool";
    case DP_PARAM_SHAPE: return "shape";
    case DP_PARAM_ENUM: return "enum";
    }
    return "?";
}
/* A count as the registry states it (-1, -2: from num_args). */
static void print_count(int n) {
    if (n == -1) printf("num_args");
    else if (n == -2) printf("num_args + 1");
    else printf("%d", n);
}
/* The bits of mask (below 32) as "0, 2, 3"; "none" when empty. */
static void print_bits(unsigned mask) {
    int i, first = 1;
    if (!mask) { printf("none"); return; }
    for (i = 0; i < 32; i++) if (mask & (1u << i)) { printf(first ? "%d" : ", %d", i); first = 0; }
}
/* Table cells must not break the row: '|' is escaped. */
static void print_cell(const char *s) {
    for (; s && *s; s++) { if (*s == '|') printf("\\|"); else putchar(*s); }
}
static void print_params(const dp_operator *op) {
    int i;
    if (!op->num_params) { printf("- parameters: none\n"); return; }
    printf("- parameters:\n\n| name | type | default | range / choices | meaning |\n|---|---|---|---|---|\n");
    for (i = 0; i < op->num_params; i++) {
        const dp_param_def *d = &op->params[i];
        printf("| `%s` | %s | ", d->name, type_name(d->type));
        if (d->default_value) { printf("`"); print_cell(d->default_value); printf("`"); } else printf("required");
        printf(" | ");
        if (d->type == DP_PARAM_ENUM) { print_cell(d->choices); }
        else if ((d->type == DP_PARAM_INT || d->type == DP_PARAM_FLOAT) && d->min < d->max) printf("[%g, %g]", d->min, d->max);
        else if (d->type == DP_PARAM_BOOL) printf("0, 1");
        printf(" | ");
        print_cell(d->doc);
        printf(" |\n");
    }
    printf("\n");
}
static void print_dtypes(unsigned mask) {
    int t, first = 1;
    if (!mask) { printf("any"); return; }
    for (t = 0; t < DP_DTYPE_COUNT; t++) if (mask & (1u << t)) { printf(first ? "%s" : ", %s", dp_dtype_name((dp_dtype)t)); first = 0; }
}
static void print_operator(const dp_operator *op) {
    printf("### `%s`\n\n", op->name);
    printf("%s", op->doc ? op->doc : "(no description)");
    printf("\n\n- inputs: "); print_count(op->num_inputs);
    printf("; outputs: "); print_count(op->num_outputs);
    printf("\n- input dtypes: "); print_dtypes(op->dtypes);
    printf("\n");
    print_params(op);
    if (op->takes_scalar) printf("- scalar: yes (`dp_invoke_desc.scalar`)\n");
    printf("- gradient: ");
    if (op->gradient) {
        printf("`%s`, reading", op->gradient);
        if (op->grad_needs & DP_GRAD_OUT_GRADS) printf(" the output gradients");
        if (op->grad_needs & DP_GRAD_INPUTS) printf("%s the inputs", op->grad_needs & DP_GRAD_OUT_GRADS ? "," : "");
        if (op->grad_needs & DP_GRAD_OUTPUTS) printf("%s the outputs", op->grad_needs & (DP_GRAD_OUT_GRADS | DP_GRAD_INPUTS) ? "," : "");
    } else printf("none");
    printf("\n- devices: %s%s%s\n", op->forward_cpu ? "CPU" : "", op->forward_cpu && op->forward_gpu ? ", " : "", op->forward_gpu ? "GPU" : "");
    printf("- in place (output 0 may share the storage of input): "); print_bits(op->inplace);
    if (op->mutate_inputs) { printf("\n- mutates inputs (updated in place; they must not share bytes with each other or an output): "); print_bits(op->mutate_inputs); }
    if (op->resources) printf("\n- resources: %s%s%s", op->resources & DP_RESOURCE_RANDOM ? "random" : "",
                              op->resources == (DP_RESOURCE_RANDOM | DP_RESOURCE_TEMP) ? ", " : "", op->resources & DP_RESOURCE_TEMP ? "temporary space" : "");
    printf("\n\n");
}

int main(void) {
    int n, i, pass;
    const dp_operator **ops;
    dp_nn_register();               /* depeng_nn.h's layers are in the reference too */
    n = dp_operator_list(NULL, 0);
    ops = (const dp_operator **)malloc(sizeof *ops * (size_t)(n > 0 ? n : 1));
    if (!ops) return 1;
    n = dp_operator_list(ops, n);
    printf("# Operator reference\n\n"
           "Generated from depeng's operator registry by `tools/operators_doc.c` (`make docs`);\n"
           "`make test` fails when this file differs from what the registry says. Every operator is\n"
           "run with `dp_invoke`; see \"invoking an operator\" in `depeng.h`\n"
           "for the parameter fields (`.i`, `.f`, `.s`, `.shape`) and the defaults' rules.\n\n"
           "- **input dtypes**: the dtypes input 0 may have (\"any\": every dtype of the array layer).\n"
           "- **devices**: the kernels of a build of `depeng.h` alone; `depeng_cuda.h`'s\n"
           "  `dp_cuda_register_kernels` adds the GPU kernels it lists (`dp_cuda_missing_kernels`\n"
           "  names the ones it lacks).\n"
           "- Operators whose name starts with `_` are used by autograd (gradients, copies); they are\n"
           "  listed after the others.\n\n"
           "## Overlapping arrays\n\n"
           "An operator reads every input as it was before it ran, as NumPy's `out=` does, whatever\n"
           "bytes its arrays share (the same array, or views of one storage, at any offset):\n\n"
           "- A given output that shares bytes with an input is computed into a temporary from the\n"
           "  engine's storage, copied over the output afterwards and freed. The exception is an\n"
           "  operator's **in place** list: output 0 exactly over one of those inputs (the same\n"
           "  bytes, dtype and shape) is written directly, since that kernel reads element i before it\n"
           "  writes element i. Any other overlap, a view shifted by one element included, goes\n"
           "  through the temporary.\n"
           "- An input the operator updates in place (**mutates inputs**: an optimizer's state) that\n"
           "  shares bytes with another input goes through a temporary the same way (copied in,\n"
           "  updated, copied back), exact aliases too: no operator declares its state's aliases safe.\n"
           "- Without overlap nothing is allocated.\n\n"
           "What an operator writes must not overlap itself. Refused with `DP_ERROR_INVALID_ARGS`,\n"
           "logged as `DP_LOGITEM_ND_OVERLAP` naming the operator and the two arrays:\n\n"
           "- two given outputs that share bytes;\n"
           "- an output over an input the operator updates (`sgd_mom_update`'s weight, updated by\n"
           "  passing it as the output too, cannot share bytes with its `mom`);\n"
           "- two inputs the operator updates that share bytes (`adam_update`'s mean and var as one\n"
           "  array, or overlapping views).\n\n"
           "%d operators.\n\n", n);
    for (pass = 0; pass < 2; pass++) {
        printf(pass ? "## Internal operators\n\n" : "## Operators\n\n");
        for (i = 0; i < n; i++) if ((ops[i]->name[0] == '_') == pass) print_operator(ops[i]);
    }
    free(ops);
    return ferror(stdout) ? 1 : 0;
}
