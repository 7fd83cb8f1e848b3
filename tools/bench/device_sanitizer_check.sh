#!/usr/bin/env bash
# The GPU code under NVIDIA's compute-sanitizer, on a GPU machine in one call (issue 15):
#   memcheck (out-of-bounds and misaligned accesses, leaks), racecheck (shared-memory hazards),
#   synccheck (barrier misuse) and initcheck (reads of device memory never written)
#   over each CUDA test executable named in $TESTS, and over `ringfeed train` for a few steps in
#   each GPU mode (streaming float32 with and without the CUDA graph, streaming bf16, managed) and
#   with augmentation, AdamW, label smoothing and a schedule (float32 and bf16).
# Runs $PAR of them at once (one GPU; each is small), each under a $LIMIT s timeout. Prints one
# line per (tool, program): its error summary, exit status and time; the full logs go to
# OUT_DIR/sanitizer-logs.tar.gz. Exit 1 where any run reported an error or did not finish.
# Usage: TESTS="kernels_cuda_backend_test@4 ..." TOOLS="memcheck racecheck" TRAIN=0|1 \
#          tools/bench/device_sanitizer_check.sh PKG OUT
#   PKG holds bin/ and tests/ of a static build (tools/bench/package_device.sh).
#   TEST@K runs the test's cases as K GoogleTest shards (GTEST_TOTAL_SHARDS), K jobs in parallel:
#   racecheck and memcheck slow the kernels by 10-100 times. TOOLS: default all four. TRAIN=0
#   leaves out the `ringfeed train` runs (racecheck runs them for 3 steps, the others 12);
#   TRAIN_JOBS=REGEX keeps only those whose name matches. GTEST_FILTER narrows every test.
# Tests that measure the GPU (free memory, event times) skip themselves under the tool
# (RF_SKIP_UNDER_CUDA_TOOL, tests/testing/require_gpu.h): its allocations and latency falsify them.
set -uo pipefail
pkg=$(realpath "$1")
out=$(realpath -m "$2")
logs=$out/sanitizer-logs
work=${RINGFEED_DATA:-/var/tmp/ringfeed-sanitizer}
mkdir -p "$logs" "$work"
trap 'tar -C "$out" -czf "$out/sanitizer-logs.tar.gz" sanitizer-logs && rm -rf "$logs"' EXIT
export NCCL_NVLS_ENABLE=0

cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
[ -x "$cs" ] || { echo "no compute-sanitizer on this machine" >&2; exit 1; }
echo "== $("$cs" --version | tail -1); $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)"

data=$work/small.rfd
"$pkg/bin/ringfeed-convert" synthetic -o "$data" --samples 8192 --shape 3,32,32 --classes 10 \
  --seed 7 >"$logs/convert.log" 2>&1 || { cat "$logs/convert.log"; exit 1; }

# Jobs: "tool name command...", one a line.
jobs=$work/jobs.txt
: >"$jobs"
for tool in ${TOOLS:-memcheck racecheck synccheck initcheck}; do
  for spec in ${TESTS:-}; do
    t=${spec%@*}
    shards=1
    [ "$spec" = "$t" ] || shards=${spec#*@}
    for ((i = 0; i < shards; i++)); do
      if [ "$shards" -eq 1 ]; then
        echo "$tool $t - $pkg/tests/$t" >>"$jobs"
      else
        echo "$tool $t.$i $i/$shards $pkg/tests/$t" >>"$jobs"
      fi
    done
  done
  [ "${TRAIN:-1}" = 1 ] || continue
  steps=12
  [ "$tool" = racecheck ] && steps=3
  train="$pkg/bin/ringfeed train --data $data --batch-size 128 --max-steps $steps --epochs 1"
  echo "$tool train-graph - $train --cuda-graph on" >>"$jobs"
  echo "$tool train-eager - $train --cuda-graph off" >>"$jobs"
  echo "$tool train-bf16 - $train --precision bf16" >>"$jobs"
  echo "$tool train-managed - $train --mode managed" >>"$jobs"
  # Augmentation in the fused decode (float32 and bf16), AdamW, label smoothing and a schedule.
  more="--augment crop:4,flip,erase:0.5 --optimizer adamw --label-smoothing 0.1 --lr-schedule cosine"
  echo "$tool train-augment - $train $more" >>"$jobs"
  echo "$tool train-augment-bf16 - $train $more --precision bf16" >>"$jobs"
done

# TRAIN_JOBS: an extended regex; only the train runs whose name matches it (e.g. 'augment').
if [ -n "${TRAIN_JOBS:-}" ]; then
  awk -v re="${TRAIN_JOBS}" '$2 !~ /^train-/ || $2 ~ re' "$jobs" >"$jobs.kept" && mv "$jobs.kept" "$jobs"
fi

run_one() {  # tool name shard(I/K or -) command...
  local tool=$1 name=$2 shard=$3
  shift 3
  if [ "$shard" != - ]; then
    export GTEST_SHARD_INDEX=${shard%/*} GTEST_TOTAL_SHARDS=${shard#*/}
  fi
  local log=$logs/$tool-$name.log extra=()
  case "$tool" in
    memcheck) extra=(--leak-check full) ;;
    racecheck) extra=(--racecheck-report all) ;;
  esac
  local t0=$SECONDS
  # API errors are not reported: each is returned to its caller, which checks it (ringfeed checks
  # every call), and the tests provoke some on purpose (a device that does not exist), as NCCL
  # does probing its kernels (cudaFuncGetAttributes: cudaErrorNoKernelImageForDevice).
  timeout "${LIMIT:-300}" "$cs" --tool "$tool" "${extra[@]}" --report-api-errors no \
    --error-exitcode 97 --print-limit 20 "$@" >"$log" 2>&1
  local rc=$?
  local summary
  summary=$(grep -Eo '(ERROR|RACECHECK) SUMMARY: .*' "$log" | tail -1)
  local verdict=ok
  # A shard whose tests make no CUDA call (a check of options, tests skipped under the tool): the
  # tool exits 255 with nothing to check.
  if [ $rc -eq 255 ] && grep -q 'terminated before first instrumented API call' "$log" &&
    grep -q '^\[  PASSED  \]' "$log" && ! grep -q '^\[  FAILED  \]' "$log"; then
    rc=0
    summary="no CUDA call to check"
  fi
  if [ $rc -eq 124 ]; then verdict="TIMEOUT"
  elif [ $rc -eq 97 ]; then verdict="ERRORS"
  elif [ $rc -ne 0 ]; then verdict="FAILED (exit $rc)"
  fi
  printf '%-10s %-40s %-18s %4d s  %s\n' "$tool" "$name" "$verdict" $((SECONDS - t0)) \
    "${summary:-no summary}"
}
export -f run_one
export cs logs
xargs -P "${PAR:-4}" -L 1 bash -c 'run_one "$@"' _ <"$jobs" | tee "$out/sanitizer-summary.txt"

echo "== findings (the first of each kind, from every log that has one)"
for log in "$logs"/*.log; do
  if grep -qE '^========= (Invalid|Program hit|Race|Barrier|Uninitialized|Leaked|Error)' "$log"; then
    echo "-- $(basename "$log")"
    grep -E -A6 '^========= (Invalid|Program hit|Race|Barrier|Uninitialized|Leaked|Error)' "$log" |
      head -24
  fi
done
! grep -qvE ' ok +[0-9]+ s' "$out/sanitizer-summary.txt"
