# depeng — make demo (run the examples), make test (every test), make tsan,
# make asan, make faults (allocation-failure injection), make bench (depeng
# against its peers; make bench-deps installs StarPU first), make cuda /
# make cuda-test (depeng_cuda.h; needs nvcc), make install / make uninstall
# (PREFIX, DESTDIR), make clean. tests/README.md maps the tests.
CC      ?= cc
CFLAGS  ?= -O2 -g
WARN    := -std=c11 -Wall -Wextra -pedantic -Werror
CXXWARN := -std=c++17 -Wall -Wextra -pedantic -Werror
B       := build
LIBS    := -pthread -lm
# What every program's implementation is compiled from: a change to one
# rebuilds everything (depeng_nn.h's implementation goes in the same
# translation unit as depeng.h's, tests/impl/depeng_impl.c).
HEADERS := depeng.h depeng_nn.h

# Every core by default, so that a plain `make test` or `make demo` compiles
# side by side; an explicit -j (-j1 included) wins. tests/run.sh's summary is
# still the last line: it is the last recipe of `test`. Only the top-level
# make decides: a sub-make ($(MAKE) windows-build) shares its jobs.
ifeq ($(MAKELEVEL)$(filter -j%,$(MAKEFLAGS)),0)
MAKEFLAGS += -j$(shell nproc 2>/dev/null || echo 1)
endif
# no built-in implicit rules: every program below has its own rule
MAKEFLAGS += -r
.SUFFIXES:

.PHONY: all test demo tsan asan faults compile-checks compile-checks-engine-only bench bench-deps bench-build bench-scale bench-proto bench-gemm bench-kernels bench-layers bench-train bench-train-smoke clean

# ---- the implementation, compiled once per configuration ------------------
# tests/impl/depeng_impl.c is depeng.h's implementation alone. build/impl/
# <cfg>.o is that file compiled by COMPILE_<cfg>; each program of that
# configuration is compiled by the same command, includes depeng.h for its
# declarations only, and links the object (instead of every program
# compiling the 14,000 lines again, as it used to: 40 times for make test).
SAN := -fsanitize=address,undefined -fno-sanitize-recover=undefined
COMPILE_c             = $(CC) $(WARN) $(CFLAGS)
COMPILE_pthreads      = $(CC) $(WARN) $(CFLAGS) -DDEPENG_USE_PTHREADS
COMPILE_cxx           = g++ -x c++ $(CXXWARN) $(CFLAGS)
# the engine alone (no array half; -lm only for the test's own fenv calls)
COMPILE_no_ndarray    = $(CC) $(WARN) $(CFLAGS) -DDEPENG_NO_NDARRAY
# ThreadSanitizer does not support C11 thrd_create (SEGV, gcc 12 / clang 14),
# so the sanitizer build uses the pthreads path.
COMPILE_tsan          = clang $(WARN) -O1 -g -fsanitize=thread -DDEPENG_USE_PTHREADS
COMPILE_asan          = clang $(WARN) -O1 -g $(SAN)
COMPILE_asan_pthreads = clang $(WARN) -O1 -g $(SAN) -DDEPENG_USE_PTHREADS
# the benchmarks' own object: their flags, and no test hook in the scheduler
COMPILE_bench         = $(CC) $(BENCH_CFLAGS) -DDEPENG_IMPL_NO_TEST_HOOK
IMPL_SRC := tests/impl/depeng_impl.c tests/impl/test_hook.h $(HEADERS)
$(B)/impl/%.o: $(IMPL_SRC) | $(B)/impl
	$(COMPILE_$*) -I. -c $< -o $@
$(B) $(B)/impl:
	mkdir -p $@

# ---- the tests --------------------------------------------------------------
# TESTS: every test program make test runs (tests/run.sh sums their
# "N passed, M failed" lines). A name says how it is built: test_X_<cfg> is
# tests/test_X.c in configuration <cfg> (pthreads, cxx, no_ndarray, tsan,
# asan, asan_pthreads); a name without such a suffix is tests/<name>.c in the
# default configuration (c), unless CFG_<name> or SRC_<name> say otherwise.
# Adding a test: add tests/test_X.c and its name here; CMakeLists.txt reads
# this list too.
TESTS := test_layers test_norm test_data test_train test_engine test_scheduling test_stealing test_range test_engine_pthreads test_wall_clock test_affinity \
         test_engine_cxx test_engine_no_ndarray test_ndarray test_ndarray_cxx \
         test_autograd test_autograd_cxx test_memory_plan test_symbol make_parse \
         test_files test_inflate_zlib test_kernels_exact test_invoke test_kvstore test_kvstore_cxx \
         test_frame test_frame_pthreads test_gemm test_gemm_cxx test_par_kernels
# the check scripts make test runs after them (each prints its own
# "name: N passed, M failed" line), and the programs the scripts run
CHECKS := tests/walkthrough_check.sh tests/make_check.sh tests/make_vs_gnu.sh tests/make_corpus.sh tests/readme_check.sh \
          tests/examples_check.sh tests/cblas_check.sh tests/bench_check.sh tests/chrome_trace_check.sh \
          tests/html_check.sh tests/engine_only_check.sh tests/header_lists_check.sh tests/consumer_check.sh \
          tests/standalone_check.sh tests/numpy_diff_check.sh tests/torch_diff_check.sh tests/operators_doc_check.sh \
          tests/layering_check.sh tests/trace_page_check.sh tests/api_docs_check.sh tests/readme_toc_check.sh
EXAMPLES := walkthrough make_example make_page ndarray_example custom_op_example train_digits train_fashion
CHECK_PROGRAMS := $(EXAMPLES) chrome_trace html_pages numpy_diff torch_diff operators_doc
# under the sanitizers (make tsan, make asan): the unit tests, and
# examples/make.c run by examples/make_demo/check.sh
TSAN_TESTS := $(addsuffix _tsan,test_layers test_norm test_par_kernels test_data test_train test_engine test_range test_ndarray test_autograd test_scheduling test_symbol test_kvstore test_stealing test_frame test_gemm)
ASAN_TESTS := $(addsuffix _asan,test_layers test_norm test_par_kernels test_data test_train test_engine test_range test_ndarray test_autograd test_memory_plan test_scheduling test_symbol \
                                 test_files test_invoke test_kvstore test_kernels_exact make_parse test_frame test_gemm) \
              test_engine_asan_pthreads test_stealing_asan_pthreads

