#!/usr/bin/env bash
# The streaming mode's checks on a GPU machine, in one call:
#   1. the GPU tests of the pipeline and the train command;
#   2. on a CIFAR-shaped uint8 synthetic dataset of $RINGFEED_GB GB (default 16), page cache
#      dropped before every disk run, $ROUNDS rounds (default 2) of: reader only (ringfeed read),
#      compute only (ringfeed-bench-compute at the same batch), one streaming training epoch;
#   3. one streaming epoch of a 1 GB dataset beside it: GPU memory and host RSS at both sizes;
#   4. the managed mode on the same cold file: load time and epoch, plain and with
#      --managed-prefetch 4 --managed-advise;
#   5. Fashion-MNIST in both modes ($EPOCHS epochs, default 15).
# Usage: tools/bench/device_stream_check.sh PKG_DIR FMNIST_DIR OUT_DIR
set -uo pipefail
pkg=$(realpath "$1")
fm=$(realpath "$2")
out=$(realpath -m "$3")
logs=$out/logs
data=${RINGFEED_DATA:-/var/tmp/ringfeed}
gb=${RINGFEED_GB:-16}
batch=${BATCH:-256}
mkdir -p "$logs" "$data"
trap 'tar -C "$out" -czf "$out/logs.tar.gz" logs && rm -rf "$logs"' EXIT
bin=$pkg/bin
cold() { sync; echo 3 >/proc/sys/vm/drop_caches 2>/dev/null || echo "(page cache NOT dropped)"; }

echo "== machine"
nvidia-smi --query-gpu=name,memory.total,memory.used --format=csv,noheader
echo "kernel $(uname -r), $(nproc) cores, $(date -u)"

if [ -n "${TESTS:-}" ]; then
  echo "== tests"
  export RINGFEED_BIN=$bin RINGFEED_FASHION_MNIST=$fm
  for name in $TESTS; do
    if "$pkg/tests/$name" >"$logs/$name.log" 2>&1; then r=ok; else r=FAILED; fi
    echo "$name: $r, $(grep -Eo '[0-9]+ tests? from [0-9]+ test suites? ran' "$logs/$name.log")"
    [ $r = ok ] || grep -E -B3 -A12 '(Failure|FAILED  \])' "$logs/$name.log" | head -40
    grep -h "device memory:" "$logs/$name.log"
  done
fi

echo "== datasets"
samples=$((gb * 1000000000 / 3073))
"$bin/ringfeed-convert" synthetic --samples "$samples" --shape 3,32,32 --classes 10 --seed 1 \
  -o "$data/big.rfd" 2>&1 | tail -1
"$bin/ringfeed-convert" synthetic --samples 330000 --shape 3,32,32 --classes 10 --seed 2 \
  -o "$data/small.rfd" 2>&1 | tail -1

train() {  # train DATASET NAME [flags]: one epoch, cold
  local d=$1 name=$2; shift 2
  cold
  "$bin/ringfeed" train --data "$d" --epochs 1 --batch-size "$batch" --metrics "$logs/$name.jsonl" \
    "$@" >"$logs/$name.log" 2>&1
  grep -E "^(first batch|epoch|streaming|managed)" "$logs/$name.log" | sed "s/^/$name: /"
  grep -E "ringfeed: " "$logs/$name.log"
}

echo "== reader / compute / streaming, $batch per batch"
for r in $(seq 1 "${ROUNDS:-2}"); do
  cold
  "$bin/ringfeed" read "$data/big.rfd" --json "$logs/read-$r.json" | sed "s/^/round $r: /"
  "$bin/ringfeed-bench-compute" --batch "$batch" --bf16 on --graph on --steps 400 \
    --json "$logs/compute-$r.json" | grep '^batch' | sed "s/^/round $r: compute /"
  train "$data/big.rfd" "stream-$r"
done
python3 - "$logs" "${ROUNDS:-2}" <<'PY'
import json, sys, statistics
logs, rounds = sys.argv[1], int(sys.argv[2])
for r in range(1, rounds + 1):
    read = json.load(open(f"{logs}/read-{r}.json"))
    run = read["runs"][0]
    comp = json.load(open(f"{logs}/compute-{r}.json"))["results"][0]["samples_per_s"]
    ep = [json.loads(l) for l in open(f"{logs}/stream-{r}.jsonl") if '"epoch"' in l][0]
    # samples/s the reader delivers: the same samples as the epoch, over the reader's time
    n = ep["samples_per_s"] * ep["seconds"]
    read_sps = n / run["seconds"]
    bound = min(read_sps, comp)
    print(f"round {r}: reader {read_sps:,.0f} samples/s ({run['gb_per_s']:.3f} GB/s), compute {comp:,.0f}, "
          f"streaming {ep['samples_per_s']:,.0f} = {ep['samples_per_s'] / bound:.3f} x min; "
          f"waited {100 * ep['data_wait_share']:.1f}%, disk {ep['disk_gb_per_s']:.3f} GB/s, "
          f"GPU {ep['gpu_bytes'] / 2**20:.0f} MiB, RSS {ep['rss_bytes'] / 2**20:.0f} MiB")
PY

echo "== memory at two sizes"
train "$data/small.rfd" "stream-1GB"

echo "== managed, same file, cold"
train "$data/big.rfd" "managed" --mode managed
train "$data/big.rfd" "managed-prefetch" --mode managed --managed-prefetch 4 --managed-advise
train "$data/small.rfd" "managed-1GB" --mode managed

echo "== Fashion-MNIST"
conv="$bin/ringfeed-convert"
"$conv" idx --images "$fm/train-images-idx3-ubyte.gz" --labels "$fm/train-labels-idx1-ubyte.gz" \
  -o "$data/fm-train.rfd" >/dev/null
"$conv" idx --images "$fm/t10k-images-idx3-ubyte.gz" --labels "$fm/t10k-labels-idx1-ubyte.gz" \
  -o "$data/fm-test.rfd" >/dev/null
for mode in streaming managed; do
  "$bin/ringfeed" train --data "$data/fm-train.rfd" --test "$data/fm-test.rfd" \
    --epochs "${EPOCHS:-15}" --mode $mode --metrics "$logs/fmnist-$mode.jsonl" 2>&1 |
    grep -E "^(first|epoch (1|5|10|15)/|stream|managed|ringfeed)"
done
