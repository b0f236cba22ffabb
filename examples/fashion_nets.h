/* examples/fashion_nets.h - the two networks examples/train_fashion.c
   trains on Fashion-MNIST, shared with bench/train.c, which times the same
   steps (so the benchmark runs exactly the example's networks).

     mlp    784 - 128 (relu) - 64 (relu) - 10 - SoftmaxOutput, built here as
            a symbol with MXNet's operator names
     lenet  MXNet's example LeNet, loaded from examples/lenet-symbol.json (an
            MXNet 1.x symbol file): conv 5x5x20 - tanh - maxpool 2 - conv
            5x5x50 - tanh - maxpool 2 - flatten - fc 500 - tanh - fc 10 -
            SoftmaxOutput

   For either network: its symbol (for the executor, and to list and infer
   the parameters), the shape of a batch of images, its forward pass as
   operator calls (for autograd) and a training step in either mode. Include it after depeng.h and
   depeng_nn.h. Every function returns NULL on failure, having said why on
   stderr (or in depeng's log line). */
#ifndef FASHION_NETS_H
#define FASHION_NETS_H
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { FASHION_SIDE = 28 };   /* the images are 28 x 28, one channel */

/* The MLP as a symbol, with the names MXNet's Module API gives it. */
static inline dp_symbol *fashion_mlp_symbol(void) {
    dp_symbol *data = NULL, *fc1 = NULL, *a1 = NULL, *fc2 = NULL, *a2 = NULL, *fc3 = NULL, *out = NULL;
    if (dp_sym_var("data", &data) != DP_OK) return NULL;
    /* NULL inputs become the variables fc1_weight, fc1_bias, ..., softmax_label */
    if (dp_sym_node(&(dp_sym_node_desc){ .op = "FullyConnected", .name = "fc1", .inputs = {data}, .params = {{"num_hidden", .s = "128"}} }, &fc1) != DP_OK
        || dp_sym_node(&(dp_sym_node_desc){ .op = "Activation", .name = "relu1", .inputs = {fc1}, .params = {{"act_type", .s = "relu"}} }, &a1) != DP_OK
        || dp_sym_node(&(dp_sym_node_desc){ .op = "FullyConnected", .name = "fc2", .inputs = {a1}, .params = {{"num_hidden", .s = "64"}} }, &fc2) != DP_OK
        || dp_sym_node(&(dp_sym_node_desc){ .op = "Activation", .name = "relu2", .inputs = {fc2}, .params = {{"act_type", .s = "relu"}} }, &a2) != DP_OK
        || dp_sym_node(&(dp_sym_node_desc){ .op = "FullyConnected", .name = "fc3", .inputs = {a2}, .params = {{"num_hidden", .s = "10"}} }, &fc3) != DP_OK
        || dp_sym_node(&(dp_sym_node_desc){ .op = "SoftmaxOutput", .name = "softmax", .inputs = {fc3} }, &out) != DP_OK)
        fprintf(stderr, "building the MLP symbol failed\n");
    dp_sym_release(data); dp_sym_release(fc1); dp_sym_release(a1); dp_sym_release(fc2); dp_sym_release(a2); dp_sym_release(fc3);
    return out;
}
/* LeNet from an MXNet symbol file (path: examples/lenet-symbol.json from
   the repository root). */
