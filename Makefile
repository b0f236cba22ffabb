# depeng — make demo (run the examples), make test (every test), make tsan,
# make asan, make faults (allocation-failure injection), make bench (depeng
# against its peers; make bench-deps installs StarPU first), make cuda /
# make cuda-test (depeng_cuda.h; needs nvcc), make install / make uninstall
# (PREFIX, DESTDIR), make clean.
CC      ?= cc
CFLAGS  ?= -O2 -g
WARN    := -std=c11 -Wall -Wextra -pedantic -Werror
B       := build
LIBS    := -pthread -lm

.PHONY: all test demo tsan asan faults compile-checks compile-checks-engine-only bench bench-deps bench-build bench-scale clean
all: $(B)/test_engine $(B)/test_ndarray $(B)/test_autograd $(B)/walkthrough $(B)/make_example $(B)/ndarray_example $(B)/custom_op_example $(B)/train_digits

$(B):
	mkdir -p $(B)

$(B)/test_engine: tests/test_engine.c depeng.h depeng_nn.h tests/test_common.h | $(B)
	$(CC) $(WARN) $(CFLAGS) -I. $< -o $@ $(LIBS)
# the contention counters and running ops on the pushing thread
$(B)/test_scheduling: tests/test_scheduling.c depeng.h depeng_nn.h tests/test_common.h | $(B)
	$(CC) $(WARN) $(CFLAGS) -I. $< -o $@ $(LIBS)
# the CPU pools' per-worker deques and stealing
$(B)/test_stealing: tests/test_stealing.c depeng.h depeng_nn.h tests/test_common.h | $(B)
	$(CC) $(WARN) $(CFLAGS) -I. $< -o $@ $(LIBS)
# the same tests on the pthreads fallback, so both platform paths stay tested
$(B)/test_engine_pthreads: tests/test_engine.c depeng.h depeng_nn.h tests/test_common.h | $(B)
	$(CC) $(WARN) $(CFLAGS) -DDEPENG_USE_PTHREADS -I. $< -o $@ $(LIBS)
# timed waits on the pthreads path keep their length when the wall clock is
# set back (Linux: the test replaces clock_gettime)
$(B)/test_wall_clock: tests/test_wall_clock.c depeng.h depeng_nn.h tests/test_common.h | $(B)
	$(CC) $(WARN) $(CFLAGS) -DDEPENG_USE_PTHREADS -I. $< -o $@ $(LIBS)
# ... and with the header compiled as C++
$(B)/test_engine_cxx: tests/test_engine.c depeng.h depeng_nn.h tests/test_common.h | $(B)
	g++ -x c++ -std=c++17 -Wall -Wextra -pedantic -Werror $(CFLAGS) -I. $< -o $@ $(LIBS)
# ... and on the engine alone (DEPENG_NO_NDARRAY: no array half; -lm only for
# the test's own fenv calls)
$(B)/test_engine_no_ndarray: tests/test_engine.c depeng.h depeng_nn.h tests/test_common.h | $(B)
	$(CC) $(WARN) $(CFLAGS) -DDEPENG_NO_NDARRAY -I. $< -o $@ -pthread -lm
$(B)/test_ndarray: tests/test_ndarray.c depeng.h depeng_nn.h tests/test_common.h | $(B)
	$(CC) $(WARN) $(CFLAGS) -I. $< -o $@ $(LIBS)
$(B)/test_ndarray_cxx: tests/test_ndarray.c depeng.h depeng_nn.h tests/test_common.h | $(B)
	g++ -x c++ -std=c++17 -Wall -Wextra -pedantic -Werror $(CFLAGS) -I. $< -o $@ $(LIBS)
$(B)/test_autograd: tests/test_autograd.c depeng.h depeng_nn.h tests/test_common.h | $(B)
	$(CC) $(WARN) $(CFLAGS) -I. $< -o $@ $(LIBS)
$(B)/test_symbol: tests/test_symbol.c depeng.h depeng_nn.h tests/test_common.h | $(B)
	$(CC) $(WARN) $(CFLAGS) -I. $< -o $@ $(LIBS)