# White-box programs: they read the implementation's private (static) dp__
# functions and types, so they include the implementation themselves (with
# DEPENG_IMPLEMENTATION) and link no object; each is one more compile of
# the header, in each configuration it is built in.
#   test_stealing       the per-worker deques (dp__deque_push/pop/steal)
#   test_memory_plan    the executor's memory planner (dp__plan_memory)
#   test_symbol         binds with a planner of its own (dp__exec_planner)
#   test_files          hand-made deflate streams (dp__bw_put, dp__inflate)
#   test_inflate_zlib   the inflater and deflater against zlib
#   test_kernels_exact  float16 conversions (dp__half_from_float, ...)
#   numpy_diff          stores results by dtype (dp__store_elem)
#   test_gemm           the portable GEMM kernel on any CPU (dp__gemm2_*), the updates' reference (dp__opt_step)
#   fuzz_npz, fuzz_inflate  CRC and inflater (dp__crc, dp__inflate)
WHITEBOX := test_stealing test_memory_plan test_symbol test_files test_inflate_zlib test_kernels_exact \
            test_gemm numpy_diff fuzz_npz fuzz_inflate

# the programs whose source is not tests/<name>.c, and their extra flags
SRC_walkthrough       := examples/walkthrough.c
SRC_make_example      := examples/make.c
SRC_make_page         := examples/make_page.c
SRC_ndarray_example   := examples/ndarray.c
SRC_custom_op_example := examples/custom_op.c
SRC_train_digits      := examples/train_digits.c
SRC_train_fashion     := examples/train_fashion.c
SRC_operators_doc     := tools/operators_doc.c
FLAGS_make_parse      := -DMAKE_NO_MAIN
# timed waits on the pthreads path keep their length when the wall clock is
# set back (Linux: the test replaces clock_gettime, which the object's calls
# then reach too)
CFG_test_wall_clock   := pthreads
# allocation-failure injection runs under ASan + UBSan (make faults)
CFG_faults            := asan
# the header's inflater and deflater against zlib, linked for this test only
# (tests/zlib_deps.sh installs zlib1g-dev when it is missing)
LIBS_test_inflate_zlib := -lz

# a program's configuration: CFG_<name>, else the suffix its name ends with
# (the longest first), else c; its base name is the name less that suffix
SUFFIX_CFGS := asan_pthreads no_ndarray pthreads tsan asan cxx
cfg_of  = $(or $(CFG_$(1)),$(firstword $(foreach c,$(SUFFIX_CFGS),$(if $(filter %_$(c),$(1)),$(c)))),c)
base_of = $(if $(CFG_$(1)),$(1),$(patsubst %_$(call cfg_of,$(1)),%,$(1)))
src_of  = $(or $(SRC_$(1)),tests/$(1).c)
white   = $(filter $(1),$(WHITEBOX))
TEST_DEPS := tests/test_common.h tests/test_calls.h tests/impl/test_hook.h tests/kv_digits.h $(HEADERS)
# One rule per program, all from this recipe: the configuration's compiler,
# then (unless white-box) DEPENG_EXAMPLE_SEPARATE_IMPL, which keeps an
# example's own DEPENG_IMPLEMENTATION out, and the object (-x none: g++ -x
# c++ would read the object as C++ source).
define PROGRAM_RULE
$(B)/$(1): $(call src_of,$(call base_of,$(1))) $(if $(call white,$(call base_of,$(1))),,$(B)/impl/$(call cfg_of,$(1)).o) $(TEST_DEPS) | $(B)
	$$(COMPILE_$(call cfg_of,$(1))) $(FLAGS_$(call base_of,$(1))) $(if $(call white,$(call base_of,$(1))),,-DDEPENG_EXAMPLE_SEPARATE_IMPL) -I. $$< $(if $(call white,$(call base_of,$(1))),,-x none $(B)/impl/$(call cfg_of,$(1)).o) -o $$@ $$(LIBS) $(LIBS_$(call base_of,$(1)))
endef
PROGRAMS := $(sort $(TESTS) $(CHECK_PROGRAMS) $(TSAN_TESTS) $(ASAN_TESTS) make_example_tsan make_example_asan numpy_diff_asan torch_diff_asan faults)
$(foreach p,$(PROGRAMS),$(eval $(call PROGRAM_RULE,$(p))))
$(B)/make_parse $(B)/make_parse_asan $(B)/make_example_tsan $(B)/make_example_asan: examples/make.c
$(B)/train_fashion: examples/fashion_nets.h
$(B)/test_inflate_zlib: | zlib-deps
.PHONY: zlib-deps
zlib-deps:
	@tests/zlib_deps.sh

all: $(addprefix $(B)/,$(TESTS) $(EXAMPLES))

# warning-free as C11 on gcc and clang and as C++ (g++ -x c++); one file
# each, so that make -j compiles them side by side
COMPILE_CHECKS := $(addprefix $(B)/,c_gcc.o c_clang.o c_pthreads.o cxx.o c_static.o invoke_cxx11.o invoke_cxx17.o c_static_clang.o)
COMPILE_CHECKS_EO := $(addprefix $(B)/,eo_gcc.o eo_clang.o eo_pthreads.o eo_cxx.o eo_static.o)
compile-checks: $(COMPILE_CHECKS) compile-checks-engine-only
$(B)/c_gcc.o: tests/compile/depeng_impl.c $(HEADERS) | $(B)
	gcc   $(WARN) -Wstrict-prototypes -I. -c $< -o $@
$(B)/c_clang.o: tests/compile/depeng_impl.c $(HEADERS) | $(B)
	clang $(WARN) -Wstrict-prototypes -I. -c $< -o $@
$(B)/c_pthreads.o: tests/compile/depeng_impl.c $(HEADERS) | $(B)
	gcc   $(WARN) -DDEPENG_USE_PTHREADS -I. -c $< -o $@
