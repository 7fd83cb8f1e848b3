#!/usr/bin/env bash
# The training-engine checks on a GPU machine, in one call (device time is scarce):
#   1. the test executables of a carried static build (TESTS, default all), with the GPU present;
#   2. ringfeed-bench-compute: the CUDA backend's compute-only throughput at batch 128, 256 and
#      1024 for each of $COMPUTE_VARIANTS (flag sets), and ncu's per-kernel split of one
#      bf16 step at batch 256 (tools/bench/ncu_kernels.py);
#   3. the default model trained on Fashion-MNIST on the GPU, $EPOCHS epochs (default 15), once
#      per precision in $PRECISIONS (default "bf16 tf32").
# Usage: tools/bench/device_train_check.sh PKG_DIR FMNIST_DIR OUT_DIR
#   PKG_DIR holds bin/ (ringfeed, ringfeed-convert, ringfeed-bench-compute) and tests/ (the test
#   executables) of a static build (cmake -DRINGFEED_STATIC_DEPS=ON); FMNIST_DIR the four gzipped
#   IDX files of Fashion-MNIST (the GPU machine lacks Debian's dataset-fashion-mnist).
# Logs go to OUT_DIR/logs.tar.gz (the device tool returns at most 8 files).
set -uo pipefail
pkg=$(realpath "$1")
fm=$(realpath "$2")
out=$(realpath -m "$3")
logs=$out/logs
work=${RINGFEED_DATA:-/var/tmp/ringfeed-train}
mkdir -p "$logs" "$work"
trap 'tar -C "$out" -czf "$out/logs.tar.gz" logs && rm -rf "$logs"' EXIT

echo "== machine"
nvidia-smi --query-gpu=name,memory.total,memory.used,driver_version --format=csv,noheader
echo "kernel $(uname -r), $(nproc) cores"
ldd "$pkg/bin/ringfeed" | grep -E 'not found' || echo "ldd: no missing libraries"

if [ "${TESTS:-all}" != none ]; then
  echo "== tests"
  failed=0
  export RINGFEED_BIN=$pkg/bin RINGFEED_FASHION_MNIST=$fm
  for t in "$pkg"/tests/*_test; do
    name=$(basename "$t")
    [ "${TESTS:-all}" = all ] || [[ " $TESTS " == *" $name "* ]] || continue
    if "$t" >"$logs/$name.log" 2>&1; then r=ok; else r=FAILED; failed=1; fi
    echo "$name: $r, $(grep -Eo '[0-9]+ tests? from [0-9]+ test suites? ran' "$logs/$name.log")"
    [ $r = ok ] || grep -E -B3 -A12 '(Failure|FAILED  \])' "$logs/$name.log" | head -60
  done
  grep -h -E '^(tiny|cifar|odd).*loss cpu|rel ' "$logs"/kernels_cuda_backend_test.log |
    grep -A8 -E 'bf16|tf32' | head -60
  echo "tests: $([ $failed = 0 ] && echo all passed || echo SOME FAILED)"
fi

bench=$pkg/bin/ringfeed-bench-compute
if [ "${COMPUTE:-1}" = 1 ]; then
  echo "== compute-only throughput"
  IFS=';' read -ra variants <<<"${COMPUTE_VARIANTS:---bf16 on --graph on;--bf16 on --graph off;--tf32 on --graph on}"
  for v in "${variants[@]}"; do
    # shellcheck disable=SC2086
    "$bench" $v --steps 300 --json "$logs/compute $v.json" 2>&1 | grep -E '^batch|conv' | head -8
  done
  if [ "${NCU:-1}" = 1 ] && command -v ncu >/dev/null; then
    echo "== per-kernel time of one bf16 step at batch 256 (ncu)"
    python3 tools/bench/ncu_kernels.py "$bench" --bf16 on --graph off --batch 256 --steps 5 \
      --warmup 5 2>&1 | head -40
  fi
fi

echo "== Fashion-MNIST on the GPU"
conv="$pkg/bin/ringfeed-convert"
"$conv" idx --images "$fm/train-images-idx3-ubyte.gz" --labels "$fm/train-labels-idx1-ubyte.gz" \
  -o "$work/fmnist-train.rfd" >/dev/null
"$conv" idx --images "$fm/t10k-images-idx3-ubyte.gz" --labels "$fm/t10k-labels-idx1-ubyte.gz" \
  -o "$work/fmnist-test.rfd" >/dev/null
for p in ${PRECISIONS-bf16 tf32}; do
  echo "-- precision $p"
  "$pkg/bin/ringfeed" train --data "$work/fmnist-train.rfd" --test "$work/fmnist-test.rfd" \
    --device cuda --precision "$p" --epochs "${EPOCHS:-15}" --batch-size "${BATCH:-128}" \
    ${TRAIN_FLAGS:-} --metrics "$logs/fmnist-$p.jsonl" | grep -E '^(epoch|backend|GPU|ringfeed)'
done
