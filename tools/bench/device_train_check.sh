#!/usr/bin/env bash
# The training-engine checks on a GPU machine, in one call (device time is scarce):
#   1. every test executable of a carried static build, with the GPU present;
#   2. ringfeed-bench-compute: the CUDA backend's compute-only throughput (batch 128, 256, 1024),
#      TF32 on and off, CUDA graph on and off;
#   3. the default model trained on Fashion-MNIST on the GPU for $EPOCHS epochs (default 15).
# Usage: tools/bench/device_train_check.sh PKG_DIR FMNIST_DIR OUT_DIR
#   PKG_DIR holds bin/ (ringfeed, ringfeed-convert, ringfeed-bench-compute) and tests/ (the test
#   executables) of a static build (cmake -DRINGFEED_STATIC_DEPS=ON); FMNIST_DIR the four gzipped
#   IDX files of Fashion-MNIST (the GPU machine lacks Debian's dataset-fashion-mnist).
set -uo pipefail
pkg=$(realpath "$1")
fm=$(realpath "$2")
out=$(realpath -m "$3")
work=${RINGFEED_DATA:-/var/tmp/ringfeed-train}
mkdir -p "$out" "$work"

echo "== machine"
nvidia-smi --query-gpu=name,memory.total,memory.used,driver_version --format=csv,noheader
echo "kernel $(uname -r), $(nproc) cores"
ldd "$pkg/bin/ringfeed" | grep -E 'not found' || echo "ldd: no missing libraries"

if [ -z "${SKIP_TESTS:-}" ]; then
  echo "== tests"
  failed=0
  export RINGFEED_BIN=$pkg/bin RINGFEED_FASHION_MNIST=$fm
  for t in "$pkg"/tests/*_test; do
    if "$t" --gtest_brief=1 >"$out/$(basename "$t").log" 2>&1; then r=ok; else r=FAILED; failed=1; fi
    echo "$(basename "$t"): $r, $(grep -Eo '[0-9]+ tests? from [0-9]+ test suites? ran' "$out/$(basename "$t").log")"
    [ $r = ok ] || grep -E '^\[  FAILED|Failure|error' "$out/$(basename "$t").log" | head -20
  done
  grep -h -A3 'PrintWhatTf32OnGives' "$out"/kernels_cuda_backend_test.log | head -8
  echo "tests: $([ $failed = 0 ] && echo all passed || echo SOME FAILED)"
fi

echo "== compute-only throughput"
for tf32 in on off; do
  for graph in off on; do
    "$pkg/bin/ringfeed-bench-compute" --tf32 $tf32 --graph $graph --steps 300 \
      --json "$out/compute-tf32-$tf32-graph-$graph.json" 2>&1 | tail -4
  done
done

echo "== Fashion-MNIST on the GPU"
conv="$pkg/bin/ringfeed-convert"
"$conv" idx --images "$fm/train-images-idx3-ubyte.gz" --labels "$fm/train-labels-idx1-ubyte.gz" \
  -o "$work/fmnist-train.rfd" >/dev/null
"$conv" idx --images "$fm/t10k-images-idx3-ubyte.gz" --labels "$fm/t10k-labels-idx1-ubyte.gz" \
  -o "$work/fmnist-test.rfd" >/dev/null
"$pkg/bin/ringfeed" train --data "$work/fmnist-train.rfd" --test "$work/fmnist-test.rfd" \
  --device cuda --epochs "${EPOCHS:-15}" --batch-size "${BATCH:-128}" ${TRAIN_FLAGS:-} \
  --metrics "$out/fmnist-metrics.jsonl"
