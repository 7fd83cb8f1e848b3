#!/usr/bin/env bash
# Two data-parallel checks a one-GPU machine can make, in one call:
#   1. a checkpoint taken by 2 CPU ranks (mpirun) in mid-epoch, resumed by one process on the GPU
#      in streaming and in managed mode: both modes train the same samples in the same order, and
#      that order is every sample the 2 ranks had left, once (ManagedSource's resumed epoch);
#   2. per-rank memory flat in dataset size: `mpirun -np 1 ringfeed train` on a $SMALL_GB and a
#      $BIG_GB GB synthetic CIFAR-shaped dataset, GPU memory and peak host RSS from --metrics.
# Usage: tools/bench/device_resume_check.sh PKG_DIR OUT_DIR (PKG_DIR as package_device.sh makes)
set -uo pipefail
pkg=$(realpath "$1")
out=$(realpath -m "$2")
work=${RINGFEED_DATA:-/var/tmp/ringfeed-resume}
mkdir -p "$out" "$work"
export NCCL_NVLS_ENABLE=0 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export RINGFEED_MPI_PLUGIN=$pkg/bin/libringfeed_mpi.so
rf=$pkg/bin/ringfeed
small=(--conv 4,8 --hidden 16 --batch-size 32 --epochs 2 --seed 4)

echo "== resume 2 CPU ranks -> 1 GPU, streaming and managed"
d=$work/small.rfd
"$pkg/bin/ringfeed-convert" synthetic -o "$d" --samples 20011 --shape 3,16,16 --classes 10 \
  --seed 3 --chunk-size 64KiB >/dev/null
mpirun --oversubscribe -np 2 -x RINGFEED_MPI_PLUGIN "$rf" train --data "$d" --device cpu \
  "${small[@]}" --max-steps 150 --checkpoint "$work/ck" --dump-order "$work/first" | tail -1
for mode in streaming managed; do
  "$rf" train --data "$d" --device cuda --mode "$mode" "${small[@]}" --resume "$work/ck" \
    --dump-order "$work/resumed-$mode" | grep -E '^epoch|stopped' | tail -3
done
python3 - "$work" <<'PY'
import collections, sys
w = sys.argv[1]
def epochs(path):
    out, cur = {}, None
    for line in open(path):
        if line.startswith("#"):
            cur = int(line.split()[-1]); out[cur] = []
        else:
            out[cur].append(int(line))
    return out
first = [epochs(f"{w}/first.rank{r}")[1][:150 * 32] for r in range(2)]
streaming, managed = epochs(f"{w}/resumed-streaming"), epochs(f"{w}/resumed-managed")
print("managed order == streaming order:", streaming == managed)
trained = collections.Counter(x for l in first for x in l)
rest = collections.Counter(streaming[1])
left = [i for i in range(20011) if trained[i] == 0]
print(f"left by the 2 ranks: {len(left)}; resumed epoch trains {len(streaming[1])}, each of "
      f"them {'exactly once' if all(rest[i] == 1 for i in left) else 'NOT once'}, "
      f"{sum(1 for x in rest if trained[x])} already trained (padding); next epoch covers "
      f"{len(set(streaming[2]))} of 20011")
PY

echo "== per-rank memory against dataset size (mpirun -np 1, GPU, streaming, 1 epoch cold)"
for gb in "${SMALL_GB:-2}" "${BIG_GB:-17.5}"; do
  f=$work/cifar-$gb.rfd
  n=$(python3 -c "print(int($gb * 1e9 / 3073))")
  "$pkg/bin/ringfeed-convert" synthetic -o "$f" --samples "$n" --shape 3,32,32 --classes 10 \
    --seed 7 >/dev/null
  sync; echo 3 >/proc/sys/vm/drop_caches
  mpirun --oversubscribe -np 1 -x RINGFEED_MPI_PLUGIN -x NCCL_NVLS_ENABLE "$rf" train --data "$f" \
    --epochs 1 --batch-size 256 --metrics "$out/memory-$gb.jsonl" | grep -E '^epoch'
  python3 -c "import json,sys; e=[json.loads(l) for l in open(sys.argv[1])]; ep=[x for x in e if x['event']=='epoch'][-1]; end=e[-1]; print('$gb GB:', 'gpu_bytes', ep['gpu_bytes'], 'rss', ep['rss_bytes'], 'peak_rss', end['peak_rss_bytes'])" "$out/memory-$gb.jsonl"
  rm -f "$f"
done
