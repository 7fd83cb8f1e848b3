#!/usr/bin/env bash
# Copies the four Fashion-MNIST IDX .gz files (Debian's dataset-fashion-mnist, or DIR) into
# DEST (default .carry/fmnist, ignored by git) for the GPU-machine scripts that take FMNIST_DIR
# (tools/bench/device_quality_check.sh, device_stream_check.sh). 30 MB.
# Usage: tools/bench/carry_fmnist.sh [DIR [DEST]]
set -euo pipefail
src=${1:-/usr/share/datasets/fashion-mnist}
dest=${2:-.carry/fmnist}
mkdir -p "$dest"
for f in train-images-idx3-ubyte.gz train-labels-idx1-ubyte.gz \
         t10k-images-idx3-ubyte.gz t10k-labels-idx1-ubyte.gz; do
  [ -f "$src/$f" ] || { echo "no $src/$f (apt-get install dataset-fashion-mnist)" >&2; exit 1; }
  cp "$src/$f" "$dest/"
done
ls -l "$dest"