$(B)/test_autograd_cxx: tests/test_autograd.c depeng.h depeng_nn.h tests/test_common.h | $(B)
	g++ -x c++ -std=c++17 -Wall -Wextra -pedantic -Werror $(CFLAGS) -I. $< -o $@ $(LIBS)
$(B)/test_memory_plan: tests/test_memory_plan.c depeng.h depeng_nn.h tests/test_common.h | $(B)
	$(CC) $(WARN) $(CFLAGS) -I. $< -o $@ $(LIBS)
# the desc-style invocation, the registry's names and the training helpers
$(B)/test_invoke: tests/test_invoke.c depeng.h depeng_nn.h tests/test_common.h | $(B)
	$(CC) $(WARN) $(CFLAGS) -I. $< -o $@ $(LIBS)
$(B)/test_kvstore: tests/test_kvstore.c tests/kv_digits.h depeng.h depeng_nn.h tests/test_common.h | $(B)
	$(CC) $(WARN) $(CFLAGS) -I. $< -o $@ $(LIBS)
$(B)/test_kvstore_cxx: tests/test_kvstore.c tests/kv_digits.h depeng.h depeng_nn.h tests/test_common.h | $(B)
	g++ -x c++ -std=c++17 -Wall -Wextra -pedantic -Werror $(CFLAGS) -I. $< -o $@ $(LIBS)
$(B)/walkthrough: examples/walkthrough.c depeng.h depeng_nn.h | $(B)
	$(CC) $(WARN) $(CFLAGS) -I. $< -o $@ $(LIBS)
$(B)/make_example: examples/make.c depeng.h depeng_nn.h | $(B)
	$(CC) $(WARN) $(CFLAGS) -I. $< -o $@ $(LIBS)
# make.c's parser alone, built the way a fuzz harness builds it
$(B)/make_parse: tests/make_parse.c examples/make.c depeng.h depeng_nn.h | $(B)
	$(CC) $(WARN) $(CFLAGS) -DMAKE_NO_MAIN -I. $< -o $@ $(LIBS)
$(B)/ndarray_example: examples/ndarray.c depeng.h depeng_nn.h | $(B)
	$(CC) $(WARN) $(CFLAGS) -I. $< -o $@ $(LIBS)
$(B)/custom_op_example: examples/custom_op.c depeng.h depeng_nn.h | $(B)
	$(CC) $(WARN) $(CFLAGS) -I. $< -o $@ $(LIBS)
$(B)/train_digits: examples/train_digits.c depeng.h depeng_nn.h | $(B)
	$(CC) $(WARN) $(CFLAGS) -I. $< -o $@ $(LIBS)
# deflated .npz (against NumPy where it is installed, else those parts are
# SKIP), CSV options and refused fields, the per-thread last error
$(B)/test_files: tests/test_files.c depeng.h depeng_nn.h tests/test_common.h | $(B)
	$(CC) $(WARN) $(CFLAGS) -I. $< -o $@ $(LIBS)
# the header's inflater and deflater against zlib, linked for this test only
# (tests/zlib_deps.sh installs zlib1g-dev when it is missing)
$(B)/test_inflate_zlib: tests/test_inflate_zlib.c depeng.h depeng_nn.h tests/test_common.h | $(B) zlib-deps
	$(CC) $(WARN) $(CFLAGS) -I. $< -o $@ $(LIBS) -lz
.PHONY: zlib-deps
zlib-deps:
	@tests/zlib_deps.sh
# writes profiler traces for tests/chrome_trace_check.sh (Perfetto's reading)
$(B)/chrome_trace: tests/chrome_trace.c depeng.h depeng_nn.h | $(B)
	$(CC) $(WARN) $(CFLAGS) -I. $< -o $@ $(LIBS)
