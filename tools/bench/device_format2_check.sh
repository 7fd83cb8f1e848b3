#!/usr/bin/env bash
# Issue 27's goals on a GPU machine, in one call: what compressed chunks (format version 2) do
# where the disk is the bound. Every comparison is interleaved within the call, cold (page cache
# dropped before each run), $ROUNDS rounds (default 3), the order of the variants rotating.
#   prep     real data: Fashion-MNIST laid out as 3x32x32 (tools/bench/fmnist_cifar.py, $GB GB,
#            default 8) and real text as uint16 SentencePiece ids in rows of 2048
#            (tools/bench/make_token_corpus.py's ids, replicated to $TOK_GB GB, default 8);
#            converted raw (format 1), and with lz4, zstd:1 and zstd:3; each conversion timed
#            (input GB/s on this machine's cores) and each dataset's size recorded;
#   read     `ringfeed read --order train` of every dataset: delivered and stored GB/s, the
#            ratio, the decode threads and their busy share; the goal: delivered >= 0.95 x
#            ratio x the raw dataset's rate, with <= 4 decode threads;
#   threads  the zstd:3 pixels read at --decode-threads 1, 2 and 4: where decompression binds;
#   train    `mpirun -np 2 ringfeed train` one epoch of the pixels (raw, lz4, zstd:1) at batch
#            $BATCH a rank (default 256): samples/s and the share of time waiting for data; the
#            goal: >= 1.5x the raw dataset's samples/s (ratio >= 1.7), and >= 0.95 x
#            min(ratio x reader, compute) where compute is the same run from the page cache;
#   memory   host RSS and GPU memory of one-GPU training on $SMALL_GB (default 2) and $BIG_GB
#            (default 16) GB on disk of zstd:1 pixels: flat in the dataset's size;
#   noregress BEFORE's and AFTER's `ringfeed read` and one-GPU `ringfeed train` of the raw
#            (format 1) pixels, and AFTER's of the same pixels as uncompressed format 2: >= 0.98;
#   peers    MosaicML MDS / litdata's way, a whole 64 MB shard compressed and decompressed into a
#            local cache before its first sample is read (ringfeed-bench-whole-shard), against
#            ringfeed's first batch and disk space, same bytes, same codec.
# $PARTS picks the parts [prep read threads train memory noregress peers]. Writes
# OUT_DIR/summary.txt and OUT_DIR/logs.tar.gz.
# Usage: tools/bench/device_format2_check.sh BEFORE_PKG AFTER_PKG FMNIST_DIR TOKENS_DIR OUT_DIR
# Through the device tool (kind nvidia-h100-x2 for the train part), carrying (64 MiB in all)
# [".carry/before27.tar.xz", ".carry/after.tar.xz", ".carry/fmnist-train", ".carry/tokens"]
# (fmnist-train: Fashion-MNIST's train-images/labels-idx*-ubyte.gz; tokens: tokens.rfd):
#   for p in before27 after; do mkdir -p /tmp/$p && tar -C /tmp/$p -xJf .carry/$p.tar.xz; done &&
#     tools/bench/device_format2_check.sh /tmp/before27/pkg /tmp/after/pkg .carry/fmnist-train \
#       .carry/tokens "$OUT"
set -uo pipefail
before=$(realpath "$1")
after=$(realpath "$2")
fm=$(realpath "$3")
tok=$(realpath "$4")
out=$(realpath -m "$5")
logs=$out/logs
work=${RINGFEED_DATA:-/var/tmp/ringfeed-format2}
parts=${PARTS:-prep read threads train memory noregress peers}
gb=${GB:-8}
tok_gb=${TOK_GB:-8}
small_gb=${SMALL_GB:-2}
big_gb=${BIG_GB:-16}
rounds=${ROUNDS:-3}
batch=${BATCH:-256}
device=${DEVICE:-cuda}
ranks=${RANKS:-2}
mkdir -p "$logs" "$work"
trap 'tar -C "$out" -czf "$out/logs.tar.gz" logs && rm -rf "$logs"' EXIT
export NCCL_NVLS_ENABLE=0
summary=$out/summary.txt
say() { echo "$*" | tee -a "$summary"; }
has() { [[ " $parts " == *" $1 "* ]]; }
cold() { sync; echo 3 >/proc/sys/vm/drop_caches 2>/dev/null || echo "(page cache NOT dropped)"; }
conv=$after/bin/ringfeed-convert
rf=$after/bin/ringfeed
pix=(none lz4 zstd1 zstd3)
codec() { case $1 in zstd1) echo zstd:1 ;; zstd3) echo zstd:3 ;; *) echo "$1" ;; esac; }
json() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$1"; }  # FILE EXPR

say "== machine: $(nvidia-smi --query-gpu=name,memory.total --format=csv,noheader | head -1) x$(nvidia-smi -L | wc -l), $(nproc) cores, $(date -u)"

