#!/usr/bin/env bash
# Keeps README.md navigable and its figures true to the repository:
#  - the contents list (the bullet list under "## Contents") names every "## "
#    heading after it, in order, each once, with the heading's text, and each
#    link's anchor is GitHub's slug of that heading (lower case, punctuation
#    dropped, spaces to hyphens, -1, -2 ... for repeats);
#  - every in-page link "](#anchor)" anywhere in README.md leads to a heading;
#  - every header line count README quotes as "name.h (N lines)" is within 2%
#    of wc -l, and each header in the repository is quoted at least once;
#  - every repository path README names in backticks (examples/, tests/,
#    bench/, docs/, data/, tools/, cmake/, .ci/) exists;
#  - every dp_*, DP_* and DEPENG_* name README uses is in a header;
#  - the version in README's find_package example is depeng.h's MAJOR.MINOR.
# Headings and links inside ``` fences are ignored.
# Usage: tests/readme_toc_check.sh [README] (default README.md; a copy can be
# given to see the check fail).
set -u
export LC_ALL=C   # sort, comm and join agree on one order
cd "$(dirname "$0")/.." || exit 1
readme=${1:-README.md}
pass=0; fail=0
ok()  { echo "PASS $1"; pass=$((pass + 1)); }
bad() { echo "FAIL $1"; fail=$((fail + 1)); }
if [ ! -f "$readme" ]; then bad "$readme: no such file"; echo "readme_toc: $pass passed, $fail failed"; exit 1; fi
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT

# README without its fenced blocks (line numbers kept: fenced lines become empty)
awk '/^```/ {f = !f; print ""; next} { print (f ? "" : $0) }' "$readme" > "$tmp/prose"