# replay pages with hostile names for tests/html_check.sh (headless Chromium;
# tests/browser_deps.sh installs it, else the check is a SKIP)
$(B)/html_pages: tests/html_pages.c depeng.h depeng_nn.h | $(B)
	$(CC) $(WARN) $(CFLAGS) -I. $< -o $@ $(LIBS)

# the differential test's driver (tests/numpy_diff_check.sh compares with NumPy)
$(B)/numpy_diff: tests/numpy_diff.c depeng.h depeng_nn.h | $(B)
	$(CC) $(WARN) $(CFLAGS) -I. $< -o $@ $(LIBS)
# a dedicated test program for the kernels' exactness, NaN and aliasing rules
$(B)/test_kernels_exact: tests/test_kernels_exact.c depeng.h depeng_nn.h tests/test_common.h | $(B)
	$(CC) $(WARN) $(CFLAGS) -I. $< -o $@ $(LIBS)

# warning-free as C11 on gcc and clang and as C++ (g++ -x c++)
compile-checks: compile-checks-engine-only | $(B)
	gcc   $(WARN) -Wstrict-prototypes -I. -c tests/compile/depeng_impl.c -o $(B)/c_gcc.o
	clang $(WARN) -Wstrict-prototypes -I. -c tests/compile/depeng_impl.c -o $(B)/c_clang.o
	gcc   $(WARN) -DDEPENG_USE_PTHREADS -I. -c tests/compile/depeng_impl.c -o $(B)/c_pthreads.o
	g++ -x c++ -std=c++17 -Wall -Wextra -pedantic -Werror -I. -c tests/compile/depeng_impl.c -o $(B)/cxx.o
	gcc   $(WARN) -I. -c tests/compile/depeng_static.c -o $(B)/c_static.o
	g++ -x c++ -std=c++11 -Wall -Wextra -pedantic -Werror -I. -c tests/compile/invoke_cxx.cpp -o $(B)/invoke_cxx11.o
	g++ -x c++ -std=c++17 -Wall -Wextra -pedantic -Werror -I. -c tests/compile/invoke_cxx.cpp -o $(B)/invoke_cxx17.o
	clang $(WARN) -I. -c tests/compile/depeng_static.c -o $(B)/c_static_clang.o
# the engine alone (DEPENG_NO_NDARRAY), the same ways, and static
compile-checks-engine-only: | $(B)
	gcc   $(WARN) -Wstrict-prototypes -I. -c tests/compile/depeng_engine_only.c -o $(B)/eo_gcc.o
	clang $(WARN) -Wstrict-prototypes -I. -c tests/compile/depeng_engine_only.c -o $(B)/eo_clang.o
	gcc   $(WARN) -DDEPENG_USE_PTHREADS -I. -c tests/compile/depeng_engine_only.c -o $(B)/eo_pthreads.o
	g++ -x c++ -std=c++17 -Wall -Wextra -pedantic -Werror -I. -c tests/compile/depeng_engine_only.c -o $(B)/eo_cxx.o
	gcc   $(WARN) -DDEPENG_STATIC -I. -c tests/compile/depeng_engine_only.c -o $(B)/eo_static.o