if has prep; then
  say "== prep"
  python3 tools/bench/fmnist_cifar.py "$fm" "$work/pixels.bin" --gb "$gb" | tee -a "$summary"
  # The ids: TOKENS_DIR/tokens.u16, or carried smaller as TOKENS_DIR/tokens.rfd (rows of 2048,
  # zstd: made here by `ringfeed-convert raw --records tokens.u16 --shape 2048 --dtype uint16
  # --label none --compress zstd:9`), exported back to the raw ids first.
  ids=$tok/tokens.u16
  if [ ! -f "$ids" ] && [ -f "$tok/tokens.rfd" ]; then
    "$conv" export "$tok/tokens.rfd" --format raw -o "$work/tok-src" -q >"$logs/tok-export.log" 2>&1 ||
      say "token export FAILED"
    ids=$work/tok-src.records
  fi
  python3 - "$ids" "$work/tokens.bin" "$tok_gb" <<'PY' | tee -a "$summary"
import sys, numpy as np
ids = np.fromfile(sys.argv[1], dtype="<u2"); want = int(float(sys.argv[3]) * 1e9) // 4096 * 2048
with open(sys.argv[2], "wb") as f:
    done = 0
    while done < want:
        k = min(ids.size, want - done); f.write(ids[:k].tobytes()); done += k
print(f"{sys.argv[2]}: {done} uint16 ids ({done * 2 / 1e9:.2f} GB), {ids.size} distinct-text ids replicated")
PY
  for c in "${pix[@]}"; do
    cold
    /usr/bin/time -f "%e" -o "$logs/conv-pix-$c.time" "$conv" raw --records "$work/pixels.bin" \
      --shape 3,32,32 --label first --compress "$(codec "$c")" -q -o "$work/pix-$c.rfd" \
      >"$logs/conv-pix-$c.log" 2>&1 || { say "convert pix $c FAILED"; tail -3 "$logs/conv-pix-$c.log"; }
    s=$(cat "$logs/conv-pix-$c.time")
    say "convert pixels --compress $(codec "$c"): $s s, $(python3 -c "print(f'{$(stat -c %s "$work/pixels.bin")/$s/1e9:.2f}')") GB/s of input, $(du -B1 "$work/pix-$c.rfd" | cut -f1) bytes, ratio $(python3 -c "print(f'{$(stat -c %s "$work/pix-none.rfd")/$(stat -c %s "$work/pix-$c.rfd"):.2f}')")"
  done
  for c in none zstd3; do
    cold
    /usr/bin/time -f "%e" -o "$logs/conv-tok-$c.time" "$conv" raw --records "$work/tokens.bin" \
      --shape 2048 --dtype uint16 --label none --compress "$(codec "$c")" -q -o "$work/tok-$c.rfd" \
      >"$logs/conv-tok-$c.log" 2>&1 || { say "convert tok $c FAILED"; tail -3 "$logs/conv-tok-$c.log"; }
    s=$(cat "$logs/conv-tok-$c.time")
    say "convert tokens --compress $(codec "$c"): $s s, $(du -B1 "$work/tok-$c.rfd" | cut -f1) bytes, ratio $(python3 -c "print(f'{$(stat -c %s "$work/tok-none.rfd")/$(stat -c %s "$work/tok-$c.rfd"):.2f}')")"
  done
  # AFTER's raw pixels as uncompressed format 2 (for noregress)
  "$conv" recompress "$work/pix-none.rfd" -o "$work/pix-v2.rfd" --compress none --format-version 2 -q \
    >"$logs/conv-v2.log" 2>&1 || say "recompress v2 FAILED"
  rm -f "$work/pixels.bin" "$work/tokens.bin"
fi

read_once() {  # NAME DATASET [flags]: one cold read; prints its summary line
  local name=$1 data=$2
  shift 2
  cold
  "$rf" read "$data" --order train --json "$logs/read-$name.json" "$@" >"$logs/read-$name.log" 2>&1 ||
    { say "read $name FAILED"; tail -2 "$logs/read-$name.log"; return; }
  json "$logs/read-$name.json" "f\"{d['runs'][0]['gb_per_s']:.3f} {d['runs'][0]['stored_gb_per_s']:.3f} {d['runs'][0]['decode_threads']} {d['runs'][0]['decode_busy_share']:.3f}\""
}

if has read; then
  say "== read (cold, --order train): delivered GB/s, stored GB/s, decode threads, busy share"
  for r in $(seq 1 "$rounds"); do
    set -- pix-none pix-lz4 pix-zstd1 pix-zstd3 tok-none tok-zstd3
    # rotate the order each round
    for _ in $(seq 2 "$r"); do set -- "${@:2}" "$1"; done
    for d in "$@"; do say "round $r $d: $(read_once "$d-$r" "$work/$d.rfd")"; done
  done
fi

if has threads; then
  say "== decode threads (zstd:3 pixels, cold)"
  for r in $(seq 1 "$rounds"); do
    for t in 1 2 4; do say "round $r threads $t: $(read_once "thr$t-$r" "$work/pix-zstd3.rfd" --decode-threads "$t")"; done
  done
fi

