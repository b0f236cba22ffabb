#!/usr/bin/env bash
# tests/apt_install.sh WHO PACKAGE... - installs Debian packages with apt-get
# (apt-get update first), as root or else through sudo, waiting up to 15
# minutes for another apt-get to release the package lock. WHO names the
# calling script in messages. The callers (bench/deps.sh, tests/*deps.sh,
# tests/fuzz/deps.sh) decide what is missing; with no package it does nothing.
set -euo pipefail
[ "$#" -ge 1 ] || { echo "usage: tests/apt_install.sh WHO [PACKAGE...]" >&2; exit 2; }
who=$1; shift
[ "$#" -gt 0 ] || exit 0
SUDO=()
if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then SUDO=(sudo)
    else echo "$who: need root (or sudo) to install: $*" >&2; exit 1; fi
fi
echo "$who: installing $*"
export DEBIAN_FRONTEND=noninteractive
${SUDO[@]+"${SUDO[@]}"} apt-get -o DPkg::Lock::Timeout=900 update -q
${SUDO[@]+"${SUDO[@]}"} apt-get -o DPkg::Lock::Timeout=900 install -y -q --no-install-recommends "$@"