test: compile-checks platform-checks $(B)/test_engine $(B)/test_scheduling $(B)/test_stealing $(B)/test_engine_pthreads $(B)/test_wall_clock $(B)/test_engine_cxx $(B)/test_engine_no_ndarray $(B)/test_ndarray $(B)/test_ndarray_cxx $(B)/test_autograd $(B)/test_autograd_cxx $(B)/test_memory_plan $(B)/test_symbol $(B)/walkthrough $(B)/make_example $(B)/make_parse $(B)/ndarray_example $(B)/custom_op_example $(B)/train_digits bench-build $(B)/chrome_trace $(B)/html_pages $(B)/test_files $(B)/test_inflate_zlib $(B)/numpy_diff $(B)/test_kernels_exact $(B)/test_invoke docs-check-build $(B)/test_kvstore $(B)/test_kvstore_cxx
	tests/run.sh $(B)/test_engine $(B)/test_scheduling $(B)/test_stealing $(B)/test_engine_pthreads $(B)/test_wall_clock $(B)/test_engine_cxx $(B)/test_engine_no_ndarray $(B)/test_ndarray $(B)/test_ndarray_cxx $(B)/test_autograd $(B)/test_autograd_cxx $(B)/test_memory_plan $(B)/test_symbol tests/walkthrough_check.sh tests/make_check.sh $(B)/make_parse tests/make_vs_gnu.sh tests/readme_check.sh tests/examples_check.sh tests/cblas_check.sh tests/bench_check.sh tests/chrome_trace_check.sh tests/html_check.sh tests/engine_only_check.sh tests/header_lists_check.sh tests/layering_check.sh tests/trace_page_check.sh tests/api_docs_check.sh tests/readme_toc_check.sh tests/consumer_check.sh tests/standalone_check.sh $(B)/test_files $(B)/test_inflate_zlib $(B)/test_kernels_exact tests/numpy_diff_check.sh $(B)/test_invoke tests/operators_doc_check.sh $(B)/test_kvstore $(B)/test_kvstore_cxx

demo: $(B)/walkthrough $(B)/make_example $(B)/ndarray_example $(B)/custom_op_example $(B)/train_digits
	./$(B)/walkthrough $(B)/walkthrough.dot $(B)/walkthrough.html
	@echo "the walkthrough's replay page: file://$(CURDIR)/$(B)/walkthrough.html (open it in a browser)"
	./$(B)/make_example -j 2 -C examples/make_demo
	./examples/make_demo/hello
	./$(B)/make_example -C examples/make_demo clean
	./$(B)/ndarray_example $(B)/ndarray_example.npy
	./$(B)/custom_op_example
	./$(B)/train_digits

# ThreadSanitizer does not support C11 thrd_create (SEGV, gcc 12 / clang 14),
# so the sanitizer build uses the pthreads path.
tsan: | $(B)
	clang -std=c11 -Wall -Wextra -pedantic -O1 -g -fsanitize=thread -DDEPENG_USE_PTHREADS -I. tests/test_engine.c -o $(B)/test_engine_tsan $(LIBS)
	clang -std=c11 -Wall -Wextra -pedantic -O1 -g -fsanitize=thread -DDEPENG_USE_PTHREADS -I. tests/test_ndarray.c -o $(B)/test_ndarray_tsan $(LIBS)
	clang -std=c11 -Wall -Wextra -pedantic -O1 -g -fsanitize=thread -DDEPENG_USE_PTHREADS -I. tests/test_autograd.c -o $(B)/test_autograd_tsan $(LIBS)
	clang -std=c11 -Wall -Wextra -pedantic -O1 -g -fsanitize=thread -DDEPENG_USE_PTHREADS -I. tests/test_scheduling.c -o $(B)/test_scheduling_tsan $(LIBS)
	clang -std=c11 -Wall -Wextra -pedantic -O1 -g -fsanitize=thread -DDEPENG_USE_PTHREADS -I. tests/test_symbol.c -o $(B)/test_symbol_tsan $(LIBS)
	clang -std=c11 -Wall -Wextra -pedantic -O1 -g -fsanitize=thread -DDEPENG_USE_PTHREADS -I. tests/test_kvstore.c -o $(B)/test_kvstore_tsan $(LIBS)
	clang -std=c11 -Wall -Wextra -pedantic -O1 -g -fsanitize=thread -DDEPENG_USE_PTHREADS -I. tests/test_stealing.c -o $(B)/test_stealing_tsan $(LIBS)
	TSAN_OPTIONS=halt_on_error=1 tests/run.sh $(B)/test_engine_tsan $(B)/test_ndarray_tsan $(B)/test_autograd_tsan $(B)/test_scheduling_tsan $(B)/test_symbol_tsan $(B)/test_kvstore_tsan $(B)/test_stealing_tsan
	clang -std=c11 -Wall -Wextra -pedantic -O1 -g -fsanitize=thread -DDEPENG_USE_PTHREADS -I. examples/make.c -o $(B)/make_example_tsan $(LIBS)
	TSAN_OPTIONS=halt_on_error=1 examples/make_demo/check.sh $(B)/make_example_tsan
