#!/usr/bin/env bash
# The disk-stage checks on a GPU machine, in one call (device time is scarce):
#   1. the test suite of a carried static build, with the GPU present;
#   2. a CIFAR-shaped synthetic dataset of $RINGFEED_GB GB (default 16) made with ringfeed-convert;
#   3. ringfeed read against fio (io_uring, O_DIRECT) on it, cold cache, interleaved, repeated.
# Usage: tools/bench/device_disk_check.sh BIN_DIR TEST_DIR OUT_DIR
#   BIN_DIR holds ringfeed and ringfeed-convert, TEST_DIR the test executables (a static build
#   made elsewhere: cmake -DRINGFEED_STATIC_DEPS=ON, copied without its build tree).
# Expects fio packed by tools/bench/package-fio.sh at .carry/fiopkg.tar.xz (or fio on PATH).
set -uo pipefail
bin=$(realpath "$1")
tests=$(realpath "$2")
out=$(realpath -m "$3")
data=${RINGFEED_DATA:-/var/tmp/ringfeed}
gb=${RINGFEED_GB:-16}
mkdir -p "$out" "$data"
export RINGFEED_BIN=$bin

echo "== machine"
nvidia-smi --query-gpu=name,memory.total,memory.used,driver_version --format=csv,noheader
echo "kernel $(uname -r), $(nproc) cores"; free -g | head -2; df -hT "$data" | tail -1
ldd "$bin/ringfeed" | grep -E 'not found|uring|xxhash' || echo "ldd: no missing libraries"

if [ -z "${SKIP_TESTS:-}" ]; then
echo "== tests"
failed=0
# Fashion-MNIST comes from a Debian package the GPU machine does not have.
export GTEST_FILTER=${GTEST_FILTER:--FashionMnist.*}
for t in "$tests"/*_test; do
  if "$t" --gtest_brief=1 >"$out/$(basename "$t").log" 2>&1; then r=ok; else r=FAILED; failed=1; fi
  echo "$(basename "$t"): $r, $(grep -Eo '[0-9]+ tests? from [0-9]+ test suites? ran' "$out/$(basename "$t").log")"
done
echo "tests: $([ $failed = 0 ] && echo all passed || echo SOME FAILED)"
fi

if [ -f .carry/fiopkg.tar.xz ]; then
  tar -C /tmp -xJf .carry/fiopkg.tar.xz
  printf '#!/bin/sh\nLD_LIBRARY_PATH=/tmp/fiopkg/lib exec /tmp/fiopkg/fio "$@"\n' >/tmp/fio
  chmod +x /tmp/fio
  export FIO=/tmp/fio
fi
${FIO:-fio} --version || { echo "no fio"; exit 1; }

echo "== synthetic ${gb} GB"
samples=$((gb * 1000000000 / 3073))
start=$(date +%s%N)
"$bin/ringfeed-convert" synthetic --samples "$samples" --shape 3,32,32 --classes 10 --seed 1 \
  -o "$data/synthetic.rfd" 2>&1 | tail -2; echo "convert exit ${PIPESTATUS[0]}"
echo "convert wall time: $((($(date +%s%N) - start) / 1000000)) ms (fsync and rename included)"
ls -la "$data"

echo "== read vs fio"
python3 tools/bench/read_vs_fio.py "$data/synthetic.rfd" --rounds "${ROUNDS:-5}" --out "$out" \
  --configs "${CONFIGS:-}" --variants "${VARIANTS:-}" \
  --ringfeed "$bin/ringfeed"
