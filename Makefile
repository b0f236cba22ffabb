# depeng — make demo (run the examples), make test (every test), make tsan,
# make asan, make faults (allocation-failure injection), make bench (depeng
# against its peers; make bench-deps installs StarPU first), make cuda / make cuda-test (depeng_cuda.h; needs nvcc),
# make clean.
CC      ?= cc
CFLAGS  ?= -O2 -g
WARN    := -std=c11 -Wall -Wextra -pedantic -Werror
B       := build
LIBS    := -pthread -lm

.PHONY: all test demo tsan asan faults compile-checks bench bench-deps bench-build clean
all: $(B)/test_engine $(B)/test_ndarray $(B)/test_autograd $(B)/walkthrough $(B)/make_example $(B)/ndarray_example $(B)/custom_op_example $(B)/train_digits

$(B):
	mkdir -p $(B)

$(B)/test_engine: tests/test_engine.c depeng.h tests/test_common.h | $(B)
	$(CC) $(WARN) $(CFLAGS) -I. $< -o $@ $(LIBS)
# the same tests on the pthreads fallback, so both platform paths stay tested
$(B)/test_engine_pthreads: tests/test_engine.c depeng.h tests/test_common.h | $(B)
	$(CC) $(WARN) $(CFLAGS) -DDEPENG_USE_PTHREADS -I. $< -o $@ $(LIBS)
# ... and with the header compiled as C++
$(B)/test_engine_cxx: tests/test_engine.c depeng.h tests/test_common.h | $(B)
	g++ -x c++ -std=c++17 -Wall -Wextra -pedantic -Werror $(CFLAGS) -I. $< -o $@ $(LIBS)
$(B)/test_ndarray: tests/test_ndarray.c depeng.h tests/test_common.h | $(B)
	$(CC) $(WARN) $(CFLAGS) -I. $< -o $@ $(LIBS)
$(B)/test_ndarray_cxx: tests/test_ndarray.c depeng.h tests/test_common.h | $(B)
	g++ -x c++ -std=c++17 -Wall -Wextra -pedantic -Werror $(CFLAGS) -I. $< -o $@ $(LIBS)
$(B)/test_autograd: tests/test_autograd.c depeng.h tests/test_common.h | $(B)
	$(CC) $(WARN) $(CFLAGS) -I. $< -o $@ $(LIBS)
$(B)/test_autograd_cxx: tests/test_autograd.c depeng.h tests/test_common.h | $(B)
	g++ -x c++ -std=c++17 -Wall -Wextra -pedantic -Werror $(CFLAGS) -I. $< -o $@ $(LIBS)
$(B)/walkthrough: examples/walkthrough.c depeng.h | $(B)
	$(CC) $(WARN) $(CFLAGS) -I. $< -o $@ $(LIBS)
$(B)/make_example: examples/make.c depeng.h | $(B)
	$(CC) $(WARN) $(CFLAGS) -I. $< -o $@ $(LIBS)
# make.c's parser alone, built the way a fuzz harness builds it
$(B)/make_parse: tests/make_parse.c examples/make.c depeng.h | $(B)
	$(CC) $(WARN) $(CFLAGS) -DMAKE_NO_MAIN -I. $< -o $@ $(LIBS)
$(B)/ndarray_example: examples/ndarray.c depeng.h | $(B)
	$(CC) $(WARN) $(CFLAGS) -I. $< -o $@ $(LIBS)
$(B)/custom_op_example: examples/custom_op.c depeng.h | $(B)
	$(CC) $(WARN) $(CFLAGS) -I. $< -o $@ $(LIBS)
$(B)/train_digits: examples/train_digits.c depeng.h | $(B)
	$(CC) $(WARN) $(CFLAGS) -I. $< -o $@ $(LIBS)

