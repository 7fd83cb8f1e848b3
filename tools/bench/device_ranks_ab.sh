#!/usr/bin/env bash
# Two builds' data-parallel speed against each other on one GPU machine, interleaved: `ringfeed
# train` on a page-cached synthetic CIFAR-shaped file read through the cache (--io buffered: the
# GPUs are the bound), one process, mpirun -np 1 and mpirun -np $GPUS, $EPOCHS epochs (default
# 3; the last one's samples/s is reported), $ROUNDS rounds (default 2), the build that goes
# first alternating.
# Usage: tools/bench/device_ranks_ab.sh BEFORE_PKG AFTER_PKG OUT_DIR  (PKG: package_device.sh's)
set -uo pipefail
before=$(realpath "$1")
after=$(realpath "$2")
out=$(realpath -m "$3")
logs=$out/ab-logs
work=${RINGFEED_DATA:-/var/tmp/ringfeed-ranks}
mkdir -p "$logs" "$work"
trap 'tar -C "$out" -czf "$out/ab-logs.tar.gz" ab-logs && rm -rf "$logs"' EXIT
export NCCL_NVLS_ENABLE=0 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
gpus=$(nvidia-smi --query-gpu=name --format=csv,noheader | wc -l)
data=$work/cifar.rfd
[ -f "$data" ] || "$after/bin/ringfeed-convert" synthetic -o "$data" --samples "${SAMPLES:-1000000}" \
  --shape 3,32,32 --classes 10 --seed 7 >"$logs/convert.log" 2>&1
cat "$data" >/dev/null
run() {  # label pkg ranks
  local label=$1 pkg=$2 ranks=$3
  local cmd=("$pkg/bin/ringfeed" train --data "$data" --epochs "${EPOCHS:-3}" --batch-size "${BATCH:-256}"
             --io buffered)
  [ "$ranks" -gt 0 ] && cmd=(mpirun --oversubscribe -np "$ranks" -x NCCL_NVLS_ENABLE
                             -x RINGFEED_MPI_PLUGIN="$pkg/bin/libringfeed_mpi.so" "${cmd[@]}")
  "${cmd[@]}" >"$logs/$label.log" 2>&1
  echo "$label (rc $?): $(grep -E '^epoch' "$logs/$label.log" | tail -1 | grep -Eo '[0-9]+ samples/s')"
}
for round in $(seq 1 "${ROUNDS:-2}"); do
  order="before after"; [ $((round % 2)) = 0 ] && order="after before"
  for which in $order; do
    pkg=$before; [ "$which" = after ] && pkg=$after
    run "$which-alone-$round" "$pkg" 0
    run "$which-mpi1-$round" "$pkg" 1
    run "$which-mpi$gpus-$round" "$pkg" "$gpus"
  done
done