# GitHub's anchor for each heading (#..######), in order, repeats numbered.
# Inline markup goes first: `code`, **bold**, *em*, [text](url).
perl -CSD -ne '
  next unless /^(#{1,6}) +(.*?) *#* *$/;
  my ($level, $t) = (length $1, $2);
  $t =~ s/\[([^\]]*)\]\([^)]*\)/$1/g; $t =~ s/[`*]//g;
  my $s = lc $t; $s =~ s/[^\p{L}\p{M}\p{N}\p{Pc} \-]//g; $s =~ s/ /-/g;
  my $a = $s; $a .= "-" . $seen{$s} if $seen{$s}; $seen{$s}++;
  print "$level\t$a\t$t\n";' "$tmp/prose" > "$tmp/headings"

# The "## " headings after "## Contents", and the contents list itself.
awk -F'\t' 'on && $1 == 2 {print $3 "\t" $2} $1 == 2 && $3 == "Contents" {on = 1}' "$tmp/headings" > "$tmp/want"
awk '/^## Contents *$/ {on = 1; next} on && /^## / {exit} on && /^[-*] / {print}' "$tmp/prose" \
  | perl -CSD -ne 'if (/^[-*] +\[([^\]]*)\]\(#([^)]*)\) *$/) { print "$1\t$2\n" } else { chomp; print "UNREADABLE\t$_\n" }' > "$tmp/toc"

if ! grep -q '^## Contents *$' "$tmp/prose"; then
  bad "no \"## Contents\" heading"
elif [ ! -s "$tmp/want" ]; then
  bad "no \"## \" heading after the contents"
else
  if grep -q '^UNREADABLE' "$tmp/toc"; then
    bad "contents lines that are not \"- [Heading](#anchor)\":"; grep '^UNREADABLE' "$tmp/toc" | cut -f2 | sed 's/^/  /'
  fi
  if cmp -s <(cut -f1 "$tmp/toc") <(cut -f1 "$tmp/want"); then
    ok "contents lists the $(wc -l < "$tmp/want") \"## \" headings in order"
  else
    bad "contents and \"## \" headings differ (entry: contents | heading):"
    if [ "$(wc -l < "$tmp/toc")" -eq "$(wc -l < "$tmp/want")" ]; then   # same entries, other order
      paste -d '|' <(cut -f1 "$tmp/toc") <(cut -f1 "$tmp/want") | awk -F'|' '$1 != $2 {print "  " NR ": " $1 " | " $2}'
    else
      diff <(cut -f1 "$tmp/toc") <(cut -f1 "$tmp/want") | sed -nE 's/^< (.*)/  listed, but no such heading: \1/p; s/^> (.*)/  heading not listed: \1/p'
    fi
  fi
  # anchors of the entries whose text is a heading's (the list above covers the rest)
  wrong=$(join -t "$(printf '\t')" <(sort "$tmp/toc") <(sort "$tmp/want") | awk -F'\t' '$2 != $3 {print "  " $1 ": #" $2 " -> #" $3}')
  twice=$(cut -f1 "$tmp/toc" | sort | uniq -d | sed 's/^/  listed twice: /')
  if [ -z "$wrong$twice" ]; then
    ok "every contents anchor is GitHub's slug of its heading"
  else
    bad "contents anchors that are not the heading's slug (text: anchor given -> slug):"
    printf '%s\n' "$wrong$twice" | grep .
  fi
fi

# In-page links anywhere: each must be a heading's anchor.
grep -oE '\]\(#[^)]*\)' "$tmp/prose" | sed -E 's/^\]\(#//; s/\)$//' | sort -u > "$tmp/links"
cut -f2 "$tmp/headings" | sort -u > "$tmp/anchors"
dead=$(comm -23 "$tmp/links" "$tmp/anchors")
if [ -z "$dead" ]; then ok "every in-page link leads to a heading ($(wc -l < "$tmp/links") anchors)"
else bad "in-page links to no heading:"; printf '%s\n' "$dead" | sed 's/^/  #/'; fi

# Header sizes: "depeng.h (11,466 lines)" within 2% of wc -l.
grep -oE '\b[A-Za-z0-9_]+\.h`? \([0-9][0-9,]* lines\)' "$tmp/prose" | tr -d '`' | sort -u > "$tmp/sizes"
for h in *.h; do
  if ! grep -q "^$h (" "$tmp/sizes"; then bad "$h: README quotes no line count for it (\"$h (N lines)\")"; fi
done
while read -r name count _; do
  n=${count#(}; n=${n//,/}
  if [ ! -f "$name" ]; then bad "README quotes the size of $name, which is not in the repository"; continue; fi
  actual=$(wc -l < "$name")
  if awk -v q="$n" -v a="$actual" 'BEGIN {d = q - a; if (d < 0) d = -d; exit !(d <= 0.02 * a)}'; then
    ok "$name: README's $n lines is within 2% of wc -l ($actual)"
  else
    bad "$name: README says $n lines, wc -l says $actual (more than 2% off)"
  fi
done < "$tmp/sizes"

# Repository paths named in backticks exist.
# shellcheck disable=SC2016  # the backticks are Markdown's, not the shell's
grep -oE '`(\.ci|bench|cmake|data|docs|examples|tests|tools)/[A-Za-z0-9_./-]*`' "$tmp/prose" | tr -d '`' | sort -u > "$tmp/paths"
missing=$(while read -r p; do [ -e "$p" ] || echo "$p"; done < "$tmp/paths")
if [ -z "$missing" ]; then ok "the $(wc -l < "$tmp/paths") repository paths README names exist"
else bad "README names paths that do not exist:"; printf '%s\n' "$missing" | sed 's/^/  /'; fi

# Names: every dp_*, DP_* and DEPENG_* name README uses (prose and code) is
# in the headers' code (comments dropped: a comment may still name what was
# removed), DP_LOGITEM_X as X in the log item list, DEPENG_* options also in
# CMakeLists.txt; so a renamed or removed name cannot linger here. A name
# ending in "_" is a family ("dp_atomic_*") and is skipped.
name_re='\b(dp|DP|DEPENG)_[A-Za-z0-9_]*[A-Za-z0-9]\b'
grep -oE "$name_re" "$readme" | sort -u > "$tmp/names"
{ for h in ./*.h; do gcc -fpreprocessed -dD -E -P -x c "$h" 2>/dev/null || cat "$h"; done | grep -oE "$name_re"
  sed -nE 's/^ *X\(([A-Z0-9_]+),.*/DP_LOGITEM_\1/p' depeng.h
  [ ! -f CMakeLists.txt ] || grep -oE '\bDEPENG_[A-Z0-9_]*[A-Z0-9]\b' CMakeLists.txt
} | sort -u > "$tmp/declared"
unknown=$(comm -23 "$tmp/names" "$tmp/declared")
if [ -z "$unknown" ]; then ok "the $(wc -l < "$tmp/names") dp_/DP_/DEPENG_ names README uses are in the headers"
else bad "README uses names that no header has (renamed or removed?):"; printf '%s\n' "$unknown" | sed 's/^/  /'; fi

# find_package's version against the header's (0.x: the minor version must match).
major=$(sed -nE 's/^#define DEPENG_VERSION_MAJOR +([0-9]+).*/\1/p' depeng.h)
minor=$(sed -nE 's/^#define DEPENG_VERSION_MINOR +([0-9]+).*/\1/p' depeng.h)
quoted=$(grep -oE 'find_package\(depeng [0-9]+\.[0-9]+' "$readme" | sed 's/.* //' | sort -u)
if [ -z "$major" ] || [ -z "$minor" ]; then bad "depeng.h: no DEPENG_VERSION_MAJOR / _MINOR"
elif [ -z "$quoted" ]; then ok "README quotes no find_package version"
elif [ "$quoted" = "$major.$minor" ]; then ok "find_package example asks for $quoted, depeng.h's version"
else bad "find_package example asks for $(printf '%s ' "$quoted")(README), depeng.h is $major.$minor"; fi

echo "readme_toc: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