$(B)/cxx.o: tests/compile/depeng_impl.c $(HEADERS) | $(B)
	g++ -x c++ $(CXXWARN) -I. -c $< -o $@
$(B)/c_static.o: tests/compile/depeng_static.c $(HEADERS) | $(B)
	gcc   $(WARN) -I. -c $< -o $@
$(B)/invoke_cxx11.o: tests/compile/invoke_cxx.cpp $(HEADERS) | $(B)
	g++ -x c++ -std=c++11 -Wall -Wextra -pedantic -Werror -I. -c $< -o $@
$(B)/invoke_cxx17.o: tests/compile/invoke_cxx.cpp $(HEADERS) | $(B)
	g++ -x c++ $(CXXWARN) -I. -c $< -o $@
$(B)/c_static_clang.o: tests/compile/depeng_static.c $(HEADERS) | $(B)
	clang $(WARN) -I. -c $< -o $@
# the engine alone (DEPENG_NO_NDARRAY), the same ways, and static
compile-checks-engine-only: $(COMPILE_CHECKS_EO)
$(B)/eo_gcc.o: tests/compile/depeng_engine_only.c $(HEADERS) | $(B)
	gcc   $(WARN) -Wstrict-prototypes -I. -c $< -o $@
$(B)/eo_clang.o: tests/compile/depeng_engine_only.c $(HEADERS) | $(B)
	clang $(WARN) -Wstrict-prototypes -I. -c $< -o $@
$(B)/eo_pthreads.o: tests/compile/depeng_engine_only.c $(HEADERS) | $(B)
	gcc   $(WARN) -DDEPENG_USE_PTHREADS -I. -c $< -o $@
$(B)/eo_cxx.o: tests/compile/depeng_engine_only.c $(HEADERS) | $(B)
	g++ -x c++ $(CXXWARN) -I. -c $< -o $@
$(B)/eo_static.o: tests/compile/depeng_engine_only.c $(HEADERS) | $(B)
	gcc   $(WARN) -DDEPENG_STATIC -I. -c $< -o $@

# RUN_JOBS: how many test programs tests/run.sh runs at a time (make test,
# tsan, asan): one per CPU unless given (RUN_JOBS=1 runs them one by one;
# each program's report is printed whole, in order, either way)
RUN_JOBS ?= $(shell nproc 2>/dev/null || echo 1)
# the longest checks (a minute or two each) start first: started last, one
# of them kept a single CPU busy after the rest were done. The engine-only
# check times one compile of each kind here (its bounds are loose; run it
# by hand for the median of three that README quotes).
SLOW_CHECKS := tests/make_corpus.sh tests/make_vs_gnu.sh tests/engine_only_check.sh tests/cblas_check.sh
test: compile-checks platform-checks $(addprefix $(B)/,$(TESTS) $(CHECK_PROGRAMS)) bench-build docs-check-build
	RUN_FIRST="$(SLOW_CHECKS)" ENGINE_CHECK_RUNS=1 tests/run.sh -j $(RUN_JOBS) $(addprefix $(B)/,$(TESTS)) $(CHECKS)

demo: $(addprefix $(B)/,$(EXAMPLES))
	./$(B)/walkthrough $(B)/walkthrough.dot $(B)/walkthrough.html
	./$(B)/make_example -j 2 --trace $(B)/make_trace.txt -C examples/make_demo
	./examples/make_demo/hello
	./$(B)/make_page $(B)/make_trace.txt $(B)/make.html "make -j 2 in examples/make_demo"
	./$(B)/make_example -C examples/make_demo clean
	./$(B)/ndarray_example $(B)/ndarray_example.npy
	./$(B)/custom_op_example
	./$(B)/train_digits
	@echo "the walkthrough's replay page: file://$(CURDIR)/$(B)/walkthrough.html (open it in a browser)"
	@echo "the make run's page (job slots over time): file://$(CURDIR)/$(B)/make.html"

# examples/train_fashion.c on Fashion-MNIST (Debian's dataset-fashion-mnist;
# tests/fashion_mnist_deps.sh installs it, and without it both targets say
# SKIP and succeed). train-fashion-check, for CI (a few minutes): LeNet for
# one epoch on the first 19,200 training images must reach 80% on the whole
# test set, its checkpoint reloaded to the same accuracy; then 200 MLP steps
# and 20 LeNet steps on the naive, pooled and per-device engines, in autograd
# and executor modes, must end with bitwise the same parameters.
# train-fashion: the full trainings README quotes (10 epochs each, both modes:
# LeNet's epoch is about 3 minutes of one core, so over an hour in all).
FASHION_MNIST := /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz
FASHION_SKIP   = echo "SKIP $@: Fashion-MNIST is not installed ($(FASHION_MNIST) is missing; tests/fashion_mnist_deps.sh installs Debian's dataset-fashion-mnist)"
.PHONY: train-fashion-check train-fashion
train-fashion-check: $(B)/train_fashion
	@if [ ! -f $(FASHION_MNIST) ]; then $(FASHION_SKIP); exit 0; fi; set -ex; \
	./$(B)/train_fashion --net lenet --epochs 1 --train-limit 19200 --min-accuracy 0.80 --checkpoint $(B)/fashion-lenet-check; \
	./$(B)/train_fashion --net mlp --check-bitwise 200; \
	./$(B)/train_fashion --net lenet --check-bitwise 20
train-fashion: $(B)/train_fashion
	@if [ ! -f $(FASHION_MNIST) ]; then $(FASHION_SKIP); exit 0; fi; set -ex; \
	for mode in autograd executor; do \
	  ./$(B)/train_fashion --net lenet --mode $$mode --min-accuracy 0.90 --checkpoint $(B)/fashion-lenet; \
	  ./$(B)/train_fashion --net mlp --mode $$mode --min-accuracy 0.87 --checkpoint $(B)/fashion-mlp; \
	done

