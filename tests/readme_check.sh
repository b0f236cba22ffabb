#!/usr/bin/env bash
# The README's example must compile warning-free and run: extract, build, run.
cd "$(dirname "$0")/.." || exit 1
awk '/^```c$/{f=1;next} /^```$/{if(f){exit}} f' README.md > build/readme_example.c
if printf '#include <stdio.h>\n' | cat - build/readme_example.c > build/readme_example2.c \
   && cc -std=c11 -Wall -Wextra -pedantic -Werror -I. build/readme_example2.c -o build/readme_example -pthread -lm \
   && ./build/readme_example; then
  echo "PASS readme example"; echo "readme: 1 passed, 0 failed"
else
  echo "FAIL readme example"; echo "readme: 0 passed, 1 failed"; exit 1
fi
