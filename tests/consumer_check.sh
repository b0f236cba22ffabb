#!/usr/bin/env bash
# Builds and runs a tiny program that uses depeng the three ways README.md
# ("Installing / using in your project") offers, each in a fresh temporary
# directory:
#   pkg-config     `make install DESTDIR=... PREFIX=...`, then
#                  `cc consumer.c $(pkg-config --cflags --libs depeng)`
#   find_package   a CMake project with find_package(depeng CONFIG REQUIRED)
#                  against that installed (staged) prefix
#   add_subdirectory  a CMake project that adds this repository
# and checks that CMake's install() makes the same files as `make install`,
# that a version this depeng does not satisfy is refused, and that `make
# uninstall` removes what was installed and the folders install made (all
# of them in a fresh prefix; a folder holding another package's file is
# kept). CMake has no uninstall target. Any failure fails the check.
# CMake and pkg-config are installed by tests/deps.sh when missing.
set -u
repo=$(cd "$(dirname "$0")/.." && pwd)
CC=${CC:-cc}
MAKE=${MAKE:-make}
pass=0; fail=0
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
ok()  { echo "PASS consumer: $1"; pass=$((pass + 1)); }
bad() { echo "FAIL consumer: $1"; fail=$((fail + 1)); }
bad_log() { bad "$1"; tail -25 "$tmp/log" | sed 's/^/  | /'; }   # with the failed step's output
finish() { echo "consumer_check: $pass passed, $fail failed"; [ "$fail" -eq 0 ]; exit $?; }

if ! command -v cmake >/dev/null 2>&1 || ! command -v pkg-config >/dev/null 2>&1; then
  "$repo/tests/deps.sh" > "$tmp/log" 2>&1 || { bad_log "tests/deps.sh could not install cmake and pkg-config"; finish; }
fi

# The consumer: one file with the implementation; an engine, one op, a wait.
mkdir -p "$tmp/src"
cat > "$tmp/src/consumer.c" <<'EOF'
#define DEPENG_IMPLEMENTATION
#include "depeng.h"

static int set_to_42(dp_run_ctx *rc, void *arg) { (void)rc; *(int *)arg = 42; return 0; }

int main(void) {
    dp_engine *eng = NULL;
    dp_var v;
    int value = 0;
    dp_result r = dp_engine_create(NULL, &eng);
    if (r != DP_OK) { printf("dp_engine_create: %s\n", dp_result_string(r)); return 1; }
    v = dp_var_create(eng);
    r = dp_push_sync(eng, set_to_42, &value, NULL, 0, &v, 1);
    if (r == DP_OK) r = dp_wait_var(eng, v, NULL);
    if (r == DP_OK) r = dp_engine_destroy(eng, NULL);
    else dp_engine_destroy(eng, NULL);
    if (r != DP_OK) { printf("depeng: %s\n", dp_result_string(r)); return 1; }
    printf("depeng %s: value %d\n", DEPENG_VERSION_STRING, value);
    return value == 42 ? 0 : 1;
}
EOF
version=$(sed -n 's/^#define DEPENG_VERSION_STRING "\(.*\)"/\1/p' "$repo/depeng.h")
expect="depeng $version: value 42"

# $1 = what, $2 = program: runs it and compares its line with the expected one
run_consumer() {
  local out
  out=$("$2" 2>&1); local rc=$?
  if [ $rc -eq 0 ] && [ "$out" = "$expect" ]; then ok "$1 (prints '$out')"
  else echo "  got: $out (exit $rc)"; bad "$1: the consumer does not print '$expect'"; fi
}

# $1 = project directory, $2 = build directory, rest = cmake -D options
cmake_build() {
  local src=$1 bin=$2; shift 2
  cmake -S "$src" -B "$bin" "$@" > "$tmp/log" 2>&1 && cmake --build "$bin" >> "$tmp/log" 2>&1
}
# $1 = what, $2 = pkg-config's --libs: -pthread and -lm, the flags the file
# with the implementation links with
check_pc_libs() {
  case " $2 " in *" -pthread "*) ;; *) bad "$1 has no -pthread ($2)"; return;; esac
  case " $2 " in *" -lm "*) ok "$1 has -pthread -lm";; *) bad "$1 has no -lm ($2)";; esac
}
# $1 = what: depeng::depeng's link interface, which the consumer projects
# print, names Threads::Threads and m (CMake's FindThreads adds -pthread
# only where the C library needs it: glibc 2.34 and later do not)
check_target_links() {
  local line
  line=$(sed -n 's/.*depeng::depeng links: //p' "$tmp/log" | tail -1)
  case ";$line;" in *";Threads::Threads;"*) ;; *) bad "$1 links '$line', no Threads::Threads"; return;; esac
  case ";$line;" in *";m;"*) ok "$1 links Threads::Threads and m";; *) bad "$1 links '$line', no m";; esac
}

