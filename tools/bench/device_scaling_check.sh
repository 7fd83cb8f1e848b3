#!/usr/bin/env bash
# Issue 28's GPU figures in one call on a machine with 2 GPUs (device time is scarce):
#   1. tests/parallel_ranks_test under `mpirun -np 2` (the NCCL cases: the gradient mean, the
#      buckets against one reduction, the non-finite mean refused on every rank);
#   2. gradient buckets: `ringfeed train` compute-bound (page cache warm, --io buffered,
#      --bind-to none) on a synthetic CIFAR-shaped dataset, one process against 2 ranks with
#      --reduce-buckets 1 (one all-reduce after the backward pass), auto and 5 (a bucket per
#      layer), at batch 256 and 128 a rank, and over sockets (NCCL_P2P_DISABLE=1
#      NCCL_SHM_DISABLE=1, as between machines), interleaved over $ROUNDS rounds (default 3);
#      the figure of each run is its last epoch's samples/s (the first holds the start-up);
#   3. the hand-off into PyTorch (tools/bench/handoff_profile.py): the extension built for the
#      machine's python3 (tools/bench/device_python_check.sh BUILD_ONLY=1), then the CNN fed by
#      ringfeed.Loader against compute alone, on 1 GPU and on 2 (torchrun, DDP), with a
#      torch.profiler summary of each.
# Usage: tools/bench/device_scaling_check.sh PKG_DIR OUT_DIR   (PARTS="ranks buckets handoff")
#   PKG_DIR: tools/bench/package_device.sh's package with tests/parallel_ranks_test.
set -uo pipefail
pkg=$(realpath "$1")
out=$(realpath -m "$2")
here=$(cd "$(dirname "$0")" && pwd)
logs=$out/scaling-logs
work=${RINGFEED_DATA:-/var/tmp/ringfeed-scaling}
mkdir -p "$logs" "$work"
trap 'tar -C "$out" -czf "$out/scaling-logs.tar.gz" scaling-logs && rm -rf "$logs"' EXIT
export NCCL_NVLS_ENABLE=0 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export RINGFEED_MPI_PLUGIN=$pkg/bin/libringfeed_mpi.so
parts=${PARTS:-ranks buckets handoff}
rounds=${ROUNDS:-3}

echo "== machine"
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
gpus=$(nvidia-smi --query-gpu=name --format=csv,noheader | wc -l)
echo "kernel $(uname -r), $(nproc) cores, $gpus GPUs, $(date -u +%FT%TZ)"
echo "tools: $(command -v cmake nsys ninja torchrun | tr "\n" " ")"; python3 -c "import torch; print('torch', torch.__version__)"
if ! ldconfig -p | grep -q 'libnccl\.so\.2'; then
  nccl=$(python3 -c "import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], 'lib'))" 2>/dev/null)
  [ -n "$nccl" ] && export LD_LIBRARY_PATH=$nccl${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} && echo "NCCL from $nccl"
fi
pass=(-x RINGFEED_MPI_PLUGIN -x NCCL_NVLS_ENABLE)
[ -n "${LD_LIBRARY_PATH:-}" ] && pass+=(-x LD_LIBRARY_PATH)

if [[ " $parts " == *" ranks "* ]]; then
  echo "== parallel_ranks_test under mpirun -np 2"
  if mpirun --oversubscribe -np 2 "${pass[@]}" "$pkg/tests/parallel_ranks_test" \
      >"$logs/ranks_test.log" 2>&1; then
    echo "ok: $(grep -Eo '[0-9]+ tests? from [0-9]+ test suites? ran' "$logs/ranks_test.log" | head -1), $(grep -c '^\[  SKIPPED \]' "$logs/ranks_test.log") skipped lines"
  else
    echo "FAILED"; grep -E -B2 -A12 '(Failure|FAILED)' "$logs/ranks_test.log" | head -60
  fi
fi

data=$work/cifar.rfd
[ -f "$data" ] || "$pkg/bin/ringfeed-convert" synthetic -o "$data" --samples "${SAMPLES:-1000000}" \
  --shape 3,32,32 --classes 10 --seed 7 >"$logs/convert.log" 2>&1
ls -l "$data"
cat "$data" >/dev/null