tsan: $(addprefix $(B)/,$(TSAN_TESTS) make_example_tsan)
	TSAN_OPTIONS=halt_on_error=1 RUN_FIRST="$(B)/test_gemm_tsan $(B)/test_par_kernels_tsan" tests/run.sh -j $(RUN_JOBS) $(addprefix $(B)/,$(TSAN_TESTS))
	TSAN_OPTIONS=halt_on_error=1 examples/make_demo/check.sh $(B)/make_example_tsan
asan: $(addprefix $(B)/,$(ASAN_TESTS) make_example_asan numpy_diff_asan torch_diff_asan)
	RUN_FIRST="$(B)/test_gemm_asan $(B)/test_par_kernels_asan" tests/run.sh -j $(RUN_JOBS) $(addprefix $(B)/,$(ASAN_TESTS))
	examples/make_demo/check.sh $(B)/make_example_asan
	rm -rf $(B)/numpy_diff_asan.d && mkdir -p $(B)/numpy_diff_asan.d && ./$(B)/numpy_diff_asan $(B)/numpy_diff_asan.d 1 3
	rm -rf $(B)/torch_diff_asan.d && mkdir -p $(B)/torch_diff_asan.d && ./$(B)/torch_diff_asan $(B)/torch_diff_asan.d 1 200

# Allocation-failure injection (tests/faults.c): the allocator fails the k-th
# allocation (and, second mode, every one from the k-th on) for every k over
# a workload of the whole API, on all three engines, under ASan + UBSan +
# LeakSanitizer; each run in a child with a watchdog. .ci/run runs it. It
# links make asan's object (build/impl/asan.o). tests/run.sh runs the six
# sweeps (three kinds, two modes: six shorter jobs keep both CPUs busy to
# the end better than three) side by side (RUN_JOBS) and sums them.
faults: $(B)/faults
	ASAN_OPTIONS=detect_leaks=1 tests/run.sh -j $(RUN_JOBS) $(foreach k,pooled naive perdevice,"$(B)/faults $(k)/only" "$(B)/faults $(k)/from")

# ---- operator reference (docs/operators.md) --------------------------------
# tools/operators_doc.c prints the reference from the registry itself; make
# docs rewrites docs/operators.md with it, and tests/operators_doc_check.sh
# (run by make test) fails when the file differs from what it prints.
.PHONY: docs docs-check-build
docs-check-build: $(B)/operators_doc
docs: $(B)/operators_doc
	mkdir -p docs
	./$(B)/operators_doc > docs/operators.md

# ---- benchmark (bench/README.md) -----------------------------------------
# Every driver runs the workloads of bench/WORKLOADS.md with two
# worker threads; bench/run.sh prints the ratios. Peers that are not
# installed are reported as skipped, never dropped silently.
BENCH_CFLAGS := -std=c11 -O2 -g -I. -Wall -Wextra
STARPU_PC    := starpu-1.3
# the drivers that use depeng link build/impl/bench.o (tests/impl/depeng_impl.c
# with these flags); each defines DEPENG_IMPLEMENTATION when built alone
BENCH_IMPL    = -DDEPENG_EXAMPLE_SEPARATE_IMPL $< -x none $(B)/impl/bench.o
$(B)/bench_depeng: bench/depeng.c bench/common.h $(B)/impl/bench.o $(HEADERS) | $(B)
	$(CC) $(BENCH_CFLAGS) $(BENCH_IMPL) -o $@ $(LIBS)
# with OpenBLAS (make bench-deps) it also times CBLAS's sgemm as dot's reference
# the symbolic path: executor against autograd, per training step
$(B)/bench_symbolic: bench/symbolic.c bench/common.h $(B)/impl/bench.o $(HEADERS) | $(B)
	$(CC) $(BENCH_CFLAGS) $(BENCH_IMPL) -o $@ $(LIBS)
$(B)/bench_ndarray: bench/ndarray.c bench/common.h $(B)/impl/bench.o $(HEADERS) | $(B)
	@if pkg-config --exists openblas 2>/dev/null; then \
	  set -x; $(CC) $(BENCH_CFLAGS) -DBENCH_HAVE_CBLAS $$(pkg-config --cflags openblas) $(BENCH_IMPL) -o $@ $$(pkg-config --libs openblas) $(LIBS); \
	else set -x; $(CC) $(BENCH_CFLAGS) $(BENCH_IMPL) -o $@ $(LIBS); fi
$(B)/bench_seq: bench/seq.c bench/common.h | $(B)
	$(CC) $(BENCH_CFLAGS) $< -o $@ $(LIBS)
$(B)/bench_omp: bench/omp.c bench/common.h | $(B)
	gcc $(BENCH_CFLAGS) -fopenmp $< -o $@
# StarPU's driver is built only where its package is installed (bench-deps).
$(B)/bench_starpu: bench/starpu.c bench/common.h | $(B)
	@if pkg-config --exists $(STARPU_PC) 2>/dev/null; then \
	  set -x; $(CC) $(BENCH_CFLAGS) $< -o $@ $$(pkg-config --cflags --libs $(STARPU_PC)); \
	else echo "bench: $(STARPU_PC) not installed (make bench-deps); StarPU will be reported as skipped"; rm -f $@; fi
# oneTBB's driver (C++, g++ -ltbb) is built only where libtbb-dev is installed (bench-deps).
TBB_HEADER   := /usr/include/oneapi/tbb/task_group.h
$(B)/bench_tbb: bench/tbb.cpp bench/common.h | $(B)
	@if [ -f $(TBB_HEADER) ]; then \
	  set -x; g++ -std=c++17 -O2 -g -I. -Wall -Wextra $< -o $@ -ltbb -pthread; \
	else echo "bench: libtbb-dev not installed (make bench-deps); oneTBB will be reported as skipped"; rm -f $@; fi
# GPU completion (events against a synchronisation per op) on an emulated GPU
$(B)/bench_gpu_emul: bench/gpu_emul.c bench/common.h $(B)/impl/bench.o $(HEADERS) | $(B)
	$(CC) $(BENCH_CFLAGS) $(BENCH_IMPL) -o $@ $(LIBS)