# warning-free as C11 on gcc and clang and as C++ (g++ -x c++)
compile-checks: | $(B)
	gcc   $(WARN) -Wstrict-prototypes -I. -c tests/compile/depeng_impl.c -o $(B)/c_gcc.o
	clang $(WARN) -Wstrict-prototypes -I. -c tests/compile/depeng_impl.c -o $(B)/c_clang.o
	gcc   $(WARN) -DDEPENG_USE_PTHREADS -I. -c tests/compile/depeng_impl.c -o $(B)/c_pthreads.o
	g++ -x c++ -std=c++17 -Wall -Wextra -pedantic -Werror -I. -c tests/compile/depeng_impl.c -o $(B)/cxx.o
	gcc   $(WARN) -I. -c tests/compile/depeng_static.c -o $(B)/c_static.o
	clang $(WARN) -I. -c tests/compile/depeng_static.c -o $(B)/c_static_clang.o

test: compile-checks $(B)/test_engine $(B)/test_engine_pthreads $(B)/test_engine_cxx $(B)/test_ndarray $(B)/test_ndarray_cxx $(B)/test_autograd $(B)/test_autograd_cxx $(B)/walkthrough $(B)/make_example $(B)/make_parse $(B)/ndarray_example $(B)/custom_op_example $(B)/train_digits bench-build
	tests/run.sh $(B)/test_engine $(B)/test_engine_pthreads $(B)/test_engine_cxx $(B)/test_ndarray $(B)/test_ndarray_cxx $(B)/test_autograd $(B)/test_autograd_cxx tests/walkthrough_check.sh tests/make_check.sh $(B)/make_parse tests/make_vs_gnu.sh tests/readme_check.sh tests/examples_check.sh tests/cblas_check.sh tests/bench_check.sh

demo: $(B)/walkthrough $(B)/make_example $(B)/ndarray_example $(B)/custom_op_example $(B)/train_digits
	./$(B)/walkthrough $(B)/walkthrough.dot
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
	TSAN_OPTIONS=halt_on_error=1 tests/run.sh $(B)/test_engine_tsan $(B)/test_ndarray_tsan $(B)/test_autograd_tsan
	clang -std=c11 -Wall -Wextra -pedantic -O1 -g -fsanitize=thread -DDEPENG_USE_PTHREADS -I. examples/make.c -o $(B)/make_example_tsan $(LIBS)
	TSAN_OPTIONS=halt_on_error=1 examples/make_demo/check.sh $(B)/make_example_tsan
asan: | $(B)
	clang -std=c11 -Wall -Wextra -pedantic -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=undefined -I. tests/test_engine.c -o $(B)/test_engine_asan $(LIBS)
	clang -std=c11 -Wall -Wextra -pedantic -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=undefined -DDEPENG_USE_PTHREADS -I. tests/test_engine.c -o $(B)/test_engine_asan_pthreads $(LIBS)
	clang -std=c11 -Wall -Wextra -pedantic -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=undefined -I. tests/test_ndarray.c -o $(B)/test_ndarray_asan $(LIBS)
	clang -std=c11 -Wall -Wextra -pedantic -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=undefined -I. tests/test_autograd.c -o $(B)/test_autograd_asan $(LIBS)
	tests/run.sh $(B)/test_engine_asan $(B)/test_engine_asan_pthreads $(B)/test_ndarray_asan $(B)/test_autograd_asan
	clang -std=c11 -Wall -Wextra -pedantic -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=undefined -I. examples/make.c -o $(B)/make_example_asan $(LIBS)
	examples/make_demo/check.sh $(B)/make_example_asan
	clang -std=c11 -Wall -Wextra -pedantic -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=undefined -DMAKE_NO_MAIN -I. tests/make_parse.c -o $(B)/make_parse_asan $(LIBS)
	./$(B)/make_parse_asan

# Allocation-failure injection (tests/faults.c): the allocator fails the k-th
# allocation (and, second mode, every one from the k-th on) for every k over
# a workload of the whole API, on all three engines, under ASan + UBSan +
# LeakSanitizer; each run in a child with a watchdog. .ci/run runs it.
SAN := -fsanitize=address,undefined -fno-sanitize-recover=undefined
faults: | $(B)
	clang -std=c11 -Wall -Wextra -pedantic -Werror -O1 -g $(SAN) -I. tests/faults.c -o $(B)/faults $(LIBS)
	ASAN_OPTIONS=detect_leaks=1 ./$(B)/faults all

