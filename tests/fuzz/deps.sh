#!/usr/bin/env bash
# Installs what make fuzz needs when it is missing: clang, and libFuzzer's
# runtime (libclang_rt.fuzzer, in Debian's libclang-rt-<version>-dev) for the
# clang that is installed. Uses apt-get only; needs root when it installs.
set -euo pipefail
links() {
  printf 'int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n) { (void)d; (void)n; return 0; }\n' \
    | clang -x c -fsanitize=fuzzer,address,undefined - -o /dev/null 2>/dev/null
}
command -v clang >/dev/null && links && exit 0
apt-get update -qq
command -v clang >/dev/null || apt-get install -y -qq clang
if ! links; then
  major=$(clang -dumpversion | cut -d. -f1)
  apt-get install -y -qq "libclang-rt-$major-dev"
fi
links || { echo "fuzz: clang cannot link -fsanitize=fuzzer programs (libFuzzer's runtime is missing)"; exit 1; }