bench-build: $(B)/bench_depeng $(B)/bench_seq $(B)/bench_omp $(B)/bench_starpu $(B)/bench_tbb $(B)/bench_ndarray $(B)/bench_gpu_emul $(B)/bench_symbolic
bench-deps:
	bench/deps.sh
# the GEMM against OpenBLAS and the optimizer updates against memcpy
# (bench/README.md, "GEMM and the kernels"); each driver includes the
# implementation itself (it times private loops), OpenBLAS where pkg-config
# finds it, else a named SKIP. BENCH_ROUNDS rounds, alternated.
BENCH_ROUNDS ?= 3
$(B)/bench_gemm: bench/gemm.c bench/common.h $(HEADERS) | $(B)
	@if pkg-config --exists openblas 2>/dev/null; then \
	  set -x; $(CC) $(BENCH_CFLAGS) -DBENCH_HAVE_CBLAS $$(pkg-config --cflags openblas) $< -o $@ $$(pkg-config --libs openblas) $(LIBS); \
	else set -x; $(CC) $(BENCH_CFLAGS) $< -o $@ $(LIBS); fi
$(B)/bench_kernels: bench/kernels.c bench/common.h $(HEADERS) | $(B)
	$(CC) $(BENCH_CFLAGS) $< -o $@ $(LIBS)
# training against PyTorch (bench/README.md, "Training against PyTorch"):
# bench_train on the benchmarks' object; bench_train_cblas with
# DEPENG_USE_CBLAS where OpenBLAS is installed (its own copy of the
# implementation, compiled alongside it with that macro), else not built
# and bench/train.sh says SKIP. BENCH_TRAIN_ARGS: e.g. --rounds 5, --quick.
$(B)/bench_train: bench/train.c bench/common.h examples/fashion_nets.h $(B)/impl/bench.o $(HEADERS) | $(B)
	$(CC) $(BENCH_CFLAGS) $(BENCH_IMPL) -o $@ $(LIBS)
$(B)/bench_train_cblas: bench/train.c bench/common.h examples/fashion_nets.h tests/impl/depeng_impl.c $(HEADERS) | $(B)
	@if pkg-config --exists openblas 2>/dev/null; then \
	  set -x; $(CC) $(BENCH_CFLAGS) -DDEPENG_IMPL_NO_TEST_HOOK -DDEPENG_USE_CBLAS -DDEPENG_EXAMPLE_SEPARATE_IMPL $$(pkg-config --cflags openblas) \
	    $< tests/impl/depeng_impl.c -o $@ $$(pkg-config --libs openblas) $(LIBS); \
	else echo "bench: OpenBLAS not installed (make bench-deps); the DEPENG_USE_CBLAS build will be reported as skipped"; rm -f $@; fi
BENCH_TRAIN_PROGRAMS := $(B)/bench_train $(B)/bench_train_cblas $(B)/bench_gemm $(B)/bench_kernels
bench-train: $(BENCH_TRAIN_PROGRAMS)
	bench/train.sh $(BENCH_TRAIN_ARGS)
# a few steps of each, the figures checked for sanity (CI; under a minute)
bench-train-smoke: $(BENCH_TRAIN_PROGRAMS)
	bench/train.sh --smoke
bench-gemm: $(B)/bench_gemm
	$(B)/bench_gemm $(BENCH_ROUNDS) 1 2
bench-kernels: $(B)/bench_kernels
	$(B)/bench_kernels $(BENCH_ROUNDS)
# the layers' and reductions' kernels with and without a worker on the range loop
$(B)/bench_layers: bench/layers.c bench/common.h $(HEADERS) | $(B)
	$(CC) $(BENCH_CFLAGS) $< -o $@ $(LIBS)
bench-layers: $(B)/bench_layers
	$(B)/bench_layers $(BENCH_ROUNDS)
# float32 tanh and sigmoid over all 2^32 inputs: the largest error in ulp
# and the AVX2 loop against the portable one (bench/act_ulp.c; minutes)
.PHONY: act-ulp
$(B)/act_ulp: bench/act_ulp.c depeng.h | $(B)
	$(CC) $(BENCH_CFLAGS) -Wno-unused-function $< -o $@ $(LIBS)
act-ulp: $(B)/act_ulp
	$(B)/act_ulp
# issue 29 point 5's variable design in miniature (bench/proto_dep.c), W2 and
# W3, next to the engine's own floor figures (bench/README.md, "A prototype")
$(B)/proto_dep: bench/proto_dep.c | $(B)
	$(CC) -std=c11 -O2 -Wall -Wextra -pedantic -Werror $< -o $@ -pthread
bench-proto: $(B)/proto_dep $(B)/bench_depeng
	$(B)/proto_dep W2 2 5; $(B)/proto_dep W3 2 5; $(B)/bench_depeng -e perdevice W2 W3 floor
# contention counters with 2, 4, 8 and 16 CPU workers (bench/README.md, many cores)
bench-scale: $(B)/bench_depeng
	bench/scale.sh $(B)/bench_depeng
bench: bench-build $(B)/make_example
	bench/run.sh $(B)/bench_depeng $(B)/bench_seq $(B)/bench_omp $(B)/bench_starpu $(B)/bench_tbb $(B)/bench_ndarray
	bench/scale.sh $(B)/bench_depeng
	./$(B)/bench_gpu_emul
	./$(B)/bench_symbolic
	bench/make.sh $(B)/make_example
	@if command -v $(MPICC) >/dev/null 2>&1; then $(MAKE) bench-mpi; \
	else echo "bench: $(MPICC) not found (make mpi-deps installs Open MPI); the MPI benchmark is skipped"; fi