if [[ " $parts " == *" buckets "* ]]; then
  echo "== gradient buckets (compute-bound; samples/s of each run's last epoch)"
  train() {  # label ranks batch buckets [env...]
    local label=$1 ranks=$2 batch=$3 buckets=$4
    local cmd=("$pkg/bin/ringfeed" train --data "$data" --epochs "${EPOCHS:-2}" --io buffered
               --batch-size "$batch" --reduce-buckets "$buckets" --metrics "$logs/$label.jsonl")
    local extra=()
    [ -n "${NCCL_MAX_CTAS:-}" ] && extra=(-x NCCL_MAX_CTAS)
    [ "$ranks" -gt 0 ] && cmd=(mpirun --oversubscribe --bind-to none -np "$ranks" "${pass[@]}"
                               -x NCCL_P2P_DISABLE -x NCCL_SHM_DISABLE "${extra[@]}" "${cmd[@]}")
    "${cmd[@]}" >"$logs/$label.log" 2>&1
    local rc=$?
    local rate
    rate=$(python3 -c "import json,sys; r=[json.loads(l) for l in open(sys.argv[1]) if l.startswith('{')]; e=[x for x in r if x.get('event')=='epoch']; print(round(e[-1]['samples_per_s']))" "$logs/$label.jsonl" 2>/dev/null)
    echo "$label rc=$rc samples/s=${rate:-?} $(grep -m1 -o 'gradients averaged.*' "$logs/$label.log")"
    [ $rc = 0 ] || tail -5 "$logs/$label.log"
  }
  export NCCL_P2P_DISABLE=0 NCCL_SHM_DISABLE=0
  for r in $(seq 1 "${BUCKET_ROUNDS:-$rounds}"); do
    for b in 256 128; do
      train "alone-b$b-r$r" 0 "$b" 1
      for k in ${BUCKETS:-1 auto 5}; do
        train "mpi2-b$b-buckets$k-r$r" 2 "$b" "$k"
      done
      # NCCL's CTAs a collective may take (NCCL_MAX_CTAS): fewer leave more SMs to the backward
      # pass the buckets overlap.
      for c in ${CTAS:-}; do
        NCCL_MAX_CTAS=$c train "mpi2-b$b-bucketsauto-ctas$c-r$r" 2 "$b" auto
      done
    done
    if [ "$r" -le 2 ]; then
      NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 train "sockets-b256-buckets1-r$r" 2 256 1
      NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 train "sockets-b256-bucketsauto-r$r" 2 256 auto
    fi
  done
fi

for t in ${TESTS:-}; do
  if "$pkg/tests/$t" >"$logs/$t.log" 2>&1; then
    echo "$t: ok, $(grep -Eo '[0-9]+ tests? from [0-9]+ test suites? ran' "$logs/$t.log" | head -1), $(grep -c '^\[  SKIPPED \]' "$logs/$t.log") skipped lines"
  else
    echo "$t: FAILED"; grep -E -B2 -A10 '(Failure|FAILED)' "$logs/$t.log" | head -40
  fi
done

site=$work/site
if [[ " $parts " == *" handoff "* || " $parts " == *" pytest "* ]]; then
  SITE=$site BUILD_ONLY=1 RINGFEED_DATA=$work "$here/device_python_check.sh" "$pkg" "$out/pybuild" \
    >"$logs/pybuild.log" 2>&1 || { echo "extension build failed"; tail -20 "$logs/pybuild.log"; }
fi
if [[ " $parts " == *" pytest "* ]]; then
  echo "== the Python tests on the GPU machine (python/tests, GPU cases included)"
  pytest_path=""
  python3 -c "import pytest" 2>/dev/null || pytest_path=$pkg/pytest
  (cd python/tests && PYTHONPATH=$site${pytest_path:+:$pytest_path} \
    RINGFEED_CONVERT=$pkg/bin/ringfeed-convert timeout 300 python3 -m pytest -q -p no:cacheprovider . \
    >"$logs/pytest.log" 2>&1)
  echo "pytest exit $?: $(tail -1 "$logs/pytest.log")"; grep -E '^(FAILED|ERROR)' "$logs/pytest.log" | head
fi

if [[ " $parts " == *" handoff "* ]]; then
  echo "== hand-off into PyTorch"
  export PYTHONPATH=$site
  python3 "$here/handoff_profile.py" --data "$data" --io buffered --rounds "$rounds" \
    --profile 20 --trace-dir "$logs/traces" --json "$logs/handoff-1gpu.json" \
    >"$logs/handoff-1gpu.log" 2>&1
  echo "-- 1 GPU (rc $?)"; grep -E '^\[round|^summary' "$logs/handoff-1gpu.log"
  if [ "$gpus" -ge 2 ]; then
    torchrun --standalone --nproc_per_node 2 "$here/handoff_profile.py" --data "$data" \
      --io buffered --rounds "$rounds" --profile 20 --trace-dir "$logs/traces" \
      --json "$logs/handoff-2gpu.json" >"$logs/handoff-2gpu.log" 2>&1
    echo "-- 2 GPUs (rc $?)"; grep -E '^\[round|^summary' "$logs/handoff-2gpu.log"
  fi
  grep -A30 '== profile' "$logs/handoff-1gpu.log" | head -130
  gzip -f "$logs"/traces/*.json 2>/dev/null
fi