train_once() {  # NAME DATASET RANKS [flags]: one epoch; prints samples/s and waited share
  local name=$1 data=$2 n=$3
  shift 3
  local launch=()
  [ "$n" -gt 1 ] && launch=(mpirun --allow-run-as-root -np "$n" --bind-to none -x NCCL_NVLS_ENABLE)
  "${launch[@]}" "$rf" train --data "$data" --device "$device" --epochs 1 --batch-size "$batch" \
    --metrics "$logs/train-$name.jsonl" "$@" >"$logs/train-$name.log" 2>&1 ||
    { say "train $name FAILED"; tail -3 "$logs/train-$name.log"; return; }
  python3 - "$logs/train-$name.jsonl" <<'PY'
import json, sys
e = [r for r in map(json.loads, open(sys.argv[1])) if r.get("event") == "epoch"][-1]
print(f"{e['samples_per_s']:.0f} samples/s, waited {100 * e['data_wait_share']:.1f}%, disk "
      f"{e['disk_gb_per_s']:.2f} GB/s, delivered {e.get('delivered_gb_per_s', 0):.2f} GB/s, "
      f"decode busy {100 * e.get('decode_busy_share', 0):.0f}%, rss {e['rss_bytes'] / 2**20:.0f} MiB, "
      f"gpu {e['gpu_bytes'] / 2**20:.0f} MiB")
PY
}

if has train; then
  say "== train: $ranks ranks, one epoch, batch $batch a rank, cold"
  for r in $(seq 1 "$rounds"); do
    set -- pix-none pix-lz4 pix-zstd1
    for _ in $(seq 2 "$r"); do set -- "${@:2}" "$1"; done
    for d in "$@"; do cold; say "round $r $d: $(train_once "$d-$r" "$work/$d.rfd" "$ranks")"; done
  done
  say "== train: compute bound (page cache, buffered reads), $ranks ranks"
  cat "$work/pix-zstd1.rfd" >/dev/null
  for r in 1 2; do say "cached $r pix-zstd1: $(train_once "cached-$r" "$work/pix-zstd1.rfd" "$ranks" --io buffered)"; done
fi

if has memory; then
  say "== memory: one GPU, one epoch of zstd:1 pixels, $small_gb GB and $big_gb GB compressed"
  # Written straight through ringfeed.DatasetWriter (no raw file between): the extension is built
  # here first (device_python_check.sh BUILD_ONLY=1).
  SITE=$work/site BUILD_ONLY=1 tools/bench/device_python_check.sh "$after" "$out/py" \
    >"$logs/py-build.log" 2>&1 || { say "python build FAILED"; tail -5 "$logs/py-build.log"; }
  for size in "$small_gb" "$big_gb"; do
    # zstd:1 stores these pixels about 2.3x smaller: the data's GB for $size GB on disk.
    PYTHONPATH=$work/site python3 tools/bench/fmnist_cifar.py "$fm" "$work/mem-$size.rfd" \
      --gb "$(python3 -c "print($size * 2.3)")" --compress zstd:1 >"$logs/mem-$size-make.log" 2>&1 ||
      { say "making mem-$size FAILED"; tail -3 "$logs/mem-$size-make.log"; continue; }
    cold
    say "$(du -B1 "$work/mem-$size.rfd" | cut -f1) bytes on disk: $(train_once "mem-$size" "$work/mem-$size.rfd" 1)"
    rm -f "$work/mem-$size.rfd"
  done
fi

if has noregress; then
  say "== no regression: BEFORE and AFTER, format 1 raw pixels; AFTER on uncompressed format 2 (cold)"
  for r in $(seq 1 "$rounds"); do
    for b in before after after-v2; do
      pkg=$after; data=$work/pix-none.rfd
      [ "$b" = before ] && pkg=$before
      [ "$b" = after-v2 ] && data=$work/pix-v2.rfd
      cold
      "$pkg/bin/ringfeed" read "$data" --order train --json "$logs/nr-read-$b-$r.json" >"$logs/nr-read-$b-$r.log" 2>&1
      say "round $r read $b: $(json "$logs/nr-read-$b-$r.json" "f\"{d['runs'][0]['gb_per_s']:.3f} GB/s\"")"
      cold
      rf_saved=$rf; rf=$pkg/bin/ringfeed
      say "round $r train $b: $(train_once "nr-$b-$r" "$data" 1)"
      rf=$rf_saved
    done
  done
fi

if has peers; then
  say "== peers: whole 64 MB shards compressed (MDS/litdata's way) against ringfeed's chunks"
  if [ -x "$after/bin/ringfeed-bench-whole-shard" ]; then
    for c in zstd1 lz4; do
      ws=("$after/bin/ringfeed-bench-whole-shard" --raw "$work/pix-none.rfd" --chunked
          "$work/pix-$c.rfd" --codec "$(codec "$c")" --work "$work/shards-$c")
      mkdir -p "$work/shards-$c"
      "${ws[@]}" --prepare 2>&1 | tee -a "$summary"
      for r in $(seq 1 "$rounds"); do cold; "${ws[@]}" 2>&1 | tee -a "$summary"; done
      rm -rf "$work/shards-$c"
    done
  else
    say "(no ringfeed-bench-whole-shard in AFTER's package)"
  fi
fi
say "== done $(date -u)"