# ---- MPI (depeng_mpi.h; optional, needs mpicc) ----------------------------
# make mpi-test installs Open MPI with apt-get when missing (tests/mpi_deps.sh),
# then runs tests/mpi_check.sh: 2 and 4 ranks against one process, ranks
# that initialise a key differently, a rank that hangs and a rank that is
# killed. make bench-mpi: allreduce through
# depeng against MPI_Allreduce, and a training step overlapped or not.
MPICC ?= mpicc
.PHONY: mpi-deps mpi-test bench-mpi mpi-compile-checks
# the implementation warning-free as C11 (gcc, clang) and as C++
mpi-compile-checks: | $(B)
	printf '#define DEPENG_IMPLEMENTATION\n#define DEPENG_MPI_IMPLEMENTATION\n#include "depeng.h"\n#include "depeng_nn.h"\n#include "depeng_mpi.h"\n' > $(B)/depeng_mpi_impl.c
	$(MPICC) $(WARN) -Wstrict-prototypes -I. -c $(B)/depeng_mpi_impl.c -o $(B)/mpi_gcc.o
	OMPI_CC=clang $(MPICC) $(WARN) -Wstrict-prototypes -I. -c $(B)/depeng_mpi_impl.c -o $(B)/mpi_clang.o
	OMPI_CC=g++ $(MPICC) -x c++ -std=c++17 -Wall -Wextra -pedantic -Werror -I. -c $(B)/depeng_mpi_impl.c -o $(B)/mpi_cxx.o
mpi-deps:
	tests/mpi_deps.sh
$(B)/mpi_digits: tests/mpi_digits.c tests/kv_digits.h tests/test_calls.h $(HEADERS) depeng_mpi.h | $(B)
	$(MPICC) $(WARN) $(CFLAGS) -I. $< -o $@ $(LIBS)
$(B)/mpi_kv_init: tests/mpi_kv_init.c $(HEADERS) depeng_mpi.h | $(B)
	$(MPICC) $(WARN) $(CFLAGS) -I. $< -o $@ $(LIBS)
$(B)/bench_mpi: bench/mpi.c $(HEADERS) depeng_mpi.h | $(B)
	$(MPICC) $(BENCH_CFLAGS) $< -o $@ $(LIBS)
mpi-test: mpi-deps
	$(MAKE) mpi-compile-checks $(B)/mpi_digits $(B)/mpi_kv_init
	tests/mpi_check.sh $(B)/mpi_digits $(B)/mpi_kv_init
bench-mpi: mpi-deps
	$(MAKE) $(B)/bench_mpi $(B)/mpi_digits
	bench/mpi.sh $(B)/bench_mpi $(B)/mpi_digits

# ---- fuzzing (tests/README.md) --------------------------------------------
# libFuzzer harnesses for the file loaders and examples/make.c's parser,
# with ASan and UBSan. make fuzz runs each for FUZZ_SECONDS and fails on
# any crash, leak or broken invariant; make fuzz-build only compiles them.
# tests/fuzz/deps.sh installs clang's libFuzzer runtime when it is missing.
FUZZ_SECONDS ?= 60
FUZZ_CC      := clang -std=c11 -Wall -Wextra -pedantic -Werror -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -I.
FUZZERS      := $(B)/fuzz_npy $(B)/fuzz_npz $(B)/fuzz_csv $(B)/fuzz_make $(B)/fuzz_inflate $(B)/fuzz_idx $(B)/fuzz_params
.PHONY: fuzz fuzz-build fuzz-deps
# the harnesses link build/impl/fuzz.o, but for the white-box ones
# (WHITEBOX: fuzz_npz, fuzz_inflate), which include the implementation
COMPILE_fuzz := $(FUZZ_CC)
$(B)/impl/fuzz.o: | fuzz-deps
$(B)/fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/fuzz_common.h $(B)/impl/fuzz.o $(HEADERS) | $(B) fuzz-deps
	$(FUZZ_CC) $(if $(call white,fuzz_$*),$<,-DDEPENG_EXAMPLE_SEPARATE_IMPL $< -x none $(B)/impl/fuzz.o) -o $@ $(LIBS)
$(B)/fuzz_make: examples/make.c
fuzz-deps:
	@tests/fuzz/deps.sh
fuzz-build: $(FUZZERS)
fuzz: fuzz-build
	tests/fuzz/run.sh $(FUZZ_SECONDS) $(FUZZERS)

# ---- CUDA (depeng_cuda.h; optional, needs nvcc) ----------------------------
# make cuda: the CUDA tests (built twice: the tiled GEMM and cuBLAS), the GPU
# example and the GPU benchmark, with nvcc and the CUDA runtime it ships,
# warning-free for the host compiler; and depeng_cuda.h's declarations as
# C11 and C++ without nvcc. make cuda-test runs them: without a GPU the
# device tests, the example and the benchmark say so and are skipped.
# NVCC: nvcc on the PATH, else /usr/local/cuda/bin/nvcc. CUDA_ARCH picks the
# GPUs to compile for (e.g. CUDA_ARCH=-arch=native; default: nvcc's).
NVCC      ?= $(shell command -v nvcc 2>/dev/null || echo /usr/local/cuda/bin/nvcc)
CUDA_ARCH ?=
NVFLAGS   := -std=c++17 -O2 -g $(CUDA_ARCH) -Xcompiler -Wall,-Wextra,-Werror -Werror cross-execution-space-call -I.
NVLIBS    := -Xcompiler -pthread -lm
.PHONY: cuda cuda-test cuda-compile-checks
cuda: cuda-compile-checks $(B)/test_cuda $(B)/test_cuda_cublas $(B)/test_cuda_int_reductions $(B)/gpu_example $(B)/bench_gpu
cuda-compile-checks: | $(B)
	printf '#include "depeng.h"\n#include "depeng_cuda.h"\nint main(void) { return dp_cuda_backend() == 0; }\n' > $(B)/depeng_cuda_decls.c
	gcc $(WARN) -Wstrict-prototypes -I. -c $(B)/depeng_cuda_decls.c -o $(B)/depeng_cuda_decls.o
	g++ -x c++ -std=c++17 -Wall -Wextra -pedantic -Werror -I. -c $(B)/depeng_cuda_decls.c -o $(B)/depeng_cuda_decls_cxx.o
$(B)/test_cuda: tests/test_cuda.cu depeng_cuda.h $(HEADERS) tests/test_common.h tests/test_calls.h | $(B)
	$(NVCC) $(NVFLAGS) $< -o $@ $(NVLIBS)
$(B)/test_cuda_cublas: tests/test_cuda.cu depeng_cuda.h $(HEADERS) tests/test_common.h tests/test_calls.h | $(B)
	$(NVCC) $(NVFLAGS) -DDEPENG_CUDA_USE_CUBLAS $< -o $@ $(NVLIBS) -lcublas