asan: | $(B)
	clang -std=c11 -Wall -Wextra -pedantic -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=undefined -I. tests/test_engine.c -o $(B)/test_engine_asan $(LIBS)
	clang -std=c11 -Wall -Wextra -pedantic -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=undefined -DDEPENG_USE_PTHREADS -I. tests/test_engine.c -o $(B)/test_engine_asan_pthreads $(LIBS)
	clang -std=c11 -Wall -Wextra -pedantic -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=undefined -I. tests/test_ndarray.c -o $(B)/test_ndarray_asan $(LIBS)
	clang -std=c11 -Wall -Wextra -pedantic -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=undefined -I. tests/test_autograd.c -o $(B)/test_autograd_asan $(LIBS)
	clang -std=c11 -Wall -Wextra -pedantic -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=undefined -I. tests/test_memory_plan.c -o $(B)/test_memory_plan_asan $(LIBS)
	clang -std=c11 -Wall -Wextra -pedantic -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=undefined -I. tests/test_scheduling.c -o $(B)/test_scheduling_asan $(LIBS)
	clang -std=c11 -Wall -Wextra -pedantic -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=undefined -I. tests/test_symbol.c -o $(B)/test_symbol_asan $(LIBS)
	clang -std=c11 -Wall -Wextra -pedantic -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=undefined -I. tests/test_files.c -o $(B)/test_files_asan $(LIBS)
	clang -std=c11 -Wall -Wextra -pedantic -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=undefined -I. tests/test_invoke.c -o $(B)/test_invoke_asan $(LIBS)
	clang -std=c11 -Wall -Wextra -pedantic -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=undefined -I. tests/test_kvstore.c -o $(B)/test_kvstore_asan $(LIBS)
	clang -std=c11 -Wall -Wextra -pedantic -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=undefined -DDEPENG_USE_PTHREADS -I. tests/test_stealing.c -o $(B)/test_stealing_asan $(LIBS)
	tests/run.sh $(B)/test_engine_asan $(B)/test_engine_asan_pthreads $(B)/test_ndarray_asan $(B)/test_autograd_asan $(B)/test_memory_plan_asan $(B)/test_scheduling_asan $(B)/test_symbol_asan $(B)/test_files_asan $(B)/test_invoke_asan $(B)/test_kvstore_asan $(B)/test_stealing_asan
	clang -std=c11 -Wall -Wextra -pedantic -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=undefined -I. examples/make.c -o $(B)/make_example_asan $(LIBS)
	examples/make_demo/check.sh $(B)/make_example_asan
	clang -std=c11 -Wall -Wextra -pedantic -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=undefined -DMAKE_NO_MAIN -I. tests/make_parse.c -o $(B)/make_parse_asan $(LIBS)
	./$(B)/make_parse_asan
	clang -std=c11 -Wall -Wextra -pedantic -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=undefined -I. tests/test_kernels_exact.c -o $(B)/test_kernels_exact_asan $(LIBS)
	tests/run.sh $(B)/test_kernels_exact_asan
	clang -std=c11 -Wall -Wextra -pedantic -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=undefined -I. tests/numpy_diff.c -o $(B)/numpy_diff_asan $(LIBS)
	rm -rf $(B)/numpy_diff_asan.d && mkdir -p $(B)/numpy_diff_asan.d && ./$(B)/numpy_diff_asan $(B)/numpy_diff_asan.d 1 3

# Allocation-failure injection (tests/faults.c): the allocator fails the k-th
# allocation (and, second mode, every one from the k-th on) for every k over
# a workload of the whole API, on all three engines, under ASan + UBSan +
# LeakSanitizer; each run in a child with a watchdog. .ci/run runs it.
SAN := -fsanitize=address,undefined -fno-sanitize-recover=undefined
faults: | $(B)
	clang -std=c11 -Wall -Wextra -pedantic -Werror -O1 -g $(SAN) -I. tests/faults.c -o $(B)/faults $(LIBS)
	ASAN_OPTIONS=detect_leaks=1 ./$(B)/faults all

