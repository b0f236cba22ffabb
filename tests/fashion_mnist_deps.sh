#!/usr/bin/env bash
# tests/fashion_mnist_deps.sh - installs Debian's dataset-fashion-mnist (the
# Fashion-MNIST idx files, gzipped, under /usr/share/datasets/fashion-mnist/)
# when it is missing, for test_data's fashion_mnist_files test (a named SKIP
# without it); otherwise touches nothing.
set -euo pipefail
if [ -f /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ]; then
    echo "tests/fashion_mnist_deps.sh: nothing to install (dataset-fashion-mnist present)"
    exit 0
fi
"$(dirname "$0")/apt_install.sh" tests/fashion_mnist_deps.sh dataset-fashion-mnist
