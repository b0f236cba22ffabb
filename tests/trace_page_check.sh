#!/usr/bin/env bash
# The replay page of dp_trace_write_html lives in tools/trace_page.html; the
# string literals in depeng.h are generated from it (tools/gen_trace_page.py,
# make trace-page). Fails when depeng.h's generated block and the page
# disagree, and checks that the check itself notices a changed page.
set -u
cd "$(dirname "$0")/.." || exit 1
py=${PYTHON:-python3}
pass=0; fail=0
ok()  { echo "PASS $1"; pass=$((pass + 1)); }
bad() { echo "FAIL $1"; fail=$((fail + 1)); }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT

if "$py" tools/gen_trace_page.py --check depeng.h tools/trace_page.html; then
  ok "depeng.h's trace page block is what tools/trace_page.html makes"
else bad "depeng.h's trace page block differs from tools/trace_page.html: run make trace-page"; fi

# a page changed in one character must be caught, and regenerating must fix it
cp depeng.h "$tmp/depeng.h"
sed 's/<title>depeng trace<\/title>/<title>depeng trace!<\/title>/' tools/trace_page.html > "$tmp/page.html"
if cmp -s tools/trace_page.html "$tmp/page.html"; then bad "the page has no <title>depeng trace</title> to change for the self-test"
elif "$py" tools/gen_trace_page.py --check "$tmp/depeng.h" "$tmp/page.html" 2>/dev/null; then
  bad "a changed page went unnoticed"
elif "$py" tools/gen_trace_page.py "$tmp/depeng.h" "$tmp/page.html" && "$py" tools/gen_trace_page.py --check "$tmp/depeng.h" "$tmp/page.html" \
     && grep -q '"<title>depeng trace!</title>\\n",' "$tmp/depeng.h"; then
  ok "a changed page is noticed, and regenerating takes it in"
else bad "regenerating from a changed page"; fi

# every literal of the block within C's 4095 characters (-pedantic)
long=$(awk '/^\/\* BEGIN GENERATED from tools\/trace_page.html/ {on = 1} on && length($0) > 4000 {print FNR} /^\/\* END GENERATED from tools\/trace_page.html/ {on = 0}' depeng.h | head -3)
if [ -z "$long" ]; then ok "every generated literal is under 4000 characters"; else bad "generated lines too long: $long"; fi

echo "trace_page: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