# ---- operator reference (docs/operators.md) --------------------------------
# tools/operators_doc.c prints the reference from the registry itself; make
# docs rewrites docs/operators.md with it, and tests/operators_doc_check.sh
# (run by make test) fails when the file differs from what it prints.
.PHONY: docs docs-check-build
$(B)/operators_doc: tools/operators_doc.c depeng.h depeng_nn.h | $(B)
	$(CC) $(WARN) $(CFLAGS) -I. $< -o $@ $(LIBS)
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
$(B)/bench_depeng: bench/depeng.c bench/common.h depeng.h depeng_nn.h | $(B)
	$(CC) $(BENCH_CFLAGS) $< -o $@ $(LIBS)
# with OpenBLAS (make bench-deps) it also times CBLAS's sgemm as dot's reference
# the symbolic path: executor against autograd, per training step
$(B)/bench_symbolic: bench/symbolic.c bench/common.h depeng.h depeng_nn.h | $(B)
	$(CC) $(BENCH_CFLAGS) $< -o $@ $(LIBS)
$(B)/bench_ndarray: bench/ndarray.c bench/common.h depeng.h depeng_nn.h | $(B)
	@if pkg-config --exists openblas 2>/dev/null; then \
	  set -x; $(CC) $(BENCH_CFLAGS) -DBENCH_HAVE_CBLAS $$(pkg-config --cflags openblas) $< -o $@ $$(pkg-config --libs openblas) $(LIBS); \
	else set -x; $(CC) $(BENCH_CFLAGS) $< -o $@ $(LIBS); fi
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
$(B)/bench_gpu_emul: bench/gpu_emul.c bench/common.h depeng.h depeng_nn.h | $(B)
	$(CC) $(BENCH_CFLAGS) $< -o $@ $(LIBS)
bench-build: $(B)/bench_depeng $(B)/bench_seq $(B)/bench_omp $(B)/bench_starpu $(B)/bench_tbb $(B)/bench_ndarray $(B)/bench_gpu_emul $(B)/bench_symbolic
bench-deps:
	bench/deps.sh
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
# then runs tests/mpi_check.sh: 2 and 4 ranks against one process, a rank
# that hangs and a rank that is killed. make bench-mpi: allreduce through
# depeng against MPI_Allreduce, and a training step overlapped or not.
MPICC ?= mpicc
.PHONY: mpi-deps mpi-test bench-mpi mpi-compile-checks
# the implementation warning-free as C11 (gcc, clang) and as C++
mpi-compile-checks: | $(B)
	printf '#define DEPENG_IMPLEMENTATION\n#define DEPENG_MPI_IMPLEMENTATION\n#include "depeng.h"\n#include "depeng_mpi.h"\n' > $(B)/depeng_mpi_impl.c
	$(MPICC) $(WARN) -Wstrict-prototypes -I. -c $(B)/depeng_mpi_impl.c -o $(B)/mpi_gcc.o
	OMPI_CC=clang $(MPICC) $(WARN) -Wstrict-prototypes -I. -c $(B)/depeng_mpi_impl.c -o $(B)/mpi_clang.o
	OMPI_CC=g++ $(MPICC) -x c++ -std=c++17 -Wall -Wextra -pedantic -Werror -I. -c $(B)/depeng_mpi_impl.c -o $(B)/mpi_cxx.o
mpi-deps:
	tests/mpi_deps.sh
$(B)/mpi_digits: tests/mpi_digits.c tests/kv_digits.h depeng.h depeng_nn.h depeng_mpi.h | $(B)
	$(MPICC) $(WARN) $(CFLAGS) -I. $< -o $@ $(LIBS)
$(B)/bench_mpi: bench/mpi.c depeng.h depeng_nn.h depeng_mpi.h | $(B)
	$(MPICC) $(BENCH_CFLAGS) $< -o $@ $(LIBS)