# ---- benchmark (bench/README.md) -----------------------------------------
# Every driver runs the workloads of ../shared/BENCH_WORKLOADS.md with two
# worker threads; bench/run.sh prints the ratios. Peers that are not
# installed are reported as skipped, never dropped silently.
BENCH_CFLAGS := -std=c11 -O2 -g -I. -Wall -Wextra
STARPU_PC    := starpu-1.3
$(B)/bench_depeng: bench/depeng.c bench/common.h depeng.h | $(B)
	$(CC) $(BENCH_CFLAGS) $< -o $@ $(LIBS)
# with OpenBLAS (make bench-deps) it also times CBLAS's sgemm as dot's reference
$(B)/bench_ndarray: bench/ndarray.c bench/common.h depeng.h | $(B)
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
# GPU completion (events against a synchronisation per op) on an emulated GPU
$(B)/bench_gpu_emul: bench/gpu_emul.c bench/common.h depeng.h | $(B)
	$(CC) $(BENCH_CFLAGS) $< -o $@ $(LIBS)
bench-build: $(B)/bench_depeng $(B)/bench_seq $(B)/bench_omp $(B)/bench_starpu $(B)/bench_ndarray $(B)/bench_gpu_emul
bench-deps:
	bench/deps.sh
bench: bench-build $(B)/make_example
	bench/run.sh $(B)/bench_depeng $(B)/bench_seq $(B)/bench_omp $(B)/bench_starpu $(B)/bench_ndarray
	./$(B)/bench_gpu_emul
	bench/make.sh $(B)/make_example

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
cuda: cuda-compile-checks $(B)/test_cuda $(B)/test_cuda_cublas $(B)/gpu_example $(B)/bench_gpu
cuda-compile-checks: | $(B)
	printf '#include "depeng.h"\n#include "depeng_cuda.h"\nint main(void) { return dp_cuda_backend() == 0; }\n' > $(B)/depeng_cuda_decls.c
	gcc $(WARN) -Wstrict-prototypes -I. -c $(B)/depeng_cuda_decls.c -o $(B)/depeng_cuda_decls.o
	g++ -x c++ -std=c++17 -Wall -Wextra -pedantic -Werror -I. -c $(B)/depeng_cuda_decls.c -o $(B)/depeng_cuda_decls_cxx.o
$(B)/test_cuda: tests/test_cuda.cu depeng_cuda.h depeng.h tests/test_common.h | $(B)
	$(NVCC) $(NVFLAGS) $< -o $@ $(NVLIBS)
$(B)/test_cuda_cublas: tests/test_cuda.cu depeng_cuda.h depeng.h tests/test_common.h | $(B)
	$(NVCC) $(NVFLAGS) -DDEPENG_CUDA_USE_CUBLAS $< -o $@ $(NVLIBS) -lcublas
$(B)/gpu_example: examples/gpu.cu depeng_cuda.h depeng.h | $(B)
	$(NVCC) $(NVFLAGS) $< -o $@ $(NVLIBS)
$(B)/bench_gpu: bench/gpu.cu bench/common.h depeng_cuda.h depeng.h | $(B)
	$(NVCC) $(NVFLAGS) -DBENCH_HAVE_CUBLAS $< -o $@ $(NVLIBS) -lcublas
# the example must print examples/ndarray.c's results (or say there is no
# GPU), the benchmark smoke must print no FAIL line
cuda-test: cuda
	tests/run.sh $(B)/test_cuda $(B)/test_cuda_cublas
	@out=$$(./$(B)/gpu_example $(B)/gpu_example.npy) || exit 1; echo "$$out"; \
	  echo "$$out" | grep -q '^no GPU to run on' || { echo "$$out" | grep -q '^z        = 2 \* x + 1 = \[3 5 7; 9 11 13\]$$' \
	  && echo "$$out" | grep -q '^sum(z, axis=1) = \[15 33\]$$' || { echo "FAIL gpu_example: wrong results"; exit 1; }; }
	@out=$$(./$(B)/bench_gpu -n 1048576 -d 512 -o 2000) || exit 1; echo "$$out"; \
	  ! echo "$$out" | grep -q '^FAIL'

clean:
	rm -rf $(B)
