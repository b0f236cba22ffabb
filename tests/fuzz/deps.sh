#!/usr/bin/env bash
# Installs what make fuzz needs when it is missing: clang, and libFuzzer's
# runtime (libclang_rt.fuzzer, in Debian's libclang-rt-<version>-dev) for the
# clang that is installed, through tests/apt_install.sh (root or sudo).
set -euo pipefail
links() {
  printf 'int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n) { (void)d; (void)n; return 0; }\n' \
    | clang -x c -fsanitize=fuzzer,address,undefined - -o /dev/null 2>/dev/null
}
command -v clang >/dev/null && links && exit 0
command -v clang >/dev/null || "$(dirname "$0")/../apt_install.sh" tests/fuzz/deps.sh clang
if ! links; then
  major=$(clang -dumpversion | cut -d. -f1)
  "$(dirname "$0")/../apt_install.sh" tests/fuzz/deps.sh "libclang-rt-$major-dev"
fi
links || { echo "fuzz: clang cannot link -fsanitize=fuzzer programs (libFuzzer's runtime is missing)"; exit 1; }
