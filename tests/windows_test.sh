#!/usr/bin/env bash
# tests/windows_test.sh - the second half of make windows-test: runs the
# Windows builds in build/win under Wine and prints "N passed, M failed"
# (", K skipped") through tests/run.sh. Every program gets a wrapper
# build/win/NAME that runs NAME.exe under tests/wine_run.sh and turns the
# CR LF of Windows text-mode stdout into LF, so the Linux checks apply as
# they are.
set -u
cd "$(dirname "$0")/.." || exit 1
root=$PWD
W=build/win
for exe in "$W"/*.exe; do
    name=$(basename "$exe" .exe)
    printf '#!/usr/bin/env bash\nset -o pipefail\n"%s/tests/wine_run.sh" "%s/%s" "$@" | tr -d '"'"'\\r'"'"'\n' \
        "$root" "$root" "$exe" > "$W/$name"
    chmod +x "$W/$name"
done
# the first Wine start creates the prefix; done here so no test's time includes it
start=$(date +%s)
tests/wine_run.sh cmd /c "exit 0" > /dev/null 2>&1
echo "wine: prefix ready in $(( $(date +%s) - start )) s ($(tests/wine_run.sh --version 2>/dev/null | tr -d '\r'))"
DEPENG_EXAMPLE_BIN=$W tests/run.sh "$W"/test_engine "$W"/test_ndarray "$W"/test_autograd "$W"/test_symbol "$W"/test_invoke \
    tests/walkthrough_check.sh tests/examples_check.sh tests/windows_make_check.sh