$(B)/test_cuda_int_reductions: tests/test_cuda_int_reductions.cu depeng_cuda.h $(HEADERS) tests/test_common.h tests/test_calls.h | $(B)
	$(NVCC) $(NVFLAGS) $< -o $@ $(NVLIBS)
$(B)/gpu_example: examples/gpu.cu depeng_cuda.h $(HEADERS) | $(B)
	$(NVCC) $(NVFLAGS) $< -o $@ $(NVLIBS)
$(B)/bench_gpu: bench/gpu.cu bench/common.h tests/test_calls.h depeng_cuda.h $(HEADERS) | $(B)
	$(NVCC) $(NVFLAGS) -DBENCH_HAVE_CUBLAS $< -o $@ $(NVLIBS) -lcublas
# the example must print examples/ndarray.c's results (or say there is no
# GPU), the benchmark smoke must print no FAIL line
cuda-test: cuda
	tests/run.sh $(B)/test_cuda $(B)/test_cuda_cublas $(B)/test_cuda_int_reductions
	@out=$$(./$(B)/gpu_example $(B)/gpu_example.npy) || exit 1; echo "$$out"; \
	  echo "$$out" | grep -q '^no GPU to run on' || { echo "$$out" | grep -q '^z        = 2 \* x + 1 = \[3 5 7; 9 11 13\]$$' \
	  && echo "$$out" | grep -q '^sum(z, axis=1) = \[15 33\]$$' || { echo "FAIL gpu_example: wrong results"; exit 1; }; }
	@out=$$(./$(B)/bench_gpu -n 1048576 -d 512 -o 2000) || exit 1; echo "$$out"; \
	  ! echo "$$out" | grep -q '^FAIL'

# ---- Windows (MinGW-w64, run under Wine) and the platform compile checks ---
# make windows-test: installs MinGW-w64 and Wine when missing
# (tests/windows_deps.sh), cross-compiles the engine, array and autograd tests
# and the examples to build/win/*.exe, and runs them under Wine. The library
# uses its Win32 layer; the tests' own threads come from MinGW's winpthreads
# (linked statically), the examples link no pthreads at all. examples/make.c
# is POSIX-only (posix_spawn, waitpid, glob): a named skip in windows-test.
MINGW_CC     ?= x86_64-w64-mingw32-gcc
MINGW_CXX    ?= x86_64-w64-mingw32-g++
WIN_CFLAGS   ?= -O2
W            := $(B)/win
WIN_TESTS    := $(W)/test_engine.exe $(W)/test_ndarray.exe $(W)/test_autograd.exe $(W)/test_symbol.exe $(W)/test_invoke.exe
WIN_EXAMPLES := $(W)/walkthrough.exe $(W)/ndarray_example.exe $(W)/custom_op_example.exe $(W)/train_digits.exe $(W)/train_fashion.exe
.PHONY: windows-deps windows-build windows-test platform-checks
windows-deps:
	tests/windows_deps.sh
$(W):
	mkdir -p $(W)
# the implementation once for Windows (build/win/impl.o), linked into the
# programs but the white-box ones (test_symbol)
WIN_IMPL = $(if $(call white,$(basename $(notdir $@))),$<,-DDEPENG_EXAMPLE_SEPARATE_IMPL $< -x none $(W)/impl.o)
$(W)/impl.o: $(IMPL_SRC) | $(W)
	$(MINGW_CC) $(WARN) $(WIN_CFLAGS) -I. -c $< -o $@
$(W)/test_%.exe: tests/test_%.c $(W)/impl.o $(TEST_DEPS) | $(W)
	$(MINGW_CC) $(WARN) $(WIN_CFLAGS) -I. $(WIN_IMPL) -o $@ -static -lpthread
$(W)/walkthrough.exe: examples/walkthrough.c $(W)/impl.o $(HEADERS) | $(W)
	$(MINGW_CC) $(WARN) $(WIN_CFLAGS) -I. $(WIN_IMPL) -o $@ -static
$(W)/ndarray_example.exe: examples/ndarray.c $(W)/impl.o $(HEADERS) | $(W)
	$(MINGW_CC) $(WARN) $(WIN_CFLAGS) -I. $(WIN_IMPL) -o $@ -static
$(W)/custom_op_example.exe: examples/custom_op.c $(W)/impl.o $(HEADERS) | $(W)
	$(MINGW_CC) $(WARN) $(WIN_CFLAGS) -I. $(WIN_IMPL) -o $@ -static
$(W)/train_digits.exe: examples/train_digits.c $(W)/impl.o $(HEADERS) | $(W)
	$(MINGW_CC) $(WARN) $(WIN_CFLAGS) -I. $(WIN_IMPL) -o $@ -static
$(W)/train_fashion.exe: examples/train_fashion.c examples/fashion_nets.h $(W)/impl.o $(HEADERS) | $(W)
	$(MINGW_CC) $(WARN) $(WIN_CFLAGS) -I. $(WIN_IMPL) -o $@ -static
windows-build: $(WIN_TESTS) $(WIN_EXAMPLES)
windows-test: windows-deps
	$(MAKE) windows-build
	tests/windows_test.sh

