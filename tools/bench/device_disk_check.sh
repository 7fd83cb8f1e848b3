#!/usr/bin/env bash
# The disk-stage checks on a GPU machine, in one call (device time is scarce):
#   1. the test suite of a carried static build, with the GPU present;
#   2. a CIFAR-shaped synthetic dataset of $RINGFEED_GB GB (default 16) made with ringfeed-convert;
#   3. ringfeed read against fio (io_uring, O_DIRECT) on it, cold cache, interleaved, repeated.
# Usage: tools/bench/device_disk_check.sh BUILD_DIR OUT_DIR
# Expects fio packed by tools/bench/package-fio.sh at .carry/fiopkg.tar.xz (or fio on PATH).
set -uo pipefail
build=$(realpath "$1")
out=$(realpath -m "$2")
data=${RINGFEED_DATA:-/var/tmp/ringfeed}
gb=${RINGFEED_GB:-16}
mkdir -p "$out" "$data"
export RINGFEED_BIN=$build/bin

echo "== machine"
nvidia-smi --query-gpu=name,memory.total,memory.used,driver_version --format=csv,noheader
echo "kernel $(uname -r), $(nproc) cores"; free -g | head -2; df -hT "$data" | tail -1
ldd "$build/bin/ringfeed" | grep -E 'not found|uring|boost|xxhash' || echo "ldd: no missing libraries"

echo "== tests"
(cd "$build" && ctest --output-on-failure -j8 >"$out/ctest.log" 2>&1); echo "ctest exit $?"
grep -E 'tests passed|tests failed|Failed|Skipped|\*\*\*' "$out/ctest.log" | tail -15

if [ -f .carry/fiopkg.tar.xz ]; then
  tar -C /tmp -xJf .carry/fiopkg.tar.xz
  printf '#!/bin/sh\nLD_LIBRARY_PATH=/tmp/fiopkg/lib exec /tmp/fiopkg/fio "$@"\n' >/tmp/fio
  chmod +x /tmp/fio
  export FIO=/tmp/fio
fi
${FIO:-fio} --version || { echo "no fio"; exit 1; }

echo "== synthetic ${gb} GB"
samples=$((gb * 1000000000 / 3073))
/usr/bin/time -v "$build/bin/ringfeed-convert" synthetic --samples "$samples" --shape 3,32,32 \
  --classes 10 --seed 1 --quiet -o "$data/synthetic.rfd" 2>"$out/convert.time"; echo "convert exit $?"
grep -E 'Elapsed|Maximum resident' "$out/convert.time"
ls -la "$data"

echo "== read vs fio"
python3 tools/bench/read_vs_fio.py "$data/synthetic.rfd" --repeats 3 --out "$out" \
  --ringfeed "$build/bin/ringfeed"
