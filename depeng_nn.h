/* depeng_nn.h - training networks on depeng: autograd, optimizers, the
   network layers, data iterators, symbols and the executor, the local
   KVStore (MXNet's front end) - built on depeng.h's public API.
   version 0.2.0 - MIT license (full text at the end of depeng.h)

   In exactly one C or C++ file, the same one that implements depeng.h:
       #define DEPENG_IMPLEMENTATION
       #include "depeng.h"
       #include "depeng_nn.h"
   Other files include depeng_nn.h for the declarations (it includes
   depeng.h). Link as for depeng.h (-pthread -lm). Defining
   DEPENG_NN_IMPLEMENTATION instead compiles this header's implementation
   alone, against a depeng.h implemented in another file: it needs nothing
   of depeng.h but its public API (the EXTENDING section names the calls
   made for libraries like this one), which a test checks by compiling it
   so.

   CONTENTS
     1. What it holds, what it needs
     2. Operators it registers
     3. API (declarations): OPTIMIZERS, AUTOGRAD, SYMBOL, EXECUTOR, DATA
        (the mini-batch iterator, idx files, the image iterator),
        CHECKPOINTS (.params files), INITIALISERS, SCHEDULES AND CLIPPING,
        KVSTORE, and dp_nn_register
     4. Implementation, its sections in file order: >>nn prelude
        >>registration >>data >>image data >>checkpoints
        >>layers >>conv layers >>tensor layers >>optimizer objects >>more optimizers
        >>autograd >>symbol >>graph passes >>symbol JSON and DOT >>initialisers
        >>memory planning
        >>executor >>kvstore

   1. WHAT IT HOLDS, WHAT IT NEEDS
     depeng.h is the engine and the array layer: variables, operations,
     thread pools, arrays, files, the operator registry and the array
     operators (element-wise, reductions, softmax, dot, the optimizer
     updates...). This header adds what training a network needs on top,
     and knows depeng.h only through its public API; nothing in depeng.h
     knows this header. It needs the array half (not DEPENG_NO_NDARRAY).
     depeng_mpi.h builds on it.

   2. OPERATORS IT REGISTERS
     FullyConnected and SoftmaxOutput, and the layers of a convolutional
     network with MXNet's names, parameters and semantics: Convolution and
     Deconvolution (1-D and 2-D, NCW / NCHW; stride, pad, dilate,
     num_group, no_bias; Deconvolution's adj and target_shape), Pooling
     (max, avg, sum; global_pool; pooling_convention valid or full;
     count_include_pad), Activation (relu, sigmoid, tanh, softrelu,
     softsign), LeakyReLU (leaky, elu, selu, gelu, prelu), Flatten,
     Embedding, MakeLoss, the regression outputs (linear, logistic, MAE),
     BlockGrad, expand_dims, slice_axis, broadcast_to, where, batch_dot,
     stack and SliceChannel, each with its gradient operator
     (_backward_<name>); docs/operators.md lists their parameters. A layer whose bias (or prelu's gamma) is optional
     counts its inputs by num_args, as the registry does: 2 with no_bias
     (a symbol node and MXNet's symbol JSON set it from no_bias or
     act_type). Convolution and Deconvolution have two implementations,
     chosen by their algo parameter: im2col + GEMM (dp_gemm_on; columns
     in the temporary space, dp_temp_space, MXNet's kTempSpace: a block
     of images' columns per chunk of up to 16 chunks of the batch for the
     output and the data gradient, one GEMM per block of 512 or more
     output columns, blocks of images of up to 2^20 elements for the
     weight gradient; none for a 1x1, stride 1, unpadded convolution's
     output and data gradient) or direct loops; algo auto takes im2col
     unless a GEMM column would be shorter than 8 elements (not for 1x1)
     or the temporary space the call asks for would take more than the
     workspace parameter's MiB. These layers, Pooling,
     Activation and BatchNorm split large work over the engine's range
     loop, in chunks fixed by the shape: bitwise the same results at any
     worker count (depeng.h, "How ops and ranges share the workers"). So are the optimizer updates
     rmsprop_update, rmspropalex_update, adagrad_update, nag_mom_update and
     adamw_update (see SCHEDULES AND CLIPPING). They are all registered
     through dp_operator_register like any user operator,
     once per process, before main starts (as MXNet registers its
     operators by static initialisation: a constructor with GCC, Clang and
     MSVC, a dynamic initialiser in other C++), so dp_invoke finds them by
     name from the start. Registering also installs autograd as depeng.h's
     tracker (dp_set_tracker), which records invocations while a thread
     records. With a compiler that has none of those, the entry points
     below register on their first call (dp_nn_register): call it first
     there to invoke the layers by name. depeng_cuda.h's
     dp_cuda_register_kernels gives them GPU kernels.
*/
#ifndef DEPENG_NN_H
#define DEPENG_NN_H
#include "depeng.h"
#ifdef DEPENG_NO_NDARRAY
#error "depeng_nn.h needs depeng.h's array half: DEPENG_NO_NDARRAY leaves it out"
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ====================================================================== 3. API
   At a glance:
     registry dp_nn_register
     training dp_optimizer_create dp_optimizer_step dp_optimizer_set_param
              dp_optimizer_steps dp_optimizer_state dp_optimizer_destroy
     autograd dp_autograd_begin dp_autograd_end dp_autograd_is_recording
              dp_autograd_set_training dp_autograd_is_training
              dp_nd_attach_grad dp_nd_grad dp_nd_detach dp_autograd_backward
     symbol   dp_sym_var dp_sym_node dp_sym_output dp_sym_group dp_sym_retain dp_sym_release
              dp_sym_num_outputs dp_sym_name dp_sym_list_arguments dp_sym_list_auxiliary_states
              dp_sym_infer
              dp_sym_save_json dp_sym_load_json dp_sym_save dp_sym_load dp_sym_write_dot
     executor dp_exec_bind dp_exec_rebind dp_exec_forward dp_exec_backward dp_exec_num_outputs
              dp_exec_output dp_exec_head_grad dp_exec_memory_get dp_exec_destroy
     data     dp_iter_create dp_iter_next dp_iter_reset dp_iter_num_batches dp_iter_destroy
              dp_nd_load_idx dp_nd_load_mnist dp_image_iter_create dp_image_iter_next
              dp_image_iter_reset dp_image_iter_num_batches dp_image_iter_destroy
     checkpoint dp_nd_save_params dp_nd_load_params dp_checkpoint_save dp_checkpoint_load
              dp_checkpoint_free
     init     dp_init_parse dp_init_array dp_init_params dp_sym_var_attr
     schedules dp_lr_check dp_lr_at dp_clip_global_norm
     kvstore  dp_kv_create dp_kv_destroy dp_kv_init dp_kv_set_updater dp_kv_set_optimizer
              dp_kv_push dp_kv_pull dp_kv_stored */

/* Registers this header's operators and installs autograd's tracker, once
   per process (later calls return at once). Any thread; the entry points
   below call it themselves. */
DP_API void dp_nn_register(void);

/* ====================================================================== OPTIMIZERS
   Optimizer objects (MXNet's Optimizer with its Updater): each owns one
   weight's update through one of depeng.h's update operators (sgd_update,
   sgd_mom_update, adam_update) or this header's (rmsprop_update,
   rmspropalex_update, adagrad_update, nag_mom_update, adamw_update; see
   SCHEDULES AND CLIPPING, with the learning-rate schedules).
   An optimizer object owns one weight's update: dp_optimizer_create attaches
   the weight's gradient (dp_nd_attach_grad, DP_REQ_WRITE, starting over if it
   was marked) and makes the update's state arrays, zeros of the weight's
   shape, dtype and device: none for sgd_update, the momentum for
   sgd_mom_update, the mean and variance for adam_update (any registered
   operator with inputs (weight, gradient, the states it mutates) and one
   output works). dp_optimizer_step pushes the update of the weight with its
   gradient as it is after the backward pass, in place, and counts the step;
   an update with an INT parameter t (adam_update) gets the step number, so
   the bias correction needs nothing from the caller.
       dp_optimizer *opt;
       dp_optimizer_create(w, &(dp_optimizer_desc){ .update = "adam_update",
           .params = {{"lr", .f = 1e-3}} }, &opt);
       ... forward, dp_autograd_backward(loss, NULL, 0);
       dp_optimizer_step(opt);
       dp_optimizer_destroy(opt);
   Errors (logged, DP_ERROR_INVALID_ARGS unless said): NULL arguments, an
   unknown operator or one that is not an update, parameters as dp_invoke
   checks them (and t given, which the optimizer counts), a weight that is
   not float32 / float64, DP_ERROR_OUT_OF_MEMORY; step: the update's errors
   (nothing pushed, the step not counted).
   Thread safety: an optimizer is used by one thread at a time; different
   optimizers from any threads. Destroy it before the weight's engine. */
typedef struct dp_optimizer_desc {
    const char *update;                  /* the update operator; NULL: "sgd_update" */
    dp_param params[DP_MAX_PARAMS];      /* its parameters (lr is required), as dp_invoke's */
} dp_optimizer_desc;
typedef struct dp_optimizer dp_optimizer;
DP_API dp_result dp_optimizer_create(dp_ndarray *weight, const dp_optimizer_desc *desc, dp_optimizer **out);
DP_API dp_result dp_optimizer_step(dp_optimizer *opt);
/* Changes one parameter for the next steps (a learning-rate schedule:
   dp_param_float("lr", lr)); on error the parameters stay as they were.
   The optimizer's thread (one at a time per optimizer). */
DP_API dp_result dp_optimizer_set_param(dp_optimizer *opt, const dp_param *param);
/* Steps pushed so far. The optimizer's thread. */
DP_API int64_t dp_optimizer_steps(const dp_optimizer *opt);
/* State array i (0: momentum, or Adam's mean; 1: Adam's variance), borrowed;
   NULL past the last. The optimizer's thread. */
DP_API dp_ndarray *dp_optimizer_state(const dp_optimizer *opt, int i);
/* Releases the optimizer's references (the weight keeps its gradient). NULL
   is fine. The optimizer's thread. */
DP_API void dp_optimizer_destroy(dp_optimizer *opt);

/* ====================================================================== AUTOGRAD
   MXNet's autograd. Mark the arrays to differentiate by with
   dp_nd_attach_grad, run the forward pass between dp_autograd_begin and
   dp_autograd_end (each invocation of a registered operator with a marked
   or recorded input is recorded), then dp_autograd_backward(loss) pushes
   each recorded operator's gradient operator through the engine, in
   reverse, and the gradients land in dp_nd_grad(marked array).
   What is kept: a recorded operation holds only what its gradient
   operator declares it reads (grad_needs: the inputs, the outputs) as
   views of their storage, and its producers; the rest is released when
   the caller releases it. A backward without retain_graph releases each
   operation's saved arrays as soon as its gradient is pushed.
   In place: a gradient operator whose registration allows it (inplace bit
   j on input j, an output gradient) writes its result over that output
   gradient when nothing else needs it, instead of a new array.
   Rules: recording is per thread and nests. Views made by dp_nd_reshape
   and dp_nd_slice are not recorded (use the reshape operator to keep the
   gradient flowing). An array saved for a gradient must not be written
   (dp_nd_write, an output or a mutated input of an invocation) before the
   backward: backward reports that instead of reading the new values.
   Build a graph from one thread; backward passes (from any thread) run one
   at a time, so graphs may share marked arrays. */
/* Starts / ends recording on this thread; they nest. dp_autograd_end
   without a begin is DP_ERROR_INVALID_ARGS. */
DP_API dp_result dp_autograd_begin(void);
DP_API dp_result dp_autograd_end(void);
DP_API int dp_autograd_is_recording(void);
/* Training mode, MXNet's is_training (autograd.train_mode / predict_mode):
   what operators with an "is_train" parameter (BatchNorm, Dropout) get
   when an invocation does not give it. By default a thread is training
   while it records and not otherwise; dp_autograd_set_training(1) forces
   training, 0 inference, -1 back to the default; it returns the previous
   setting (-1, 0 or 1). Per thread; any thread, for itself. */
DP_API int dp_autograd_set_training(int mode);
DP_API int dp_autograd_is_training(void);
/* Marks a (float32 or float64) for gradients: a zero gradient array of its
   shape is made, which backward overwrites (DP_REQ_WRITE) or adds to
   (DP_REQ_ADD). DP_REQ_NULL removes the mark. Marking again starts over
   with a new zero gradient, and cuts a from the graph that made it. Out
   of memory: DP_ERROR_OUT_OF_MEMORY (logged), a keeps its earlier mark.
   The thread that builds the graph. */
DP_API dp_result dp_nd_attach_grad(dp_ndarray *a, dp_req req);
/* a's gradient array (a borrowed reference: dp_nd_retain to keep it past
   a's release), or NULL if a is not marked. Any thread. */
DP_API dp_ndarray *dp_nd_grad(const dp_ndarray *a);
/* A view of a's storage outside any graph: gradients stop there. Any
   thread. */
DP_API dp_result dp_nd_detach(dp_ndarray *a, dp_ndarray **out);
/* Pushes the gradients of head with respect to every marked array it
   depends on. head_grad is d(objective)/d(head), of head's shape and dtype;
   NULL means ones (head is usually a scalar loss). A marked head gets
   head_grad as its gradient. retain_graph non-zero keeps the graph for
   another backward. Errors (nothing is pushed then): head neither marked
   nor made by a recorded invocation, no marked array reached, an
   operator on the path without a gradient, a head_grad of another shape,
   a saved array written since, a graph freed by an earlier backward. A
   failing gradient kernel reaches the gradient arrays like any failure.
   Out of memory (DP_ERROR_OUT_OF_MEMORY, logged) can come after some
   gradient operators were pushed; the graph is kept whole, as after any
   error, so the same backward can run again once memory is free: it
   rewrites the gradients of arrays marked DP_REQ_WRITE, while those marked
   DP_REQ_ADD may hold part of the failed pass's sum. Any thread; passes
   run one at a time. */
DP_API dp_result dp_autograd_backward(dp_ndarray *head, dp_ndarray *head_grad, int retain_graph);

/* ====================================================================== SYMBOL
   MXNet's symbolic front end: a graph is built once from named variables
   and operator nodes (the same registered operators dp_invoke runs),
   then bound to arrays by an executor that runs it many times. A symbol is
   a list of outputs of such a graph; symbols share nodes and are
   immutable, reference counted, and not tied to an engine (their errors go
   to the default logger, stderr). Any thread may use a symbol; releasing
   the last reference must not race with other use of that symbol. */
typedef struct dp_symbol dp_symbol;
/* A variable (an input or a parameter), bound to an array later. Errors:
   DP_ERROR_INVALID_ARGS (no name, out NULL), DP_ERROR_OUT_OF_MEMORY. */
DP_API dp_result dp_sym_var(const char *name, dp_symbol **out);
/* A node applying an operator: desc->op is a registered name, or MXNet's
   name for the same operation (Activation with act_type, Flatten, Concat,
   elemwise_add, _plus_scalar, ...); desc->name names the node (NULL: the
   operator's name in lower case and a number). desc->inputs are
   single-output symbols, one per operator input (num_inputs 0: as many as
   the operator takes, or for one of a variable count those before the
   first NULL); a NULL input becomes a new variable "<name>_<input>"
   (FullyConnected's, Convolution's and Deconvolution's weight and bias, a
   loss's label, LeakyReLU prelu's gamma, else "<name>_argN"). MXNet's
   Convolution, Deconvolution, FullyConnected and LeakyReLU take no num_args: it is set
   from no_bias (act_type prelu); their cuDNN keys (cudnn_tune,
   cudnn_off), Pooling's p_value and the layouts NCW and NCHW (depeng's
   only) are accepted and dropped, another layout refused.
   Keyword parameters as dp_invoke's dp_param list: a string in .s (kept
   as given, as MXNet's attrs are), or a typed value, written into the
   symbol's JSON as text; "scalar" gives a _scalar operator its scalar. The
   symbol has the operator's outputs. Errors (logged, naming the node):
   DP_ERROR_INVALID_ARGS for an unknown operator, a bad parameter, a wrong
   input count or a multi-output input; DP_ERROR_OUT_OF_MEMORY. Any thread. */
typedef struct dp_sym_node_desc {
    const char *op;
    const char *name;
    dp_symbol *inputs[DP_MAX_OP_ARRAYS];
    int num_inputs;
    dp_param params[DP_MAX_PARAMS];
} dp_sym_node_desc;
DP_API dp_result dp_sym_node(const dp_sym_node_desc *desc, dp_symbol **out);
/* Output index of s as a symbol of its own; several symbols as one with
   all their outputs (MXNet's Group). Errors: DP_ERROR_INVALID_ARGS,
   DP_ERROR_OUT_OF_MEMORY. Any thread. */
DP_API dp_result dp_sym_output(const dp_symbol *s, int index, dp_symbol **out);
DP_API dp_result dp_sym_group(int num, dp_symbol *const *syms, dp_symbol **out);
/* One more reference (returns s); one less (NULL is fine; the last must not
   race with other use of s); the outputs' count. Any thread. */
DP_API dp_symbol *dp_sym_retain(dp_symbol *s);
DP_API void dp_sym_release(dp_symbol *s);
DP_API int dp_sym_num_outputs(const dp_symbol *s);
/* The name of a single-output symbol's node; NULL for a group. Valid while
   s is. Any thread. */
DP_API const char *dp_sym_name(const dp_symbol *s);
/* The arguments of s (its variables but the auxiliary states) in MXNet's
   order (a depth-first walk from the outputs, inputs in order): up to cap
   names (valid while s is) into names (may be NULL). Returns how many
   there are, -1 on error. Executors take their arguments in this order.
   Any thread. */
DP_API int dp_sym_list_arguments(const dp_symbol *s, const char **names, int cap);
/* The auxiliary states of s, MXNet's list_auxiliary_states, in the same
   walk's order, as dp_sym_list_arguments: the variables that an operator
   updates in place (an input in its mutate_inputs, as MXNet's
   FMutateInputs: BatchNorm's moving_mean and moving_var). They are bound
   apart from the arguments (dp_exec_desc.aux), written only by a training
   forward, never get a gradient, and are saved as "aux:NAME" in a
   checkpoint. Any thread. */
DP_API int dp_sym_list_auxiliary_states(const dp_symbol *s, const char **names, int cap);
/* Shape and dtype inference over the whole graph from the shapes (and
   dtypes; NULL: float32) of the named arguments given: forward through
   each operator's inference, and backward where an operator can tell an
   input from what is known (FullyConnected's weight and bias from the data
   and num_hidden, a loss's label from the data, an element-wise operand
   from the other). Fills the shapes and dtypes of every argument (in
   dp_sym_list_arguments order), auxiliary state (in
   dp_sym_list_auxiliary_states order) and output, where those pointers
   are not NULL. A known name may be an argument or an auxiliary state.
   Errors (logged, naming the node and the shapes that disagree, or the
   variable whose shape cannot be told): DP_ERROR_INVALID_ARGS,
   DP_ERROR_OUT_OF_MEMORY. */
typedef struct dp_sym_infer_desc {
    int num_known;                   /* variables whose shapes are given */
    const char *const *names;        /* their names */
    const dp_shape *shapes;          /* their shapes */
    const dp_dtype *dtypes;          /* their dtypes; NULL: float32 */
    dp_shape *arg_shapes;            /* results, each may be NULL: per argument */
    dp_dtype *arg_dtypes;
    dp_shape *out_shapes;            /* per output */
    dp_dtype *out_dtypes;
    dp_shape *aux_shapes;            /* per auxiliary state */
    dp_dtype *aux_dtypes;
} dp_sym_infer_desc;
/* Any thread. */
DP_API dp_result dp_sym_infer(const dp_symbol *s, const dp_sym_infer_desc *desc);
/* MXNet's symbol JSON in MXNet 1.x's form: "nodes" (each with "op"
   ("null" for a variable), "name", "attrs" (every attribute as a string)
   and "inputs" as [node, output, version]), "arg_nodes", "node_row_ptr"
   and "heads", so that MXNet loads the file and the viewers made for its
   models open it. Saving writes MXNet's operator names: a node keeps the
   name it was made with when that is MXNet's, and depeng's names of
   operations MXNet names otherwise are translated (relu, sigmoid and tanh
   to Activation with act_type, add to elemwise_add, add_scalar to
   _plus_scalar, reshape to Reshape, concat to Concat, cast to Cast, ...);
   depeng's num_args of Convolution, Deconvolution, FullyConnected and
   LeakyReLU is written as MXNet's no_bias. Every attribute a node was
   given is written back, MXNet's hints ("__shape__", "__lr_mult__",
   "__init__", ...) included, which the operator itself never sees.
   Loading takes MXNet's operator names (see dp_sym_node) and its older
   "param" / "attr" keys (an "attr" hint such as "ctx_group" is kept as
   "__ctx_group__", as MXNet upgrades such files), so load then save keeps
   every attribute. Limits: 64 attributes a node. Errors: DP_ERROR_IO (a
   stream or file that fails), DP_ERROR_FORMAT (not such JSON; logged with
   the reason), the errors of dp_sym_node naming the node, and
   DP_ERROR_OUT_OF_MEMORY. Any thread. */
DP_API dp_result dp_sym_save_json(const dp_symbol *s, FILE *out);
DP_API dp_result dp_sym_load_json(const char *json, dp_symbol **out);
DP_API dp_result dp_sym_save(const dp_symbol *s, const char *path);
DP_API dp_result dp_sym_load(const char *path, dp_symbol **out);
/* The graph as Graphviz DOT: variables as ellipses, operators as boxes
   labelled with their operator and parameters, edges from producer to
   consumer. Errors: DP_ERROR_INVALID_ARGS, DP_ERROR_IO, DP_ERROR_OUT_OF_MEMORY.
   Any thread. */
DP_API dp_result dp_sym_write_dot(const dp_symbol *s, FILE *out);

/* ====================================================================== EXECUTOR
   MXNet's executor: a symbol bound to arrays. Binding infers every shape,
   builds the gradient graph from the registered gradient operators (each
   reading only what its operator's grad_needs declares), places every
   intermediate result in one arena by the memory plan (>>memory planning;
   entries alive at the same time never share bytes, an output may take
   its input's where the operator's inplace bits allow) and makes every node
   one pre-created engine operation (dp_opr_create). A step then only pushes
   those operations: no allocation, no parameter parsing, no inference
   (the engine's allocator sees no call from a warm step's pushes and
   kernels: the convolution's columns come from the temporary space, which
   keeps its size; tests/test_symbol.c counts).
   Fusion: on the CPU, a FullyConnected or Convolution node whose output
   is read by one node only, an element-wise relu, sigmoid or tanh (what a
   symbol's Activation node of those types is; softrelu and softsign stay
   apart, as Activation does not declare running in place), runs that
   operator inside its own operation: after the GEMM
   and the bias, block by block (FullyConnected: rows of about 2^15
   elements; Convolution: image by image), the operator's own kernel runs
   in place over the block while it is still in cache. The separate
   operation goes, and so does the value before the activation: it gets
   no bytes in the memory plan. Not fused: a pre-activation value that is
   an output of the symbol or that any other node reads, the backward
   pass included (a gradient operator whose grad_needs names the
   activation's input; relu's, sigmoid's and tanh's read their output, so
   they fuse in training too), a producer whose gradient
   reads its output, GPU executors, a producer whose kernel was replaced
   with dp_operator_set_kernel, and a producer whose output would be more
   than 65,536 blocks (a Convolution of more than 65,536 images): the
   blocks are views made at bind. Bitwise the same as unfused: each element of
   the output goes through the same operations in the same order (the
   GEMM, the bias added as before, then the operator's own kernel, whose
   every element is computed alone), and the backward pass is unchanged.
   dp_exec_desc.no_fusion turns it off; dp_exec_memory.num_fused counts.
   Thread safety: bind, steps and destroy of one executor from one thread
   at a time; outputs and gradients are ordinary arrays (any thread). */
typedef struct dp_executor dp_executor;
typedef struct dp_exec_memory {
    size_t planned_bytes;    /* the arena holding every intermediate result */
    size_t unplanned_bytes;  /* the same results with a buffer each (64-byte rounded) */
    size_t external_bytes;   /* arguments, gradients, outputs and head gradients */
    int num_nodes, num_entries;   /* operations (forward + backward) and results */
    int num_fused;                /* activations run inside their producer's operation (fusion, above) */
} dp_exec_memory;
/* Binds sym on ctx: args[i] is the array of argument i (dp_sym_list_arguments
   order), read by every forward; aux[i] the array of auxiliary state i
   (dp_sym_list_auxiliary_states order), which a training forward updates
   in place (BatchNorm's moving statistics) and an inference forward only
   reads, and which gets no gradient; grads[i] (grads NULL: no backward) receives
   its gradient by grad_reqs[i] (NULL: DP_REQ_WRITE for every non-NULL
   gradient): DP_REQ_WRITE overwrites, DP_REQ_ADD adds, DP_REQ_NULL or a NULL
   gradient computes none. The executor keeps references to the arrays;
   write new values into them (dp_nd_write, an optimizer update) between
   steps. Errors (logged, nothing is made): DP_ERROR_INVALID_ARGS (argument
   or auxiliary state count, an array of another shape, dtype, engine or device than the
   graph says, a node without a gradient operator between an output and
   an argument with a gradient; inference errors name the node),
   DP_ERROR_BAD_CONTEXT (no kernel on that device), DP_ERROR_OUT_OF_MEMORY. */
typedef struct dp_exec_desc {
    dp_ctx ctx;                      /* the device every node runs on (zeroed: CPU 0) */
    int num_args;                    /* as many as dp_sym_list_arguments gives */
    dp_ndarray *const *args;         /* args[i]: argument i's array */
    dp_ndarray *const *grads;        /* NULL: no backward; grads[i] NULL: none for argument i */
    const dp_req *grad_reqs;         /* NULL: DP_REQ_WRITE for every non-NULL gradient */
    int num_aux;                     /* as many as dp_sym_list_auxiliary_states gives */
    dp_ndarray *const *aux;          /* aux[i]: auxiliary state i's array */
    int no_fusion;                   /* non-zero: every node its own operation (no fusion, above) */
} dp_exec_desc;
DP_API dp_result dp_exec_bind(dp_engine *eng, const dp_symbol *sym, const dp_exec_desc *desc, dp_executor **out);
/* A new executor of the same symbol, device and gradient requests on other
   arrays (e.g. another batch size), sharing ex's auxiliary state arrays
   (as MXNet's reshape), fused as ex is; ex stays valid. Errors as dp_exec_bind.
   The executor's thread (one at a time per executor). */
DP_API dp_result dp_exec_rebind(dp_executor *ex, int num_args, dp_ndarray *const *args, dp_ndarray *const *grads, dp_executor **out);
/* Pushes the forward operations, in training (is_train non-zero) or
   inference: MXNet's forward(is_train). Operators with an "is_train"
   parameter (BatchNorm, Dropout) get it from here, whatever the symbol's
   node says (both forms are made at bind). Returns at once; read
   the outputs as any array (dp_nd_read waits). Errors: DP_ERROR_INVALID_ARGS,
   and dp_opr_push's. The executor's thread. */
DP_API dp_result dp_exec_forward(dp_executor *ex, int is_train);
/* Pushes the gradient operations. head_grads[i] (may be NULL, as may the
   array itself) is d(objective)/d(output i), copied (one _copy invocation,
   whose record dp_invoke reuses once warm) into the executor's head gradient,
   which is ones otherwise: a loss output needs none. A loop that must not
   allocate writes its head gradients into dp_exec_head_grad(ex, i) itself
   (dp_nd_write, or an operator with it as the output) and passes none.
   Errors: DP_ERROR_INVALID_ARGS (bound without gradients, more head
   gradients than outputs), the copy's errors. The gradients are those of
   a training forward (is_train 1: BatchNorm's batch statistics, Dropout's
   mask), as MXNet's backward follows forward(is_train=True). The
   executor's thread. */
DP_API dp_result dp_exec_backward(dp_executor *ex, int num_head_grads, dp_ndarray *const *head_grads);
/* How many outputs; any thread. */
DP_API int dp_exec_num_outputs(const dp_executor *ex);
/* Output index (borrowed: dp_nd_retain to keep it past the executor), NULL
   if out of range. Any thread. */
DP_API dp_ndarray *dp_exec_output(const dp_executor *ex, int index);
/* The head gradient array of output index (borrowed; ones after bind;
   the caller may write it), NULL without gradients or out of range. Any
   thread. */
DP_API dp_ndarray *dp_exec_head_grad(const dp_executor *ex, int index);
/* The memory plan's figures. Errors: DP_ERROR_INVALID_ARGS. Any thread. */
DP_API dp_result dp_exec_memory_get(const dp_executor *ex, dp_exec_memory *out);
/* Destroys the operations (each freed after its last pushed run) and lets
   go of the arrays; pending work finishes. NULL is fine. The executor's
   thread. */
DP_API void dp_exec_destroy(dp_executor *ex);


/* ====================================================================== DATA
   A mini-batch iterator that prefetches through the engine (depeng.h reads
   CSV, .npy and .npz files into arrays). */
/* Mini-batches of rows (the first axis) of data and label. Zero-initialise:
   shuffle draws a new order every epoch from the random resource of data's
   device (reproducible with dp_random_seed); the last batch is short unless
   drop_last. The next batch is gathered by an operation on the IO pool
   (DP_PROP_IO) while the caller's work on the current one runs. Thread
   safety: one thread at a time per iterator (create from any); the
   batches are ordinary arrays. */
typedef struct dp_iter_desc {
    dp_ndarray *data;        /* (n, ...) on the CPU */
    dp_ndarray *label;       /* (n, ...) or NULL */
    int batch_size;
    int shuffle;
    int drop_last;
} dp_iter_desc;
typedef struct dp_iter dp_iter;
DP_API dp_result dp_iter_create(const dp_iter_desc *desc, dp_iter **out);
/* The next batch as new arrays (release them when done; they stay valid
   after later calls). At the end of an epoch *data (and *label) are NULL
   and DP_OK is returned; dp_iter_reset starts the next epoch. The
   iterator's thread (one at a time per iterator). */
DP_API dp_result dp_iter_next(dp_iter *it, dp_ndarray **data, dp_ndarray **label);
DP_API dp_result dp_iter_reset(dp_iter *it);
/* Batches per epoch; and the iterator's end (its pending gathers finish on
   their own). The iterator's thread. */
DP_API int64_t dp_iter_num_batches(const dp_iter *it);
DP_API void dp_iter_destroy(dp_iter *it);

/* MNIST's idx files (LeCun's format, also Fashion-MNIST's), gzipped or
   not: a file whose first two bytes are gzip's (0x1f 0x8b) is inflated
   first (RFC 1952, one member, with depeng.h's dp_inflate; its CRC-32 and
   size are checked). The idx header is two zero bytes, a type byte (0x08
   uint8, 0x09 int8, 0x0B int16, 0x0C int32, 0x0D float32, 0x0E float64),
   the number of dimensions, then each dimension as a big-endian 32-bit
   size; the data follow, big-endian, in C order. The array has that shape
   and the type's dtype (int16 widens to int32); it is made on ctx.
   Limits: 1 to DP_MAX_DIMS (8) dimensions; the data exactly what the shape
   holds (trailing bytes are refused too); a gzip file under 4 GiB
   inflated, and declaring at most 1,032 times its compressed size (what
   deflate can reach); the whole file and its inflated bytes are held while
   loading. Errors (logged with the file's name and what is wrong):
   DP_ERROR_INVALID_ARGS for NULL arguments (ND_ARGS); DP_ERROR_IO when the
   file cannot be read; DP_ERROR_FORMAT for a truncated file (the bytes
   the header or shape needs and those present), a bad magic, an unknown
   type byte, zero or too many dimensions, a size mismatch (bytes past the
   data), or a bad gzip stream, CRC or size; DP_ERROR_OUT_OF_MEMORY.
   *out is NULL after an error. Any thread. */
DP_API dp_result dp_nd_load_idx(dp_engine *eng, const char *path, dp_ctx ctx, dp_ndarray **out);
/* An MNIST-style pair: images (n, rows, cols) and labels (n,) from two
   idx files (as dp_nd_load_idx reads them; the dtypes as stored, uint8
   for MNIST). Besides dp_nd_load_idx's errors, DP_ERROR_FORMAT when the
   images are not 3-d or 4-d, the labels not 1-d, or the counts differ
   (logged naming both files and both counts). Both are NULL after an
   error. Any thread. */
DP_API dp_result dp_nd_load_mnist(dp_engine *eng, const char *images, const char *labels, dp_ctx ctx,
                                  dp_ndarray **data, dp_ndarray **label);

/* An image iterator (MXNet's ImageRecordIter / MNISTIter over arrays in
   memory, with NDArrayIter's last-batch handling): batches of float32
   images (batch, channels, crop_h, crop_w), or (batch, channels * crop_h *
   crop_w) with flat, from images (n, h, w) (one channel) or (n, c, h, w)
   of any dtype, and float32 labels (batch, ...) from label rows.
   Order: rows [n * part_index / num_parts, n * (part_index + 1) /
   num_parts) of the data form this worker's part (MXNet's num_parts /
   part_index sharding: the parts of 0 .. num_parts - 1 cover every row
   once); with shuffle the part's order is a new permutation every epoch.
   Every batch holds batch_size images; the last, short one is handled as
   last_batch says (MXNet's NDArrayIter last_batch_handle):
     DP_LAST_BATCH_PAD       filled up with the epoch's first images (in
                             the epoch's order; *pad says how many)
     DP_LAST_BATCH_DISCARD   dropped
     DP_LAST_BATCH_ROLL_OVER kept for the next epoch, whose first batch
                             starts with them (when the epoch was read to
                             its end; a reset earlier drops them)
   Augmentation, per image, in this order: pad pixels of fill_value on
   every side, a crop of crop_h x crop_w (0: the input's size) at a
   random offset (rand_crop) or the centre, a horizontal flip with
   probability 1/2 (rand_mirror); then each channel ch is normalised:
   (x - mean[ch]) / std[ch] * scale (mean NULL: 0, std NULL: 1, scale 0:
   1), as ImageRecordIter's mean_r.../std_r.../scale.
   Every draw (the permutations, the crop offsets, the flips) comes from the
   iterator's own generator seeded with seed, in the caller's thread, so
   the batches are the same for a seed whatever the engine. The next batch
   is decoded and augmented by an operation pushed on the IO pool
   (DP_PROP_IO) while the caller works on the current one.
   Thread safety: one thread at a time per iterator (create from any); the
   batches are ordinary arrays. */
typedef enum dp_last_batch { DP_LAST_BATCH_PAD = 0, DP_LAST_BATCH_DISCARD, DP_LAST_BATCH_ROLL_OVER } dp_last_batch;
typedef struct dp_image_iter_desc {
    dp_ndarray *data;        /* (n, h, w) or (n, c, h, w), CPU */
    dp_ndarray *label;       /* (n, ...) or NULL, CPU, same engine */
    int batch_size;          /* > 0 */
    int shuffle;
    uint64_t seed;
    dp_last_batch last_batch;
    int crop_h, crop_w;      /* 0: the input's height / width */
    int pad;                 /* >= 0 */
    double fill_value;       /* the padding's pixels, before normalising */
    int rand_crop, rand_mirror;
    const float *mean, *std; /* channels values each, or NULL; std non-zero */
    double scale;            /* 0: 1 */
    int num_parts, part_index;   /* 0 parts: 1 */
    int flat;
} dp_image_iter_desc;
typedef struct dp_image_iter dp_image_iter;
/* Errors (logged, ND_ARGS): DP_ERROR_INVALID_ARGS for NULL desc or out,
   data not 3-d or 4-d, a label with other rows or on another engine,
   batch_size <= 0, an unknown last_batch, a negative pad, a crop larger
   than the padded image, a zero std, part_index outside 0 ..
   num_parts - 1 or a part without rows, DISCARD with fewer rows than a
   batch; DP_ERROR_BAD_CONTEXT for GPU arrays; DP_ERROR_OUT_OF_MEMORY.
   Makes the first batch's operation. Any thread. */
DP_API dp_result dp_image_iter_create(const dp_image_iter_desc *desc, dp_image_iter **out);
/* The next batch as new arrays (release them when done). pad (may be
   NULL) gets how many images at its end repeat the epoch's first ones
   (PAD's last batch), else 0. At the end of an epoch *data (and *label)
   are NULL and DP_OK is returned; dp_image_iter_reset starts the next
   one. The iterator's thread. */
DP_API dp_result dp_image_iter_next(dp_image_iter *it, dp_ndarray **data, dp_ndarray **label, int *pad);
/* Starts the next epoch: a new permutation with shuffle, the rolled-over
   images first with ROLL_OVER. The iterator's thread. */
DP_API dp_result dp_image_iter_reset(dp_image_iter *it);
/* Batches in this epoch (ROLL_OVER: it depends on what rolled over). The
   iterator's thread. */
DP_API int64_t dp_image_iter_num_batches(const dp_image_iter *it);
/* Ends the iterator (its pending operation finishes on its own). NULL is
   fine. The iterator's thread. */
DP_API void dp_image_iter_destroy(dp_image_iter *it);

/* ====================================================================== CHECKPOINTS
   MXNet's parameter files: mx.nd.save's format (a ".params" file) and
   mx.model.save_checkpoint's pair PREFIX-symbol.json + PREFIX-%04d.params,
   whose names are "arg:NAME" for arguments and "aux:NAME" for auxiliary
   states. The file (little-endian): uint64 0x112 (the list's magic),
   uint64 0; uint64 count, then each array as NDArray::Save writes it
   (version 2: uint32 0xF993fac9, int32 storage type 0 (dense), the shape
   as uint32 ndim then ndim int64 dims, the context as int32 dev_type and
   dev_id, int32 type flag (mshadow's: 0 float32, 1 float64, 2 float16,
   3 uint8, 4 int32, 5 int8, 6 int64, 7 bool), the bytes in C order);
   uint64 name count (0 or count), then each name as uint64 length and
   its bytes. */
/* Writes count arrays with their names (all named, or all with empty
   names: MXNet's unnamed list) as version-2 arrays (a 0-d array as
   version 3, which alone can say "scalar") with each array's own
   device (MXNet's dev_type: 1 CPU, 2 GPU, 3 pinned). Waits for the
   arrays' pending writes (copying a GPU array to the host first). Limits:
   names of at most 127 bytes (dp_nd_named's). Errors (logged):
   DP_ERROR_INVALID_ARGS for a NULL path or arrays, a negative count, a
   member without an array, some names empty and others not (ND_ARGS);
   DP_ERROR_IO when the file cannot be written; DP_ERROR_OUT_OF_MEMORY;
   an array's failed write as from dp_nd_read. Any thread, not from inside
   an operation (it waits). */
DP_API dp_result dp_nd_save_params(const char *path, const dp_nd_named *arrays, int count, dp_failure *failure);
/* Loads up to cap arrays of a .params file onto ctx (whatever device
   the file names); *count is set. Reads versions 1 (0xF993fac8), 2 and 3
   (0xF993faca, NumPy shape semantics: ndim 0 a scalar) and MXNet's
   oldest layout (a uint32 ndim first, uint32 dims); names stay empty for
   an unnamed list. Errors (logged with the file and, for an array, its
   index and name): DP_ERROR_INVALID_ARGS for NULL arguments or a
   negative cap; DP_ERROR_IO when the file cannot be read; DP_ERROR_FORMAT
   for a bad list magic, a truncated file, an unknown array magic, sparse
   storage (row_sparse, csr), a none array, more than DP_MAX_DIMS
   dimensions, a negative dimension, an unknown device type or type flag
   (int16, uint16, bfloat16, ... have no dtype here), a name count other
   than 0 or the array count, an empty name or one longer than 127 bytes
   in a named list, bytes past the
   last name, or more than cap arrays; DP_ERROR_OUT_OF_MEMORY. On error
   nothing is left allocated and *count is 0. Any thread. */
DP_API dp_result dp_nd_load_params(dp_engine *eng, const char *path, dp_ctx ctx, dp_nd_named *out, int cap, int *count);
/* A checkpoint: the symbol, its arguments and auxiliary states (names
   without the "arg:" / "aux:" prefix). */
typedef struct dp_checkpoint {
    dp_symbol *symbol;
    dp_nd_named *args;  int num_args;
    dp_nd_named *aux;   int num_aux;
} dp_checkpoint;
/* mx.model.save_checkpoint: writes PREFIX-symbol.json (dp_sym_save) and
   PREFIX-EPOCH.params (epoch as %04d) holding the arguments as
   "arg:NAME" and the auxiliary states as "aux:NAME". Limits: names of at
   most 123 bytes (the prefix takes 4 of dp_nd_named's 127), a path of at
   most 4,095 bytes. Errors: dp_sym_save's and dp_nd_save_params's, and
   DP_ERROR_INVALID_ARGS for NULL arguments, a negative epoch or count, a
   name too long (ND_ARGS). Any thread, not from inside an operation. */
DP_API dp_result dp_checkpoint_save(const char *prefix, int epoch, const dp_symbol *sym, const dp_nd_named *args, int num_args,
                                    const dp_nd_named *aux, int num_aux, dp_failure *failure);
/* What dp_checkpoint_load checks the parameters' shapes against: the
   shapes of the symbol's inputs (e.g. the data's and the label's, as
   dp_sym_infer takes them), from which every argument's shape is
   inferred, so that a parameter of another shape is refused naming it and
   both shapes. NULL or zeroed: the shapes are not checked (the executor's
   bind checks them later), only that every "arg:" name is an argument of
   the symbol and every "aux:" name an auxiliary state. */
typedef struct dp_checkpoint_desc {
    int num_inputs;
    const char *const *input_names;
    const dp_shape *input_shapes;
} dp_checkpoint_desc;
/* mx.model.load_checkpoint: the symbol from PREFIX-symbol.json and the
   parameters from PREFIX-EPOCH.params onto ctx, into *out (free it with
   dp_checkpoint_free). Errors (logged): those of dp_sym_load and
   dp_nd_load_params; DP_ERROR_FORMAT for a name without "arg:" or "aux:",
   an "arg:" name that is not an argument of the symbol or an "aux:" name
   that is not one of its auxiliary states (naming it), a
   parameter whose shape is not the one the symbol infers from desc's
   inputs (naming the parameter and both shapes), or input shapes the
   symbol's inference refuses;
   DP_ERROR_INVALID_ARGS for NULL arguments or a negative epoch;
   DP_ERROR_OUT_OF_MEMORY. *out is zeroed after an error. Limits: 65,536
   parameters. Any thread. */
DP_API dp_result dp_checkpoint_load(dp_engine *eng, const char *prefix, int epoch, dp_ctx ctx, const dp_checkpoint_desc *desc,
                                    dp_checkpoint *out);
/* Releases the symbol and the arrays and frees the lists; zeroes *ck.
   NULL is fine. Any thread. */
DP_API void dp_checkpoint_free(dp_checkpoint *ck);

/* ====================================================================== INITIALISERS
   MXNet's mx.init: how a parameter array gets its first values. A weight
   (a name ending in "weight") gets the initializer's own rule:
     ZERO, ONE, CONSTANT   0, 1, value
     UNIFORM               uniform in [-scale, scale]          (MXNet 0.07)
     NORMAL                normal(0, sigma)                    (MXNet 0.01)
     XAVIER                rnd_type uniform in [-s, s] or gaussian (0, s),
                           s = sqrt(magnitude / factor), factor the fan-in
                           (shape[1] * the product of shape[2:]), the
                           fan-out (shape[0] * that product) or their mean
                           (factor_type in / out / avg)  (MXNet uniform, avg, 3)
     MSRA                  MSRAPrelu: XAVIER gaussian with magnitude
                           2 / (1 + slope^2)             (MXNet avg, slope 0.25)
   Other parameters by their name's end, as MXNet's Initializer does: bias,
   beta, moving_mean, moving_inv_var, moving_avg and min 0; gamma,
   moving_var and max 1; any other name is refused (MXNet's "unknown
   initialization pattern"). A variable's "__init__" attribute (MXNet's
   init= of a Variable, kept by dp_sym_load_json) overrides both: that
   initializer's weight rule fills the array, whatever its name.
   Random draws come from the random resource of the array's device
   (dp_random_seed makes them reproducible). */
typedef enum dp_init_kind { DP_INIT_ZERO = 0, DP_INIT_ONE, DP_INIT_CONSTANT, DP_INIT_UNIFORM, DP_INIT_NORMAL, DP_INIT_XAVIER, DP_INIT_MSRA } dp_init_kind;
typedef enum dp_init_rnd { DP_INIT_RND_UNIFORM = 0, DP_INIT_RND_GAUSSIAN } dp_init_rnd;
typedef enum dp_init_factor { DP_INIT_FACTOR_AVG = 0, DP_INIT_FACTOR_IN, DP_INIT_FACTOR_OUT } dp_init_factor;
typedef struct dp_initializer {
    dp_init_kind kind;
    double value;               /* CONSTANT */
    double scale;               /* UNIFORM */
    double sigma;               /* NORMAL */
    dp_init_rnd rnd_type;       /* XAVIER */
    dp_init_factor factor_type; /* XAVIER, MSRA */
    double magnitude;           /* XAVIER */
    double slope;               /* MSRA */
} dp_initializer;
/* An initializer from MXNet's text for it: what Initializer.dumps() writes
   and a Variable's "__init__" attribute holds, '["xavier", {"rnd_type":
   "gaussian", "factor_type": "in", "magnitude": 2}]', or a bare name
   ("xavier"). Names (any case): zero / zeros, one / ones, constant,
   uniform, normal, xavier, msraprelu; keys: value, scale, sigma, rnd_type,
   factor_type, magnitude, slope (numbers as numbers or strings); a key not
   given takes MXNet's default. Errors (logged, ND_ARGS):
   DP_ERROR_INVALID_ARGS for NULL arguments, text that is neither form,
   an unknown name, key or value (naming it). Any thread. */
DP_API dp_result dp_init_parse(const char *text, dp_initializer *out);
/* Fills arr as the rules above say for a parameter called name, with hint
   (a variable's "__init__" text, or NULL / "") taking precedence. Pushes
   the fill; returns at once. Errors (logged, ND_ARGS):
   DP_ERROR_INVALID_ARGS for NULL init, name or arr, a name no rule knows,
   XAVIER or MSRA on an array of fewer than 2 dimensions or a fan of 0,
   an unknown kind, a hint dp_init_parse refuses; DP_ERROR_OUT_OF_MEMORY.
   Any thread. */
DP_API dp_result dp_init_array(const dp_initializer *init, const char *name, const char *hint, dp_ndarray *arr);
/* Fills each of num named arrays by dp_init_array, with the "__init__"
   attribute of sym's variable of that name (if any) as the hint; stops at
   the first error. Errors: dp_init_array's; DP_ERROR_INVALID_ARGS for NULL
   arguments or a negative num. Any thread. */
DP_API dp_result dp_init_params(const dp_initializer *init, const dp_symbol *sym, const dp_nd_named *params, int num);
/* The attribute key of sym's variable called var as loaded from MXNet's
   JSON ("__init__", "__shape__", "__lr_mult__", "__wd_mult__", ... and the
   old "attr" object's entries), or NULL when the variable or the
   attribute is not there. Valid while sym is. Any thread. */
DP_API const char *dp_sym_var_attr(const dp_symbol *sym, const char *var, const char *key);

/* ====================================================================== SCHEDULES AND CLIPPING
   More optimizer updates, registered like depeng.h's sgd_update and
   adam_update (inputs weight, gradient, then the states they mutate; the
   weight written in place; any of them drives a dp_optimizer or a
   KVStore's dp_kv_set_optimizer; float32 / float64; CPU kernels). Each
   first takes g = rescale_grad * gradient, then, as MXNet's kernels do:
   for the two RMSProps adds wd * w and limits g to [-clip_gradient,
   clip_gradient] (when clip_gradient > 0); for nag_mom_update limits it,
   then adds wd * w; adagrad_update and adamw_update limit it and apply wd
   in the step:
     rmsprop_update(w, g, n)            n = (1 - gamma1) g^2 + gamma1 n;
                                        w -= lr g / sqrt(n + epsilon)
     rmspropalex_update(w, g, n, m, d)  centered (Graves 2013): n as above,
                                        m = (1 - gamma1) g + gamma1 m,
                                        d = gamma2 d - lr g / sqrt(n - m^2 + epsilon);
                                        w += d
     adagrad_update(w, g, h)            h += g^2; w -= lr (g / sqrt(h + epsilon) + wd w)
     nag_mom_update(w, g, mom)          mom = momentum mom - lr g; w += momentum mom - lr g
     adamw_update(w, g, m, v)           m = beta1 m + (1 - beta1) g; v = beta2 v + (1 - beta2) g^2;
                                        w -= eta (lr m / (sqrt(v) + epsilon) + wd w), lr
                                        bias-corrected by the step t as adam_update's
   MXNet's defaults: rmsprop gamma1 0.95, epsilon 1e-8 (rmspropalex also
   gamma2 0.9); adagrad epsilon 1e-7; nag momentum 0; adamw beta1 0.9,
   beta2 0.999, epsilon 1e-8, eta 1 (MXNet's _contrib_adamw_update, Loshchilov
   and Hutter's decoupled weight decay). */
/* MXNet's learning-rate schedules (mx.lr_scheduler), as a function of the
   update count num_update (MXNet's, from 0 or 1 as the caller counts):
     FACTOR       base_lr * factor^k, k = floor((num_update - 1) / step)
                  for num_update > 0 (so the first change is after step
                  updates), never below stop_factor_lr
     MULTIFACTOR  base_lr * factor^k, k the steps[] below num_update
                  (steps increasing)
     COSINE       final_lr + (base_lr - final_lr) (1 + cos(pi (num_update -
                  warmup_steps) / (max_update - warmup_steps))) / 2 up to
                  max_update, final_lr after
     CONSTANT     base_lr
   and before warmup_steps updates (every kind) the warm-up: linear from
   warmup_begin_lr to base_lr (begin + (base_lr - begin) num_update /
   warmup_steps), or constant warmup_begin_lr. */
typedef enum dp_lr_kind { DP_LR_CONSTANT = 0, DP_LR_FACTOR, DP_LR_MULTIFACTOR, DP_LR_COSINE } dp_lr_kind;
typedef enum dp_lr_warmup { DP_LR_WARMUP_LINEAR = 0, DP_LR_WARMUP_CONSTANT } dp_lr_warmup;
typedef struct dp_lr_schedule {
    dp_lr_kind kind;
    double base_lr;
    int64_t step;                  /* FACTOR: > 0 */
    double factor;                 /* FACTOR, MULTIFACTOR: <= 1 */
    double stop_factor_lr;         /* FACTOR (MXNet 1e-8) */
    const int64_t *steps;          /* MULTIFACTOR: num_steps increasing counts >= 1 */
    int num_steps;
    int64_t max_update;            /* COSINE: > warmup_steps */
    double final_lr;               /* COSINE */
    int64_t warmup_steps;          /* >= 0 */
    double warmup_begin_lr;
    dp_lr_warmup warmup_mode;
} dp_lr_schedule;
/* Checks a schedule: DP_ERROR_INVALID_ARGS (logged, ND_ARGS, naming the
   field) for NULL, an unknown kind or warm-up mode, a FACTOR step <= 0 or
   factor > 1, MULTIFACTOR steps not increasing from 1 (or NULL with
   num_steps > 0) or factor > 1, a COSINE max_update <= warmup_steps, a
   negative warmup_steps. Any thread. */
DP_API dp_result dp_lr_check(const dp_lr_schedule *s);
/* The learning rate at num_update (a negative count is taken as 0) for a
   schedule dp_lr_check accepts; NaN for one it refuses (not logged). Pure:
   any thread, no allocation. */
DP_API double dp_lr_at(const dp_lr_schedule *s, int64_t num_update);
/* Global-norm clipping (MXNet's gluon.utils.clip_global_norm): with
   total = sqrt(the sum of every element's square over all num arrays),
   when total > max_norm every array is multiplied by max_norm / (total +
   1e-8); total (before clipping; NaN or inf when an element is) goes to
   norm_out when it is not NULL (a float32 or float64 array of one
   element). One operation writing every array (and norm_out), pushed
   with the arrays' reads and writes ordered as usual; returns at once.
   Arrays: float32 or float64, CPU, of one engine; an array given twice
   (or a view of exactly its elements) counts and is scaled once, views of
   one storage that overlap only in part are not supported (their common
   elements would count and be scaled twice). Errors (logged, ND_ARGS): DP_ERROR_INVALID_ARGS for
   NULL arrays, num outside 1..64, max_norm <= 0 or NaN, another dtype or
   engine, a norm_out that is not one float element; DP_ERROR_BAD_CONTEXT
   for a GPU array; the push's errors. Any thread. */
DP_API dp_result dp_clip_global_norm(dp_ndarray *const *arrays, int num, double max_norm, dp_ndarray *norm_out);


/* ====================================================================== KVSTORE
   MXNet's KVStore: parameter synchronisation across devices. A store keeps
   one array per integer key on its context (the CPU: gradients from GPUs
   are copied to it and the results back, as MXNet's CPU reduction does).
   dp_kv_push(key, values, n) sums the n arrays (one per device, typically)
   into the key's merge buffer; then, if the store has a global reduction
   (desc.global_reduce: depeng_mpi.h's allreduce over processes), that
   replaces the buffer by the sum over all processes; then the updater, if
   any, updates the stored array from the buffer, else the buffer replaces
   it. dp_kv_pull(key, outs, n) copies the stored array into each output.
   Everything is an engine operation on the arrays' variables, pushed in
   call order: a pull waits for the pushes on its key before it (and for
   nothing else), a dp_nd_read of a pulled array waits for the pull, a
   push waits for the writes of its inputs pushed before it (so it may
   follow a backward pass at once, with no wait), and the next write to a
   pushed input waits for the push. Priorities go to the ops
   (DP_PROP_CPU_PRIORITIZED on the per-device engine, as MXNet's
   reductions): push the last layer's gradients with a higher priority.
   Reproducible: the sum is taken in the order of the values array (v0 +
   v1, then + v2, ...), one element at a time, whatever the engine or the
   number of worker threads, so the same calls give bitwise the same
   results. Failures: an op whose input failed passes the failure on to the
   stored array and the pulled arrays (a dp_nd_read of them reports it).
   Threads: one thread at a time per store (as MXNet's frontend); different
   stores are independent. Errors (logged as ND_ARGS unless noted):
   DP_ERROR_INVALID_ARGS for NULL arguments, an unknown or repeated key,
   shapes or dtypes that differ from the key's, arrays of another engine, an
   unknown optimizer; DP_ERROR_BAD_CONTEXT for a store context that is not
   the CPU; DP_ERROR_OUT_OF_MEMORY, logged (a failed dp_kv_init adds no key;
   a failed push may have pushed its sum without the update, so the stored
   array stays as it was, and a failed pull the outputs before the one that
   failed). */
typedef struct dp_kvstore dp_kvstore;
/* An updater: pushes the operations that update stored from merged (the
   summed gradient), e.g. through dp_invoke; called inside dp_kv_push
   on its thread, after the sum (and the global reduction) is pushed. It
   must not wait for the engine. Returns DP_OK or an error, which
   dp_kv_push returns. */
typedef dp_result (*dp_kv_updater_fn)(dp_kvstore *kv, int key, dp_ndarray *merged, dp_ndarray *stored, int priority, void *user);
/* A global reduction: pushes operations that replace merged by the sum of
   merged over every process (in place: they write merged's variable).
   Called inside dp_kv_push, after the local sum is pushed, before the
   update. */
typedef dp_result (*dp_kv_reduce_fn)(dp_kvstore *kv, int key, dp_ndarray *merged, int priority, void *user);
/* A global initialisation: makes every process agree on a key's initial
   value (depeng_mpi.h's checks shapes and dtypes across processes and
   broadcasts process 0's). Called inside dp_kv_init on every call, failed
   ones included, with this process's outcome so far: local DP_OK and
   stored the key's new array (the copy of the value pushed, perhaps not
   done), or local the error dp_kv_init is about to return and stored
   NULL. Returns DP_OK to add the key (stored then holds the agreed value,
   or ops pushed on it will write it), else the error dp_kv_init returns;
   it must not fail on one process and succeed on another. */
typedef dp_result (*dp_kv_init_fn)(dp_kvstore *kv, int key, dp_ndarray *stored, dp_result local, void *user);
typedef struct dp_kvstore_desc {
    dp_ctx ctx;                     /* where stored arrays live: CPU (zeroed: CPU 0) */
    dp_kv_reduce_fn global_reduce;  /* NULL: this process only ("local") */
    void *global_user;              /* passed to both hooks */
    dp_kv_init_fn global_init;      /* NULL: dp_kv_init keeps this process's value */
} dp_kvstore_desc;
/* Makes a store on eng (desc NULL: CPU 0, local). Any thread. */
DP_API dp_result dp_kv_create(dp_engine *eng, const dp_kvstore_desc *desc, dp_kvstore **out);
/* Releases the store's arrays (their memory goes once the ops on them are
   done: no wait). Pulled arrays stay valid. NULL is fine. The store's
   thread (one at a time per store, as every dp_kv_ call below). */
DP_API void dp_kv_destroy(dp_kvstore *kv);
/* Adds key with a copy of value (any context; pushed as an op). A key
   given twice is DP_ERROR_INVALID_ARGS. With a global initialisation
   (desc.global_init; dp_mpi_kv_create's dist_sync store has one) every
   process must call it for the same keys in the same order: the key then
   holds process 0's value on every process, whatever the others passed
   (MXNet's rule), and a key, shape or dtype that differs from process 0's,
   or a failure on any process, fails the call on every process with the
   same code (depeng_mpi.h says which) and adds the key nowhere. The
   store's thread; with a global initialisation not from inside an engine
   operation (it may block until every process has called it). */
DP_API dp_result dp_kv_init(dp_kvstore *kv, int key, dp_ndarray *value);
/* Sets the updater function (NULL: the sum replaces the stored array),
   replacing an optimizer. Applies to later pushes. The store's thread. */
DP_API dp_result dp_kv_set_updater(dp_kvstore *kv, dp_kv_updater_fn fn, void *user);
/* Uses a registered optimizer update as the updater, e.g. "sgd_update"
   with lr=0.1: an operator whose inputs are (weight, gradient, states...),
   one output (the weight, written in place), the states mutated inputs;
   the store keeps zero-initialised states per key. Parameters are parsed
   now (errors as dp_operator_parse_params). The kernel runs in the store's op
   (with its priority). The store's thread. */
DP_API dp_result dp_kv_set_optimizer(dp_kvstore *kv, const dp_optimizer_desc *desc);
/* Sums values[0..count) (count >= 1, each of the key's shape and dtype, on
   any context of kv's engine; an array given twice counts twice) into the
   key's array as described above. Returns once the ops are pushed. The
   store's thread. */
DP_API dp_result dp_kv_push(dp_kvstore *kv, int key, dp_ndarray *const *values, int count, int priority);
/* Copies the key's array into outs[0..count) (each of its shape and
   dtype; a GPU output through its copy queue; the stored array itself,
   from dp_kv_stored, is left as it is). The store's thread. */
DP_API dp_result dp_kv_pull(dp_kvstore *kv, int key, dp_ndarray *const *outs, int count, int priority);
/* The key's stored array (borrowed: valid until dp_kv_destroy), or NULL.
   The store's thread. */
DP_API dp_ndarray *dp_kv_stored(dp_kvstore *kv, int key);

#ifdef __cplusplus
}
#endif
#endif /* DEPENG_NN_H */

/* ====================================================================== 4. IMPLEMENTATION */
#if (defined(DEPENG_IMPLEMENTATION) || defined(DEPENG_NN_IMPLEMENTATION)) && !defined(DEPENG_NN_IMPL_INCLUDED)
#define DEPENG_NN_IMPL_INCLUDED 1
#ifdef __cplusplus
extern "C" {
#endif
#define DPN_IMPL
/* >>nn prelude: what the implementation needs from depeng.h, all public -- */
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <stdarg.h>
#if defined(__GNUC__) || defined(__clang__)
#define DPN__PRIVATE static __attribute__((unused))
#define DPN__COLD __attribute__((cold))
#else
#define DPN__PRIVATE static
#define DPN__COLD
#endif
#if defined(__cplusplus)
#define DPN__THREAD_LOCAL thread_local
#elif defined(_MSC_VER)
#define DPN__THREAD_LOCAL __declspec(thread)
#else
#define DPN__THREAD_LOCAL _Thread_local
#endif
/* depeng_nn.h's messages go where depeng.h's go (dp_log), with its items. */
#define DPN__LOG(eng, level, item, ...) dp_log(eng, level, DP_LOGITEM_##item, __FILE__, __LINE__, __VA_ARGS__)
static void *dpn__realloc(const dp_engine *eng, void *p, size_t old_size, size_t new_size) {
    void *q = dp_engine_alloc(eng, new_size);
    if (!q) return NULL;
    if (p) { memcpy(q, p, old_size < new_size ? old_size : new_size); dp_engine_free(eng, p, old_size); }
    return q;
}
/* Zeroed room for n elements from the engine's allocator, remembering its
   size so that dpn__zfree needs none: the executor's tables, which are
   freed far from where their sizes were known. The 64-byte header keeps
   the allocator's alignment. NULL when out of memory (or n * elem
   overflows); the caller logs. */
DPN__PRIVATE void *dpn__zalloc(const dp_engine *eng, size_t n, size_t elem) {
    size_t bytes;
    unsigned char *p;
    if (elem && n > (SIZE_MAX - 64) / elem) return NULL;
    bytes = 64 + n * elem;
    if ((p = (unsigned char *)dp_engine_alloc(eng, bytes)) == NULL) return NULL;
    memset(p, 0, bytes);
    memcpy(p, &bytes, sizeof bytes);
    return p + 64;
}
DPN__PRIVATE void dpn__zfree(const dp_engine *eng, void *q) {
    unsigned char *p = (unsigned char *)q;
    size_t bytes;
    if (!p) return;
    p -= 64;
    memcpy(&bytes, p, sizeof bytes);
    dp_engine_free(eng, p, bytes);
}
/* Makes room for index n in a growable array (doubling, first capacity
   `first`). Returns 0 when there is room, -1 if out of memory (the array is
   left as it was). */
DPN__PRIVATE int dpn__reserve(const dp_engine *eng, void *arrp, size_t *cap, size_t n, size_t elem, size_t first) {
    size_t ncap;
    void *old, *grown;
    if (n < *cap) return 0;
    memcpy(&old, arrp, sizeof old);           /* arrp points at a T* of any T */
    ncap = *cap ? *cap : first;
    while (ncap <= n) {
        if (ncap > SIZE_MAX / 2 / elem) return -1;
        ncap *= 2;
    }
    grown = dpn__realloc(eng, old, *cap * elem, ncap * elem);
    if (!grown) return -1;
    memcpy(arrp, &grown, sizeof grown);
    *cap = ncap;
    return 0;
}
/* A lock for rare, short sections (one backward pass at a time). */
static void dpn__spin_lock(dp_atomic_int *l) { while (dp_atomic_exchange(l, 1)) dp_thread_yield(); }
static void dpn__spin_unlock(dp_atomic_int *l) { dp_atomic_store(l, 0); }
static double dpn__load_elem(const void *p, dp_dtype t, int64_t i) { return dp_dtype_load(t, p, i); }
static void dpn__store_elem(void *p, dp_dtype t, int64_t i, double v, dp_req req) { dp_dtype_store(t, p, i, v, req); }
static const char *dpn__shape_str(const dp_shape *s, char *buf, size_t cap) { return dp_shape_format(s, buf, cap); }
static int dpn__same_ctx(dp_ctx a, dp_ctx b) { return a.dev_type == b.dev_type && a.dev_id == b.dev_id; }
/* A binary operator with NumPy broadcasting ("add" and its kin share one
   shape inference): either input's shape stands for the other's. */
static int dpn__is_broadcast_binary(const dp_operator *op) {
    const dp_operator *add = dp_operator_find("add");
    return add && op->num_inputs == 2 && op->infer == add->infer;
}
static double dpn__beta_of(dp_req req) { return req == DP_REQ_ADD ? 1.0 : 0.0; }
/* The layers' kernels split their work over the engine's range loop
   (dp_parallel_for: the op's own thread and idle CPU workers of its pool)
   once it is DPN__PAR_MIN elements or more, else run on the calling
   thread. The chunks depend on the shape alone, and every output element
   is computed by the same operations in the same order in any chunk (sums
   across chunks are combined in chunk order), so results are bitwise the
   same at any worker count and on every engine. */
#define DPN__PAR_MIN (1 << 17)
/* gcc's -O2 vectorises only loops that need no run-time alias check: the
   plain float loops here ask for its full cost model (they call no
   function that should be inlined: gcc inlines nothing into a function
   whose optimize options differ). */
#if defined(__GNUC__) && !defined(__clang__) && !defined(__CUDACC__) && !defined(__INTEL_COMPILER)
#  define DPN__VEC_LOOPS __attribute__((optimize("tree-loop-vectorize", "vect-cost-model=dynamic")))
#else
#  define DPN__VEC_LOOPS
#endif
#define DPN__PAR_GRAIN (1 << 15)   /* elements a chunk, where chunks are element runs */
static dp_engine *dpn__par_eng(const dp_kernel_ctx *k, double work) { return work >= DPN__PAR_MIN && k->rc ? k->rc->engine : NULL; }
/* fn over [0, n) in chunks of grain, on eng's range loop (NULL: here) */
static void dpn__range(dp_engine *eng, int64_t n, int64_t grain, dp_range_fn fn, void *user) {
    if (eng && n > 1) {
        dp_range_desc d;
        d.n = n; d.grain = grain; d.fn = fn; d.user = user; d.deterministic = 1;
        if (dp_parallel_for(eng, &d) == DP_OK) return;
    }
    if (n > 0) fn(0, n, user);
}
/* Element-wise kernels run a loop per dtype for float32 and float64; an
   operand of another dtype (a label, a zero gradient, an add-to copy) is
   converted a block of DPN__BLK elements at a time, into or out of a
   double buffer, with one dtype switch a block. Loads of the float and
   integer dtypes are plain casts (dp_dtype_load's values); float16 loads
   and stores into any dtype but float32 and float64 (rounding, saturating,
   bool) go through dp_dtype_load_n / dp_dtype_store_n (one switch a
   block), so that those rules live in depeng.h alone. Stores add by req as dp_dtype_store does:
   (v + old), rounded once to the dtype. */
#define DPN__BLK 256
DPN__VEC_LOOPS static void dpn__blk_load(dp_dtype t, const void *p, int64_t i, int64_t n, double *v) {
    int64_t j;
    switch (t) {
    case DP_FLOAT32: for (j = 0; j < n; j++) v[j] = ((const float *)p)[i + j]; break;
    case DP_FLOAT64: for (j = 0; j < n; j++) v[j] = ((const double *)p)[i + j]; break;
    case DP_INT32: for (j = 0; j < n; j++) v[j] = ((const int32_t *)p)[i + j]; break;
    case DP_INT64: for (j = 0; j < n; j++) v[j] = (double)((const int64_t *)p)[i + j]; break;
    case DP_INT8: for (j = 0; j < n; j++) v[j] = ((const int8_t *)p)[i + j]; break;
    case DP_UINT8: for (j = 0; j < n; j++) v[j] = ((const uint8_t *)p)[i + j]; break;
    case DP_BOOL: for (j = 0; j < n; j++) v[j] = ((const uint8_t *)p)[i + j] != 0; break;
    default: dp_dtype_load_n(t, p, i, n, v); break;
    }
}
DPN__VEC_LOOPS static void dpn__blk_store(dp_dtype t, void *p, int64_t i, int64_t n, const double *v, dp_req req) {
    int64_t j;
    if (req == DP_REQ_NULL) return;
    if (t == DP_FLOAT32) {
        float *y = (float *)p + i;
        if (req == DP_REQ_ADD) for (j = 0; j < n; j++) y[j] = (float)(v[j] + (double)y[j]);
        else for (j = 0; j < n; j++) y[j] = (float)v[j];
    } else if (t == DP_FLOAT64) {
        double *y = (double *)p + i;
        if (req == DP_REQ_ADD) for (j = 0; j < n; j++) y[j] = v[j] + y[j];
        else for (j = 0; j < n; j++) y[j] = v[j];
    } else dp_dtype_store_n(t, p, i, n, v, req);
}
/* dst[doff + j] = src[soff + j] by req, j < n: a written copy is the bytes
   (exact for every dtype), an added one is v + old rounded once to the
   dtype (dp_dtype_store's rule): float32 and float64 in their own loops,
   the other dtypes a block at a time through doubles. The two runs are the
   same memory (an in-place copy) or do not overlap. */
DPN__VEC_LOOPS static void dpn__copy_run(dp_dtype t, void *dst, int64_t doff, const void *src, int64_t soff, int64_t n, dp_req req) {
    double v[DPN__BLK];
    int64_t j, m;
    size_t es = dp_dtype_size(t);
    unsigned char *y = (unsigned char *)dst + (size_t)doff * es;
    const unsigned char *a = (const unsigned char *)src + (size_t)soff * es;
    if (req == DP_REQ_NULL || n <= 0) return;
    if (req != DP_REQ_ADD) { if (a != y) memcpy(y, a, (size_t)n * es); return; }
    if (t == DP_FLOAT32) for (j = 0; j < n; j++) ((float *)y)[j] = ((const float *)a)[j] + ((float *)y)[j];
    else if (t == DP_FLOAT64) for (j = 0; j < n; j++) ((double *)y)[j] = ((const double *)a)[j] + ((double *)y)[j];
    else
        for (j = 0; j < n; j += m) {
            m = n - j < DPN__BLK ? n - j : DPN__BLK;
            dpn__blk_load(t, src, soff + j, m, v);
            dpn__blk_store(t, dst, doff + j, m, v, req);
        }
}
/* every element of a = v by req, a block of DPN__BLK at a time */
static void dpn__fill_by_req(dp_ndarray *a, double v, dp_req req) {
    double b[DPN__BLK];
    int64_t i, m, n = dp_shape_size(dp_nd_shape(a));
    if (req == DP_REQ_NULL) return;
    for (i = 0; i < DPN__BLK; i++) b[i] = v;
    for (i = 0; i < n; i += m) {
        m = n - i < DPN__BLK ? n - i : DPN__BLK;
        dpn__blk_store(dp_nd_dtype(a), dp_nd_data(a), i, m, b, req);
    }
}
static const dp_operator *dpn__find_or_log(dp_engine *eng, const char *name) {
    const dp_operator *op = dp_operator_find(name);
    if (!op) DPN__LOG(eng, DP_LOG_ERROR, UNKNOWN_OPERATOR, "'%s'", name ? name : "(null)");
    return op;
}
/* A stream that reported a write error: DP_ERROR_IO, logged. */
DPN__COLD static dp_result dpn__stream_result(const dp_engine *eng, FILE *out, const char *what) {
    if (!ferror(out)) return DP_OK;
    DPN__LOG(eng, DP_LOG_ERROR, IO, "%s: the stream reported a write error", what);
    return DP_ERROR_IO;
}
/* A label that is a class of 0..classes-1, or the kernel's error. */
static int dpn__label_at(const dp_kernel_ctx *k, dp_ndarray *label, int64_t r, int64_t classes, int64_t *out) {
    double v = dp_dtype_load(dp_nd_dtype(label), dp_nd_data(label), r);
    if (!(v >= 0 && v < (double)classes && v == (double)(int64_t)v)) {
        char msg[96];
        snprintf(msg, sizeof msg, "label %g of row %lld is not a class in 0..%lld", v, (long long)r, (long long)classes - 1);
        dp_set_error(k->rc, msg);
        return -1;
    }
    *out = (int64_t)v;
    return 0;
}
/* Autograd as depeng.h's tracker: each invocation is asked whether to be
   recorded (this thread records, an input is in a graph, and it is not one
   of autograd's own: a gradient, a seed, an optimizer step), recorded once
   its outputs exist, and after the push either attached to its outputs or,
   when not recorded, cut from the graphs of the arrays it overwrote. */
static DPN__THREAD_LOCAL int dpn__tls_untracked;   /* > 0: autograd's own invocations */
static dp_result dpn__invoke_untracked(dp_engine *eng, const dp_operator *op, const dp_params *params, int nin,
                                       dp_ndarray *const *in, double scalar, int nout, dp_ndarray **out, const dp_req *req) {
    dp_result r;
    dpn__tls_untracked++;
    r = dp_invoke_parsed(eng, op, params, nin, in, scalar, nout, out, req);
    dpn__tls_untracked--;
    return r;
}
/* >>registration: depeng_nn.h's operators and its tracker ---------------------
   Registered once per process, on the first call of any depeng_nn.h entry
   point that needs them, or explicitly with dp_nn_register. The tracker
   (autograd's recorder, dp_set_tracker) is installed at the same time. */
static dp_atomic_int dpn__registered;     /* 0 not yet, 1 registering, 2 done */
static dp_atomic_int dpn__registering;
static void dpn__register_linear(void);
static void dpn__register_softmax_output(void);
static void dpn__register_layers(void);
static void dpn__register_tensor_layers(void);
static void dpn__register_optimizers(void);
static void dpn__register_norm(void);
static void dpn__ag_install_tracker(void);
DPN_IMPL void dp_nn_register(void) {
    if (dp_atomic_load(&dpn__registered) == 2) return;
    if (dp_atomic_exchange(&dpn__registering, 1) == 0) {
        dpn__register_linear();
        dpn__register_softmax_output();
        dpn__register_layers();
        dpn__register_tensor_layers();
        dpn__register_optimizers();
        dpn__register_norm();
        dpn__ag_install_tracker();
        dp_atomic_store(&dpn__registered, 2);
    } else while (dp_atomic_load(&dpn__registered) != 2) dp_thread_yield();
}
/* Registered before main, as MXNet's operators register by static
   initialisation, so that dp_invoke finds them by name from the start: a
   constructor with GCC and Clang (C and C++), a dynamic initialiser in
   other C++, a CRT initialiser with MSVC's C (not built by the project's
   tests; an optimising link may drop it). Elsewhere, and then, the entry
   points' own calls of dp_nn_register do it. */
#if defined(__GNUC__) || defined(__clang__)
__attribute__((constructor)) static void dpn__register_at_start(void) { dp_nn_register(); }
#elif defined(__cplusplus)
static const int dpn__registered_at_start = (dp_nn_register(), 1);
#elif defined(_MSC_VER)
#pragma section(".CRT$XCU", read)
static void __cdecl dpn__register_at_start(void) { dp_nn_register(); }
__declspec(allocate(".CRT$XCU")) static void(__cdecl *dpn__register_at_start_ptr)(void) = dpn__register_at_start;
#endif

/* >>data: the mini-batch iterator ------------------------------------------- */
/* The iterator keeps the order of the rows in an int64 array; its variable
   orders the shuffles (writes) against the gathers (reads). Each batch is
   a new pair of arrays, filled by a gather op on the IO pool that is pushed
   one batch ahead: while the caller's work on batch b runs, batch b + 1
   is being copied. */
struct dp_iter {
    dp_engine *eng;
    dp_ndarray *data, *label, *order;
    int64_t n, batch, nbatches, next;   /* next: the batch the prefetched one is */
    int shuffle, drop_last;
    dp_ndarray *pre_data, *pre_label;    /* the prefetched batch, or NULL */
};
typedef struct dpn__gather_arg { dp_ndarray *src[2], *dst[2], *order; int64_t start; } dpn__gather_arg;
static int dpn__gather_op(dp_run_ctx *rc, void *arg) {
    dpn__gather_arg *g = (dpn__gather_arg *)arg;
    const int64_t *order = (const int64_t *)dp_nd_data(g->order);
    int status = rc->input_status, i;
    for (i = 0; i < 2; i++) {
        int64_t r, rows;
        size_t row_bytes;
        if (!g->src[i]) continue;
        rows = (*dp_nd_shape(g->dst[i])).dims[0];
        row_bytes = dp_nd_bytes(g->src[i]) / (size_t)(*dp_nd_shape(g->src[i])).dims[0];
        for (r = 0; !status && r < rows; r++)
            memcpy((char *)dp_nd_data(g->dst[i]) + (size_t)r * row_bytes, (const char *)dp_nd_data(g->src[i]) + (size_t)order[g->start + r] * row_bytes, row_bytes);
        dp_nd_release(g->src[i]);
        dp_nd_release(g->dst[i]);
    }
    dp_nd_release(g->order);
    dp_engine_free(rc->engine, g, sizeof *g);
    return status;
}
typedef struct dpn__shuffle_arg { dp_ndarray *order; } dpn__shuffle_arg;
static int dpn__shuffle_op(dp_run_ctx *rc, void *arg) {      /* Fisher-Yates with the random resource */
    dpn__shuffle_arg *s = (dpn__shuffle_arg *)arg;
    int64_t *o = (int64_t *)dp_nd_data(s->order), i, n = (*dp_nd_shape(s->order)).dims[0];
    if (!rc->input_status)
        for (i = n - 1; i > 0; i--) {
            int64_t j = (int64_t)(dp_random_next(rc->engine, rc->ctx) % (uint64_t)(i + 1)), t = o[i];
            o[i] = o[j]; o[j] = t;
        }
    dp_nd_release(s->order);
    dp_engine_free(rc->engine, s, sizeof *s);
    return rc->input_status;
}
/* Makes the arrays of batch b and pushes the gather that fills them. */
static dp_result dpn__iter_prefetch(dp_iter *it) {
    dp_ndarray *dst[2] = {NULL, NULL}, *src[2];
    dpn__gather_arg *g;
    dp_var reads[3], writes[2];
    dp_push_desc d;
    dp_result r = DP_OK;
    int i, nw = 0;
    int64_t start = it->next * it->batch, rows;
    it->pre_data = it->pre_label = NULL;
    if (it->next >= it->nbatches) return DP_OK;
    rows = it->n - start < it->batch ? it->n - start : it->batch;
    src[0] = it->data; src[1] = it->label;
    for (i = 0; i < 2 && r == DP_OK; i++) {
        dp_shape s;
        if (!src[i]) continue;
        s = (*dp_nd_shape(src[i])); s.dims[0] = rows;
        r = dp_nd_empty(it->eng, &s, dp_nd_dtype(src[i]), dp_nd_ctx(src[i]), &dst[i]);
    }
    if (r != DP_OK || (g = (dpn__gather_arg *)dp_engine_alloc(it->eng, sizeof *g)) == NULL) {
        dp_nd_release(dst[0]); dp_nd_release(dst[1]);
        if (r != DP_OK) return r;
        DPN__LOG(it->eng, DP_LOG_ERROR, OUT_OF_MEMORY, "dp_iter_next: the batch's gather");
        return DP_ERROR_OUT_OF_MEMORY;
    }
    g->order = dp_nd_retain(it->order); g->start = start;
    reads[0] = dp_nd_var(it->order);
    for (i = 0; i < 2; i++) {
        g->src[i] = dp_nd_retain(src[i]); g->dst[i] = dp_nd_retain(dst[i]);
        if (src[i]) { reads[1 + nw] = dp_nd_var(src[i]); writes[nw++] = dp_nd_var(dst[i]); }
    }
    memset(&d, 0, sizeof d);
    d.fn = dpn__gather_op; d.arg = g; d.reads = reads; d.num_reads = 1 + nw; d.writes = writes; d.num_writes = nw;
    d.prop = DP_PROP_IO; d.no_skip = 1; d.name = "batch_gather";
    if ((r = dp_push(it->eng, &d)) != DP_OK) {
        dp_run_ctx rc;
        memset(&rc, 0, sizeof rc); rc.engine = it->eng; rc.input_status = r;
        dpn__gather_op(&rc, g);                  /* releases what it holds */
        dp_nd_release(dst[0]); dp_nd_release(dst[1]);
        return r;
    }
    it->pre_data = dst[0]; it->pre_label = dst[1];
    return DP_OK;
}
DPN_IMPL dp_result dp_iter_reset(dp_iter *it) {
    dpn__shuffle_arg *s;
    dp_push_desc d;
    dp_var writes[2];
    dp_ctx ctx;
    dp_result r;
    if (!it) return DP_ERROR_INVALID_ARGS;
    dp_nd_release(it->pre_data); dp_nd_release(it->pre_label);
    it->pre_data = it->pre_label = NULL;
    it->next = 0;
    if (it->shuffle) {
        ctx = dp_nd_ctx(it->order);
        if ((s = (dpn__shuffle_arg *)dp_engine_alloc(it->eng, sizeof *s)) == NULL) { DPN__LOG(it->eng, DP_LOG_ERROR, OUT_OF_MEMORY, "dp_iter_reset: the shuffle"); return DP_ERROR_OUT_OF_MEMORY; }
        s->order = dp_nd_retain(it->order);
        writes[0] = dp_nd_var(it->order); writes[1] = dp_random_var(it->eng, ctx);
        memset(&d, 0, sizeof d);
        d.fn = dpn__shuffle_op; d.arg = s; d.writes = writes; d.num_writes = 2; d.ctx = ctx;
        d.prop = DP_PROP_IO; d.no_skip = 1; d.name = "batch_shuffle";
        if ((r = dp_push(it->eng, &d)) != DP_OK) { dp_nd_release(s->order); dp_engine_free(it->eng, s, sizeof *s); return r; }
    }
    return dpn__iter_prefetch(it);
}
DPN_IMPL dp_result dp_iter_create(const dp_iter_desc *desc, dp_iter **out) {
    dp_nn_register();
    dp_engine *eng = desc && desc->data ? dp_nd_engine(desc->data) : NULL;
    dp_iter *it;
    dp_ctx ctx;
    dp_result r;
    int64_t n;
    if (out) *out = NULL;
    if (!desc || !out || !desc->data || desc->batch_size <= 0 || (*dp_nd_shape(desc->data)).ndim < 1
        || (desc->label && ((*dp_nd_shape(desc->label)).ndim < 1 || (*dp_nd_shape(desc->label)).dims[0] != (*dp_nd_shape(desc->data)).dims[0] || dp_nd_engine(desc->label) != eng))) {
        DPN__LOG(eng, DP_LOG_ERROR, ND_ARGS, "dp_iter_create: needs data with at least one axis, a batch_size > 0, and a label (if any) "
                "with as many rows on the same engine");
        return DP_ERROR_INVALID_ARGS;
    }
    ctx = dp_nd_ctx(desc->data);
    if (ctx.dev_type == DP_DEV_GPU || (desc->label && dp_nd_ctx(desc->label).dev_type == DP_DEV_GPU)) {
        DPN__LOG(eng, DP_LOG_ERROR, BAD_CONTEXT, "dp_iter_create: data and label must be CPU arrays (copy batches to the GPU)");
        return DP_ERROR_BAD_CONTEXT;
    }
    if ((it = (dp_iter *)dp_engine_alloc(eng, sizeof *it)) == NULL) { DPN__LOG(eng, DP_LOG_ERROR, OUT_OF_MEMORY, "dp_iter_create"); return DP_ERROR_OUT_OF_MEMORY; }
    memset(it, 0, sizeof *it);
    n = (*dp_nd_shape(desc->data)).dims[0];
    it->eng = eng; it->n = n; it->batch = desc->batch_size; it->shuffle = desc->shuffle; it->drop_last = desc->drop_last;
    it->nbatches = desc->drop_last ? n / it->batch : (n + it->batch - 1) / it->batch;
    if ((r = dp_nd_arange(eng, 0, (double)n, 1, DP_INT64, ctx, &it->order)) != DP_OK) { dp_engine_free(eng, it, sizeof *it); return r; }
    it->data = dp_nd_retain(desc->data);
    it->label = dp_nd_retain(desc->label);
    if ((r = dp_iter_reset(it)) != DP_OK) { dp_iter_destroy(it); return r; }
    *out = it;
    return DP_OK;
}
DPN_IMPL dp_result dp_iter_next(dp_iter *it, dp_ndarray **data, dp_ndarray **label) {
    if (data) *data = NULL;
    if (label) *label = NULL;
    if (!it || !data) { DPN__LOG(it ? it->eng : NULL, DP_LOG_ERROR, ND_ARGS, "dp_iter_next: NULL iterator or data"); return DP_ERROR_INVALID_ARGS; }
    if (!it->pre_data && it->next < it->nbatches) {       /* the last prefetch failed: once more */
        dp_result r = dpn__iter_prefetch(it);
        if (r != DP_OK) return r;
    }
    if (!it->pre_data) return DP_OK;                        /* the epoch is over */
    *data = it->pre_data;
    if (label) *label = it->pre_label; else dp_nd_release(it->pre_label);
    it->next++;
    (void)dpn__iter_prefetch(it);   /* failing, it is tried again (and reported) by the next call */
    return DP_OK;
}
DPN_IMPL int64_t dp_iter_num_batches(const dp_iter *it) { return it ? it->nbatches : 0; }
DPN_IMPL void dp_iter_destroy(dp_iter *it) {
    if (!it) return;
    dp_nd_release(it->pre_data); dp_nd_release(it->pre_label);
    dp_nd_release(it->data); dp_nd_release(it->label); dp_nd_release(it->order);
    dp_engine_free(it->eng, it, sizeof *it);
}

/* >>image data: idx files (MNIST), gzip, the image iterator ------------------ */
/* Reads a whole file into memory from the engine's allocator (*cap: the
   size to free it with), to its end whatever size the file reports. */
static dp_result dpn__read_file(dp_engine *eng, const char *what, const char *path, unsigned char **buf, size_t *len, size_t *cap) {
    FILE *f;
    size_t got;
    *buf = NULL; *len = 0; *cap = 0;
    if ((f = fopen(path, "rb")) == NULL) {
        DPN__LOG(eng, DP_LOG_ERROR, IO, "%s: %s: cannot open the file", what, path);
        return DP_ERROR_IO;
    }
    for (;;) {
        if (*len == *cap && dpn__reserve(eng, buf, cap, *len, 1, 65536) != 0) {
            fclose(f);
            if (*buf) dp_engine_free(eng, *buf, *cap);
            *buf = NULL; *cap = 0;
            DPN__LOG(eng, DP_LOG_ERROR, OUT_OF_MEMORY, "%s: %s: the file's bytes", what, path);
            return DP_ERROR_OUT_OF_MEMORY;
        }
        got = fread(*buf + *len, 1, *cap - *len, f);
        *len += got;
        if (got == 0) break;
    }
    if (ferror(f)) {
        fclose(f);
        if (*buf) dp_engine_free(eng, *buf, *cap);
        *buf = NULL; *cap = 0;
        DPN__LOG(eng, DP_LOG_ERROR, IO, "%s: %s: the file cannot be read (a directory?)", what, path);
        return DP_ERROR_IO;
    }
    fclose(f);
    return DP_OK;
}
static uint32_t dpn__get_le32(const unsigned char *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }
static uint32_t dpn__get_be32(const unsigned char *p) { return (uint32_t)p[3] | (uint32_t)p[2] << 8 | (uint32_t)p[1] << 16 | (uint32_t)p[0] << 24; }
static uint64_t dpn__get_le64(const unsigned char *p) { return (uint64_t)dpn__get_le32(p) | (uint64_t)dpn__get_le32(p + 4) << 32; }
DPN__COLD static dp_result dpn__format(dp_engine *eng, const char *what, const char *path, const char *fmt, ...) {
    char msg[320];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    DPN__LOG(eng, DP_LOG_ERROR, FORMAT, "%s: %s: %s", what, path, msg);
    return DP_ERROR_FORMAT;
}
/* One gzip member (RFC 1952) inflated into new bytes (*cap: their size to
   free). The declared size is bounded by deflate's best ratio (1032:1), so
   a forged trailer cannot ask for gigabytes from a small file. */
static dp_result dpn__gunzip(dp_engine *eng, const char *what, const char *path, const unsigned char *in, size_t len,
                             unsigned char **out, size_t *out_len, size_t *cap) {
    size_t pos = 10, got = 0, isize;
    unsigned flg;
    uint32_t crc;
    char why[160];
    *out = NULL; *out_len = 0; *cap = 0;
    if (len < 18) return dpn__format(eng, what, path, "truncated gzip file (%zu bytes; header and trailer need 18)", len);
    if (in[2] != 8) return dpn__format(eng, what, path, "gzip compression method %u (only 8, deflate, exists)", in[2]);
    flg = in[3];
    if (flg & 0xE0u) return dpn__format(eng, what, path, "gzip header sets reserved flag bits (0x%02x)", flg);
    if (flg & 4u) {                                   /* FEXTRA */
        if (len - 8 < pos + 2) return dpn__format(eng, what, path, "truncated gzip header (its extra field)");
        pos += 2 + ((size_t)in[pos] | (size_t)in[pos + 1] << 8);
    }
    if (flg & 8u) { while (pos < len - 8 && in[pos]) pos++; pos++; }     /* FNAME */
    if (flg & 16u) { while (pos < len - 8 && in[pos]) pos++; pos++; }    /* FCOMMENT */
    if (flg & 2u) pos += 2;                                              /* FHCRC */
    if (pos > len - 8) return dpn__format(eng, what, path, "truncated gzip header (its optional fields run into the trailer)");
    crc = dpn__get_le32(in + len - 8);
    isize = dpn__get_le32(in + len - 4);
    if (isize / 1032 > len - 8 - pos)
        return dpn__format(eng, what, path, "the gzip trailer declares %zu bytes, more than its %zu compressed bytes can inflate to (truncated?)", isize, len - 8 - pos);
    *cap = isize ? isize : 1;
    if ((*out = (unsigned char *)dp_engine_alloc(eng, *cap)) == NULL) {
        *cap = 0;
        DPN__LOG(eng, DP_LOG_ERROR, OUT_OF_MEMORY, "%s: %s: %zu inflated bytes", what, path, isize);
        return DP_ERROR_OUT_OF_MEMORY;
    }
    if (dp_inflate(in + pos, len - 8 - pos, *out, isize, &got, why, sizeof why) != DP_OK)
        snprintf(why + strlen(why), sizeof why - strlen(why), " (gzip)");
    else if (got != isize) snprintf(why, sizeof why, "the gzip stream inflates to %zu bytes, its trailer says %zu (truncated?)", got, isize);
    else if (dp_crc32(0, *out, got) != crc) snprintf(why, sizeof why, "the gzip stream fails its CRC-32 (0x%08x, the trailer says 0x%08x)", (unsigned)dp_crc32(0, *out, got), (unsigned)crc);
    else { *out_len = got; return DP_OK; }
    dp_engine_free(eng, *out, *cap);
    *out = NULL; *cap = 0;
    return dpn__format(eng, what, path, "%s", why);
}
/* A file's bytes, inflated when it is gzip (both freed with the sizes
   kept in *cap). */
static dp_result dpn__read_maybe_gz(dp_engine *eng, const char *what, const char *path, unsigned char **buf, size_t *len, size_t *cap) {
    unsigned char *raw, *plain;
    size_t rlen, rcap, plen, pcap;
    dp_result r = dpn__read_file(eng, what, path, &raw, &rlen, &rcap);
    if (r != DP_OK) return r;
    if (rlen < 2 || raw[0] != 0x1f || raw[1] != 0x8b) { *buf = raw; *len = rlen; *cap = rcap; return DP_OK; }
    r = dpn__gunzip(eng, what, path, raw, rlen, &plain, &plen, &pcap);
    dp_engine_free(eng, raw, rcap);
    *buf = plain; *len = plen; *cap = pcap;
    return r;
}
DPN_IMPL dp_result dp_nd_load_idx(dp_engine *eng, const char *path, dp_ctx ctx, dp_ndarray **out) {
    static const char *what = "dp_nd_load_idx";
    unsigned char *buf, *conv = NULL;
    size_t len, cap, esize, need, conv_bytes = 0;
    dp_shape shape;
    dp_dtype dt;
    dp_result r;
    int64_t count = 1, i;
    int k, type;
    if (out) *out = NULL;
    if (!eng || !path || !out) { DPN__LOG(eng, DP_LOG_ERROR, ND_ARGS, "%s: NULL engine, path or out", what); return DP_ERROR_INVALID_ARGS; }
    if ((r = dpn__read_maybe_gz(eng, what, path, &buf, &len, &cap)) != DP_OK) return r;
    if (len < 4) { r = dpn__format(eng, what, path, "truncated: %zu bytes, less than the 4-byte magic", len); goto done; }
    if (buf[0] || buf[1]) { r = dpn__format(eng, what, path, "bad magic 0x%02x%02x%02x%02x (an idx file starts with two zero bytes)", buf[0], buf[1], buf[2], buf[3]); goto done; }
    type = buf[2];
    switch (type) {
    case 0x08: dt = DP_UINT8; esize = 1; break;
    case 0x09: dt = DP_INT8; esize = 1; break;
    case 0x0B: dt = DP_INT32; esize = 2; break;
    case 0x0C: dt = DP_INT32; esize = 4; break;
    case 0x0D: dt = DP_FLOAT32; esize = 4; break;
    case 0x0E: dt = DP_FLOAT64; esize = 8; break;
    default: r = dpn__format(eng, what, path, "unknown data type byte 0x%02x (0x08, 0x09, 0x0B, 0x0C, 0x0D or 0x0E)", (unsigned)type); goto done;
    }
    memset(&shape, 0, sizeof shape);
    shape.ndim = buf[3];
    if (shape.ndim < 1 || shape.ndim > DP_MAX_DIMS) { r = dpn__format(eng, what, path, "%d dimensions (1 to %d are read)", (int)shape.ndim, DP_MAX_DIMS); goto done; }
    if (len < 4 + 4 * (size_t)shape.ndim) { r = dpn__format(eng, what, path, "truncated: %zu bytes, the header of %d dimensions needs %zu", len, (int)shape.ndim, 4 + 4 * (size_t)shape.ndim); goto done; }
    for (k = 0; k < shape.ndim; k++) {
        shape.dims[k] = dpn__get_be32(buf + 4 + 4 * k);
        if (shape.dims[k] && count > INT64_MAX / 8 / shape.dims[k]) { r = dpn__format(eng, what, path, "the shape's size overflows"); goto done; }
        count *= shape.dims[k];
    }
    need = (size_t)count * esize;
    if (len - 4 - 4 * (size_t)shape.ndim != need) {
        char sbuf[160];
        size_t have = len - 4 - 4 * (size_t)shape.ndim;
        r = dpn__format(eng, what, path, "%s: the shape %s needs %zu bytes of data, the file has %zu", have < need ? "truncated" : "size mismatch",
                        dpn__shape_str(&shape, sbuf, sizeof sbuf), need, have);
        goto done;
    }
    if (esize > 1) {                  /* big-endian to the host's values, byte by byte (any host) */
        const unsigned char *p = buf + 4 + 4 * (size_t)shape.ndim;
        conv_bytes = (size_t)count * dp_dtype_size(dt);
        if ((conv = (unsigned char *)dp_engine_alloc(eng, conv_bytes ? conv_bytes : 1)) == NULL) {
            DPN__LOG(eng, DP_LOG_ERROR, OUT_OF_MEMORY, "%s: %s: the converted data", what, path);
            r = DP_ERROR_OUT_OF_MEMORY;
            goto done;
        }
        for (i = 0; i < count; i++, p += esize) {
            if (type == 0x0B) { int32_t v = (int16_t)(uint16_t)((unsigned)p[0] << 8 | p[1]); memcpy(conv + 4 * i, &v, 4); }
            else if (esize == 4) { uint32_t v = dpn__get_be32(p); memcpy(conv + 4 * i, &v, 4); }
            else { uint64_t v = (uint64_t)dpn__get_be32(p) << 32 | dpn__get_be32(p + 4); memcpy(conv + 8 * i, &v, 8); }
        }
    }
    r = dp_nd_from_host(eng, &shape, dt, ctx, conv ? conv : buf + 4 + 4 * (size_t)shape.ndim, out);
done:
    if (conv) dp_engine_free(eng, conv, conv_bytes ? conv_bytes : 1);
    dp_engine_free(eng, buf, cap);
    return r;
}
DPN_IMPL dp_result dp_nd_load_mnist(dp_engine *eng, const char *images, const char *labels, dp_ctx ctx, dp_ndarray **data, dp_ndarray **label) {
    static const char *what = "dp_nd_load_mnist";
    dp_result r;
    if (data) *data = NULL;
    if (label) *label = NULL;
    if (!eng || !images || !labels || !data || !label) { DPN__LOG(eng, DP_LOG_ERROR, ND_ARGS, "%s: NULL argument", what); return DP_ERROR_INVALID_ARGS; }
    if ((r = dp_nd_load_idx(eng, images, ctx, data)) != DP_OK) return r;
    if ((r = dp_nd_load_idx(eng, labels, ctx, label)) != DP_OK) { dp_nd_release(*data); *data = NULL; return r; }
    if (dp_nd_shape(*data)->ndim < 3 || dp_nd_shape(*data)->ndim > 4) r = dpn__format(eng, what, images, "images of %d dimensions (need (n, rows, cols) or (n, c, rows, cols))", (int)dp_nd_shape(*data)->ndim);
    else if (dp_nd_shape(*label)->ndim != 1) r = dpn__format(eng, what, labels, "labels of %d dimensions (need (n,))", (int)dp_nd_shape(*label)->ndim);
    else if (dp_nd_shape(*data)->dims[0] != dp_nd_shape(*label)->dims[0])
        r = dpn__format(eng, what, images, "labels/images count mismatch: %lld images, but %s holds %lld labels",
                        (long long)dp_nd_shape(*data)->dims[0], labels, (long long)dp_nd_shape(*label)->dims[0]);
    if (r != DP_OK) { dp_nd_release(*data); dp_nd_release(*label); *data = *label = NULL; }
    return r;
}

/* The image iterator. The epoch's sequence is the rolled-over images, then
   the part's order; batch b is its items [b * batch, (b + 1) * batch),
   PAD's last one completed from the order's start. Each batch's rows, crop
   offsets and flips are drawn in the caller's thread when its operation
   is pushed (one batch ahead), and the operation (IO pool) decodes and
   augments into new arrays. */
struct dp_image_iter {
    dp_engine *eng;
    dp_ndarray *data, *label;
    int64_t lo, n, c, h, w, oh, ow, label_row;   /* label_row: label elements per row */
    int batch, shuffle, pad, rand_crop, rand_mirror, flat;
    dp_last_batch last;
    double fill, scale;
    float *norm;                /* mean[c] then std[c] */
    int64_t *order, *carry;     /* order: n rows; carry: up to batch - 1 rows */
    int64_t ncarry, nbatches, next, epoch;
    uint64_t rng;
    dp_ndarray *pre_data, *pre_label;
    int pre_pad;
};
typedef struct dpn__imgbatch_arg {
    dp_ndarray *src, *src_label, *dst, *dst_label;
    int64_t c, h, w, oh, ow, label_row;
    int batch, pad;
    double fill, scale;
    float *norm;               /* a copy: 2 * c */
    int64_t *rows;             /* batch rows, then offy, offx, flip per image */
} dpn__imgbatch_arg;
static uint64_t dpn__rng_next(uint64_t *s) {        /* splitmix64 */
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
static int64_t dpn__rng_below(uint64_t *s, int64_t k) { return k <= 1 ? 0 : (int64_t)(dpn__rng_next(s) % (uint64_t)k); }
static size_t dpn__imgbatch_size(int64_t batch, int64_t c) { return sizeof(dpn__imgbatch_arg) + (size_t)c * 2 * sizeof(float) + (size_t)batch * 4 * sizeof(int64_t); }
static void dpn__imgbatch_free(void *arg) {
    dpn__imgbatch_arg *a = (dpn__imgbatch_arg *)arg;
    dp_engine *eng = dp_nd_engine(a->dst);
    dp_nd_release(a->src); dp_nd_release(a->src_label); dp_nd_release(a->dst); dp_nd_release(a->dst_label);
    dp_engine_free(eng, a, dpn__imgbatch_size(a->batch, a->c));
}
static int dpn__imgbatch_op(dp_run_ctx *rc, void *arg) {
    dpn__imgbatch_arg *a = (dpn__imgbatch_arg *)arg;
    dp_dtype st = dp_nd_dtype(a->src);
    const void *src = dp_nd_data(a->src);
    float *dst = (float *)dp_nd_data(a->dst);
    int64_t b, ch, y, x, plane = a->h * a->w, oplane = a->oh * a->ow;
    if (rc->input_status) return rc->input_status;
    for (b = 0; b < a->batch; b++) {
        int64_t row = a->rows[b], oy = a->rows[a->batch + b], ox = a->rows[2 * a->batch + b], flip = a->rows[3 * a->batch + b];
        for (ch = 0; ch < a->c; ch++) {
            double mean = a->norm[ch], inv = a->scale / a->norm[a->c + ch];
            int64_t base = (row * a->c + ch) * plane;
            float *o = dst + (b * a->c + ch) * oplane;
            for (y = 0; y < a->oh; y++) {
                int64_t sy = y + oy - a->pad;
                for (x = 0; x < a->ow; x++) {
                    int64_t sx = (flip ? a->ow - 1 - x : x) + ox - a->pad;
                    double v = sy >= 0 && sy < a->h && sx >= 0 && sx < a->w ? (st == DP_UINT8 ? (double)((const unsigned char *)src)[base + sy * a->w + sx]
                                                                                                : dp_dtype_load(st, src, base + sy * a->w + sx)) : a->fill;
                    o[y * a->ow + x] = (float)((v - mean) * inv);
                }
            }
        }
        if (a->dst_label) {
            int64_t j;
            for (j = 0; j < a->label_row; j++)
                ((float *)dp_nd_data(a->dst_label))[b * a->label_row + j] = (float)dp_dtype_load(dp_nd_dtype(a->src_label), dp_nd_data(a->src_label), row * a->label_row + j);
        }
    }
    return 0;
}
/* The epoch's item i (rolled-over rows first; PAD wraps around the order). */
static int64_t dpn__imgiter_item(const dp_image_iter *it, int64_t i) {
    if (i < it->ncarry) return it->carry[i];
    return it->order[(i - it->ncarry) % it->n];
}
static dp_result dpn__imgiter_prefetch(dp_image_iter *it) {
    dpn__imgbatch_arg *a;
    dp_shape s;
    dp_var reads[2], writes[2];
    dp_push_desc d;
    dp_ctx cpu;
    dp_result r;
    int64_t b, first = it->next * it->batch, total = it->ncarry + it->n;
    size_t bytes = dpn__imgbatch_size(it->batch, it->c);
    it->pre_data = it->pre_label = NULL; it->pre_pad = 0;
    if (it->next >= it->nbatches) return DP_OK;
    if ((a = (dpn__imgbatch_arg *)dp_engine_alloc(it->eng, bytes)) == NULL) {
        DPN__LOG(it->eng, DP_LOG_ERROR, OUT_OF_MEMORY, "dp_image_iter_next: the batch's operation");
        return DP_ERROR_OUT_OF_MEMORY;
    }
    memset(a, 0, sizeof *a);
    a->norm = (float *)(a + 1);
    a->rows = (int64_t *)(void *)(a->norm + 2 * it->c);
    memcpy(a->norm, it->norm, (size_t)it->c * 2 * sizeof(float));
    a->c = it->c; a->h = it->h; a->w = it->w; a->oh = it->oh; a->ow = it->ow; a->label_row = it->label_row;
    a->batch = it->batch; a->pad = it->pad; a->fill = it->fill; a->scale = it->scale;
    for (b = 0; b < it->batch; b++) {
        a->rows[b] = it->lo + dpn__imgiter_item(it, first + b);
        a->rows[it->batch + b] = it->rand_crop ? dpn__rng_below(&it->rng, it->h + 2 * it->pad - it->oh + 1) : (it->h + 2 * it->pad - it->oh) / 2;
        a->rows[2 * it->batch + b] = it->rand_crop ? dpn__rng_below(&it->rng, it->w + 2 * it->pad - it->ow + 1) : (it->w + 2 * it->pad - it->ow) / 2;
        a->rows[3 * it->batch + b] = it->rand_mirror ? (int64_t)(dpn__rng_next(&it->rng) >> 63) : 0;
    }
    memset(&s, 0, sizeof s);
    if (it->flat) { s.ndim = 2; s.dims[0] = it->batch; s.dims[1] = it->c * it->oh * it->ow; }
    else { s.ndim = 4; s.dims[0] = it->batch; s.dims[1] = it->c; s.dims[2] = it->oh; s.dims[3] = it->ow; }
    cpu = dp_nd_ctx(it->data);
    if ((r = dp_nd_empty(it->eng, &s, DP_FLOAT32, cpu, &a->dst)) != DP_OK) { dp_engine_free(it->eng, a, bytes); return r; }
    if (it->label) {
        s = *dp_nd_shape(it->label); s.dims[0] = it->batch;
        if ((r = dp_nd_empty(it->eng, &s, DP_FLOAT32, cpu, &a->dst_label)) != DP_OK) { dp_nd_release(a->dst); dp_engine_free(it->eng, a, bytes); return r; }
    }
    a->src = dp_nd_retain(it->data); a->src_label = dp_nd_retain(it->label);
    reads[0] = dp_nd_var(it->data); writes[0] = dp_nd_var(a->dst);
    if (it->label) { reads[1] = dp_nd_var(it->label); writes[1] = dp_nd_var(a->dst_label); }
    memset(&d, 0, sizeof d);
    d.fn = dpn__imgbatch_op; d.arg = a; d.cleanup = dpn__imgbatch_free; d.reads = reads; d.writes = writes;
    d.num_reads = d.num_writes = it->label ? 2 : 1; d.ctx = cpu; d.prop = DP_PROP_IO; d.name = "image_batch";
    it->pre_data = dp_nd_retain(a->dst); it->pre_label = dp_nd_retain(a->dst_label);
    it->pre_pad = first + it->batch > total ? (int)(first + it->batch - total) : 0;
    if ((r = dp_push(it->eng, &d)) != DP_OK) {     /* the cleanup has run */
        dp_nd_release(it->pre_data); dp_nd_release(it->pre_label);
        it->pre_data = it->pre_label = NULL; it->pre_pad = 0;
    }
    return r;
}
static void dpn__imgiter_count(dp_image_iter *it) {
    int64_t total = it->ncarry + it->n;
    it->nbatches = it->last == DP_LAST_BATCH_PAD ? (total + it->batch - 1) / it->batch : total / it->batch;
}
DPN_IMPL dp_result dp_image_iter_reset(dp_image_iter *it) {
    int64_t i, total;
    if (!it) return DP_ERROR_INVALID_ARGS;
    dp_nd_release(it->pre_data); dp_nd_release(it->pre_label);
    it->pre_data = it->pre_label = NULL;
    total = it->ncarry + it->n;
    if (it->last == DP_LAST_BATCH_ROLL_OVER && it->epoch > 0 && it->next >= it->nbatches && it->nbatches * it->batch < total) {
        int64_t k = 0, *tmp = it->carry + it->batch;   /* the second half: room to build the new carry */
        for (i = it->nbatches * it->batch; i < total; i++) tmp[k++] = dpn__imgiter_item(it, i);
        memcpy(it->carry, tmp, (size_t)k * sizeof *tmp);
        it->ncarry = k;
    } else it->ncarry = 0;
    for (i = 0; i < it->n; i++) it->order[i] = i;
    for (i = it->n - 1; it->shuffle && i > 0; i--) {
        int64_t j = dpn__rng_below(&it->rng, i + 1), t = it->order[i];
        it->order[i] = it->order[j]; it->order[j] = t;
    }
    it->next = 0;
    it->epoch++;
    dpn__imgiter_count(it);
    return dpn__imgiter_prefetch(it);
}
static size_t dpn__imgiter_bytes(int64_t n, int64_t batch, int64_t c) { return sizeof(dp_image_iter) + (size_t)(n + 2 * batch) * sizeof(int64_t) + (size_t)c * 2 * sizeof(float); }
DPN_IMPL dp_result dp_image_iter_create(const dp_image_iter_desc *desc, dp_image_iter **out) {
    static const char *what = "dp_image_iter_create";
    dp_engine *eng = desc && desc->data ? dp_nd_engine(desc->data) : NULL;
    const dp_shape *ds;
    dp_image_iter *it;
    int64_t c, h, w, N, lo, hi, oh, ow, k;
    int parts, part;
    dp_result r;
    if (out) *out = NULL;
    if (!desc || !out || !desc->data) { DPN__LOG(eng, DP_LOG_ERROR, ND_ARGS, "%s: NULL desc, out or data", what); return DP_ERROR_INVALID_ARGS; }
    ds = dp_nd_shape(desc->data);
    if (ds->ndim != 3 && ds->ndim != 4) { DPN__LOG(eng, DP_LOG_ERROR, ND_ARGS, "%s: data of %d dimensions (need (n, h, w) or (n, c, h, w))", what, (int)ds->ndim); return DP_ERROR_INVALID_ARGS; }
    N = ds->dims[0]; c = ds->ndim == 4 ? ds->dims[1] : 1; h = ds->dims[ds->ndim - 2]; w = ds->dims[ds->ndim - 1];
    if (dp_nd_ctx(desc->data).dev_type == DP_DEV_GPU || (desc->label && dp_nd_ctx(desc->label).dev_type == DP_DEV_GPU)) {
        DPN__LOG(eng, DP_LOG_ERROR, BAD_CONTEXT, "%s: data and label must be CPU arrays (copy batches to the GPU)", what);
        return DP_ERROR_BAD_CONTEXT;
    }
    if (desc->label && (dp_nd_shape(desc->label)->ndim < 1 || dp_nd_shape(desc->label)->dims[0] != N || dp_nd_engine(desc->label) != eng)) {
        DPN__LOG(eng, DP_LOG_ERROR, ND_ARGS, "%s: the label needs %lld rows, like the data, on the same engine", what, (long long)N);
        return DP_ERROR_INVALID_ARGS;
    }
    if (desc->batch_size <= 0 || desc->pad < 0 || (unsigned)desc->last_batch > (unsigned)DP_LAST_BATCH_ROLL_OVER || desc->crop_h < 0 || desc->crop_w < 0) {
        DPN__LOG(eng, DP_LOG_ERROR, ND_ARGS, "%s: batch_size %d (> 0), pad %d (>= 0), crop %d x %d (>= 0), last_batch %d (PAD, DISCARD or ROLL_OVER)",
                 what, desc->batch_size, desc->pad, desc->crop_h, desc->crop_w, (int)desc->last_batch);
        return DP_ERROR_INVALID_ARGS;
    }
    oh = desc->crop_h ? desc->crop_h : h; ow = desc->crop_w ? desc->crop_w : w;
    if (oh > h + 2 * (int64_t)desc->pad || ow > w + 2 * (int64_t)desc->pad) {
        DPN__LOG(eng, DP_LOG_ERROR, ND_ARGS, "%s: a crop of %lld x %lld is larger than the padded image (%lld x %lld with pad %d)", what,
                 (long long)oh, (long long)ow, (long long)(h + 2 * desc->pad), (long long)(w + 2 * desc->pad), desc->pad);
        return DP_ERROR_INVALID_ARGS;
    }
    parts = desc->num_parts ? desc->num_parts : 1; part = desc->part_index;
    if (parts < 0 || part < 0 || part >= parts) { DPN__LOG(eng, DP_LOG_ERROR, ND_ARGS, "%s: part_index %d of num_parts %d (need 0 <= part_index < num_parts)", what, part, parts); return DP_ERROR_INVALID_ARGS; }
    lo = N * part / parts; hi = N * (part + 1) / parts;
    if (hi <= lo || (desc->last_batch == DP_LAST_BATCH_DISCARD && hi - lo < desc->batch_size)) {
        DPN__LOG(eng, DP_LOG_ERROR, ND_ARGS, "%s: part %d of %d holds %lld rows (of %lld): %s", what, part, parts, (long long)(hi - lo), (long long)N,
                 hi <= lo ? "none" : "fewer than a batch, and DISCARD would give no batch");
        return DP_ERROR_INVALID_ARGS;
    }
    for (k = 0; desc->std && k < c; k++)
        if (!(desc->std[k] != 0)) { DPN__LOG(eng, DP_LOG_ERROR, ND_ARGS, "%s: std[%lld] is %g (must be non-zero)", what, (long long)k, (double)desc->std[k]); return DP_ERROR_INVALID_ARGS; }
    if ((it = (dp_image_iter *)dp_engine_alloc(eng, dpn__imgiter_bytes(hi - lo, desc->batch_size, c))) == NULL) {
        DPN__LOG(eng, DP_LOG_ERROR, OUT_OF_MEMORY, "%s", what);
        return DP_ERROR_OUT_OF_MEMORY;
    }
    memset(it, 0, sizeof *it);
    it->eng = eng; it->lo = lo; it->n = hi - lo; it->c = c; it->h = h; it->w = w; it->oh = oh; it->ow = ow;
    it->label_row = desc->label ? dp_shape_size(dp_nd_shape(desc->label)) / (N ? N : 1) : 0;
    it->batch = desc->batch_size; it->shuffle = desc->shuffle; it->pad = desc->pad; it->rand_crop = desc->rand_crop;
    it->rand_mirror = desc->rand_mirror; it->flat = desc->flat; it->last = desc->last_batch; it->fill = desc->fill_value;
    it->scale = desc->scale != 0 ? desc->scale : 1.0; it->rng = desc->seed;
    it->order = (int64_t *)(void *)(it + 1);
    it->carry = it->order + it->n;
    it->norm = (float *)(void *)(it->carry + 2 * (int64_t)it->batch);
    for (k = 0; k < c; k++) { it->norm[k] = desc->mean ? desc->mean[k] : 0.0f; it->norm[c + k] = desc->std ? desc->std[k] : 1.0f; }
    it->data = dp_nd_retain(desc->data); it->label = dp_nd_retain(desc->label);
    if ((r = dp_image_iter_reset(it)) != DP_OK) { dp_image_iter_destroy(it); return r; }
    *out = it;
    return DP_OK;
}
DPN_IMPL dp_result dp_image_iter_next(dp_image_iter *it, dp_ndarray **data, dp_ndarray **label, int *pad) {
    if (data) *data = NULL;
    if (label) *label = NULL;
    if (pad) *pad = 0;
    if (!it || !data) { DPN__LOG(it ? it->eng : NULL, DP_LOG_ERROR, ND_ARGS, "dp_image_iter_next: NULL iterator or data"); return DP_ERROR_INVALID_ARGS; }
    if (!it->pre_data && it->next < it->nbatches) {     /* the last push failed: once more */
        dp_result r = dpn__imgiter_prefetch(it);
        if (r != DP_OK) return r;
    }
    if (!it->pre_data) return DP_OK;
    *data = it->pre_data;
    if (label) *label = it->pre_label; else dp_nd_release(it->pre_label);
    if (pad) *pad = it->pre_pad;
    it->next++;
    (void)dpn__imgiter_prefetch(it);   /* failing, it is tried again (and reported) by the next call */
    return DP_OK;
}
DPN_IMPL int64_t dp_image_iter_num_batches(const dp_image_iter *it) { return it ? it->nbatches : 0; }
DPN_IMPL void dp_image_iter_destroy(dp_image_iter *it) {
    if (!it) return;
    dp_nd_release(it->pre_data); dp_nd_release(it->pre_label);
    dp_nd_release(it->data); dp_nd_release(it->label);
    dp_engine_free(it->eng, it, dpn__imgiter_bytes(it->n, it->batch, it->c));
}

/* >>checkpoints: MXNet's .params files and the symbol + parameters pair ---- */
#define DPN__PARAMS_LIST_MAGIC 0x112u
#define DPN__ND_V1_MAGIC 0xF993fac8u
#define DPN__ND_V2_MAGIC 0xF993fac9u
#define DPN__ND_V3_MAGIC 0xF993facau
/* mshadow's type flags of the dtypes, in dp_dtype order */
static const int32_t dpn__mx_type_flag[DP_DTYPE_COUNT] = {0, 1, 4, 6, 3, 2, 7, 5};
static int dpn__dtype_of_mx_flag(int32_t flag, dp_dtype *out) {
    int t;
    for (t = 0; t < DP_DTYPE_COUNT; t++) if (dpn__mx_type_flag[t] == flag) { *out = (dp_dtype)t; return 1; }
    return 0;
}
static void dpn__put_le(unsigned char *p, uint64_t v, int bytes) { int i; for (i = 0; i < bytes; i++) p[i] = (unsigned char)(v >> (8 * i)); }
static int dpn__fput_le(FILE *f, uint64_t v, int bytes) { unsigned char b[8]; dpn__put_le(b, v, bytes); return fwrite(b, 1, (size_t)bytes, f) == (size_t)bytes; }
DPN_IMPL dp_result dp_nd_save_params(const char *path, const dp_nd_named *arrays, int count, dp_failure *failure) {
    static const char *what = "dp_nd_save_params";
    dp_engine *eng = count > 0 && arrays && arrays[0].array ? dp_nd_engine(arrays[0].array) : NULL;
    FILE *f;
    int i, named = 0, ok;
    dp_result r = DP_OK;
    if (failure) memset(failure, 0, sizeof *failure);
    if (!path || count < 0 || (count > 0 && !arrays)) { DPN__LOG(eng, DP_LOG_ERROR, ND_ARGS, "%s: NULL path or arrays, or a negative count", what); return DP_ERROR_INVALID_ARGS; }
    for (i = 0; i < count; i++) {
        if (!arrays[i].array) { DPN__LOG(eng, DP_LOG_ERROR, ND_ARGS, "%s: %s: array %d ('%.127s') is NULL", what, path, i, arrays[i].name); return DP_ERROR_INVALID_ARGS; }
        if (arrays[i].name[0]) named++;
    }
    if (named && named != count) { DPN__LOG(eng, DP_LOG_ERROR, ND_ARGS, "%s: %s: %d of %d arrays are named (all or none)", what, path, named, count); return DP_ERROR_INVALID_ARGS; }
    if ((f = fopen(path, "wb")) == NULL) { DPN__LOG(eng, DP_LOG_ERROR, IO, "%s: %s: cannot open the file for writing", what, path); return DP_ERROR_IO; }
    ok = dpn__fput_le(f, DPN__PARAMS_LIST_MAGIC, 8) && dpn__fput_le(f, 0, 8) && dpn__fput_le(f, (uint64_t)count, 8);
    for (i = 0; ok && r == DP_OK && i < count; i++) {
        dp_ndarray *a = arrays[i].array;
        const dp_shape *s = dp_nd_shape(a);
        dp_ctx c = dp_nd_ctx(a);
        size_t bytes = dp_nd_bytes(a);
        void *host;
        int k;
        /* version 2 cannot say "scalar" (its ndim 0 is a none array): a 0-d array is written as version 3 */
        ok = dpn__fput_le(f, s->ndim ? DPN__ND_V2_MAGIC : DPN__ND_V3_MAGIC, 4) && dpn__fput_le(f, 0, 4) && dpn__fput_le(f, (uint64_t)(uint32_t)s->ndim, 4);
        for (k = 0; ok && k < s->ndim; k++) ok = dpn__fput_le(f, (uint64_t)s->dims[k], 8);
        ok = ok && dpn__fput_le(f, (uint64_t)(uint32_t)(c.dev_type ? c.dev_type : DP_DEV_CPU), 4) && dpn__fput_le(f, (uint64_t)(uint32_t)c.dev_id, 4)
                && dpn__fput_le(f, (uint64_t)(uint32_t)dpn__mx_type_flag[dp_nd_dtype(a)], 4);
        if (!ok) break;
        if ((host = dp_engine_alloc(dp_nd_engine(a), bytes ? bytes : 1)) == NULL) {
            DPN__LOG(dp_nd_engine(a), DP_LOG_ERROR, OUT_OF_MEMORY, "%s: %s: array %d's bytes", what, path, i);
            r = DP_ERROR_OUT_OF_MEMORY;
            break;
        }
        if ((r = dp_nd_read(a, host, bytes, failure)) == DP_OK) ok = fwrite(host, 1, bytes, f) == bytes;
        dp_engine_free(dp_nd_engine(a), host, bytes ? bytes : 1);
    }
    ok = ok && dpn__fput_le(f, (uint64_t)named, 8);
    for (i = 0; ok && i < named; i++) {
        size_t n = strlen(arrays[i].name);
        ok = dpn__fput_le(f, n, 8) && fwrite(arrays[i].name, 1, n, f) == n;
    }
    if (fclose(f) != 0) ok = 0;
    if (r != DP_OK) return r;
    if (!ok) { DPN__LOG(eng, DP_LOG_ERROR, IO, "%s: %s: the file cannot be written", what, path); return DP_ERROR_IO; }
    return DP_OK;
}
typedef struct dpn__rd { const unsigned char *p; size_t len, pos; } dpn__rd;
static int dpn__rd_take(dpn__rd *rd, size_t n, const unsigned char **out) {
    if (rd->len - rd->pos < n) return 0;
    *out = rd->p + rd->pos; rd->pos += n;
    return 1;
}
static int dpn__rd_u32(dpn__rd *rd, uint32_t *v) { const unsigned char *b; if (!dpn__rd_take(rd, 4, &b)) return 0; *v = dpn__get_le32(b); return 1; }
static int dpn__rd_u64(dpn__rd *rd, uint64_t *v) { const unsigned char *b; if (!dpn__rd_take(rd, 8, &b)) return 0; *v = dpn__get_le64(b); return 1; }
/* One array at rd: its shape, dtype and bytes (a pointer into the file).
   Returns NULL or the reason it is refused. */
static const char *dpn__params_array(dpn__rd *rd, dp_shape *shape, dp_dtype *dt, const unsigned char **bytes, size_t *nbytes, char *why, size_t cap) {
    uint32_t magic, u, ndim;
    int32_t dev_type, flag;
    int legacy, k;
    int64_t count = 1;
    memset(shape, 0, sizeof *shape);
    if (!dpn__rd_u32(rd, &magic)) return "truncated (an array's magic)";
    legacy = magic != DPN__ND_V1_MAGIC && magic != DPN__ND_V2_MAGIC && magic != DPN__ND_V3_MAGIC;
    if (legacy && magic > DP_MAX_DIMS) { snprintf(why, cap, "unknown array magic 0x%08x (0xF993fac8, 0xF993fac9, 0xF993faca, or an old file's ndim)", (unsigned)magic); return why; }
    if (magic == DPN__ND_V2_MAGIC || magic == DPN__ND_V3_MAGIC) {
        if (!dpn__rd_u32(rd, &u)) return "truncated (an array's storage type)";
        if (u != 0) { snprintf(why, cap, "storage type %d (sparse: row_sparse 1, csr 2) is not read; only dense (0)", (int)(int32_t)u); return why; }
    }
    if (legacy) ndim = magic;
    else if (!dpn__rd_u32(rd, &ndim)) return "truncated (an array's ndim)";
    if (ndim == 0xFFFFFFFFu || (ndim == 0 && magic != DPN__ND_V3_MAGIC)) return "a none array (no shape) is not read";
    if (ndim > DP_MAX_DIMS) { snprintf(why, cap, "%u dimensions (at most %d)", (unsigned)ndim, DP_MAX_DIMS); return why; }
    shape->ndim = (int32_t)ndim;
    for (k = 0; k < (int)ndim; k++) {
        uint64_t d;
        if (legacy) { if (!dpn__rd_u32(rd, &u)) return "truncated (an array's shape)"; d = u; }
        else if (!dpn__rd_u64(rd, &d)) return "truncated (an array's shape)";
        if (d > (uint64_t)INT64_MAX) { snprintf(why, cap, "dimension %d is negative (%lld)", k, (long long)(int64_t)d); return why; }
        shape->dims[k] = (int64_t)d;
        if (d && count > INT64_MAX / 8 / (int64_t)d) return "the shape's size overflows";
        count *= (int64_t)d;
    }
    if (!dpn__rd_u32(rd, &u)) return "truncated (an array's device type)";
    dev_type = (int32_t)u;
    if (!dpn__rd_u32(rd, &u)) return "truncated (an array's device id)";
    if (dev_type != 1 && dev_type != 2 && dev_type != 3 && dev_type != 5) { snprintf(why, cap, "unknown device type %d (1 cpu, 2 gpu, 3 cpu_pinned, 5 cpu_shared)", (int)dev_type); return why; }
    if (!dpn__rd_u32(rd, &u)) return "truncated (an array's type flag)";
    flag = (int32_t)u;
    if (!dpn__dtype_of_mx_flag(flag, dt)) { snprintf(why, cap, "type flag %d has no dtype here (0-7: float32, float64, float16, uint8, int32, int8, int64, bool)", (int)flag); return why; }
    *nbytes = (size_t)count * dp_dtype_size(*dt);
    if (!dpn__rd_take(rd, *nbytes, bytes)) { snprintf(why, cap, "truncated: its data needs %zu bytes, %zu are left", *nbytes, rd->len - rd->pos); return why; }
    return NULL;
}
static void dpn__named_release(dp_nd_named *a, int n) { int i; for (i = 0; i < n; i++) { dp_nd_release(a[i].array); a[i].array = NULL; a[i].name[0] = 0; } }
DPN_IMPL dp_result dp_nd_load_params(dp_engine *eng, const char *path, dp_ctx ctx, dp_nd_named *out, int cap, int *count) {
    static const char *what = "dp_nd_load_params";
    unsigned char *buf;
    size_t len, bufcap;
    dpn__rd rd;
    uint64_t magic, reserved, n, nnames, i;
    dp_result r;
    char why[200];
    const char *bad = NULL;
    int made = 0;
    if (count) *count = 0;
    if (!eng || !path || (!out && cap > 0) || !count || cap < 0) { DPN__LOG(eng, DP_LOG_ERROR, ND_ARGS, "%s: NULL engine, path, out or count, or a negative cap", what); return DP_ERROR_INVALID_ARGS; }
    if ((r = dpn__read_file(eng, what, path, &buf, &len, &bufcap)) != DP_OK) return r;
    rd.p = buf; rd.len = len; rd.pos = 0;
    if (!dpn__rd_u64(&rd, &magic) || !dpn__rd_u64(&rd, &reserved) || !dpn__rd_u64(&rd, &n)) { r = dpn__format(eng, what, path, "truncated: %zu bytes, the header needs 24", len); goto fail; }
    if (magic != DPN__PARAMS_LIST_MAGIC) { r = dpn__format(eng, what, path, "bad magic 0x%llx (an NDArray list starts with 0x112)", (unsigned long long)magic); goto fail; }
    if (n > (uint64_t)cap) { r = dpn__format(eng, what, path, "%llu arrays, more than the %d asked for", (unsigned long long)n, cap); goto fail; }
    for (i = 0; i < n; i++) {
        dp_shape s;
        dp_dtype dt;
        const unsigned char *bytes;
        size_t nbytes;
        if ((bad = dpn__params_array(&rd, &s, &dt, &bytes, &nbytes, why, sizeof why)) != NULL) { r = dpn__format(eng, what, path, "array %llu: %s", (unsigned long long)i, bad); goto fail; }
        out[i].name[0] = 0;
        if ((r = dp_nd_from_host(eng, &s, dt, ctx, bytes, &out[i].array)) != DP_OK) goto fail;
        made++;
    }
    if (!dpn__rd_u64(&rd, &nnames)) { r = dpn__format(eng, what, path, "truncated (the name count)"); goto fail; }
    if (nnames != 0 && nnames != n) { r = dpn__format(eng, what, path, "%llu names for %llu arrays (need 0 or as many)", (unsigned long long)nnames, (unsigned long long)n); goto fail; }
    for (i = 0; i < nnames; i++) {
        uint64_t nl;
        const unsigned char *b;
        if (!dpn__rd_u64(&rd, &nl) || !dpn__rd_take(&rd, nl > rd.len ? rd.len + 1 : (size_t)nl, &b)) { r = dpn__format(eng, what, path, "truncated (name %llu)", (unsigned long long)i); goto fail; }
        if (nl > 127) { r = dpn__format(eng, what, path, "name %llu is %llu bytes (at most 127)", (unsigned long long)i, (unsigned long long)nl); goto fail; }
        if (nl == 0) { r = dpn__format(eng, what, path, "name %llu is empty (a named list names every array)", (unsigned long long)i); goto fail; }
        memcpy(out[i].name, b, (size_t)nl); out[i].name[nl] = 0;
        if (strlen(out[i].name) != nl) { r = dpn__format(eng, what, path, "name %llu holds a NUL byte", (unsigned long long)i); goto fail; }
    }
    if (rd.pos != rd.len) { r = dpn__format(eng, what, path, "%zu bytes past the last name", rd.len - rd.pos); goto fail; }
    dp_engine_free(eng, buf, bufcap);
    *count = made;
    return DP_OK;
fail:
    dpn__named_release(out, made);
    dp_engine_free(eng, buf, bufcap);
    return r;
}
static int dpn__ckpt_paths(const char *prefix, int epoch, char *json, char *params, size_t cap) {
    int a = snprintf(json, cap, "%s-symbol.json", prefix), b = snprintf(params, cap, "%s-%04d.params", prefix, epoch);
    return a > 0 && b > 0 && (size_t)a < cap && (size_t)b < cap;
}
DPN_IMPL dp_result dp_checkpoint_save(const char *prefix, int epoch, const dp_symbol *sym, const dp_nd_named *args, int num_args,
                                      const dp_nd_named *aux, int num_aux, dp_failure *failure) {
    static const char *what = "dp_checkpoint_save";
    char json[4096], params[4096];
    dp_nd_named *all;
    dp_engine *eng = num_args > 0 && args && args[0].array ? dp_nd_engine(args[0].array) : num_aux > 0 && aux && aux[0].array ? dp_nd_engine(aux[0].array) : NULL;
    dp_result r;
    int i, n = num_args + num_aux;
    if (failure) memset(failure, 0, sizeof *failure);
    if (!prefix || !sym || epoch < 0 || num_args < 0 || num_aux < 0 || (num_args && !args) || (num_aux && !aux) || !eng) {
        DPN__LOG(eng, DP_LOG_ERROR, ND_ARGS, "%s: NULL prefix, symbol or lists, no parameter at all, or a negative epoch or count", what);
        return DP_ERROR_INVALID_ARGS;
    }
    if (!dpn__ckpt_paths(prefix, epoch, json, params, sizeof json)) { DPN__LOG(eng, DP_LOG_ERROR, ND_ARGS, "%s: the prefix is too long", what); return DP_ERROR_INVALID_ARGS; }
    for (i = 0; i < n; i++) {
        const dp_nd_named *p = i < num_args ? &args[i] : &aux[i - num_args];
        if (strlen(p->name) > 123 || !p->name[0] || !p->array) {
            DPN__LOG(eng, DP_LOG_ERROR, ND_ARGS, "%s: parameter %d ('%.127s'): a name of 1 to 123 bytes and an array", what, i, p->name);
            return DP_ERROR_INVALID_ARGS;
        }
    }
    if ((r = dp_sym_save(sym, json)) != DP_OK) return r;
    if ((all = (dp_nd_named *)dp_engine_alloc(eng, (size_t)n * sizeof *all)) == NULL) { DPN__LOG(eng, DP_LOG_ERROR, OUT_OF_MEMORY, "%s", what); return DP_ERROR_OUT_OF_MEMORY; }
    for (i = 0; i < n; i++) {
        const dp_nd_named *p = i < num_args ? &args[i] : &aux[i - num_args];
        memcpy(all[i].name, i < num_args ? "arg:" : "aux:", 4);
        memcpy(all[i].name + 4, p->name, strlen(p->name) + 1);     /* at most 123 bytes, checked above */
        all[i].array = p->array;
    }
    r = dp_nd_save_params(params, all, n, failure);
    dp_engine_free(eng, all, (size_t)n * sizeof *all);
    return r;
}
DPN_IMPL void dp_checkpoint_free(dp_checkpoint *ck) {
    dp_engine *eng;
    if (!ck) return;
    eng = ck->num_args ? dp_nd_engine(ck->args[0].array) : ck->num_aux ? dp_nd_engine(ck->aux[0].array) : NULL;
    dpn__named_release(ck->args, ck->num_args);
    dpn__named_release(ck->aux, ck->num_aux);
    if (ck->args) dp_engine_free(eng, ck->args, (size_t)ck->num_args * sizeof *ck->args);
    if (ck->aux) dp_engine_free(eng, ck->aux, (size_t)ck->num_aux * sizeof *ck->aux);
    dp_sym_release(ck->symbol);
    memset(ck, 0, sizeof *ck);
}
/* Every "arg:" parameter is an argument of the symbol and every "aux:"
   one an auxiliary state, and (given the inputs' shapes) its shape the
   one inference gives from them. */
static dp_result dpn__ckpt_check(dp_engine *eng, const char *path, const dp_checkpoint *ck, const dp_checkpoint_desc *desc) {
    static const char *what = "dp_checkpoint_load";
    int nargs = dp_sym_list_arguments(ck->symbol, NULL, 0), naux = dp_sym_list_auxiliary_states(ck->symbol, NULL, 0);
    int i, j, nknown = 0, kcap, kind;
    const char **names, **known;
    dp_shape *shapes, *kshapes;
    dp_sym_infer_desc inf;
    dp_result r = DP_OK;
    if (nargs < 0 || naux < 0) { DPN__LOG(eng, DP_LOG_ERROR, ND_ARGS, "%s: the symbol's arguments", what); return DP_ERROR_INVALID_ARGS; }
    kcap = 1 + (desc && desc->num_inputs > 0 ? desc->num_inputs : 0);
    /* one block: the known shapes, the arguments' then the auxiliary
       states' shapes, then the names (known, arguments, auxiliary states) */
    if ((kshapes = (dp_shape *)dpn__zalloc(eng, (size_t)(kcap + nargs + naux + 1), sizeof(dp_shape) + sizeof(char *))) == NULL) {
        DPN__LOG(eng, DP_LOG_ERROR, OUT_OF_MEMORY, "%s", what);
        return DP_ERROR_OUT_OF_MEMORY;
    }
    shapes = kshapes + kcap;
    known = (const char **)(void *)(shapes + nargs + naux + 1);
    names = known + kcap;
    dp_sym_list_arguments(ck->symbol, names, nargs);
    dp_sym_list_auxiliary_states(ck->symbol, names + nargs, naux);
    for (kind = 0; kind < 2; kind++) {
        const dp_nd_named *p = kind ? ck->aux : ck->args;
        int np = kind ? ck->num_aux : ck->num_args, lo = kind ? nargs : 0, hi = kind ? nargs + naux : nargs;
        for (i = 0; i < np; i++) {
            for (j = lo; j < hi && strcmp(names[j], p[i].name) != 0; j++) {}
            if (j == hi) {
                r = dpn__format(eng, what, path, kind ? "parameter 'aux:%s' is not an auxiliary state of the symbol" : "parameter 'arg:%s' is not an argument of the symbol",
                                p[i].name);
                goto done;
            }
        }
    }
    if (!desc || desc->num_inputs <= 0) goto done;          /* nothing to infer the shapes from */
    for (i = 0; i < desc->num_inputs; i++) { known[nknown] = desc->input_names[i]; kshapes[nknown++] = desc->input_shapes[i]; }
    memset(&inf, 0, sizeof inf);
    inf.num_known = nknown; inf.names = known; inf.shapes = kshapes; inf.arg_shapes = shapes; inf.aux_shapes = shapes + nargs;
    if (dp_sym_infer(ck->symbol, &inf) != DP_OK) { r = dpn__format(eng, what, path, "the inputs' shapes do not fit the symbol (the inference error is logged before this)"); goto done; }
    for (kind = 0; kind < 2; kind++) {
        const dp_nd_named *p = kind ? ck->aux : ck->args;
        int np = kind ? ck->num_aux : ck->num_args, lo = kind ? nargs : 0, hi = kind ? nargs + naux : nargs;
        for (i = 0; i < np; i++) {
            const dp_shape *have = dp_nd_shape(p[i].array), *need;
            int k, same;
            for (j = lo; j < hi && strcmp(names[j], p[i].name) != 0; j++) {}
            need = &shapes[j];
            same = have->ndim == need->ndim;
            for (k = 0; same && k < have->ndim; k++) same = have->dims[k] == need->dims[k];
            if (!same) {
                char s1[160], s2[160];
                r = dpn__format(eng, what, path, "parameter '%s:%s' has shape %s, the symbol needs %s", kind ? "aux" : "arg", p[i].name,
                                dpn__shape_str(have, s1, sizeof s1), dpn__shape_str(need, s2, sizeof s2));
                goto done;
            }
        }
    }
done:
    dpn__zfree(eng, kshapes);
    return r;
}
DPN_IMPL dp_result dp_checkpoint_load(dp_engine *eng, const char *prefix, int epoch, dp_ctx ctx, const dp_checkpoint_desc *desc, dp_checkpoint *out) {
    static const char *what = "dp_checkpoint_load";
    char json[4096], params[4096];
    dp_nd_named *all = NULL;
    int cap = 1, n = 0, i, na = 0, nx = 0;
    unsigned char head[24];
    FILE *f;
    dp_result r;
    if (out) memset(out, 0, sizeof *out);
    if (!eng || !prefix || !out || epoch < 0 || (desc && desc->num_inputs > 0 && (!desc->input_names || !desc->input_shapes))) {
        DPN__LOG(eng, DP_LOG_ERROR, ND_ARGS, "%s: NULL engine, prefix, out or input lists, or a negative epoch", what);
        return DP_ERROR_INVALID_ARGS;
    }
    if (!dpn__ckpt_paths(prefix, epoch, json, params, sizeof json)) { DPN__LOG(eng, DP_LOG_ERROR, ND_ARGS, "%s: the prefix is too long", what); return DP_ERROR_INVALID_ARGS; }
    if ((r = dp_sym_load(json, &out->symbol)) != DP_OK) return r;
    if ((f = fopen(params, "rb")) != NULL) {          /* the list's count, for the room to load it into */
        if (fread(head, 1, sizeof head, f) == sizeof head) { uint64_t c = dpn__get_le64(head + 16); cap = c > 65536 ? 65536 : c ? (int)c : 1; }
        fclose(f);
    }
    if ((all = (dp_nd_named *)dpn__zalloc(eng, (size_t)cap, sizeof *all)) == NULL) { r = DP_ERROR_OUT_OF_MEMORY; DPN__LOG(eng, DP_LOG_ERROR, OUT_OF_MEMORY, "%s", what); goto fail; }
    if ((r = dp_nd_load_params(eng, params, ctx, all, cap, &n)) != DP_OK) goto fail;
    for (i = 0; i < n; i++) {
        if (!strncmp(all[i].name, "arg:", 4)) na++;
        else if (!strncmp(all[i].name, "aux:", 4)) nx++;
        else { r = dpn__format(eng, what, params, "parameter %d is named '%s' (need arg:NAME or aux:NAME)", i, all[i].name); goto fail; }
    }
    if ((na && (out->args = (dp_nd_named *)dp_engine_alloc(eng, (size_t)na * sizeof *out->args)) == NULL) ||
        (nx && (out->aux = (dp_nd_named *)dp_engine_alloc(eng, (size_t)nx * sizeof *out->aux)) == NULL)) {
        DPN__LOG(eng, DP_LOG_ERROR, OUT_OF_MEMORY, "%s", what);
        r = DP_ERROR_OUT_OF_MEMORY;
        if (out->args) dp_engine_free(eng, out->args, (size_t)na * sizeof *out->args);
        out->args = NULL;
        goto fail;
    }
    for (i = 0; i < n; i++) {
        dp_nd_named *d = all[i].name[1] == 'r' ? &out->args[out->num_args++] : &out->aux[out->num_aux++];
        memcpy(d->name, all[i].name + 4, strlen(all[i].name + 4) + 1);
        d->array = all[i].array;
        all[i].array = NULL;
    }
    dpn__zfree(eng, all);
    all = NULL;
    if ((r = dpn__ckpt_check(eng, params, out, desc)) != DP_OK) goto fail;
    return DP_OK;
fail:
    if (all) { dpn__named_release(all, n); dpn__zfree(eng, all); }
    dp_checkpoint_free(out);
    return r;
}


/* >>layers: FullyConnected and SoftmaxOutput, MXNet's, registered like any
   user operator ------------------------------------------------------------ */
/* FullyConnected(data, weight (hidden, in)[, bias (hidden,)]) = data
   weight^T + bias, as MXNet's: with flatten (the default) data (batch,
   ...) is taken as (batch, in), in the product of its other axes, and the
   output is (batch, hidden); with flatten false the product applies to
   data's last axis (in), the output keeping the other axes, (..., hidden).
   no_bias drops the bias input (num_args 2; a symbol node sets num_args
   from no_bias, as MXNet's files leave it). */
static const dp_param_def dpn__fc_params[] = {
    {"num_hidden", DP_PARAM_INT, NULL, 1, 1e9, NULL, "outputs per row"},
    {"no_bias", DP_PARAM_BOOL, "false", 0, 0, NULL, "no bias input (give num_args 2 with it)"},
    {"flatten", DP_PARAM_BOOL, "true", 0, 0, NULL, "true: data (batch, ...) as (batch, in); false: the product over data's last axis"},
    {"num_args", DP_PARAM_INT, "3", 2, 3, NULL, "inputs: 3 (data, weight, bias), or 2 with no_bias"},
};
/* The rows and the row length data is taken as. */
static void dpn__fc_rows(const dp_shape *d, int flatten, int64_t *rows, int64_t *in) {
    int i;
    *rows = 1; *in = 1;
    if (d->ndim < 1) return;
    if (flatten) { *rows = d->dims[0]; for (i = 1; i < d->ndim; i++) *in *= d->dims[i]; }
    else { for (i = 0; i + 1 < d->ndim; i++) *rows *= d->dims[i]; *in = d->dims[d->ndim - 1]; }
}
static int dpn__infer_fc(const dp_params *p, int nin, const dp_shape *is, const dp_dtype *it, int nout,
                        dp_shape *os, dp_dtype *ot, char *msg, size_t cap) {
    int64_t h = p->v[0].i, rows, in;
    int flatten = (int)p->v[2].i, bias = nin == 3;
    char s1[160], s2[160], s3[160];
    (void)nout;
    if (bias == (int)p->v[1].i) { snprintf(msg, cap, "%d inputs with no_bias %s: no_bias takes (data, weight), else (data, weight, bias)", nin, bias ? "true" : "false"); return -1; }
    if (it[0] != it[1] || (bias && it[0] != it[2]) || (it[0] != DP_FLOAT32 && it[0] != DP_FLOAT64)) { snprintf(msg, cap, "data, weight and bias: all float32 or all float64"); return -1; }
    dpn__fc_rows(&is[0], flatten, &rows, &in);
    if (is[0].ndim < (flatten ? 2 : 1) || is[1].ndim != 2 || is[1].dims[0] != h || is[1].dims[1] != in || (bias && (is[2].ndim != 1 || is[2].dims[0] != h))) {
        snprintf(msg, cap, "data %s, weight %s%s%s: need %s, (%lld, %lld)%s (flatten %s)", dpn__shape_str(&is[0], s1, sizeof s1),
                 dpn__shape_str(&is[1], s2, sizeof s2), bias ? ", bias " : "", bias ? dpn__shape_str(&is[2], s3, sizeof s3) : "",
                 flatten ? "(batch, in, ...)" : "(..., in)", (long long)h, (long long)in, bias ? ", (num_hidden,)" : "", flatten ? "true" : "false");
        return -1;
    }
    memset(os, 0, sizeof *os);
    if (flatten) { os->ndim = 2; os->dims[0] = is[0].dims[0]; os->dims[1] = h; }
    else { *os = is[0]; os->dims[os->ndim - 1] = h; }
    *ot = it[0];
    return 0;
}
/* An element-wise operator fused into the kernel that produces its input
   (>>executor, fusion): its CPU kernel runs over the producer's output
   block by block, in place, right after the block is complete (while it
   is in cache). The blocks are views of the output made at bind time, so
   a run allocates nothing; they are fixed by the output's shape alone
   (dpn__post_blocks). */
typedef struct dpn__post {
    dp_kernel_fn fn;             /* the element-wise operator's kernel (relu, sigmoid, tanh, Activation) */
    dp_params params;            /* and its parameters */
    double scalar;
    int64_t per;                 /* rows (FullyConnected) or images (Convolution) a block */
    int nblocks;
    dp_ndarray **blocks;         /* the output's blocks, in order */
    int *status;                 /* per block: what fn returned */
} dpn__post;
/* fn over block i, in place: the same kernel on the same elements as the
   operation it replaces, so the same bits (each element is computed
   alone). The operation's run context goes with it. */
static void dpn__post_block(const dp_kernel_ctx *k, const dpn__post *p, int64_t i) {
    dp_kernel_ctx k2;
    dp_req req = DP_REQ_INPLACE;
    k2 = *k;
    k2.params = &p->params; k2.scalar = p->scalar; k2.num_inputs = 1; k2.num_outputs = 1;
    k2.inputs = &p->blocks[i]; k2.outputs = &p->blocks[i]; k2.req = &req;
    p->status[i] = p->fn(&k2);
}
static int dpn__post_status(const dpn__post *p) {
    int i;
    for (i = 0; i < p->nblocks; i++) if (p->status[i]) return p->status[i];
    return 0;
}
/* rows [r0, r1) of y (rows of h) += bias, a loop per dtype (float32:
   the float sum, which is the double sum rounded once) */
DPN__VEC_LOOPS static void dpn__fc_bias_rows(const dp_kernel_ctx *k, dp_dtype t, void *y, int64_t r0, int64_t r1, int64_t h) {
    int64_t r, j;
    if (t == DP_FLOAT32) {
        const float *b = (const float *)dp_nd_data(k->inputs[2]);
        for (r = r0; r < r1; r++) {
            float *yr = (float *)y + r * h;
            for (j = 0; j < h; j++) yr[j] = yr[j] + b[j];
        }
    } else {
        const double *b = (const double *)dp_nd_data(k->inputs[2]);
        for (r = r0; r < r1; r++) {
            double *yr = (double *)y + r * h;
            for (j = 0; j < h; j++) yr[j] = yr[j] + b[j];
        }
    }
}
typedef struct dpn__fc_job { const dp_kernel_ctx *k; const dpn__post *post; dp_dtype t; void *y; int64_t rows, h; } dpn__fc_job;
static void dpn__fc_bias_range(int64_t r0, int64_t r1, void *user) {
    const dpn__fc_job *J = (const dpn__fc_job *)user;
    dpn__fc_bias_rows(J->k, J->t, J->y, r0, r1, J->h);
}
/* blocks [b, e) of a fused FullyConnected: the bias, then the fused operator */
static void dpn__fc_post_range(int64_t b, int64_t e, void *user) {
    const dpn__fc_job *J = (const dpn__fc_job *)user;
    int64_t i;
    for (i = b; i < e; i++) {
        int64_t r0 = i * J->post->per, r1 = r0 + J->post->per < J->rows ? r0 + J->post->per : J->rows;
        if (J->k->num_inputs == 3) dpn__fc_bias_rows(J->k, J->t, J->y, r0, r1, J->h);
        dpn__post_block(J->k, J->post, i);
    }
}
/* FullyConnected's forward, with post (NULL: none) fused */
static int dpn__fc_run(const dp_kernel_ctx *k, const dpn__post *post) {
    dp_dtype t = dp_nd_dtype(k->inputs[0]);
    int64_t batch, in, h = k->params->v[0].i;
    void *y = dp_nd_data(k->outputs[0]);
    dpn__fc_job J;
    dpn__fc_rows(dp_nd_shape(k->inputs[0]), (int)k->params->v[2].i, &batch, &in);
    if (k->req[0] == DP_REQ_NULL) return 0;
    dp_gemm_on(k->rc ? k->rc->engine : NULL, t, 0, 1, batch, h, in, dp_nd_data(k->inputs[0]), in, dp_nd_data(k->inputs[1]), in, dpn__beta_of(k->req[0]), y, h);
    J.k = k; J.post = post; J.t = t; J.y = y; J.rows = batch; J.h = h;
    if (!post) {                                   /* the bias by rows of about DPN__PAR_GRAIN elements */
        if (k->num_inputs == 3 && h > 0)
            dpn__range(dpn__par_eng(k, (double)batch * (double)h), batch, DPN__PAR_GRAIN / h > 1 ? DPN__PAR_GRAIN / h : 1, dpn__fc_bias_range, &J);
        return 0;
    }
    dpn__range(dpn__par_eng(k, (double)batch * (double)h), post->nblocks, 1, dpn__fc_post_range, &J);
    return dpn__post_status(post);
}
static int dpn__k_fc(const dp_kernel_ctx *k) { return dpn__fc_run(k, NULL); }
/* d bias = og (batch, h) summed over the rows, each column in double in
   row order, DPN__BLK columns at a time, row by row (independent sums side
   by side, which vectorise, over og's rows in order) */
DPN__VEC_LOOPS static void dpn__fc_bias_grad(dp_dtype t, const void *og, void *db, int64_t batch, int64_t h, dp_req req) {
    double s[DPN__BLK];
    int64_t j0, m, r, j;
    for (j0 = 0; j0 < h; j0 += m) {
        m = h - j0 < DPN__BLK ? h - j0 : DPN__BLK;
        for (j = 0; j < m; j++) s[j] = 0;
        if (t == DP_FLOAT32)
            for (r = 0; r < batch; r++) {
                const float *g = (const float *)og + r * h + j0;
                for (j = 0; j < m; j++) s[j] += (double)g[j];
            }
        else
            for (r = 0; r < batch; r++) {
                const double *g = (const double *)og + r * h + j0;
                for (j = 0; j < m; j++) s[j] += g[j];
            }
        dpn__blk_store(t, db, j0, m, s, req);
    }
}
/* inputs (og, data, weight[, bias]): d data = og W, d W = og^T data,
   d bias = og summed over the rows. */
static int dpn__kg_fc(const dp_kernel_ctx *k) {
    dp_dtype t = dp_nd_dtype(k->inputs[1]);
    int64_t batch, in, h = dp_nd_shape(k->inputs[2])->dims[0];
    const void *og = dp_nd_data(k->inputs[0]);
    dpn__fc_rows(dp_nd_shape(k->inputs[1]), (int)k->params->v[2].i, &batch, &in);
    if (k->req[0] != DP_REQ_NULL) dp_gemm_on(k->rc ? k->rc->engine : NULL, t, 0, 0, batch, in, h, og, h, dp_nd_data(k->inputs[2]), in, dpn__beta_of(k->req[0]), dp_nd_data(k->outputs[0]), in);
    if (k->req[1] != DP_REQ_NULL) dp_gemm_on(k->rc ? k->rc->engine : NULL, t, 1, 0, h, in, batch, og, h, dp_nd_data(k->inputs[1]), in, dpn__beta_of(k->req[1]), dp_nd_data(k->outputs[1]), in);
    if (k->num_outputs == 3 && k->req[2] != DP_REQ_NULL) dpn__fc_bias_grad(t, og, dp_nd_data(k->outputs[2]), batch, h, k->req[2]);
    return 0;
}
static void dpn__register_counted(dp_operator *op, const char *grad_name, const char *grad_doc, dp_kernel_fn grad_kernel);
static void dpn__register_linear(void) {
    dp_operator op;
    memset(&op, 0, sizeof op);
    op.name = "FullyConnected";
    op.doc = "data (batch, ...) as (batch, in) (flatten false: (..., in)) times weight (num_hidden, in) transposed, plus bias (num_hidden,) "
             "unless no_bias (num_args 2)";
    op.num_inputs = -1; op.num_outputs = 1; op.params = dpn__fc_params; op.num_params = 4; op.infer = dpn__infer_fc;
    op.forward_cpu = dpn__k_fc; op.dtypes = 1u << DP_FLOAT32 | 1u << DP_FLOAT64;
    dpn__register_counted(&op, "_backward_FullyConnected", "gradient of FullyConnected: (og, data, weight[, bias]) -> their gradients", dpn__kg_fc);
}
/* MXNet's SoftmaxOutput, so that its models load and train. data is taken
   as (outer, classes, inner): by default (n, product of the other axes)
   with label (n,); multi_output: (n, c, d2, ...) with the softmax over
   axis 1 and label (n, d2, ...); preserve_shape: the softmax over the last
   axis, label data's shape without it. The output has data's shape. The
   gradient ignores the head gradient (unless out_grad, which multiplies
   by it) and is (softmax - target) * grad_scale, the target one_hot(label)
   or, with smooth_alpha a, 1 - a for the label's class and a / (classes -
   1) for the others; a label equal to ignore_label with use_ignore gives
   its row 0. normalization "batch" divides by data's first axis, "valid"
   by the labels not ignored (at least 1). The label's gradient is 0. */
static const dp_param_def dpn__softmax_output_params[] = {
    {"grad_scale", DP_PARAM_FLOAT, "1", 0, 0, NULL, "the gradient is multiplied by it"},
    {"normalization", DP_PARAM_ENUM, "null", 0, 0, "null|batch|valid", "batch: the gradient is divided by data's first axis; valid: by the labels not ignored"},
    {"ignore_label", DP_PARAM_FLOAT, "-1", 0, 0, NULL, "with use_ignore, rows with this label get no gradient"},
    {"use_ignore", DP_PARAM_BOOL, "false", 0, 0, NULL, "use ignore_label"},
    {"multi_output", DP_PARAM_BOOL, "false", 0, 0, NULL, "the softmax over axis 1 of (n, c, ...), label (n, ...)"},
    {"preserve_shape", DP_PARAM_BOOL, "false", 0, 0, NULL, "the softmax over the last axis, label data's shape without it"},
    {"out_grad", DP_PARAM_BOOL, "false", 0, 0, NULL, "multiply the gradient by the head gradient"},
    {"smooth_alpha", DP_PARAM_FLOAT, "0", 0, 1, NULL, "label smoothing: the label's target 1 - a, the others' a / (classes - 1)"},
};
enum { DPN__SO_SCALE, DPN__SO_NORM, DPN__SO_IGNORE, DPN__SO_USE_IGNORE, DPN__SO_MULTI, DPN__SO_PRESERVE, DPN__SO_OUT_GRAD, DPN__SO_ALPHA };
/* data's (outer, classes, inner) and the label shape it needs */
static void dpn__so_geometry(const dp_params *p, const dp_shape *d, int64_t *outer, int64_t *c, int64_t *inner, dp_shape *label) {
    int i;
    *outer = d->ndim ? d->dims[0] : 1; *c = 1; *inner = 1;
    memset(label, 0, sizeof *label);
    if (p->v[DPN__SO_PRESERVE].i) {
        *outer = 1;
        for (i = 0; i + 1 < d->ndim; i++) { *outer *= d->dims[i]; label->dims[label->ndim++] = d->dims[i]; }
        *c = d->ndim ? d->dims[d->ndim - 1] : 1;
        return;
    }
    label->ndim = 1; label->dims[0] = *outer;
    if (p->v[DPN__SO_MULTI].i) {
        *c = d->ndim > 1 ? d->dims[1] : 1;
        for (i = 2; i < d->ndim; i++) { *inner *= d->dims[i]; label->dims[label->ndim++] = d->dims[i]; }
        return;
    }
    for (i = 1; i < d->ndim; i++) *c *= d->dims[i];
}
static int dpn__infer_softmax_output(const dp_params *p, int nin, const dp_shape *is, const dp_dtype *it, int nout,
                                    dp_shape *os, dp_dtype *ot, char *msg, size_t cap) {
    char s1[160], s2[160], s3[160];
    int64_t outer, c, inner;
    dp_shape want;
    int ok;
    (void)nin; (void)nout;
    dpn__so_geometry(p, &is[0], &outer, &c, &inner, &want);
    ok = is[0].ndim >= (p->v[DPN__SO_MULTI].i ? 2 : p->v[DPN__SO_PRESERVE].i ? 1 : 2) && (it[0] == DP_FLOAT32 || it[0] == DP_FLOAT64)
         && (is[1].ndim == want.ndim || (p->v[DPN__SO_MULTI].i && is[1].ndim == 2 && is[0].ndim > 2)) && is[1].dims[0] == want.dims[0]
         && dp_shape_size(&is[1]) == dp_shape_size(&want);
    if (!ok) {
        snprintf(msg, cap, "data %s and label %s: data must be float %s and label %s", dpn__shape_str(&is[0], s1, sizeof s1), dpn__shape_str(&is[1], s2, sizeof s2),
                 p->v[DPN__SO_MULTI].i ? "(n, classes, ...)" : p->v[DPN__SO_PRESERVE].i ? "(..., classes)" : "(n, classes)", dpn__shape_str(&want, s3, sizeof s3));
        return -1;
    }
    *os = is[0]; *ot = it[0];
    return 0;
}
/* A loop per dtype, each row in double: its maximum, the sum of
   exp(x - max), then exp(x - max) / sum (float32 rounded once). */
#define DPN__SO_FWD(T) do { \
        const T *x_ = (const T *)x; \
        T *y_ = (T *)y; \
        for (o = 0; o < outer; o++) \
            for (q = 0; q < inner; q++) { \
                const T *xr = x_ + o * c * inner + q; \
                T *yr = y_ + o * c * inner + q; \
                double mx = -HUGE_VAL, sum = 0; \
                for (j = 0; j < c; j++) { double v = (double)xr[j * inner]; if (v > mx) mx = v; } \
                for (j = 0; j < c; j++) sum += exp((double)xr[j * inner] - mx); \
                if (add) for (j = 0; j < c; j++) yr[j * inner] = (T)(exp((double)xr[j * inner] - mx) / sum + (double)yr[j * inner]); \
                else for (j = 0; j < c; j++) yr[j * inner] = (T)(exp((double)xr[j * inner] - mx) / sum); \
            } \
    } while (0)
static int dpn__k_softmax_output(const dp_kernel_ctx *k) {
    const void *x = dp_nd_data(k->inputs[0]);
    void *y = dp_nd_data(k->outputs[0]);
    int64_t outer, c, inner, o, q, j;
    int add = k->req[0] == DP_REQ_ADD;
    dp_shape ls;
    if (k->req[0] == DP_REQ_NULL) return 0;
    dpn__so_geometry(k->params, dp_nd_shape(k->inputs[0]), &outer, &c, &inner, &ls);
    if (dp_nd_dtype(k->inputs[0]) == DP_FLOAT32) DPN__SO_FWD(float);
    else DPN__SO_FWD(double);
    return 0;
}
#undef DPN__SO_FWD
/* One row's gradient (its c elements S apart, from its first), a loop per
   dtype, in double: (y - target) scale, times og with out_grad; a row
   whose label is ignored gets 0 (times og). The row in three runs (before
   the label, the label, after it), each with its target as a constant, so
   that the loops vectorise. */
#define DPN__SO_RUN(T, S, J0, J1, TG) do { \
        double tg_ = (TG); \
        if (!out_grad && !add) for (j = J0; j < J1; j++) gr[j * (S)] = (T)(((double)yr[j * (S)] - tg_) * scale); \
        else if (!out_grad) for (j = J0; j < J1; j++) gr[j * (S)] = (T)(((double)yr[j * (S)] - tg_) * scale + (double)gr[j * (S)]); \
        else if (!add) for (j = J0; j < J1; j++) gr[j * (S)] = (T)(((double)yr[j * (S)] - tg_) * scale * (double)or_[j * (S)]); \
        else for (j = J0; j < J1; j++) gr[j * (S)] = (T)(((double)yr[j * (S)] - tg_) * scale * (double)or_[j * (S)] + (double)gr[j * (S)]); \
    } while (0)
#define DPN__SO_ROW(T, S) do { \
        const T *yr = (const T *)y + base, *or_ = (const T *)og + base; \
        T *gr = (T *)g + base; \
        if (skip) for (j = 0; j < c; j++) { double v = 0; if (out_grad) v *= (double)or_[j * (S)]; gr[j * (S)] = add ? (T)(v + (double)gr[j * (S)]) : (T)v; } \
        else { \
            DPN__SO_RUN(T, S, 0, label, off); \
            DPN__SO_RUN(T, S, label, label + 1, t1); \
            DPN__SO_RUN(T, S, label + 1, c, off); \
        } \
    } while (0)
#define DPN__SO_ROWS(T) do { \
        if (inner == 1) DPN__SO_ROW(T, 1); \
        else DPN__SO_ROW(T, inner); \
    } while (0)
DPN__VEC_LOOPS static void dpn__so_grad(const dp_kernel_ctx *k, double scale) {
    const dp_params *p = k->params;
    dp_ndarray *lab = k->inputs[2];
    const void *og = dp_nd_data(k->inputs[0]), *y = dp_nd_data(k->inputs[3]);
    void *g = dp_nd_data(k->outputs[0]);
    int64_t outer, c, inner, r, r0, m, j, label, base;
    int use_ignore = (int)p->v[DPN__SO_USE_IGNORE].i, out_grad = (int)p->v[DPN__SO_OUT_GRAD].i, add = k->req[0] == DP_REQ_ADD, skip;
    int f32 = dp_nd_dtype(k->inputs[1]) == DP_FLOAT32;
    double alpha = p->v[DPN__SO_ALPHA].f, ignore = p->v[DPN__SO_IGNORE].f, t1 = 1 - alpha, off, lb[DPN__BLK];
    dp_shape ls;
    dpn__so_geometry(p, dp_nd_shape(k->inputs[1]), &outer, &c, &inner, &ls);
    off = c > 1 ? alpha / (double)(c - 1) : 0;
    for (r0 = 0; r0 < outer * inner; r0 += m) {         /* rows (o, q) in order, their labels a block at a time */
        m = outer * inner - r0 < DPN__BLK ? outer * inner - r0 : DPN__BLK;
        dpn__blk_load(dp_nd_dtype(lab), dp_nd_data(lab), r0, m, lb);
        for (r = r0; r < r0 + m; r++) {
            skip = use_ignore && lb[r - r0] == ignore;
            label = skip ? -1 : (int64_t)lb[r - r0];
            base = r / inner * c * inner + r % inner;
            if (f32) DPN__SO_ROWS(float);
            else DPN__SO_ROWS(double);
        }
    }
}
#undef DPN__SO_ROWS
#undef DPN__SO_ROW
#undef DPN__SO_RUN
/* inputs (og, data, label, output); outputs (data's gradient, label's) */
static int dpn__kg_softmax_output(const dp_kernel_ctx *k) {
    const dp_params *p = k->params;
    dp_ndarray *lab = k->inputs[2];
    int64_t outer, c, inner, o, label, n, valid = 0;
    int use_ignore = (int)p->v[DPN__SO_USE_IGNORE].i;
    double ignore = p->v[DPN__SO_IGNORE].f, scale = p->v[DPN__SO_SCALE].f;
    dp_shape ls;
    dpn__so_geometry(p, dp_nd_shape(k->inputs[1]), &outer, &c, &inner, &ls);
    n = outer * inner;
    for (o = 0; o < n; o++) {            /* the labels checked (and counted) before anything is written */
        if (use_ignore && dp_dtype_load(dp_nd_dtype(lab), dp_nd_data(lab), o) == ignore) continue;
        if (dpn__label_at(k, lab, o, c, &label)) return -1;
        valid++;
    }
    if (p->v[DPN__SO_NORM].i == 1 && dp_nd_shape(k->inputs[1])->dims[0]) scale /= (double)dp_nd_shape(k->inputs[1])->dims[0];
    if (p->v[DPN__SO_NORM].i == 2) scale /= (double)(valid > 0 ? valid : 1);
    if (k->req[0] != DP_REQ_NULL) dpn__so_grad(k, scale);
    dpn__fill_by_req(k->outputs[1], 0, k->req[1]);
    return 0;
}
static int dpn__infer_softmax_output_grad(const dp_params *p, int nin, const dp_shape *is, const dp_dtype *it, int nout,
                                         dp_shape *os, dp_dtype *ot, char *msg, size_t cap) {
    (void)p; (void)nin; (void)nout; (void)msg; (void)cap;
    os[0] = is[1]; ot[0] = it[1]; os[1] = is[2]; ot[1] = it[2];
    return 0;
}
static void dpn__register_softmax_output(void) {
    dp_operator op;
    memset(&op, 0, sizeof op);
    op.name = "SoftmaxOutput";
    op.doc = "softmax of data (n, classes) (multi_output: over axis 1; preserve_shape: over the last axis); its gradient is "
             "(softmax - one_hot(label)) * grad_scale, whatever the head gradient unless out_grad (ignore_label, smooth_alpha as MXNet's)";
    op.num_inputs = 2; op.num_outputs = 1; op.params = dpn__softmax_output_params; op.num_params = 8;
    op.infer = dpn__infer_softmax_output; op.forward_cpu = dpn__k_softmax_output;
    op.gradient = "_backward_SoftmaxOutput"; op.grad_needs = DP_GRAD_OUT_GRADS | DP_GRAD_INPUTS | DP_GRAD_OUTPUTS;
    dp_operator_register(&op);
    memset(&op, 0, sizeof op);
    op.name = "_backward_SoftmaxOutput"; op.doc = "gradient of SoftmaxOutput: (og, data, label, output) -> (data's, label's)";
    op.num_inputs = 4; op.num_outputs = 2; op.params = dpn__softmax_output_params; op.num_params = 8;
    op.infer = dpn__infer_softmax_output_grad; op.forward_cpu = dpn__kg_softmax_output;
    dp_operator_register(&op);
}

/* >>conv layers: Convolution, Deconvolution, Pooling, Activation,
   LeakyReLU and Flatten, MXNet's, registered like any user operator -----
   Layout NCHW (NCW for 1-D); a 1-D window is a 2-D one of height 1, so one
   set of kernels serves both. Parameters follow MXNet's (kernel, stride,
   dilate, pad as tuples with one entry per spatial axis; an empty tuple
   means 1 for stride and dilate, 0 for pad). Shape inference refuses bad
   geometry naming the parameter and the shapes; invoked, the log line
   names the operator, and in a symbol the node too. */
typedef struct dpn__win { int nd; int64_t k[2], s[2], d[2], p[2]; } dpn__win;
/* The window of kernel/stride/dilate/pad (dilate NULL: 1), or -1 with msg. */
static int dpn__win_parse(const dp_shape *kernel, const dp_shape *stride, const dp_shape *dilate, const dp_shape *pad,
                          dpn__win *w, char *msg, size_t cap) {
    const dp_shape *t[3];
    const char *names[3] = {"stride", "dilate", "pad"};
    char s1[160];
    int a, j, nd = kernel->ndim;
    t[0] = stride; t[1] = dilate; t[2] = pad;
    if (nd < 1 || nd > 2) { snprintf(msg, cap, "kernel %s: one or two spatial axes (1-D or 2-D)", dpn__shape_str(kernel, s1, sizeof s1)); return -1; }
    w->nd = nd;
    for (a = 0; a < 2; a++) { w->k[a] = 1; w->s[a] = 1; w->d[a] = 1; w->p[a] = 0; }
    for (a = 0; a < nd; a++) {
        if (kernel->dims[a] < 1) { snprintf(msg, cap, "kernel %s: every axis must be >= 1", dpn__shape_str(kernel, s1, sizeof s1)); return -1; }
        w->k[2 - nd + a] = kernel->dims[a];
    }
    for (j = 0; j < 3; j++) {
        if (!t[j]) continue;
        if (t[j]->ndim != 0 && t[j]->ndim != nd) {
            snprintf(msg, cap, "%s %s: needs %d entries, as kernel has", names[j], dpn__shape_str(t[j], s1, sizeof s1), nd);
            return -1;
        }
        for (a = 0; a < t[j]->ndim; a++) {
            int64_t v = t[j]->dims[a];
            if (j < 2 ? v < 1 : v < 0) {
                snprintf(msg, cap, "%s %s: every entry must be %s", names[j], dpn__shape_str(t[j], s1, sizeof s1), j < 2 ? ">= 1" : ">= 0");
                return -1;
            }
            (j == 0 ? w->s : j == 1 ? w->d : w->p)[2 - nd + a] = v;
        }
    }
    return 0;
}
/* A convolution's geometry: its input (n, c, h, w), output (n, f, oh, ow),
   groups and window; a 1-D one has h = oh = 1 and a window of height 1. */
typedef struct dpn__cgeo { int64_t n, c, h, w, f, oh, ow, g, kh, kw, sh, sw, ph, pw, dh, dw; int nd; } dpn__cgeo;
static void dpn__cgeo_set(dpn__cgeo *g, const dpn__win *w, int64_t n, int64_t c, int64_t h, int64_t wd, int64_t f, int64_t oh, int64_t ow, int64_t groups) {
    g->n = n; g->c = c; g->h = h; g->w = wd; g->f = f; g->oh = oh; g->ow = ow; g->g = groups; g->nd = w->nd;
    g->kh = w->k[0]; g->kw = w->k[1]; g->sh = w->s[0]; g->sw = w->s[1]; g->ph = w->p[0]; g->pw = w->p[1]; g->dh = w->d[0]; g->dw = w->d[1];
}
/* The spatial sizes of an NC... shape as 2-D (a 1-D one has height 1). */
static void dpn__spatial(const dp_shape *s, int nd, int64_t *h, int64_t *w) { *h = nd == 2 ? s->dims[2] : 1; *w = s->dims[1 + nd]; }
/* A pointwise convolution (1x1, stride 1, no pad, each input element an
   output's): its columns are its input. A deconvolution's adj makes its
   convolution's input larger than the output: not pointwise then. */
static int dpn__cgeo_pointwise(const dpn__cgeo *g) {
    return g->kh == 1 && g->kw == 1 && g->sh == 1 && g->sw == 1 && g->ph == 0 && g->pw == 0 && g->h == g->oh && g->w == g->ow;
}
/* The convolution kernels: y += conv(x, w), dx += conv^T(og, w), dw += the
   correlation of og and x. By im2col and GEMM: y and dx in blocks of
   images (dpn__conv_fblock, fixed by the shape: enough images that a
   block's GEMM has DPN__CONV_COLS columns, b oh ow, or 1 where one image
   has that many, or for a pointwise convolution). Per block and group the
   block's columns ((c/g) kh kw x b oh ow, image j's in columns j oh ow ..)
   are gathered (by dpn__im2col_pack straight into the GEMM's panels,
   dp_gemm_pack_b_on; by im2col with DEPENG_USE_CBLAS) and one GEMM gives
   the block's output rows
   (staged, fg x b oh ow, then added into y image by image; a block of one
   image goes straight into y), or for dx one GEMM from the staged
   output-gradient rows gives the columns, which col2im scatters back. The
   blocks are split over the range loop in at most DPN__CONV_SLOTS chunks
   (dpn__conv_chunks), each with its own room in the temporary space; the
   GEMM is parallel itself when it is large (dp_gemm_on: tiles fixed by the
   shape, the same bits as dp_gemm). dw in blocks of images
   (dpn__conv_block, fixed by the shape): per block and group, the block's
   output-gradient rows (fg x b oh ow) are staged by image over the range
   loop, and one GEMM over the block's b oh ow adds them into dw, its
   columns packed into the GEMM's panels (dpn__im2col_pack_t, as the
   transposed B that staged columns would be: dp_gemm_pack_b_on with tb 1
   gives dp_gemm_on's bits on those, its narrow path included), block
   after block. Or by direct loops, split over images (y, dx) or
   over output channels (dw: each channel's sum in the serial order). */
typedef struct dpn__cjob {
    const dpn__cgeo *g;
    int mode;                    /* 0: y += conv(x, w); 1: x += conv^T(y, w); 2: w += corr(y, x) */
    void *x, *w, *y, *col, *st;  /* st: the staged output rows */
    int64_t i0, ld, gi, bl;      /* dw: the block's first image, the staged rows' stride (b oh ow), the group; y, dx: ld the blocks per chunk, bl the images per block */
    dp_engine *eng;
    const struct dpn__cfin *fin; /* mode 0: what follows each image (a fused bias and operator), or NULL */
} dpn__cjob;
/* mode 0 with fin: image n's bias and fused operator, right after image n */
static void dpn__conv_finish(const dpn__cjob *J, int64_t n);
/* A block's columns as dp_gemm_pack_b_on's op(B): the block's first image
   (x, of group gi) and the elements an image apart. y's and dw's products take
   their columns so (DPN__CONV_PACKED): straight into the GEMM's panels, in
   L1, where im2col wrote a block's whole matrix (about 1 MiB for LeNet's
   second convolution) for the GEMM to copy into panels again; the panels
   hold the same elements, so the bits are the same. With
   DEPENG_USE_CBLAS the columns go through im2col (dp_gemm_pack_b_on would
   allocate them). */
typedef struct dpn__cpack { const dpn__cgeo *g; const void *x; int64_t img; } dpn__cpack;
#ifdef DEPENG_USE_CBLAS
#define DPN__CONV_PACKED 0
#else
#define DPN__CONV_PACKED 1
#endif
#define DPN__CONV_SLOTS 16
#define DPN__CONV_COLS 512
/* Images per block of y and dx (above): at least 1, at most n, and no more
   than keep a block's columns within 2^20 elements. */
static int64_t dpn__conv_fblock(const dpn__cgeo *g) {
    int64_t K = (g->c / g->g) * g->kh * g->kw, P = g->oh * g->ow, b;
    if (dpn__cgeo_pointwise(g) || P <= 0 || P >= DPN__CONV_COLS || g->n <= 1) return 1;
    b = (DPN__CONV_COLS + P - 1) / P;
    if ((double)K * (double)P * (double)b > (double)(1 << 20)) b = (int64_t)((double)(1 << 20) / ((double)K * (double)P));
    if (b > g->n) b = g->n;
    return b < 1 ? 1 : b;
}
/* The elements of one chunk's room for y and dx: the block's columns and,
   for blocks of more than one image, its staged rows (none for a pointwise
   convolution: its columns are its input). */
static double dpn__conv_slot(const dpn__cgeo *g) {
    double bp = (double)dpn__conv_fblock(g) * (double)g->oh * (double)g->ow;
    if (dpn__cgeo_pointwise(g)) return 0;
    return (double)(g->c / g->g) * (double)g->kh * (double)g->kw * bp + (dpn__conv_fblock(g) > 1 ? (double)(g->f / g->g) * bp : 0.0);
}
/* The chunks of blocks y and dx go in: at most DPN__CONV_SLOTS, and fewer
   where their rooms would pass 2^22 elements (16 MiB of float32) in all;
   from the shape alone. */
static int64_t dpn__conv_chunks(const dpn__cgeo *g) {
    int64_t bl = dpn__conv_fblock(g), blocks = (g->n + bl - 1) / bl;
    double slot = dpn__conv_slot(g), fit = slot > 0 ? (double)(1 << 22) / slot : DPN__CONV_SLOTS;
    int64_t c = fit < 1 ? 1 : fit > DPN__CONV_SLOTS ? DPN__CONV_SLOTS : (int64_t)fit;
    return blocks < c ? blocks : c;
}
/* Images per block of a weight gradient by im2col: as many as keep a block's staged
   columns and rows ((c/g) kh kw + f/g) b oh ow) within 2^20 elements (4
   MiB of float32, 8 of float64: the block stays near the caches), at
   least 1. From the shape alone: a weight gradient's sum runs block by
   block, so the blocks fix its rounding. */
static int64_t dpn__conv_block(const dpn__cgeo *g) {
    double per = ((double)(g->c / g->g) * (double)g->kh * (double)g->kw + (double)(g->f / g->g)) * (double)g->oh * (double)g->ow;
    double b = per > 0 ? (double)(1 << 20) / per : (double)g->n;
    return b < 1 ? 1 : b > (double)g->n ? (g->n > 0 ? g->n : 1) : (int64_t)b;
}
/* The outputs ox in [*o0, *o1) of a row whose input column ox s + off lies
   in [0, w): the columns im2col copies and col2im adds; the rest is padding. */
static void dpn__conv_span(int64_t off, int64_t s, int64_t w, int64_t ow, int64_t *o0, int64_t *o1) {
    int64_t a = off >= 0 ? 0 : (-off + s - 1) / s, b = w - off <= 0 ? 0 : (w - off + s - 1) / s;
    *o0 = a < ow ? a : ow;
    *o1 = b < ow ? b : ow;
    if (*o1 < *o0) *o1 = *o0;
}
#define DPN__CONV_KERNELS(T, S, DT) \
/* one image's columns: row (ci, i, j) holds x[ci][oy sh - ph + i dh][ox sw - pw + j dw], \
   0 in the padding; a row's inside is one copy where the stride is 1 */ \
static void dpn__im2col_##S(const dpn__cgeo *g, const T *x, T *col, int64_t ld) { \
    int64_t ci, i, j, oy, ox, cg = g->c / g->g, ow = g->ow; \
    for (ci = 0; ci < cg; ci++) for (i = 0; i < g->kh; i++) for (j = 0; j < g->kw; j++) { \
        T *row = col + ((ci * g->kh + i) * g->kw + j) * ld; \
        int64_t off = j * g->dw - g->pw, o0, o1; \
        dpn__conv_span(off, g->sw, g->w, ow, &o0, &o1); \
        for (oy = 0; oy < g->oh; oy++) { \
            T *r = row + oy * ow; \
            int64_t iy = oy * g->sh - g->ph + i * g->dh, base = (ci * g->h + iy) * g->w + off; \
            if (iy < 0 || iy >= g->h) { for (ox = 0; ox < ow; ox++) r[ox] = (T)0; continue; } \
            for (ox = 0; ox < o0; ox++) r[ox] = (T)0; \
            if (g->sw == 1) {   /* runs of 8, copies of a fixed size the compiler inlines as vector moves: rows are short (LeNet's: 8 and 24) */ \
                const T *xr = x + base + o0; \
                T *rr = r + o0; \
                int64_t m = o1 - o0, q = 0; \
                for (; q + 8 <= m; q += 8) memcpy(rr + q, xr + q, 8 * sizeof(T)); \
                for (; q < m; q++) rr[q] = xr[q]; \
            } \
            else for (ox = o0; ox < o1; ox++) r[ox] = x[base + ox * g->sw]; \
            for (ox = o1; ox < ow; ox++) r[ox] = (T)0; \
        } \
    } \
} \
/* adds one image's columns back into x, in im2col's order */ \
static void dpn__col2im_##S(const dpn__cgeo *g, const T *col, int64_t ld, T *x) { \
    int64_t ci, i, j, oy, ox, cg = g->c / g->g, ow = g->ow; \
    for (ci = 0; ci < cg; ci++) for (i = 0; i < g->kh; i++) for (j = 0; j < g->kw; j++) { \
        const T *row = col + ((ci * g->kh + i) * g->kw + j) * ld; \
        int64_t off = j * g->dw - g->pw, o0, o1; \
        dpn__conv_span(off, g->sw, g->w, ow, &o0, &o1); \
        for (oy = 0; oy < g->oh; oy++) { \
            const T *r = row + oy * ow; \
            int64_t iy = oy * g->sh - g->ph + i * g->dh, base = (ci * g->h + iy) * g->w + off; \
            if (iy < 0 || iy >= g->h) continue; \
            if (g->sw == 1) {   /* runs of 8 through a local array, which gcc's -O2 vectorises (x and the columns never overlap) */ \
                T *xr = x + base + o0; \
                const T *rr = r + o0; \
                int64_t m = o1 - o0, q = 0, l; \
                for (; q + 8 <= m; q += 8) { T t8[8]; memcpy(t8, xr + q, sizeof t8); for (l = 0; l < 8; l++) t8[l] += rr[q + l]; memcpy(xr + q, t8, sizeof t8); } \
                for (; q < m; q++) xr[q] += rr[q]; \
            } \
            else for (ox = o0; ox < o1; ox++) x[base + ox * g->sw] += r[ox]; \
        } \
    } \
} \
/* dp_gemm_pack_b_on's panel of a block's columns (dpn__cpack): rows \
   [p0, p0 + kc) and columns [j0, j0 + w) of the block's im2col matrix, \
   written nr to a row. The panel's columns fall into runs of adjacent \
   outputs of one output row (at most w, found once a call); each row of \
   the panel copies a run's inputs at once (8 at a time, as im2col does), \
   with zeros where it reaches the padding. */ \
static void dpn__im2col_pack_##S(void *user, int64_t p0, int64_t kc, int64_t j0, int64_t w, int64_t nr, void *out) { \
    const dpn__cpack *pk = (const dpn__cpack *)user; \
    const dpn__cgeo *g = pk->g; \
    const T *x = (const T *)pk->x; \
    int64_t rb[32], ry[32], rx[32], rl[32], rd[32], sp0[32], sp1[32]; \
    int64_t p, q, t, nrun = 0, ow = g->ow, P = g->oh * ow, c = j0, ci, i, j; \
    T *o = (T *)out; \
    if (w > 32 || g->kw > 32) { \
        for (p = 0; p < kc; p++, o += nr) for (q = 0; q < nr; q++) { \
            int64_t col = j0 + q, r = p0 + p, n = col / P, oy = col % P / ow, ox = col % ow; \
            int64_t iy = oy * g->sh - g->ph + r / g->kw % g->kh * g->dh, ix = ox * g->sw - g->pw + r % g->kw * g->dw; \
            o[q] = q < w && iy >= 0 && iy < g->h && ix >= 0 && ix < g->w ? x[n * pk->img + (r / (g->kh * g->kw) * g->h + iy) * g->w + ix] : (T)0; \
        } \
        return; \
    } \
    while (c < j0 + w) {   /* the runs: image, first output row and column, length, place in the panel's row */ \
        int64_t n = c / P, pix = c % P, ox = pix % ow, len = ow - ox < j0 + w - c ? ow - ox : j0 + w - c; \
        rb[nrun] = n * pk->img; ry[nrun] = pix / ow * g->sh - g->ph; rx[nrun] = ox; rl[nrun] = len; rd[nrun] = c - j0; \
        nrun++; c += len; \
    } \
    for (j = 0; j < g->kw; j++) dpn__conv_span(j * g->dw - g->pw, g->sw, g->w, ow, &sp0[j], &sp1[j]); \
    ci = p0 / (g->kh * g->kw); i = p0 / g->kw % g->kh; j = p0 % g->kw; \
    for (p = 0; p < kc; p++, o += nr) { \
        int64_t plane = ci * g->h, off = j * g->dw - g->pw, iyo = i * g->dh; \
        for (t = 0; t < nrun; t++) { \
            int64_t iy = ry[t] + iyo, ox = rx[t], e = ox + rl[t]; \
            T *d = o + rd[t] - ox; \
            if (iy < 0 || iy >= g->h) { for (q = ox; q < e; q++) d[q] = (T)0; continue; } \
            { \
                const T *xr = x + rb[t] + (plane + iy) * g->w + off; \
                if (g->sw == 1 && ox >= sp0[j] && e <= sp1[j]) {   /* inside the input: copies */ \
                    for (q = ox; q + 8 <= e; q += 8) memcpy(d + q, xr + q, 8 * sizeof(T)); \
                    for (; q < e; q++) d[q] = xr[q]; \
                    continue; \
                } \
                for (q = ox; q < e; q++) d[q] = q >= sp0[j] && q < sp1[j] ? xr[q * g->sw] : (T)0; \
            } \
        } \
        for (q = w; q < nr; q++) o[q] = (T)0; \
        if (++j == g->kw) { j = 0; if (++i == g->kh) { i = 0; ci++; } } \
    } \
} \
/* The same columns transposed, for a weight gradient's op(B) = cols^T: \
   rows [p0, p0 + kc) are the block's outputs, columns [j0, j0 + w) the \
   im2col rows; the outputs fall into runs along output rows (found 64 at \
   a time), each copied down a panel column. */ \
static void dpn__im2col_pack_t_##S(void *user, int64_t p0, int64_t kc, int64_t j0, int64_t w, int64_t nr, void *out) { \
    const dpn__cpack *pk = (const dpn__cpack *)user; \
    const dpn__cgeo *g = pk->g; \
    const T *x = (const T *)pk->x; \
    int64_t rb[64], ry[64], rx[64], rl[64], rd[64]; \
    int64_t q, t, u, ow = g->ow, P = g->oh * ow, khw = g->kh * g->kw, c = p0; \
    T *o = (T *)out; \
    while (c < p0 + kc) { \
        int64_t nrun = 0; \
        while (c < p0 + kc && nrun < 64) { \
            int64_t n = c / P, pix = c % P, ox = pix % ow, len = ow - ox < p0 + kc - c ? ow - ox : p0 + kc - c; \
            rb[nrun] = n * pk->img; ry[nrun] = pix / ow * g->sh - g->ph; rx[nrun] = ox; rl[nrun] = len; rd[nrun] = c - p0; \
            nrun++; c += len; \
        } \
        for (q = 0; q < nr; q++) { \
            int64_t r = j0 + q, ci = r / khw, i = r / g->kw % g->kh, j = r % g->kw, off = j * g->dw - g->pw, o0 = 0, o1 = 0; \
            if (q < w) dpn__conv_span(off, g->sw, g->w, ow, &o0, &o1); \
            for (t = 0; t < nrun; t++) { \
                int64_t iy = ry[t] + i * g->dh, ox = rx[t], len = rl[t]; \
                T *d = o + rd[t] * nr + q; \
                if (q >= w || iy < 0 || iy >= g->h) { for (u = 0; u < len; u++) d[u * nr] = (T)0; continue; } \
                { \
                    const T *xr = x + rb[t] + (ci * g->h + iy) * g->w + off; \
                    if (g->sw == 1 && ox >= o0 && ox + len <= o1) for (u = 0; u < len; u++) d[u * nr] = xr[ox + u]; \
                    else for (u = 0; u < len; u++) d[u * nr] = ox + u >= o0 && ox + u < o1 ? xr[(ox + u) * g->sw] : (T)0; \
                } \
            } \
        } \
    } \
} \
/* images [n0, n1), output channels [o0, o1) of the direct loops */ \
static void dpn__conv_direct_##S(const dpn__cgeo *g, int mode, T *x, T *w, T *y, int64_t n0, int64_t n1, int64_t o0, int64_t o1) { \
    int64_t n, o, oy, ox, ci, i, j, cg = g->c / g->g, fg = g->f / g->g; \
    for (n = n0; n < n1; n++) for (o = o0; o < o1; o++) { \
        T *xg = x + (n * g->c + (o / fg) * cg) * g->h * g->w, *wo = w + o * cg * g->kh * g->kw; \
        for (oy = 0; oy < g->oh; oy++) for (ox = 0; ox < g->ow; ox++) { \
            T *yo = y + ((n * g->f + o) * g->oh + oy) * g->ow + ox, acc = 0; \
            for (ci = 0; ci < cg; ci++) for (i = 0; i < g->kh; i++) { \
                int64_t iy = oy * g->sh - g->ph + i * g->dh; \
                if (iy < 0 || iy >= g->h) continue; \
                for (j = 0; j < g->kw; j++) { \
                    int64_t ix = ox * g->sw - g->pw + j * g->dw, wi = (ci * g->kh + i) * g->kw + j; \
                    T *xe; \
                    if (ix < 0 || ix >= g->w) continue; \
                    xe = xg + (ci * g->h + iy) * g->w + ix; \
                    if (mode == 0) acc += wo[wi] * *xe; \
                    else if (mode == 1) *xe += wo[wi] * *yo; \
                    else wo[wi] += *yo * *xe; \
                } \
            } \
            if (mode == 0) *yo += acc; \
        } \
    } \
} \
static void dpn__conv_direct_range_##S(int64_t b, int64_t e, void *user) { \
    const dpn__cjob *J = (const dpn__cjob *)user; \
    int64_t n; \
    if (J->mode == 2) dpn__conv_direct_##S(J->g, 2, (T *)J->x, (T *)J->w, (T *)J->y, 0, J->g->n, b, e); \
    else for (n = b; n < e; n++) { \
        dpn__conv_direct_##S(J->g, J->mode, (T *)J->x, (T *)J->w, (T *)J->y, n, n + 1, 0, J->g->f); \
        if (J->fin) dpn__conv_finish(J, n); \
    } \
} \
/* y += conv(x, w) (mode 0) or x += conv^T(y, w) (mode 1) for the blocks \
   [b, e) of J->bl images, in the chunk's own room (chunk begin / grain of \
   the range) */ \
static void dpn__conv_images_##S(int64_t b, int64_t e, void *user) { \
    const dpn__cjob *J = (const dpn__cjob *)user; \
    const dpn__cgeo *g = J->g; \
    int64_t blk, gi, j, o, p, cg = g->c / g->g, fg = g->f / g->g, K = cg * g->kh * g->kw, P = g->oh * g->ow, bl = J->bl; \
    int pw = dpn__cgeo_pointwise(g); \
    T *col = J->col ? (T *)J->col + (b / J->ld) * (int64_t)dpn__conv_slot(g) : NULL, *st = col ? col + K * bl * P : NULL; \
    T *X = (T *)J->x, *Y = (T *)J->y; \
    for (blk = b; blk < e; blk++) { \
        int64_t i0 = blk * bl, nb = g->n - i0 < bl ? g->n - i0 : bl, L = nb * P; \
        for (gi = 0; gi < g->g; gi++) { \
            T *wg = (T *)J->w + gi * fg * K, *x0 = X + (i0 * g->c + gi * cg) * g->h * g->w, *y0 = Y + (i0 * g->f + gi * fg) * P; \
            if (pw) {   /* one image a block: its input is its columns */ \
                if (J->mode == 1) dp_gemm_on(J->eng, DT, 1, 0, K, P, fg, wg, K, y0, P, 1.0, x0, P); \
                else dp_gemm_on(J->eng, DT, 0, 0, fg, P, K, wg, K, x0, P, 1.0, y0, P); \
                continue; \
            } \
            if (J->mode == 0) { \
                dpn__cpack pk; \
                pk.g = g; pk.x = x0; pk.img = g->c * g->h * g->w; \
                if (nb == 1) { \
                    if (DPN__CONV_PACKED && dp_gemm_pack_b_on(J->eng, DT, 0, 0, fg, P, K, wg, K, dpn__im2col_pack_##S, &pk, 1.0, y0, P) == DP_OK) continue; \
                    dpn__im2col_##S(g, x0, col, P); \
                    dp_gemm_on(J->eng, DT, 0, 0, fg, P, K, wg, K, col, P, 1.0, y0, P); \
                    continue; \
                } \
                if (!DPN__CONV_PACKED || dp_gemm_pack_b_on(J->eng, DT, 0, 0, fg, L, K, wg, K, dpn__im2col_pack_##S, &pk, 0.0, st, L) != DP_OK) { \
                    for (j = 0; j < nb; j++) dpn__im2col_##S(g, x0 + j * g->c * g->h * g->w, col + j * P, L); \
                    dp_gemm_on(J->eng, DT, 0, 0, fg, L, K, wg, K, col, L, 0.0, st, L); \
                } \
                for (j = 0; j < nb; j++) for (o = 0; o < fg; o++) { \
                    T *yr = y0 + (j * g->f + o) * P; \
                    const T *sr = st + o * L + j * P; \
                    for (p = 0; p < P; p++) yr[p] += sr[p]; \
                } \
            } else { \
                if (nb == 1) dp_gemm_on(J->eng, DT, 1, 0, K, P, fg, wg, K, y0, P, 0.0, col, P); \
                else { \
                    for (j = 0; j < nb; j++) for (o = 0; o < fg; o++) memcpy(st + o * L + j * P, y0 + (j * g->f + o) * P, sizeof(T) * (size_t)P); \
                    dp_gemm_on(J->eng, DT, 1, 0, K, L, fg, wg, K, st, L, 0.0, col, L); \
                } \
                for (j = 0; j < nb; j++) dpn__col2im_##S(g, col + j * P, L, x0 + j * g->c * g->h * g->w); \
            } \
        } \
        if (J->fin) for (j = 0; j < nb; j++) dpn__conv_finish(J, i0 + j); \
    } \
} \
/* stages images [b, e) of the block for a weight gradient: their columns \
   and their output-gradient rows of group gi */ \
static void dpn__conv_pack_##S(int64_t b, int64_t e, void *user) { \
    const dpn__cjob *J = (const dpn__cjob *)user; \
    const dpn__cgeo *g = J->g; \
    int64_t j, o, cg = g->c / g->g, fg = g->f / g->g, P = g->oh * g->ow; \
    for (j = b; j < e; j++) { \
        int64_t i = J->i0 + j; \
        const T *yg = (const T *)J->y + (i * g->f + J->gi * fg) * P; \
        if (J->col) dpn__im2col_##S(g, (const T *)J->x + (i * g->c + J->gi * cg) * g->h * g->w, (T *)J->col + j * P, J->ld); \
        for (o = 0; o < fg; o++) memcpy((T *)J->st + o * J->ld + j * P, yg + o * P, sizeof(T) * (size_t)P); \
    } \
} \
static void dpn__conv_gemm_##S(dp_engine *eng, const dpn__cgeo *g, int mode, T *x, T *w, T *y, T *col, const struct dpn__cfin *fin) { \
    int64_t gi, cg = g->c / g->g, fg = g->f / g->g, K = cg * g->kh * g->kw, P = g->oh * g->ow, bl; \
    dpn__cjob J; \
    J.g = g; J.mode = mode; J.x = x; J.w = w; J.y = y; J.col = col; J.eng = eng; J.fin = fin; \
    if (mode != 2) { \
        int64_t chunks = dpn__conv_chunks(g), blocks; \
        J.bl = dpn__conv_fblock(g); \
        blocks = (g->n + J.bl - 1) / J.bl; \
        if (dpn__cgeo_pointwise(g)) J.col = NULL; \
        J.ld = chunks ? (blocks + chunks - 1) / chunks : 1;   /* blocks per chunk */ \
        dpn__range(eng, blocks, J.ld, dpn__conv_images_##S, &J); \
        return; \
    } \
    bl = dpn__conv_block(g); \
    J.st = col + K * bl * P; \
    for (J.i0 = 0; J.i0 < g->n; J.i0 += bl) { \
        int64_t b = g->n - J.i0 < bl ? g->n - J.i0 : bl; \
        J.ld = b * P; \
        for (gi = 0; gi < g->g; gi++) { \
            dpn__cpack pk; \
            int packed = DPN__CONV_PACKED; \
            J.gi = gi; J.col = packed ? NULL : col; \
            dpn__range(eng, b, 1, dpn__conv_pack_##S, &J); \
            pk.g = g; pk.x = x + (J.i0 * g->c + gi * cg) * g->h * g->w; pk.img = g->c * g->h * g->w; \
            if (packed && dp_gemm_pack_b_on(eng, DT, 0, 1, fg, K, b * P, (T *)J.st, J.ld, dpn__im2col_pack_t_##S, &pk, 1.0, w + gi * fg * K, K) == DP_OK) continue; \
            if (packed) { J.col = col; dpn__range(eng, b, 1, dpn__conv_pack_##S, &J); } \
            dp_gemm_on(eng, DT, 0, 1, fg, K, b * P, (T *)J.st, J.ld, col, J.ld, 1.0, w + gi * fg * K, K); \
        } \
    } \
}
DPN__CONV_KERNELS(float, f32, DP_FLOAT32)
DPN__CONV_KERNELS(double, f64, DP_FLOAT64)
#undef DPN__CONV_KERNELS
/* One of the three products on arrays of dtype t: x (n, c, h, w), w, y
   (n, f, oh, ow); the written one (y, x or w by mode) is added to. col:
   the temporary space (dpn__conv_temp), NULL for the direct loops. eng: the
   range loop's engine, NULL for the calling thread alone. fin (mode 0; NULL:
   none): runs after each image, on the thread that computed it. */
static void dpn__conv_run(dp_engine *eng, dp_dtype t, const dpn__cgeo *g, int mode, void *x, void *w, void *y, void *col, int direct,
                          const struct dpn__cfin *fin) {
    if (direct) {
        dpn__cjob J;
        memset(&J, 0, sizeof J);
        J.g = g; J.mode = mode; J.x = x; J.w = w; J.y = y; J.fin = fin;
        dpn__range(eng, mode == 2 ? g->f : g->n, 1, t == DP_FLOAT32 ? dpn__conv_direct_range_f32 : dpn__conv_direct_range_f64, &J);
    } else if (t == DP_FLOAT32) dpn__conv_gemm_f32(eng, g, mode, (float *)x, (float *)w, (float *)y, (float *)col, fin);
    else dpn__conv_gemm_f64(eng, g, mode, (double *)x, (double *)w, (double *)y, (double *)col, fin);
}
/* The range loop's engine for a convolution: its multiply-adds,
   n f (c/g) kh kw oh ow, against DPN__PAR_MIN. */
static dp_engine *dpn__conv_eng(const dp_kernel_ctx *k, const dpn__cgeo *g) {
    return dpn__par_eng(k, (double)g->n * (double)g->f * (double)(g->c / g->g) * (double)g->kh * (double)g->kw * (double)g->oh * (double)g->ow);
}
/* The products a kernel runs, as bits (1 << mode): its temporary space is
   the largest of theirs. */
#define DPN__CONV_Y 1
#define DPN__CONV_DX 2
#define DPN__CONV_DW 4
#define DPN__CONV_IMAGE 8   /* one image's columns (depeng_cuda.h's convolution: one image and group at a time) */
/* The elements of temporary space im2col + GEMM asks for to run the
   products in modes: the chunks' rooms for y and dx (none for a pointwise
   convolution), a block's columns and staged rows for dw. */
static double dpn__conv_temp_elems(const dpn__cgeo *g, int modes) {
    double n = 0, m;
    if (g->n <= 0) return 0;
    if (modes & (DPN__CONV_Y | DPN__CONV_DX)) {
        int64_t chunks = dpn__conv_chunks(g), bl = dpn__conv_fblock(g), blocks = (g->n + bl - 1) / bl;
        int64_t per = chunks ? (blocks + chunks - 1) / chunks : 1, used = (blocks + per - 1) / per;
        n = (double)used * dpn__conv_slot(g);
    }
    if (modes & DPN__CONV_DW) {
        m = ((double)(g->c / g->g) * (double)g->kh * (double)g->kw + (double)(g->f / g->g)) * (double)g->oh * (double)g->ow * (double)dpn__conv_block(g);
        if (m > n) n = m;
    }
    if ((modes & DPN__CONV_IMAGE) && !dpn__cgeo_pointwise(g)) {
        m = (double)(g->c / g->g) * (double)g->kh * (double)g->kw * (double)g->oh * (double)g->ow;
        if (m > n) n = m;
    }
    return n;
}
/* Which implementation (algo auto|im2col|direct) for the products in
   modes: auto takes im2col + GEMM unless a column of the GEMM is shorter
   than 8 elements ((c/g) kh kw: too little work per element copied; not
   for a pointwise convolution, which copies nothing) or the temporary
   space those products ask for (dpn__conv_temp_elems) exceeds workspace
   MiB (MXNet's limit on the temporary space). Returns 1 for direct. */
static int dpn__conv_direct(const dpn__cgeo *g, int64_t algo, int64_t workspace_mib, size_t elem, int modes) {
    double K = (double)(g->c / g->g) * (double)g->kh * (double)g->kw;
    if (algo == 1) return 0;
    if (algo == 2) return 1;
    if (!dpn__cgeo_pointwise(g) && K < 8) return 1;
    return dpn__conv_temp_elems(g, modes) * (double)elem > (double)workspace_mib * 1048576.0;
}
/* The temporary space for the products in modes (dpn__conv_temp_elems;
   none for direct); NULL with the kernel's error when there is no memory. */
static int dpn__conv_temp(const dp_kernel_ctx *k, const dpn__cgeo *g, int direct, size_t elem, int modes, void **col) {
    size_t n = direct ? 0 : (size_t)dpn__conv_temp_elems(g, modes);
    *col = NULL;
    if (!n) return 0;
    if ((*col = dp_temp_space(k->rc->engine, k->rc->ctx, n * elem)) == NULL) {
        dp_set_error(k->rc, "convolution: no memory for the im2col columns (the temporary space)");
        return -1;
    }
    return 0;
}
/* out = 0 unless req adds (the products all add to what is there). */
static void dpn__clear_for(dp_ndarray *a, dp_req req) { if (req != DP_REQ_ADD && req != DP_REQ_NULL) memset(dp_nd_data(a), 0, dp_nd_bytes(a)); }
/* y (n, f, P) += b per channel, split over images; db (f) = the sum of
   og (n, f, P) per channel, by req, split over channels (each channel's
   sum in one order). */
typedef struct dpn__bias_job { dp_dtype t; void *y; const void *b; int64_t f, P, n; dp_req req; } dpn__bias_job;
/* Runs of 8 with a fixed count, which gcc's -O2 vectorises (a loop of
   unknown length it leaves scalar), then the rest. */
static void dpn__bias_add_range(int64_t b, int64_t e, void *user) {
    const dpn__bias_job *J = (const dpn__bias_job *)user;
    int64_t i, o, p, l;
    for (i = b; i < e; i++) for (o = 0; o < J->f; o++) {
        double v = dpn__load_elem(J->b, J->t, o);
        if (J->t == DP_FLOAT32) {
            float *yo = (float *)J->y + (i * J->f + o) * J->P, vf = (float)v;
            for (p = 0; p + 8 <= J->P; p += 8) for (l = 0; l < 8; l++) yo[p + l] += vf;
            for (; p < J->P; p++) yo[p] += vf;
        } else {
            double *yo = (double *)J->y + (i * J->f + o) * J->P;
            for (p = 0; p + 8 <= J->P; p += 8) for (l = 0; l < 8; l++) yo[p + l] += v;
            for (; p < J->P; p++) yo[p] += v;
        }
    }
}
/* A channel's sum in double over 8 partial sums (element p of each plane
   into sum p % 8, the planes in order), added pairwise at the end: a
   fixed order, so the same bits in any split over channels; one running
   sum was a chain of dependent adds, 4 cycles an element (LeNet's first
   layer: 0.7 ms a step). */
static void dpn__bias_grad_range(int64_t b, int64_t e, void *user) {
    const dpn__bias_job *J = (const dpn__bias_job *)user;
    int64_t i, o, p, l;
    for (o = b; o < e; o++) {
        double s[8] = {0, 0, 0, 0, 0, 0, 0, 0};
        if (J->t == DP_FLOAT32) for (i = 0; i < J->n; i++) {
            const float *r = (const float *)J->b + (i * J->f + o) * J->P;
            for (p = 0; p + 8 <= J->P; p += 8) for (l = 0; l < 8; l++) s[l] += (double)r[p + l];
            for (; p < J->P; p++) s[p % 8] += (double)r[p];
        }
        else for (i = 0; i < J->n; i++) {
            const double *r = (const double *)J->b + (i * J->f + o) * J->P;
            for (p = 0; p + 8 <= J->P; p += 8) for (l = 0; l < 8; l++) s[l] += r[p + l];
            for (; p < J->P; p++) s[p % 8] += r[p];
        }
        dpn__store_elem(J->y, J->t, o, ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7])), J->req);
    }
}
static void dpn__bias_add(const dp_kernel_ctx *k, dp_dtype t, void *y, const void *b, int64_t n, int64_t f, int64_t P) {
    dpn__bias_job J;
    J.t = t; J.y = y; J.b = b; J.n = n; J.f = f; J.P = P; J.req = DP_REQ_ADD;
    dpn__range(dpn__par_eng(k, (double)n * (double)f * (double)P), n, 1, dpn__bias_add_range, &J);
}
static void dpn__bias_grad(const dp_kernel_ctx *k, dp_dtype t, const void *og, void *db, int64_t n, int64_t f, int64_t P, dp_req req) {
    dpn__bias_job J;
    J.t = t; J.y = db; J.b = og; J.n = n; J.f = f; J.P = P; J.req = req;
    dpn__range(dpn__par_eng(k, (double)n * (double)f * (double)P), f, 1, dpn__bias_grad_range, &J);
}

/* Convolution(data (n, c, [h,] w), weight (num_filter, c / num_group,
   [kh,] kw), bias (num_filter,)) as MXNet's. no_bias drops the bias input;
   the registry counts inputs by num_args, so no_bias = 1 goes with
   num_args = 2 (a symbol node or MXNet's JSON sets it from no_bias). */
/* the parameters' indices, Convolution's and Deconvolution's in one enum
   (C++ refuses a conditional between two) */
enum { DPN__CV_KERNEL, DPN__CV_STRIDE, DPN__CV_DILATE, DPN__CV_PAD, DPN__CV_FILTER, DPN__CV_GROUP, DPN__CV_WORKSPACE, DPN__CV_NO_BIAS,
       DPN__CV_NUM_ARGS, DPN__CV_ALGO,
       DPN__DC_KERNEL = 0, DPN__DC_STRIDE, DPN__DC_DILATE, DPN__DC_PAD, DPN__DC_ADJ, DPN__DC_TARGET, DPN__DC_FILTER, DPN__DC_GROUP,
       DPN__DC_WORKSPACE, DPN__DC_NO_BIAS, DPN__DC_NUM_ARGS, DPN__DC_ALGO };
static const dp_param_def dpn__conv_params[] = {
    {"kernel", DP_PARAM_SHAPE, NULL, 0, 0, NULL, "the window, (w,) or (h, w)"},
    {"stride", DP_PARAM_SHAPE, "()", 0, 0, NULL, "the step per spatial axis; () for 1"},
    {"dilate", DP_PARAM_SHAPE, "()", 0, 0, NULL, "the spacing of the window's taps; () for 1"},
    {"pad", DP_PARAM_SHAPE, "()", 0, 0, NULL, "zeros added on both sides of each spatial axis; () for 0"},
    {"num_filter", DP_PARAM_INT, NULL, 1, 1e9, NULL, "output channels"},
    {"num_group", DP_PARAM_INT, "1", 1, 1e9, NULL, "groups: channels and filters split into that many independent convolutions"},
    {"workspace", DP_PARAM_INT, "1024", 0, 1e9, NULL, "MiB of temporary space im2col + GEMM may ask for (its columns and staged rows) before algo auto goes direct"},
    {"no_bias", DP_PARAM_BOOL, "false", 0, 0, NULL, "no bias input (give num_args 2 with it)"},
    {"num_args", DP_PARAM_INT, "3", 2, 3, NULL, "inputs: 3 (data, weight, bias), or 2 with no_bias"},
    {"algo", DP_PARAM_ENUM, "auto", 0, 0, "auto|im2col|direct", "the implementation: im2col + GEMM, direct loops, or auto: im2col unless "
     "(c / num_group) kh kw < 8 or the temporary space it asks for exceeds workspace MiB (1x1, stride 1, no pad: GEMM, no columns forward)"},
};
/* Deconvolution: MXNet's, the transposed convolution. weight (c, num_filter
   / num_group, [kh,] kw) for data with c channels; output size per axis
   stride (in - 1) + dilate (kernel - 1) + 1 - 2 pad + adj, or target_shape
   when given (pad and adj then follow from it, as MXNet computes them). */
static const dp_param_def dpn__deconv_params[] = {
    {"kernel", DP_PARAM_SHAPE, NULL, 0, 0, NULL, "the window, (w,) or (h, w)"},
    {"stride", DP_PARAM_SHAPE, "()", 0, 0, NULL, "the step per spatial axis; () for 1"},
    {"dilate", DP_PARAM_SHAPE, "()", 0, 0, NULL, "the spacing of the window's taps; () for 1"},
    {"pad", DP_PARAM_SHAPE, "()", 0, 0, NULL, "cropped from both sides of each spatial axis; () for 0"},
    {"adj", DP_PARAM_SHAPE, "()", 0, 0, NULL, "added at the end of each spatial axis (less than stride or dilate); () for 0"},
    {"target_shape", DP_PARAM_SHAPE, "()", 0, 0, NULL, "the output's spatial size; pad and adj are then computed from it (() or all 0: not given)"},
    {"num_filter", DP_PARAM_INT, NULL, 1, 1e9, NULL, "output channels"},
    {"num_group", DP_PARAM_INT, "1", 1, 1e9, NULL, "groups: channels and filters split into that many independent parts"},
    {"workspace", DP_PARAM_INT, "512", 0, 1e9, NULL, "MiB of temporary space im2col + GEMM may ask for before algo auto goes direct"},
    {"no_bias", DP_PARAM_BOOL, "true", 0, 0, NULL, "no bias input (MXNet's default; give num_args 3 with no_bias false)"},
    {"num_args", DP_PARAM_INT, "2", 2, 3, NULL, "inputs: 2 (data, weight), or 3 with a bias"},
    {"algo", DP_PARAM_ENUM, "auto", 0, 0, "auto|im2col|direct", "the implementation, as Convolution's"},
};
/* Checks what Convolution and Deconvolution share: the window, the dtypes,
   data's rank, the groups, no_bias against num_args, and the weight and
   bias shapes; fills *w, *groups, *filters, and the channels of data. */
static int dpn__conv_common(const dp_params *p, int deconv, int nin, const dp_shape *is, const dp_dtype *it, dpn__win *w,
                            char *msg, size_t cap) {
    int ik = deconv ? DPN__DC_KERNEL : DPN__CV_KERNEL, ig = deconv ? DPN__DC_GROUP : DPN__CV_GROUP;
    int ifl = deconv ? DPN__DC_FILTER : DPN__CV_FILTER, inb = deconv ? DPN__DC_NO_BIAS : DPN__CV_NO_BIAS;
    int64_t groups = p->v[ig].i, f = p->v[ifl].i, c;
    dp_shape ws;
    char s1[160], s2[160], s3[160];
    int a, i;
    if (dpn__win_parse(&p->v[ik].shape, &p->v[ik + 1].shape, &p->v[ik + 2].shape, &p->v[ik + 3].shape, w, msg, cap)) return -1;
    if ((p->v[inb].i != 0) != (nin == 2)) {
        snprintf(msg, cap, "no_bias %d with %d inputs: no_bias 1 takes (data, weight) with num_args 2, no_bias 0 takes (data, weight, bias) with num_args 3",
                 (int)p->v[inb].i, nin);
        return -1;
    }
    for (i = 0; i < nin; i++)
        if (it[i] != it[0] || (it[0] != DP_FLOAT32 && it[0] != DP_FLOAT64)) { snprintf(msg, cap, "data, weight and bias: all float32 or all float64"); return -1; }
    if (is[0].ndim != w->nd + 2) {
        snprintf(msg, cap, "data %s: a %d-D window (kernel %s) needs data of %d axes (batch, channel, %s)", dpn__shape_str(&is[0], s1, sizeof s1),
                 w->nd, dpn__shape_str(&p->v[ik].shape, s2, sizeof s2), w->nd + 2, w->nd == 2 ? "height, width" : "width");
        return -1;
    }
    c = is[0].dims[1];
    if (c % groups || f % groups) {
        snprintf(msg, cap, "num_group %lld does not divide %s (data %s, num_filter %lld)", (long long)groups,
                 c % groups ? "data's channels" : "num_filter", dpn__shape_str(&is[0], s1, sizeof s1), (long long)f);
        return -1;
    }
    memset(&ws, 0, sizeof ws);
    ws.ndim = w->nd + 2;
    ws.dims[0] = deconv ? c : f; ws.dims[1] = deconv ? f / groups : c / groups;
    for (a = 0; a < w->nd; a++) ws.dims[2 + a] = w->k[2 - w->nd + a];
    if (is[1].ndim != ws.ndim || memcmp(is[1].dims, ws.dims, sizeof(int64_t) * (size_t)ws.ndim)) {
        snprintf(msg, cap, "weight %s: needs %s for data %s", dpn__shape_str(&is[1], s1, sizeof s1), dpn__shape_str(&ws, s2, sizeof s2),
                 dpn__shape_str(&is[0], s3, sizeof s3));
        return -1;
    }
    if (nin == 3 && (is[2].ndim != 1 || is[2].dims[0] != f)) {
        snprintf(msg, cap, "bias %s: needs (%lld,) (num_filter)", dpn__shape_str(&is[2], s1, sizeof s1), (long long)f);
        return -1;
    }
    return 0;
}
/* The output spatial size of a convolution along one axis, or -1 with msg. */
static int64_t dpn__conv_out(const char *axis, int64_t in, int64_t k, int64_t s, int64_t d, int64_t p, const dp_shape *data,
                             char *msg, size_t cap) {
    int64_t span = d * (k - 1) + 1;
    char s1[160];
    if (span > in + 2 * p) {
        snprintf(msg, cap, "kernel %lld (dilated: %lld) along %s is larger than the padded input %lld (data %s, pad %lld)", (long long)k,
                 (long long)span, axis, (long long)(in + 2 * p), dpn__shape_str(data, s1, sizeof s1), (long long)p);
        return -1;
    }
    return (in + 2 * p - span) / s + 1;
}
static int dpn__infer_conv(const dp_params *p, int nin, const dp_shape *is, const dp_dtype *it, int nout,
                           dp_shape *os, dp_dtype *ot, char *msg, size_t cap) {
    dpn__win w;
    int64_t h, wd, oh = 1, ow;
    (void)nout;
    if (dpn__conv_common(p, 0, nin, is, it, &w, msg, cap)) return -1;
    dpn__spatial(&is[0], w.nd, &h, &wd);
    if (w.nd == 2 && (oh = dpn__conv_out("height", h, w.k[0], w.s[0], w.d[0], w.p[0], &is[0], msg, cap)) < 0) return -1;
    if ((ow = dpn__conv_out("width", wd, w.k[1], w.s[1], w.d[1], w.p[1], &is[0], msg, cap)) < 0) return -1;
    *os = is[0];
    os->dims[1] = p->v[DPN__CV_FILTER].i;
    if (w.nd == 2) { os->dims[2] = oh; os->dims[3] = ow; } else os->dims[2] = ow;
    *ot = it[0];
    return 0;
}
/* The geometry of a Convolution from its data's shape and parameters
   (already checked by the inference); *direct: the implementation. */
static void dpn__conv_geo_of(const dp_params *p, const dp_shape *data, const dp_shape *out, dpn__cgeo *g) {
    dpn__win w;
    char msg[8];
    int64_t h, wd, oh, ow;
    dpn__win_parse(&p->v[DPN__CV_KERNEL].shape, &p->v[DPN__CV_STRIDE].shape, &p->v[DPN__CV_DILATE].shape, &p->v[DPN__CV_PAD].shape, &w, msg, sizeof msg);
    dpn__spatial(data, w.nd, &h, &wd);
    dpn__spatial(out, w.nd, &oh, &ow);
    dpn__cgeo_set(g, &w, data->dims[0], data->dims[1], h, wd, p->v[DPN__CV_FILTER].i, oh, ow, p->v[DPN__CV_GROUP].i);
}
/* A fused Convolution's work after each image: the bias (the same
   per-image loop as dpn__bias_add's), then the fused operator on the
   image's block. */
struct dpn__cfin { const dp_kernel_ctx *k; const dpn__post *post; dpn__bias_job bias; int with_bias; };
static void dpn__conv_finish(const dpn__cjob *J, int64_t n) {
    if (J->fin->with_bias) dpn__bias_add_range(n, n + 1, (void *)(uintptr_t)&J->fin->bias);
    dpn__post_block(J->fin->k, J->fin->post, n);
}
/* Convolution's forward, with post (NULL: none; else one block an image)
   fused */
static int dpn__conv_fwd(const dp_kernel_ctx *k, const dpn__post *post) {
    dp_dtype t = dp_nd_dtype(k->inputs[0]);
    size_t elem = dp_dtype_size(t);
    dpn__cgeo g;
    struct dpn__cfin fin;
    void *col;
    int direct, modes;
    if (k->req[0] == DP_REQ_NULL) return 0;
    dpn__conv_geo_of(k->params, dp_nd_shape(k->inputs[0]), dp_nd_shape(k->outputs[0]), &g);
    modes = DPN__CONV_Y;
    direct = dpn__conv_direct(&g, k->params->v[DPN__CV_ALGO].i, k->params->v[DPN__CV_WORKSPACE].i, elem, modes);
    if (dpn__conv_temp(k, &g, direct, elem, modes, &col)) return DP_ERROR_OUT_OF_MEMORY;
    dpn__clear_for(k->outputs[0], k->req[0]);
    if (post) {
        memset(&fin, 0, sizeof fin);
        fin.k = k; fin.post = post; fin.with_bias = k->num_inputs == 3;
        fin.bias.t = t; fin.bias.y = dp_nd_data(k->outputs[0]); fin.bias.b = fin.with_bias ? dp_nd_data(k->inputs[2]) : NULL;
        fin.bias.n = g.n; fin.bias.f = g.f; fin.bias.P = g.oh * g.ow; fin.bias.req = DP_REQ_ADD;
    }
    dpn__conv_run(dpn__conv_eng(k, &g), t, &g, 0, dp_nd_data(k->inputs[0]), dp_nd_data(k->inputs[1]), dp_nd_data(k->outputs[0]), col, direct,
                  post ? &fin : NULL);
    if (post) return dpn__post_status(post);
    if (k->num_inputs == 3) dpn__bias_add(k, t, dp_nd_data(k->outputs[0]), dp_nd_data(k->inputs[2]), g.n, g.f, g.oh * g.ow);
    return 0;
}
static int dpn__k_conv(const dp_kernel_ctx *k) { return dpn__conv_fwd(k, NULL); }
/* inputs (og, data, weight[, bias]); outputs (d data, d weight[, d bias]) */
static int dpn__kg_conv(const dp_kernel_ctx *k) {
    dp_dtype t = dp_nd_dtype(k->inputs[1]);
    size_t elem = dp_dtype_size(t);
    dpn__cgeo g;
    void *col, *og = dp_nd_data(k->inputs[0]);
    int direct, modes;
    dpn__conv_geo_of(k->params, dp_nd_shape(k->inputs[1]), dp_nd_shape(k->inputs[0]), &g);
    modes = (k->req[1] != DP_REQ_NULL ? DPN__CONV_DW : 0) | (k->req[0] != DP_REQ_NULL ? DPN__CONV_DX : 0);
    direct = dpn__conv_direct(&g, k->params->v[DPN__CV_ALGO].i, k->params->v[DPN__CV_WORKSPACE].i, elem, modes);
    if (dpn__conv_temp(k, &g, direct, elem, modes, &col)) return DP_ERROR_OUT_OF_MEMORY;
    if (k->req[1] != DP_REQ_NULL) {
        dpn__clear_for(k->outputs[1], k->req[1]);
        dpn__conv_run(dpn__conv_eng(k, &g), t, &g, 2, dp_nd_data(k->inputs[1]), dp_nd_data(k->outputs[1]), og, col, direct, NULL);
    }
    if (k->req[0] != DP_REQ_NULL) {
        dpn__clear_for(k->outputs[0], k->req[0]);
        dpn__conv_run(dpn__conv_eng(k, &g), t, &g, 1, dp_nd_data(k->outputs[0]), dp_nd_data(k->inputs[2]), og, col, direct, NULL);
    }
    if (k->num_outputs == 3 && k->req[2] != DP_REQ_NULL) dpn__bias_grad(k, t, og, dp_nd_data(k->outputs[2]), g.n, g.f, g.oh * g.ow, k->req[2]);
    return 0;
}
/* The window of a Deconvolution with its effective pad and adj (from
   target_shape when given), and its output size; -1 with msg. */
static int dpn__deconv_window(const dp_params *p, const dp_shape *data, dpn__win *w, int64_t adj[2], int64_t out[2], char *msg, size_t cap) {
    const dp_shape *as = &p->v[DPN__DC_ADJ].shape, *ts = &p->v[DPN__DC_TARGET].shape;
    char s1[160], s2[160], s3[160];
    int a, target;
    if (dpn__win_parse(&p->v[DPN__DC_KERNEL].shape, &p->v[DPN__DC_STRIDE].shape, &p->v[DPN__DC_DILATE].shape, &p->v[DPN__DC_PAD].shape, w, msg, cap)) return -1;
    if ((as->ndim && as->ndim != w->nd) || (ts->ndim && ts->ndim != w->nd)) {
        snprintf(msg, cap, "adj %s, target_shape %s: () or one entry per spatial axis (%d)", dpn__shape_str(as, s1, sizeof s1),
                 dpn__shape_str(ts, s2, sizeof s2), w->nd);
        return -1;
    }
    adj[0] = adj[1] = 0; out[0] = out[1] = 1;
    for (a = 0; a < ts->ndim && ts->dims[a] == 0; a++) {}
    target = a < ts->ndim;                   /* all zeros: not given, as MXNet reads it */
    for (a = 2 - w->nd; a < 2; a++) {
        int64_t in = data->dims[2 + a - (2 - w->nd)], span = w->d[a] * (w->k[a] - 1) + 1, full = w->s[a] * (in - 1) + span;
        int q = a - (2 - w->nd);
        if (target) {
            int64_t total = full - ts->dims[q];
            if (ts->dims[q] < 1 || total < 0) {
                snprintf(msg, cap, "target_shape %s: axis %d must be 1..%lld for data %s", dpn__shape_str(ts, s1, sizeof s1), q, (long long)full,
                         dpn__shape_str(data, s2, sizeof s2));
                return -1;
            }
            adj[a] = total % 2; w->p[a] = (total + 1) / 2;
        } else if (as->ndim) {
            adj[a] = as->dims[q];
            if (adj[a] < 0 || (adj[a] >= w->s[a] && adj[a] >= w->d[a])) {
                snprintf(msg, cap, "adj %s: each entry must be below stride or dilate", dpn__shape_str(as, s1, sizeof s1));
                return -1;
            }
        }
        out[a] = full - 2 * w->p[a] + adj[a];
        if (out[a] < 1) {
            snprintf(msg, cap, "pad %s crops the whole output (data %s, kernel %s)", dpn__shape_str(&p->v[DPN__DC_PAD].shape, s1, sizeof s1),
                     dpn__shape_str(data, s2, sizeof s2), dpn__shape_str(&p->v[DPN__DC_KERNEL].shape, s3, sizeof s3));
            return -1;
        }
    }
    return 0;
}
static int dpn__infer_deconv(const dp_params *p, int nin, const dp_shape *is, const dp_dtype *it, int nout,
                             dp_shape *os, dp_dtype *ot, char *msg, size_t cap) {
    dpn__win w;
    int64_t adj[2], out[2];
    (void)nout;
    if (dpn__conv_common(p, 1, nin, is, it, &w, msg, cap) || dpn__deconv_window(p, &is[0], &w, adj, out, msg, cap)) return -1;
    *os = is[0];
    os->dims[1] = p->v[DPN__DC_FILTER].i;
    if (w.nd == 2) { os->dims[2] = out[0]; os->dims[3] = out[1]; } else os->dims[2] = out[1];
    *ot = it[0];
    return 0;
}
/* A deconvolution is the convolution whose input is its output: that
   convolution's geometry (input = the deconvolution's output, with the
   bottom and right adj rows beyond what the convolution reads). */
static void dpn__deconv_geo_of(const dp_params *p, const dp_shape *data, const dp_shape *out, dpn__cgeo *g) {
    dpn__win w;
    int64_t adj[2], o[2], h, wd, oh, ow;
    char msg[8];
    dpn__deconv_window(p, data, &w, adj, o, msg, sizeof msg);
    dpn__spatial(out, w.nd, &oh, &ow);
    dpn__spatial(data, w.nd, &h, &wd);
    dpn__cgeo_set(g, &w, data->dims[0], out->dims[1], oh, ow, data->dims[1], h, wd, p->v[DPN__DC_GROUP].i);
}
static int dpn__k_deconv(const dp_kernel_ctx *k) {
    dp_dtype t = dp_nd_dtype(k->inputs[0]);
    size_t elem = dp_dtype_size(t);
    dpn__cgeo g;
    void *col;
    int direct, modes;
    if (k->req[0] == DP_REQ_NULL) return 0;
    dpn__deconv_geo_of(k->params, dp_nd_shape(k->inputs[0]), dp_nd_shape(k->outputs[0]), &g);
    modes = DPN__CONV_DX;
    direct = dpn__conv_direct(&g, k->params->v[DPN__DC_ALGO].i, k->params->v[DPN__DC_WORKSPACE].i, elem, modes);
    if (dpn__conv_temp(k, &g, direct, elem, modes, &col)) return DP_ERROR_OUT_OF_MEMORY;
    dpn__clear_for(k->outputs[0], k->req[0]);
    dpn__conv_run(dpn__conv_eng(k, &g), t, &g, 1, dp_nd_data(k->outputs[0]), dp_nd_data(k->inputs[1]), dp_nd_data(k->inputs[0]), col, direct, NULL);
    if (k->num_inputs == 3) dpn__bias_add(k, t, dp_nd_data(k->outputs[0]), dp_nd_data(k->inputs[2]), g.n, g.c, g.h * g.w);
    return 0;
}
static int dpn__kg_deconv(const dp_kernel_ctx *k) {
    dp_dtype t = dp_nd_dtype(k->inputs[1]);
    size_t elem = dp_dtype_size(t);
    dpn__cgeo g;
    void *col, *og = dp_nd_data(k->inputs[0]);
    int direct, modes;
    dpn__deconv_geo_of(k->params, dp_nd_shape(k->inputs[1]), dp_nd_shape(k->inputs[0]), &g);
    modes = (k->req[1] != DP_REQ_NULL ? DPN__CONV_DW : 0) | (k->req[0] != DP_REQ_NULL ? DPN__CONV_Y : 0);
    direct = dpn__conv_direct(&g, k->params->v[DPN__DC_ALGO].i, k->params->v[DPN__DC_WORKSPACE].i, elem, modes);
    if (dpn__conv_temp(k, &g, direct, elem, modes, &col)) return DP_ERROR_OUT_OF_MEMORY;
    if (k->req[1] != DP_REQ_NULL) {
        dpn__clear_for(k->outputs[1], k->req[1]);
        dpn__conv_run(dpn__conv_eng(k, &g), t, &g, 2, og, dp_nd_data(k->outputs[1]), dp_nd_data(k->inputs[1]), col, direct, NULL);
    }
    if (k->req[0] != DP_REQ_NULL) {
        dpn__clear_for(k->outputs[0], k->req[0]);
        dpn__conv_run(dpn__conv_eng(k, &g), t, &g, 0, og, dp_nd_data(k->inputs[2]), dp_nd_data(k->outputs[0]), col, direct, NULL);
    }
    if (k->num_outputs == 3 && k->req[2] != DP_REQ_NULL) dpn__bias_grad(k, t, og, dp_nd_data(k->outputs[2]), g.n, g.c, g.h * g.w, k->req[2]);
    return 0;
}
/* A gradient operator's outputs: the shapes of the forward's inputs (its
   inputs after the output gradient). */
static int dpn__infer_grad_of_inputs(const dp_params *p, int nin, const dp_shape *is, const dp_dtype *it, int nout,
                                     dp_shape *os, dp_dtype *ot, char *msg, size_t cap) {
    int i;
    (void)p; (void)msg; (void)cap;
    if (nin != nout + 1) return -1;
    for (i = 0; i < nout; i++) { os[i] = is[i + 1]; ot[i] = it[i + 1]; }
    return 0;
}

/* Pooling, MXNet's: max, avg or sum over windows of data (n, c, [h,] w);
   global_pool takes the whole plane. pooling_convention valid rounds the
   output size down, full up (a last window may then reach past the padded
   input: it covers what it reaches). Padding is never a maximum; avg
   divides by the window's size within the padded input
   (count_include_pad, MXNet's default) or by its elements in the input. A
   window with no input element gives 0. */
enum { DPN__PL_KERNEL, DPN__PL_TYPE, DPN__PL_GLOBAL, DPN__PL_CONV, DPN__PL_STRIDE, DPN__PL_PAD, DPN__PL_INCLUDE_PAD };
static const dp_param_def dpn__pool_params[] = {
    {"kernel", DP_PARAM_SHAPE, "()", 0, 0, NULL, "the window, (w,) or (h, w); ignored with global_pool"},
    {"pool_type", DP_PARAM_ENUM, "max", 0, 0, "max|avg|sum", "what a window gives"},
    {"global_pool", DP_PARAM_BOOL, "false", 0, 0, NULL, "one window over each whole plane"},
    {"pooling_convention", DP_PARAM_ENUM, "valid", 0, 0, "valid|full", "output size rounded down (valid) or up (full)"},
    {"stride", DP_PARAM_SHAPE, "()", 0, 0, NULL, "the step per spatial axis; () for 1"},
    {"pad", DP_PARAM_SHAPE, "()", 0, 0, NULL, "padding on both sides of each spatial axis; () for 0"},
    {"count_include_pad", DP_PARAM_BOOL, "true", 0, 0, NULL, "avg: padding counts in the divisor"},
};
/* The pooling window for data of shape s (global: the whole plane). */
static int dpn__pool_window(const dp_params *p, const dp_shape *s, dpn__win *w, int64_t out[2], char *msg, size_t cap) {
    char s1[160], s2[160], s3[160];
    int a;
    if (p->v[DPN__PL_GLOBAL].i) {
        if (s->ndim != 3 && s->ndim != 4) { snprintf(msg, cap, "data %s: global_pool needs (n, c, w) or (n, c, h, w)", dpn__shape_str(s, s1, sizeof s1)); return -1; }
        w->nd = s->ndim - 2;
        w->k[0] = s->ndim == 4 ? s->dims[2] : 1; w->k[1] = s->dims[s->ndim - 1];
        w->s[0] = w->s[1] = w->d[0] = w->d[1] = 1; w->p[0] = w->p[1] = 0;
        out[0] = out[1] = 1;
        return 0;
    }
    if (dpn__win_parse(&p->v[DPN__PL_KERNEL].shape, &p->v[DPN__PL_STRIDE].shape, NULL, &p->v[DPN__PL_PAD].shape, w, msg, cap)) return -1;
    if (s->ndim != w->nd + 2) {
        snprintf(msg, cap, "data %s: a %d-D window (kernel %s) needs data of %d axes", dpn__shape_str(s, s1, sizeof s1), w->nd,
                 dpn__shape_str(&p->v[DPN__PL_KERNEL].shape, s2, sizeof s2), w->nd + 2);
        return -1;
    }
    out[0] = 1;
    for (a = 2 - w->nd; a < 2; a++) {
        int64_t in = s->dims[2 + a - (2 - w->nd)], room = in + 2 * w->p[a] - w->k[a];
        if (w->p[a] >= w->k[a]) {
            snprintf(msg, cap, "pad %s: each entry must be below the kernel's %s", dpn__shape_str(&p->v[DPN__PL_PAD].shape, s1, sizeof s1),
                     dpn__shape_str(&p->v[DPN__PL_KERNEL].shape, s2, sizeof s2));
            return -1;
        }
        if (room < 0) {
            snprintf(msg, cap, "kernel %s is larger than the padded input (data %s, pad %s)", dpn__shape_str(&p->v[DPN__PL_KERNEL].shape, s1, sizeof s1),
                     dpn__shape_str(s, s2, sizeof s2), dpn__shape_str(&p->v[DPN__PL_PAD].shape, s3, sizeof s3));
            return -1;
        }
        out[a] = 1 + (p->v[DPN__PL_CONV].i ? (room + w->s[a] - 1) / w->s[a] : room / w->s[a]);
    }
    return 0;
}
static int dpn__infer_pool(const dp_params *p, int nin, const dp_shape *is, const dp_dtype *it, int nout,
                           dp_shape *os, dp_dtype *ot, char *msg, size_t cap) {
    dpn__win w;
    int64_t out[2];
    (void)nin; (void)nout;
    if (it[0] != DP_FLOAT32 && it[0] != DP_FLOAT64) { snprintf(msg, cap, "data: float32 or float64"); return -1; }
    if (dpn__pool_window(p, &is[0], &w, out, msg, cap)) return -1;
    *os = is[0];
    if (w.nd == 2) { os->dims[2] = out[0]; os->dims[3] = out[1]; } else os->dims[2] = out[1];
    *ot = it[0];
    return 0;
}
/* Walks every window: forward (mode 0) writes y by req; backward (mode 1)
   adds og's share into dx (cleared first unless req adds). */
static void dpn__pool_planes(const dp_params *p, dp_dtype t, const dp_shape *xs, const dp_shape *ys, const void *x, void *y, const void *og,
                             void *dx, int mode, dp_req req, int64_t o0, int64_t o1) {
    dpn__win w;
    int64_t out[2], h, wd, oh, ow, o, oy, ox, iy, ix;
    int type = (int)p->v[DPN__PL_TYPE].i, incl = (int)p->v[DPN__PL_INCLUDE_PAD].i;
    char msg[8];
    /* element access inlined (float32 or float64), not through dp_dtype_load */
#define DPN__LD(a, i) (t == DP_FLOAT32 ? (double)((const float *)(a))[i] : ((const double *)(a))[i])
#define DPN__ADD(a, i, v) (t == DP_FLOAT32 ? (void)(((float *)(a))[i] += (float)(v)) : (void)(((double *)(a))[i] += (v)))
    dpn__pool_window(p, xs, &w, out, msg, sizeof msg);
    dpn__spatial(xs, w.nd, &h, &wd);
    dpn__spatial(ys, w.nd, &oh, &ow);
    for (o = o0; o < o1; o++) for (oy = 0; oy < oh; oy++) for (ox = 0; ox < ow; ox++) {
        int64_t y0 = oy * w.s[0] - w.p[0], x0 = ox * w.s[1] - w.p[1];
        int64_t y1 = y0 + w.k[0] < h + w.p[0] ? y0 + w.k[0] : h + w.p[0], x1 = x0 + w.k[1] < wd + w.p[1] ? x0 + w.k[1] : wd + w.p[1];
        int64_t padded = (y1 - y0) * (x1 - x0), yi0 = y0 < 0 ? 0 : y0, xi0 = x0 < 0 ? 0 : x0;
        int64_t yi1 = y1 < h ? y1 : h, xi1 = x1 < wd ? x1 : wd, yo = (o * oh + oy) * ow + ox, best = -1;
        double acc = 0, div;
        if (yi1 <= yi0 || xi1 <= xi0) { if (mode == 0) dpn__store_elem(y, t, yo, 0, req); continue; }
        div = type == 1 ? (double)(incl ? padded : (yi1 - yi0) * (xi1 - xi0)) : 1.0;
        for (iy = yi0; iy < yi1; iy++) for (ix = xi0; ix < xi1; ix++) {
            int64_t xi = (o * h + iy) * wd + ix;
            if (type == 0) { double v = DPN__LD(x, xi); if (best < 0 || v > acc || (v != v && acc == acc)) { acc = v; best = xi; } }
            else if (mode == 0) acc += DPN__LD(x, xi);
            else DPN__ADD(dx, xi, DPN__LD(og, yo) / div);
        }
        if (mode == 0) dpn__store_elem(y, t, yo, type == 0 ? acc : acc / div, req);
        else if (type == 0) DPN__ADD(dx, best, DPN__LD(og, yo));
    }
#undef DPN__LD
#undef DPN__ADD
}
/* 2x2 max pooling at stride 2 with no padding, whose windows all lie in
   the plane (h >= 2 oh, w >= 2 ow: LeNet's), as its own loop per dtype:
   the same maximum as dpn__pool_planes (its scan order and NaN rule), the
   output written by req; the backward writes each window's four gradient
   elements at once (og's share at the maximum, 0 + og as the cleared
   output's sum gives, 0 elsewhere and in the rows and columns no window
   covers) unless req adds, when it adds og's share at the maximum only.
   Those writes are selects too (each element picks 0 or og's share from a
   two-entry array by its index's test, the added one is addressed by
   arithmetic on the place): the maximum's place is as random as in the
   forward, and a branch or a pointer chosen by it mispredicted the same
   way. */
static int dpn__pool2_fits(const dp_params *p, const dp_shape *xs, const dp_shape *ys) {
    dpn__win w;
    int64_t out[2], h, wd, oh, ow;
    char msg[8];
    if (p->v[DPN__PL_TYPE].i != 0 || p->v[DPN__PL_GLOBAL].i || xs->ndim != 4 || dpn__pool_window(p, xs, &w, out, msg, sizeof msg)) return 0;
    dpn__spatial(xs, 2, &h, &wd);
    dpn__spatial(ys, 2, &oh, &ow);
    return w.k[0] == 2 && w.k[1] == 2 && w.s[0] == 2 && w.s[1] == 2 && w.p[0] == 0 && w.p[1] == 0 && 2 * oh <= h && 2 * ow <= wd;
}
/* The 2x2 window's largest element and its place (0..3, row by row), as
   the general loop finds them: the first largest, or the first NaN. Written
   as selects (maxss and blends), not branches: on a layer's outputs each
   comparison goes either way at random, and mispredicted branches made
   this loop 4-8x slower than its memory traffic. A NaN in the window, rare,
   takes the scan. */
#define DPN__POOL2_PICK(T, a, b, c, d, m, at) do { \
    T ab_ = (b) > (a) ? (b) : (a), cd_ = (d) > (c) ? (d) : (c); \
    m = cd_ > ab_ ? cd_ : ab_; \
    at = ((a) != m) * (1 + ((b) != m) * (1 + ((c) != m))); \
    if (m != m || (a) != (a) || (b) != (b) || (c) != (c) || (d) != (d)) { \
        at = (a) != (a) ? 0 : (b) != (b) ? 1 : (c) != (c) ? 2 : 3; \
        m = at == 0 ? (a) : at == 1 ? (b) : at == 2 ? (c) : (d); \
    } } while (0)
/* float32 on x86-64 (SSE2, every such CPU; DEPENG_NO_SIMD turns it off):
   four windows at once. The picks are the scalar ones lane by lane: maxps
   (b, a) is "b > a ? b : a", cmpneq is "!=" (true for NaN), and the four
   places' masks follow from "a != m", "b != m", "c != m"; a group with a
   NaN goes through the scalar pick. The backward's writes are the masks
   and-ed with 0 + og (so 0 + og or +0, as the scalar loop writes). Returns
   the windows done (a multiple of 4); the rest is the scalar loop's. */
#if defined(__SSE2__) && !defined(__CUDACC__) && !defined(DEPENG_NO_SIMD)
#include <emmintrin.h>
#define DPN__POOL2_SSE 1
static int64_t dpn__pool2_sse(const float *r0, const float *r1, int64_t ow, float *yr, const float *gr, float *d0, float *d1, int add) {
    const __m128 zero = _mm_setzero_ps();
    int64_t ox, q;
    for (ox = 0; ox + 4 <= ow; ox += 4) {
        __m128 u0 = _mm_loadu_ps(r0 + 2 * ox), u1 = _mm_loadu_ps(r0 + 2 * ox + 4);
        __m128 v0 = _mm_loadu_ps(r1 + 2 * ox), v1 = _mm_loadu_ps(r1 + 2 * ox + 4);
        __m128 a = _mm_shuffle_ps(u0, u1, 0x88), b = _mm_shuffle_ps(u0, u1, 0xDD);
        __m128 c = _mm_shuffle_ps(v0, v1, 0x88), d = _mm_shuffle_ps(v0, v1, 0xDD);
        __m128 m = _mm_max_ps(_mm_max_ps(d, c), _mm_max_ps(b, a)), na, nb, nc, g;
        if (_mm_movemask_ps(_mm_or_ps(_mm_cmpunord_ps(a, b), _mm_cmpunord_ps(c, d)))) {
            for (q = ox; q < ox + 4; q++) {   /* a NaN in one of the four: the scalar pick */
                float mq;
                int at;
                DPN__POOL2_PICK(float, r0[2 * q], r0[2 * q + 1], r1[2 * q], r1[2 * q + 1], mq, at);
                if (yr) { if (add) yr[q] += mq; else yr[q] = mq; continue; }
                d0[2 * q] = at == 0 ? 0.0f + gr[q] : 0.0f; d0[2 * q + 1] = at == 1 ? 0.0f + gr[q] : 0.0f;
                d1[2 * q] = at == 2 ? 0.0f + gr[q] : 0.0f; d1[2 * q + 1] = at == 3 ? 0.0f + gr[q] : 0.0f;
            }
            continue;
        }
        if (yr) { _mm_storeu_ps(yr + ox, add ? _mm_add_ps(_mm_loadu_ps(yr + ox), m) : m); continue; }
        na = _mm_cmpneq_ps(a, m); nb = _mm_and_ps(na, _mm_cmpneq_ps(b, m)); nc = _mm_and_ps(nb, _mm_cmpneq_ps(c, m));
        g = _mm_add_ps(zero, _mm_loadu_ps(gr + ox));
        a = _mm_andnot_ps(na, g);                    /* place 0: a == m */
        b = _mm_and_ps(_mm_andnot_ps(nb, na), g);    /* 1: a != m, b == m */
        c = _mm_and_ps(_mm_andnot_ps(nc, nb), g);    /* 2 */
        d = _mm_and_ps(nc, g);                       /* 3 */
        _mm_storeu_ps(d0 + 2 * ox, _mm_unpacklo_ps(a, b)); _mm_storeu_ps(d0 + 2 * ox + 4, _mm_unpackhi_ps(a, b));
        _mm_storeu_ps(d1 + 2 * ox, _mm_unpacklo_ps(c, d)); _mm_storeu_ps(d1 + 2 * ox + 4, _mm_unpackhi_ps(c, d));
    }
    return ox;
}
#define DPN__POOL2_VEC_f32(r0, r1, yr, gr, d0, d1, add) ox = dpn__pool2_sse(r0, r1, ow, yr, gr, d0, d1, add);
#else
#define DPN__POOL2_VEC_f32(r0, r1, yr, gr, d0, d1, add) ox = 0;
#endif
#define DPN__POOL2_VEC_f64(r0, r1, yr, gr, d0, d1, add) ox = 0;
#define DPN__POOL2(T, S) \
static void dpn__pool2_##S(int64_t h, int64_t wd, int64_t oh, int64_t ow, const T *x, T *y, const T *og, T *dx, int mode, dp_req req, \
                           int64_t o0, int64_t o1) { \
    int64_t o, oy, ox, e; \
    for (o = o0; o < o1; o++) { \
        const T *xp = x + o * h * wd; \
        T *dp = mode ? dx + o * h * wd : NULL; \
        for (oy = 0; oy < oh; oy++) { \
            const T *r0 = xp + 2 * oy * wd, *r1 = r0 + wd; \
            if (mode == 0) { \
                T *yr = y + (o * oh + oy) * ow; \
                DPN__POOL2_VEC_##S(r0, r1, yr, NULL, NULL, NULL, req == DP_REQ_ADD) \
                for (; ox < ow; ox++) { \
                    T m; \
                    int at; \
                    DPN__POOL2_PICK(T, r0[2 * ox], r0[2 * ox + 1], r1[2 * ox], r1[2 * ox + 1], m, at); \
                    (void)at; \
                    if (req == DP_REQ_ADD) yr[ox] += m; else yr[ox] = m; \
                } \
            } else { \
                const T *gr = og + (o * oh + oy) * ow; \
                T *d0 = dp + 2 * oy * wd, *d1 = d0 + wd; \
                if (req == DP_REQ_ADD) ox = 0; \
                else { DPN__POOL2_VEC_##S(r0, r1, NULL, gr, d0, d1, 0) } \
                for (; ox < ow; ox++) { \
                    T m, sel[2]; \
                    int at; \
                    DPN__POOL2_PICK(T, r0[2 * ox], r0[2 * ox + 1], r1[2 * ox], r1[2 * ox + 1], m, at); \
                    (void)m; \
                    if (req == DP_REQ_ADD) { d0[(at >> 1) * wd + 2 * ox + (at & 1)] += gr[ox]; continue; } \
                    sel[0] = (T)0; sel[1] = (T)0 + gr[ox]; \
                    d0[2 * ox] = sel[at == 0]; d0[2 * ox + 1] = sel[at == 1]; \
                    d1[2 * ox] = sel[at == 2]; d1[2 * ox + 1] = sel[at == 3]; \
                } \
                if (req != DP_REQ_ADD) for (e = 2 * ow; e < wd; e++) d0[e] = d1[e] = (T)0; \
            } \
        } \
        if (mode && req != DP_REQ_ADD) for (e = 2 * oh * wd; e < h * wd; e++) dp[e] = (T)0; \
    } \
}
DPN__POOL2(float, f32)
DPN__POOL2(double, f64)
#undef DPN__POOL2
#undef DPN__POOL2_VEC_f32
#undef DPN__POOL2_VEC_f64
#undef DPN__POOL2_PICK
/* The planes (image, channel) are independent: a large pooling is split
   over the range loop by runs of planes of about DPN__PAR_GRAIN elements. */
typedef struct dpn__pool_job { const dp_params *p; dp_dtype t; const dp_shape *xs, *ys; const void *x, *og; void *y, *dx; int mode, fast; dp_req req; } dpn__pool_job;
static void dpn__pool_range(int64_t b, int64_t e, void *user) {
    const dpn__pool_job *J = (const dpn__pool_job *)user;
    if (J->fast) {
        int64_t h = J->xs->dims[2], wd = J->xs->dims[3], oh = J->ys->dims[2], ow = J->ys->dims[3];
        if (J->t == DP_FLOAT32) dpn__pool2_f32(h, wd, oh, ow, (const float *)J->x, (float *)J->y, (const float *)J->og, (float *)J->dx, J->mode, J->req, b, e);
        else dpn__pool2_f64(h, wd, oh, ow, (const double *)J->x, (double *)J->y, (const double *)J->og, (double *)J->dx, J->mode, J->req, b, e);
        return;
    }
    dpn__pool_planes(J->p, J->t, J->xs, J->ys, J->x, J->y, J->og, J->dx, J->mode, J->req, b, e);
}
/* fast: the 2x2 stride-2 loop (dpn__pool2_fits) */
static void dpn__pool_run(const dp_kernel_ctx *k, const dp_params *p, dp_dtype t, const dp_shape *xs, const dp_shape *ys, const void *x, void *y,
                          const void *og, void *dx, int mode, dp_req req, int fast) {
    dpn__pool_job J;
    int64_t planes = xs->dims[0] * xs->dims[1];
    J.p = p; J.t = t; J.xs = xs; J.ys = ys; J.x = x; J.y = y; J.og = og; J.dx = dx; J.mode = mode; J.req = req; J.fast = fast;
    int64_t per = planes ? (dp_shape_size(xs) + dp_shape_size(ys)) / planes : 1;   /* elements a plane reads and writes */
    dpn__range(dpn__par_eng(k, (double)dp_shape_size(xs) + (double)dp_shape_size(ys)), planes, per > 0 ? (DPN__PAR_GRAIN + per - 1) / per : 1,
               dpn__pool_range, &J);
}
static int dpn__k_pool(const dp_kernel_ctx *k) {
    const dp_shape *xs = dp_nd_shape(k->inputs[0]), *ys = dp_nd_shape(k->outputs[0]);
    if (k->req[0] == DP_REQ_NULL) return 0;
    dpn__pool_run(k, k->params, dp_nd_dtype(k->inputs[0]), xs, ys, dp_nd_data(k->inputs[0]), dp_nd_data(k->outputs[0]), NULL, NULL, 0, k->req[0],
                  dpn__pool2_fits(k->params, xs, ys));
    return 0;
}
/* inputs (og, data); output d data (the 2x2 loop writes all of it) */
static int dpn__kg_pool(const dp_kernel_ctx *k) {
    const dp_shape *xs = dp_nd_shape(k->inputs[1]), *ys = dp_nd_shape(k->inputs[0]);
    int fast;
    if (k->req[0] == DP_REQ_NULL) return 0;
    fast = dpn__pool2_fits(k->params, xs, ys);
    if (!fast) dpn__clear_for(k->outputs[0], k->req[0]);
    dpn__pool_run(k, k->params, dp_nd_dtype(k->inputs[1]), xs, ys, dp_nd_data(k->inputs[1]), NULL, dp_nd_data(k->inputs[0]), dp_nd_data(k->outputs[0]), 1,
                  k->req[0], fast);
    return 0;
}

/* Activation (act_type relu, sigmoid, tanh, softrelu, softsign) and
   LeakyReLU (leaky, elu, selu, gelu, prelu), MXNet's, element by element;
   the gradients read the input (Activation's relu, sigmoid and tanh: the
   output, see dpn__act_builtin). LeakyReLU prelu takes gamma, one slope per
   channel (axis 1) or one for all, as its second input (num_args 2). */
static const dp_param_def dpn__act_params[] = {
    {"act_type", DP_PARAM_ENUM, NULL, 0, 0, "relu|sigmoid|tanh|softrelu|softsign", "the function"},
};
enum { DPN__LR_TYPE, DPN__LR_SLOPE, DPN__LR_LOWER, DPN__LR_UPPER, DPN__LR_NUM_ARGS };
static const dp_param_def dpn__leaky_params[] = {
    {"act_type", DP_PARAM_ENUM, "leaky", 0, 0, "leaky|elu|selu|gelu|prelu", "the function"},
    {"slope", DP_PARAM_FLOAT, "0.25", 0, 0, NULL, "leaky: the slope below 0; elu: the scale of exp(x) - 1"},
    {"lower_bound", DP_PARAM_FLOAT, "0.125", 0, 0, NULL, "MXNet's rrelu bound (rrelu is not offered; accepted for its files)"},
    {"upper_bound", DP_PARAM_FLOAT, "0.334", 0, 0, NULL, "MXNet's rrelu bound (accepted for its files)"},
    {"num_args", DP_PARAM_INT, "1", 1, 2, NULL, "inputs: 1, or 2 for prelu (data, gamma)"},
};
static int dpn__infer_float(const dp_dtype *it, char *msg, size_t cap) {
    if (it[0] != DP_FLOAT32 && it[0] != DP_FLOAT64) { snprintf(msg, cap, "data: float32 or float64"); return -1; }
    return 0;
}
static int dpn__infer_act(const dp_params *p, int nin, const dp_shape *is, const dp_dtype *it, int nout,
                          dp_shape *os, dp_dtype *ot, char *msg, size_t cap) {
    (void)p; (void)nin; (void)nout;
    if (dpn__infer_float(it, msg, cap)) return -1;
    *os = is[0]; *ot = it[0];
    return 0;
}
/* Element-wise forward (grad 0: y = f(x)) or gradient (dx = og f'(x)),
   over element ranges split over the range loop when large (in chunks of
   DPN__PAR_GRAIN, each element as alone), of activation `type`
   (Activation's 3 and 4, softrelu and softsign: its relu, sigmoid and tanh
   run the built-in operators, dpn__act_builtin; LeakyReLU's 10 + its
   index: leaky, elu, selu, gelu), slope a. A loop per dtype and function,
   FWD f(x) and GRAD f'(x) of x, the element as a double: float32 computed
   in double and rounded once (leaky and softsign vectorise). */
typedef struct dpn__act_job { const dp_kernel_ctx *k; int type, grad; double a; } dpn__act_job;
#define DPN__ACT_LOOP(T, FWD, GRAD) do { \
        const T *xs_ = (const T *)xd, *og_ = (const T *)og; \
        T *y_ = (T *)y; \
        if (!grad && !add) for (i = b; i < e; i++) { double x = (double)xs_[i]; y_[i] = (T)(FWD); } \
        else if (!grad) for (i = b; i < e; i++) { double x = (double)xs_[i]; y_[i] = (T)((FWD) + (double)y_[i]); } \
        else if (!add) for (i = b; i < e; i++) { double x = (double)xs_[i]; y_[i] = (T)((GRAD) * (double)og_[i]); } \
        else for (i = b; i < e; i++) { double x = (double)xs_[i]; y_[i] = (T)((GRAD) * (double)og_[i] + (double)y_[i]); } \
    } while (0)
#define DPN__ACT_TYPES(T) do { \
        switch (type) { \
        case 3: DPN__ACT_LOOP(T, x > 20 ? x : log1p(exp(x)), 1 / (1 + exp(-x))); break; \
        case 4: DPN__ACT_LOOP(T, x / (1 + fabs(x)), 1 / ((1 + fabs(x)) * (1 + fabs(x)))); break; \
        case 10: DPN__ACT_LOOP(T, x > 0 ? x : a * x, x > 0 ? 1 : a); break; \
        case 11: DPN__ACT_LOOP(T, x > 0 ? x : a * expm1(x), x > 0 ? 1 : a * exp(x)); break; \
        case 12: DPN__ACT_LOOP(T, selu_l * (x > 0 ? x : selu_a * expm1(x)), selu_l * (x > 0 ? 1 : selu_a * exp(x))); break; \
        case 13: DPN__ACT_LOOP(T, x * (0.5 * (1 + erf(x / sqrt(2.0)))), \
                               0.5 * (1 + erf(x / sqrt(2.0))) + x * exp(-0.5 * x * x) / sqrt(2 * 3.14159265358979323846)); break; \
        default: break; \
        } \
    } while (0)
DPN__VEC_LOOPS static void dpn__act_range(int64_t b, int64_t e, void *user) {
    static const double selu_l = 1.0507009873554804934, selu_a = 1.6732632423543772848;
    const dpn__act_job *J = (const dpn__act_job *)user;
    const dp_kernel_ctx *k = J->k;
    dp_ndarray *xa = k->inputs[J->grad];
    const void *xd = dp_nd_data(xa), *og = J->grad ? dp_nd_data(k->inputs[0]) : NULL;
    void *y = dp_nd_data(k->outputs[0]);
    int type = J->type, grad = J->grad, add = k->req[0] == DP_REQ_ADD;
    double a = J->a;
    int64_t i;
    if (dp_nd_dtype(xa) == DP_FLOAT32) DPN__ACT_TYPES(float);
    else DPN__ACT_TYPES(double);
}
#undef DPN__ACT_TYPES
#undef DPN__ACT_LOOP
static int dpn__act_apply(const dp_kernel_ctx *k, int type, double a, int grad) {
    dpn__act_job J;
    int64_t n = dp_shape_size(dp_nd_shape(k->inputs[grad]));
    J.k = k; J.type = type; J.a = a; J.grad = grad;
    if (k->req[0] != DP_REQ_NULL) dpn__range(dpn__par_eng(k, (double)n), n, DPN__PAR_GRAIN, dpn__act_range, &J);
    return 0;
}
/* relu, sigmoid and tanh run depeng's own relu / sigmoid / tanh operators'
   kernels, forward and gradient (from the output, as those gradient
   operators read it), so that Activation gives
   bitwise what those operators give: a symbol's Activation node (which
   the symbol maps to them), dp_invoke("Activation") and dp_invoke("tanh")
   agree to the last bit, as do autograd and the executor. 0 when not
   those types. (depeng.h registers those operators with its built-ins,
   before any kernel runs, so they are always there.) */
static int dpn__act_builtin(const dp_kernel_ctx *k, int type, int grad, int *rc) {
    static const char *const fwd[3] = {"relu", "sigmoid", "tanh"}, *const bwd[3] = {"_backward_relu", "_backward_sigmoid", "_backward_tanh"};
    const dp_operator *op;
    dp_kernel_ctx k2;
    dp_ndarray *in2[2];
    if (type < 0 || type > 2) return 0;
    if ((op = dp_operator_find(grad ? bwd[type] : fwd[type])) == NULL || !op->forward_cpu) {
        dp_set_error(k->rc, grad ? "Activation: the built-in gradient operator has no CPU kernel" : "Activation: the built-in operator has no CPU kernel");
        *rc = -1;
        return 1;
    }
    k2 = *k;
    if (grad) {                            /* (og, output): the data is not read */
        in2[0] = k->inputs[0]; in2[1] = k->inputs[2];
        k2.inputs = in2; k2.num_inputs = 2;
    }
    *rc = op->forward_cpu(&k2);
    return 1;
}
static int dpn__k_act(const dp_kernel_ctx *k) {
    int rc;
    return dpn__act_builtin(k, (int)k->params->v[0].i, 0, &rc) ? rc : dpn__act_apply(k, (int)k->params->v[0].i, 0, 0);
}
/* inputs (og, data, output) */
static int dpn__kg_act(const dp_kernel_ctx *k) {
    int rc;
    return dpn__act_builtin(k, (int)k->params->v[0].i, 1, &rc) ? rc : dpn__act_apply(k, (int)k->params->v[0].i, 0, 1);
}
static int dpn__infer_act_grad(const dp_params *p, int nin, const dp_shape *is, const dp_dtype *it, int nout,
                               dp_shape *os, dp_dtype *ot, char *msg, size_t cap) {
    (void)p; (void)nin; (void)nout; (void)msg; (void)cap;
    os[0] = is[1]; ot[0] = it[1];
    return 0;
}
static int dpn__infer_leaky(const dp_params *p, int nin, const dp_shape *is, const dp_dtype *it, int nout,
                            dp_shape *os, dp_dtype *ot, char *msg, size_t cap) {
    int prelu = p->v[DPN__LR_TYPE].i == 4;
    char s1[160], s2[160];
    (void)nout;
    if (dpn__infer_float(it, msg, cap)) return -1;
    if (prelu != (nin == 2)) {
        snprintf(msg, cap, "act_type %s with %d inputs: prelu takes (data, gamma) with num_args 2, the others data alone", prelu ? "prelu" : "other than prelu", nin);
        return -1;
    }
    if (prelu && (it[1] != it[0] || is[1].ndim != 1 || (is[1].dims[0] != 1 && (is[0].ndim < 2 || is[1].dims[0] != is[0].dims[1])))) {
        snprintf(msg, cap, "gamma %s: prelu needs (channels,) = (data.shape[1],) or (1,), of data's dtype (data %s)", dpn__shape_str(&is[1], s1, sizeof s1),
                 dpn__shape_str(&is[0], s2, sizeof s2));
        return -1;
    }
    *os = is[0]; *ot = it[0];
    return 0;
}
/* prelu: y = x > 0 ? x : gamma[channel] x. x's elements in runs of one
   channel: *len elements a run, *runs runs, run r's channel r % *period
   (one run over everything for one gamma). */
static void dpn__prelu_runs(const dp_shape *s, int64_t gamma_n, int64_t *len, int64_t *runs, int64_t *period) {
    int64_t n = dp_shape_size(s), inner = 1;
    int d;
    *len = n; *runs = n > 0; *period = 1;
    if (gamma_n == 1) return;
    for (d = 2; d < s->ndim; d++) inner *= s->dims[d];
    *len = inner; *runs = inner ? n / inner : 0; *period = s->dims[1];
}
/* A loop per dtype, run by run; in double (x gamma is exact in double, so
   float32's written product is the float product) */
#define DPN__PRELU_FWD(T) do { \
        const T *x_ = (const T *)dp_nd_data(x), *g_ = (const T *)dp_nd_data(gm); \
        T *y_ = (T *)dp_nd_data(k->outputs[0]); \
        for (r = 0; r < runs; r++) { \
            const T *xr = x_ + r * len; \
            T *yr = y_ + r * len; \
            double g = (double)g_[r % period]; \
            if (add) for (i = 0; i < len; i++) { double v = (double)xr[i]; yr[i] = (T)((v > 0 ? v : v * g) + (double)yr[i]); } \
            else for (i = 0; i < len; i++) { double v = (double)xr[i]; yr[i] = (T)(v > 0 ? v : v * g); } \
        } \
    } while (0)
DPN__VEC_LOOPS static int dpn__k_leaky(const dp_kernel_ctx *k) {
    int type = (int)k->params->v[DPN__LR_TYPE].i;
    if (type != 4) return dpn__act_apply(k, 10 + type, k->params->v[DPN__LR_SLOPE].f, 0);
    {
        dp_ndarray *x = k->inputs[0], *gm = k->inputs[1];
        int64_t i, r, len, runs, period;
        int add = k->req[0] == DP_REQ_ADD;
        if (k->req[0] == DP_REQ_NULL) return 0;
        dpn__prelu_runs(dp_nd_shape(x), dp_nd_shape(gm)->dims[0], &len, &runs, &period);
        if (dp_nd_dtype(x) == DP_FLOAT32) DPN__PRELU_FWD(float);
        else DPN__PRELU_FWD(double);
    }
    return 0;
}
#undef DPN__PRELU_FWD
/* d data = x > 0 ? og : og gamma; then d gamma[channel] += x og over the
   elements x <= 0, in element order, each sum stored (rounded to the
   dtype) after every element */
#define DPN__PRELU_BWD(T) do { \
        const T *x_ = (const T *)dp_nd_data(x), *og_ = (const T *)og, *g_ = (const T *)gm; \
        T *dx = (T *)dp_nd_data(k->outputs[0]), *dg = k->req[1] != DP_REQ_NULL ? (T *)dp_nd_data(k->outputs[1]) : NULL; \
        for (r = 0; k->req[0] != DP_REQ_NULL && r < runs; r++) { \
            const T *xr = x_ + r * len, *or_ = og_ + r * len; \
            T *dr = dx + r * len; \
            double g = (double)g_[r % period]; \
            if (add) for (i = 0; i < len; i++) { double o = (double)or_[i]; dr[i] = (T)((xr[i] > 0 ? o : o * g) + (double)dr[i]); } \
            else for (i = 0; i < len; i++) { double o = (double)or_[i]; dr[i] = (T)(xr[i] > 0 ? o : o * g); } \
        } \
        if (dg) { \
            if (k->req[1] != DP_REQ_ADD) for (c = 0; c < gn; c++) dg[c] = 0; \
            for (r = 0; r < runs; r++) { \
                const T *xr = x_ + r * len, *or_ = og_ + r * len; \
                T s = dg[r % period]; \
                for (i = 0; i < len; i++) if (xr[i] <= 0) s = (T)((double)xr[i] * (double)or_[i] + (double)s); \
                dg[r % period] = s; \
            } \
        } \
    } while (0)
/* inputs (og, data[, gamma]); outputs (d data[, d gamma]) */
DPN__VEC_LOOPS static int dpn__kg_leaky(const dp_kernel_ctx *k) {
    int type = (int)k->params->v[DPN__LR_TYPE].i, add = k->req[0] == DP_REQ_ADD;
    dp_ndarray *x = k->inputs[1];
    int64_t i, r, c, gn, len, runs, period;
    const void *og = dp_nd_data(k->inputs[0]), *gm;
    if (type != 4) return dpn__act_apply(k, 10 + type, k->params->v[DPN__LR_SLOPE].f, 1);
    gm = dp_nd_data(k->inputs[2]); gn = dp_nd_shape(k->inputs[2])->dims[0];
    dpn__prelu_runs(dp_nd_shape(x), gn, &len, &runs, &period);
    if (dp_nd_dtype(x) == DP_FLOAT32) DPN__PRELU_BWD(float);
    else DPN__PRELU_BWD(double);
    return 0;
}
#undef DPN__PRELU_BWD

/* Flatten, MXNet's: (n, d1, d2, ...) to (n, d1 d2 ...), a copy. */
static int dpn__infer_flatten(const dp_params *p, int nin, const dp_shape *is, const dp_dtype *it, int nout,
                              dp_shape *os, dp_dtype *ot, char *msg, size_t cap) {
    int64_t rest = 1;
    int d;
    char s1[160];
    (void)p; (void)nin; (void)nout;
    if (is[0].ndim < 1) { snprintf(msg, cap, "data %s: at least one axis", dpn__shape_str(&is[0], s1, sizeof s1)); return -1; }
    for (d = 1; d < is[0].ndim; d++) rest *= is[0].dims[d];
    memset(os, 0, sizeof *os);
    os->ndim = 2; os->dims[0] = is[0].dims[0]; os->dims[1] = rest; *ot = it[0];
    return 0;
}
static int dpn__k_flatten(const dp_kernel_ctx *k) {
    dpn__copy_run(dp_nd_dtype(k->inputs[0]), dp_nd_data(k->outputs[0]), 0, dp_nd_data(k->inputs[0]), 0, dp_shape_size(dp_nd_shape(k->inputs[0])), k->req[0]);
    return 0;
}
static int dpn__kg_flatten(const dp_kernel_ctx *k) {
    dpn__copy_run(dp_nd_dtype(k->inputs[0]), dp_nd_data(k->outputs[0]), 0, dp_nd_data(k->inputs[0]), 0, dp_shape_size(dp_nd_shape(k->inputs[0])), k->req[0]);
    return 0;
}

/* BatchNorm, MXNet's: data normalised per channel (axis), then scaled by
   gamma and shifted by beta. In training (is_train, use_global_stats
   false) with the batch's mean and (biased) variance, and the auxiliary
   states moving_mean and moving_var (inputs 3 and 4, updated in place)
   become moving * momentum + batch * (1 - momentum); otherwise with the
   moving statistics, which stay. fix_gamma: gamma read as 1, its gradient
   0. The gradient gives the auxiliary states 0. */
enum { DPN__BN_EPS, DPN__BN_MOMENTUM, DPN__BN_FIX_GAMMA, DPN__BN_GLOBAL, DPN__BN_OUT_MV, DPN__BN_AXIS, DPN__BN_CUDNN_OFF, DPN__BN_IS_TRAIN };
static const dp_param_def dpn__bn_params[] = {
    {"eps", DP_PARAM_FLOAT, "0.001", 0, 0, NULL, "added to the variance (MXNet's default 1e-3; PyTorch's is 1e-5); above 0"},
    {"momentum", DP_PARAM_FLOAT, "0.9", 0, 1, NULL, "moving = moving * momentum + batch * (1 - momentum) (PyTorch's momentum is 1 - this)"},
    {"fix_gamma", DP_PARAM_BOOL, "true", 0, 0, NULL, "gamma read as 1 and given a zero gradient (MXNet's default)"},
    {"use_global_stats", DP_PARAM_BOOL, "false", 0, 0, NULL, "normalise with the moving statistics in training too"},
    {"output_mean_var", DP_PARAM_BOOL, "false", 0, 0, NULL, "MXNet's extra mean and var outputs: not offered (true is refused)"},
    {"axis", DP_PARAM_INT, "1", 0, 0, NULL, "the channel axis (negative: from the end)"},
    {"cudnn_off", DP_PARAM_BOOL, "false", 0, 0, NULL, "accepted for MXNet's files; no effect"},
    {"is_train", DP_PARAM_BOOL, "false", 0, 0, NULL, "training (batch statistics, moving ones updated); set by the executor's forward "
                                                     "and, when not given, by autograd's training mode"},
};
/* (outer, channels, inner) of data around the channel axis; -1 when the
   axis is outside data. */
static int dpn__bn_split(const dp_shape *s, int64_t axis, int64_t *outer, int64_t *c, int64_t *inner) {
    int d;
    if (axis < 0) axis += s->ndim;
    if (axis < 0 || axis >= s->ndim) return -1;
    *outer = 1; *inner = 1; *c = s->dims[axis];
    for (d = 0; d < axis; d++) *outer *= s->dims[d];
    for (d = (int)axis + 1; d < s->ndim; d++) *inner *= s->dims[d];
    return 0;
}
static int dpn__infer_bn(const dp_params *p, int nin, const dp_shape *is, const dp_dtype *it, int nout,
                         dp_shape *os, dp_dtype *ot, char *msg, size_t cap) {
    static const char *names[] = {"data", "gamma", "beta", "moving_mean", "moving_var"};
    int64_t outer, c, inner;
    int i;
    char s1[160], s2[160];
    (void)nin; (void)nout;
    if (dpn__infer_float(it, msg, cap)) return -1;
    if (!(p->v[DPN__BN_EPS].f > 0)) { snprintf(msg, cap, "eps %g: must be above 0", p->v[DPN__BN_EPS].f); return -1; }
    if (p->v[DPN__BN_OUT_MV].i) { snprintf(msg, cap, "output_mean_var true: MXNet's mean and var outputs are not offered"); return -1; }
    if (dpn__bn_split(&is[0], p->v[DPN__BN_AXIS].i, &outer, &c, &inner)) {
        snprintf(msg, cap, "axis %lld outside data %s", (long long)p->v[DPN__BN_AXIS].i, dpn__shape_str(&is[0], s1, sizeof s1));
        return -1;
    }
    for (i = 1; i < 5; i++)
        if (it[i] != it[0] || is[i].ndim != 1 || is[i].dims[0] != c) {
            snprintf(msg, cap, "%s %s %s: (channels,) = (%lld,) of data's dtype is needed (data %s %s, axis %lld)", names[i], dp_dtype_name(it[i]),
                     dpn__shape_str(&is[i], s1, sizeof s1), (long long)c, dp_dtype_name(it[0]), dpn__shape_str(&is[0], s2, sizeof s2),
                     (long long)p->v[DPN__BN_AXIS].i);
            return -1;
        }
    *os = is[0]; *ot = it[0];
    return 0;
}
/* Channel ch's mean and biased variance over (outer, inner), in double,
   in order; a loop per dtype (BatchNorm takes float32 and float64). */
#define DPN__BN_STATS(T) do { \
        const T *x_ = (const T *)x; \
        for (o = 0; o < outer; o++) { const T *xr = x_ + (o * c + ch) * inner; for (j = 0; j < inner; j++) s += (double)xr[j]; } \
        s = n ? s / (double)n : 0; \
        for (o = 0; o < outer; o++) { const T *xr = x_ + (o * c + ch) * inner; for (j = 0; j < inner; j++) { double d = (double)xr[j] - s; q += d * d; } } \
    } while (0)
static void dpn__bn_stats(const void *x, dp_dtype t, int64_t outer, int64_t c, int64_t inner, int64_t ch, double *mean, double *var) {
    int64_t o, j, n = outer * inner;
    double s = 0, q = 0;
    if (t == DP_FLOAT32) DPN__BN_STATS(float);
    else DPN__BN_STATS(double);
    *mean = s; *var = n ? q / (double)n : 0;
}
#undef DPN__BN_STATS
/* y = g (x - mean) is + b over one channel's rows, by req, in double; a
   loop per dtype, which vectorises */
#define DPN__BN_NORM(T) do { \
        for (o = 0; o < outer; o++) { \
            const T *xr = (const T *)x + (o * c + ch) * inner; \
            T *yr = (T *)y + (o * c + ch) * inner; \
            if (req == DP_REQ_ADD) for (j = 0; j < inner; j++) yr[j] = (T)(g * ((double)xr[j] - mean) * is + b + (double)yr[j]); \
            else for (j = 0; j < inner; j++) yr[j] = (T)(g * ((double)xr[j] - mean) * is + b); \
        } \
    } while (0)
DPN__VEC_LOOPS static void dpn__bn_norm(const void *x, void *y, dp_dtype t, int64_t outer, int64_t c, int64_t inner, int64_t ch, double g, double mean,
                                        double is, double b, dp_req req) {
    int64_t o, j;
    if (req == DP_REQ_NULL) return;
    if (t == DP_FLOAT32) DPN__BN_NORM(float);
    else DPN__BN_NORM(double);
}
#undef DPN__BN_NORM
/* BatchNorm's channels are independent: a large one is split over the
   range loop by channel, each channel computed as alone. */
typedef struct dpn__bn_job { const dp_kernel_ctx *k; int64_t outer, c, inner; } dpn__bn_job;
static void dpn__bn_range(int64_t b, int64_t e, void *user) {
    const dpn__bn_job *J = (const dpn__bn_job *)user;
    const dp_kernel_ctx *k = J->k;
    const dp_params *p = k->params;
    dp_ndarray *x = k->inputs[0];
    dp_dtype t = dp_nd_dtype(x);
    const void *xd = dp_nd_data(x), *gm = dp_nd_data(k->inputs[1]), *bt = dp_nd_data(k->inputs[2]);
    void *mm = dp_nd_data(k->inputs[3]), *mv = dp_nd_data(k->inputs[4]), *y = dp_nd_data(k->outputs[0]);
    int batch = p->v[DPN__BN_IS_TRAIN].i && !p->v[DPN__BN_GLOBAL].i;
    double mom = p->v[DPN__BN_MOMENTUM].f;
    int64_t outer = J->outer, c = J->c, inner = J->inner, ch;
    for (ch = b; ch < e; ch++) {
        double mean, var, g = p->v[DPN__BN_FIX_GAMMA].i ? 1 : dpn__load_elem(gm, t, ch), bv = dpn__load_elem(bt, t, ch), is;
        if (batch) {
            dpn__bn_stats(xd, t, outer, c, inner, ch, &mean, &var);
            dpn__store_elem(mm, t, ch, dpn__load_elem(mm, t, ch) * mom + mean * (1 - mom), DP_REQ_WRITE);
            dpn__store_elem(mv, t, ch, dpn__load_elem(mv, t, ch) * mom + var * (1 - mom), DP_REQ_WRITE);
        } else { mean = dpn__load_elem(mm, t, ch); var = dpn__load_elem(mv, t, ch); }
        is = 1 / sqrt(var + p->v[DPN__BN_EPS].f);
        dpn__bn_norm(xd, y, t, outer, c, inner, ch, g, mean, is, bv, k->req[0]);
    }
}
static int dpn__k_bn(const dp_kernel_ctx *k) {
    dpn__bn_job J;
    J.k = k;
    dpn__bn_split(dp_nd_shape(k->inputs[0]), k->params->v[DPN__BN_AXIS].i, &J.outer, &J.c, &J.inner);
    dpn__range(dpn__par_eng(k, (double)J.outer * (double)J.c * (double)J.inner), J.c, 1, dpn__bn_range, &J);
    return 0;
}
/* inputs (og, data, gamma, beta, moving_mean, moving_var); outputs their
   gradients. With batch statistics dx = g is / n (n og - sum og - xhat
   sum(og xhat)), the statistics' dependence on x included; with the moving
   ones dx = g is og. */
/* One channel: the sums of og and og xhat in double, in order, then d data
   by req; a loop per dtype */
#define DPN__BN_DX(T) do { \
        for (o = 0; o < outer; o++) { \
            const T *gr = (const T *)og + (o * c + ch) * inner, *xr = (const T *)xd + (o * c + ch) * inner; \
            for (j = 0; j < inner; j++) { double gv = (double)gr[j]; sg += gv; sgx += gv * ((double)xr[j] - mean) * is; } \
        } \
        for (o = 0; k->req[0] != DP_REQ_NULL && o < outer; o++) { \
            const T *gr = (const T *)og + (o * c + ch) * inner, *xr = (const T *)xd + (o * c + ch) * inner; \
            T *dr = (T *)dp_nd_data(k->outputs[0]) + (o * c + ch) * inner; \
            if (batch && add) \
                for (j = 0; j < inner; j++) dr[j] = (T)(g * is / (double)n * ((double)n * (double)gr[j] - sg - ((double)xr[j] - mean) * is * sgx) + (double)dr[j]); \
            else if (batch) for (j = 0; j < inner; j++) dr[j] = (T)(g * is / (double)n * ((double)n * (double)gr[j] - sg - ((double)xr[j] - mean) * is * sgx)); \
            else if (add) for (j = 0; j < inner; j++) dr[j] = (T)(g * is * (double)gr[j] + (double)dr[j]); \
            else for (j = 0; j < inner; j++) dr[j] = (T)(g * is * (double)gr[j]); \
        } \
    } while (0)
DPN__VEC_LOOPS static void dpn__bn_grad_range(int64_t b, int64_t e, void *user) {
    const dpn__bn_job *J = (const dpn__bn_job *)user;
    const dp_kernel_ctx *k = J->k;
    const dp_params *p = k->params;
    dp_ndarray *x = k->inputs[1];
    dp_dtype t = dp_nd_dtype(x);
    const void *og = dp_nd_data(k->inputs[0]), *xd = dp_nd_data(x), *gm = dp_nd_data(k->inputs[2]);
    int batch = p->v[DPN__BN_IS_TRAIN].i && !p->v[DPN__BN_GLOBAL].i, fix = (int)p->v[DPN__BN_FIX_GAMMA].i, i, add = k->req[0] == DP_REQ_ADD;
    int64_t outer = J->outer, c = J->c, inner = J->inner, ch, o, j, n = outer * inner;
    for (ch = b; ch < e; ch++) {
        double mean, var, is, g = fix ? 1 : dpn__load_elem(gm, t, ch), sg = 0, sgx = 0;
        if (batch) dpn__bn_stats(xd, t, outer, c, inner, ch, &mean, &var);
        else { mean = dpn__load_elem(dp_nd_data(k->inputs[4]), t, ch); var = dpn__load_elem(dp_nd_data(k->inputs[5]), t, ch); }
        is = 1 / sqrt(var + p->v[DPN__BN_EPS].f);
        if (t == DP_FLOAT32) DPN__BN_DX(float);
        else DPN__BN_DX(double);
        if (k->req[1] != DP_REQ_NULL) dpn__store_elem(dp_nd_data(k->outputs[1]), t, ch, fix ? 0 : sgx, k->req[1]);
        if (k->req[2] != DP_REQ_NULL) dpn__store_elem(dp_nd_data(k->outputs[2]), t, ch, sg, k->req[2]);
        for (i = 3; i < 5; i++) if (k->req[i] != DP_REQ_NULL) dpn__store_elem(dp_nd_data(k->outputs[i]), t, ch, 0, k->req[i]);
    }
}
#undef DPN__BN_DX
static int dpn__kg_bn(const dp_kernel_ctx *k) {
    dpn__bn_job J;
    J.k = k;
    dpn__bn_split(dp_nd_shape(k->inputs[1]), k->params->v[DPN__BN_AXIS].i, &J.outer, &J.c, &J.inner);
    dpn__range(dpn__par_eng(k, (double)J.outer * (double)J.c * (double)J.inner), J.c, 1, dpn__bn_grad_range, &J);
    return 0;
}

/* Dropout, MXNet's: in training (mode "training" with is_train, or mode
   "always") each element kept with probability 1 - p and scaled by
   1 / (1 - p), else 0; the second output is that mask (0 or 1 / (1 - p),
   data's shape), drawn from the device's random generator (the random
   resource: reproducible for a seed, the same on every engine, at any
   worker count and on the GPU; one 64-bit key a call, each element's draw
   a hash of the key and its index, dpn__draw53). axes: the
   mask is drawn once along those axes and shared (MXNet's variational
   dropout). Otherwise the output is data and the mask ones. The gradient
   is og * mask, from the saved mask. */
enum { DPN__DO_P, DPN__DO_MODE, DPN__DO_AXES, DPN__DO_CUDNN_OFF, DPN__DO_IS_TRAIN };
static const dp_param_def dpn__dropout_params[] = {
    {"p", DP_PARAM_FLOAT, "0.5", 0, 1, NULL, "the fraction dropped, in [0, 1)"},
    {"mode", DP_PARAM_ENUM, "training", 0, 0, "training|always", "training: only when is_train; always: in inference too"},
    {"axes", DP_PARAM_SHAPE, "()", 0, 0, NULL, "axes along which one draw is shared"},
    {"cudnn_off", DP_PARAM_BOOL, "false", 0, 0, NULL, "accepted for MXNet's files; no effect"},
    {"is_train", DP_PARAM_BOOL, "false", 0, 0, NULL, "training; set by the executor's forward and, when not given, by autograd's training mode"},
};
static int dpn__infer_dropout(const dp_params *p, int nin, const dp_shape *is, const dp_dtype *it, int nout,
                              dp_shape *os, dp_dtype *ot, char *msg, size_t cap) {
    const dp_shape *axes = &p->v[DPN__DO_AXES].shape;
    int i;
    char s1[160], s2[160];
    (void)nin; (void)nout;
    if (dpn__infer_float(it, msg, cap)) return -1;
    if (!(p->v[DPN__DO_P].f >= 0 && p->v[DPN__DO_P].f < 1)) { snprintf(msg, cap, "p %g: must be in [0, 1)", p->v[DPN__DO_P].f); return -1; }
    for (i = 0; i < axes->ndim; i++)
        if (axes->dims[i] < -is[0].ndim || axes->dims[i] >= is[0].ndim) {
            snprintf(msg, cap, "axes %s: outside data %s", dpn__shape_str(axes, s1, sizeof s1), dpn__shape_str(&is[0], s2, sizeof s2));
            return -1;
        }
    os[0] = os[1] = is[0]; ot[0] = ot[1] = it[0];
    return 0;
}
/* The mask's draws are counter-based: one 64-bit key per call from the
   random resource (dp_random_next), and the draw of element src is
   splitmix64's output at position src of the stream started at the key,
   as depeng_cuda.h's Dropout and random operators draw. Every element
   computes its own mask value, so the work splits over the range loop and
   the mask is the same at any worker count, on every engine and on the
   GPU; a seed repeats it. */
/* The draw's 53 bits: the uniform value in [0, 1) is this times 2^-53, so
   "uniform >= p" is "bits >= ceil(p 2^53)", an integer comparison (p 2^53
   is exact), which compiles to a select rather than a branch. */
static uint64_t dpn__draw53(uint64_t key, uint64_t counter) {
    uint64_t z = key + (counter + 1) * 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return z >> 11;
}
typedef struct dpn__do_job {
    const dp_kernel_ctx *k;
    int on, flat, nd;                             /* flat: no shared axes, element e draws at e */
    uint64_t key;
    uint64_t keep_from;                           /* a draw of at least this many 2^-53 keeps its element */
    double p, scale;
    int64_t dims[DP_MAX_DIMS], st[DP_MAX_DIMS];   /* element strides of the draw: 0 along shared axes */
} dpn__do_job;
/* mask[e] (as T: (T) scale's bits or all zero bits, +0, picked by an
   integer mask, since compilers turn a select on the draw into a branch,
   which mispredicts half the time), y[e] = x[e] * mask[e] in double,
   stored by req; U: the unsigned integer of T's size */
#define DPN__DO_LOOP(T, U, J, e0, e1) do {                                                                       \
        const T *x_ = (const T *)dp_nd_data((J)->k->inputs[0]);                                                   \
        T *y_ = (T *)dp_nd_data((J)->k->outputs[0]), *m_ = (T *)dp_nd_data((J)->k->outputs[1]);                 \
        const dp_req r_ = (J)->k->req[0];                                                                         \
        const uint64_t key_ = (J)->key, thr_ = (J)->keep_from;                                                    \
        const T sc_ = (T)(J)->scale;                                                                              \
        U scb_;                                                                                                   \
        const int on_ = (J)->on, flat_ = (J)->flat, nd_ = (J)->nd;                                                \
        int64_t e_, src_ = 0, idx_[DP_MAX_DIMS], rest_ = (e0);                                                     \
        int d_;                                                                                                   \
        memcpy(&scb_, &sc_, sizeof scb_);                                                                         \
        for (d_ = nd_ - 1; !flat_ && d_ >= 0; d_--) { idx_[d_] = rest_ % (J)->dims[d_]; rest_ /= (J)->dims[d_]; src_ += idx_[d_] * (J)->st[d_]; } \
        for (e_ = (e0); e_ < (e1); e_++) {                                                                        \
            T m = 1;                                                                                              \
            if (on_) {                                                                                            \
                U mb_ = scb_ & (U)(0 - (uint64_t)(dpn__draw53(key_, (uint64_t)(flat_ ? e_ : src_)) >= thr_));      \
                memcpy(&m, &mb_, sizeof m);                                                                       \
            }                                                                                                     \
            m_[e_] = m;                                                                                           \
            if (r_ == DP_REQ_ADD) y_[e_] = (T)((double)x_[e_] * (double)m + (double)y_[e_]);                      \
            else if (r_ != DP_REQ_NULL) y_[e_] = (T)((double)x_[e_] * (double)m);                                \
            for (d_ = nd_ - 1; !flat_ && d_ >= 0; d_--) {                                                         \
                src_ += (J)->st[d_];                                                                              \
                if (++idx_[d_] < (J)->dims[d_]) break;                                                            \
                src_ -= (J)->st[d_] * idx_[d_]; idx_[d_] = 0;                                                     \
            }                                                                                                     \
        }                                                                                                         \
    } while (0)
static void dpn__do_range(int64_t e0, int64_t e1, void *user) {
    const dpn__do_job *J = (const dpn__do_job *)user;
    if (dp_nd_dtype(J->k->inputs[0]) == DP_FLOAT32) DPN__DO_LOOP(float, uint32_t, J, e0, e1);
    else DPN__DO_LOOP(double, uint64_t, J, e0, e1);
}
static int dpn__k_dropout(const dp_kernel_ctx *k) {
    const dp_params *p = k->params;
    const dp_shape *s = dp_nd_shape(k->inputs[0]), *axes = &p->v[DPN__DO_AXES].shape;
    dpn__do_job J;
    int shared[DP_MAX_DIMS] = {0}, d, i;
    int64_t n = dp_shape_size(s), acc = 1;
    memset(&J, 0, sizeof J);
    J.k = k; J.p = p->v[DPN__DO_P].f; J.scale = 1 / (1 - J.p); J.nd = s->ndim;
    J.on = (p->v[DPN__DO_MODE].i == 1 || p->v[DPN__DO_IS_TRAIN].i) && J.p > 0;
    J.keep_from = (uint64_t)ceil(J.p * 9007199254740992.0);
    for (i = 0; i < axes->ndim; i++) shared[axes->dims[i] < 0 ? axes->dims[i] + s->ndim : axes->dims[i]] = 1;
    J.flat = 1;
    for (d = s->ndim - 1; d >= 0; d--) { J.dims[d] = s->dims[d]; J.st[d] = shared[d] ? 0 : acc; acc *= s->dims[d]; J.flat &= !shared[d] || s->dims[d] == 1; }
    if (J.on) J.key = dp_random_next(k->rc->engine, k->rc->ctx);
    dpn__range(dpn__par_eng(k, (double)n), n, DPN__PAR_GRAIN, dpn__do_range, &J);
    return 0;
}
/* inputs (og, og of the mask, output, mask); output data's gradient:
   og * mask in double, stored by req, element by element */
DPN__VEC_LOOPS static void dpn__do_grad_range(int64_t e0, int64_t e1, void *user) {
    const dp_kernel_ctx *k = (const dp_kernel_ctx *)user;
    int64_t e;
    int add = k->req[0] == DP_REQ_ADD;
    if (dp_nd_dtype(k->inputs[0]) == DP_FLOAT32) {
        const float *og = (const float *)dp_nd_data(k->inputs[0]), *m = (const float *)dp_nd_data(k->inputs[3]);
        float *g = (float *)dp_nd_data(k->outputs[0]);
        if (add) for (e = e0; e < e1; e++) g[e] = (float)((double)og[e] * (double)m[e] + (double)g[e]);
        else for (e = e0; e < e1; e++) g[e] = (float)((double)og[e] * (double)m[e]);
    } else {
        const double *og = (const double *)dp_nd_data(k->inputs[0]), *m = (const double *)dp_nd_data(k->inputs[3]);
        double *g = (double *)dp_nd_data(k->outputs[0]);
        if (add) for (e = e0; e < e1; e++) g[e] = og[e] * m[e] + g[e];
        else for (e = e0; e < e1; e++) g[e] = og[e] * m[e];
    }
}
static int dpn__kg_dropout(const dp_kernel_ctx *k) {
    int64_t n = dp_shape_size(dp_nd_shape(k->inputs[0]));
    if (k->req[0] != DP_REQ_NULL) dpn__range(dpn__par_eng(k, (double)n), n, DPN__PAR_GRAIN, dpn__do_grad_range, (void *)k);
    return 0;
}
static int dpn__infer_dropout_grad(const dp_params *p, int nin, const dp_shape *is, const dp_dtype *it, int nout,
                                   dp_shape *os, dp_dtype *ot, char *msg, size_t cap) {
    (void)p; (void)nin; (void)nout; (void)msg; (void)cap;
    os[0] = is[0]; ot[0] = it[0];
    return 0;
}
static void dpn__register_norm(void) {
    dp_operator op;
    memset(&op, 0, sizeof op);
    op.name = "BatchNorm";
    op.doc = "MXNet's BatchNorm: (data, gamma, beta, moving_mean, moving_var), the last two auxiliary states updated in place in "
             "training (batch statistics) and read otherwise or with use_global_stats";
    op.num_inputs = 5; op.num_outputs = 1; op.params = dpn__bn_params; op.num_params = 8; op.infer = dpn__infer_bn;
    op.forward_cpu = dpn__k_bn; op.mutate_inputs = 1u << 3 | 1u << 4; op.dtypes = 1u << DP_FLOAT32 | 1u << DP_FLOAT64;
    dp_operator_register_with_gradient(&op, "_backward_BatchNorm",
                                       "gradient of BatchNorm: (og, data, gamma, beta, moving_mean, moving_var) -> their gradients (0 for the last two)",
                                       dpn__kg_bn, 0);
    memset(&op, 0, sizeof op);
    op.name = "Dropout";
    op.doc = "MXNet's Dropout: (output, mask), the mask 0 or 1 / (1 - p) drawn from the random resource in training, ones otherwise";
    op.num_inputs = 1; op.num_outputs = 2; op.params = dpn__dropout_params; op.num_params = 5; op.infer = dpn__infer_dropout;
    op.forward_cpu = dpn__k_dropout; op.resources = DP_RESOURCE_RANDOM; op.dtypes = 1u << DP_FLOAT32 | 1u << DP_FLOAT64;
    op.gradient = "_backward_Dropout"; op.grad_needs = DP_GRAD_OUT_GRADS | DP_GRAD_OUTPUTS;
    dp_operator_register(&op);
    memset(&op, 0, sizeof op);
    op.name = "_backward_Dropout"; op.doc = "gradient of Dropout: (og, og of the mask, output, mask) -> og * mask";
    op.num_inputs = 4; op.num_outputs = 1; op.params = dpn__dropout_params; op.num_params = 5; op.infer = dpn__infer_dropout_grad;
    op.forward_cpu = dpn__kg_dropout; op.inplace = 1;
    dp_operator_register(&op);
}

/* The forward and gradient operators of a layer whose inputs counts come
   from num_args: registered by hand, as the gradient's counts are
   num_args + 1 and num_args. */
static void dpn__register_counted(dp_operator *op, const char *grad_name, const char *grad_doc, dp_kernel_fn grad_kernel) {
    dp_operator g;
    op->gradient = grad_name; op->grad_needs = DP_GRAD_OUT_GRADS | DP_GRAD_INPUTS;
    dp_operator_register(op);
    memset(&g, 0, sizeof g);
    g.name = grad_name; g.doc = grad_doc; g.num_inputs = -2; g.num_outputs = -1;
    g.params = op->params; g.num_params = op->num_params; g.infer = dpn__infer_grad_of_inputs; g.forward_cpu = grad_kernel;
    g.resources = op->resources;
    dp_operator_register(&g);
}
static void dpn__register_layers(void) {
    dp_operator op;
    memset(&op, 0, sizeof op);
    op.name = "Convolution";
    op.doc = "MXNet's Convolution, 1-D or 2-D (NCW, NCHW): data (n, c, [h,] w), weight (num_filter, c / num_group, [kh,] kw), "
             "bias (num_filter,) unless no_bias; im2col + GEMM or direct loops (algo)";
    op.num_inputs = -1; op.num_outputs = 1; op.params = dpn__conv_params; op.num_params = 10; op.infer = dpn__infer_conv;
    op.forward_cpu = dpn__k_conv; op.resources = DP_RESOURCE_TEMP; op.dtypes = 1u << DP_FLOAT32 | 1u << DP_FLOAT64;
    dpn__register_counted(&op, "_backward_Convolution", "gradient of Convolution: (og, data, weight[, bias]) -> their gradients", dpn__kg_conv);
    memset(&op, 0, sizeof op);
    op.name = "Deconvolution";
    op.doc = "MXNet's Deconvolution (the transposed convolution), 1-D or 2-D: data (n, c, [h,] w), weight (c, num_filter / num_group, "
             "[kh,] kw), bias (num_filter,) with no_bias false";
    op.num_inputs = -1; op.num_outputs = 1; op.params = dpn__deconv_params; op.num_params = 12; op.infer = dpn__infer_deconv;
    op.forward_cpu = dpn__k_deconv; op.resources = DP_RESOURCE_TEMP; op.dtypes = 1u << DP_FLOAT32 | 1u << DP_FLOAT64;
    dpn__register_counted(&op, "_backward_Deconvolution", "gradient of Deconvolution: (og, data, weight[, bias]) -> their gradients", dpn__kg_deconv);
    memset(&op, 0, sizeof op);
    op.name = "Pooling";
    op.doc = "MXNet's Pooling, 1-D or 2-D: max, avg or sum over windows of data (n, c, [h,] w); padding is never a maximum; "
             "a window with no input element gives 0";
    op.num_inputs = 1; op.num_outputs = 1; op.params = dpn__pool_params; op.num_params = 7; op.infer = dpn__infer_pool;
    op.forward_cpu = dpn__k_pool; op.dtypes = 1u << DP_FLOAT32 | 1u << DP_FLOAT64;
    dp_operator_register_with_gradient(&op, "_backward_Pooling", "gradient of Pooling (max: to the first maximum of each window)", dpn__kg_pool, 0);
    memset(&op, 0, sizeof op);
    op.name = "Activation";
    op.doc = "MXNet's Activation: relu, sigmoid, tanh, softrelu (log(1 + e^x)) or softsign (x / (1 + |x|)), element-wise";
    op.num_inputs = 1; op.num_outputs = 1; op.params = dpn__act_params; op.num_params = 1; op.infer = dpn__infer_act;
    op.forward_cpu = dpn__k_act; op.dtypes = 1u << DP_FLOAT32 | 1u << DP_FLOAT64;
    op.gradient = "_backward_Activation"; op.grad_needs = DP_GRAD_OUT_GRADS | DP_GRAD_INPUTS | DP_GRAD_OUTPUTS;
    dp_operator_register(&op);
    memset(&op, 0, sizeof op);
    op.name = "_backward_Activation"; op.doc = "gradient of Activation: (og, data, output) -> data's (relu, sigmoid, tanh from the output; softrelu, softsign from the data)";
    op.num_inputs = 3; op.num_outputs = 1; op.params = dpn__act_params; op.num_params = 1; op.infer = dpn__infer_act_grad;
    op.forward_cpu = dpn__kg_act;
    dp_operator_register(&op);
    memset(&op, 0, sizeof op);
    op.name = "LeakyReLU";
    op.doc = "MXNet's LeakyReLU: leaky (x < 0: slope x), elu (slope (e^x - 1)), selu, gelu (erf form), or prelu (x < 0: gamma[channel] x, "
             "gamma the second input, num_args 2)";
    op.num_inputs = -1; op.num_outputs = 1; op.params = dpn__leaky_params; op.num_params = 5; op.infer = dpn__infer_leaky;
    op.forward_cpu = dpn__k_leaky; op.dtypes = 1u << DP_FLOAT32 | 1u << DP_FLOAT64;
    dpn__register_counted(&op, "_backward_LeakyReLU", "gradient of LeakyReLU: (og, data[, gamma]) -> their gradients", dpn__kg_leaky);
    memset(&op, 0, sizeof op);
    op.name = "Flatten"; op.doc = "MXNet's Flatten: (n, d1, d2, ...) to (n, d1 d2 ...)";
    op.num_inputs = 1; op.num_outputs = 1; op.infer = dpn__infer_flatten; op.forward_cpu = dpn__k_flatten;
    dp_operator_register_with_gradient(&op, "_backward_Flatten", "gradient of Flatten: the output gradient in data's shape", dpn__kg_flatten, 0);
}

/* >>tensor layers: MXNet's BlockGrad, MakeLoss, the regression outputs,
   Embedding, expand_dims, slice_axis, broadcast_to, where, batch_dot,
   stack and SliceChannel ---------------------------------------------------- */
/* BlockGrad: the identity whose gradient is 0 (MXNet's stop_gradient). */
static int dpn__k_identity(const dp_kernel_ctx *k) {
    dpn__copy_run(dp_nd_dtype(k->inputs[0]), dp_nd_data(k->outputs[0]), 0, dp_nd_data(k->inputs[0]), 0, dp_shape_size(dp_nd_shape(k->inputs[0])), k->req[0]);
    return 0;
}
static int dpn__kg_block(const dp_kernel_ctx *k) {
    int i;
    for (i = 0; i < k->num_outputs; i++) dpn__fill_by_req(k->outputs[i], 0, k->req[i]);
    return 0;
}
/* MakeLoss(data): the identity forward; its gradient ignores the head
   gradient: grad_scale, divided by the batch (normalization batch) or by
   the elements above valid_thresh (valid), as MXNet's. */
static const dp_param_def dpn__make_loss_params[] = {
    {"grad_scale", DP_PARAM_FLOAT, "1", 0, 0, NULL, "the gradient of each element"},
    {"valid_thresh", DP_PARAM_FLOAT, "0", 0, 0, NULL, "normalization valid: elements above it count"},
    {"normalization", DP_PARAM_ENUM, "null", 0, 0, "null|batch|valid", "the gradient divided by nothing, the batch, or the valid elements"},
};
static int dpn__kg_make_loss(const dp_kernel_ctx *k) {
    dp_ndarray *x = k->inputs[1];
    int64_t i, n = dp_shape_size(dp_nd_shape(x)), valid = 0;
    double g = k->params->v[0].f;
    if (k->params->v[2].i == 1 && dp_nd_shape(x)->ndim > 0 && dp_nd_shape(x)->dims[0] > 0) g /= (double)dp_nd_shape(x)->dims[0];
    if (k->params->v[2].i == 2) {
        double v[DPN__BLK];
        int64_t j, m;
        for (i = 0; i < n; i += m) {                   /* a block at a time, one dtype switch each */
            m = n - i < DPN__BLK ? n - i : DPN__BLK;
            dpn__blk_load(dp_nd_dtype(x), dp_nd_data(x), i, m, v);
            for (j = 0; j < m; j++) valid += v[j] > k->params->v[1].f;
        }
        g /= valid > 0 ? (double)valid : 1.0;
    }
    dpn__fill_by_req(k->outputs[0], g, k->req[0]);
    return 0;
}
/* LinearRegressionOutput, LogisticRegressionOutput, MAERegressionOutput
   (data, label): the forward is the identity, the sigmoid, the identity;
   the data's gradient ignores the head gradient: (out - label), the same,
   sign(out - label), times grad_scale / (the elements per row), as
   MXNet's; the label's is 0. label holds as many elements as data. */
static const dp_param_def dpn__regression_params[] = {
    {"grad_scale", DP_PARAM_FLOAT, "1", 0, 0, NULL, "the gradient is multiplied by it"},
};
static int dpn__infer_regression(const dp_params *p, int nin, const dp_shape *is, const dp_dtype *it, int nout,
                                 dp_shape *os, dp_dtype *ot, char *msg, size_t cap) {
    char s1[160], s2[160];
    (void)p; (void)nin; (void)nout;
    if (dpn__infer_float(it, msg, cap)) return -1;
    if (dp_shape_size(&is[0]) != dp_shape_size(&is[1]) || is[0].ndim < 1) {
        snprintf(msg, cap, "data %s and label %s: as many elements in each", dpn__shape_str(&is[0], s1, sizeof s1), dpn__shape_str(&is[1], s2, sizeof s2));
        return -1;
    }
    *os = is[0]; *ot = it[0];
    return 0;
}
/* The forward: the identity (float32 copied, or added in float, which is
   the double sum rounded once) or the sigmoid in double, a loop per dtype */
#define DPN__REG_FWD(T) do { \
        const T *x_ = (const T *)dp_nd_data(k->inputs[0]); \
        T *y_ = (T *)dp_nd_data(k->outputs[0]); \
        if (kind != 1 && add) for (i = 0; i < n; i++) y_[i] = x_[i] + y_[i]; \
        else if (kind != 1) for (i = 0; i < n; i++) y_[i] = x_[i]; \
        else if (add) for (i = 0; i < n; i++) y_[i] = (T)(1 / (1 + exp(-(double)x_[i])) + (double)y_[i]); \
        else for (i = 0; i < n; i++) y_[i] = (T)(1 / (1 + exp(-(double)x_[i]))); \
    } while (0)
DPN__VEC_LOOPS static int dpn__regression_fwd(const dp_kernel_ctx *k, int kind) {
    int64_t i, n = dp_shape_size(dp_nd_shape(k->inputs[0]));
    int add = k->req[0] == DP_REQ_ADD;
    if (k->req[0] == DP_REQ_NULL) return 0;
    if (dp_nd_dtype(k->inputs[0]) == DP_FLOAT32) DPN__REG_FWD(float);
    else DPN__REG_FWD(double);
    return 0;
}
#undef DPN__REG_FWD
/* The data's gradient: d = out - label (label of any dtype, a block at a
   time as doubles), d or sign(d) times scale, in double; a loop per dtype
   and kind. The label's gradient 0. */
#define DPN__REG_GRAD_LOOP(T, V) do { \
        if (add) for (j = 0; j < m; j++) { double d = (V) - lb[j]; g_[i + j] = (T)((kind == 2 ? (double)((d > 0) - (d < 0)) : d) * scale + (double)g_[i + j]); } \
        else for (j = 0; j < m; j++) { double d = (V) - lb[j]; g_[i + j] = (T)((kind == 2 ? (double)((d > 0) - (d < 0)) : d) * scale); } \
    } while (0)
#define DPN__REG_GRAD(T) do { \
        const T *x_ = (const T *)dp_nd_data(x); \
        T *g_ = (T *)dp_nd_data(k->outputs[0]); \
        for (i = 0; i < n; i += m) { \
            m = n - i < DPN__BLK ? n - i : DPN__BLK; \
            dpn__blk_load(dp_nd_dtype(l), dp_nd_data(l), i, m, lb); \
            if (kind == 1) DPN__REG_GRAD_LOOP(T, 1 / (1 + exp(-(double)x_[i + j]))); \
            else DPN__REG_GRAD_LOOP(T, (double)x_[i + j]); \
        } \
    } while (0)
DPN__VEC_LOOPS static int dpn__regression_grad(const dp_kernel_ctx *k, int kind) {
    dp_ndarray *x = k->inputs[1], *l = k->inputs[2];
    int64_t i, j, m, n = dp_shape_size(dp_nd_shape(x)), rows = dp_nd_shape(x)->dims[0];
    double scale = k->params->v[0].f / (rows > 0 && n / rows > 0 ? (double)(n / rows) : 1.0), lb[DPN__BLK];
    int add = k->req[0] == DP_REQ_ADD;
    if (k->req[0] != DP_REQ_NULL) {
        if (dp_nd_dtype(x) == DP_FLOAT32) DPN__REG_GRAD(float);
        else DPN__REG_GRAD(double);
    }
    dpn__fill_by_req(k->outputs[1], 0, k->req[1]);
    return 0;
}
#undef DPN__REG_GRAD
#undef DPN__REG_GRAD_LOOP
#define DPN__REGRESSION(nm, kind) \
    static int dpn__k_##nm(const dp_kernel_ctx *k) { return dpn__regression_fwd(k, kind); } \
    static int dpn__kg_##nm(const dp_kernel_ctx *k) { return dpn__regression_grad(k, kind); }
DPN__REGRESSION(linear_regression, 0)
DPN__REGRESSION(logistic_regression, 1)
DPN__REGRESSION(mae_regression, 2)
#undef DPN__REGRESSION

/* Embedding(data, weight (input_dim, output_dim)): rows of weight picked
   by data's values (any shape; integral values in 0..input_dim-1, else the
   kernel fails naming the index); result data.shape + (output_dim,). The
   weight's gradient adds the output gradient's rows into the rows they
   came from; the data's is 0. */
static const dp_param_def dpn__embedding_params[] = {
    {"input_dim", DP_PARAM_INT, NULL, 1, 1e12, NULL, "rows of weight (the vocabulary)"},
    {"output_dim", DP_PARAM_INT, NULL, 1, 1e12, NULL, "columns of weight (the embedding's size)"},
    {"dtype", DP_PARAM_ENUM, "float32", 0, 0, "float32|float64", "the weight's and output's dtype"},
    {"sparse_grad", DP_PARAM_BOOL, "false", 0, 0, NULL, "MXNet's row-sparse gradient: accepted, the gradient is dense"},
};
static int dpn__infer_embedding(const dp_params *p, int nin, const dp_shape *is, const dp_dtype *it, int nout,
                                dp_shape *os, dp_dtype *ot, char *msg, size_t cap) {
    char s1[160], s2[160];
    (void)nin; (void)nout;
    if (is[1].ndim != 2 || is[1].dims[0] != p->v[0].i || is[1].dims[1] != p->v[1].i || is[0].ndim >= DP_MAX_DIMS
        || it[1] != (p->v[2].i ? DP_FLOAT64 : DP_FLOAT32)) {
        snprintf(msg, cap, "weight %s %s: needs (input_dim %lld, output_dim %lld) of dtype %s (data %s)", dp_dtype_name(it[1]),
                 dpn__shape_str(&is[1], s1, sizeof s1), (long long)p->v[0].i, (long long)p->v[1].i, p->v[2].i ? "float64" : "float32",
                 dpn__shape_str(&is[0], s2, sizeof s2));
        return -1;
    }
    *os = is[0];
    os->dims[os->ndim++] = p->v[1].i;
    *ot = it[1];
    return 0;
}
/* The row data[i] names, or -1 with the kernel's error. */
static int64_t dpn__embedding_row(const dp_kernel_ctx *k, dp_ndarray *data, int64_t i, int64_t rows) {
    double v = dpn__load_elem(dp_nd_data(data), dp_nd_dtype(data), i);
    if (!(v >= 0 && v < (double)rows && v == (double)(int64_t)v)) {
        char msg[128];
        snprintf(msg, sizeof msg, "Embedding: index %g (element %lld of data) is not a row of 0..%lld", v, (long long)i, (long long)rows - 1);
        dp_set_error(k->rc, msg);
        return -1;
    }
    return (int64_t)v;
}
static int dpn__k_embedding(const dp_kernel_ctx *k) {
    dp_ndarray *data = k->inputs[0], *w = k->inputs[1];
    int64_t rows = dp_nd_shape(w)->dims[0], d = dp_nd_shape(w)->dims[1], n = dp_shape_size(dp_nd_shape(data)), i, r;
    dp_dtype t = dp_nd_dtype(w);
    for (i = 0; k->req[0] != DP_REQ_NULL && i < n; i++) {
        if ((r = dpn__embedding_row(k, data, i, rows)) < 0) return DP_ERROR_INVALID_ARGS;
        dpn__copy_run(t, dp_nd_data(k->outputs[0]), i * d, dp_nd_data(w), r * d, d, k->req[0]);
    }
    return 0;
}
static int dpn__kg_embedding(const dp_kernel_ctx *k) {
    dp_ndarray *data = k->inputs[1], *w = k->inputs[2];
    int64_t rows = dp_nd_shape(w)->dims[0], d = dp_nd_shape(w)->dims[1], n = dp_shape_size(dp_nd_shape(data)), i, r;
    dp_dtype t = dp_nd_dtype(w);
    dpn__fill_by_req(k->outputs[0], 0, k->req[0]);
    if (k->req[1] == DP_REQ_NULL) return 0;
    dpn__clear_for(k->outputs[1], k->req[1]);
    for (i = 0; i < n; i++) {
        if ((r = dpn__embedding_row(k, data, i, rows)) < 0) return DP_ERROR_INVALID_ARGS;
        dpn__copy_run(t, dp_nd_data(k->outputs[1]), r * d, dp_nd_data(k->inputs[0]), i * d, d, DP_REQ_ADD);
    }
    return 0;
}

/* An axis parameter against ndim (negative counts from the end); -1 with msg. */
static int dpn__axis_of(int64_t axis, int ndim, const char *what, const dp_shape *s, char *msg, size_t cap) {
    char s1[160];
    int64_t a = axis < 0 ? axis + ndim : axis;
    if (a < 0 || a >= ndim) { snprintf(msg, cap, "axis %lld: out of range for %s %s", (long long)axis, what, dpn__shape_str(s, s1, sizeof s1)); return -1; }
    return (int)a;
}
/* expand_dims(data, axis): a new axis of size 1 at axis (-ndim-1..ndim). */
static const dp_param_def dpn__expand_dims_params[] = {{"axis", DP_PARAM_INT, NULL, 0, 0, NULL, "where the new axis goes; negative counts from the end"}};
static int dpn__infer_expand_dims(const dp_params *p, int nin, const dp_shape *is, const dp_dtype *it, int nout,
                                  dp_shape *os, dp_dtype *ot, char *msg, size_t cap) {
    int a, d;
    (void)nin; (void)nout;
    if (is[0].ndim >= DP_MAX_DIMS) { snprintf(msg, cap, "data has %d axes already (at most %d)", is[0].ndim, DP_MAX_DIMS); return -1; }
    if ((a = dpn__axis_of(p->v[0].i, is[0].ndim + 1, "data", &is[0], msg, cap)) < 0) return -1;
    memset(os, 0, sizeof *os);
    os->ndim = is[0].ndim + 1;
    for (d = 0; d < os->ndim; d++) os->dims[d] = d < a ? is[0].dims[d] : d == a ? 1 : is[0].dims[d - 1];
    *ot = it[0];
    return 0;
}
/* slice_axis(data, axis, begin, end): [begin, end) of one axis (negative
   counts from the end; end () is the axis's end, MXNet's None). */
static const dp_param_def dpn__slice_axis_params[] = {
    {"axis", DP_PARAM_INT, NULL, 0, 0, NULL, "the axis sliced; negative counts from the end"},
    {"begin", DP_PARAM_INT, NULL, 0, 0, NULL, "the first index; negative counts from the end"},
    {"end", DP_PARAM_SHAPE, "()", 0, 0, NULL, "one past the last index; () (MXNet's None) for the axis's end"},
};
static int dpn__slice_range(const dp_params *p, const dp_shape *s, int *axis, int64_t *b, int64_t *e, char *msg, size_t cap) {
    char s1[160];
    int64_t n;
    if ((*axis = dpn__axis_of(p->v[0].i, s->ndim, "data", s, msg, cap)) < 0) return -1;
    n = s->dims[*axis];
    *b = p->v[1].i < 0 ? p->v[1].i + n : p->v[1].i;
    *e = p->v[2].shape.ndim == 0 ? n : p->v[2].shape.dims[0] < 0 ? p->v[2].shape.dims[0] + n : p->v[2].shape.dims[0];
    if (p->v[2].shape.ndim > 1 || *b < 0 || *e > n || *b >= *e) {
        snprintf(msg, cap, "begin %lld, end %s: not a non-empty range of axis %d of data %s", (long long)p->v[1].i,
                 p->v[2].shape.ndim ? "given" : "None", *axis, dpn__shape_str(s, s1, sizeof s1));
        return -1;
    }
    return 0;
}
static int dpn__infer_slice_axis(const dp_params *p, int nin, const dp_shape *is, const dp_dtype *it, int nout,
                                 dp_shape *os, dp_dtype *ot, char *msg, size_t cap) {
    int axis;
    int64_t b, e;
    (void)nin; (void)nout;
    if (dpn__slice_range(p, &is[0], &axis, &b, &e, msg, cap)) return -1;
    *os = is[0]; os->dims[axis] = e - b; *ot = it[0];
    return 0;
}
/* Copies between a block of [outer, n, inner] and its slice [outer, m,
   inner] from offset b: to the slice (dir 0, by req) or back (dir 1, added). */
static void dpn__slice_copy(dp_dtype t, const void *src, void *dst, int64_t outer, int64_t n, int64_t m, int64_t inner, int64_t b, int dir, dp_req req) {
    int64_t o;
    for (o = 0; o < outer; o++) {                   /* the slice of one outer index is one run in both */
        int64_t big = (o * n + b) * inner, small = o * m * inner;
        if (dir == 0) dpn__copy_run(t, dst, small, src, big, m * inner, req);
        else dpn__copy_run(t, dst, big, src, small, m * inner, DP_REQ_ADD);
    }
}
static void dpn__split_axis(const dp_shape *s, int axis, int64_t *outer, int64_t *inner) {
    int d;
    *outer = *inner = 1;
    for (d = 0; d < axis; d++) *outer *= s->dims[d];
    for (d = axis + 1; d < s->ndim; d++) *inner *= s->dims[d];
}
static int dpn__k_slice_axis(const dp_kernel_ctx *k) {
    const dp_shape *s = dp_nd_shape(k->inputs[0]);
    int axis;
    int64_t b, e, outer, inner;
    char msg[8];
    dpn__slice_range(k->params, s, &axis, &b, &e, msg, sizeof msg);
    dpn__split_axis(s, axis, &outer, &inner);
    if (k->req[0] != DP_REQ_NULL)
        dpn__slice_copy(dp_nd_dtype(k->inputs[0]), dp_nd_data(k->inputs[0]), dp_nd_data(k->outputs[0]), outer, s->dims[axis], e - b, inner, b, 0, k->req[0]);
    return 0;
}
static int dpn__kg_slice_axis(const dp_kernel_ctx *k) {
    const dp_shape *s = dp_nd_shape(k->inputs[1]);
    int axis;
    int64_t b, e, outer, inner;
    char msg[8];
    if (k->req[0] == DP_REQ_NULL) return 0;
    dpn__slice_range(k->params, s, &axis, &b, &e, msg, sizeof msg);
    dpn__split_axis(s, axis, &outer, &inner);
    dpn__clear_for(k->outputs[0], k->req[0]);
    dpn__slice_copy(dp_nd_dtype(k->inputs[1]), dp_nd_data(k->inputs[0]), dp_nd_data(k->outputs[0]), outer, s->dims[axis], e - b, inner, b, 1, k->req[0]);
    return 0;
}
/* broadcast_to(data, shape): axes of size 1 repeated to shape's (0 keeps
   the axis); the gradient sums over the repeats. */
static const dp_param_def dpn__broadcast_to_params[] = {{"shape", DP_PARAM_SHAPE, NULL, 0, 0, NULL, "the result's shape; 0 keeps data's axis"}};
static int dpn__infer_broadcast_to(const dp_params *p, int nin, const dp_shape *is, const dp_dtype *it, int nout,
                                   dp_shape *os, dp_dtype *ot, char *msg, size_t cap) {
    const dp_shape *t = &p->v[0].shape;
    char s1[160], s2[160];
    int d;
    (void)nin; (void)nout;
    *os = is[0];
    for (d = 0; d < is[0].ndim && t->ndim == is[0].ndim; d++) {
        int64_t want = t->dims[d] == 0 ? is[0].dims[d] : t->dims[d];
        if (want < 1 || (is[0].dims[d] != want && is[0].dims[d] != 1)) break;
        os->dims[d] = want;
    }
    if (t->ndim != is[0].ndim || d < is[0].ndim) {
        snprintf(msg, cap, "shape %s: data %s broadcasts only its axes of size 1, to as many axes", dpn__shape_str(t, s1, sizeof s1),
                 dpn__shape_str(&is[0], s2, sizeof s2));
        return -1;
    }
    *ot = it[0];
    return 0;
}
/* The input element of output element i (small: the input's shape). */
static int64_t dpn__broadcast_src(const dp_shape *small, const dp_shape *big, int64_t i) {
    int64_t src = 0, stride = 1;
    int d;
    for (d = big->ndim - 1; d >= 0; d--) {
        int64_t c = i % big->dims[d];
        i /= big->dims[d];
        if (small->dims[d] != 1) src += c * stride;
        stride *= small->dims[d];
    }
    return src;
}
static int dpn__k_broadcast_to(const dp_kernel_ctx *k) {
    const dp_shape *xs = dp_nd_shape(k->inputs[0]), *ys = dp_nd_shape(k->outputs[0]);
    dp_dtype t = dp_nd_dtype(k->inputs[0]);
    int64_t i, n = dp_shape_size(ys);
    for (i = 0; k->req[0] != DP_REQ_NULL && i < n; i++)
        dpn__store_elem(dp_nd_data(k->outputs[0]), t, i, dpn__load_elem(dp_nd_data(k->inputs[0]), t, dpn__broadcast_src(xs, ys, i)), k->req[0]);
    return 0;
}
static int dpn__kg_broadcast_to(const dp_kernel_ctx *k) {
    const dp_shape *xs = dp_nd_shape(k->inputs[1]), *ys = dp_nd_shape(k->inputs[0]);
    dp_dtype t = dp_nd_dtype(k->inputs[1]);
    int64_t i, n = dp_shape_size(ys);
    if (k->req[0] == DP_REQ_NULL) return 0;
    dpn__clear_for(k->outputs[0], k->req[0]);
    for (i = 0; i < n; i++)
        dpn__store_elem(dp_nd_data(k->outputs[0]), t, dpn__broadcast_src(xs, ys, i), dpn__load_elem(dp_nd_data(k->inputs[0]), t, i), DP_REQ_ADD);
    return 0;
}
/* where(condition, x, y): x where condition is non-zero, else y; all of
   one shape, or condition (n,) choosing whole rows of x and y (n, ...). */
static int dpn__infer_where(const dp_params *p, int nin, const dp_shape *is, const dp_dtype *it, int nout,
                            dp_shape *os, dp_dtype *ot, char *msg, size_t cap) {
    char s1[160], s2[160], s3[160];
    int same_xy = is[1].ndim == is[2].ndim && !memcmp(is[1].dims, is[2].dims, sizeof(int64_t) * (size_t)is[1].ndim);
    int cond_ok = (is[0].ndim == is[1].ndim && !memcmp(is[0].dims, is[1].dims, sizeof(int64_t) * (size_t)is[0].ndim))
               || (is[0].ndim == 1 && is[1].ndim >= 1 && is[0].dims[0] == is[1].dims[0]);
    (void)p; (void)nin; (void)nout;
    if (!same_xy || !cond_ok || it[1] != it[2]) {
        snprintf(msg, cap, "condition %s, x %s, y %s: x and y of one shape and dtype, condition of theirs or (rows,)", dpn__shape_str(&is[0], s1, sizeof s1),
                 dpn__shape_str(&is[1], s2, sizeof s2), dpn__shape_str(&is[2], s3, sizeof s3));
        return -1;
    }
    *os = is[1]; *ot = it[1];
    return 0;
}
/* Elements per element of the condition: 1 (the same shape), or a row of
   x (the condition one value a row of x's first axis). */
static int64_t dpn__where_per(dp_ndarray *cond, dp_ndarray *x) {
    return dp_shape_size(dp_nd_shape(cond)) == dp_shape_size(dp_nd_shape(x)) ? 1
         : dp_shape_size(dp_nd_shape(x)) / (dp_nd_shape(x)->dims[0] ? dp_nd_shape(x)->dims[0] : 1);
}
/* pick[j] = whether the condition is true for element i + j, j < m (m <= DPN__BLK) */
static void dpn__where_picks(dp_ndarray *cond, int64_t per, int64_t i, int64_t m, unsigned char *pick) {
    double c[DPN__BLK];
    int64_t j, lo = i / per;
    dpn__blk_load(dp_nd_dtype(cond), dp_nd_data(cond), lo, (i + m - 1) / per - lo + 1, c);
    for (j = 0; j < m; j++) pick[j] = c[(i + j) / per - lo] != 0;
}
/* where(condition, x, y) a block of DPN__BLK at a time: one dtype switch a
   block for the condition, x, y and the output, not one an element */
static int dpn__k_where(const dp_kernel_ctx *k) {
    dp_dtype t = dp_nd_dtype(k->inputs[1]);
    int64_t i, j, m, n = dp_shape_size(dp_nd_shape(k->inputs[1])), per = dpn__where_per(k->inputs[0], k->inputs[1]);
    double x[DPN__BLK], y[DPN__BLK];
    unsigned char pick[DPN__BLK];
    if (k->req[0] == DP_REQ_NULL) return 0;
    for (i = 0; i < n; i += m) {
        m = n - i < DPN__BLK ? n - i : DPN__BLK;
        dpn__where_picks(k->inputs[0], per, i, m, pick);
        dpn__blk_load(t, dp_nd_data(k->inputs[1]), i, m, x);
        dpn__blk_load(t, dp_nd_data(k->inputs[2]), i, m, y);
        for (j = 0; j < m; j++) x[j] = pick[j] ? x[j] : y[j];
        dpn__blk_store(t, dp_nd_data(k->outputs[0]), i, m, x, k->req[0]);
    }
    return 0;
}
/* inputs (og, condition, x, y); outputs (d condition = 0, d x, d y) */
static int dpn__kg_where(const dp_kernel_ctx *k) {
    dp_dtype t = dp_nd_dtype(k->inputs[2]);
    int64_t i, j, m, n = dp_shape_size(dp_nd_shape(k->inputs[2])), per = dpn__where_per(k->inputs[1], k->inputs[2]);
    double g[DPN__BLK], dx[DPN__BLK], dy[DPN__BLK];
    unsigned char pick[DPN__BLK];
    dpn__fill_by_req(k->outputs[0], 0, k->req[0]);
    for (i = 0; i < n; i += m) {
        m = n - i < DPN__BLK ? n - i : DPN__BLK;
        dpn__where_picks(k->inputs[1], per, i, m, pick);
        dpn__blk_load(t, dp_nd_data(k->inputs[0]), i, m, g);
        for (j = 0; j < m; j++) { dx[j] = pick[j] ? g[j] : 0; dy[j] = pick[j] ? 0 : g[j]; }
        dpn__blk_store(t, dp_nd_data(k->outputs[1]), i, m, dx, k->req[1]);
        dpn__blk_store(t, dp_nd_data(k->outputs[2]), i, m, dy, k->req[2]);
    }
    return 0;
}
/* batch_dot(a (B, M, K), b (B, K, N)) = (B, M, N), each of a batch by
   dp_gemm_on on the kernel's engine (its workspaces are the engine's and
   kept, so a bound graph's steps allocate nothing; dp_gemm would malloc
   one per matrix past 16 KiB); transpose_a, transpose_b transpose each
   matrix first. */
static const dp_param_def dpn__batch_dot_params[] = {
    {"transpose_a", DP_PARAM_BOOL, "false", 0, 0, NULL, "each of a's matrices transposed"},
    {"transpose_b", DP_PARAM_BOOL, "false", 0, 0, NULL, "each of b's matrices transposed"},
};
static int dpn__infer_batch_dot(const dp_params *p, int nin, const dp_shape *is, const dp_dtype *it, int nout,
                                dp_shape *os, dp_dtype *ot, char *msg, size_t cap) {
    int ta = (int)p->v[0].i, tb = (int)p->v[1].i;
    char s1[160], s2[160];
    (void)nin; (void)nout;
    if (it[0] != it[1] || (it[0] != DP_FLOAT32 && it[0] != DP_FLOAT64) || is[0].ndim != 3 || is[1].ndim != 3 || is[0].dims[0] != is[1].dims[0]
        || is[0].dims[ta ? 1 : 2] != is[1].dims[tb ? 2 : 1]) {
        snprintf(msg, cap, "a %s, b %s (transpose_a %d, transpose_b %d): float (B, M, K) and (B, K, N) of one dtype", dpn__shape_str(&is[0], s1, sizeof s1),
                 dpn__shape_str(&is[1], s2, sizeof s2), ta, tb);
        return -1;
    }
    memset(os, 0, sizeof *os);
    os->ndim = 3; os->dims[0] = is[0].dims[0]; os->dims[1] = is[0].dims[ta ? 2 : 1]; os->dims[2] = is[1].dims[tb ? 1 : 2];
    *ot = it[0];
    return 0;
}
static void dpn__batch_gemm(dp_engine *eng, dp_dtype t, int64_t batch, int ta, int tb, int64_t m, int64_t n, int64_t kk, const void *a,
                            int64_t lda, const void *b, int64_t ldb, double beta, void *c) {
    size_t e = dp_dtype_size(t);
    int64_t i;
    for (i = 0; i < batch; i++)
        dp_gemm_on(eng, t, ta, tb, m, n, kk, (const char *)a + (size_t)(i * m * kk) * e, lda, (const char *)b + (size_t)(i * kk * n) * e, ldb, beta,
                (char *)c + (size_t)(i * m * n) * e, n);
}
static int dpn__k_batch_dot(const dp_kernel_ctx *k) {
    const dp_shape *as = dp_nd_shape(k->inputs[0]), *ys = dp_nd_shape(k->outputs[0]);
    int ta = (int)k->params->v[0].i, tb = (int)k->params->v[1].i;
    int64_t kk = as->dims[ta ? 1 : 2];
    if (k->req[0] == DP_REQ_NULL) return 0;
    dpn__batch_gemm(k->rc ? k->rc->engine : NULL, dp_nd_dtype(k->inputs[0]), ys->dims[0], ta, tb, ys->dims[1], ys->dims[2], kk, dp_nd_data(k->inputs[0]), as->dims[2],
                    dp_nd_data(k->inputs[1]), dp_nd_shape(k->inputs[1])->dims[2], dpn__beta_of(k->req[0]), dp_nd_data(k->outputs[0]));
    return 0;
}
/* inputs (og (B, M, N), a, b): d a = og op(b)^T (transposed back when
   transpose_a), d b = op(a)^T og (likewise). */
static int dpn__kg_batch_dot(const dp_kernel_ctx *k) {
    const dp_shape *gs = dp_nd_shape(k->inputs[0]), *as = dp_nd_shape(k->inputs[1]), *bs = dp_nd_shape(k->inputs[2]);
    dp_dtype t = dp_nd_dtype(k->inputs[1]);
    int ta = (int)k->params->v[0].i, tb = (int)k->params->v[1].i;
    int64_t B = gs->dims[0], M = gs->dims[1], N = gs->dims[2], K = as->dims[ta ? 1 : 2];
    const void *og = dp_nd_data(k->inputs[0]), *a = dp_nd_data(k->inputs[1]), *b = dp_nd_data(k->inputs[2]);
    dp_engine *eng = k->rc ? k->rc->engine : NULL;
    if (k->req[0] != DP_REQ_NULL) {
        if (!ta) dpn__batch_gemm(eng, t, B, 0, !tb, M, K, N, og, N, b, bs->dims[2], dpn__beta_of(k->req[0]), dp_nd_data(k->outputs[0]));
        else dpn__batch_gemm(eng, t, B, tb, 1, K, M, N, b, bs->dims[2], og, N, dpn__beta_of(k->req[0]), dp_nd_data(k->outputs[0]));
    }
    if (k->req[1] != DP_REQ_NULL) {
        if (!tb) dpn__batch_gemm(eng, t, B, !ta, 0, K, N, M, a, as->dims[2], og, N, dpn__beta_of(k->req[1]), dp_nd_data(k->outputs[1]));
        else dpn__batch_gemm(eng, t, B, 1, ta, N, K, M, og, N, a, as->dims[2], dpn__beta_of(k->req[1]), dp_nd_data(k->outputs[1]));
    }
    return 0;
}
/* stack(num_args arrays of one shape, axis): joined along a new axis. */
static const dp_param_def dpn__stack_params[] = {
    {"num_args", DP_PARAM_INT, NULL, 1, 64, NULL, "how many arrays"},
    {"axis", DP_PARAM_INT, "0", 0, 0, NULL, "the new axis's place; negative counts from the end"},
};
static int dpn__infer_stack(const dp_params *p, int nin, const dp_shape *is, const dp_dtype *it, int nout,
                            dp_shape *os, dp_dtype *ot, char *msg, size_t cap) {
    char s1[160], s2[160];
    int a, d, i;
    (void)nout;
    for (i = 1; i < nin; i++)
        if (it[i] != it[0] || is[i].ndim != is[0].ndim || memcmp(is[i].dims, is[0].dims, sizeof(int64_t) * (size_t)is[0].ndim)) {
            snprintf(msg, cap, "input %d %s and input 0 %s: one shape and dtype", i, dpn__shape_str(&is[i], s1, sizeof s1), dpn__shape_str(&is[0], s2, sizeof s2));
            return -1;
        }
    if (is[0].ndim >= DP_MAX_DIMS) { snprintf(msg, cap, "inputs have %d axes already (at most %d)", is[0].ndim, DP_MAX_DIMS); return -1; }
    if ((a = dpn__axis_of(p->v[1].i, is[0].ndim + 1, "input 0", &is[0], msg, cap)) < 0) return -1;
    memset(os, 0, sizeof *os);
    os->ndim = is[0].ndim + 1;
    for (d = 0; d < os->ndim; d++) os->dims[d] = d < a ? is[0].dims[d] : d == a ? nin : is[0].dims[d - 1];
    *ot = it[0];
    return 0;
}
/* The stacked output as [outer, num_args, inner]: outer the inputs' axes
   before axis, inner those from it on. */
static void dpn__stack_dims(const dp_params *p, const dp_shape *in, int64_t *outer, int64_t *inner) {
    int a = (int)(p->v[1].i < 0 ? p->v[1].i + in->ndim + 1 : p->v[1].i), d;
    *outer = 1;
    for (d = 0; d < a; d++) *outer *= in->dims[d];
    *inner = *outer ? dp_shape_size(in) / *outer : 0;
}
static int dpn__k_stack(const dp_kernel_ctx *k) {
    int64_t outer, inner, o;
    int i, n = k->num_inputs;
    dp_dtype t = dp_nd_dtype(k->inputs[0]);
    dpn__stack_dims(k->params, dp_nd_shape(k->inputs[0]), &outer, &inner);
    for (i = 0; k->req[0] != DP_REQ_NULL && i < n; i++)
        for (o = 0; o < outer; o++) dpn__copy_run(t, dp_nd_data(k->outputs[0]), (o * n + i) * inner, dp_nd_data(k->inputs[i]), o * inner, inner, k->req[0]);
    return 0;
}
/* inputs (og, the num_args arrays); outputs their gradients */
static int dpn__kg_stack(const dp_kernel_ctx *k) {
    int64_t outer, inner, o;
    int i, n = k->num_outputs;
    dp_dtype t = dp_nd_dtype(k->inputs[1]);
    dpn__stack_dims(k->params, dp_nd_shape(k->inputs[1]), &outer, &inner);
    for (i = 0; i < n; i++)
        for (o = 0; k->req[i] != DP_REQ_NULL && o < outer; o++)
            dpn__copy_run(t, dp_nd_data(k->outputs[i]), o * inner, dp_nd_data(k->inputs[0]), (o * n + i) * inner, inner, k->req[i]);
    return 0;
}
/* SliceChannel (split): data cut along axis into num_args equal parts
   (MXNet's num_outputs), each an output; squeeze_axis drops the axis when
   the parts have one element along it. */
static const dp_param_def dpn__slice_channel_params[] = {
    {"num_args", DP_PARAM_INT, NULL, 1, 64, NULL, "how many parts (MXNet's num_outputs, which a symbol node takes too)"},
    {"axis", DP_PARAM_INT, "1", 0, 0, NULL, "the axis cut; negative counts from the end"},
    {"squeeze_axis", DP_PARAM_BOOL, "false", 0, 0, NULL, "drop the axis from the parts (it must be num_args long)"},
};
static int dpn__infer_slice_channel(const dp_params *p, int nin, const dp_shape *is, const dp_dtype *it, int nout,
                                    dp_shape *os, dp_dtype *ot, char *msg, size_t cap) {
    char s1[160];
    int a, i, d;
    int64_t n = p->v[0].i;
    (void)nin;
    if ((a = dpn__axis_of(p->v[1].i, is[0].ndim, "data", &is[0], msg, cap)) < 0) return -1;
    if (is[0].dims[a] % n || (p->v[2].i && is[0].dims[a] != n)) {
        snprintf(msg, cap, "num_outputs %lld does not divide axis %d of data %s%s", (long long)n, a, dpn__shape_str(&is[0], s1, sizeof s1),
                 p->v[2].i ? " into parts of 1 (squeeze_axis)" : "");
        return -1;
    }
    for (i = 0; i < nout; i++) {
        os[i] = is[0]; ot[i] = it[0];
        os[i].dims[a] = is[0].dims[a] / n;
        if (p->v[2].i) { for (d = a; d + 1 < is[0].ndim; d++) os[i].dims[d] = is[0].dims[d + 1]; os[i].ndim--; }
    }
    return 0;
}
static int dpn__k_slice_channel(const dp_kernel_ctx *k) {
    const dp_shape *s = dp_nd_shape(k->inputs[0]);
    int a = (int)(k->params->v[1].i < 0 ? k->params->v[1].i + s->ndim : k->params->v[1].i), i;
    int64_t outer, inner, m = s->dims[a] / k->num_outputs;
    dpn__split_axis(s, a, &outer, &inner);
    for (i = 0; i < k->num_outputs; i++)
        if (k->req[i] != DP_REQ_NULL)
            dpn__slice_copy(dp_nd_dtype(k->inputs[0]), dp_nd_data(k->inputs[0]), dp_nd_data(k->outputs[i]), outer, s->dims[a], m, inner, i * m, 0, k->req[i]);
    return 0;
}
/* inputs (the num_args output gradients, data); output d data */
static int dpn__kg_slice_channel(const dp_kernel_ctx *k) {
    dp_ndarray *x = k->inputs[k->num_inputs - 1];
    const dp_shape *s = dp_nd_shape(x);
    int n = k->num_inputs - 1, a = (int)(k->params->v[1].i < 0 ? k->params->v[1].i + s->ndim : k->params->v[1].i), i;
    int64_t outer, inner, m = s->dims[a] / n;
    if (k->req[0] == DP_REQ_NULL) return 0;
    dpn__split_axis(s, a, &outer, &inner);
    dpn__clear_for(k->outputs[0], k->req[0]);
    for (i = 0; i < n; i++) dpn__slice_copy(dp_nd_dtype(x), dp_nd_data(k->inputs[i]), dp_nd_data(k->outputs[0]), outer, s->dims[a], m, inner, i * m, 1, k->req[0]);
    return 0;
}
static int dpn__infer_slice_channel_grad(const dp_params *p, int nin, const dp_shape *is, const dp_dtype *it, int nout,
                                         dp_shape *os, dp_dtype *ot, char *msg, size_t cap) {
    (void)p; (void)nout; (void)msg; (void)cap;
    os[0] = is[nin - 1]; ot[0] = it[nin - 1];
    return 0;
}
static int dpn__k_reshaped_copy(const dp_kernel_ctx *k) { return dpn__k_flatten(k); }
static int dpn__kg_reshaped_copy(const dp_kernel_ctx *k) { return dpn__kg_flatten(k); }
static void dpn__register_tensor_layers(void) {
    dp_operator op;
    memset(&op, 0, sizeof op);
    op.name = "BlockGrad"; op.doc = "MXNet's BlockGrad (stop_gradient): the identity, whose gradient is 0";
    op.num_inputs = 1; op.num_outputs = 1; op.forward_cpu = dpn__k_identity;
    dp_operator_register_with_gradient(&op, "_backward_BlockGrad", "gradient of BlockGrad: 0", dpn__kg_block, 0);
    memset(&op, 0, sizeof op);
    op.name = "MakeLoss"; op.doc = "MXNet's MakeLoss: the identity, as a loss: its gradient is grad_scale (normalized), whatever the head gradient";
    op.num_inputs = 1; op.num_outputs = 1; op.params = dpn__make_loss_params; op.num_params = 3; op.infer = dpn__infer_act;
    op.forward_cpu = dpn__k_identity; op.dtypes = 1u << DP_FLOAT32 | 1u << DP_FLOAT64;
    dp_operator_register_with_gradient(&op, "_backward_MakeLoss", "gradient of MakeLoss", dpn__kg_make_loss, 0);
#define DPN__REG_REGRESSION(NAME, nm, text) \
    memset(&op, 0, sizeof op); \
    op.name = NAME; op.doc = text; op.num_inputs = 2; op.num_outputs = 1; op.params = dpn__regression_params; op.num_params = 1; \
    op.infer = dpn__infer_regression; op.forward_cpu = dpn__k_##nm; op.dtypes = 1u << DP_FLOAT32 | 1u << DP_FLOAT64; \
    dp_operator_register_with_gradient(&op, "_backward_" NAME, "gradient of " NAME " (the label's is 0)", dpn__kg_##nm, 0);
    DPN__REG_REGRESSION("LinearRegressionOutput", linear_regression, "MXNet's LinearRegressionOutput(data, label): the identity; gradient (out - label) grad_scale / (elements per row), whatever the head gradient")
    DPN__REG_REGRESSION("LogisticRegressionOutput", logistic_regression, "MXNet's LogisticRegressionOutput(data, label): the sigmoid; gradient (out - label) grad_scale / (elements per row), whatever the head gradient")
    DPN__REG_REGRESSION("MAERegressionOutput", mae_regression, "MXNet's MAERegressionOutput(data, label): the identity; gradient sign(out - label) grad_scale / (elements per row), whatever the head gradient")
#undef DPN__REG_REGRESSION
    memset(&op, 0, sizeof op);
    op.name = "Embedding"; op.doc = "MXNet's Embedding(data, weight (input_dim, output_dim)): weight's rows at data's values (0..input_dim-1, else the op fails); data.shape + (output_dim,)";
    op.num_inputs = 2; op.num_outputs = 1; op.params = dpn__embedding_params; op.num_params = 4; op.infer = dpn__infer_embedding;
    op.forward_cpu = dpn__k_embedding;
    dp_operator_register_with_gradient(&op, "_backward_Embedding", "gradient of Embedding: the output gradient's rows added into weight's; data's is 0", dpn__kg_embedding, 0);
    memset(&op, 0, sizeof op);
    op.name = "expand_dims"; op.doc = "a new axis of size 1 at axis";
    op.num_inputs = 1; op.num_outputs = 1; op.params = dpn__expand_dims_params; op.num_params = 1; op.infer = dpn__infer_expand_dims;
    op.forward_cpu = dpn__k_reshaped_copy;
    dp_operator_register_with_gradient(&op, "_backward_expand_dims", "gradient of expand_dims", dpn__kg_reshaped_copy, 0);
    memset(&op, 0, sizeof op);
    op.name = "slice_axis"; op.doc = "[begin, end) along one axis";
    op.num_inputs = 1; op.num_outputs = 1; op.params = dpn__slice_axis_params; op.num_params = 3; op.infer = dpn__infer_slice_axis;
    op.forward_cpu = dpn__k_slice_axis;
    dp_operator_register_with_gradient(&op, "_backward_slice_axis", "gradient of slice_axis: the output gradient in its place, 0 elsewhere", dpn__kg_slice_axis, 0);
    memset(&op, 0, sizeof op);
    op.name = "broadcast_to"; op.doc = "axes of size 1 repeated to shape (0 keeps an axis)";
    op.num_inputs = 1; op.num_outputs = 1; op.params = dpn__broadcast_to_params; op.num_params = 1; op.infer = dpn__infer_broadcast_to;
    op.forward_cpu = dpn__k_broadcast_to;
    dp_operator_register_with_gradient(&op, "_backward_broadcast_to", "gradient of broadcast_to: sums over the repeats", dpn__kg_broadcast_to, 0);
    memset(&op, 0, sizeof op);
    op.name = "where"; op.doc = "where(condition, x, y): x where condition is non-zero, else y; condition of x's shape or (rows,)";
    op.num_inputs = 3; op.num_outputs = 1; op.infer = dpn__infer_where; op.forward_cpu = dpn__k_where;
    dp_operator_register_with_gradient(&op, "_backward_where", "gradient of where (condition's is 0)", dpn__kg_where, 0);
    memset(&op, 0, sizeof op);
    op.name = "batch_dot"; op.doc = "a (B, M, K) times b (B, K, N), matrix by matrix: (B, M, N)";
    op.num_inputs = 2; op.num_outputs = 1; op.params = dpn__batch_dot_params; op.num_params = 2; op.infer = dpn__infer_batch_dot;
    op.forward_cpu = dpn__k_batch_dot; op.dtypes = 1u << DP_FLOAT32 | 1u << DP_FLOAT64;
    dp_operator_register_with_gradient(&op, "_backward_batch_dot", "gradient of batch_dot", dpn__kg_batch_dot, 0);
    memset(&op, 0, sizeof op);
    op.name = "stack"; op.doc = "num_args arrays of one shape joined along a new axis";
    op.num_inputs = -1; op.num_outputs = 1; op.params = dpn__stack_params; op.num_params = 2; op.infer = dpn__infer_stack;
    op.forward_cpu = dpn__k_stack;
    dpn__register_counted(&op, "_backward_stack", "gradient of stack: the output gradient's slices", dpn__kg_stack);
    memset(&op, 0, sizeof op);
    op.name = "SliceChannel"; op.doc = "MXNet's SliceChannel (split): data cut along axis into num_args equal parts, one output each";
    op.num_inputs = 1; op.num_outputs = -1; op.params = dpn__slice_channel_params; op.num_params = 3; op.infer = dpn__infer_slice_channel;
    op.forward_cpu = dpn__k_slice_channel; op.gradient = "_backward_SliceChannel"; op.grad_needs = DP_GRAD_OUT_GRADS | DP_GRAD_INPUTS;
    dp_operator_register(&op);
    memset(&op, 0, sizeof op);
    op.name = "_backward_SliceChannel"; op.doc = "gradient of SliceChannel: (the parts' gradients, data) -> data's";
    op.num_inputs = -2; op.num_outputs = 1; op.params = dpn__slice_channel_params; op.num_params = 3;
    op.infer = dpn__infer_slice_channel_grad; op.forward_cpu = dpn__kg_slice_channel;
    dp_operator_register(&op);
}

/* >>optimizer objects: one weight's update, its state arrays and its step --- */
struct dp_optimizer {
    dp_engine *eng;
    const dp_operator *op;
    dp_params params;
    int step_param;               /* the update's INT parameter "t", or -1 */
    int64_t steps;
    dp_ndarray *arrays[DP_MAX_OP_ARRAYS];   /* weight, its gradient, then the states */
    int num_arrays;
};
DPN_IMPL dp_result dp_optimizer_create(dp_ndarray *weight, const dp_optimizer_desc *desc, dp_optimizer **out) {
    dp_nn_register();
    dp_engine *eng = weight ? dp_nd_engine(weight) : NULL;
    const char *name = desc && desc->update ? desc->update : "sgd_update";
    const dp_operator *op;
    dp_optimizer *o;
    dp_result r;
    int i, nstate;
    if (out) *out = NULL;
    if (!weight || !desc || !out) {
        if (eng) DPN__LOG(eng, DP_LOG_ERROR, ND_ARGS, "dp_optimizer_create: NULL %s", !desc ? "desc" : "out");
        return DP_ERROR_INVALID_ARGS;
    }
    if ((op = dpn__find_or_log(eng, name)) == NULL) return DP_ERROR_INVALID_ARGS;
    nstate = op->num_inputs - 2;
    if (nstate < 0 || op->num_outputs != 1 || nstate > 30 || op->mutate_inputs != ((1u << nstate) - 1u) << 2) {
        DPN__LOG(eng, DP_LOG_ERROR, ND_ARGS, "dp_optimizer_create: '%s' is not an update (inputs weight, gradient, then the states it mutates; one output)", name);
        return DP_ERROR_INVALID_ARGS;
    }
    if ((o = (dp_optimizer *)dp_engine_alloc(eng, sizeof *o)) == NULL) {
        DPN__LOG(eng, DP_LOG_ERROR, OUT_OF_MEMORY, "dp_optimizer_create");
        return DP_ERROR_OUT_OF_MEMORY;
    }
    memset(o, 0, sizeof *o);
    o->eng = eng; o->op = op; o->step_param = -1;
    for (i = 0; i < op->num_params; i++)
        if (strcmp(op->params[i].name, "t") == 0 && op->params[i].type == DP_PARAM_INT) o->step_param = i;
    for (i = 0; o->step_param >= 0 && i < DP_MAX_PARAMS && desc->params[i].name; i++)
        if (strcmp(desc->params[i].name, "t") == 0) {
            DPN__LOG(eng, DP_LOG_ERROR, ND_ARGS, "dp_optimizer_create: '%s': the optimizer counts the steps itself, t is not given", name);
            dp_engine_free(eng, o, sizeof *o);
            return DP_ERROR_INVALID_ARGS;
        }
    if ((r = dp_operator_parse_params(eng, op, desc->params, &o->params)) != DP_OK) { dp_engine_free(eng, o, sizeof *o); return r; }
    if ((r = dp_nd_attach_grad(weight, DP_REQ_WRITE)) != DP_OK) { dp_engine_free(eng, o, sizeof *o); return r; }
    o->arrays[0] = dp_nd_retain(weight);
    o->arrays[1] = dp_nd_retain(dp_nd_grad(weight));
    o->num_arrays = 2;
    for (i = 0; i < nstate; i++, o->num_arrays++)
        if ((r = dp_nd_zeros(eng, dp_nd_shape(weight), dp_nd_dtype(weight), dp_nd_ctx(weight), &o->arrays[2 + i])) != DP_OK) {
            dp_optimizer_destroy(o);
            return r;
        }
    *out = o;
    return DP_OK;
}
DPN_IMPL dp_result dp_optimizer_step(dp_optimizer *opt) {
    dp_ndarray *w;
    dp_result r;
    if (!opt) return DP_ERROR_INVALID_ARGS;
    w = opt->arrays[0];
    if (opt->step_param >= 0) { opt->params.v[opt->step_param].i = opt->steps + 1; opt->params.v[opt->step_param].f = (double)(opt->steps + 1); }
    if ((r = dpn__invoke_untracked(opt->eng, opt->op, &opt->params, opt->num_arrays, opt->arrays, 0, 1, &w, NULL)) == DP_OK) opt->steps++;
    return r;
}
DPN_IMPL dp_result dp_optimizer_set_param(dp_optimizer *opt, const dp_param *param) {
    if (!opt || !param) return DP_ERROR_INVALID_ARGS;
    if (opt->step_param >= 0 && param->name && strcmp(param->name, "t") == 0) {
        DPN__LOG(opt->eng, DP_LOG_ERROR, ND_ARGS, "dp_optimizer_set_param: the optimizer counts the steps itself, t is not set");
        return DP_ERROR_INVALID_ARGS;
    }
    return dp_operator_set_param(opt->eng, opt->op, param, &opt->params);   /* a failed set leaves them as they were */
}
DPN_IMPL int64_t dp_optimizer_steps(const dp_optimizer *opt) { return opt ? opt->steps : 0; }
DPN_IMPL dp_ndarray *dp_optimizer_state(const dp_optimizer *opt, int i) {
    return opt && i >= 0 && i < opt->num_arrays - 2 ? opt->arrays[2 + i] : NULL;
}
DPN_IMPL void dp_optimizer_destroy(dp_optimizer *opt) {
    int i;
    if (!opt) return;
    for (i = 0; i < opt->num_arrays; i++) dp_nd_release(opt->arrays[i]);
    dp_engine_free(opt->eng, opt, sizeof *opt);
}

/* >>more optimizers: RMSProp, AdaGrad, NAG, AdamW, schedules, clipping -------- */
#define DPN__OPT_COMMON \
    {"lr", DP_PARAM_FLOAT, NULL, 0, 0, NULL, "learning rate"}, \
    {"wd", DP_PARAM_FLOAT, "0", 0, 0, NULL, "weight decay"}, \
    {"rescale_grad", DP_PARAM_FLOAT, "1", 0, 0, NULL, "the gradient is multiplied by it first"}, \
    {"clip_gradient", DP_PARAM_FLOAT, "-1", 0, 0, NULL, "then limited to [-clip, clip] if > 0"}
enum { DPN__OPT_RMSPROP, DPN__OPT_RMSPROPALEX, DPN__OPT_ADAGRAD, DPN__OPT_NAG, DPN__OPT_ADAMW };
static const dp_param_def dpn__rmsprop_params[] = {DPN__OPT_COMMON,
    {"gamma1", DP_PARAM_FLOAT, "0.95", 0, 1, NULL, "decay of the squared gradient's mean"},
    {"epsilon", DP_PARAM_FLOAT, "1e-8", 0, 0, NULL, "added under the root"},
    {"gamma2", DP_PARAM_FLOAT, "0.9", 0, 1, NULL, "rmspropalex_update: the momentum of the step"}};
static const dp_param_def dpn__adagrad_params[] = {DPN__OPT_COMMON, {"epsilon", DP_PARAM_FLOAT, "1e-7", 0, 0, NULL, "added under the root"}};
static const dp_param_def dpn__nag_params[] = {DPN__OPT_COMMON, {"momentum", DP_PARAM_FLOAT, "0", 0, 0, NULL, "the momentum"}};
static const dp_param_def dpn__adamw_params[] = {DPN__OPT_COMMON,
    {"beta1", DP_PARAM_FLOAT, "0.9", 0, 1, NULL, "decay of the mean"}, {"beta2", DP_PARAM_FLOAT, "0.999", 0, 1, NULL, "decay of the variance"},
    {"epsilon", DP_PARAM_FLOAT, "1e-8", 0, 0, NULL, "added to the root of the variance"},
    {"eta", DP_PARAM_FLOAT, "1", 0, 0, NULL, "the schedule multiplier of the whole step (decay included)"},
    {"t", DP_PARAM_INT, "0", 0, 1e15, NULL, "the step, from 1: lr is scaled by sqrt(1 - beta2^t) / (1 - beta1^t); 0: not"}};
static int dpn__infer_update(const dp_params *p, int nin, const dp_shape *is, const dp_dtype *it, int nout,
                             dp_shape *os, dp_dtype *ot, char *msg, size_t cap) {
    int i;
    char s1[160], s2[160];
    (void)p; (void)nout;
    for (i = 1; i < nin; i++)
        if (it[i] != it[0] || is[i].ndim != is[0].ndim || memcmp(is[i].dims, is[0].dims, sizeof(int64_t) * (size_t)is[0].ndim) != 0) {
            snprintf(msg, cap, "input %d is %s %s, the weight %s %s: they must match", i, dp_dtype_name(it[i]), dpn__shape_str(&is[i], s1, sizeof s1),
                     dp_dtype_name(it[0]), dpn__shape_str(&is[0], s2, sizeof s2));
            return -1;
        }
    if (it[0] != DP_FLOAT32 && it[0] != DP_FLOAT64) { snprintf(msg, cap, "the weight must be float32 or float64"); return -1; }
    *os = is[0]; *ot = it[0];
    return 0;
}
/* The updates' loops: one per weight dtype (float32, float64) and
   optimizer, so that neither the dtype nor the optimizer is switched on per
   element. Each element is MXNet's kernel computed in double, as before:
   the states and the weight stored rounded once (add-to: the new weight
   added to out's value in double first, dp_dtype_store's rule), each
   element alone, so the range loop's chunks change no bit. */
typedef struct dpn__upd_job {
    const void *w, *gr;
    void *st[3], *out;
    dp_req req;
    double lr, wd, rescale, clip, p4, p5, p6, p7;
} dpn__upd_job;
#define DPN__UPD_RMSPROP     a = (1 - J->p4) * g * g + J->p4 * a; wi -= J->lr * g / sqrt(a + J->p5);
#define DPN__UPD_RMSPROPALEX a = (1 - J->p4) * g * g + J->p4 * a; b = (1 - J->p4) * g + J->p4 * b;                     \
                             c = J->p6 * c - J->lr * g / sqrt(a - b * b + J->p5); wi += c;
#define DPN__UPD_ADAGRAD     a += g * g; wi -= J->lr * (g / sqrt(a + J->p4) + J->wd * wi);
#define DPN__UPD_NAG         a = J->p4 * a - J->lr * g; wi += J->p4 * a - J->lr * g;   /* MXNet's kernel: the momentum holds lr */
#define DPN__UPD_ADAMW       a = J->p4 * a + (1 - J->p4) * g; b = J->p5 * b + (1 - J->p5) * g * g;                     \
                             wi -= J->p7 * (J->lr * a / (sqrt(b) + J->p6) + J->wd * wi);
/* MXNet's RMSProp clips after the weight decay, NAG decays after the clip */
#define DPN__UPD_PRE_RMSPROP     g += J->wd * wi;
#define DPN__UPD_PRE_RMSPROPALEX g += J->wd * wi;
#define DPN__UPD_PRE_ADAGRAD
#define DPN__UPD_PRE_NAG
#define DPN__UPD_PRE_ADAMW
#define DPN__UPD_POST_RMSPROP
#define DPN__UPD_POST_RMSPROPALEX
#define DPN__UPD_POST_ADAGRAD
#define DPN__UPD_POST_NAG        g += J->wd * wi;
#define DPN__UPD_POST_ADAMW
#define DPN__UPD_LOOP(T, KIND) do {                                                                                  \
        const T *w_ = (const T *)J->w, *gr_ = (const T *)J->gr;                                                      \
        T *s0_ = (T *)J->st[0], *s1_ = (T *)J->st[1], *s2_ = (T *)J->st[2], *out_ = (T *)J->out;                     \
        int64_t i_;                                                                                                  \
        for (i_ = begin; i_ < end; i_++) {                                                                           \
            double wi = (double)w_[i_], g = J->rescale * (double)gr_[i_], a = s0_ ? (double)s0_[i_] : 0;             \
            double b = s1_ ? (double)s1_[i_] : 0, c = s2_ ? (double)s2_[i_] : 0;                                     \
            DPN__UPD_PRE_##KIND                                                                                      \
            if (J->clip > 0) g = g < -J->clip ? -J->clip : g > J->clip ? J->clip : g;                                \
            DPN__UPD_POST_##KIND                                                                                     \
            DPN__UPD_##KIND                                                                                          \
            (void)b; (void)c;                                                                                        \
            if (s0_) s0_[i_] = (T)a;                                                                                 \
            if (s1_) s1_[i_] = (T)b;                                                                                 \
            if (s2_) s2_[i_] = (T)c;                                                                                 \
            if (J->req == DP_REQ_ADD) out_[i_] = (T)(wi + (double)out_[i_]);                                         \
            else if (J->req != DP_REQ_NULL) out_[i_] = (T)wi;                                                        \
        }                                                                                                            \
    } while (0)
#define DPN__UPD_RANGES(KIND)                                                                                        \
    static void dpn__upd_##KIND##_f32(int64_t begin, int64_t end, void *user) {                                     \
        const dpn__upd_job *J = (const dpn__upd_job *)user; DPN__UPD_LOOP(float, KIND);                              \
    }                                                                                                                \
    static void dpn__upd_##KIND##_f64(int64_t begin, int64_t end, void *user) {                                     \
        const dpn__upd_job *J = (const dpn__upd_job *)user; DPN__UPD_LOOP(double, KIND);                             \
    }
DPN__UPD_RANGES(RMSPROP)
DPN__UPD_RANGES(RMSPROPALEX)
DPN__UPD_RANGES(ADAGRAD)
DPN__UPD_RANGES(NAG)
DPN__UPD_RANGES(ADAMW)
static int dpn__update(const dp_kernel_ctx *k, int kind) {
    static const dp_range_fn fns[5][2] = {{dpn__upd_RMSPROP_f32, dpn__upd_RMSPROP_f64}, {dpn__upd_RMSPROPALEX_f32, dpn__upd_RMSPROPALEX_f64},
                                          {dpn__upd_ADAGRAD_f32, dpn__upd_ADAGRAD_f64}, {dpn__upd_NAG_f32, dpn__upd_NAG_f64},
                                          {dpn__upd_ADAMW_f32, dpn__upd_ADAMW_f64}};
    dp_dtype t = dp_nd_dtype(k->inputs[0]);
    int64_t n = dp_shape_size(dp_nd_shape(k->inputs[0]));
    const dp_params *p = k->params;
    dpn__upd_job J;
    int j;
    memset(&J, 0, sizeof J);
    J.w = dp_nd_data(k->inputs[0]); J.gr = dp_nd_data(k->inputs[1]); J.out = dp_nd_data(k->outputs[0]); J.req = k->req[0];
    for (j = 0; j < 3 && j + 2 < k->num_inputs; j++) J.st[j] = dp_nd_data(k->inputs[2 + j]);
    J.lr = p->v[0].f; J.wd = p->v[1].f; J.rescale = p->v[2].f; J.clip = p->v[3].f;
    J.p4 = p->v[4].f; J.p5 = kind == DPN__OPT_ADAGRAD || kind == DPN__OPT_NAG ? 0 : p->v[5].f;
    if (kind == DPN__OPT_RMSPROPALEX || kind == DPN__OPT_ADAMW) J.p6 = p->v[6].f;
    if (kind == DPN__OPT_ADAMW) J.p7 = p->v[7].f;
    if (kind == DPN__OPT_ADAMW && p->v[8].i > 0) {
        double c1 = 1 - pow(p->v[4].f, (double)p->v[8].i);
        if (c1 > 0) J.lr *= sqrt(1 - pow(p->v[5].f, (double)p->v[8].i)) / c1;
    }
    dpn__range(dpn__par_eng(k, (double)n), n, DPN__PAR_GRAIN, fns[kind][t == DP_FLOAT64], &J);   /* the weight is float32 or float64 (infer) */
    return 0;
}
static int dpn__k_rmsprop(const dp_kernel_ctx *k) { return dpn__update(k, DPN__OPT_RMSPROP); }
static int dpn__k_rmspropalex(const dp_kernel_ctx *k) { return dpn__update(k, DPN__OPT_RMSPROPALEX); }
static int dpn__k_adagrad(const dp_kernel_ctx *k) { return dpn__update(k, DPN__OPT_ADAGRAD); }
static int dpn__k_nag(const dp_kernel_ctx *k) { return dpn__update(k, DPN__OPT_NAG); }
static int dpn__k_adamw(const dp_kernel_ctx *k) { return dpn__update(k, DPN__OPT_ADAMW); }
static void dpn__register_optimizers(void) {
    dp_operator op;
    memset(&op, 0, sizeof op);
    op.num_outputs = 1; op.infer = dpn__infer_update; op.inplace = 1; op.dtypes = 1u << DP_FLOAT32 | 1u << DP_FLOAT64;
    op.name = "rmsprop_update"; op.doc = "RMSProp; mutates n (input 2)"; op.num_inputs = 3; op.mutate_inputs = 1u << 2;
    op.params = dpn__rmsprop_params; op.num_params = 6; op.forward_cpu = dpn__k_rmsprop;
    dp_operator_register(&op);
    op.name = "rmspropalex_update"; op.doc = "centered RMSProp; mutates n, g, delta (inputs 2-4)"; op.num_inputs = 5; op.mutate_inputs = 7u << 2;
    op.num_params = 7; op.forward_cpu = dpn__k_rmspropalex;
    dp_operator_register(&op);
    op.name = "adagrad_update"; op.doc = "AdaGrad; mutates history (input 2)"; op.num_inputs = 3; op.mutate_inputs = 1u << 2;
    op.params = dpn__adagrad_params; op.num_params = 5; op.forward_cpu = dpn__k_adagrad;
    dp_operator_register(&op);
    op.name = "nag_mom_update"; op.doc = "Nesterov momentum; mutates mom (input 2)"; op.params = dpn__nag_params; op.forward_cpu = dpn__k_nag;
    dp_operator_register(&op);
    op.name = "adamw_update"; op.doc = "AdamW (decoupled weight decay); mutates mean and var (inputs 2, 3)"; op.num_inputs = 4; op.mutate_inputs = 3u << 2;
    op.params = dpn__adamw_params; op.num_params = 9; op.forward_cpu = dpn__k_adamw;
    dp_operator_register(&op);
}
static dp_result dpn__lr_bad(const char *why) {
    DPN__LOG(NULL, DP_LOG_ERROR, ND_ARGS, "dp_lr_check: %s", why);
    return DP_ERROR_INVALID_ARGS;
}
static const char *dpn__lr_problem(const dp_lr_schedule *s) {
    int i;
    if (!s) return "NULL schedule";
    if ((unsigned)s->kind > (unsigned)DP_LR_COSINE) return "unknown kind";
    if ((unsigned)s->warmup_mode > (unsigned)DP_LR_WARMUP_CONSTANT) return "unknown warmup_mode";
    if (s->warmup_steps < 0) return "warmup_steps is negative";
    if (s->kind == DP_LR_FACTOR && (s->step <= 0 || !(s->factor <= 1))) return "FACTOR needs step > 0 and factor <= 1";
    if (s->kind == DP_LR_MULTIFACTOR) {
        if (!(s->factor <= 1) || s->num_steps < 0 || (s->num_steps && !s->steps)) return "MULTIFACTOR needs factor <= 1 and its steps";
        for (i = 0; i < s->num_steps; i++) if (s->steps[i] < 1 || (i && s->steps[i] <= s->steps[i - 1])) return "MULTIFACTOR's steps must increase from 1";
    }
    if (s->kind == DP_LR_COSINE && s->max_update <= s->warmup_steps) return "COSINE needs max_update > warmup_steps";
    return NULL;
}
DPN_IMPL dp_result dp_lr_check(const dp_lr_schedule *s) {
    const char *why = dpn__lr_problem(s);
    return why ? dpn__lr_bad(why) : DP_OK;
}
DPN_IMPL double dp_lr_at(const dp_lr_schedule *s, int64_t t) {
    double lr;
    int64_t k;
    int i;
    if (dpn__lr_problem(s)) return NAN;
    if (t < 0) t = 0;
    if (t < s->warmup_steps)
        return s->warmup_mode == DP_LR_WARMUP_CONSTANT ? s->warmup_begin_lr
             : s->warmup_begin_lr + (s->base_lr - s->warmup_begin_lr) * (double)t / (double)s->warmup_steps;
    switch (s->kind) {
    case DP_LR_FACTOR:
        k = t > 0 ? (t - 1) / s->step : 0;
        lr = s->base_lr * pow(s->factor, (double)k);
        return lr < s->stop_factor_lr ? s->stop_factor_lr : lr;
    case DP_LR_MULTIFACTOR:
        lr = s->base_lr;
        for (i = 0; i < s->num_steps && t > s->steps[i]; i++) lr *= s->factor;
        return lr;
    case DP_LR_COSINE:
        if (t > s->max_update) return s->final_lr;
        return s->final_lr + (s->base_lr - s->final_lr) * (1 + cos(3.14159265358979323846 * (double)(t - s->warmup_steps) / (double)(s->max_update - s->warmup_steps))) / 2;
    default: return s->base_lr;
    }
}
#define DPN__CLIP_MAX 64
typedef struct dpn__clip_arg { dp_ndarray *a[DPN__CLIP_MAX]; dp_ndarray *norm; int n; double max_norm; } dpn__clip_arg;
static void dpn__clip_free(void *arg) {
    dpn__clip_arg *c = (dpn__clip_arg *)arg;
    dp_engine *eng = dp_nd_engine(c->a[0]);
    int i;
    for (i = 0; i < c->n; i++) dp_nd_release(c->a[i]);
    dp_nd_release(c->norm);
    dp_engine_free(eng, c, sizeof *c);
}
/* Array j is an earlier one's bytes again (the same array, or a view of
   exactly its elements): inside the op, where the data pointers may be read. */
static int dpn__clip_repeat(const dpn__clip_arg *c, int j) {
    int s;
    for (s = 0; s < j; s++)
        if (dp_nd_data(c->a[s]) == dp_nd_data(c->a[j]) && dp_nd_bytes(c->a[s]) == dp_nd_bytes(c->a[j]) && dp_nd_dtype(c->a[s]) == dp_nd_dtype(c->a[j])) return 1;
    return 0;
}
/* sum + the squares of a's elements (float32 or float64: dp_clip_global_norm
   refuses the others), added one by one in element order, in double */
static double dpn__sum_squares(const dp_ndarray *a, double sum) {
    int64_t i, n = dp_shape_size(dp_nd_shape(a));
    const void *p = dp_nd_data(a);
    if (dp_nd_dtype(a) == DP_FLOAT32) for (i = 0; i < n; i++) sum += (double)((const float *)p)[i] * (double)((const float *)p)[i];
    else for (i = 0; i < n; i++) sum += ((const double *)p)[i] * ((const double *)p)[i];
    return sum;
}
/* a's elements times scale, rounded once to a's dtype */
DPN__VEC_LOOPS static void dpn__scale_in_place(dp_ndarray *a, double scale) {
    int64_t i, n = dp_shape_size(dp_nd_shape(a));
    void *p = dp_nd_data(a);
    if (dp_nd_dtype(a) == DP_FLOAT32) for (i = 0; i < n; i++) ((float *)p)[i] = (float)((double)((float *)p)[i] * scale);
    else for (i = 0; i < n; i++) ((double *)p)[i] *= scale;
}
static int dpn__clip_op(dp_run_ctx *rc, void *arg) {
    dpn__clip_arg *c = (dpn__clip_arg *)arg;
    double sum = 0, total, scale;
    int j;
    if (rc->input_status) return rc->input_status;
    for (j = 0; j < c->n; j++) {                       /* the same bytes given twice count once */
        if (dpn__clip_repeat(c, j)) continue;
        sum = dpn__sum_squares(c->a[j], sum);
    }
    total = sqrt(sum);
    if (c->norm) dp_dtype_store(dp_nd_dtype(c->norm), dp_nd_data(c->norm), 0, total, DP_REQ_WRITE);
    if (!(total > c->max_norm)) return 0;              /* NaN too: MXNet leaves the arrays as they are */
    scale = c->max_norm / (total + 1e-8);
    for (j = 0; j < c->n; j++) {
        if (dpn__clip_repeat(c, j)) continue;
        dpn__scale_in_place(c->a[j], scale);
    }
    return 0;
}
DPN_IMPL dp_result dp_clip_global_norm(dp_ndarray *const *arrays, int num, double max_norm, dp_ndarray *norm_out) {
    static const char *what = "dp_clip_global_norm";
    dp_engine *eng = num > 0 && arrays && arrays[0] ? dp_nd_engine(arrays[0]) : NULL;
    dp_var writes[DPN__CLIP_MAX + 1];
    dpn__clip_arg *c;
    dp_push_desc d;
    int i, j, nw = 0;
    if (!arrays || num < 1 || num > DPN__CLIP_MAX || !(max_norm > 0) || !eng) {
        DPN__LOG(eng, DP_LOG_ERROR, ND_ARGS, "%s: needs 1 to %d arrays and max_norm > 0 (num %d, max_norm %g)", what, DPN__CLIP_MAX, num, max_norm);
        return DP_ERROR_INVALID_ARGS;
    }
    for (i = 0; i <= num; i++) {
        dp_ndarray *a = i < num ? arrays[i] : norm_out;
        if (!a) { if (i < num) { DPN__LOG(eng, DP_LOG_ERROR, ND_ARGS, "%s: array %d is NULL", what, i); return DP_ERROR_INVALID_ARGS; } continue; }
        if (dp_nd_engine(a) != eng || (dp_nd_dtype(a) != DP_FLOAT32 && dp_nd_dtype(a) != DP_FLOAT64) || (i == num && dp_shape_size(dp_nd_shape(a)) != 1)) {
            DPN__LOG(eng, DP_LOG_ERROR, ND_ARGS, "%s: %s %d: float32 or float64 on the first array's engine%s", what, i < num ? "array" : "norm_out", i,
                     i == num ? ", one element" : "");
            return DP_ERROR_INVALID_ARGS;
        }
        if (dp_nd_ctx(a).dev_type == DP_DEV_GPU) { DPN__LOG(eng, DP_LOG_ERROR, BAD_CONTEXT, "%s: %s %d is on a GPU (CPU arrays only)", what, i < num ? "array" : "norm_out", i); return DP_ERROR_BAD_CONTEXT; }
        for (j = 0; j < nw && writes[j].id != dp_nd_var(a).id; j++) {}
        if (j == nw) writes[nw++] = dp_nd_var(a);
    }
    if ((c = (dpn__clip_arg *)dp_engine_alloc(eng, sizeof *c)) == NULL) { DPN__LOG(eng, DP_LOG_ERROR, OUT_OF_MEMORY, "%s", what); return DP_ERROR_OUT_OF_MEMORY; }
    memset(c, 0, sizeof *c);
    for (i = 0; i < num; i++) c->a[i] = dp_nd_retain(arrays[i]);
    c->n = num; c->norm = dp_nd_retain(norm_out); c->max_norm = max_norm;
    memset(&d, 0, sizeof d);
    d.fn = dpn__clip_op; d.arg = c; d.cleanup = dpn__clip_free; d.writes = writes; d.num_writes = nw; d.name = "clip_global_norm";
    return dp_push(eng, &d);
}


/* >>autograd ------------------------------------------------------------------
   A recorded invocation is a node: its operator, parameters and scalar, the
   node (and output index) each input came from, and the arrays its
   gradient operator reads besides the output gradients (grad_needs), kept
   as views so they hold the storage but not the graph. An array made by a
   recorded invocation points at its node; a marked array at a leaf node
   that holds its gradient array. Nodes are reference counted by the arrays
   that point at them and by the nodes that consume their outputs, so a
   graph lives exactly as long as something can still reach it. */
typedef struct dpn__ag_node dpn__ag_node;
struct dpn__ag_node {
    dp_atomic_int refs;
    dp_engine *eng;
    size_t bytes;                  /* this allocation, with the arrays below */
    const dp_operator *op;         /* NULL: a leaf */
    dp_params params;
    double scalar;
    dp_ctx ctx;
    int nin, nout, nsaved;
    int freed;                     /* saved arrays released by a backward */
    dpn__ag_node **in_node;         /* per input: where it came from, or NULL */
    int *in_index;
    dp_ndarray **saved;            /* inputs (DP_GRAD_INPUTS), then outputs (DP_GRAD_OUTPUTS) */
    int32_t *saved_version;
    dp_shape *out_shape;           /* for a zero gradient of an unused output */
    dp_dtype *out_dtype;
    dp_ndarray *grad;              /* leaf: the gradient array, and how it is written */
    dp_req grad_req;
    uint32_t mark;                 /* backward: the pass that visited it, its place */
    int order;
    dpn__ag_node *next_free;        /* release: the work list */
};
/* An array's place in a graph is its tag (dp_nd_tag): the node that made
   it, or its leaf, and which output of that node it is. */
static dpn__ag_node *dpn__ag_of(const dp_ndarray *a) { return (dpn__ag_node *)dp_nd_tag(a, NULL); }
static int dpn__ag_index(const dp_ndarray *a) { int i; dp_nd_tag(a, &i); return i; }
static DPN__THREAD_LOCAL int dpn__tls_recording;
static dp_atomic_int dpn__ag_pass;          /* numbers backward passes, for node marks */
static dp_atomic_int dpn__ag_backward_lock;   /* one backward pass at a time, process-wide */

static dpn__ag_node *dpn__ag_ref(dpn__ag_node *n) { if (n) dp_atomic_add(&n->refs, 1); return n; }
static void dpn__ag_release_saved(dpn__ag_node *n) {
    int i;
    for (i = 0; i < n->nsaved; i++) { dp_nd_release(n->saved[i]); n->saved[i] = NULL; }
    n->freed = 1;
}
/* Drops one reference; frees the nodes that no longer have any, walking a
   list instead of recursing (a long chain must not overflow the stack). */
static void dpn__ag_unref(dpn__ag_node *n) {
    dpn__ag_node *todo;
    if (!n || dp_atomic_add(&n->refs, -1) != 1) return;
    n->next_free = NULL;
    for (todo = n; todo;) {
        dpn__ag_node *x = todo;
        int i;
        todo = x->next_free;
        for (i = 0; i < x->nin; i++) {
            dpn__ag_node *c = x->in_node[i];
            if (c && dp_atomic_add(&c->refs, -1) == 1) { c->next_free = todo; todo = c; }
        }
        dpn__ag_release_saved(x);
        dp_nd_release(x->grad);
        dp_engine_free(x->eng, x, x->bytes);
    }
}
/* One allocation for a node and its arrays. */
static dpn__ag_node *dpn__ag_new(dp_engine *eng, int nin, int nout, int nsaved) {
    size_t bytes = sizeof(dpn__ag_node) + (size_t)nin * (sizeof(dpn__ag_node *) + sizeof(int))
                 + (size_t)nsaved * (sizeof(dp_ndarray *) + sizeof(int32_t)) + (size_t)nout * (sizeof(dp_shape) + sizeof(dp_dtype));
    dpn__ag_node *n = (dpn__ag_node *)dp_engine_alloc(eng, bytes);
    char *p;
    if (!n) { DPN__LOG(eng, DP_LOG_ERROR, OUT_OF_MEMORY, "autograd record"); return NULL; }
    memset(n, 0, bytes);
    n->eng = eng; n->bytes = bytes; n->nin = nin; n->nout = nout; n->nsaved = nsaved;
    p = (char *)(n + 1);     /* pointers first, then the 8-byte-aligned shapes, then the 4-byte fields */
    n->in_node = (dpn__ag_node **)(void *)p; p += (size_t)nin * sizeof(dpn__ag_node *);
    n->saved = (dp_ndarray **)(void *)p; p += (size_t)nsaved * sizeof(dp_ndarray *);
    n->out_shape = (dp_shape *)(void *)p; p += (size_t)nout * sizeof(dp_shape);
    n->in_index = (int *)(void *)p; p += (size_t)nin * sizeof(int);
    n->saved_version = (int32_t *)(void *)p; p += (size_t)nsaved * sizeof(int32_t);
    n->out_dtype = (dp_dtype *)(void *)p;
    return n;
}
static int dpn__ag_should_record(int nin, dp_ndarray *const *in) {
    int i;
    if (dpn__tls_recording <= 0) return 0;
    for (i = 0; i < nin; i++) if (dpn__ag_of(in[i])) return 1;
    return 0;
}
/* A recorded invocation must not overwrite an array that is in a graph:
   the graph would describe values that are gone. */
static dp_result dpn__ag_check_outputs(dp_engine *eng, const dp_operator *op, const dp_params *p, int nin, dp_ndarray *const *in,
                                      int nout, dp_ndarray *const *out) {
    int i;
    (void)p;
    for (i = 0; i < nout; i++)
        if (out[i] && dpn__ag_of(out[i])) {
            DPN__LOG(eng, DP_LOG_ERROR, ND_ARGS, "operator '%s': output %d is in a recorded graph already (marked, or made while "
                    "recording); writing it while recording would change values its gradient needs", op->name, i);
            return DP_ERROR_INVALID_ARGS;
        }
    for (i = 0; i < nout; i++) {
        int j;
        for (j = 0; out[i] && (op->grad_needs & DP_GRAD_INPUTS) && j < nin; j++)
            if (dp_nd_same_storage(out[i], in[j])) {
                DPN__LOG(eng, DP_LOG_ERROR, ND_ARGS, "operator '%s': output %d writes over input %d, which its gradient reads; "
                        "use a new output while recording", op->name, i, j);
                return DP_ERROR_INVALID_ARGS;
            }
    }
    for (i = 0; i < nin; i++)
        if (i < 32 && (op->mutate_inputs & (1u << i)) && dpn__ag_of(in[i])) {
            DPN__LOG(eng, DP_LOG_ERROR, ND_ARGS, "operator '%s' mutates input %d, which is in a recorded graph; update outside "
                    "dp_autograd_begin / dp_autograd_end", op->name, i);
            return DP_ERROR_INVALID_ARGS;
        }
    return DP_OK;
}
static dp_result dpn__ag_save(dpn__ag_node *n, int slot, dp_ndarray *a) {
    dp_result r = dp_nd_view(a, dp_nd_shape(a), dp_nd_dtype(a), 0, &n->saved[slot]);
    if (r == DP_OK) n->saved_version[slot] = (int32_t)dp_nd_version(a);
    return r;
}
/* The node for an invocation about to be pushed (its outputs exist), with
   one reference for the caller. */
static dpn__ag_node *dpn__ag_record(dp_engine *eng, const dp_operator *op, const dp_params *p, double scalar, int nin,
                                  dp_ndarray *const *in, int nout, dp_ndarray *const *out) {
    int keep_in = (op->grad_needs & DP_GRAD_INPUTS) != 0, keep_out = (op->grad_needs & DP_GRAD_OUTPUTS) != 0, i, k = 0;
    dpn__ag_node *n = dpn__ag_new(eng, nin, nout, (keep_in ? nin : 0) + (keep_out ? nout : 0));
    if (!n) return NULL;
    n->op = op; n->params = *p; n->scalar = scalar; n->ctx = dp_nd_ctx(in[0]);
    dp_atomic_store(&n->refs, 1);
    for (i = 0; i < nin; i++) { n->in_node[i] = dpn__ag_ref(dpn__ag_of(in[i])); n->in_index[i] = dpn__ag_index(in[i]); }
    for (i = 0; i < nout; i++) { n->out_shape[i] = (*dp_nd_shape(out[i])); n->out_dtype[i] = dp_nd_dtype(out[i]); }
    for (i = 0; keep_in && i < nin; i++) if (dpn__ag_save(n, k++, in[i]) != DP_OK) goto oom;
    for (i = 0; keep_out && i < nout; i++) if (dpn__ag_save(n, k++, out[i]) != DP_OK) goto oom;
    return n;
oom:                                   /* the failed slot is NULL: releasing it is fine */
    dpn__ag_unref(n);
    return NULL;
}
/* After the push: the outputs point at their node. */
static void dpn__ag_attach(dpn__ag_node *n, int nout, dp_ndarray *const *out) {
    int i;
    for (i = 0; i < nout; i++) {
        dpn__ag_node *old = dpn__ag_of(out[i]);     /* the same array twice among the outputs */
        dp_nd_set_tag(out[i], dpn__ag_ref(n), i);
        dpn__ag_unref(old);
    }
}
/* An invocation that was not recorded overwrote these arrays: a graph that
   made them no longer describes their values, so they leave it (marked
   arrays stay marked: an optimizer update writes them). */
static void dpn__ag_cut(dp_ndarray *a) {
    if (dpn__ag_of(a) && dpn__ag_of(a)->op) { dpn__ag_unref(dpn__ag_of(a)); dp_nd_set_tag(a, NULL, 0); }
}
static void dpn__ag_cut_written(int nin, dp_ndarray *const *in, unsigned mutated, int nout, dp_ndarray *const *out) {
    int i;
    for (i = 0; i < nin && i < 32; i++) if (mutated & (1u << i)) dpn__ag_cut(in[i]);
    for (i = 0; i < nout; i++) dpn__ag_cut(out[i]);
}
static dp_result dpn__ag_track_check(const dp_invocation *inv, int *record) {
    *record = !dpn__tls_untracked && dpn__ag_should_record(inv->num_inputs, inv->inputs);
    if (!*record) return DP_OK;
    return dpn__ag_check_outputs(inv->eng, inv->op, inv->params, inv->num_inputs, inv->inputs, inv->num_outputs, inv->outputs);
}
static void *dpn__ag_track_record(const dp_invocation *inv) {
    return dpn__ag_record(inv->eng, inv->op, inv->params, inv->scalar, inv->num_inputs, inv->inputs, inv->num_outputs, inv->outputs);
}
static void dpn__ag_track_pushed(const dp_invocation *inv, void *rec) {
    dpn__ag_node *node = (dpn__ag_node *)rec;
    if (node) { dpn__ag_attach(node, inv->num_outputs, inv->outputs); dpn__ag_unref(node); }   /* the outputs hold it now */
    else dpn__ag_cut_written(inv->num_inputs, inv->inputs, inv->op->mutate_inputs, inv->num_outputs, inv->outputs);
}
static void dpn__ag_track_discard(void *rec) { dpn__ag_unref((dpn__ag_node *)rec); }
static void dpn__ag_track_tag_released(void *tag) { dpn__ag_unref((dpn__ag_node *)tag); }
static int dpn__ag_tracking;     /* autograd is the process's tracker (written once, in dp_nn_register) */
static void dpn__ag_install_tracker(void) {
    dp_tracker t;
    memset(&t, 0, sizeof t);
    t.training = dp_autograd_is_training;
    t.check = dpn__ag_track_check; t.record = dpn__ag_track_record; t.pushed = dpn__ag_track_pushed;
    t.discard = dpn__ag_track_discard; t.tag_released = dpn__ag_track_tag_released; t.written = dpn__ag_cut;
    dpn__ag_tracking = dp_set_tracker(&t) == DP_OK;      /* another tracker first: logged there */
}
/* Recording needs autograd to be the tracker: another one installed first
   would leave every graph empty and backward's error misleading. */
static dp_result dpn__ag_ready(const char *what) {
    dp_nn_register();
    if (dpn__ag_tracking) return DP_OK;
    DPN__LOG(NULL, DP_LOG_ERROR, ND_ARGS, "%s: another tracker was installed (dp_set_tracker) before autograd's: nothing can be recorded", what);
    return DP_ERROR_INVALID_ARGS;
}
DPN_IMPL dp_result dp_autograd_begin(void) {
    dp_result r = dpn__ag_ready("dp_autograd_begin");
    if (r == DP_OK) dpn__tls_recording++;
    return r;
}
DPN_IMPL dp_result dp_autograd_end(void) {
    if (dpn__tls_recording <= 0) { DPN__LOG(NULL, DP_LOG_ERROR, ND_ARGS, "dp_autograd_end without dp_autograd_begin on this thread"); return DP_ERROR_INVALID_ARGS; }
    dpn__tls_recording--;
    return DP_OK;
}
DPN_IMPL int dp_autograd_is_recording(void) { return dpn__tls_recording > 0; }
static DPN__THREAD_LOCAL int dpn__tls_training;   /* 0: as recording says; 1: inference; 2: training */
DPN_IMPL int dp_autograd_set_training(int mode) {
    int was = dpn__tls_training - 1;
    dpn__tls_training = mode < 0 ? 0 : mode ? 2 : 1;
    return was;
}
DPN_IMPL int dp_autograd_is_training(void) { return dpn__tls_training ? dpn__tls_training == 2 : dpn__tls_recording > 0; }
DPN_IMPL dp_result dp_nd_attach_grad(dp_ndarray *a, dp_req req) {
    dp_engine *eng = a ? dp_nd_engine(a) : NULL;
    dpn__ag_node *leaf;
    dp_result r;
    if ((r = dpn__ag_ready("dp_nd_attach_grad")) != DP_OK) return r;
    if (!a || (req != DP_REQ_NULL && req != DP_REQ_WRITE && req != DP_REQ_ADD)) {
        DPN__LOG(eng, DP_LOG_ERROR, ND_ARGS, "dp_nd_attach_grad: %s", a ? "req must be DP_REQ_WRITE, DP_REQ_ADD or DP_REQ_NULL" : "NULL array");
        return DP_ERROR_INVALID_ARGS;
    }
    if (req != DP_REQ_NULL && dp_nd_dtype(a) != DP_FLOAT32 && dp_nd_dtype(a) != DP_FLOAT64) {
        DPN__LOG(eng, DP_LOG_ERROR, ND_ARGS, "dp_nd_attach_grad: a %s array has no gradient (float32 or float64 only)", dp_dtype_name(dp_nd_dtype(a)));
        return DP_ERROR_INVALID_ARGS;
    }
    leaf = NULL;
    if (req != DP_REQ_NULL) {
        if ((leaf = dpn__ag_new(eng, 0, 1, 0)) == NULL) return DP_ERROR_OUT_OF_MEMORY;   /* logged by dpn__ag_new */
        if ((r = dp_nd_zeros(eng, dp_nd_shape(a), dp_nd_dtype(a), dp_nd_ctx(a), &leaf->grad)) != DP_OK) { dp_engine_free(eng, leaf, leaf->bytes); return r; }
        leaf->grad_req = req; leaf->ctx = dp_nd_ctx(a);
        leaf->out_shape[0] = (*dp_nd_shape(a)); leaf->out_dtype[0] = dp_nd_dtype(a);
        dp_atomic_store(&leaf->refs, 1);
    }
    dpn__ag_unref(dpn__ag_of(a));
    dp_nd_set_tag(a, leaf, 0);
    return DP_OK;
}
DPN_IMPL dp_ndarray *dp_nd_grad(const dp_ndarray *a) { return a && dpn__ag_of(a) && !dpn__ag_of(a)->op ? dpn__ag_of(a)->grad : NULL; }
DPN_IMPL dp_result dp_nd_detach(dp_ndarray *a, dp_ndarray **out) {
    if (out) *out = NULL;
    if (!a || !out) { DPN__LOG(a ? dp_nd_engine(a) : NULL, DP_LOG_ERROR, ND_ARGS, "dp_nd_detach: NULL array or out"); return DP_ERROR_INVALID_ARGS; }
    return dp_nd_view(a, dp_nd_shape(a), dp_nd_dtype(a), 0, out);
}

/* Backward, step 1: the nodes head depends on, producers before consumers
   (a depth-first walk with an explicit stack), each with its place. */
typedef struct dpn__ag_pass_state {
    dp_engine *eng;
    dpn__ag_node **topo; size_t ntopo, captopo;
    unsigned char *need;           /* per node: a marked array is reachable from it */
    size_t *slot0;                 /* per node: where its output gradients start in og */
    dp_ndarray **og;               /* output gradients so far, per (node, output) */
    unsigned char *own;            /* og made here (may be written over) */
    unsigned char *leaf_written;   /* per node: this pass has written the leaf's gradient */
    size_t nslots;
} dpn__ag_pass_state;
static dp_result dpn__ag_sort(dpn__ag_pass_state *ps, dpn__ag_node *head) {
    struct frame { dpn__ag_node *n; int next; } *stack = NULL;
    size_t nstack = 0, capstack = 0;
    uint32_t pass = (uint32_t)dp_atomic_add(&dpn__ag_pass, 1) + 1;
    if (pass == 0) pass = (uint32_t)dp_atomic_add(&dpn__ag_pass, 1) + 1;   /* 0 is a new node's mark */
    dp_result r = DP_OK;
    if (dpn__reserve(ps->eng, &stack, &capstack, 0, sizeof *stack, 64)) {
        DPN__LOG(ps->eng, DP_LOG_ERROR, OUT_OF_MEMORY, "dp_autograd_backward: the graph's order");
        return DP_ERROR_OUT_OF_MEMORY;
    }
    head->mark = pass;
    stack[nstack].n = head; stack[nstack].next = 0; nstack++;
    while (nstack) {
        struct frame *f = &stack[nstack - 1];
        if (f->next < f->n->nin) {
            dpn__ag_node *c = f->n->in_node[f->next++];
            if (!c || c->mark == pass) continue;
            c->mark = pass;
            if (dpn__reserve(ps->eng, &stack, &capstack, nstack, sizeof *stack, 64)) { r = DP_ERROR_OUT_OF_MEMORY; break; }
            stack[nstack].n = c; stack[nstack].next = 0; nstack++;
            continue;
        }
        if (dpn__reserve(ps->eng, &ps->topo, &ps->captopo, ps->ntopo, sizeof *ps->topo, 64)) { r = DP_ERROR_OUT_OF_MEMORY; break; }
        f->n->order = (int)ps->ntopo;
        ps->topo[ps->ntopo++] = f->n;
        nstack--;
    }
    dp_engine_free(ps->eng, stack, capstack * sizeof *stack);
    if (r != DP_OK) DPN__LOG(ps->eng, DP_LOG_ERROR, OUT_OF_MEMORY, "dp_autograd_backward: the graph's order");
    return r;
}
/* Step 2: which nodes lead to a marked array, their output-gradient slots,
   and every reason not to run, before anything is pushed. */
static dp_result dpn__ag_plan(dpn__ag_pass_state *ps) {
    size_t i, n = ps->ntopo;
    int j;
    ps->need = (unsigned char *)dp_engine_alloc(ps->eng, n * 2);
    ps->slot0 = (size_t *)dp_engine_alloc(ps->eng, n * sizeof *ps->slot0);
    if (!ps->need || !ps->slot0) { DPN__LOG(ps->eng, DP_LOG_ERROR, OUT_OF_MEMORY, "dp_autograd_backward"); return DP_ERROR_OUT_OF_MEMORY; }
    memset(ps->need, 0, n * 2);
    ps->leaf_written = ps->need + n;
    for (i = 0; i < n; i++) {
        dpn__ag_node *x = ps->topo[i];
        ps->need[i] = !x->op && x->grad_req != DP_REQ_NULL;
        for (j = 0; j < x->nin; j++) if (x->in_node[j] && ps->need[x->in_node[j]->order]) ps->need[i] = 1;
        ps->slot0[i] = ps->nslots;
        ps->nslots += (size_t)x->nout;
    }
    for (i = 0; i < n; i++) {
        dpn__ag_node *x = ps->topo[i];
        const dp_operator *g;
        int gin;
        if (!ps->need[i] || !x->op) continue;
        if (!x->op->gradient || (g = dp_operator_find(x->op->gradient)) == NULL) {
            DPN__LOG(ps->eng, DP_LOG_ERROR, ND_ARGS, "dp_autograd_backward: operator '%s' has no gradient, and it lies between the head "
                    "and a marked array (detach its input, or register a gradient)", x->op->name);
            return DP_ERROR_INVALID_ARGS;
        }
        gin = ((x->op->grad_needs & DP_GRAD_OUT_GRADS) ? x->nout : 0) + x->nsaved;
        if (gin > DP_MAX_OP_ARRAYS) {
            DPN__LOG(ps->eng, DP_LOG_ERROR, ND_ARGS, "dp_autograd_backward: the gradient of '%s' would take %d inputs, more than %d",
                    x->op->name, gin, DP_MAX_OP_ARRAYS);
            return DP_ERROR_INVALID_ARGS;
        }
        if (dp_operator_arity(g, &x->params, g->num_inputs) != gin || dp_operator_arity(g, &x->params, g->num_outputs) != x->nin) {
            DPN__LOG(ps->eng, DP_LOG_ERROR, ND_ARGS, "dp_autograd_backward: gradient operator '%s' takes %d inputs and makes %d outputs; "
                    "'%s' (grad_needs %u) gives it %d and needs %d", g->name, dp_operator_arity(g, &x->params, g->num_inputs),
                    dp_operator_arity(g, &x->params, g->num_outputs), x->op->name, x->op->grad_needs, gin, x->nin);
            return DP_ERROR_INVALID_ARGS;
        }
        if (!(x->ctx.dev_type == DP_DEV_GPU ? g->forward_gpu : g->forward_cpu)
            || (x->ctx.dev_type == DP_DEV_GPU && !dp_operator_find("_copy")->forward_gpu)) {
            DPN__LOG(ps->eng, DP_LOG_ERROR, BAD_CONTEXT, "dp_autograd_backward: gradient operator '%s' (or _copy) has no kernel for %s",
                    g->name, x->ctx.dev_type == DP_DEV_GPU ? "GPUs" : "the CPU");
            return DP_ERROR_BAD_CONTEXT;
        }
        if (x->freed) {
            DPN__LOG(ps->eng, DP_LOG_ERROR, ND_ARGS, "dp_autograd_backward: the graph through '%s' was freed by an earlier backward "
                    "(pass retain_graph to differentiate it again)", x->op->name);
            return DP_ERROR_INVALID_ARGS;
        }
        for (j = 0; j < x->nsaved; j++)
            if ((int32_t)dp_nd_version(x->saved[j]) != x->saved_version[j]) {
                DPN__LOG(ps->eng, DP_LOG_ERROR, ND_ARGS, "dp_autograd_backward: an array '%s' saved for its gradient was written after "
                        "it was recorded; the gradient would read the new values (update after backward)", x->op->name);
                return DP_ERROR_INVALID_ARGS;
            }
    }
    ps->og = (dp_ndarray **)dp_engine_alloc(ps->eng, (ps->nslots ? ps->nslots : 1) * sizeof *ps->og);
    ps->own = (unsigned char *)dp_engine_alloc(ps->eng, ps->nslots ? ps->nslots : 1);
    if (!ps->og || !ps->own) {        /* dpn__ag_pass_free releases og's arrays: never an uninitialised one */
        dp_engine_free(ps->eng, ps->og, (ps->nslots ? ps->nslots : 1) * sizeof *ps->og);
        dp_engine_free(ps->eng, ps->own, ps->nslots ? ps->nslots : 1);
        ps->og = NULL; ps->own = NULL;
        DPN__LOG(ps->eng, DP_LOG_ERROR, OUT_OF_MEMORY, "dp_autograd_backward");
        return DP_ERROR_OUT_OF_MEMORY;
    }
    memset(ps->og, 0, (ps->nslots ? ps->nslots : 1) * sizeof *ps->og);
    memset(ps->own, 0, ps->nslots ? ps->nslots : 1);
    return DP_OK;
}
static void dpn__ag_pass_free(dpn__ag_pass_state *ps) {
    size_t i, n = ps->ntopo;
    if (ps->og) for (i = 0; i < ps->nslots; i++) dp_nd_release(ps->og[i]);
    dp_engine_free(ps->eng, ps->og, (ps->nslots ? ps->nslots : 1) * sizeof *ps->og);
    dp_engine_free(ps->eng, ps->own, ps->nslots ? ps->nslots : 1);
    dp_engine_free(ps->eng, ps->need, n * 2);
    dp_engine_free(ps->eng, ps->slot0, n * sizeof *ps->slot0);
    dp_engine_free(ps->eng, ps->topo, ps->captopo * sizeof *ps->topo);
}
/* Adds src into dst (or writes it, by req) with the _copy operator. */
static dp_result dpn__ag_copy(dp_engine *eng, dp_ndarray *src, dp_ndarray *dst, dp_req req) {
    dp_params none;
    memset(&none, 0, sizeof none);
    return dpn__invoke_untracked(eng, dp_operator_find("_copy"), &none, 1, &src, 0, 1, &dst, &req);
}
/* Where the gradient for input i of x goes: a marked array's gradient
   (written on the first contribution of this pass if its req is WRITE,
   else added), the output gradient collected so far (added), or a new
   array. *slot is the og slot to fill with a new array, or -1. */
static void dpn__ag_target(dpn__ag_pass_state *ps, dpn__ag_node *x, int i, dp_ndarray **out, dp_req *req, long *slot) {
    dpn__ag_node *c = x->in_node[i];
    *out = NULL; *req = DP_REQ_WRITE; *slot = -1;
    if (!c || !ps->need[c->order]) { *req = DP_REQ_NULL; return; }
    if (!c->op) {
        *out = c->grad;
        *req = ps->leaf_written[c->order] || c->grad_req == DP_REQ_ADD ? DP_REQ_ADD : DP_REQ_WRITE;
        ps->leaf_written[c->order] = 1;
        return;
    }
    *slot = (long)(ps->slot0[c->order] + (size_t)x->in_index[i]);
    if (ps->og[*slot]) { *out = ps->og[*slot]; *req = DP_REQ_ADD; *slot = -1; }
}
/* Step 3, per node: push its gradient operator. */
static dp_result dpn__ag_node_backward(dpn__ag_pass_state *ps, dpn__ag_node *x) {
    const dp_operator *g = dp_operator_find(x->op->gradient);
    dp_ndarray *gin[3 * DP_MAX_OP_ARRAYS], *gout[DP_MAX_OP_ARRAYS];
    dp_req greq[DP_MAX_OP_ARRAYS];
    int dup_of[DP_MAX_OP_ARRAYS], made[DP_MAX_OP_ARRAYS];
    long slot[DP_MAX_OP_ARRAYS];
    size_t s0 = ps->slot0[x->order];
    int i, j, ngin = 0, ngout = x->nin, inplace_from = -1;
    dp_result r = DP_OK;
    for (j = 0; j < x->nout && (x->op->grad_needs & DP_GRAD_OUT_GRADS); j++) {   /* an unused output's is 0 */
        if (!ps->og[s0 + (size_t)j]) {
            if ((r = dp_nd_zeros(ps->eng, &x->out_shape[j], x->out_dtype[j], x->ctx, &ps->og[s0 + (size_t)j])) != DP_OK) return r;
            ps->own[s0 + (size_t)j] = 1;
        }
        gin[ngin++] = ps->og[s0 + (size_t)j];
    }
    for (j = 0; j < x->nsaved; j++) gin[ngin++] = x->saved[j];
    for (i = 0; i < x->nin; i++) {
        int k;
        dup_of[i] = -1;
        for (k = 0; k < i; k++)       /* the same entry twice: a new array now, added to the first's after */
            if (x->in_node[k] && x->in_node[k] == x->in_node[i] && x->in_index[k] == x->in_index[i]) break;
        if (k < i && greq[k] != DP_REQ_NULL) { dup_of[i] = k; gout[i] = NULL; greq[i] = DP_REQ_WRITE; slot[i] = -1; continue; }
        dpn__ag_target(ps, x, i, &gout[i], &greq[i], &slot[i]);
    }
    /* In place: output 0 over an output gradient nobody else reads. */
    for (j = 0; j < x->nout && gout[0] == NULL && slot[0] >= 0 && ngout > 0 && (x->op->grad_needs & DP_GRAD_OUT_GRADS); j++) {
        dp_ndarray *o = ps->og[s0 + (size_t)j];
        if (j < 32 && (g->inplace & (1u << j)) && ps->own[s0 + (size_t)j] && dp_nd_dtype(o) == x->out_dtype[j]
            && dp_nd_ctx(o).dev_type == x->ctx.dev_type) { inplace_from = j; break; }
    }
    if (inplace_from >= 0) {   /* it must also have the shape the gradient operator infers: input 0's */
        const dp_shape *want = &x->in_node[0]->out_shape[x->in_index[0]], *have = dp_nd_shape(ps->og[s0 + (size_t)inplace_from]);
        if (want->ndim == have->ndim && memcmp(want->dims, have->dims, sizeof(int64_t) * (size_t)want->ndim) == 0) {
            gout[0] = ps->og[s0 + (size_t)inplace_from]; greq[0] = DP_REQ_INPLACE;
        }
    }
    for (i = 0; i < ngout; i++) { if (greq[i] == DP_REQ_NULL) gout[i] = NULL; made[i] = gout[i] == NULL; }
    if ((r = dpn__invoke_untracked(ps->eng, g, &x->params, ngin, gin, x->scalar, ngout, gout, greq)) != DP_OK) return r;
    /* gout now holds every result: the made ones are ours to keep in a
       slot or to release */
    for (i = 0; i < ngout; i++) {
        int keep = slot[i] >= 0 && greq[i] != DP_REQ_NULL;
        if (keep) { ps->og[slot[i]] = made[i] ? gout[i] : dp_nd_retain(gout[i]); ps->own[slot[i]] = 1; }
        made[i] = made[i] && !keep;                            /* still ours to release */
    }
    for (i = 0; i < ngout && r == DP_OK; i++) if (dup_of[i] >= 0) r = dpn__ag_copy(ps->eng, gout[i], gout[dup_of[i]], DP_REQ_ADD);
    for (i = 0; i < ngout; i++) if (made[i]) dp_nd_release(gout[i]);
    if (r != DP_OK) return r;
    for (j = 0; j < x->nout; j++) { dp_nd_release(ps->og[s0 + (size_t)j]); ps->og[s0 + (size_t)j] = NULL; }
    return DP_OK;
}
/* Checks head and head_grad; logs what is wrong. */
static dp_result dpn__ag_check_head(dp_ndarray *head, dp_ndarray *head_grad) {
    dp_engine *eng = head ? dp_nd_engine(head) : NULL;
    char s1[160], s2[160];
    if (!head) { DPN__LOG(NULL, DP_LOG_ERROR, ND_ARGS, "dp_autograd_backward: NULL head"); return DP_ERROR_INVALID_ARGS; }
    if (!dpn__ag_of(head)) {
        DPN__LOG(eng, DP_LOG_ERROR, ND_ARGS, "dp_autograd_backward: the head was not made by a recorded invocation (record the forward "
                "between dp_autograd_begin and dp_autograd_end, from arrays marked with dp_nd_attach_grad)");
        return DP_ERROR_INVALID_ARGS;
    }
    if (head_grad && (dp_nd_engine(head_grad) != eng || dp_nd_dtype(head_grad) != dp_nd_dtype(head) || !dpn__same_ctx(dp_nd_ctx(head_grad), dp_nd_ctx(head))
                      || (*dp_nd_shape(head_grad)).ndim != (*dp_nd_shape(head)).ndim
                      || memcmp((*dp_nd_shape(head_grad)).dims, (*dp_nd_shape(head)).dims, sizeof(int64_t) * (size_t)(*dp_nd_shape(head)).ndim) != 0)) {
        DPN__LOG(eng, DP_LOG_ERROR, ND_ARGS, "dp_autograd_backward: head_grad is %s %s, the head is %s %s (same engine and device too)",
                dp_dtype_name(dp_nd_dtype(head_grad)), dpn__shape_str(dp_nd_shape(head_grad), s1, sizeof s1), dp_dtype_name(dp_nd_dtype(head)),
                dpn__shape_str(dp_nd_shape(head), s2, sizeof s2));
        return DP_ERROR_INVALID_ARGS;
    }
    return DP_OK;
}
DPN_IMPL dp_result dp_autograd_backward(dp_ndarray *head, dp_ndarray *head_grad, int retain_graph) {
    dpn__ag_pass_state ps;
    dpn__ag_node *hn;
    dp_ndarray *seed = NULL;
    dp_result r;
    size_t i;
    if ((r = dpn__ag_check_head(head, head_grad)) != DP_OK) return r;
    dpn__spin_lock(&dpn__ag_backward_lock);          /* passes keep marks in the nodes, and graphs may share them */
    memset(&ps, 0, sizeof ps);
    ps.eng = dp_nd_engine(head);
    hn = dpn__ag_of(head);
    if ((r = dpn__ag_sort(&ps, hn)) != DP_OK || (r = dpn__ag_plan(&ps)) != DP_OK) goto done;
    if (!ps.need[hn->order]) {
        DPN__LOG(ps.eng, DP_LOG_ERROR, ND_ARGS, "dp_autograd_backward: the head depends on no array marked with dp_nd_attach_grad");
        r = DP_ERROR_INVALID_ARGS;
        goto done;
    }
    /* the seed: head_grad (or ones) as the head's output gradient, or
       straight into the gradient when the head is a marked array */
    if (head_grad) seed = dp_nd_retain(head_grad);
    else if ((r = dp_nd_ones(ps.eng, dp_nd_shape(head), dp_nd_dtype(head), dp_nd_ctx(head), &seed)) != DP_OK) goto done;
    if (!hn->op) {
        r = dpn__ag_copy(ps.eng, seed, hn->grad, hn->grad_req == DP_REQ_ADD ? DP_REQ_ADD : DP_REQ_WRITE);
        dp_nd_release(seed);
        goto done;
    }
    ps.og[ps.slot0[hn->order] + (size_t)dpn__ag_index(head)] = seed;
    ps.own[ps.slot0[hn->order] + (size_t)dpn__ag_index(head)] = head_grad == NULL;
    for (i = ps.ntopo; i-- > 0;) {                 /* consumers before producers */
        dpn__ag_node *x = ps.topo[i];
        if (!x->op || !ps.need[i]) continue;
        if ((r = dpn__ag_node_backward(&ps, x)) != DP_OK) break;
    }
    /* The pushed gradient operators hold what they read; the graph lets go
       now (a failure above left it whole, to try again). */
    for (i = 0; r == DP_OK && !retain_graph && i < ps.ntopo; i++)
        if (ps.topo[i]->op && ps.need[i]) dpn__ag_release_saved(ps.topo[i]);
done:
    dpn__ag_pass_free(&ps);
    dpn__spin_unlock(&dpn__ag_backward_lock);
    return r;
}


/* >>symbol ------------------------------------------------------------------
   A symbol is a list of output entries (node, output index) of a graph of
   nodes; a node is a variable (op NULL) or an operator with its parsed
   parameters, the parameters as given (for JSON) and its input entries.
   Nodes are immutable once made and reference counted by the symbols and
   nodes that use them, so symbols share subgraphs freely. Symbols know no
   engine: their memory comes from malloc, and their errors are logged
   through the default logger (stderr). */
typedef struct dpn__snode dpn__snode;
typedef struct dpn__sentry { dpn__snode *node; int index; } dpn__sentry;
struct dpn__snode {
    dp_atomic_int refs;
    const dp_operator *op;      /* NULL: a variable */
    char *name;
    char *op_name;              /* the operator's name as given (MXNet's or depeng's); NULL for a variable */
    int nkw;
    char **keys, **vals;        /* every attribute as given (parameters and MXNet's hints), for JSON */
    dp_params params;
    double scalar;
    int nin, nout;
    dpn__sentry *in;
    dpn__snode *next_free;
};
struct dp_symbol { dp_atomic_int refs; int n; dpn__sentry *out; };

static char *dpn__strdup(const char *s) {
    size_t n = strlen(s) + 1;
    char *p = (char *)malloc(n);
    if (p) memcpy(p, s, n);
    return p;
}
static dpn__snode *dpn__snode_ref(dpn__snode *n) { dp_atomic_add(&n->refs, 1); return n; }
/* Drops one reference; frees the nodes nobody uses any more with a work
   list (a long chain must not overflow the stack). */
static void dpn__snode_unref(dpn__snode *n) {
    dpn__snode *todo;
    if (!n || dp_atomic_add(&n->refs, -1) != 1) return;
    n->next_free = NULL;
    for (todo = n; todo;) {
        dpn__snode *x = todo;
        int i;
        todo = x->next_free;
        for (i = 0; i < x->nin; i++) {
            dpn__snode *c = x->in[i].node;
            if (c && dp_atomic_add(&c->refs, -1) == 1) { c->next_free = todo; todo = c; }
        }
        for (i = 0; i < x->nkw; i++) { free(x->keys[i]); free(x->vals[i]); }
        free(x->keys); free(x->vals); free(x->in); free(x->name); free(x->op_name);
        free(x);
    }
}
static dp_symbol *dpn__sym_new(int n) {
    dp_symbol *s = (dp_symbol *)malloc(sizeof *s);
    if (!s) return NULL;
    s->out = (dpn__sentry *)calloc((size_t)(n ? n : 1), sizeof *s->out);
    if (!s->out) { free(s); return NULL; }
    s->n = n;
    dp_atomic_store(&s->refs, 1);
    return s;
}
static dp_result dpn__sym_oom(const char *what) {
    DPN__LOG(NULL, DP_LOG_ERROR, OUT_OF_MEMORY, "%s", what);
    return DP_ERROR_OUT_OF_MEMORY;
}
/* The executor's out of memory: logged to the engine's logger. */
static dp_result dpn__exec_oom(const dp_engine *eng, const char *what) {
    DPN__LOG(eng, DP_LOG_ERROR, OUT_OF_MEMORY, "%s", what);
    return DP_ERROR_OUT_OF_MEMORY;
}
DPN_IMPL dp_symbol *dp_sym_retain(dp_symbol *s) { if (s) dp_atomic_add(&s->refs, 1); return s; }
DPN_IMPL void dp_sym_release(dp_symbol *s) {
    int i;
    if (!s || dp_atomic_add(&s->refs, -1) != 1) return;
    for (i = 0; i < s->n; i++) dpn__snode_unref(s->out[i].node);
    free(s->out);
    free(s);
}
DPN_IMPL int dp_sym_num_outputs(const dp_symbol *s) { return s ? s->n : 0; }
static dpn__snode *dpn__snode_new(const char *name) {
    dpn__snode *n = (dpn__snode *)calloc(1, sizeof *n);
    if (!n) return NULL;
    if ((n->name = dpn__strdup(name)) == NULL) { free(n); return NULL; }
    n->nout = 1;
    dp_atomic_store(&n->refs, 1);
    return n;
}
DPN_IMPL dp_result dp_sym_var(const char *name, dp_symbol **out) {
    dpn__snode *n;
    if (out) *out = NULL;
    if (!name || !name[0] || !out) { DPN__LOG(NULL, DP_LOG_ERROR, NULL_ARGUMENT, "dp_sym_var: a name and out are needed"); return DP_ERROR_INVALID_ARGS; }
    if ((n = dpn__snode_new(name)) == NULL || (*out = dpn__sym_new(1)) == NULL) { dpn__snode_unref(n); return dpn__sym_oom("dp_sym_var"); }
    (*out)->out[0].node = n;
    return DP_OK;
}
/* MXNet's operator names and parameters that differ from depeng's for the
   same operation, translated when a node is made (from C or from JSON). */
static const struct { const char *mxnet, *depeng; } dpn__sym_aliases[] = {
    {"elemwise_add", "add"}, {"_plus", "add"}, {"_Plus", "add"}, {"broadcast_add", "add"},
    {"elemwise_sub", "sub"}, {"_minus", "sub"}, {"_Minus", "sub"}, {"broadcast_sub", "sub"},
    {"elemwise_mul", "mul"}, {"_mul", "mul"}, {"_Mul", "mul"}, {"broadcast_mul", "mul"},
    {"elemwise_div", "div"}, {"_div", "div"}, {"_Div", "div"}, {"broadcast_div", "div"},
    {"_plus_scalar", "add_scalar"}, {"_minus_scalar", "sub_scalar"}, {"_mul_scalar", "mul_scalar"},
    {"_div_scalar", "div_scalar"}, {"_rminus_scalar", "rsub_scalar"}, {"_rdiv_scalar", "rdiv_scalar"},
    {"_power_scalar", "power_scalar"}, {"_rpower_scalar", "rpower_scalar"}, {"_maximum", "maximum"}, {"_minimum", "minimum"},
    {"Concat", "concat"}, {"SoftmaxActivation", "softmax"}, {"_copy", "_copy"}, {"identity", "_copy"},
    {"Reshape", "reshape"}, {"sum_axis", "sum"}, {"stop_gradient", "BlockGrad"}, {"split", "SliceChannel"}, {"Cast", "cast"},
};
/* depeng's name for an operator name (MXNet's names too; Activation is
   named by its act_type, later). */
static const char *dpn__sym_alias(const char *op_name) {
    size_t k;
    if (!strcmp(op_name, "flatten")) return "Flatten";
    for (k = 0; k < sizeof dpn__sym_aliases / sizeof dpn__sym_aliases[0]; k++)
        if (!strcmp(op_name, dpn__sym_aliases[k].mxnet)) return dpn__sym_aliases[k].depeng;
    return op_name;
}
/* The keyword arguments of a node being made: translated, checked for
   the operator, with "scalar" taken out for the scalar operators. */
typedef struct dpn__kw { int n; const char *keys[DP_MAX_PARAMS + 8]; const char *vals[DP_MAX_PARAMS + 8]; } dpn__kw;
static int dpn__kw_false(const char *v) { return !strcmp(v, "0") || !strcmp(v, "False") || !strcmp(v, "false"); }
/* A keyword of a Convolution, Deconvolution, Pooling or LeakyReLU node:
   1 when it is dropped (cuDNN's tuning, Pooling's p_value, the NCHW / NCW
   layout: depeng's only one), 0 when kept, -1 (logged) for a layout
   depeng lacks. Notes whether it says there is a bias (no_bias; *bias
   starts at the operator's default) or a gamma (act_type prelu), and
   whether num_args was given. */
static int dpn__sym_layer_key(const char *name, const char *node, const char *key, const char *v, int *bias, int *has_num_args) {
    int layer = !strcmp(name, "Convolution") || !strcmp(name, "Deconvolution") || !strcmp(name, "Pooling");
    if (!layer && strcmp(name, "LeakyReLU") && strcmp(name, "FullyConnected")) return 0;
    if (!strcmp(key, "num_args")) *has_num_args = 1;
    if (!strcmp(key, "no_bias")) *bias = dpn__kw_false(v);
    if (!strcmp(key, "act_type")) *bias = !strcmp(v, "prelu");
    if (!layer) return 0;
    if (!strcmp(key, "cudnn_tune") || !strcmp(key, "cudnn_off") || !strcmp(key, "p_value")) return 1;
    if (!strcmp(key, "layout")) {
        if (!strcmp(v, "None") || !strcmp(v, "NCHW") || !strcmp(v, "NCW")) return 1;
        DPN__LOG(NULL, DP_LOG_ERROR, ND_ARGS, "symbol node '%s': %s layout %s: NCW and NCHW only", node, name, v);
        return -1;
    }
    return 0;
}
/* The input count of a Convolution, Deconvolution or LeakyReLU node with
   these keywords (num_args, or from no_bias / act_type); 0 for another
   operator. */
static int dpn__layer_arity(const char *name, int n, const char *const *keys, const char *const *vals) {
    int counted = !strcmp(name, "Convolution") || !strcmp(name, "Deconvolution") || !strcmp(name, "FullyConnected");
    int bias = !strcmp(name, "Convolution") || !strcmp(name, "FullyConnected"), given = 0, i;
    if (!counted && strcmp(name, "LeakyReLU")) return 0;
    for (i = 0; i < n; i++) {
        if (!keys[i] || !vals[i]) return 0;
        if (!strcmp(keys[i], "num_args")) given = atoi(vals[i]);
        if (!strcmp(keys[i], "no_bias")) bias = dpn__kw_false(vals[i]);
        if (!strcmp(keys[i], "act_type")) bias = !strcmp(vals[i], "prelu");
    }
    return given > 0 ? given : (counted ? 2 : 1) + bias;
}
/* Resolves op_name (MXNet's names too) to an operator and the keyword
   arguments it takes; *scalar from "scalar". Logs naming the node. */
static dp_result dpn__sym_resolve(const char *op_name, const char *node, int nkw, const char *const *keys, const char *const *vals,
                                 const dp_operator **op, dpn__kw *kw, double *scalar, int *has_scalar) {
    const char *name = dpn__sym_alias(op_name), *act = NULL;
    int i;
    kw->n = 0; *scalar = 0; *has_scalar = 0;
    int counted = !strcmp(name, "Convolution") || !strcmp(name, "Deconvolution") || !strcmp(name, "FullyConnected");
    int bias = !strcmp(name, "Convolution") || !strcmp(name, "FullyConnected"), has_num_args = 0, drop;
    for (i = 0; i < nkw; i++) {
        const char *key = keys[i], *v = vals[i];
        if (!key || !v) { DPN__LOG(NULL, DP_LOG_ERROR, NULL_ARGUMENT, "symbol node '%s': NULL parameter name or value", node); return DP_ERROR_INVALID_ARGS; }
        if (key[0] == '_' && key[1] == '_') continue;            /* MXNet's hints (__shape__, __lr_mult__, ...) */
        if (!strcmp(op_name, "Activation") && !strcmp(key, "act_type")) { act = v; continue; }
        if ((drop = dpn__sym_layer_key(name, node, key, v, &bias, &has_num_args)) < 0) return DP_ERROR_INVALID_ARGS;
        if (drop || (!strcmp(name, "slice_axis") && !strcmp(key, "end") && !strcmp(v, "None"))) continue;   /* None: the axis's end */
        if (!strcmp(key, "scalar")) { *has_scalar = 1; *scalar = strtod(v, NULL); continue; }
        if (!strcmp(name, "SliceChannel") && !strcmp(key, "num_outputs")) key = "num_args";     /* MXNet's name for the count */
        if (kw->n == (int)(sizeof kw->keys / sizeof kw->keys[0])) { DPN__LOG(NULL, DP_LOG_ERROR, ND_ARGS, "symbol node '%s': too many parameters", node); return DP_ERROR_INVALID_ARGS; }
        kw->keys[kw->n] = key; kw->vals[kw->n++] = v;
    }
    if (!strcmp(op_name, "Activation")) {
        if (!act || (strcmp(act, "relu") && strcmp(act, "sigmoid") && strcmp(act, "tanh") && strcmp(act, "softrelu") && strcmp(act, "softsign"))) {
            DPN__LOG(NULL, DP_LOG_ERROR, ND_ARGS, "symbol node '%s': Activation needs act_type relu, sigmoid, tanh, softrelu or softsign (got %s)",
                     node, act ? act : "none");
            return DP_ERROR_INVALID_ARGS;
        }
        /* relu, sigmoid and tanh as depeng's own operators (relu's gradient
           reads its output, so the planner runs it in place) */
        if (!strcmp(act, "softrelu") || !strcmp(act, "softsign")) { kw->keys[kw->n] = "act_type"; kw->vals[kw->n++] = act; }
        else name = act;
    }
    /* the input count of a layer whose bias or gamma is optional, from
       no_bias or act_type, as MXNet's files leave it (num_args is depeng's) */
    if ((counted || !strcmp(name, "LeakyReLU")) && !has_num_args) {
        static const char *const counts[4] = {"0", "1", "2", "3"};
        if (kw->n == (int)(sizeof kw->keys / sizeof kw->keys[0])) { DPN__LOG(NULL, DP_LOG_ERROR, ND_ARGS, "symbol node '%s': too many parameters", node); return DP_ERROR_INVALID_ARGS; }
        kw->keys[kw->n] = "num_args"; kw->vals[kw->n++] = counts[(counted ? 2 : 1) + bias];
    }
    if ((*op = dp_operator_find(name)) == NULL) {
        DPN__LOG(NULL, DP_LOG_ERROR, UNKNOWN_OPERATOR, "symbol node '%s': unknown operator '%s'", node, op_name);
        return DP_ERROR_INVALID_ARGS;
    }
    if (*has_scalar && !(*op)->takes_scalar) {
        DPN__LOG(NULL, DP_LOG_ERROR, ND_ARGS, "symbol node '%s': operator '%s' takes no scalar", node, (*op)->name);
        return DP_ERROR_INVALID_ARGS;
    }
    return DP_OK;
}
/* The name of input i of op, for a variable made for an input not given. */
static const char *dpn__sym_input_name(const dp_operator *op, int i) {
    static const char *fc[3] = {"data", "weight", "bias"}, *loss[2] = {"data", "label"}, *prelu[2] = {"data", "gamma"};
    static const char *bn[5] = {"data", "gamma", "beta", "moving_mean", "moving_var"};
    if (!strcmp(op->name, "BatchNorm") && i < 5) return bn[i];
    if ((!strcmp(op->name, "FullyConnected") || !strcmp(op->name, "Convolution") || !strcmp(op->name, "Deconvolution")) && i < 3) return fc[i];
    if (!strcmp(op->name, "LeakyReLU") && i < 2) return prelu[i];
    if ((!strcmp(op->name, "SoftmaxOutput") || !strcmp(op->name, "softmax_cross_entropy")) && i < 2) return loss[i];
    return NULL;
}
static dp_atomic_int dpn__sym_counter;
/* A node of op on the given input entries (entries with a NULL node get
   a new variable each); the node has one reference for the caller. */
/* A node's parameters, kept as strings for JSON, parsed for the operator. */
static dp_result dpn__parse_strings(const dp_operator *op, const dpn__kw *kw, dp_params *out) {
    dp_param list[DP_MAX_PARAMS + 1];
    int i;
    if (kw->n > DP_MAX_PARAMS) {
        DPN__LOG(NULL, DP_LOG_ERROR, ND_ARGS, "operator '%s': %d parameters, at most %d", op->name, kw->n, DP_MAX_PARAMS);
        return DP_ERROR_INVALID_ARGS;
    }
    memset(list, 0, sizeof list);
    for (i = 0; i < kw->n; i++) { list[i].name = kw->keys[i]; list[i].s = kw->vals[i]; }
    return dp_operator_parse_params(NULL, op, list, out);
}
/* The first nparse of the nkw attributes are the operator's parameters
   (MXNet's hints among them skipped), the others kept for JSON only. */
static dp_result dpn__sym_make_node(const char *op_name, const char *name, int nin, const dpn__sentry *in, int nparse, int nkw,
                                   const char *const *keys, const char *const *vals, dpn__snode **out) {
    const dp_operator *op;
    dpn__kw kw;
    dpn__snode *n = NULL;
    char auto_name[96], var_name[160];
    int i, has_scalar, want, nout;
    double scalar;
    dp_result r;
    *out = NULL;
    if (!name) {
        size_t k;
        snprintf(auto_name, sizeof auto_name, "%s%d", op_name, (int)dp_atomic_add(&dpn__sym_counter, 1));
        for (k = 0; auto_name[k]; k++) if (auto_name[k] >= 'A' && auto_name[k] <= 'Z') auto_name[k] = (char)(auto_name[k] - 'A' + 'a');
        name = auto_name;
    }
    if ((r = dpn__sym_resolve(op_name, name, nparse, keys, vals, &op, &kw, &scalar, &has_scalar)) != DP_OK) return r;
    if ((n = dpn__snode_new(name)) == NULL) return dpn__sym_oom("symbol node");
    n->op = op; n->scalar = scalar;
    if ((n->op_name = dpn__strdup(op_name)) == NULL) goto oom;
    if ((r = dpn__parse_strings(op, &kw, &n->params)) != DP_OK) {
        DPN__LOG(NULL, DP_LOG_ERROR, ND_ARGS, "symbol node '%s': bad parameters for '%s' (see above)", name, op->name);
        goto fail;
    }
    want = dp_operator_arity(op, &n->params, op->num_inputs); nout = dp_operator_arity(op, &n->params, op->num_outputs);
    if (nin != want || want < 0 || nout < 1) {
        DPN__LOG(NULL, DP_LOG_ERROR, ND_ARGS, "symbol node '%s': operator '%s' takes %d inputs, %d given", name, op->name, want, nin);
        r = DP_ERROR_INVALID_ARGS;
        goto fail;
    }
    n->nout = nout; n->nin = nin;
    n->in = (dpn__sentry *)calloc((size_t)(nin ? nin : 1), sizeof *n->in);
    n->keys = (char **)calloc((size_t)(nkw ? nkw : 1), sizeof *n->keys);
    n->vals = (char **)calloc((size_t)(nkw ? nkw : 1), sizeof *n->vals);
    if (!n->in || !n->keys || !n->vals) goto oom;
    for (i = 0; i < nkw; i++) {      /* every attribute as given: JSON writes them back */
        n->keys[i] = dpn__strdup(keys[i]); n->vals[i] = dpn__strdup(vals[i]);
        n->nkw++;
        if (!n->keys[i] || !n->vals[i]) goto oom;
    }
    for (i = 0; i < nin; i++) {
        if (in[i].node) {
            if (in[i].index < 0 || in[i].index >= in[i].node->nout) {
                DPN__LOG(NULL, DP_LOG_ERROR, ND_ARGS, "symbol node '%s': input %d names output %d of '%s', which has %d", name, i,
                        in[i].index, in[i].node->name, in[i].node->nout);
                r = DP_ERROR_INVALID_ARGS;
                goto fail;
            }
            n->in[i].node = dpn__snode_ref(in[i].node); n->in[i].index = in[i].index;
            continue;
        }
        if (dpn__sym_input_name(op, i)) snprintf(var_name, sizeof var_name, "%s_%s", name, dpn__sym_input_name(op, i));
        else snprintf(var_name, sizeof var_name, "%s_arg%d", name, i);
        if ((n->in[i].node = dpn__snode_new(var_name)) == NULL) goto oom;
    }
    *out = n;
    return DP_OK;
oom:
    r = dpn__sym_oom("symbol node");
fail:
    dpn__snode_unref(n);
    return r;
}
/* A typed dp_param as the text MXNet's symbol JSON keeps: by the type of
   op's parameter of that name where op has one, else by the field set. */
static const char *dpn__param_text(const dp_operator *op, const dp_param *p, char *buf, size_t cap) {
    int j, type = 0;
    if (p->s) return p->s;
    for (j = 0; op && j < op->num_params; j++) if (strcmp(op->params[j].name, p->name) == 0) type = op->params[j].type;
    if (type == DP_PARAM_SHAPE || (!type && p->shape.ndim > 0)) return dp_shape_format(&p->shape, buf, cap);
    if (type == DP_PARAM_FLOAT || (!type && p->f != 0)) snprintf(buf, cap, "%.17g", p->f != 0 || p->i == 0 ? p->f : (double)p->i);
    else if (p->f != 0 && p->i == 0) snprintf(buf, cap, "%.17g", p->f);
    else snprintf(buf, cap, "%lld", (long long)p->i);
    return buf;
}
DPN_IMPL dp_result dp_sym_node(const dp_sym_node_desc *desc, dp_symbol **out) {
    dpn__sentry in[DP_MAX_OP_ARRAYS];
    const char *keys[DP_MAX_PARAMS], *values[DP_MAX_PARAMS], *op_name = desc ? desc->op : NULL, *name = desc ? desc->name : NULL;
    char text[DP_MAX_PARAMS][160];
    const dp_operator *op;
    dpn__snode *n;
    dp_result r;
    int i, num_inputs, num_kwargs = 0;
    dp_nn_register();
    if (out) *out = NULL;
    if (!desc || !op_name || !out || desc->num_inputs < 0 || desc->num_inputs > DP_MAX_OP_ARRAYS) {
        DPN__LOG(NULL, DP_LOG_ERROR, NULL_ARGUMENT, "dp_sym_node '%s': a desc with an operator name, out, and 0..%d inputs are needed",
                op_name ? op_name : "(null)", DP_MAX_OP_ARRAYS);
        return DP_ERROR_INVALID_ARGS;
    }
    op = dp_operator_find(dpn__sym_alias(op_name));   /* what a typed parameter's text is for */
    for (; num_kwargs < DP_MAX_PARAMS && desc->params[num_kwargs].name; num_kwargs++) {
        keys[num_kwargs] = desc->params[num_kwargs].name;
        values[num_kwargs] = dpn__param_text(op, &desc->params[num_kwargs], text[num_kwargs], sizeof text[num_kwargs]);
    }
    num_inputs = desc->num_inputs;
    if (!num_inputs && op && op->num_inputs >= 0) num_inputs = op->num_inputs;
    else if (!num_inputs && op && (num_inputs = dpn__layer_arity(op->name, num_kwargs, keys, values)) > 0) {}
    else if (!num_inputs) while (num_inputs < DP_MAX_OP_ARRAYS && desc->inputs[num_inputs]) num_inputs++;
    for (i = 0; i < num_inputs; i++) {
        const dp_symbol *s = desc->inputs[i];
        in[i].node = NULL; in[i].index = 0;
        if (!s) continue;
        if (s->n != 1) {
            DPN__LOG(NULL, DP_LOG_ERROR, ND_ARGS, "symbol node '%s': input %d is a symbol of %d outputs; pick one with dp_sym_output",
                    name ? name : op_name, i, s->n);
            return DP_ERROR_INVALID_ARGS;
        }
        in[i] = s->out[0];
    }
    if ((r = dpn__sym_make_node(op_name, name, num_inputs, in, num_kwargs, num_kwargs, keys, values, &n)) != DP_OK) return r;
    if ((*out = dpn__sym_new(n->nout)) == NULL) { dpn__snode_unref(n); return dpn__sym_oom("dp_sym_node"); }
    for (i = 0; i < n->nout; i++) { (*out)->out[i].node = i ? dpn__snode_ref(n) : n; (*out)->out[i].index = i; }
    return DP_OK;
}
DPN_IMPL dp_result dp_sym_output(const dp_symbol *s, int index, dp_symbol **out) {
    if (out) *out = NULL;
    if (!s || !out || index < 0 || index >= s->n) {
        DPN__LOG(NULL, DP_LOG_ERROR, ND_ARGS, "dp_sym_output: output %d of a symbol with %d", index, s ? s->n : 0);
        return DP_ERROR_INVALID_ARGS;
    }
    if ((*out = dpn__sym_new(1)) == NULL) return dpn__sym_oom("dp_sym_output");
    (*out)->out[0].node = dpn__snode_ref(s->out[index].node); (*out)->out[0].index = s->out[index].index;
    return DP_OK;
}
DPN_IMPL dp_result dp_sym_group(int num, dp_symbol *const *syms, dp_symbol **out) {
    int i, j, total = 0;
    if (out) *out = NULL;
    for (i = 0; syms && i < num; i++) if (syms[i]) total += syms[i]->n;
    if (!out || num < 1 || !syms || total < 1) { DPN__LOG(NULL, DP_LOG_ERROR, NULL_ARGUMENT, "dp_sym_group: symbols and out are needed"); return DP_ERROR_INVALID_ARGS; }
    for (i = 0; i < num; i++) if (!syms[i]) { DPN__LOG(NULL, DP_LOG_ERROR, NULL_ARGUMENT, "dp_sym_group: symbol %d is NULL", i); return DP_ERROR_INVALID_ARGS; }
    if ((*out = dpn__sym_new(total)) == NULL) return dpn__sym_oom("dp_sym_group");
    total = 0;
    for (i = 0; i < num; i++)
        for (j = 0; j < syms[i]->n; j++) { (*out)->out[total].node = dpn__snode_ref(syms[i]->out[j].node); (*out)->out[total++].index = syms[i]->out[j].index; }
    return DP_OK;
}

/* >>graph passes --------------------------------------------------------------
   A symbol's nodes in execution order (inputs before the nodes that read
   them, in the order of a depth-first walk from the outputs, as MXNet
   lists them), each output of each node one entry. Node lookups go
   through a small pointer map, so a pass never writes into the shared
   nodes and symbols can be used from several threads at once. */
typedef struct dpn__ptrmap { size_t cap, count; const void **keys; int *vals; } dpn__ptrmap;
static size_t dpn__ptr_hash(const void *p, size_t cap) {
    uint64_t h = (uint64_t)(uintptr_t)p * 0x9E3779B97F4A7C15ull;
    return (size_t)(h >> 17) & (cap - 1);
}
static int dpn__ptrmap_get(const dpn__ptrmap *m, const void *key) {
    size_t i;
    if (!m->cap) return -1;
    for (i = dpn__ptr_hash(key, m->cap); m->keys[i]; i = (i + 1) & (m->cap - 1)) if (m->keys[i] == key) return m->vals[i];
    return -1;
}
static void dpn__ptrmap_free(dpn__ptrmap *m) { free(m->keys); free(m->vals); memset(m, 0, sizeof *m); }
/* 0, or -1 out of memory */
static int dpn__ptrmap_put(dpn__ptrmap *m, const void *key, int val) {
    size_t i;
    if (2 * (m->count + 1) > m->cap) {
        dpn__ptrmap g;
        size_t k;
        g.cap = m->cap ? 2 * m->cap : 64; g.count = 0;
        g.keys = (const void **)calloc(g.cap, sizeof *g.keys); g.vals = (int *)calloc(g.cap, sizeof *g.vals);
        if (!g.keys || !g.vals) { free(g.keys); free(g.vals); return -1; }
        for (k = 0; k < m->cap; k++) if (m->keys[k]) dpn__ptrmap_put(&g, m->keys[k], m->vals[k]);
        dpn__ptrmap_free(m);
        *m = g;
    }
    for (i = dpn__ptr_hash(key, m->cap); m->keys[i]; i = (i + 1) & (m->cap - 1))
        if (m->keys[i] == key) { m->vals[i] = val; return 0; }
    m->keys[i] = key; m->vals[i] = val; m->count++;
    return 0;
}
typedef struct dpn__graph {
    int n, nentries, narg, naux;
    dpn__snode **node;           /* execution order */
    int *entry0;                /* per node: the entry of its output 0 */
    int *arg;                   /* the variable nodes (arguments and auxiliary states), in order */
    unsigned char *aux;          /* per node: 1 for an auxiliary state */
    dpn__ptrmap map;             /* node -> its place */
} dpn__graph;
static void dpn__graph_free(dpn__graph *g) {
    free(g->node); free(g->entry0); free(g->arg); free(g->aux);
    dpn__ptrmap_free(&g->map);
    memset(g, 0, sizeof *g);
}
static int dpn__graph_entry(const dpn__graph *g, const dpn__sentry *e) { return g->entry0[dpn__ptrmap_get(&g->map, e->node)] + e->index; }
/* The nodes of s in execution order: an explicit-stack depth-first walk. */
static dp_result dpn__graph_build(const dp_symbol *s, dpn__graph *g) {
    struct frame { dpn__snode *n; int next; } *stack = NULL;
    size_t nstack = 0, capstack = 0, capnode = 0;
    int i;
    memset(g, 0, sizeof *g);
    for (i = 0; i < s->n; i++) {
        dpn__snode *root = s->out[i].node;
        if (dpn__ptrmap_get(&g->map, root) != -1) continue;
        if (dpn__reserve(NULL, &stack, &capstack, nstack, sizeof *stack, 64) || dpn__ptrmap_put(&g->map, root, -2)) goto oom;
        stack[nstack].n = root; stack[nstack].next = 0; nstack++;
        while (nstack) {
            struct frame *f = &stack[nstack - 1];
            if (f->next < f->n->nin) {
                dpn__snode *c = f->n->in[f->next++].node;
                if (dpn__ptrmap_get(&g->map, c) != -1) continue;
                if (dpn__reserve(NULL, &stack, &capstack, nstack, sizeof *stack, 64) || dpn__ptrmap_put(&g->map, c, -2)) goto oom;
                stack[nstack].n = c; stack[nstack].next = 0; nstack++;
                continue;
            }
            if (dpn__reserve(NULL, &g->node, &capnode, (size_t)g->n, sizeof *g->node, 64) || dpn__ptrmap_put(&g->map, f->n, g->n)) goto oom;
            g->node[g->n++] = f->n;
            nstack--;
        }
    }
    free(stack); stack = NULL;
    g->entry0 = (int *)malloc((size_t)(g->n ? g->n : 1) * sizeof *g->entry0);
    g->arg = (int *)malloc((size_t)(g->n ? g->n : 1) * sizeof *g->arg);
    g->aux = (unsigned char *)calloc((size_t)(g->n ? g->n : 1), 1);
    if (!g->entry0 || !g->arg || !g->aux) goto oom;
    for (i = 0; i < g->n; i++) {
        const dpn__snode *x = g->node[i];
        int j;
        g->entry0[i] = g->nentries;
        g->nentries += x->nout;
        if (!x->op) g->arg[g->narg++] = i;
        /* MXNet's rule (FMutateInputs): a variable an operator writes in
           place (BatchNorm's moving_mean and moving_var) is an auxiliary
           state, not an argument */
        for (j = 0; x->op && j < x->nin && j < 32; j++)
            if ((x->op->mutate_inputs & (1u << j)) && !x->in[j].node->op) {
                int v = dpn__ptrmap_get(&g->map, x->in[j].node);
                if (!g->aux[v]) { g->aux[v] = 1; g->naux++; }
            }
    }
    return DP_OK;
oom:
    free(stack);
    dpn__graph_free(g);
    return dpn__sym_oom("symbol graph");
}
/* The variables of g that are auxiliary states (aux 1) or arguments
   (aux 0), in order, up to cap into names; how many there are. */
static int dpn__graph_vars(const dpn__graph *g, int aux, const char **names, int cap) {
    int i, n = 0;
    for (i = 0; i < g->narg; i++)
        if (g->aux[g->arg[i]] == aux) { if (names && n < cap) names[n] = g->node[g->arg[i]]->name; n++; }
    return n;
}
DPN_IMPL int dp_sym_list_arguments(const dp_symbol *s, const char **names, int cap) {
    dpn__graph g;
    int n;
    if (!s || dpn__graph_build(s, &g) != DP_OK) return -1;
    n = dpn__graph_vars(&g, 0, names, cap);
    dpn__graph_free(&g);
    return n;
}
DPN_IMPL int dp_sym_list_auxiliary_states(const dp_symbol *s, const char **names, int cap) {
    dpn__graph g;
    int n;
    if (!s || dpn__graph_build(s, &g) != DP_OK) return -1;
    n = dpn__graph_vars(&g, 1, names, cap);
    dpn__graph_free(&g);
    return n;
}
DPN_IMPL const char *dp_sym_name(const dp_symbol *s) { return s && s->n == 1 ? s->out[0].node->name : NULL; }

/* Shape inference, backward: the shapes an operator can tell its unknown
   inputs from what is known (a FullyConnected's weight and bias from the
   data and num_hidden, a loss's label from the data, an element-wise
   operand from the other). Sets known[] for what it fills; returns how
   many it filled. */
/* The backward inference of the layers above: a Convolution's or
   Deconvolution's weight and bias, a prelu's gamma, BatchNorm's gamma,
   beta and moving statistics (channels,), from the data's shape. Returns
   whether op is one of them. */
static int dpn__layer_infer_backward(const dp_operator *op, const dp_params *p, int nin, dp_shape *is, dp_dtype *it, unsigned char *known, int *filled) {
    int deconv = !strcmp(op->name, "Deconvolution"), i, a;
    dp_shape want[3];
    dpn__win w;
    char msg[8];
    if (!known[0]) return 0;
    memset(want, 0, sizeof want);
    if (!strcmp(op->name, "LeakyReLU")) {
        if (nin != 2 || is[0].ndim < 2) return 1;
        want[1].ndim = 1; want[1].dims[0] = is[0].dims[1];
    } else if (!strcmp(op->name, "BatchNorm")) {
        int64_t outer, c, inner;
        dp_shape ch;
        if (dpn__bn_split(&is[0], p->v[DPN__BN_AXIS].i, &outer, &c, &inner)) return 1;
        memset(&ch, 0, sizeof ch); ch.ndim = 1; ch.dims[0] = c;
        for (i = 1; i < nin && i < 5; i++)
            if (!known[i]) { is[i] = ch; it[i] = it[0]; known[i] = 1; (*filled)++; }
        return 1;
    } else if (deconv || !strcmp(op->name, "Convolution")) {
        int64_t groups = p->v[deconv ? DPN__DC_GROUP : DPN__CV_GROUP].i, f = p->v[deconv ? DPN__DC_FILTER : DPN__CV_FILTER].i;
        int ik = deconv ? DPN__DC_KERNEL : DPN__CV_KERNEL;
        if (dpn__win_parse(&p->v[ik].shape, NULL, NULL, NULL, &w, msg, sizeof msg) || is[0].ndim != w.nd + 2) return 1;
        want[1].ndim = w.nd + 2;
        want[1].dims[0] = deconv ? is[0].dims[1] : f; want[1].dims[1] = deconv ? f / groups : is[0].dims[1] / groups;
        for (a = 0; a < w.nd; a++) want[1].dims[2 + a] = w.k[2 - w.nd + a];
        want[2].ndim = 1; want[2].dims[0] = f;
    } else return 0;
    for (i = 1; i < nin && i < 3; i++)
        if (!known[i]) { is[i] = want[i]; it[i] = it[0]; known[i] = 1; (*filled)++; }
    return 1;
}
static int dpn__infer_backward(const dpn__snode *x, dp_shape *is, dp_dtype *it, unsigned char *known) {
    const char *nm = x->op->name;
    int filled = 0, i;
    if (!strcmp(nm, "FullyConnected") && known[0] && is[0].ndim >= 1) {
        dp_shape w, b;
        int64_t rows, in;
        dpn__fc_rows(&is[0], (int)x->params.v[2].i, &rows, &in);
        memset(&w, 0, sizeof w); memset(&b, 0, sizeof b);
        w.ndim = 2; w.dims[0] = x->params.v[0].i; w.dims[1] = in;
        b.ndim = 1; b.dims[0] = x->params.v[0].i;
        if (!known[1]) { is[1] = w; it[1] = it[0]; known[1] = 1; filled++; }
        if (x->nin == 3 && !known[2]) { is[2] = b; it[2] = it[0]; known[2] = 1; filled++; }
    } else if (!strcmp(nm, "SoftmaxOutput") && known[0] && !known[1] && is[0].ndim >= 1) {
        int64_t outer, c, inner;
        dpn__so_geometry(&x->params, &is[0], &outer, &c, &inner, &is[1]);
        it[1] = it[0]; known[1] = 1; filled++;
    } else if (!strcmp(nm, "softmax_cross_entropy") && known[0] && !known[1] && is[0].ndim >= 1) {
        memset(&is[1], 0, sizeof is[1]);
        is[1].ndim = 1; is[1].dims[0] = is[0].dims[0]; it[1] = it[0]; known[1] = 1; filled++;
    } else if (dpn__layer_infer_backward(x->op, &x->params, x->nin, is, it, known, &filled)) {
    } else if (x->nin == 2 && dpn__is_broadcast_binary(x->op)) {
        for (i = 0; i < 2; i++) if (known[i] && !known[1 - i]) { is[1 - i] = is[i]; it[1 - i] = it[i]; known[1 - i] = 1; filled++; }
    }
    return filled;
}
/* Shapes and dtypes of every entry of g from those known[] already (the
   arguments given), forward through each operator's inference and
   backward where an operator can, until nothing changes. */
static dp_result dpn__graph_infer(const dpn__graph *g, dp_shape *shape, dp_dtype *dtype, unsigned char *known) {
    dp_shape is[DP_MAX_OP_ARRAYS], os[DP_MAX_OP_ARRAYS];
    dp_dtype it[DP_MAX_OP_ARRAYS], ot[DP_MAX_OP_ARRAYS];
    unsigned char ik[DP_MAX_OP_ARRAYS];
    char msg[256], s1[160], s2[160];
    int changed = 1, i, j;
    while (changed) {
        changed = 0;
        for (i = 0; i < g->n; i++) {
            const dpn__snode *x = g->node[i];
            int all = 1, e0 = g->entry0[i];
            if (!x->op) continue;
            for (j = 0; j < x->nin; j++) {
                int e = dpn__graph_entry(g, &x->in[j]);
                is[j] = shape[e]; it[j] = dtype[e]; ik[j] = known[e];
                all &= known[e];
            }
            if (!all && dpn__infer_backward(x, is, it, ik)) {
                for (j = 0; j < x->nin; j++) {
                    int e = dpn__graph_entry(g, &x->in[j]);
                    if (!known[e] && ik[j]) { shape[e] = is[j]; dtype[e] = it[j]; known[e] = 1; changed = 1; }
                }
                all = 1;
                for (j = 0; j < x->nin; j++) all &= ik[j];
            }
            if (!all || known[e0]) continue;
            msg[0] = 0;
            if (x->op->infer) {
                if (x->op->infer(&x->params, x->nin, is, it, x->nout, os, ot, msg, sizeof msg)) {
                    DPN__LOG(NULL, DP_LOG_ERROR, ND_ARGS, "shape inference: node '%s' (%s): %s", x->name, x->op->name, msg[0] ? msg : "its input shapes do not fit");
                    return DP_ERROR_INVALID_ARGS;
                }
            } else {
                if (!x->nin) { DPN__LOG(NULL, DP_LOG_ERROR, ND_ARGS, "shape inference: node '%s' (%s): no inputs and no inference", x->name, x->op->name); return DP_ERROR_INVALID_ARGS; }
                for (j = 0; j < x->nout; j++) { os[j] = is[0]; ot[j] = it[0]; }
                for (j = 1; j < x->nin; j++)
                    if (is[j].ndim != is[0].ndim || memcmp(is[j].dims, is[0].dims, sizeof(int64_t) * (size_t)is[0].ndim) != 0 || it[j] != it[0]) {
                        DPN__LOG(NULL, DP_LOG_ERROR, ND_ARGS, "shape inference: node '%s' (%s): input %d is %s %s, input 0 %s %s", x->name, x->op->name, j,
                                dp_dtype_name(it[j]), dpn__shape_str(&is[j], s1, sizeof s1), dp_dtype_name(it[0]), dpn__shape_str(&is[0], s2, sizeof s2));
                        return DP_ERROR_INVALID_ARGS;
                    }
            }
            for (j = 0; j < x->nout; j++) { shape[e0 + j] = os[j]; dtype[e0 + j] = ot[j]; known[e0 + j] = 1; }
            changed = 1;
        }
    }
    for (i = 0; i < g->n; i++) {
        const dpn__snode *x = g->node[i];
        for (j = 0; x->op && j < x->nin; j++)
            if (!known[dpn__graph_entry(g, &x->in[j])]) {
                DPN__LOG(NULL, DP_LOG_ERROR, ND_ARGS, "shape inference: node '%s' (%s): input %d ('%s') has no known shape; give it", x->name,
                        x->op->name, j, x->in[j].node->name);
                return DP_ERROR_INVALID_ARGS;
            }
    }
    return DP_OK;
}
/* The entries' shapes for given argument shapes (by name); fills what the
   caller asked for. */
static dp_result dpn__sym_infer_entries(const dpn__graph *g, int num, const char *const *names, const dp_shape *shapes, const dp_dtype *dtypes,
                                       dp_shape **shape, dp_dtype **dtype, unsigned char **known) {
    int i, j;
    dp_result r;
    *shape = (dp_shape *)calloc((size_t)(g->nentries ? g->nentries : 1), sizeof **shape);
    *dtype = (dp_dtype *)calloc((size_t)(g->nentries ? g->nentries : 1), sizeof **dtype);
    *known = (unsigned char *)calloc((size_t)(g->nentries ? g->nentries : 1), 1);
    if (!*shape || !*dtype || !*known) return dpn__sym_oom("shape inference");
    for (i = 0; i < num; i++) {
        for (j = 0; j < g->narg && (!names[i] || strcmp(names[i], g->node[g->arg[j]]->name) != 0); j++) {}
        if (j == g->narg) {
            DPN__LOG(NULL, DP_LOG_ERROR, ND_ARGS, "shape inference: '%s' is neither an argument nor an auxiliary state of the symbol", names[i] ? names[i] : "(null)");
            return DP_ERROR_INVALID_ARGS;
        }
        j = g->entry0[g->arg[j]];
        (*shape)[j] = shapes[i]; (*dtype)[j] = dtypes ? dtypes[i] : DP_FLOAT32; (*known)[j] = 1;
    }
    if ((r = dpn__graph_infer(g, *shape, *dtype, *known)) != DP_OK) return r;
    for (i = 0; i < g->narg; i++)
        if (!(*known)[g->entry0[g->arg[i]]]) {
            DPN__LOG(NULL, DP_LOG_ERROR, ND_ARGS, "shape inference: %s '%s' reaches no operator that tells its shape; give it",
                     g->aux[g->arg[i]] ? "auxiliary state" : "argument", g->node[g->arg[i]]->name);
            return DP_ERROR_INVALID_ARGS;
        }
    return DP_OK;
}
DPN_IMPL dp_result dp_sym_infer(const dp_symbol *s, const dp_sym_infer_desc *desc) {
    dpn__graph g;
    dp_shape *shape = NULL;
    dp_dtype *dtype = NULL;
    unsigned char *known = NULL;
    dp_result r;
    int i, na = 0, nx = 0;
    if (!s || !desc || desc->num_known < 0 || (desc->num_known && (!desc->names || !desc->shapes))) {
        DPN__LOG(NULL, DP_LOG_ERROR, NULL_ARGUMENT, "dp_sym_infer: a symbol, a desc and the known names and shapes are needed");
        return DP_ERROR_INVALID_ARGS;
    }
    if ((r = dpn__graph_build(s, &g)) != DP_OK) return r;
    if ((r = dpn__sym_infer_entries(&g, desc->num_known, desc->names, desc->shapes, desc->dtypes, &shape, &dtype, &known)) == DP_OK) {
        for (i = 0; i < g.narg; i++) {
            int e = g.entry0[g.arg[i]];
            if (g.aux[g.arg[i]]) {
                if (desc->aux_shapes) desc->aux_shapes[nx] = shape[e];
                if (desc->aux_dtypes) desc->aux_dtypes[nx] = dtype[e];
                nx++;
            } else {
                if (desc->arg_shapes) desc->arg_shapes[na] = shape[e];
                if (desc->arg_dtypes) desc->arg_dtypes[na] = dtype[e];
                na++;
            }
        }
        for (i = 0; i < s->n; i++) {
            int e = dpn__graph_entry(&g, &s->out[i]);
            if (desc->out_shapes) desc->out_shapes[i] = shape[e];
            if (desc->out_dtypes) desc->out_dtypes[i] = dtype[e];
        }
    }
    free(shape); free(dtype); free(known);
    dpn__graph_free(&g);
    return r;
}

/* >>symbol JSON and DOT -----------------------------------------------------------
   MXNet's symbol file: the nodes in execution order, each input an entry
   [node, output, version]; arg_nodes lists the variables, node_row_ptr
   where each node's entries start, heads the outputs. Reading is a small
   JSON parser into a tree (depth limited), then the nodes are made in
   order, each from nodes made before it. */
static void dpn__json_str(FILE *out, const char *s) {
    fputc('"', out);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') fprintf(out, "\\%c", c);
        else if (c < 0x20) fprintf(out, "\\u%04x", c);
        else fputc(c, out);
    }
    fputc('"', out);
}
/* depeng's names of operations MXNet names otherwise, for writing a
   symbol MXNet reads (relu, sigmoid and tanh become Activation). */
static const struct { const char *depeng, *mxnet; } dpn__sym_mxnet_names[] = {
    {"add", "elemwise_add"}, {"sub", "elemwise_sub"}, {"mul", "elemwise_mul"}, {"div", "elemwise_div"},
    {"add_scalar", "_plus_scalar"}, {"sub_scalar", "_minus_scalar"}, {"mul_scalar", "_mul_scalar"}, {"div_scalar", "_div_scalar"},
    {"rsub_scalar", "_rminus_scalar"}, {"rdiv_scalar", "_rdiv_scalar"}, {"power_scalar", "_power_scalar"}, {"rpower_scalar", "_rpower_scalar"},
    {"maximum", "_maximum"}, {"minimum", "_minimum"}, {"concat", "Concat"}, {"reshape", "Reshape"}, {"cast", "Cast"},
    {"relu", "Activation"}, {"sigmoid", "Activation"}, {"tanh", "Activation"},
};
/* The name a node is written with: as given when that is MXNet's, else
   MXNet's name of the same operation; *act_type is set when Activation
   must be told which (the node was made as relu, sigmoid or tanh). */
static const char *dpn__sym_mxnet_name(const dpn__snode *x, const char **act_type) {
    size_t k;
    *act_type = NULL;
    for (k = 0; k < sizeof dpn__sym_mxnet_names / sizeof dpn__sym_mxnet_names[0]; k++)
        if (!strcmp(x->op_name, dpn__sym_mxnet_names[k].depeng)) {
            if (!strcmp(dpn__sym_mxnet_names[k].mxnet, "Activation")) *act_type = x->op_name;
            return dpn__sym_mxnet_names[k].mxnet;
        }
    return x->op_name;
}
/* Whether attribute k of x is written: not depeng's num_args of the
   layers whose input count MXNet tells from no_bias or act_type. */
static int dpn__sym_attr_written(const dpn__snode *x, int k) {
    const char *o = x->op->name;
    return strcmp(x->keys[k], "num_args") != 0
           || (strcmp(o, "Convolution") && strcmp(o, "Deconvolution") && strcmp(o, "LeakyReLU") && strcmp(o, "FullyConnected"));
}
static void dpn__json_attr(FILE *out, int *count, const char *key, const char *val) {
    fprintf(out, "%s\n        ", (*count)++ ? "," : ",\n      \"attrs\": {");
    dpn__json_str(out, key); fprintf(out, ": "); dpn__json_str(out, val);
}
DPN_IMPL dp_result dp_sym_save_json(const dp_symbol *s, FILE *out) {
    dpn__graph g;
    dp_result r;
    int i, j, k;
    if (!s || !out) { DPN__LOG(NULL, DP_LOG_ERROR, NULL_ARGUMENT, "dp_sym_save_json: a symbol and a stream are needed"); return DP_ERROR_INVALID_ARGS; }
    if ((r = dpn__graph_build(s, &g)) != DP_OK) return r;
    fprintf(out, "{\n  \"nodes\": [");
    for (i = 0; i < g.n; i++) {
        const dpn__snode *x = g.node[i];
        const char *act = NULL;
        int nattr = 0, has_no_bias = 0, has_num_args = 0;
        fprintf(out, "%s\n    {\n      \"op\": ", i ? "," : "");
        dpn__json_str(out, x->op ? dpn__sym_mxnet_name(x, &act) : "null");
        fprintf(out, ",\n      \"name\": ");
        dpn__json_str(out, x->name);
        if (act) dpn__json_attr(out, &nattr, "act_type", act);
        for (k = 0; k < x->nkw; k++) {
            if (x->op && !dpn__sym_attr_written(x, k)) { has_num_args = 1; continue; }
            has_no_bias |= !strcmp(x->keys[k], "no_bias");
            dpn__json_attr(out, &nattr, x->keys[k], x->vals[k]);
        }
        /* a layer given its input count (num_args) but no no_bias: MXNet
           tells the count from no_bias alone */
        if (has_num_args && !has_no_bias && (!strcmp(x->op->name, "Convolution") || !strcmp(x->op->name, "Deconvolution") || !strcmp(x->op->name, "FullyConnected")))
            dpn__json_attr(out, &nattr, "no_bias", x->nin == 2 ? "True" : "False");
        if (nattr) fprintf(out, "\n      }");
        fprintf(out, ",\n      \"inputs\": [");
        for (j = 0; j < x->nin; j++) fprintf(out, "%s[%d, %d, 0]", j ? ", " : "", dpn__ptrmap_get(&g.map, x->in[j].node), x->in[j].index);
        fprintf(out, "]\n    }");
    }
    fprintf(out, "\n  ],\n  \"arg_nodes\": [");
    for (i = 0; i < g.narg; i++) fprintf(out, "%s%d", i ? ", " : "", g.arg[i]);
    fprintf(out, "],\n  \"node_row_ptr\": [");
    for (i = 0; i <= g.n; i++) fprintf(out, "%s%d", i ? ", " : "", i < g.n ? g.entry0[i] : g.nentries);
    fprintf(out, "],\n  \"heads\": [");
    for (i = 0; i < s->n; i++) fprintf(out, "%s[%d, %d, 0]", i ? ", " : "", dpn__ptrmap_get(&g.map, s->out[i].node), s->out[i].index);
    fprintf(out, "],\n  \"attrs\": {\"mxnet_version\": [\"int\", 10600]}\n}\n");
    dpn__graph_free(&g);
    return dpn__stream_result(NULL, out, "dp_sym_save_json");
}
DPN_IMPL dp_result dp_sym_save(const dp_symbol *s, const char *path) {
    FILE *f;
    dp_result r;
    if (!s || !path) { DPN__LOG(NULL, DP_LOG_ERROR, NULL_ARGUMENT, "dp_sym_save: a symbol and a path are needed"); return DP_ERROR_INVALID_ARGS; }
    if ((f = fopen(path, "wb")) == NULL) { DPN__LOG(NULL, DP_LOG_ERROR, IO, "dp_sym_save: cannot open '%s' for writing", path); return DP_ERROR_IO; }
    r = dp_sym_save_json(s, f);
    if (fclose(f) != 0 && r == DP_OK) { DPN__LOG(NULL, DP_LOG_ERROR, IO, "dp_sym_save: writing '%s' failed", path); r = DP_ERROR_IO; }
    return r;
}
/* A parsed JSON value. Strings are decoded (escapes; \u as UTF-8); a
   number keeps its text too, since MXNet's attrs are strings but some
   writers put numbers there. */
enum { DPN__J_NULL, DPN__J_BOOL, DPN__J_NUM, DPN__J_STR, DPN__J_ARR, DPN__J_OBJ };
typedef struct dpn__jval {
    int type;
    double num;
    char *str;                   /* STR, NUM (its text), an object member's value's key in keys */
    int n;
    struct dpn__jval *items;      /* ARR, OBJ */
    char **keys;                 /* OBJ */
} dpn__jval;
typedef struct dpn__jparse { const char *p; const char *start; char err[128]; } dpn__jparse;
static void dpn__jfree(dpn__jval *v) {
    int i;
    for (i = 0; i < v->n; i++) { dpn__jfree(&v->items[i]); if (v->keys) free(v->keys[i]); }
    free(v->items); free(v->keys); free(v->str);
    memset(v, 0, sizeof *v);
}
static void dpn__jskip(dpn__jparse *ps) { while (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r') ps->p++; }
static int dpn__jfail(dpn__jparse *ps, const char *why) {
    if (!ps->err[0]) snprintf(ps->err, sizeof ps->err, "%s at byte %ld", why, (long)(ps->p - ps->start));
    return -1;
}
static int dpn__jhex(const char *p, unsigned *out) {
    int i;
    *out = 0;
    for (i = 0; i < 4; i++) {
        char c = p[i];
        *out <<= 4;
        if (c >= '0' && c <= '9') *out |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f') *out |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F') *out |= (unsigned)(c - 'A' + 10);
        else return -1;
    }
    return 0;
}
static int dpn__jstring(dpn__jparse *ps, char **out) {
    const char *q = ++ps->p;
    size_t cap = 0, n = 0;
    char *s;
    while (*q && *q != '"') { if (*q == '\\' && q[1]) q++; q++; cap++; }
    if (*q != '"') return dpn__jfail(ps, "unterminated string");
    if ((s = (char *)malloc(cap * 3 + 1)) == NULL) return dpn__jfail(ps, "out of memory");
    while (*ps->p != '"') {
        char c = *ps->p++;
        if (c != '\\') { s[n++] = c; continue; }
        c = *ps->p++;
        switch (c) {
        case 'n': s[n++] = '\n'; break;
        case 't': s[n++] = '\t'; break;
        case 'r': s[n++] = '\r'; break;
        case 'b': s[n++] = '\b'; break;
        case 'f': s[n++] = '\f'; break;
        case 'u': {
            unsigned u;
            if (dpn__jhex(ps->p, &u)) { free(s); return dpn__jfail(ps, "bad \\u escape"); }
            ps->p += 4;
            if (u < 0x80) s[n++] = (char)u;
            else if (u < 0x800) { s[n++] = (char)(0xC0 | (u >> 6)); s[n++] = (char)(0x80 | (u & 0x3F)); }
            else { s[n++] = (char)(0xE0 | (u >> 12)); s[n++] = (char)(0x80 | ((u >> 6) & 0x3F)); s[n++] = (char)(0x80 | (u & 0x3F)); }
            break;
        }
        default: s[n++] = c; break;
        }
    }
    ps->p++;
    s[n] = 0;
    if (memchr(s, 0, n)) { free(s); return dpn__jfail(ps, "a NUL in a string"); }
    *out = s;
    return 0;
}
static int dpn__jvalue(dpn__jparse *ps, dpn__jval *v, int depth);
/* the items of an array or object, up to close */
static int dpn__jitems(dpn__jparse *ps, dpn__jval *v, int depth, char close) {
    size_t cap = 0;
    ps->p++;
    dpn__jskip(ps);
    if (*ps->p == close) { ps->p++; return 0; }
    for (;;) {
        char *key = NULL;
        dpn__jskip(ps);
        if (close == '}') {
            if (*ps->p != '"' || dpn__jstring(ps, &key)) return dpn__jfail(ps, "expected a member name");
            dpn__jskip(ps);
            if (*ps->p != ':') { free(key); return dpn__jfail(ps, "expected ':'"); }
            ps->p++;
        }
        if ((size_t)v->n == cap) {
            size_t nc = cap ? cap * 2 : 8;
            dpn__jval *items = (dpn__jval *)realloc(v->items, nc * sizeof *items);
            char **keys = close == '}' ? (char **)realloc(v->keys, nc * sizeof *keys) : NULL;
            if (items) v->items = items;
            if (keys) v->keys = keys;
            if (!items || (close == '}' && !keys)) { free(key); return dpn__jfail(ps, "out of memory"); }
            cap = nc;
        }
        memset(&v->items[v->n], 0, sizeof v->items[v->n]);
        if (v->keys) v->keys[v->n] = key;
        v->n++;
        if (dpn__jvalue(ps, &v->items[v->n - 1], depth + 1)) return -1;
        dpn__jskip(ps);
        if (*ps->p == ',') { ps->p++; continue; }
        if (*ps->p == close) { ps->p++; return 0; }
        return dpn__jfail(ps, close == '}' ? "expected ',' or '}'" : "expected ',' or ']'");
    }
}
static int dpn__jvalue(dpn__jparse *ps, dpn__jval *v, int depth) {
    dpn__jskip(ps);
    if (depth > 64) return dpn__jfail(ps, "nested too deeply");
    switch (*ps->p) {
    case '{': v->type = DPN__J_OBJ; return dpn__jitems(ps, v, depth, '}');
    case '[': v->type = DPN__J_ARR; return dpn__jitems(ps, v, depth, ']');
    case '"': v->type = DPN__J_STR; return dpn__jstring(ps, &v->str);
    default: break;
    }
    if (!strncmp(ps->p, "true", 4) || !strncmp(ps->p, "null", 4)) { v->type = ps->p[0] == 't' ? DPN__J_BOOL : DPN__J_NULL; v->num = 1; ps->p += 4; return 0; }
    if (!strncmp(ps->p, "false", 5)) { v->type = DPN__J_BOOL; ps->p += 5; return 0; }
    if (*ps->p == '-' || (*ps->p >= '0' && *ps->p <= '9')) {
        char *end;
        size_t len;
        v->type = DPN__J_NUM;
        v->num = strtod(ps->p, &end);
        if (end == ps->p) return dpn__jfail(ps, "bad number");
        len = (size_t)(end - ps->p);
        if ((v->str = (char *)malloc(len + 1)) == NULL) return dpn__jfail(ps, "out of memory");
        memcpy(v->str, ps->p, len); v->str[len] = 0;
        ps->p = end;
        return 0;
    }
    return dpn__jfail(ps, "unexpected character");
}
static const dpn__jval *dpn__jget(const dpn__jval *obj, const char *key) {
    int i;
    if (!obj || obj->type != DPN__J_OBJ) return NULL;
    for (i = 0; i < obj->n; i++) if (!strcmp(obj->keys[i], key)) return &obj->items[i];
    return NULL;
}
/* an entry [node, output(, version)] of a node made before `before` */
static int dpn__jentry(const dpn__jval *v, int before, dpn__snode **made, dpn__sentry *out) {
    int node, index;
    if (!v || v->type != DPN__J_ARR || v->n < 2 || v->n > 3 || v->items[0].type != DPN__J_NUM || v->items[1].type != DPN__J_NUM) return -1;
    if (!(v->items[0].num >= 0 && v->items[0].num < (double)before) || !(v->items[1].num >= 0 && v->items[1].num < DP_MAX_OP_ARRAYS))
        return -1;                                     /* before the casts: a huge or NaN double has no int */
    node = (int)v->items[0].num; index = (int)v->items[1].num;
    if ((double)node != v->items[0].num || (double)index != v->items[1].num || index >= made[node]->nout) return -1;
    out->node = made[node]; out->index = index;
    return 0;
}
static dp_result dpn__jformat(const char *why, int node) {
    if (node >= 0) DPN__LOG(NULL, DP_LOG_ERROR, FORMAT, "symbol JSON: node %d: %s", node, why);
    else DPN__LOG(NULL, DP_LOG_ERROR, FORMAT, "symbol JSON: %s", why);
    return DP_ERROR_FORMAT;
}
/* The symbol of a parsed file. */
/* A variable's attributes as loaded (MXNet's "__init__", "__shape__",
   "__lr_mult__", ...), kept so that dp_sym_var_attr finds them and saving
   writes them back. -1 out of memory. */
static int dpn__snode_keep_attrs(dpn__snode *n, int nkw, const char *const *keys, const char *const *vals) {
    int j;
    if (!nkw) return 0;
    n->keys = (char **)calloc((size_t)nkw, sizeof *n->keys);
    n->vals = (char **)calloc((size_t)nkw, sizeof *n->vals);
    if (!n->keys || !n->vals) return -1;
    for (j = 0; j < nkw; j++) {
        n->keys[j] = dpn__strdup(keys[j]); n->vals[j] = dpn__strdup(vals[j]);
        n->nkw++;
        if (!n->keys[j] || !n->vals[j]) return -1;
    }
    return 0;
}
/* Most attributes one node may have in a file. */
#define DPN__MAX_ATTRS 64
/* The symbol of a parsed file. A node's attributes come from "attrs"
   (MXNet 1.x), "param" (older files: the operator's parameters) and
   "attr" (older files: hints such as "__lr_mult__" or "ctx_group", kept
   but not given to the operator; a hint without the underscores gets
   them, "ctx_group" becoming "__ctx_group__", as MXNet's loader
   (UpgradeJSON_FixParsing) does for its hint keys, so that the file
   written back is MXNet 1.x's); a key
   met twice keeps its first value. Strings, or numbers as their text;
   nested values (MXNet's own hints) are skipped. */
static dp_result dpn__sym_from_json(const dpn__jval *root, dp_symbol **out) {
    static const char *const groups[3] = {"attrs", "param", "attr"};
    const dpn__jval *nodes = dpn__jget(root, "nodes"), *heads = dpn__jget(root, "heads");
    dpn__snode **made;
    dp_result r = DP_OK;
    int i, j, k, nmade = 0;
    if (!nodes || nodes->type != DPN__J_ARR || !heads || heads->type != DPN__J_ARR || heads->n < 1)
        return dpn__jformat("an object with the arrays \"nodes\" and \"heads\" is needed", -1);
    if ((made = (dpn__snode **)calloc((size_t)(nodes->n ? nodes->n : 1), sizeof *made)) == NULL) return dpn__sym_oom("dp_sym_load_json");
    for (i = 0; i < nodes->n && r == DP_OK; i++) {
        const dpn__jval *x = &nodes->items[i], *op = dpn__jget(x, "op"), *name = dpn__jget(x, "name"), *in = dpn__jget(x, "inputs");
        dpn__sentry ent[DP_MAX_OP_ARRAYS];
        const char *keys[DPN__MAX_ATTRS], *vals[DPN__MAX_ATTRS];
        char hidden[DPN__MAX_ATTRS][64];
        int nkw = 0, nparse = 0, g;
        if (!op || op->type != DPN__J_STR || !name || name->type != DPN__J_STR || !name->str[0] || (in && in->type != DPN__J_ARR)) {
            r = dpn__jformat("each node needs \"op\" and \"name\" strings, \"inputs\" an array, \"attrs\" an object", i);
            break;
        }
        for (g = 0; g < 3 && r == DP_OK; g++) {
            const dpn__jval *attrs = dpn__jget(x, groups[g]);
            if (attrs && attrs->type != DPN__J_OBJ) { r = dpn__jformat("each node needs \"op\" and \"name\" strings, \"inputs\" an array, \"attrs\" an object", i); break; }
            for (j = 0; attrs && j < attrs->n; j++) {
                const dpn__jval *v = &attrs->items[j];
                const char *key = attrs->keys[j];
                if (v->type != DPN__J_STR && v->type != DPN__J_NUM) continue;     /* MXNet's nested hints */
                if (nkw == DPN__MAX_ATTRS) { r = dpn__jformat("more than 64 attributes", i); break; }
                if (g == 2 && strncmp(key, "__", 2) != 0) {
                    if (strlen(key) + 5 > sizeof hidden[nkw]) { r = dpn__jformat("an \"attr\" key longer than 58 bytes", i); break; }
                    snprintf(hidden[nkw], sizeof hidden[nkw], "__%s__", key);
                    key = hidden[nkw];
                }
                for (k = 0; k < nkw && strcmp(keys[k], key) != 0; k++) {}
                if (k < nkw) continue;
                keys[nkw] = key; vals[nkw++] = v->str;
            }
            if (g == 1) nparse = nkw;
        }
        if (r != DP_OK) break;
        if (!strcmp(op->str, "null")) {
            if ((made[i] = dpn__snode_new(name->str)) == NULL) { r = dpn__sym_oom("dp_sym_load_json"); break; }
            nmade++;
            if (dpn__snode_keep_attrs(made[i], nkw, keys, vals)) { r = dpn__sym_oom("dp_sym_load_json"); break; }
            continue;
        }
        if (in && in->n > DP_MAX_OP_ARRAYS) { r = dpn__jformat("too many inputs", i); break; }
        for (j = 0; in && j < in->n; j++)
            if (dpn__jentry(&in->items[j], i, made, &ent[j])) { r = dpn__jformat("an input is not [node, output, version] of an earlier node", i); break; }
        if (r != DP_OK) break;
        r = dpn__sym_make_node(op->str, name->str, in ? in->n : 0, ent, nparse, nkw, keys, vals, &made[i]);
        if (r == DP_OK) nmade++;
    }
    if (r == DP_OK && (*out = dpn__sym_new(heads->n)) == NULL) r = dpn__sym_oom("dp_sym_load_json");
    for (i = 0; r == DP_OK && i < heads->n; i++) {
        if (dpn__jentry(&heads->items[i], nodes->n, made, &(*out)->out[i])) {
            r = dpn__jformat("a head is not [node, output, version] of a node", -1);
            (*out)->n = i;
            dp_sym_release(*out);
            *out = NULL;
            break;
        }
        dpn__snode_ref((*out)->out[i].node);
    }
    for (i = 0; i < nmade; i++) dpn__snode_unref(made[i]);
    free(made);
    return r;
}
DPN_IMPL dp_result dp_sym_load_json(const char *json, dp_symbol **out) {
    dp_nn_register();
    dpn__jparse ps;
    dpn__jval root;
    dp_result r;
    if (out) *out = NULL;
    if (!json || !out) { DPN__LOG(NULL, DP_LOG_ERROR, NULL_ARGUMENT, "dp_sym_load_json: the text and out are needed"); return DP_ERROR_INVALID_ARGS; }
    memset(&ps, 0, sizeof ps);
    memset(&root, 0, sizeof root);
    ps.p = ps.start = json;
    if (dpn__jvalue(&ps, &root, 0) == 0) { dpn__jskip(&ps); if (*ps.p) dpn__jfail(&ps, "text after the end"); }
    if (ps.err[0]) r = dpn__jformat(ps.err, -1);
    else r = dpn__sym_from_json(&root, out);
    dpn__jfree(&root);
    return r;
}
DPN_IMPL dp_result dp_sym_load(const char *path, dp_symbol **out) {
    FILE *f;
    char *text = NULL;
    size_t n = 0, cap = 0;
    dp_result r;
    if (out) *out = NULL;
    if (!path || !out) { DPN__LOG(NULL, DP_LOG_ERROR, NULL_ARGUMENT, "dp_sym_load: a path and out are needed"); return DP_ERROR_INVALID_ARGS; }
    if ((f = fopen(path, "rb")) == NULL) { DPN__LOG(NULL, DP_LOG_ERROR, IO, "dp_sym_load: cannot open '%s'", path); return DP_ERROR_IO; }
    for (;;) {
        size_t got;
        if (n + 4096 + 1 > cap) {
            char *t = (char *)realloc(text, cap = (cap ? cap * 2 : 8192));
            if (!t) { free(text); fclose(f); return dpn__sym_oom("dp_sym_load"); }
            text = t;
        }
        got = fread(text + n, 1, cap - n - 1, f);
        n += got;
        if (got == 0) break;
    }
    if (ferror(f)) { free(text); fclose(f); DPN__LOG(NULL, DP_LOG_ERROR, IO, "dp_sym_load: reading '%s' failed (a directory?)", path); return DP_ERROR_IO; }
    fclose(f);
    text[n] = 0;
    if (memchr(text, 0, n)) { free(text); return dpn__jformat("a NUL byte in the file", -1); }
    r = dp_sym_load_json(text, out);
    free(text);
    return r;
}
static void dpn__dot_label(FILE *out, const char *s) {
    for (; *s; s++) { if (*s == '"' || *s == '\\') fputc('\\', out); fputc(*s, out); }
}
DPN_IMPL dp_result dp_sym_write_dot(const dp_symbol *s, FILE *out) {
    dpn__graph g;
    dp_result r;
    int i, j;
    if (!s || !out) { DPN__LOG(NULL, DP_LOG_ERROR, NULL_ARGUMENT, "dp_sym_write_dot: a symbol and a stream are needed"); return DP_ERROR_INVALID_ARGS; }
    if ((r = dpn__graph_build(s, &g)) != DP_OK) return r;
    fprintf(out, "digraph symbol {\n  rankdir=BT;\n  node [fontname=\"Helvetica\", fontsize=10];\n");
    for (i = 0; i < g.n; i++) {
        const dpn__snode *x = g.node[i];
        fprintf(out, "  n%d [label=\"", i);
        dpn__dot_label(out, x->name);
        if (x->op) {
            fprintf(out, "\\n");
            dpn__dot_label(out, x->op->name);
            for (j = 0; j < x->nkw; j++) { fprintf(out, "\\n"); dpn__dot_label(out, x->keys[j]); fputc('=', out); dpn__dot_label(out, x->vals[j]); }
            fprintf(out, "\", shape=box, style=\"rounded,filled\", fillcolor=\"#cfe2f3\"];\n");
        } else fprintf(out, "\", shape=ellipse];\n");
    }
    for (i = 0; i < g.n; i++)
        for (j = 0; j < g.node[i]->nin; j++) {
            const dpn__sentry *e = &g.node[i]->in[j];
            fprintf(out, "  n%d -> n%d", dpn__ptrmap_get(&g.map, e->node), i);
            if (e->node->nout > 1) fprintf(out, " [label=\"%d\"]", e->index);
            fprintf(out, ";\n");
        }
    for (i = 0; i < s->n; i++) {
        fprintf(out, "  out%d [label=\"output %d\", shape=plaintext];\n  n%d -> out%d;\n", i, i, dpn__ptrmap_get(&g.map, s->out[i].node), i);
    }
    fprintf(out, "}\n");
    dpn__graph_free(&g);
    return dpn__stream_result(NULL, out, "dp_sym_write_dot");
}

/* >>initialisers: MXNet's mx.init, by name and by __init__ hints ------------- */
static int dpn__ieq(const char *a, const char *b) {
    for (; *a && *b; a++, b++) if ((*a | 0x20) != (*b | 0x20)) return 0;
    return *a == *b;
}
static dp_result dpn__init_bad(const char *why, const char *what) {
    DPN__LOG(NULL, DP_LOG_ERROR, ND_ARGS, "dp_init_parse: %s%s%s", why, what ? " " : "", what ? what : "");
    return DP_ERROR_INVALID_ARGS;
}
static int dpn__init_num(const dpn__jval *v, double *out) {
    char *end;
    if (v->type != DPN__J_NUM && v->type != DPN__J_STR) return 0;
    *out = strtod(v->str, &end);
    return end != v->str && *end == 0;
}
static dp_result dpn__init_named(const char *name, dp_initializer *o) {
    memset(o, 0, sizeof *o);
    o->scale = 0.07; o->sigma = 0.01; o->magnitude = 3; o->slope = 0.25;
    if (dpn__ieq(name, "zero") || dpn__ieq(name, "zeros")) o->kind = DP_INIT_ZERO;
    else if (dpn__ieq(name, "one") || dpn__ieq(name, "ones")) o->kind = DP_INIT_ONE;
    else if (dpn__ieq(name, "constant")) o->kind = DP_INIT_CONSTANT;
    else if (dpn__ieq(name, "uniform")) o->kind = DP_INIT_UNIFORM;
    else if (dpn__ieq(name, "normal")) o->kind = DP_INIT_NORMAL;
    else if (dpn__ieq(name, "xavier")) o->kind = DP_INIT_XAVIER;
    else if (dpn__ieq(name, "msraprelu") || dpn__ieq(name, "msra")) o->kind = DP_INIT_MSRA;
    else return dpn__init_bad("unknown initializer", name);
    return DP_OK;
}
DPN_IMPL dp_result dp_init_parse(const char *text, dp_initializer *out) {
    dpn__jparse ps;
    dpn__jval root;
    dp_result r;
    int i;
    if (!text || !out) return dpn__init_bad("NULL text or out", NULL);
    while (*text == ' ' || *text == '\t' || *text == '\n') text++;
    if (*text != '[') return dpn__init_named(text, out);
    memset(&ps, 0, sizeof ps);
    memset(&root, 0, sizeof root);
    ps.p = ps.start = text;
    if (dpn__jvalue(&ps, &root, 0) == 0) { dpn__jskip(&ps); if (*ps.p) dpn__jfail(&ps, "text after the end"); }
    if (ps.err[0]) { dpn__jfree(&root); return dpn__init_bad(ps.err, text); }
    if (root.type != DPN__J_ARR || root.n < 1 || root.n > 2 || root.items[0].type != DPN__J_STR || (root.n == 2 && root.items[1].type != DPN__J_OBJ)) {
        dpn__jfree(&root);
        return dpn__init_bad("not [\"name\", {kwargs}]:", text);
    }
    r = dpn__init_named(root.items[0].str, out);
    for (i = 0; r == DP_OK && root.n == 2 && i < root.items[1].n; i++) {
        const char *k = root.items[1].keys[i];
        const dpn__jval *v = &root.items[1].items[i];
        double x = 0;
        if (!strcmp(k, "rnd_type") || !strcmp(k, "factor_type")) {
            const char *s = v->type == DPN__J_STR ? v->str : "";
            if (!strcmp(k, "rnd_type") && !strcmp(s, "uniform")) out->rnd_type = DP_INIT_RND_UNIFORM;
            else if (!strcmp(k, "rnd_type") && !strcmp(s, "gaussian")) out->rnd_type = DP_INIT_RND_GAUSSIAN;
            else if (!strcmp(k, "factor_type") && !strcmp(s, "avg")) out->factor_type = DP_INIT_FACTOR_AVG;
            else if (!strcmp(k, "factor_type") && !strcmp(s, "in")) out->factor_type = DP_INIT_FACTOR_IN;
            else if (!strcmp(k, "factor_type") && !strcmp(s, "out")) out->factor_type = DP_INIT_FACTOR_OUT;
            else r = dpn__init_bad(k, "has an unknown value (rnd_type: uniform, gaussian; factor_type: avg, in, out)");
        } else if (!dpn__init_num(v, &x)) r = dpn__init_bad(k, "needs a number");
        else if (!strcmp(k, "value")) out->value = x;
        else if (!strcmp(k, "scale")) out->scale = x;
        else if (!strcmp(k, "sigma")) out->sigma = x;
        else if (!strcmp(k, "magnitude")) out->magnitude = x;
        else if (!strcmp(k, "slope")) out->slope = x;
        else r = dpn__init_bad("unknown key", k);
    }
    dpn__jfree(&root);
    return r;
}
static int dpn__ends_with(const char *s, const char *end) {
    size_t a = strlen(s), b = strlen(end);
    return a >= b && !strcmp(s + a - b, end);
}
/* arr = value, or draws: uniform in [lo, hi] (gauss 0) or normal(0, hi) */
static dp_result dpn__init_fill(dp_ndarray *arr, int kind, double lo, double hi) {
    dp_engine *eng = dp_nd_engine(arr);
    dp_ndarray *tmp = NULL;
    dp_result r;
    if (kind == 0) r = dp_nd_full(eng, dp_nd_shape(arr), dp_nd_dtype(arr), dp_nd_ctx(arr), lo, &tmp);
    else if (kind == 1) r = dp_nd_random_uniform(eng, lo, hi, dp_nd_shape(arr), dp_nd_dtype(arr), dp_nd_ctx(arr), &tmp);
    else r = dp_nd_random_normal(eng, 0, hi, dp_nd_shape(arr), dp_nd_dtype(arr), dp_nd_ctx(arr), &tmp);
    if (r == DP_OK) r = dp_nd_copy_into(tmp, arr, NULL);
    dp_nd_release(tmp);
    return r;
}
static dp_result dpn__init_weight(const dp_initializer *in, const char *name, dp_ndarray *arr) {
    const dp_shape *s = dp_nd_shape(arr);
    double fan_in, fan_out, hw = 1, factor, mag, sc;
    int k;
    switch (in->kind) {
    case DP_INIT_ZERO: return dpn__init_fill(arr, 0, 0, 0);
    case DP_INIT_ONE: return dpn__init_fill(arr, 0, 1, 0);
    case DP_INIT_CONSTANT: return dpn__init_fill(arr, 0, in->value, 0);
    case DP_INIT_UNIFORM: return dpn__init_fill(arr, 1, -in->scale, in->scale);
    case DP_INIT_NORMAL: return dpn__init_fill(arr, 2, 0, in->sigma);
    case DP_INIT_XAVIER: case DP_INIT_MSRA: break;
    default:
        DPN__LOG(dp_nd_engine(arr), DP_LOG_ERROR, ND_ARGS, "dp_init_array: '%s': unknown initializer kind %d", name, (int)in->kind);
        return DP_ERROR_INVALID_ARGS;
    }
    if (s->ndim < 2) {
        DPN__LOG(dp_nd_engine(arr), DP_LOG_ERROR, ND_ARGS, "dp_init_array: Xavier initializer cannot be applied to vector '%s' (%d-d): it needs at least 2 dimensions", name, (int)s->ndim);
        return DP_ERROR_INVALID_ARGS;
    }
    for (k = 2; k < s->ndim; k++) hw *= (double)s->dims[k];
    fan_in = (double)s->dims[1] * hw; fan_out = (double)s->dims[0] * hw;
    factor = in->factor_type == DP_INIT_FACTOR_IN ? fan_in : in->factor_type == DP_INIT_FACTOR_OUT ? fan_out : (fan_in + fan_out) / 2;
    mag = in->kind == DP_INIT_MSRA ? 2.0 / (1 + in->slope * in->slope) : in->magnitude;
    if (!(factor > 0)) {
        DPN__LOG(dp_nd_engine(arr), DP_LOG_ERROR, ND_ARGS, "dp_init_array: '%s': a fan of 0 (an empty array) has no Xavier scale", name);
        return DP_ERROR_INVALID_ARGS;
    }
    sc = sqrt(mag / factor);
    return in->kind == DP_INIT_MSRA || in->rnd_type == DP_INIT_RND_GAUSSIAN ? dpn__init_fill(arr, 2, 0, sc) : dpn__init_fill(arr, 1, -sc, sc);
}
DPN_IMPL dp_result dp_init_array(const dp_initializer *init, const char *name, const char *hint, dp_ndarray *arr) {
    static const char *const zero[] = {"bias", "beta", "moving_mean", "moving_inv_var", "moving_avg", "min"};
    static const char *const one[] = {"gamma", "moving_var", "max"};
    size_t i;
    if (!init || !name || !arr) { DPN__LOG(arr ? dp_nd_engine(arr) : NULL, DP_LOG_ERROR, ND_ARGS, "dp_init_array: NULL init, name or array"); return DP_ERROR_INVALID_ARGS; }
    if (hint && hint[0]) {
        dp_initializer h;
        dp_result r = dp_init_parse(hint, &h);
        if (r != DP_OK) { DPN__LOG(dp_nd_engine(arr), DP_LOG_ERROR, ND_ARGS, "dp_init_array: '%s': its __init__ hint is refused", name); return r; }
        return dpn__init_weight(&h, name, arr);
    }
    if (dpn__ends_with(name, "weight")) return dpn__init_weight(init, name, arr);
    for (i = 0; i < sizeof zero / sizeof zero[0]; i++) if (dpn__ends_with(name, zero[i])) return dpn__init_fill(arr, 0, 0, 0);
    for (i = 0; i < sizeof one / sizeof one[0]; i++) if (dpn__ends_with(name, one[i])) return dpn__init_fill(arr, 0, 1, 0);
    DPN__LOG(dp_nd_engine(arr), DP_LOG_ERROR, ND_ARGS, "dp_init_array: unknown initialization pattern for '%s' (names end in weight, bias, gamma, beta, "
             "moving_mean, moving_var, moving_inv_var, moving_avg, min or max, or the variable has an __init__ hint)", name);
    return DP_ERROR_INVALID_ARGS;
}
DPN_IMPL const char *dp_sym_var_attr(const dp_symbol *sym, const char *var, const char *key) {
    dpn__graph g;
    const char *found = NULL;
    int i, k;
    if (!sym || !var || !key || dpn__graph_build(sym, &g) != DP_OK) return NULL;
    for (i = 0; i < g.n && !found; i++) {
        const dpn__snode *x = g.node[i];
        if (x->op || strcmp(x->name, var) != 0) continue;
        for (k = 0; k < x->nkw && !found; k++) if (!strcmp(x->keys[k], key)) found = x->vals[k];
    }
    dpn__graph_free(&g);
    return found;
}
DPN_IMPL dp_result dp_init_params(const dp_initializer *init, const dp_symbol *sym, const dp_nd_named *params, int num) {
    int i;
    dp_result r = DP_OK;
    if (!init || !sym || num < 0 || (num && !params)) { DPN__LOG(NULL, DP_LOG_ERROR, ND_ARGS, "dp_init_params: NULL init, symbol or params, or a negative num"); return DP_ERROR_INVALID_ARGS; }
    for (i = 0; i < num && r == DP_OK; i++) r = dp_init_array(init, params[i].name, dp_sym_var_attr(sym, params[i].name, "__init__"), params[i].array);
    return r;
}

/* >>memory planning -------------------------------------------------------------
   A graph that runs many times can take all of its intermediate arrays from
   one arena, allocated once, if where each array lives in the arena is
   decided before the first run. One buffer per array is simple and wasteful:
   most arrays are needed for a short stretch of the run only, and two arrays
   whose stretches do not overlap can share bytes. This section decides the
   sharing the way MXNet's graph memory planner does (MXNet's design notes,
   "Optimizing Memory Consumption in Deep Learning"). It sees only entry
   ids, sizes and the nodes' read and write lists, so it is a pure function
   that the executor calls once per bind.

   Liveness by reference counts. The nodes run in the given order. An entry
   is born at the node that writes it and dies after the last node that
   reads it. To find the last read without looking ahead, count first:
   refs[e] = how many node inputs name e. Walking the nodes, every read takes
   one off; the read that brings the count to zero is the last one, and from
   the next node on nobody needs e's bytes. An entry nobody reads (an unused
   output, the gradient of something that needs none) dies right after its
   node. An entry that no node writes and the caller does not own (a
   constant, filled once at bind time) is alive from the start and stays
   alive: nothing in the graph would fill it again for the next run.

   A pool of blocks. Storage comes in blocks, and a block holds one live entry
   at a time. When an entry dies its block goes into a pool of free blocks.
   An output that needs storage looks in the pool first: the best fit is the
   smallest free block at least as large as the output, but not more than 16
   times larger (a large block spent on a small array is one a later large
   array cannot have); failing that, the largest free block of at least a
   sixteenth of the output's size, which grows to fit (a block's size is the
   largest entry it ever holds). Only when nothing in that range is free does
   a new block start. At the end the blocks are laid end to end, each size a
   multiple of 64 bytes: a block's offset is the sum of the sizes before it,
   and an entry's offset is its block's.

   Order within a node. A kernel reads its inputs while it writes its
   outputs, so a node's outputs get their blocks before its inputs that die
   at this node give theirs back: an output never lands on bytes the same
   node still reads. The one exception is asked for by the operator.

   In place. Inplace bit i says output 0 may be written over input i (an
   element-wise kernel reads x[k] before it writes y[k]). The planner uses it
   when, in addition, this node is input i's last reader (nothing later wants
   the old values), input i is planned (the caller's arrays are not ours to
   overwrite, a constant must survive) and input i has at least as many bytes
   as output 0. Output 0 then takes input i's block over, and the block stays
   out of the pool when input i dies. A chain of element-wise operators runs
   in one block.

   Why no two live entries share bytes: a block holds one entry at a time and
   is given back only after that entry's last reader ran, or handed, at that
   last reader, to an output the operator allows over it.
   tests/test_memory_plan.c checks this with its own liveness computation on
   thousands of random graphs. Cost: O(reads + writes + nodes * pool size). */
typedef struct dpn__plan_node {
    int num_inputs;  const int *inputs;   /* entry ids read */
    int num_outputs; const int *outputs;  /* entry ids written */
    unsigned inplace;                     /* bit i: output 0 may be written over input i's bytes */
} dpn__plan_node;
enum { DPN__PLAN_ALIGN = 64, DPN__PLAN_MATCH_RANGE = 16 };
/* The planner's working arrays, one allocation. */
typedef struct dpn__planner {
    size_t *need;          /* per entry: its bytes rounded up to 64 */
    size_t *block_bytes;   /* per block: the largest entry it held */
    int *refs;             /* per entry: reads still to come */
    int *writer;           /* per entry: the node that writes it, -1 for none */
    int *block;            /* per entry: its block, -1 for none yet */
    int *pool;             /* the free blocks */
    unsigned char *handed; /* per entry: its block went to an in-place output */
    int num_blocks, num_free;
} dpn__planner;
static int dpn__plan_is_planned(const unsigned char *external, int e) { return !external || !external[e]; }
/* Logs a bad argument (node or entry -1: not about one) and returns
   DP_ERROR_INVALID_ARGS. */
DPN__COLD static dp_result dpn__plan_bad(const char *what, int node, int entry) {
    if (node >= 0) DPN__LOG(NULL, DP_LOG_ERROR, ND_ARGS, "memory planning: node %d, entry %d: %s", node, entry, what);
    else if (entry >= 0) DPN__LOG(NULL, DP_LOG_ERROR, ND_ARGS, "memory planning: entry %d: %s", entry, what);
    else DPN__LOG(NULL, DP_LOG_ERROR, ND_ARGS, "memory planning: %s", what);
    return DP_ERROR_INVALID_ARGS;
}
/* Counts, pointers and ids; fills writer[] and refs[]. An entry written
   twice, or a planned one read before (or by) the node that writes it, is
   refused: the nodes must be in an order that can run. */
static dp_result dpn__plan_check_graph(dpn__planner *p, int num_entries, const unsigned char *external, int num_nodes,
                                      const dpn__plan_node *nodes) {
    int n, j;
    for (j = 0; j < num_entries; j++) { p->writer[j] = -1; p->refs[j] = 0; p->block[j] = -1; p->handed[j] = 0; }
    for (n = 0; n < num_nodes; n++) {
        const dpn__plan_node *d = &nodes[n];
        if (d->num_inputs < 0 || d->num_outputs < 0 || (d->num_inputs > 0 && !d->inputs) || (d->num_outputs > 0 && !d->outputs))
            return dpn__plan_bad("negative count, or NULL id list with a count", n, -1);
        for (j = 0; j < d->num_outputs; j++) {
            int e = d->outputs[j];
            if (e < 0 || e >= num_entries) return dpn__plan_bad("output id out of range", n, e);
            if (p->writer[e] >= 0) return dpn__plan_bad("written by two nodes (or twice by one)", n, e);
            p->writer[e] = n;
        }
        for (j = 0; j < d->num_inputs; j++) {
            int e = d->inputs[j];
            if (e < 0 || e >= num_entries) return dpn__plan_bad("input id out of range", n, e);
            p->refs[e]++;
        }
    }
    for (n = 0; n < num_nodes; n++)
        for (j = 0; j < nodes[n].num_inputs; j++) {
            int e = nodes[n].inputs[j];
            if (dpn__plan_is_planned(external, e) && p->writer[e] >= n) return dpn__plan_bad("read before the node that writes it has run", n, e);
        }
    return DP_OK;
}
/* A block of at least need bytes from the pool (best fit within a factor of
   DPN__PLAN_MATCH_RANGE, see above), or a new one. */
static int dpn__plan_request(dpn__planner *p, size_t need) {
    int k, up = -1, down = -1, b;
    for (k = 0; k < p->num_free; k++) {
        size_t s = p->block_bytes[p->pool[k]];
        if (s >= need && s / DPN__PLAN_MATCH_RANGE <= need) { if (up < 0 || s < p->block_bytes[p->pool[up]]) up = k; }
        else if (s < need && s >= need / DPN__PLAN_MATCH_RANGE) { if (down < 0 || s > p->block_bytes[p->pool[down]]) down = k; }
    }
    k = up >= 0 ? up : down;
    if (k < 0) { p->block_bytes[p->num_blocks] = need; return p->num_blocks++; }
    b = p->pool[k];
    p->pool[k] = p->pool[--p->num_free];
    if (p->block_bytes[b] < need) p->block_bytes[b] = need;
    return b;
}
static void dpn__plan_release(dpn__planner *p, int e) {
    if (p->block[e] >= 0 && !p->handed[e]) p->pool[p->num_free++] = p->block[e];
}
/* The input whose block node d's output 0 (entry out) may take over, or -1:
   the operator allows it, the input is planned, written by an earlier node
   (not a constant), large enough, and read by no later node. */
static int dpn__plan_inplace_source(const dpn__planner *p, const size_t *bytes, const unsigned char *external, const dpn__plan_node *d, int out) {
    int i, j;
    for (i = 0; i < d->num_inputs && i < 32; i++) {
        int src = d->inputs[i], reads_here = 0;
        if (!(d->inplace >> i & 1u) || !dpn__plan_is_planned(external, src) || p->writer[src] < 0 || p->block[src] < 0 || p->handed[src]
            || bytes[src] < bytes[out])
            continue;
        for (j = 0; j < d->num_inputs; j++) reads_here += d->inputs[j] == src;
        if (p->refs[src] == reads_here) return src;
    }
    return -1;
}
/* One node: its outputs get blocks, then the inputs it read last and the
   outputs nobody reads give theirs back. */
static void dpn__plan_node_step(dpn__planner *p, const size_t *bytes, const unsigned char *external, const dpn__plan_node *d) {
    int j;
    for (j = 0; j < d->num_outputs; j++) {
        int e = d->outputs[j], src = -1;
        if (!dpn__plan_is_planned(external, e) || p->need[e] == 0) continue;
        if (j == 0) src = dpn__plan_inplace_source(p, bytes, external, d, e);
        if (src >= 0) { p->block[e] = p->block[src]; p->handed[src] = 1; }
        else p->block[e] = dpn__plan_request(p, p->need[e]);
    }
    for (j = 0; j < d->num_inputs; j++) {
        int e = d->inputs[j];
        if (dpn__plan_is_planned(external, e) && --p->refs[e] == 0 && p->writer[e] >= 0) dpn__plan_release(p, e);
    }
    for (j = 0; j < d->num_outputs; j++) {
        int e = d->outputs[j];
        if (dpn__plan_is_planned(external, e) && p->refs[e] == 0) dpn__plan_release(p, e);
    }
}
/* Plans the storage of a graph's entries in one arena (see above).
   Entries 0..num_entries-1 have bytes[e] bytes; external[e] non-zero (or
   external NULL: none is) marks an entry the caller owns: the arguments,
   gradients the caller gives, heads that must survive. Those are not
   planned and their offset is set to -1. nodes are in execution order.
   Fills offset[e] (bytes from the arena's start, a multiple of 64; the
   arena itself must be 64-byte aligned) for every planned entry,
   *arena_bytes (the arena's size) and *unplanned_bytes (the planned
   entries' sizes, each rounded up to 64, added up: the bytes one buffer per
   entry would take). Returns DP_OK; DP_ERROR_INVALID_ARGS, logged, for a
   negative count, a NULL pointer with a count, an id out of range, an entry
   written twice, a planned entry read before it is written, or sizes that
   add up past SIZE_MAX or INT64_MAX; DP_ERROR_OUT_OF_MEMORY, logged, when
   its working memory cannot be allocated. Pure, no engine: any thread. */
DPN__PRIVATE dp_result dpn__plan_memory(int num_entries, const size_t *bytes, const unsigned char *external,
                                      int num_nodes, const dpn__plan_node *nodes,
                                      int64_t *offset, size_t *arena_bytes, size_t *unplanned_bytes) {
    /* per entry: need, block_bytes (a block per entry at most), five ints, a flag */
    const size_t per_entry = 2 * sizeof(size_t) + 5 * sizeof(int) + 1;
    dpn__planner p;
    size_t n_e, work_bytes, total = 0, at = 0;
    void *mem;
    dp_result r;
    int e, n, b;
    if (num_entries < 0 || num_nodes < 0 || !arena_bytes || !unplanned_bytes || (num_entries > 0 && (!bytes || !offset))
        || (num_nodes > 0 && !nodes))
        return dpn__plan_bad("negative count, or a required pointer is NULL", -1, -1);
    n_e = (size_t)num_entries;
    work_bytes = n_e * per_entry + 1;
    mem = n_e < (SIZE_MAX - 1) / per_entry ? dp_engine_alloc(NULL, work_bytes) : NULL;
    if (!mem) {
        DPN__LOG(NULL, DP_LOG_ERROR, OUT_OF_MEMORY, "memory planning: %d entries", num_entries);
        return DP_ERROR_OUT_OF_MEMORY;
    }
    p.need = (size_t *)mem; p.block_bytes = p.need + n_e;
    p.refs = (int *)(void *)(p.block_bytes + n_e); p.writer = p.refs + n_e; p.block = p.writer + n_e; p.pool = p.block + n_e;
    p.handed = (unsigned char *)(p.pool + n_e);
    p.num_blocks = p.num_free = 0;
    r = dpn__plan_check_graph(&p, num_entries, external, num_nodes, nodes);
    for (e = 0; r == DP_OK && e < num_entries; e++) {
        offset[e] = -1;
        p.need[e] = 0;
        if (!dpn__plan_is_planned(external, e)) continue;
        if (bytes[e] > SIZE_MAX - (DPN__PLAN_ALIGN - 1)) { r = dpn__plan_bad("size too large", -1, e); break; }
        p.need[e] = (bytes[e] + (DPN__PLAN_ALIGN - 1)) & ~(size_t)(DPN__PLAN_ALIGN - 1);
        if (p.need[e] > SIZE_MAX - total || total + p.need[e] > (size_t)INT64_MAX) { r = dpn__plan_bad("the sizes add up past SIZE_MAX or INT64_MAX", -1, e); break; }
        total += p.need[e];
        if (p.writer[e] < 0 && p.need[e] > 0) p.block[e] = dpn__plan_request(&p, p.need[e]);   /* a constant: alive throughout */
    }
    for (n = 0; r == DP_OK && n < num_nodes; n++) dpn__plan_node_step(&p, bytes, external, &nodes[n]);
    if (r == DP_OK) {
        /* blocks end to end; block_bytes becomes each block's offset. The
           sum cannot pass total: a block is as large as one of its entries. */
        for (b = 0; b < p.num_blocks; b++) { size_t s = p.block_bytes[b]; p.block_bytes[b] = at; at += s; }
        for (e = 0; e < num_entries; e++)
            if (dpn__plan_is_planned(external, e)) offset[e] = p.block[e] >= 0 ? (int64_t)p.block_bytes[p.block[e]] : 0;
        *arena_bytes = at;
        *unplanned_bytes = total;
    }
    dp_engine_free(NULL, mem, work_bytes);
    return r;
}

/* >>executor --------------------------------------------------------------------
   Binding makes the graph's execution list once: the forward nodes, then
   (with gradients) the gradient graph, each node reading and writing
   entries. Entries the caller sees (arguments, their gradients, the
   outputs, the head gradients) are arrays of their own; the others are
   views into one arena laid out by the memory plan. Entries whose bytes
   overlap in the plan share one variable (a chunk over the union of their
   ranges), so the engine orders every pair of operations that touch the
   same bytes; other entries have variables of their own and their
   operations may run in parallel. Each node becomes one pre-created
   operation that holds references to its arrays; a step pushes them. */
typedef dp_result (*dpn__plan_fn)(int, const size_t *, const unsigned char *, int, const dpn__plan_node *, int64_t *, size_t *, size_t *);
/* Tests set this to bind with another planner; NULL: dpn__plan_memory. */
static dpn__plan_fn dpn__exec_planner;
typedef struct dpn__xent { dp_shape shape; dp_dtype dtype; dp_ndarray *array; int producer, prod_out; unsigned char external; } dpn__xent;
typedef struct dpn__xnode {
    const dp_operator *op;
    const dpn__snode *src;            /* the forward node it comes from */
    int nin, nout;
    int in[3 * DP_MAX_OP_ARRAYS], out[DP_MAX_OP_ARRAYS];
    dp_req req[DP_MAX_OP_ARRAYS];
    const dp_operator *post_op;       /* an element-wise operator fused into this node (fusion), or NULL */
    const dpn__snode *post_src;       /* its node (parameters) */
    int dropped;                      /* fused into its producer: no operation */
} dpn__xnode;
typedef struct dpn__xbuild {
    dp_engine *eng;
    dp_ctx ctx;
    dpn__xent *ent; size_t capent; int nent;
    dpn__xnode *node; size_t capnode; int nnode, nfwd;
    struct dpn__xcont { int fe, e; } *cont; size_t capcont; int ncont;   /* gradient contributions to forward entries */
} dpn__xbuild;
struct dp_executor {
    dp_engine *eng;
    dp_ctx ctx;
    dp_symbol *sym;
    int narg, naux;
    dp_req *grad_req;                /* per argument, as bound */
    dp_ndarray **aux;                /* the auxiliary states, as bound */
    int nfwd, nbwd;
    dp_opr *ops;                     /* forward (in inference), then backward */
    dp_opr *train_ops;               /* per forward node: its training form (id 0: the same as ops[i]) */
    int nout;
    dp_ndarray **outputs, **head_grads;
    dp_exec_memory mem;
    int no_fusion;                   /* as bound (rebind keeps it) */
};
/* The operation's argument: a node's kernel, parameters and arrays. */
typedef struct dpn__xrun {
    dp_engine *eng;
    size_t bytes;
    dp_kernel_fn kernel;
    dp_params params;
    double scalar;
    int nin, nout;
    dp_ndarray **arrays;             /* inputs, then outputs */
    dp_req req[DP_MAX_OP_ARRAYS];
    int (*fused)(const dp_kernel_ctx *, const dpn__post *);   /* with post: the producer's kernel, taking it */
    dpn__post *post;                 /* a fused operator, or NULL */
} dpn__xrun;
static int dpn__xrun_fn(dp_run_ctx *rc, void *arg) {
    const dpn__xrun *x = (const dpn__xrun *)arg;
    dp_kernel_ctx k;
    k.rc = rc; k.params = &x->params; k.scalar = x->scalar;
    k.num_inputs = x->nin; k.num_outputs = x->nout;
    k.inputs = x->arrays; k.outputs = x->arrays + x->nin; k.req = x->req;
    return x->post ? x->fused(&k, x->post) : x->kernel(&k);
}
/* A fused operator's blocks and the record holding them: one allocation. */
static size_t dpn__post_bytes(int nblocks) {
    return sizeof(dpn__post) + (size_t)nblocks * (sizeof(dp_ndarray *) + sizeof(int));
}
static void dpn__post_free(dp_engine *eng, dpn__post *p) {
    int i;
    if (!p) return;
    for (i = 0; i < p->nblocks; i++) dp_nd_release(p->blocks[i]);
    dp_engine_free(eng, p, dpn__post_bytes(p->nblocks));
}
static void dpn__xrun_free(void *arg) {
    dpn__xrun *x = (dpn__xrun *)arg;
    int i;
    for (i = 0; i < x->nin + x->nout; i++) dp_nd_release(x->arrays[i]);
    dpn__post_free(x->eng, x->post);
    dp_engine_free(x->eng, x, x->bytes);
}
/* A new entry; -1 out of memory. */
static int dpn__xb_entry(dpn__xbuild *b, const dp_shape *s, dp_dtype dt) {
    dp_shape copy = *s;                               /* s may point into the entries the reserve moves */
    if (dpn__reserve(b->eng, &b->ent, &b->capent, (size_t)b->nent, sizeof *b->ent, 64)) return -1;
    memset(&b->ent[b->nent], 0, sizeof b->ent[b->nent]);
    b->ent[b->nent].shape = copy; b->ent[b->nent].dtype = dt; b->ent[b->nent].producer = -1;
    return b->nent++;
}
/* An entry holding an array of the executor's own (filled with value). */
static int dpn__xb_own(dpn__xbuild *b, const dp_shape *s, dp_dtype dt, double value) {
    int e = dpn__xb_entry(b, s, dt);                  /* s may be gone now: the entry's copy is used */
    if (e < 0) return -1;
    if (dp_nd_full(b->eng, &b->ent[e].shape, dt, b->ctx, value, &b->ent[e].array) != DP_OK) return -1;
    b->ent[e].external = 1;
    return e;
}
static dpn__xnode *dpn__xb_node(dpn__xbuild *b, const dp_operator *op, const dpn__snode *src) {
    dpn__xnode *x;
    if (dpn__reserve(b->eng, &b->node, &b->capnode, (size_t)b->nnode, sizeof *b->node, 32)) return NULL;
    x = &b->node[b->nnode++];
    memset(x, 0, sizeof *x);
    x->op = op; x->src = src;
    return x;
}
static void dpn__xb_set_out(dpn__xbuild *b, dpn__xnode *x, int j, int e, dp_req req) {
    x->out[j] = e; x->req[j] = req;
    b->ent[e].producer = (int)(x - b->node); b->ent[e].prod_out = j;
}
/* Records e as one gradient contribution to forward entry fe. */
static int dpn__xb_contribute(dpn__xbuild *b, int fe, int e) {
    if (dpn__reserve(b->eng, &b->cont, &b->capcont, (size_t)b->ncont, sizeof *b->cont, 64)) return -1;
    b->cont[b->ncont].fe = fe; b->cont[b->ncont].e = e; b->ncont++;
    return 0;
}
/* An add node a + b into a new entry (or into dst with req). */
static int dpn__xb_add(dpn__xbuild *b, int a, int c, int dst, dp_req req) {
    dpn__xnode *x = dpn__xb_node(b, dp_operator_find("add"), NULL);
    if (!x) return -1;
    if (dst < 0 && (dst = dpn__xb_entry(b, &b->ent[a].shape, b->ent[a].dtype)) < 0) return -1;
    x->nin = 2; x->nout = 1; x->in[0] = a; x->in[1] = c;
    dpn__xb_set_out(b, x, 0, dst, req);
    return dst;
}
/* The sum of forward entry fe's gradient contributions: -1 when there is
   none, -2 out of memory. With dst >= 0 the sum (or the one contribution,
   through its producer) is written into dst with req. */
static int dpn__xb_sum(dpn__xbuild *b, int fe, int dst, dp_req req) {
    int k, acc = -1, last = -1;
    for (k = 0; k < b->ncont; k++) {
        int e = b->cont[k].e;
        if (b->cont[k].fe != fe) continue;
        if (last >= 0) {
            if (acc < 0) acc = last;
            else if ((acc = dpn__xb_add(b, acc, last, -1, DP_REQ_WRITE)) < 0) return -2;
        }
        last = e;
    }
    if (last < 0) return -1;
    if (acc >= 0) return dpn__xb_add(b, acc, last, dst, req) < 0 ? -2 : (dst >= 0 ? dst : b->nent - 1);
    if (dst < 0) return last;
    if (b->ent[last].producer < 0) {                 /* a head gradient: copied */
        dpn__xnode *x = dpn__xb_node(b, dp_operator_find("_copy"), NULL);
        if (!x) return -2;
        x->nin = 1; x->nout = 1; x->in[0] = last;
        dpn__xb_set_out(b, x, 0, dst, req);
        return dst;
    }
    /* one contribution: its producer writes dst directly */
    b->node[b->ent[last].producer].out[b->ent[last].prod_out] = dst;
    b->node[b->ent[last].producer].req[b->ent[last].prod_out] = req;
    b->ent[dst].producer = b->ent[last].producer; b->ent[dst].prod_out = b->ent[last].prod_out;
    b->ent[last].producer = -1;
    return dst;
}
/* The gradient graph: per forward node that leads to an argument with a
   gradient, in reverse, its registered gradient operator on what that
   declares it reads (grad_needs), its results added up per entry. */
static dp_result dpn__xb_gradients(dpn__xbuild *b, const dpn__graph *g, const dp_symbol *sym, const int *arg_entry, dp_ndarray *const *grads,
                                  const dp_req *req, int narg, dp_ndarray **head_grads) {
    unsigned char *need = (unsigned char *)dpn__zalloc(b->eng, (size_t)(g->nentries ? g->nentries : 1), 1);
    int i, j, k;
    dp_result r = DP_ERROR_OUT_OF_MEMORY;
    if (!need) return dpn__exec_oom(b->eng, "dp_exec_bind");
    for (i = 0; i < narg; i++) need[arg_entry[i]] = grads[i] && req[i] != DP_REQ_NULL;
    for (i = 0; i < g->n; i++) {
        const dpn__snode *x = g->node[i];
        int any = 0;
        for (j = 0; x->op && j < x->nin; j++) any |= need[dpn__graph_entry(g, &x->in[j])];
        for (j = 0; x->op && j < x->nout; j++) need[g->entry0[i] + j] = (unsigned char)any;
    }
    for (i = 0; i < sym->n; i++) {                   /* the head gradients: ones, unless the caller writes them */
        int e = dpn__graph_entry(g, &sym->out[i]), h;
        if (!need[e]) continue;
        if ((h = dpn__xb_own(b, &b->ent[e].shape, b->ent[e].dtype, 1.0)) < 0 || dpn__xb_contribute(b, e, h)) goto oom;
        head_grads[i] = dp_nd_retain(b->ent[h].array);
    }
    for (i = g->n; i-- > 0;) {
        const dpn__snode *x = g->node[i];
        const dp_operator *gop;
        dpn__xnode *gx;
        int e0 = g->entry0[i], og[DP_MAX_OP_ARRAYS], nin = 0;
        unsigned needs;
        if (!x->op || !need[e0]) continue;
        needs = x->op->grad_needs;
        if (!x->op->gradient || (gop = dp_operator_find(x->op->gradient)) == NULL) {
            DPN__LOG(b->eng, DP_LOG_ERROR, ND_ARGS, "dp_exec_bind: node '%s' (%s) has no gradient operator, and it lies between an output and "
                    "an argument with a gradient", x->name, x->op->name);
            r = DP_ERROR_INVALID_ARGS;
            goto fail;
        }
        for (j = 0; (needs & DP_GRAD_OUT_GRADS) && j < x->nout; j++) {
            og[j] = dpn__xb_sum(b, e0 + j, -1, DP_REQ_WRITE);
            if (og[j] == -2) goto oom;
            if (og[j] == -1 && (og[j] = dpn__xb_own(b, &b->ent[e0 + j].shape, b->ent[e0 + j].dtype, 0.0)) < 0) goto oom;
        }
        if ((gx = dpn__xb_node(b, gop, x)) == NULL) goto oom;
        if (needs & DP_GRAD_OUT_GRADS) for (j = 0; j < x->nout; j++) gx->in[nin++] = og[j];
        if (needs & DP_GRAD_INPUTS) for (j = 0; j < x->nin; j++) gx->in[nin++] = dpn__graph_entry(g, &x->in[j]);
        if (needs & DP_GRAD_OUTPUTS) for (j = 0; j < x->nout; j++) gx->in[nin++] = e0 + j;
        gx->nin = nin; gx->nout = x->nin;
        if (nin > DP_MAX_OP_ARRAYS || dp_operator_arity(gop, &x->params, gop->num_inputs) != nin || dp_operator_arity(gop, &x->params, gop->num_outputs) != x->nin) {
            DPN__LOG(b->eng, DP_LOG_ERROR, ND_ARGS, "dp_exec_bind: node '%s': gradient operator '%s' does not take what '%s' declares it reads "
                    "(%d inputs, %d outputs)", x->name, gop->name, x->op->name, nin, x->nin);
            r = DP_ERROR_INVALID_ARGS;
            goto fail;
        }
        for (j = 0; j < x->nin; j++) {
            int fe = dpn__graph_entry(g, &x->in[j]), e = dpn__xb_entry(b, &b->ent[fe].shape, b->ent[fe].dtype);
            if (e < 0) goto oom;
            dpn__xb_set_out(b, gx, j, e, need[fe] ? DP_REQ_WRITE : DP_REQ_NULL);
            if (need[fe] && dpn__xb_contribute(b, fe, e)) goto oom;
        }
    }
    for (i = 0; i < narg; i++) {                     /* into the caller's gradient arrays */
        int dst, fe = arg_entry[i];
        if (!need[fe]) continue;
        for (k = 0; k < i && arg_entry[k] != fe; k++) {}
        if (k < i) continue;                         /* an argument listed once per variable node */
        if ((dst = dpn__xb_entry(b, &b->ent[fe].shape, b->ent[fe].dtype)) < 0) goto oom;
        b->ent[dst].external = 1; b->ent[dst].array = dp_nd_retain(grads[i]);
        if (dpn__xb_sum(b, fe, dst, req[i]) == -2) goto oom;
    }
    dpn__zfree(b->eng, need);
    return DP_OK;
oom:
    r = dpn__exec_oom(b->eng, "dp_exec_bind: the gradient graph");
fail:
    dpn__zfree(b->eng, need);
    return r;
}
/* Fusion (the EXECUTOR comment): the kernel of a producer that takes a
   fused operator, NULL for none; whether op is an element-wise operator
   that can be fused (its kernel run over blocks of its input in place,
   which its inplace bit allows). */
typedef int (*dpn__fused_fn)(const dp_kernel_ctx *, const dpn__post *);
static dpn__fused_fn dpn__fuse_producer(const dp_operator *op) {
    if (op->forward_cpu == dpn__k_fc) return dpn__fc_run;
    if (op->forward_cpu == dpn__k_conv) return dpn__conv_fwd;
    return NULL;
}
static int dpn__fuse_elementwise(const dp_operator *op) {
    static const char *const names[4] = {"relu", "sigmoid", "tanh", "Activation"};
    int i;
    for (i = 0; i < 4; i++) if (!strcmp(op->name, names[i])) return op->inplace & 1u && op->forward_cpu;
    return 0;
}
/* The blocks a fused operator runs over, from node x's output shape s
   alone: FullyConnected's rows of about DPN__PAR_GRAIN elements,
   Convolution's images. Sets the rows (images) in all, the rows a block
   and the elements a row; returns the number of blocks. */
#define DPN__FUSE_MAX_BLOCKS (1 << 16)
static int64_t dpn__post_layout(const dpn__xnode *x, const dp_shape *s, int64_t *rows, int64_t *per, int64_t *len) {
    int64_t n = dp_shape_size(s);
    if (x->op->forward_cpu == dpn__k_fc) {
        *len = x->src->params.v[0].i;
        *rows = *len > 0 ? n / *len : 0;
        *per = DPN__PAR_GRAIN / *len > 1 ? DPN__PAR_GRAIN / *len : 1;
    } else {
        *rows = s->ndim ? s->dims[0] : 0;
        *len = *rows > 0 ? n / *rows : 0;
        *per = 1;
    }
    return (*rows + *per - 1) / *per;
}
/* Fuses every forward element-wise node whose input only it reads, in
   the whole execution list (the backward pass included), into the node
   that writes that input, and drops it from the list. Returns how many,
   -1 out of memory. */
static int dpn__xb_fuse(dpn__xbuild *b) {
    int *reads = (int *)dpn__zalloc(b->eng, (size_t)(b->nent ? b->nent : 1), sizeof *reads);
    int i, j, k, nf = 0, fused = 0;
    if (!reads) return -1;
    for (i = 0; i < b->nnode; i++) for (j = 0; j < b->node[i].nin; j++) reads[b->node[i].in[j]]++;
    for (i = 0; i < b->nfwd; i++) {
        dpn__xnode *a = &b->node[i], *p;
        int pre, out;
        if (a->nin != 1 || a->nout != 1 || a->req[0] != DP_REQ_WRITE || !dpn__fuse_elementwise(a->op)) continue;
        pre = a->in[0]; out = a->out[0];
        if (b->ent[pre].producer < 0 || b->ent[pre].producer >= b->nfwd || reads[pre] != 1 || b->ent[pre].external) continue;
        p = &b->node[b->ent[pre].producer];
        if (p->dropped || p->post_op || p->nout != 1 || p->req[0] != DP_REQ_WRITE || !dpn__fuse_producer(p->op)) continue;
        if (b->ent[pre].dtype != b->ent[out].dtype || dp_shape_size(&b->ent[pre].shape) != dp_shape_size(&b->ent[out].shape)) continue;
        {
            int64_t rows, per, len;
            if (dpn__post_layout(p, &b->ent[pre].shape, &rows, &per, &len) > DPN__FUSE_MAX_BLOCKS) continue;   /* a view a block */
        }
        p->out[0] = out; p->post_op = a->op; p->post_src = a->src; a->dropped = 1;
        b->ent[out].producer = b->ent[pre].producer; b->ent[pre].producer = -1;   /* pre: no bytes in the plan */
        fused++;
    }
    for (i = k = 0; i < b->nnode; i++) {
        if (b->node[i].dropped) continue;
        nf += i < b->nfwd;
        if (k != i) b->node[k] = b->node[i];
        k++;
    }
    b->nnode = k; b->nfwd = nf;
    for (i = 0; i < b->nent; i++) b->ent[i].producer = -1;
    for (i = 0; i < b->nnode; i++) for (j = 0; j < b->node[i].nout; j++) { b->ent[b->node[i].out[j]].producer = i; b->ent[b->node[i].out[j]].prod_out = j; }
    dpn__zfree(b->eng, reads);
    return fused;
}
/* The fused operator of node x, whose output array is out: its blocks
   (dpn__post_layout), views of out made here. NULL out of memory. */
static dpn__post *dpn__xb_post(dpn__xbuild *b, const dpn__xnode *x, dp_ndarray *out) {
    int64_t h, rows, i;
    size_t elem = dp_dtype_size(dp_nd_dtype(out));
    int nblocks = (int)dpn__post_layout(x, dp_nd_shape(out), &rows, &i, &h), k;   /* at most DPN__FUSE_MAX_BLOCKS: dpn__xb_fuse */
    dpn__post *p;
    if ((p = (dpn__post *)dp_engine_alloc(b->eng, dpn__post_bytes(nblocks))) == NULL) return NULL;
    memset(p, 0, dpn__post_bytes(nblocks));
    p->fn = x->post_op->forward_cpu; p->params = x->post_src->params; p->scalar = x->post_src->scalar; p->per = i;
    p->blocks = (dp_ndarray **)(void *)(p + 1); p->status = (int *)(void *)(p->blocks + nblocks); p->nblocks = nblocks;
    for (k = 0; k < nblocks; k++) {                  /* blocks not made yet are NULL for dpn__post_free */
        int64_t r0 = (int64_t)k * p->per, r1 = r0 + p->per < rows ? r0 + p->per : rows;
        dp_shape v;
        memset(&v, 0, sizeof v);
        v.ndim = 1; v.dims[0] = (r1 - r0) * h;
        if (dp_nd_view(out, &v, dp_nd_dtype(out), (size_t)(r0 * h) * elem, &p->blocks[k]) != DP_OK) { dpn__post_free(b->eng, p); return NULL; }
    }
    return p;
}
/* Overlapping planned entries share one borrowed chunk of the arena. */
typedef struct dpn__xspan { int64_t off; int e; } dpn__xspan;
static int dpn__xspan_cmp(const void *a, const void *b) {
    int64_t x = ((const dpn__xspan *)a)->off, y = ((const dpn__xspan *)b)->off;
    return x < y ? -1 : x > y;
}
/* Arrays for the planned entries: views into the arena at their offsets. */
static dp_result dpn__xb_place(dpn__xbuild *b, const int64_t *offset, const size_t *bytes, size_t arena_bytes) {
    dp_ndarray *arena = NULL, *base = NULL;
    dpn__xspan *span = (dpn__xspan *)dpn__zalloc(b->eng, (size_t)(b->nent ? b->nent : 1), sizeof *span);
    dp_shape s;
    int n = 0, i;
    int64_t start = 0, end = -1;
    dp_result r = DP_OK;
    if (!span) return dpn__exec_oom(b->eng, "dp_exec_bind: placing entries");
    for (i = 0; i < b->nent; i++) if (offset[i] >= 0 && bytes[i]) { span[n].off = offset[i]; span[n].e = i; n++; }
    qsort(span, (size_t)n, sizeof *span, dpn__xspan_cmp);
    memset(&s, 0, sizeof s);
    s.ndim = 1; s.dims[0] = (int64_t)arena_bytes;
    if (n && (r = dp_nd_empty(b->eng, &s, DP_UINT8, b->ctx, &arena)) != DP_OK) goto done;
    for (i = 0; i < b->nent; i++)                   /* empty entries: no bytes to place */
        if (offset[i] >= 0 && !bytes[i] && (r = dp_nd_empty(b->eng, &b->ent[i].shape, b->ent[i].dtype, b->ctx, &b->ent[i].array)) != DP_OK) goto done;
    for (i = 0; i < n; i++) {
        int k, e;
        if (span[i].off < end) continue;             /* placed with its class */
        start = span[i].off; end = start + (int64_t)bytes[span[i].e];
        for (k = i + 1; k < n && span[k].off < end; k++)
            if (span[k].off + (int64_t)bytes[span[k].e] > end) end = span[k].off + (int64_t)bytes[span[k].e];
        if ((r = dp_nd_borrow(arena, (size_t)start, (size_t)(end - start), &base)) != DP_OK) goto done;
        for (k = i; k < n && span[k].off < end; k++) {
            e = span[k].e;
            if ((r = dp_nd_view(base, &b->ent[e].shape, b->ent[e].dtype, (size_t)(span[k].off - start), &b->ent[e].array)) != DP_OK) goto done;
        }
        dp_nd_release(base); base = NULL;
    }
done:
    dp_nd_release(base);
    dp_nd_release(arena);
    dpn__zfree(b->eng, span);
    return r;
}
/* Runs the planner on the execution list and checks what it returns. */
static dp_result dpn__xb_plan(dpn__xbuild *b, int64_t *offset, size_t *bytes, dp_exec_memory *mem) {
    dpn__plan_node *pn = (dpn__plan_node *)dpn__zalloc(b->eng, (size_t)(b->nnode ? b->nnode : 1), sizeof *pn);
    unsigned char *ext = (unsigned char *)dpn__zalloc(b->eng, (size_t)(b->nent ? b->nent : 1), 1);
    size_t arena = 0, unplanned = 0;
    dp_result r;
    int i;
    if (!pn || !ext) { dpn__zfree(b->eng, pn); dpn__zfree(b->eng, ext); return dpn__exec_oom(b->eng, "dp_exec_bind: the memory plan"); }
    for (i = 0; i < b->nent; i++) {
        const dpn__xent *x = &b->ent[i];
        int orphan = !x->external && x->producer < 0;   /* a result redirected into a gradient array */
        bytes[i] = orphan ? 0 : (size_t)dp_shape_size(&x->shape) * dp_dtype_size(x->dtype);
        ext[i] = x->external || orphan;
        if (x->external) mem->external_bytes += bytes[i];
    }
    for (i = 0; i < b->nnode; i++) {
        pn[i].num_inputs = b->node[i].nin; pn[i].inputs = b->node[i].in;
        pn[i].num_outputs = b->node[i].nout; pn[i].outputs = b->node[i].out;
        pn[i].inplace = b->node[i].op->inplace;
    }
    r = (dpn__exec_planner ? dpn__exec_planner : dpn__plan_memory)(b->nent, bytes, ext, b->nnode, pn, offset, &arena, &unplanned);
    for (i = 0; r == DP_OK && i < b->nent; i++)
        if (!ext[i] && (offset[i] < 0 || offset[i] % 64 || (uint64_t)offset[i] + bytes[i] > arena)) {
            DPN__LOG(b->eng, DP_LOG_ERROR, ND_ARGS, "dp_exec_bind: the memory plan put entry %d (%zu bytes) at %lld of an arena of %zu", i,
                    bytes[i], (long long)offset[i], arena);
            r = DP_ERROR_INVALID_ARGS;
        }
    for (i = 0; i < b->nent; i++) if (ext[i]) offset[i] = -1;
    mem->planned_bytes = arena; mem->unplanned_bytes = unplanned;
    dpn__zfree(b->eng, pn); dpn__zfree(b->eng, ext);
    return r;
}
/* After placing: output 0 on its input's bytes (allowed by the operator)
   is written in place. */
static void dpn__xb_mark_inplace(dpn__xbuild *b, const int64_t *offset) {
    int i, j;
    for (i = 0; i < b->nnode; i++) {
        dpn__xnode *x = &b->node[i];
        for (j = 0; j < x->nin && j < 32 && x->req[0] == DP_REQ_WRITE && offset[x->out[0]] >= 0; j++)
            if ((x->op->inplace & (1u << j)) && offset[x->in[j]] == offset[x->out[0]]) x->req[0] = DP_REQ_INPLACE;
    }
}
/* The index of an operator's "is_train" parameter (BatchNorm, Dropout),
   -1 when it has none. */
static int dpn__is_train_param(const dp_operator *op) {
    int i;
    for (i = 0; i < op->num_params; i++) if (!strcmp(op->params[i].name, "is_train") && op->params[i].type == DP_PARAM_BOOL) return i;
    return -1;
}
/* One pre-created operation for node x; with an "is_train" parameter, it
   is set to train. */
static dp_result dpn__xb_op(dpn__xbuild *b, const dpn__xnode *x, int train, dp_opr *out) {
    int it = dpn__is_train_param(x->op);
    size_t bytes = sizeof(dpn__xrun) + (size_t)(x->nin + x->nout) * sizeof(dp_ndarray *);
    dpn__xrun *run;
    dp_var reads[3 * DP_MAX_OP_ARRAYS], writes[2 * DP_MAX_OP_ARRAYS + 2];
    dp_push_desc d;
    int i, nw = 0;
    dp_kernel_fn kernel = b->ctx.dev_type == DP_DEV_GPU ? x->op->forward_gpu : x->op->forward_cpu;
    if (!kernel) {
        DPN__LOG(b->eng, DP_LOG_ERROR, BAD_CONTEXT, "dp_exec_bind: operator '%s' has no kernel for %s", x->op->name, b->ctx.dev_type == DP_DEV_GPU ? "GPUs" : "the CPU");
        return DP_ERROR_BAD_CONTEXT;
    }
    if ((run = (dpn__xrun *)dp_engine_alloc(b->eng, bytes)) == NULL) return dpn__exec_oom(b->eng, "dp_exec_bind: an operation");
    memset(run, 0, bytes);
    run->eng = b->eng; run->bytes = bytes; run->kernel = kernel;
    if (x->src) { run->params = x->src->params; run->scalar = x->src->scalar; }
    if (it >= 0 && it < run->params.count) run->params.v[it].i = train;
    if (x->post_op) {
        run->fused = dpn__fuse_producer(x->op);
        if ((run->post = dpn__xb_post(b, x, b->ent[x->out[0]].array)) == NULL) {
            dp_engine_free(b->eng, run, bytes);
            return dpn__exec_oom(b->eng, "dp_exec_bind: a fused operation");
        }
    }
    run->nin = x->nin; run->nout = x->nout;
    run->arrays = (dp_ndarray **)(void *)(run + 1);
    for (i = 0; i < x->nin; i++) {
        run->arrays[i] = dp_nd_retain(b->ent[x->in[i]].array);
        reads[i] = dp_nd_var(run->arrays[i]);
        if (i < 32 && (x->op->mutate_inputs & (1u << i))) writes[nw++] = reads[i];
    }
    for (i = 0; i < x->nout; i++) {
        run->arrays[x->nin + i] = dp_nd_retain(b->ent[x->out[i]].array);
        run->req[i] = x->req[i];
        writes[nw++] = dp_nd_var(run->arrays[x->nin + i]);
    }
    if (x->op->resources & DP_RESOURCE_RANDOM) writes[nw++] = dp_random_var(b->eng, b->ctx);
    if (x->op->resources & DP_RESOURCE_TEMP) writes[nw++] = dp_temp_space_var(b->eng, b->ctx);
    memset(&d, 0, sizeof d);
    d.fn = dpn__xrun_fn; d.arg = run; d.cleanup = dpn__xrun_free;
    d.reads = reads; d.num_reads = x->nin; d.writes = writes; d.num_writes = nw;
    d.ctx = b->ctx; d.name = x->op->name;
    *out = dp_opr_create(b->eng, &d);                 /* on failure it ran the cleanup */
    return out->id ? DP_OK : DP_ERROR_OUT_OF_MEMORY;
}
static void dpn__xb_free(dpn__xbuild *b) {
    int i;
    for (i = 0; i < b->nent; i++) dp_nd_release(b->ent[i].array);
    dp_engine_free(b->eng, b->ent, b->capent * sizeof *b->ent);
    dp_engine_free(b->eng, b->node, b->capnode * sizeof *b->node);
    dp_engine_free(b->eng, b->cont, b->capcont * sizeof *b->cont);
}
DPN_IMPL void dp_exec_destroy(dp_executor *ex) {
    int i;
    if (!ex) return;
    for (i = 0; i < ex->nfwd + ex->nbwd; i++) if (ex->ops[i].id) dp_opr_destroy(ex->eng, ex->ops[i]);
    for (i = 0; ex->train_ops && i < ex->nfwd; i++) if (ex->train_ops[i].id) dp_opr_destroy(ex->eng, ex->train_ops[i]);
    for (i = 0; i < ex->nout; i++) {   /* a bind that ran out of memory may not have made these */
        if (ex->outputs) dp_nd_release(ex->outputs[i]);
        if (ex->head_grads) dp_nd_release(ex->head_grads[i]);
    }
    for (i = 0; ex->aux && i < ex->naux; i++) dp_nd_release(ex->aux[i]);
    dpn__zfree(ex->eng, ex->aux);
    dpn__zfree(ex->eng, ex->ops); dpn__zfree(ex->eng, ex->train_ops); dpn__zfree(ex->eng, ex->outputs); dpn__zfree(ex->eng, ex->head_grads); dpn__zfree(ex->eng, ex->grad_req);
    dp_sym_release(ex->sym);
    dpn__zfree(ex->eng, ex);
}
/* Checks bind's arrays against the graph's arguments; logs what is wrong. */
static dp_result dpn__exec_check(dp_engine *eng, const dpn__graph *g, dp_ctx ctx, int narg, dp_ndarray *const *args,
                                dp_ndarray *const *grads, const dp_req *req) {
    char s1[160], s2[160];
    int i;
    for (i = 0; i < narg; i++) {
        const char *name = g->node[g->arg[i]]->name;
        if (!args[i] || dp_nd_engine(args[i]) != eng || !dpn__same_ctx(dp_nd_ctx(args[i]), ctx)) {
            DPN__LOG(eng, DP_LOG_ERROR, ND_ARGS, "dp_exec_bind: %s '%s' is NULL, of another engine or on another device",
                     g->aux[g->arg[i]] ? "auxiliary state" : "argument", name);
            return DP_ERROR_INVALID_ARGS;
        }
        if (req && (req[i] < DP_REQ_NULL || req[i] > DP_REQ_ADD || req[i] == DP_REQ_INPLACE)) {
            DPN__LOG(eng, DP_LOG_ERROR, ND_ARGS, "dp_exec_bind: the gradient request of '%s' must be DP_REQ_NULL, DP_REQ_WRITE or DP_REQ_ADD", name);
            return DP_ERROR_INVALID_ARGS;
        }
        if (grads && grads[i] && (!req || req[i] != DP_REQ_NULL)) {
            const dp_shape *a = dp_nd_shape(args[i]), *gs = dp_nd_shape(grads[i]);
            if (dp_nd_engine(grads[i]) != eng || !dpn__same_ctx(dp_nd_ctx(grads[i]), ctx) || dp_nd_dtype(grads[i]) != dp_nd_dtype(args[i])
                || a->ndim != gs->ndim || memcmp(a->dims, gs->dims, sizeof(int64_t) * (size_t)a->ndim) != 0) {
                DPN__LOG(eng, DP_LOG_ERROR, ND_ARGS, "dp_exec_bind: the gradient of '%s' is %s %s, the argument %s %s (same engine and device too)", name,
                        dp_dtype_name(dp_nd_dtype(grads[i])), dpn__shape_str(gs, s1, sizeof s1), dp_dtype_name(dp_nd_dtype(args[i])), dpn__shape_str(a, s2, sizeof s2));
                return DP_ERROR_INVALID_ARGS;
            }
        }
    }
    return DP_OK;
}
static dp_result dpn__exec_bind(dp_engine *eng, const dp_symbol *sym, dp_ctx ctx, int num_args, dp_ndarray *const *args,
                                dp_ndarray *const *grads, const dp_req *grad_reqs, int num_aux, dp_ndarray *const *aux, int no_fusion,
                                dp_executor **out);
DPN_IMPL dp_result dp_exec_bind(dp_engine *eng, const dp_symbol *sym, const dp_exec_desc *desc, dp_executor **out) {
    static const dp_exec_desc none = {{DP_DEV_CPU, 0}, 0, NULL, NULL, NULL, 0, NULL, 0};
    const dp_exec_desc *d = desc ? desc : &none;
    dp_nn_register();
    return dpn__exec_bind(eng, sym, d->ctx, d->num_args, d->args, d->grads, d->grad_reqs, d->num_aux, d->aux, d->no_fusion, out);
}
/* args and aux (the caller's order) as one list over the graph's
   variables, with the gradients and requests of the arguments (none for
   an auxiliary state); 0, or -1 (logged) for counts that do not fit. */
static int dpn__exec_vars(dp_engine *eng, const dpn__graph *g, int num_args, dp_ndarray *const *args, dp_ndarray *const *grads,
                          const dp_req *grad_reqs, int num_aux, dp_ndarray *const *aux, dp_ndarray **vargs, dp_ndarray **vgrads, dp_req *vreq) {
    int i, na = 0, nx = 0;
    if (num_args != g->narg - g->naux || num_aux != g->naux || (num_args && !args) || (num_aux && !aux)) {
        DPN__LOG(eng, DP_LOG_ERROR, ND_ARGS, "dp_exec_bind: %d arguments and %d auxiliary states given, the symbol has %d and %d "
                 "(dp_sym_list_arguments, dp_sym_list_auxiliary_states)", num_args, num_aux, g->narg - g->naux, g->naux);
        return -1;
    }
    for (i = 0; i < g->narg; i++) {
        if (g->aux[g->arg[i]]) { vargs[i] = aux[nx++]; vgrads[i] = NULL; vreq[i] = DP_REQ_NULL; continue; }
        vargs[i] = args[na]; vgrads[i] = grads ? grads[na] : NULL;
        vreq[i] = grad_reqs ? grad_reqs[na] : DP_REQ_WRITE;
        na++;
    }
    return 0;
}
static dp_result dpn__exec_bind(dp_engine *eng, const dp_symbol *sym, dp_ctx ctx, int num_args, dp_ndarray *const *args_in,
                                dp_ndarray *const *grads_in, const dp_req *grad_reqs, int num_aux, dp_ndarray *const *aux, int no_fusion,
                                dp_executor **out) {
    dpn__graph g;
    dpn__xbuild b;
    dp_executor *ex = NULL;
    dp_shape *shape = NULL;
    dp_dtype *dtype = NULL;
    unsigned char *known = NULL;
    int64_t *offset = NULL;
    size_t *bytes = NULL;
    dp_ndarray **args = NULL, **grads = NULL;
    dp_req *vreq = NULL, *req = NULL;
    int *arg_entry = NULL, i, j, with_grads = 0;
    dp_result r;
    if (out) *out = NULL;
    if (!eng || !sym || !out) { DPN__LOG(eng, DP_LOG_ERROR, NULL_ARGUMENT, "dp_exec_bind: an engine, a symbol and out are needed"); return DP_ERROR_INVALID_ARGS; }
    if ((r = dp_nd_check_ctx(eng, &ctx, "dp_exec_bind")) != DP_OK) return r;
    if ((r = dpn__graph_build(sym, &g)) != DP_OK) return r;
    memset(&b, 0, sizeof b);
    b.eng = eng; b.ctx = ctx;
    args = (dp_ndarray **)dpn__zalloc(eng, (size_t)(g.narg ? g.narg : 1), sizeof *args);
    grads = (dp_ndarray **)dpn__zalloc(eng, (size_t)(g.narg ? g.narg : 1), sizeof *grads);
    vreq = (dp_req *)dpn__zalloc(eng, (size_t)(g.narg ? g.narg : 1), sizeof *vreq);
    req = (dp_req *)dpn__zalloc(eng, (size_t)(g.narg ? g.narg : 1), sizeof *req);
    if (!args || !grads || !vreq || !req) goto oom;
    r = DP_ERROR_INVALID_ARGS;
    if (dpn__exec_vars(eng, &g, num_args, args_in, grads_in, grad_reqs, num_aux, aux, args, grads, vreq)) goto done;
    if ((r = dpn__exec_check(eng, &g, ctx, g.narg, args, grads_in ? grads : NULL, vreq)) != DP_OK) goto done;
    r = DP_ERROR_OUT_OF_MEMORY;
    shape = (dp_shape *)dpn__zalloc(eng, (size_t)(g.nentries ? g.nentries : 1), sizeof *shape);
    dtype = (dp_dtype *)dpn__zalloc(eng, (size_t)(g.nentries ? g.nentries : 1), sizeof *dtype);
    known = (unsigned char *)dpn__zalloc(eng, (size_t)(g.nentries ? g.nentries : 1), 1);
    arg_entry = (int *)dpn__zalloc(eng, (size_t)(g.narg ? g.narg : 1), sizeof *arg_entry);
    ex = (dp_executor *)dpn__zalloc(eng, 1, sizeof *ex);
    if (ex) { ex->eng = eng; ex->ctx = ctx; ex->narg = g.narg - g.naux; ex->nout = sym->n; ex->no_fusion = no_fusion; }   /* eng first: dp_exec_destroy frees with it */
    if (!shape || !dtype || !known || !arg_entry || !ex) goto oom;
    ex->grad_req = (dp_req *)dpn__zalloc(eng, (size_t)(g.narg ? g.narg : 1), sizeof *ex->grad_req);
    ex->aux = (dp_ndarray **)dpn__zalloc(eng, (size_t)(g.naux ? g.naux : 1), sizeof *ex->aux);
    ex->outputs = (dp_ndarray **)dpn__zalloc(eng, (size_t)sym->n, sizeof *ex->outputs);
    ex->head_grads = (dp_ndarray **)dpn__zalloc(eng, (size_t)sym->n, sizeof *ex->head_grads);
    if (!ex->grad_req || !ex->aux || !ex->outputs || !ex->head_grads) goto oom;
    for (i = j = 0; i < g.narg; i++) {
        arg_entry[i] = g.entry0[g.arg[i]];
        shape[arg_entry[i]] = *dp_nd_shape(args[i]); dtype[arg_entry[i]] = dp_nd_dtype(args[i]); known[arg_entry[i]] = 1;
        req[i] = grads[i] ? vreq[i] : DP_REQ_NULL;
        with_grads |= req[i] != DP_REQ_NULL;
        if (g.aux[g.arg[i]]) ex->aux[ex->naux++] = dp_nd_retain(args[i]);
        else ex->grad_req[j++] = req[i];
    }
    if ((r = dpn__graph_infer(&g, shape, dtype, known)) != DP_OK) goto done;
    r = DP_ERROR_OUT_OF_MEMORY;
    for (i = 0; i < g.nentries; i++) if (dpn__xb_entry(&b, &shape[i], dtype[i]) < 0) goto oom;
    for (i = 0; i < g.narg; i++) { b.ent[arg_entry[i]].external = 1; if (!b.ent[arg_entry[i]].array) b.ent[arg_entry[i]].array = dp_nd_retain(args[i]); }
    for (i = 0; i < sym->n; i++) {                   /* the outputs: arrays of their own */
        dpn__xent *e = &b.ent[dpn__graph_entry(&g, &sym->out[i])];
        if (!e->external && dp_nd_empty(eng, &e->shape, e->dtype, ctx, &e->array) != DP_OK) goto oom;
        e->external = 1;
        ex->outputs[i] = dp_nd_retain(e->array);
    }
    for (i = 0; i < g.n; i++) {                      /* the forward nodes */
        const dpn__snode *x = g.node[i];
        dpn__xnode *xn;
        if (!x->op) continue;
        if ((xn = dpn__xb_node(&b, x->op, x)) == NULL) goto oom;
        xn->nin = x->nin; xn->nout = x->nout;
        for (j = 0; j < x->nin; j++) xn->in[j] = dpn__graph_entry(&g, &x->in[j]);
        for (j = 0; j < x->nout; j++) dpn__xb_set_out(&b, xn, j, g.entry0[i] + j, DP_REQ_WRITE);
    }
    b.nfwd = b.nnode;
    if (with_grads && (r = dpn__xb_gradients(&b, &g, sym, arg_entry, grads, req, g.narg, ex->head_grads)) != DP_OK) goto done;
    r = DP_ERROR_OUT_OF_MEMORY;
    if (!no_fusion && ctx.dev_type == DP_DEV_CPU && (ex->mem.num_fused = dpn__xb_fuse(&b)) < 0) goto oom;
    offset = (int64_t *)dpn__zalloc(eng, (size_t)(b.nent ? b.nent : 1), sizeof *offset);
    bytes = (size_t *)dpn__zalloc(eng, (size_t)(b.nent ? b.nent : 1), sizeof *bytes);
    if (!offset || !bytes) goto oom;
    if ((r = dpn__xb_plan(&b, offset, bytes, &ex->mem)) != DP_OK || (r = dpn__xb_place(&b, offset, bytes, ex->mem.planned_bytes)) != DP_OK) goto done;
    dpn__xb_mark_inplace(&b, offset);
    ex->mem.num_nodes = b.nnode; ex->mem.num_entries = b.nent;
    if ((ex->ops = (dp_opr *)dpn__zalloc(eng, (size_t)(b.nnode ? b.nnode : 1), sizeof *ex->ops)) == NULL
        || (ex->train_ops = (dp_opr *)dpn__zalloc(eng, (size_t)(b.nfwd ? b.nfwd : 1), sizeof *ex->train_ops)) == NULL) goto oom;
    ex->nfwd = b.nfwd; ex->nbwd = b.nnode - b.nfwd;
    /* forward nodes in inference, and those with "is_train" in training
       too; backward nodes as after a training forward */
    for (i = 0; i < b.nnode; i++) if ((r = dpn__xb_op(&b, &b.node[i], i >= b.nfwd, &ex->ops[i])) != DP_OK) goto done;
    for (i = 0; i < b.nfwd; i++)
        if (dpn__is_train_param(b.node[i].op) >= 0 && (r = dpn__xb_op(&b, &b.node[i], 1, &ex->train_ops[i])) != DP_OK) goto done;
    ex->sym = dp_sym_retain((dp_symbol *)(uintptr_t)sym);
    *out = ex;
    ex = NULL;
    r = DP_OK;
    goto done;
oom:
    r = dpn__exec_oom(eng, "dp_exec_bind");
done:
    dp_exec_destroy(ex);
    dpn__xb_free(&b);
    dpn__zfree(eng, shape); dpn__zfree(eng, dtype); dpn__zfree(eng, known); dpn__zfree(eng, arg_entry); dpn__zfree(eng, offset); dpn__zfree(eng, bytes);
    dpn__zfree(eng, args); dpn__zfree(eng, grads); dpn__zfree(eng, vreq); dpn__zfree(eng, req);
    dpn__graph_free(&g);
    return r;
}
DPN_IMPL dp_result dp_exec_rebind(dp_executor *ex, int num_args, dp_ndarray *const *args, dp_ndarray *const *grads, dp_executor **out) {
    if (out) *out = NULL;
    if (!ex || !out) { DPN__LOG(ex ? ex->eng : NULL, DP_LOG_ERROR, NULL_ARGUMENT, "dp_exec_rebind: an executor and out are needed"); return DP_ERROR_INVALID_ARGS; }
    return dpn__exec_bind(ex->eng, ex->sym, ex->ctx, num_args, args, grads, ex->grad_req, ex->naux, ex->aux, ex->no_fusion, out);
}
DPN_IMPL dp_result dp_exec_forward(dp_executor *ex, int is_train) {
    int i;
    dp_result r;
    if (!ex) { DPN__LOG(NULL, DP_LOG_ERROR, NULL_ARGUMENT, "dp_exec_forward: NULL executor"); return DP_ERROR_INVALID_ARGS; }
    for (i = 0; i < ex->nfwd; i++)
        if ((r = dp_opr_push(ex->eng, is_train && ex->train_ops[i].id ? ex->train_ops[i] : ex->ops[i], ex->ctx, 0)) != DP_OK) return r;
    return DP_OK;
}
DPN_IMPL dp_result dp_exec_backward(dp_executor *ex, int num_head_grads, dp_ndarray *const *head_grads) {
    int i;
    dp_result r;
    if (!ex || num_head_grads < 0 || num_head_grads > ex->nout || (num_head_grads && !head_grads)) {
        DPN__LOG(ex ? ex->eng : NULL, DP_LOG_ERROR, NULL_ARGUMENT, "dp_exec_backward: an executor and up to one head gradient per output are needed");
        return DP_ERROR_INVALID_ARGS;
    }
    if (!ex->nbwd) { DPN__LOG(ex->eng, DP_LOG_ERROR, ND_ARGS, "dp_exec_backward: the executor was bound without gradients"); return DP_ERROR_INVALID_ARGS; }
    for (i = 0; i < num_head_grads; i++) {
        if (!head_grads[i] || !ex->head_grads[i]) continue;
        dp_invoke_desc d;
        memset(&d, 0, sizeof d);
        d.op = "_copy"; d.inputs[0] = head_grads[i]; d.outputs[0] = ex->head_grads[i];
        if ((r = dp_invoke(ex->eng, &d, NULL)) != DP_OK) return r;
    }
    for (i = ex->nfwd; i < ex->nfwd + ex->nbwd; i++) if ((r = dp_opr_push(ex->eng, ex->ops[i], ex->ctx, 0)) != DP_OK) return r;
    return DP_OK;
}
DPN_IMPL int dp_exec_num_outputs(const dp_executor *ex) { return ex ? ex->nout : 0; }
DPN_IMPL dp_ndarray *dp_exec_output(const dp_executor *ex, int index) { return ex && index >= 0 && index < ex->nout ? ex->outputs[index] : NULL; }
DPN_IMPL dp_ndarray *dp_exec_head_grad(const dp_executor *ex, int index) { return ex && index >= 0 && index < ex->nout ? ex->head_grads[index] : NULL; }
DPN_IMPL dp_result dp_exec_memory_get(const dp_executor *ex, dp_exec_memory *out) {
    if (!ex || !out) { DPN__LOG(ex ? ex->eng : NULL, DP_LOG_ERROR, NULL_ARGUMENT, "dp_exec_memory_get: an executor and out are needed"); return DP_ERROR_INVALID_ARGS; }
    *out = ex->mem;
    return DP_OK;
}

/* >>kvstore: keys, their stored arrays, and the ops of a push and a pull ---
   Every op below frees its argument through desc.cleanup, so a skipped op
   (failed input) frees it too and passes the failure on by being skipped:
   the merge buffer, the stored array and the pulled arrays carry it. */
#define DPN__KV_MAX_STATES 4
typedef struct dpn__kv_entry {
    int key;
    dp_ndarray *stored, *merged;
    dp_ndarray *state[DPN__KV_MAX_STATES];   /* the optimizer's, zeros at first */
    int nstates;
} dpn__kv_entry;
struct dp_kvstore {
    dp_engine *eng;
    dp_kvstore_desc desc;
    dpn__kv_entry *entries;       /* sorted by key */
    int count, cap;
    dp_kv_updater_fn updater;
    void *updater_user;
    const dp_operator *opt;      /* an optimizer update operator, or NULL */
    dp_params opt_params;
};

static dpn__kv_entry *dpn__kv_find(dp_kvstore *kv, int key) {
    int lo = 0, hi = kv->count;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (kv->entries[mid].key < key) lo = mid + 1; else hi = mid;
    }
    return lo < kv->count && kv->entries[lo].key == key ? &kv->entries[lo] : NULL;
}
/* a's engine, shape and dtype are the key's; logs the mismatch */
static int dpn__kv_same(dp_kvstore *kv, const char *what, int key, const dp_ndarray *a, const dpn__kv_entry *e) {
    char s1[160], s2[160];
    if (!a) { DPN__LOG(kv->eng, DP_LOG_ERROR, ND_ARGS, "%s key %d: NULL array", what, key); return 0; }
    if (dp_nd_engine(a) != kv->eng) { DPN__LOG(kv->eng, DP_LOG_ERROR, ND_ARGS, "%s key %d: an array of another engine", what, key); return 0; }
    if (dp_nd_dtype(a) != dp_nd_dtype(e->stored) || (*dp_nd_shape(a)).ndim != (*dp_nd_shape(e->stored)).ndim
        || memcmp((*dp_nd_shape(a)).dims, (*dp_nd_shape(e->stored)).dims, sizeof(int64_t) * (size_t)(*dp_nd_shape(a)).ndim) != 0) {
        DPN__LOG(kv->eng, DP_LOG_ERROR, ND_ARGS, "%s key %d: %s %s, the key holds %s %s", what, key, dp_dtype_name(dp_nd_dtype(a)),
                dpn__shape_str(dp_nd_shape(a), s1, sizeof s1), dp_dtype_name(dp_nd_dtype(e->stored)), dpn__shape_str(dp_nd_shape(e->stored), s2, sizeof s2));
        return 0;
    }
    return 1;
}
static dp_kvstore *dpn__kv_checked(dp_kvstore *kv, const char *what) {
    if (!kv) DPN__LOG(NULL, DP_LOG_ERROR, NULL_ARGUMENT, "%s: NULL store", what);
    return kv;
}

DPN_IMPL dp_result dp_kv_create(dp_engine *eng, const dp_kvstore_desc *desc, dp_kvstore **out) {
    dp_nn_register();
    dp_kvstore *kv;
    dp_kvstore_desc d;
    dp_result r;
    if (out) *out = NULL;
    if (!eng || !out) { DPN__LOG(eng, DP_LOG_ERROR, NULL_ARGUMENT, "dp_kv_create: NULL engine or out"); return DP_ERROR_INVALID_ARGS; }
    memset(&d, 0, sizeof d);
    if (desc) d = *desc;
    if ((r = dp_nd_check_ctx(eng, &d.ctx, "dp_kv_create")) != DP_OK) return r;
    if (d.ctx.dev_type != DP_DEV_CPU && d.ctx.dev_type != DP_DEV_CPU_PINNED) {
        DPN__LOG(eng, DP_LOG_ERROR, BAD_CONTEXT, "dp_kv_create: the store reduces on the CPU; its context must be a CPU one");
        return DP_ERROR_BAD_CONTEXT;
    }
    if ((kv = (dp_kvstore *)dp_engine_alloc(eng, sizeof *kv)) == NULL) { DPN__LOG(eng, DP_LOG_ERROR, OUT_OF_MEMORY, "dp_kv_create"); return DP_ERROR_OUT_OF_MEMORY; }
    memset(kv, 0, sizeof *kv);
    kv->eng = eng;
    kv->desc = d;
    *out = kv;
    return DP_OK;
}
static void dpn__kv_entry_release(dpn__kv_entry *e) {
    int i;
    dp_nd_release(e->stored); dp_nd_release(e->merged);
    for (i = 0; i < e->nstates; i++) dp_nd_release(e->state[i]);
    e->stored = e->merged = NULL;
    e->nstates = 0;
}
DPN_IMPL void dp_kv_destroy(dp_kvstore *kv) {
    int i;
    if (!kv) return;
    for (i = 0; i < kv->count; i++) dpn__kv_entry_release(&kv->entries[i]);
    dp_engine_free(kv->eng, kv->entries, sizeof *kv->entries * (size_t)kv->cap);
    dp_engine_free(kv->eng, kv, sizeof *kv);
}
/* Every failure is decided before the global initialisation, which every
   process reaches (a process that returned early would leave the others
   waiting for it); after it nothing can fail. */
DPN_IMPL dp_result dp_kv_init(dp_kvstore *kv, int key, dp_ndarray *value) {
    dpn__kv_entry e, *at;
    dp_result r = DP_OK;
    int pos;
    if (!dpn__kv_checked(kv, "dp_kv_init")) return DP_ERROR_INVALID_ARGS;
    memset(&e, 0, sizeof e);
    e.key = key;
    if (!value || dp_nd_engine(value) != kv->eng || dpn__kv_find(kv, key)) {
        DPN__LOG(kv->eng, DP_LOG_ERROR, ND_ARGS, "dp_kv_init key %d: %s", key, !value ? "NULL array" : dpn__kv_find(kv, key) ? "initialised already" : "an array of another engine");
        r = DP_ERROR_INVALID_ARGS;
    } else if (kv->count == kv->cap) {
        int cap = kv->cap ? 2 * kv->cap : 8;
        dpn__kv_entry *grown = (dpn__kv_entry *)dpn__realloc(kv->eng, kv->entries, sizeof *grown * (size_t)kv->cap, sizeof *grown * (size_t)cap);
        if (!grown) { DPN__LOG(kv->eng, DP_LOG_ERROR, OUT_OF_MEMORY, "dp_kv_init key %d", key); r = DP_ERROR_OUT_OF_MEMORY; }
        else { kv->entries = grown; kv->cap = cap; }
    }
    if (r == DP_OK && ((r = dp_nd_copy_to(value, kv->desc.ctx, &e.stored)) != DP_OK
                       || (r = dp_nd_empty(kv->eng, dp_nd_shape(value), dp_nd_dtype(value), kv->desc.ctx, &e.merged)) != DP_OK))
        dpn__kv_entry_release(&e);
    if (kv->desc.global_init) {
        dp_result g = kv->desc.global_init(kv, key, r == DP_OK ? e.stored : NULL, r, kv->desc.global_user);
        if (r == DP_OK && g != DP_OK) { dpn__kv_entry_release(&e); r = g; }
    }
    if (r != DP_OK) return r;
    for (pos = kv->count; pos > 0 && kv->entries[pos - 1].key > key; pos--) kv->entries[pos] = kv->entries[pos - 1];
    at = &kv->entries[pos];
    *at = e;
    kv->count++;
    return DP_OK;
}
DPN_IMPL dp_result dp_kv_set_updater(dp_kvstore *kv, dp_kv_updater_fn fn, void *user) {
    if (!dpn__kv_checked(kv, "dp_kv_set_updater")) return DP_ERROR_INVALID_ARGS;
    kv->updater = fn; kv->updater_user = user;
    kv->opt = NULL;
    return DP_OK;
}
/* An update operator the store can run: (weight, gradient, states...) in,
   the weight out, exactly the states mutated, a CPU kernel, no resources. */
static int dpn__kv_usable_optimizer(const dp_operator *op) {
    int nstates = op->num_inputs - 2;
    return nstates >= 0 && nstates <= DPN__KV_MAX_STATES && op->num_outputs == 1 && op->forward_cpu && !op->resources
        && !op->takes_scalar && op->mutate_inputs == ((1u << nstates) - 1u) << 2;
}
DPN_IMPL dp_result dp_kv_set_optimizer(dp_kvstore *kv, const dp_optimizer_desc *desc) {
    const char *op_name = desc && desc->update ? desc->update : "sgd_update";
    const dp_operator *op;
    dp_params p;
    dp_result r;
    if (!dpn__kv_checked(kv, "dp_kv_set_optimizer")) return DP_ERROR_INVALID_ARGS;
    if (!desc) { DPN__LOG(kv->eng, DP_LOG_ERROR, NULL_ARGUMENT, "dp_kv_set_optimizer: NULL desc"); return DP_ERROR_INVALID_ARGS; }
    op = dp_operator_find(op_name);
    if (!op || !dpn__kv_usable_optimizer(op)) {
        DPN__LOG(kv->eng, DP_LOG_ERROR, ND_ARGS, "dp_kv_set_optimizer: '%s' is %s", op_name ? op_name : "(NULL)",
                op ? "not an update (weight, gradient, mutated states...) -> weight with a CPU kernel" : "not a registered operator");
        return DP_ERROR_INVALID_ARGS;
    }
    if ((r = dp_operator_parse_params(kv->eng, op, desc->params, &p)) != DP_OK) return r;
    kv->opt = op; kv->opt_params = p;
    kv->updater = NULL; kv->updater_user = NULL;
    return DP_OK;
}

/* merged = src[0] + src[1] + ... in that order, element by element */
typedef struct dpn__kv_sum_arg {
    dp_engine *eng;
    dp_ndarray *dst;
    dp_ndarray **src;
    int n;          /* sources held so far */
    int cap;        /* sources allocated for: the size it is freed with */
} dpn__kv_sum_arg;
static size_t dpn__kv_sum_arg_size(int n) { return sizeof(dpn__kv_sum_arg) + (size_t)n * (sizeof(dp_ndarray *) + sizeof(dp_var)); }
static void dpn__kv_sum_free(void *arg) {
    dpn__kv_sum_arg *s = (dpn__kv_sum_arg *)arg;
    int i;
    for (i = 0; i < s->n; i++) dp_nd_release(s->src[i]);
    dp_nd_release(s->dst);
    dp_engine_free(s->eng, s, dpn__kv_sum_arg_size(s->cap));
}
#define DPN__KV_SUM(T) do { \
        T *y = (T *)dp_nd_data(s->dst); \
        for (k = 1; k < s->n; k++) { const T *x = (const T *)dp_nd_data(s->src[k]); for (i = 0; i < n; i++) y[i] = (T)(y[i] + x[i]); } \
    } while (0)
static int dpn__kv_sum_op(dp_run_ctx *rc, void *arg) {
    dpn__kv_sum_arg *s = (dpn__kv_sum_arg *)arg;
    int64_t i, n = dp_shape_size(dp_nd_shape(s->dst));
    int k;
    (void)rc;
    if (dp_nd_data(s->dst) != dp_nd_data(s->src[0])) memcpy(dp_nd_data(s->dst), dp_nd_data(s->src[0]), dp_nd_bytes(s->dst));
    switch (dp_nd_dtype(s->dst)) {
    case DP_FLOAT32: DPN__KV_SUM(float); break;
    case DP_FLOAT64: DPN__KV_SUM(double); break;
    case DP_INT32: DPN__KV_SUM(int32_t); break;
    case DP_INT64: DPN__KV_SUM(int64_t); break;
    default: DPN__KV_SUM(uint8_t); break;     /* wraps, as NumPy's uint8 sum does */
    }
    return 0;
}
#undef DPN__KV_SUM
/* The ops of the store run on the CPU priority pool, highest priority first. */
static void dpn__kv_desc(dp_kvstore *kv, dp_push_desc *d, const char *name, int priority) {
    memset(d, 0, sizeof *d);
    d->ctx = kv->desc.ctx; d->prop = DP_PROP_CPU_PRIORITIZED; d->priority = priority; d->name = name;
}
/* Pushes merged = sum of values; a GPU value is first copied to the store. */
static dp_result dpn__kv_push_sum(dp_kvstore *kv, dpn__kv_entry *e, dp_ndarray *const *values, int count, int priority) {
    dpn__kv_sum_arg *s = (dpn__kv_sum_arg *)dp_engine_alloc(kv->eng, dpn__kv_sum_arg_size(count));
    dp_var *reads, merged;
    dp_push_desc d;
    dp_result r = DP_OK;
    int i;
    if (!s) { DPN__LOG(kv->eng, DP_LOG_ERROR, OUT_OF_MEMORY, "dp_kv_push key %d", e->key); return DP_ERROR_OUT_OF_MEMORY; }
    s->eng = kv->eng; s->n = 0; s->cap = count;
    s->src = (dp_ndarray **)(void *)(s + 1);
    reads = (dp_var *)(void *)(s->src + count);
    s->dst = dp_nd_retain(e->merged);
    for (i = 0; i < count && r == DP_OK; i++) {
        if (dp_nd_ctx(values[i]).dev_type == DP_DEV_GPU) r = dp_nd_copy_to(values[i], kv->desc.ctx, &s->src[i]);
        else s->src[i] = dp_nd_retain(values[i]);
        if (r == DP_OK) { reads[i] = dp_nd_var(s->src[i]); s->n++; }
    }
    if (r != DP_OK) { dpn__kv_sum_free(s); return r; }
    dpn__kv_desc(kv, &d, "kvstore_sum", priority);
    d.fn = dpn__kv_sum_op; d.arg = s; d.cleanup = dpn__kv_sum_free;
    merged = dp_nd_var(e->merged);
    d.reads = reads; d.num_reads = count; d.writes = &merged; d.num_writes = 1;
    return dp_push(kv->eng, &d);     /* refused: the cleanup has freed s */
}
/* dst = src by one op: dp_nd_copy_to's, on a GPU's copy queue when dst is
   there, else on the store's priority pool */
static dp_result dpn__kv_push_copy(dp_kvstore *kv, dp_ndarray *src, dp_ndarray *dst, int priority) {
    dp_push_desc d;
    dpn__kv_desc(kv, &d, "kvstore_copy", priority);
    if (dp_nd_ctx(dst).dev_type == DP_DEV_GPU) { d.ctx = dp_nd_ctx(dst); d.prop = DP_PROP_COPY_TO_GPU; }
    return dp_nd_copy_into(src, dst, &d);
}
/* stored = op(stored, merged, states...): the optimizer's kernel in one op */
typedef struct dpn__kv_update_arg {
    dp_engine *eng;
    const dp_operator *op;
    dp_params params;
    dp_ndarray *in[2 + DPN__KV_MAX_STATES];
    int nin;
} dpn__kv_update_arg;
static void dpn__kv_update_free(void *arg) {
    dpn__kv_update_arg *u = (dpn__kv_update_arg *)arg;
    int i;
    for (i = 0; i < u->nin; i++) dp_nd_release(u->in[i]);
    dp_engine_free(u->eng, u, sizeof *u);
}
static int dpn__kv_update_op(dp_run_ctx *rc, void *arg) {
    dpn__kv_update_arg *u = (dpn__kv_update_arg *)arg;
    dp_req req = DP_REQ_WRITE;
    dp_kernel_ctx k;
    memset(&k, 0, sizeof k);
    k.rc = rc; k.params = &u->params; k.num_inputs = u->nin; k.num_outputs = 1;
    k.inputs = u->in; k.outputs = u->in; k.req = &req;     /* output 0 is the weight, input 0 */
    return u->op->forward_cpu(&k);
}
/* The key's optimizer states, zeros of its shape, made on first use. */
static dp_result dpn__kv_states(dp_kvstore *kv, dpn__kv_entry *e, int nstates) {
    dp_result r;
    if (e->nstates == nstates) return DP_OK;
    while (e->nstates > 0) dp_nd_release(e->state[--e->nstates]);
    for (; e->nstates < nstates; e->nstates++)
        if ((r = dp_nd_zeros(kv->eng, dp_nd_shape(e->stored), dp_nd_dtype(e->stored), kv->desc.ctx, &e->state[e->nstates])) != DP_OK) return r;
    return DP_OK;
}
static dp_result dpn__kv_push_optimizer(dp_kvstore *kv, dpn__kv_entry *e, int priority) {
    int i, nstates = kv->opt->num_inputs - 2;
    dpn__kv_update_arg *u;
    dp_var writes[1 + DPN__KV_MAX_STATES], merged;
    dp_push_desc d;
    dp_result r;
    if ((r = dpn__kv_states(kv, e, nstates)) != DP_OK) return r;
    if ((u = (dpn__kv_update_arg *)dp_engine_alloc(kv->eng, sizeof *u)) == NULL) { DPN__LOG(kv->eng, DP_LOG_ERROR, OUT_OF_MEMORY, "dp_kv_push key %d", e->key); return DP_ERROR_OUT_OF_MEMORY; }
    u->eng = kv->eng; u->op = kv->opt; u->params = kv->opt_params; u->nin = 2 + nstates;
    u->in[0] = dp_nd_retain(e->stored); u->in[1] = dp_nd_retain(e->merged);
    writes[0] = dp_nd_var(e->stored);
    for (i = 0; i < nstates; i++) { u->in[2 + i] = dp_nd_retain(e->state[i]); writes[1 + i] = dp_nd_var(e->state[i]); }
    dpn__kv_desc(kv, &d, kv->opt->name, priority);
    d.fn = dpn__kv_update_op; d.arg = u; d.cleanup = dpn__kv_update_free;
    merged = dp_nd_var(e->merged);
    d.reads = &merged; d.num_reads = 1; d.writes = writes; d.num_writes = 1 + nstates;
    return dp_push(kv->eng, &d);
}
DPN_IMPL dp_result dp_kv_push(dp_kvstore *kv, int key, dp_ndarray *const *values, int count, int priority) {
    dpn__kv_entry *e;
    dp_result r;
    int i;
    if (!dpn__kv_checked(kv, "dp_kv_push")) return DP_ERROR_INVALID_ARGS;
    if ((e = dpn__kv_find(kv, key)) == NULL || !values || count < 1) {
        DPN__LOG(kv->eng, DP_LOG_ERROR, ND_ARGS, "dp_kv_push key %d: %s", key, !e ? "not initialised (dp_kv_init)" : "no values (NULL, or count < 1)");
        return DP_ERROR_INVALID_ARGS;
    }
    for (i = 0; i < count; i++) if (!dpn__kv_same(kv, "dp_kv_push", key, values[i], e)) return DP_ERROR_INVALID_ARGS;
    if ((r = dpn__kv_push_sum(kv, e, values, count, priority)) != DP_OK) return r;
    if (kv->desc.global_reduce && (r = kv->desc.global_reduce(kv, key, e->merged, priority, kv->desc.global_user)) != DP_OK) return r;
    if (kv->opt) return dpn__kv_push_optimizer(kv, e, priority);
    if (kv->updater) return kv->updater(kv, key, e->merged, e->stored, priority, kv->updater_user);
    return dpn__kv_push_copy(kv, e->merged, e->stored, priority);
}
DPN_IMPL dp_result dp_kv_pull(dp_kvstore *kv, int key, dp_ndarray *const *outs, int count, int priority) {
    dpn__kv_entry *e;
    dp_result r;
    int i;
    if (!dpn__kv_checked(kv, "dp_kv_pull")) return DP_ERROR_INVALID_ARGS;
    if ((e = dpn__kv_find(kv, key)) == NULL || !outs || count < 1) {
        DPN__LOG(kv->eng, DP_LOG_ERROR, ND_ARGS, "dp_kv_pull key %d: %s", key, !e ? "not initialised (dp_kv_init)" : "no outputs (NULL, or count < 1)");
        return DP_ERROR_INVALID_ARGS;
    }
    for (i = 0; i < count; i++) if (!dpn__kv_same(kv, "dp_kv_pull", key, outs[i], e)) return DP_ERROR_INVALID_ARGS;
    for (i = 0; i < count; i++) {
        if (dp_nd_same_storage(outs[i], e->stored) && dp_nd_data(outs[i]) == dp_nd_data(e->stored)) continue;   /* the stored array itself */
        if ((r = dpn__kv_push_copy(kv, e->stored, outs[i], priority)) != DP_OK) return r;
    }
    return DP_OK;
}
DPN_IMPL dp_ndarray *dp_kv_stored(dp_kvstore *kv, int key) {
    dpn__kv_entry *e = kv ? dpn__kv_find(kv, key) : NULL;
    return e ? e->stored : NULL;
}


#ifdef __cplusplus
}
#endif
#endif /* DEPENG_NN_IMPLEMENTATION */