# make platform-checks: the header compiled for platforms this machine
# cannot run natively, warning-free (-Werror), with every compiler found:
# MinGW-w64 gcc as C11 and C++17 (Win32 layer, and the winpthreads path),
# clang for x86_64-w64-mingw32 as C11 and C++17. -Wvla everywhere: MSVC
# has no variable-length arrays. make test runs it; a compiler that is not
# installed is reported and skipped.
platform-checks: | $(B)
	@if command -v $(MINGW_CC) >/dev/null 2>&1; then set -x; \
	  $(MINGW_CC) $(WARN) -Wvla -Wstrict-prototypes -I. -c tests/compile/depeng_impl.c -o $(B)/win_gcc.o && \
	  $(MINGW_CC) $(WARN) -Wvla -I. -c tests/compile/depeng_static.c -o $(B)/win_gcc_static.o && \
	  $(MINGW_CC) $(WARN) -Wvla -DDEPENG_USE_PTHREADS -I. -c tests/compile/depeng_impl.c -o $(B)/win_gcc_pthreads.o && \
	  $(MINGW_CXX) -x c++ -std=c++17 -Wall -Wextra -pedantic -Werror -Wvla -I. -c tests/compile/depeng_impl.c -o $(B)/win_gxx.o; \
	else echo "platform-checks: SKIP MinGW-w64 gcc ($(MINGW_CC) not installed; make windows-deps)"; fi
	@if command -v clang >/dev/null 2>&1 && [ -d /usr/x86_64-w64-mingw32/include ]; then set -x; \
	  clang --target=x86_64-w64-mingw32 $(WARN) -Wvla -Wstrict-prototypes -I. -c tests/compile/depeng_impl.c -o $(B)/win_clang.o && \
	  clang --target=x86_64-w64-mingw32 -x c++ -std=c++17 -Wall -Wextra -pedantic -Werror -Wvla -I. -c tests/compile/depeng_impl.c -o $(B)/win_clangxx.o; \
	else echo "platform-checks: SKIP clang for x86_64-w64-mingw32 (needs clang and the MinGW-w64 headers)"; fi
	gcc $(WARN) -Wvla -I. -c tests/compile/depeng_impl.c -o $(B)/c_vla.o

clean:
	rm -rf $(B)

# ---- install (README.md, "Installing / using in your project") -------------
# make install [PREFIX=/usr/local] [DESTDIR=staging dir]: the two headers in
# include/, depeng.pc in share/pkgconfig, depengConfig.cmake and
# depengConfigVersion.cmake in share/cmake/depeng (the library is header-only,
# so its files are the same on every architecture). CMake's install() makes
# the same files from the same templates in cmake/. make uninstall removes them,
# and then the folders install made (from share/cmake/depeng up to PREFIX) that
# are left empty; a folder with anything else in it is kept, and nothing
# above PREFIX (in DESTDIR) is touched.
PREFIX        ?= /usr/local
DESTDIR       ?=
PKGCONFIGDIR  := $(PREFIX)/share/pkgconfig
CMAKECONFDIR  := $(PREFIX)/share/cmake/depeng
DEPENG_VERSION := $(shell sed -n 's/^\#define DEPENG_VERSION_STRING "\(.*\)"/\1/p' depeng.h)
DEPENG_SUBST  := -e 's|@DEPENG_VERSION@|$(DEPENG_VERSION)|g' \
                 -e 's|@DEPENG_VERSION_MAJOR@|$(word 1,$(subst ., ,$(DEPENG_VERSION)))|g' \
                 -e 's|@DEPENG_VERSION_MINOR@|$(word 2,$(subst ., ,$(DEPENG_VERSION)))|g' \
                 -e 's|@DEPENG_PC_PREFIX@|$(PREFIX)|g' \
                 -e 's|@DEPENG_PC_INCLUDEDIR@|$${prefix}/include|g' \
                 -e 's|@DEPENG_CONFIG_TO_PREFIX@|../../..|g' \
                 -e 's|@DEPENG_INCLUDEDIR@|include|g'
.PHONY: install uninstall
install: | $(B)
	@case "$(DEPENG_VERSION)" in [0-9]*.[0-9]*.[0-9]*) ;; *) echo "install: no DEPENG_VERSION_STRING in depeng.h"; exit 1;; esac
	@case "$(PREFIX)" in /*) ;; *) echo "install: PREFIX must be an absolute path (got '$(PREFIX)')"; exit 1;; esac
	sed $(DEPENG_SUBST) cmake/depeng.pc.in > $(B)/depeng.pc
	sed $(DEPENG_SUBST) cmake/depengConfig.cmake.in > $(B)/depengConfig.cmake
	sed $(DEPENG_SUBST) cmake/depengConfigVersion.cmake.in > $(B)/depengConfigVersion.cmake
	install -d "$(DESTDIR)$(PREFIX)/include" "$(DESTDIR)$(PKGCONFIGDIR)" "$(DESTDIR)$(CMAKECONFDIR)"
	install -m 644 depeng.h depeng_nn.h depeng_cuda.h depeng_mpi.h "$(DESTDIR)$(PREFIX)/include/"
	install -m 644 $(B)/depeng.pc "$(DESTDIR)$(PKGCONFIGDIR)/"
	install -m 644 $(B)/depengConfig.cmake $(B)/depengConfigVersion.cmake "$(DESTDIR)$(CMAKECONFDIR)/"
uninstall:
	rm -f "$(DESTDIR)$(PREFIX)/include/depeng.h" "$(DESTDIR)$(PREFIX)/include/depeng_nn.h" "$(DESTDIR)$(PREFIX)/include/depeng_cuda.h" "$(DESTDIR)$(PREFIX)/include/depeng_mpi.h" "$(DESTDIR)$(PKGCONFIGDIR)/depeng.pc"
	rm -f "$(DESTDIR)$(CMAKECONFDIR)/depengConfig.cmake" "$(DESTDIR)$(CMAKECONFDIR)/depengConfigVersion.cmake"
	@# the folders install -d made, deepest first, each only if empty (another package's files keep theirs)
	@for d in "$(DESTDIR)$(CMAKECONFDIR)" "$(DESTDIR)$(PREFIX)/share/cmake" "$(DESTDIR)$(PKGCONFIGDIR)" \
	          "$(DESTDIR)$(PREFIX)/share" "$(DESTDIR)$(PREFIX)/include" "$(DESTDIR)$(PREFIX)"; do \
	  if [ -d "$$d" ] && [ -z "$$(ls -A "$$d")" ]; then echo "rmdir $$d"; rmdir "$$d" || exit 1; fi; \
	done

# ---- trace page
# The replay page of dp_trace_write_html is edited in tools/trace_page.html;
# this regenerates its string literals in depeng.h (tests/trace_page_check.sh
# fails while the two disagree).
.PHONY: trace-page
trace-page:
	python3 tools/gen_trace_page.py depeng.h tools/trace_page.html