# ---- 1. make install into a staged prefix, then pkg-config ------------------
prefix=/opt/depeng-check            # what the package says; the files are in $stage$prefix
stage=$tmp/stage
if "$MAKE" -s -C "$repo" install DESTDIR="$stage" PREFIX="$prefix" > "$tmp/log" 2>&1; then
  files=$(cd "$stage" && find . -type f | sort | tr '\n' ' ')
  want="./opt/depeng-check/include/depeng.h ./opt/depeng-check/include/depeng_cuda.h ./opt/depeng-check/include/depeng_mpi.h ./opt/depeng-check/include/depeng_nn.h ./opt/depeng-check/share/cmake/depeng/depengConfig.cmake ./opt/depeng-check/share/cmake/depeng/depengConfigVersion.cmake ./opt/depeng-check/share/pkgconfig/depeng.pc "
  if [ "$files" = "$want" ]; then ok "make install DESTDIR PREFIX installs the headers, depeng.pc and the CMake package"
  else echo "  installed: $files"; echo "  expected:  $want"; bad "make install installs other files"; fi
else
  bad_log "make install DESTDIR=$stage PREFIX=$prefix failed"
fi

# pkg-config reads the staged file; PKG_CONFIG_SYSROOT_DIR puts the stage in
# front of the paths it prints, as for any staged install.
pc() { PKG_CONFIG_PATH="$stage$prefix/share/pkgconfig" PKG_CONFIG_LIBDIR="$stage$prefix/share/pkgconfig" \
       PKG_CONFIG_SYSROOT_DIR="$stage" pkg-config "$@"; }
# shellcheck disable=SC2086   # $flags: several words, split on purpose
if [ "$(pc --modversion depeng 2>&1)" != "$version" ]; then
  echo "  pkg-config --modversion: $(pc --modversion depeng 2>&1)"; bad "pkg-config does not find depeng $version"
elif flags=$(pc --cflags --libs depeng 2>"$tmp/log") \
   && $CC -std=c11 -Wall -Wextra -pedantic -Werror "$tmp/src/consumer.c" -o "$tmp/consumer_pc" $flags > "$tmp/log" 2>&1; then
  run_consumer "pkg-config --cflags --libs depeng ($flags)" "$tmp/consumer_pc"
  check_pc_libs "pkg-config --libs depeng" "$(pc --libs depeng)"
else
  bad_log "building with pkg-config --cflags --libs depeng ($flags)"
fi

# ---- 2. CMake find_package against the staged prefix --------------------------
mkdir -p "$tmp/fp"
cp "$tmp/src/consumer.c" "$tmp/fp/"
cat > "$tmp/fp/CMakeLists.txt" <<EOF
cmake_minimum_required(VERSION 3.14)
project(consumer LANGUAGES C)
find_package(depeng $version CONFIG REQUIRED)
add_executable(consumer consumer.c)
target_link_libraries(consumer PRIVATE depeng::depeng)
get_target_property(links depeng::depeng INTERFACE_LINK_LIBRARIES)
message(STATUS "depeng::depeng links: \${links}")
EOF
if cmake_build "$tmp/fp" "$tmp/fp/build" -DCMAKE_PREFIX_PATH="$stage$prefix"; then
  run_consumer "CMake find_package(depeng $version CONFIG REQUIRED) and depeng::depeng" "$tmp/fp/build/consumer"
  check_target_links "find_package's depeng::depeng"
else
  bad_log "CMake find_package(depeng CONFIG REQUIRED) with CMAKE_PREFIX_PATH=$stage$prefix"
fi
# A version this one does not satisfy must not be found.
mkdir -p "$tmp/fpv"
cat > "$tmp/fpv/CMakeLists.txt" <<EOF
cmake_minimum_required(VERSION 3.14)
project(consumer_version LANGUAGES C)
find_package(depeng 99.0 CONFIG QUIET)
if(depeng_FOUND)
  message(FATAL_ERROR "depeng \${depeng_VERSION} accepted for 99.0")
