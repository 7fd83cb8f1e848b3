#!/usr/bin/env bash
# PyTorch DistributedDataParallel fed by ringfeed.Loader against DataLoader + DistributedSampler,
# on the GPUs of one machine, in one call (tools/bench/ddp_bench.py under torchrun):
#   1. builds the Python extension (tools/bench/device_python_check.sh with its tests and
#      benchmarks off);
#   2. a synthetic CIFAR-shaped file of $SAMPLES samples (default 1M, 3.08 GB);
#   3. $ROUNDS rounds (default 2), interleaved, page cache dropped before each run: DDP on 2 GPUs
#      fed by DataLoader + DistributedSampler and by ringfeed.Loader, and ringfeed.Loader on 1 GPU;
#      one run of DataLoader on 1 GPU (capped at $TORCH1_STEPS steps); in each round also
#      `ringfeed train` (its own CNN in C++) on 2 GPUs under mpirun, one epoch;
#   4. compute alone (one batch on each GPU) on 1 and 2 GPUs; the gradient all-reduce alone over
#      NVLink and over sockets (NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1, as between machines).
# Usage: tools/bench/device_ddp_check.sh PKG_DIR OUT_DIR   (PKG_DIR: tools/bench/package_device.sh)
# Results: OUT_DIR/ddp.jsonl (one line a run, rank 0's), logs in OUT_DIR/ddp-logs.tar.gz.
set -uo pipefail
pkg=$(realpath "$1")
out=$(realpath -m "$2")
logs=$out/ddp-logs
work=${RINGFEED_DATA:-/var/tmp/ringfeed-ddp}
mkdir -p "$logs" "$work"
trap 'tar -C "$out" -czf "$out/ddp-logs.tar.gz" ddp-logs && rm -rf "$logs"' EXIT
export NCCL_NVLS_ENABLE=0

echo "== extension"
PYTEST=0 BENCH=0 TESTS=none RINGFEED_DATA=$work tools/bench/device_python_check.sh "$pkg" \
  "$out/extension" | grep -E 'built|FAILED|import' || exit 1
export PYTHONPATH=$work/site
gpus=$(nvidia-smi --query-gpu=name --format=csv,noheader | wc -l)
echo "$gpus GPUs, $(nproc) cores, torch $(python3 -c 'import torch; print(torch.__version__)')"

data=${DATA:-$work/cifar.rfd}
[ -f "$data" ] || "$pkg/bin/ringfeed-convert" synthetic -o "$data" --samples "${SAMPLES:-1000000}" \
  --shape 3,32,32 --classes 10 --seed 7 >"$logs/convert.log" 2>&1 || { tail "$logs/convert.log"; exit 1; }
ls -l "$data"

bench() {  # label nproc cold|warm phase extra...
  local label=$1 n=$2 cache=$3 phase=$4; shift 4
  [ "$cache" = cold ] && { sync; echo 3 >/proc/sys/vm/drop_caches; }
  timeout 300 python3 -m torch.distributed.run --standalone --nproc_per_node="$n" \
    tools/bench/ddp_bench.py --data "$data" --phase "$phase" --label "$label" \
    --json "$out/ddp.jsonl" "$@" >"$logs/$label.log" 2>&1
  local rc=$?
  echo "$label (rc $rc): $(grep -E '^\{' "$logs/$label.log" | tail -1)"
  [ $rc = 0 ] || tail -15 "$logs/$label.log"
}
train() {  # label: `ringfeed train` on 2 GPUs (mpirun), cold, its own CNN, one epoch
  sync; echo 3 >/proc/sys/vm/drop_caches
  OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 timeout 120 mpirun --oversubscribe \
    -np 2 -x NCCL_NVLS_ENABLE -x RINGFEED_MPI_PLUGIN="$pkg/bin/libringfeed_mpi.so" \
    "$pkg/bin/ringfeed" train --data "$data" --epochs 1 --batch-size 256 >"$logs/$1.log" 2>&1
  echo "$1 (rc $?): $(grep -E '^epoch' "$logs/$1.log" | tail -1)"
}
for round in $(seq 1 "${ROUNDS:-2}"); do
  bench "torch-2gpu-cold-$round" 2 cold torch
  bench "ringfeed-2gpu-cold-$round" 2 cold ringfeed
  bench "ringfeed-1gpu-cold-$round" 1 cold ringfeed
  train "ringfeed-train-2gpu-cold-$round"
done
bench torch-1gpu-cold 1 cold torch --max-steps "${TORCH1_STEPS:-1500}"
bench compute-1gpu 1 warm compute --steps 400
bench compute-2gpu 2 warm compute --steps 400
bench allreduce-nvlink 2 warm allreduce --steps 500
NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 bench allreduce-sockets 2 warm allreduce --steps 500