static inline dp_symbol *fashion_lenet_symbol(const char *path) {
    FILE *f = fopen(path, "rb");
    char *text;
    long size;
    dp_symbol *s = NULL;
    if (!f) { fprintf(stderr, "cannot open the LeNet symbol file %s (run from the repository root, or pass --symbol PATH)\n", path); return NULL; }
    if (fseek(f, 0, SEEK_END) != 0 || (size = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0 || !(text = (char *)malloc((size_t)size + 1))) {
        fprintf(stderr, "cannot read %s\n", path);
        fclose(f);
        return NULL;
    }
    if (fread(text, 1, (size_t)size, f) != (size_t)size) fprintf(stderr, "cannot read %s\n", path);
    else {
        text[size] = 0;
        if (dp_sym_load_json(text, &s) != DP_OK) fprintf(stderr, "%s is not a symbol file depeng can load (see the log line above)\n", path);
    }
    fclose(f);
    free(text);
    return s;
}
/* A batch of rows images: (rows, 1, 28, 28) for LeNet, (rows, 784) for the MLP. */
static inline dp_shape fashion_data_shape(int lenet, int64_t rows) {
    dp_shape s;
    memset(&s, 0, sizeof s);
    if (lenet) { s.ndim = 4; s.dims[0] = rows; s.dims[1] = 1; s.dims[2] = FASHION_SIDE; s.dims[3] = FASHION_SIDE; }
    else { s.ndim = 2; s.dims[0] = rows; s.dims[1] = FASHION_SIDE * FASHION_SIDE; }
    return s;
}

/* The network's parameters by name: the symbol's arguments (names, as
   dp_sym_list_arguments lists them) and their arrays (NULL for data and
   softmax_label). */
typedef struct fashion_params {
    int num_args;
    const char *const *names;
    dp_ndarray *const *arrays;
} fashion_params;
/* The forward pass's steps: each does nothing once one has failed (*ok 0). */
static inline dp_ndarray *fashion_param(const fashion_params *p, const char *name, int *ok) {
    int i;
    for (i = 0; i < p->num_args; i++) if (p->arrays[i] && !strcmp(p->names[i], name)) return p->arrays[i];
    if (*ok) fprintf(stderr, "the symbol has no argument %s\n", name);
    *ok = 0;
    return NULL;
}
static inline dp_ndarray *fashion_invoke(dp_engine *eng, const dp_invoke_desc *desc, int *ok) {
    dp_ndarray *out = NULL;
    if (*ok && dp_invoke(eng, desc, &out) != DP_OK) { fprintf(stderr, "%s failed\n", desc->op); *ok = 0; }
    return out;
}
/* The autograd mode's forward: the symbol's nodes as operator calls, with
   the symbol's parameters (MXNet's spellings, as strings), so the kernels
   and their order are the executor's. An Activation node of a symbol with
   act_type relu or tanh runs depeng's own relu / tanh operators (the
   symbol loader maps it so); dp_invoke("Activation") runs the same
   kernels, so the activations are invoked here by either name.
   Returns SoftmaxOutput's probabilities; intermediate arrays are released
   here (autograd keeps what the backward pass needs). */
static inline dp_ndarray *fashion_forward(dp_engine *e, const fashion_params *p, int lenet, dp_ndarray *x, dp_ndarray *y) {
    dp_ndarray *t[12], *out;
    int k = 0, i, ok = 1;
    if (lenet) {
        t[k] = fashion_invoke(e, &(dp_invoke_desc){ .op = "Convolution", .inputs = {x, fashion_param(p, "conv1_weight", &ok), fashion_param(p, "conv1_bias", &ok)},
                                                    .params = {{"kernel", .s = "(5, 5)"}, {"num_filter", .s = "20"}} }, &ok); k++;
        t[k] = fashion_invoke(e, &(dp_invoke_desc){ .op = "tanh", .inputs = {t[k - 1]} }, &ok); k++;
        t[k] = fashion_invoke(e, &(dp_invoke_desc){ .op = "Pooling", .inputs = {t[k - 1]},
                                                    .params = {{"kernel", .s = "(2, 2)"}, {"pool_type", .s = "max"}, {"stride", .s = "(2, 2)"}} }, &ok); k++;
        t[k] = fashion_invoke(e, &(dp_invoke_desc){ .op = "Convolution", .inputs = {t[k - 1], fashion_param(p, "conv2_weight", &ok), fashion_param(p, "conv2_bias", &ok)},
                                                    .params = {{"kernel", .s = "(5, 5)"}, {"num_filter", .s = "50"}} }, &ok); k++;
        t[k] = fashion_invoke(e, &(dp_invoke_desc){ .op = "tanh", .inputs = {t[k - 1]} }, &ok); k++;
        t[k] = fashion_invoke(e, &(dp_invoke_desc){ .op = "Pooling", .inputs = {t[k - 1]},
                                                    .params = {{"kernel", .s = "(2, 2)"}, {"pool_type", .s = "max"}, {"stride", .s = "(2, 2)"}} }, &ok); k++;
        t[k] = fashion_invoke(e, &(dp_invoke_desc){ .op = "Flatten", .inputs = {t[k - 1]} }, &ok); k++;
        t[k] = fashion_invoke(e, &(dp_invoke_desc){ .op = "FullyConnected", .inputs = {t[k - 1], fashion_param(p, "fc1_weight", &ok), fashion_param(p, "fc1_bias", &ok)},
                                                    .params = {{"num_hidden", .s = "500"}} }, &ok); k++;
        t[k] = fashion_invoke(e, &(dp_invoke_desc){ .op = "tanh", .inputs = {t[k - 1]} }, &ok); k++;
        t[k] = fashion_invoke(e, &(dp_invoke_desc){ .op = "FullyConnected", .inputs = {t[k - 1], fashion_param(p, "fc2_weight", &ok), fashion_param(p, "fc2_bias", &ok)},
                                                    .params = {{"num_hidden", .s = "10"}} }, &ok); k++;
    } else {
        t[k] = fashion_invoke(e, &(dp_invoke_desc){ .op = "FullyConnected", .inputs = {x, fashion_param(p, "fc1_weight", &ok), fashion_param(p, "fc1_bias", &ok)},
                                                    .params = {{"num_hidden", .s = "128"}} }, &ok); k++;
        t[k] = fashion_invoke(e, &(dp_invoke_desc){ .op = "relu", .inputs = {t[k - 1]} }, &ok); k++;
        t[k] = fashion_invoke(e, &(dp_invoke_desc){ .op = "FullyConnected", .inputs = {t[k - 1], fashion_param(p, "fc2_weight", &ok), fashion_param(p, "fc2_bias", &ok)},
                                                    .params = {{"num_hidden", .s = "64"}} }, &ok); k++;
        t[k] = fashion_invoke(e, &(dp_invoke_desc){ .op = "relu", .inputs = {t[k - 1]} }, &ok); k++;
        t[k] = fashion_invoke(e, &(dp_invoke_desc){ .op = "FullyConnected", .inputs = {t[k - 1], fashion_param(p, "fc3_weight", &ok), fashion_param(p, "fc3_bias", &ok)},
                                                    .params = {{"num_hidden", .s = "10"}} }, &ok); k++;
    }
    out = fashion_invoke(e, &(dp_invoke_desc){ .op = "SoftmaxOutput", .inputs = {t[k - 1], y} }, &ok);
    for (i = 0; i < k; i++) dp_nd_release(t[i]);
    return out;
}
/* One training step on a batch (x, y): forward, backward and the updates
   (opt[i]: parameter i's optimizer, or NULL). With an executor ex (bound
   to the batch arrays bx and by) the batch is copied into those and ex's
   forward and backward are pushed; without one (ex NULL) the forward runs
   while autograd records and dp_autograd_backward follows. Returns the
   probabilities (a new reference); nothing is waited for. */
static inline dp_ndarray *fashion_train_step(dp_engine *e, dp_executor *ex, dp_ndarray *bx, dp_ndarray *by, const fashion_params *p,
                                             dp_optimizer *const *opt, int lenet, dp_ndarray *x, dp_ndarray *y) {
    dp_ndarray *probs = NULL;
    int i;
    if (ex) {
        if (dp_invoke(e, &(dp_invoke_desc){ .op = "_copy", .inputs = {x}, .outputs = {bx} }, NULL) != DP_OK
            || dp_invoke(e, &(dp_invoke_desc){ .op = "_copy", .inputs = {y}, .outputs = {by} }, NULL) != DP_OK) { fprintf(stderr, "copying the batch failed\n"); return NULL; }
        if (dp_exec_forward(ex, 1) != DP_OK || dp_exec_backward(ex, 0, NULL) != DP_OK) { fprintf(stderr, "the executor's step failed\n"); return NULL; }
        probs = dp_nd_retain(dp_exec_output(ex, 0));
    } else {
        if (dp_autograd_begin() != DP_OK) { fprintf(stderr, "dp_autograd_begin failed\n"); return NULL; }
        probs = fashion_forward(e, p, lenet, x, y);
        if (dp_autograd_end() != DP_OK || !probs) { dp_nd_release(probs); fprintf(stderr, "the recorded forward pass failed\n"); return NULL; }
        /* SoftmaxOutput's gradient is p - onehot(label) whatever the head gradient */
        if (dp_autograd_backward(probs, NULL, 0) != DP_OK) { dp_nd_release(probs); fprintf(stderr, "dp_autograd_backward failed\n"); return NULL; }
    }
    for (i = 0; i < p->num_args; i++)
        if (opt[i] && dp_optimizer_step(opt[i]) != DP_OK) { dp_nd_release(probs); fprintf(stderr, "dp_optimizer_step failed\n"); return NULL; }
    return probs;
}
#endif