endif()
find_package(depeng $version CONFIG REQUIRED)   # the same search finds this one
EOF
if cmake -S "$tmp/fpv" -B "$tmp/fpv/build" -DCMAKE_PREFIX_PATH="$stage$prefix" > "$tmp/log" 2>&1; then
  ok "find_package(depeng 99.0) refuses depeng $version, find_package(depeng $version) takes it"
else
  bad_log "find_package(depeng 99.0) accepted depeng $version, or depeng $version was not found"
fi

# ---- 3. CMake add_subdirectory of this repository -----------------------------
mkdir -p "$tmp/sub"
cp "$tmp/src/consumer.c" "$tmp/sub/"
cat > "$tmp/sub/CMakeLists.txt" <<EOF
cmake_minimum_required(VERSION 3.14)
project(consumer LANGUAGES C)
add_subdirectory("$repo" depeng)
add_executable(consumer consumer.c)
target_link_libraries(consumer PRIVATE depeng::depeng)
get_target_property(links depeng::depeng INTERFACE_LINK_LIBRARIES)
message(STATUS "depeng::depeng links: \${links}")
EOF
if cmake_build "$tmp/sub" "$tmp/sub/build"; then
  run_consumer "CMake add_subdirectory of the repository and depeng::depeng" "$tmp/sub/build/consumer"
  check_target_links "add_subdirectory's depeng::depeng"
  # as a subproject depeng builds nothing of its own
  if [ -e "$tmp/sub/build/depeng/test_engine" ] || [ -e "$tmp/sub/build/depeng/walkthrough" ]; then
    bad "add_subdirectory built depeng's tests or examples (they are off for a subproject)"
  fi
else
  bad_log "CMake add_subdirectory($repo)"
fi

# ---- CMake's install() makes the files make install makes -----------------------
if cmake -S "$repo" -B "$tmp/top" -DDEPENG_BUILD_TESTS=OFF -DDEPENG_BUILD_EXAMPLES=OFF \
         -DCMAKE_INSTALL_PREFIX="$prefix" > "$tmp/log" 2>&1 \
   && DESTDIR="$tmp/cmake_stage" cmake --install "$tmp/top" >> "$tmp/log" 2>&1; then
  if diff -r "$tmp/cmake_stage" "$stage" > "$tmp/log" 2>&1; then ok "cmake --install installs the same files as make install"
  else bad_log "cmake --install and make install differ"; fi
else
  bad_log "cmake --install of the repository"
fi

# ---- make uninstall ---------------------------------------------------------------
# Into a fresh prefix: every file and every folder install made goes, so
# nothing is left of the prefix.
if "$MAKE" -s -C "$repo" uninstall DESTDIR="$stage" PREFIX="$prefix" > "$tmp/log" 2>&1; then
  left=$(find "$stage" -type f)
  if [ -z "$left" ]; then ok "make uninstall removes every installed file"
  else echo "  left: $left"; bad "make uninstall leaves files"; fi
  if [ ! -e "$stage$prefix" ]; then ok "make uninstall removes the folders make install made in a fresh prefix"
  else echo "  left: $(cd "$stage" && find . -mindepth 1 | tr '\n' ' ')"; bad "make uninstall leaves folders in a fresh prefix"; fi
else
  bad_log "make uninstall failed"
fi
# Into a prefix whose include/ already holds another file: that folder and
# its file stay; the folders install made (share/...) go.
stage2=$tmp/stage2
mkdir -p "$stage2$prefix/include" && echo "/* another package */" > "$stage2$prefix/include/other.h"
if "$MAKE" -s -C "$repo" install DESTDIR="$stage2" PREFIX="$prefix" > "$tmp/log" 2>&1 \
   && "$MAKE" -s -C "$repo" uninstall DESTDIR="$stage2" PREFIX="$prefix" >> "$tmp/log" 2>&1; then
  left=$(cd "$stage2" && find . -mindepth 1 | sort | tr '\n' ' ')
  want="./opt ./opt/depeng-check ./opt/depeng-check/include ./opt/depeng-check/include/other.h "
  if [ "$left" = "$want" ]; then ok "make uninstall keeps a folder that holds another package's file, and removes the rest"
  else echo "  left:     $left"; echo "  expected: $want"; bad "make uninstall into a used prefix"; fi
else
  bad_log "make install / uninstall into a prefix with include/other.h failed"
fi
finish
