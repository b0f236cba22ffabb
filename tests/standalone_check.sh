#!/usr/bin/env bash
# The repository must make sense on its own: no tracked file may point at
# a directory beside it or cite internal documents by number, which mean
# nothing to a user; cite public sources by name.
cd "$(dirname "$0")/.." || exit 1
pass=0; fail=0
check() {   # $1 = what, $2 = extended regular expression
  local hits
  hits=$(git ls-files -z | xargs -0 grep -nIE -- "$2" 2>/dev/null | grep -v '^tests/standalone_check.sh:')
  if [ -z "$hits" ]; then echo "PASS standalone: no $1"; pass=$((pass + 1))
  else echo "FAIL standalone: $1:"; printf '%s\n' "$hits" | sed 's/^/  /'; fail=$((fail + 1)); fi
}
if ! git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  echo "FAIL standalone: not a git work tree (the check lists tracked files)"; echo "standalone: 0 passed, 1 failed"; exit 1
fi
check "reference to a directory beside the repository" '\.\./shared|/work/shared'
check "citation of numbered documents" '[Ss]eed[ _-]?0[0-9]{2}|seed('"'"'s)? (example|walkthrough|program|graph|SimpleOp)|seed_example'
echo "standalone: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