mpi-test: mpi-deps
	$(MAKE) mpi-compile-checks $(B)/mpi_digits
	tests/mpi_check.sh $(B)/mpi_digits
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
FUZZERS      := $(B)/fuzz_npy $(B)/fuzz_npz $(B)/fuzz_csv $(B)/fuzz_make $(B)/fuzz_inflate
.PHONY: fuzz fuzz-build fuzz-deps
$(B)/fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/fuzz_common.h depeng.h depeng_nn.h | $(B) fuzz-deps
	$(FUZZ_CC) $< -o $@ $(LIBS)
$(B)/fuzz_make: examples/make.c
$(B)/fuzz_inflate: tests/fuzz/fuzz_inflate.c depeng.h depeng_nn.h | $(B) fuzz-deps
	$(FUZZ_CC) $< -o $@ $(LIBS)
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
$(B)/test_cuda: tests/test_cuda.cu depeng_cuda.h depeng.h depeng_nn.h tests/test_common.h | $(B)
	$(NVCC) $(NVFLAGS) $< -o $@ $(NVLIBS)
$(B)/test_cuda_cublas: tests/test_cuda.cu depeng_cuda.h depeng.h depeng_nn.h tests/test_common.h | $(B)
	$(NVCC) $(NVFLAGS) -DDEPENG_CUDA_USE_CUBLAS $< -o $@ $(NVLIBS) -lcublas
$(B)/test_cuda_int_reductions: tests/test_cuda_int_reductions.cu depeng_cuda.h depeng.h depeng_nn.h tests/test_common.h | $(B)
	$(NVCC) $(NVFLAGS) $< -o $@ $(NVLIBS)
$(B)/gpu_example: examples/gpu.cu depeng_cuda.h depeng.h depeng_nn.h | $(B)
	$(NVCC) $(NVFLAGS) $< -o $@ $(NVLIBS)
$(B)/bench_gpu: bench/gpu.cu bench/common.h depeng_cuda.h depeng.h depeng_nn.h | $(B)
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
WIN_EXAMPLES := $(W)/walkthrough.exe $(W)/ndarray_example.exe $(W)/custom_op_example.exe $(W)/train_digits.exe
.PHONY: windows-deps windows-build windows-test platform-checks
windows-deps:
	tests/windows_deps.sh
$(W):
	mkdir -p $(W)
$(W)/test_%.exe: tests/test_%.c depeng.h depeng_nn.h tests/test_common.h | $(W)
	$(MINGW_CC) $(WARN) $(WIN_CFLAGS) -I. $< -o $@ -static -lpthread
$(W)/walkthrough.exe: examples/walkthrough.c depeng.h depeng_nn.h | $(W)
	$(MINGW_CC) $(WARN) $(WIN_CFLAGS) -I. $< -o $@ -static
$(W)/ndarray_example.exe: examples/ndarray.c depeng.h depeng_nn.h | $(W)
	$(MINGW_CC) $(WARN) $(WIN_CFLAGS) -I. $< -o $@ -static
$(W)/custom_op_example.exe: examples/custom_op.c depeng.h depeng_nn.h | $(W)
	$(MINGW_CC) $(WARN) $(WIN_CFLAGS) -I. $< -o $@ -static
$(W)/train_digits.exe: examples/train_digits.c depeng.h depeng_nn.h | $(W)
	$(MINGW_CC) $(WARN) $(WIN_CFLAGS) -I. $< -o $@ -static
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
# the same files from the same templates in cmake/. make uninstall removes them.
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
	rmdir "$(DESTDIR)$(CMAKECONFDIR)" 2>/dev/null || true   # kept if something else is in it

# ---- trace page
# The replay page of dp_trace_write_html is edited in tools/trace_page.html;
# this regenerates its string literals in depeng.h (tests/trace_page_check.sh
# fails while the two disagree).
.PHONY: trace-page
trace-page:
	python3 tools/gen_trace_page.py depeng.h tools/trace_page.html
