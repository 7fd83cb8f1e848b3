#!/usr/bin/env bash
# ringfeed-convert's rate, in GB/s of input, for each input kind and codec, with one convert
# thread and with the default (the CPUs the process may run on): issue 27's converter goal is
# >= 1 GB/s of input on a 16-core machine.
#
#   tools/bench/convert_throughput.sh BIN SIZE [DIR]
#
#   BIN   the ringfeed-convert binary (a static build carries liburing and the rest)
#   SIZE  bytes of each input's samples, with an optional suffix K, M or G (powers of 1000):
#         1.2G makes inputs of about 1.2 GB each
#   DIR   where the inputs and outputs go (default: a new directory under ${TMPDIR:-/tmp});
#         it needs room for the four inputs and one output at a time, and is removed at the end
#         unless given
#
# The inputs, 3x32x32 images of ten classes (a smooth template each, plus noise, so that lz4 and
# zstd have something to find, as in real images), made once by python3 with numpy:
#
#   raw          uint8 records, the label first           ringfeed-convert raw
#   idx          uint8 N,3,32,32 images + uint8 labels   ringfeed-convert idx
#   npy          float32 (N,3,32,32) in [0, 1] + labels   ringfeed-convert npy (stored float32)
#   predecessor  float32 feature-major + int32 labels     ringfeed-convert predecessor, stored as
#                                                          uint8 (pred-u8) and as float32 (pred-f32)
#
# Each conversion starts cold where the page cache can be dropped (as root: echo 3 >
# /proc/sys/vm/drop_caches; the table says when it could not), ends with the output fsynced (the
# converter does), and its time covers the whole command. Only bash, coreutils and python3 with
# numpy are used, so it runs on the GPU machines as it does here.
#
# Environment: KINDS (default "raw idx npy pred-u8 pred-f32"), CODECS ("none lz4 zstd:1"),
# THREADS ("1 default"; a number is passed as --threads N), PYTHON (/usr/bin/python3 where it
# exists, else python3).
set -euo pipefail

usage() {
  echo "usage: tools/bench/convert_throughput.sh BIN SIZE [DIR]  (SIZE: bytes, or 1.2G, 500M)" >&2
  exit 2
}
(($# >= 2 && $# <= 3)) || usage
bin=$1
size_text=$2
[ -x "$bin" ] || { echo "convert_throughput.sh: $bin is not an executable" >&2; exit 2; }
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
kinds=${KINDS:-raw idx npy pred-u8 pred-f32}
codecs=${CODECS:-none lz4 zstd:1}
threads_list=${THREADS:-1 default}
py=${PYTHON:-}
if [ -z "$py" ]; then
  if [ -x /usr/bin/python3 ]; then py=/usr/bin/python3; else py=python3; fi
fi

case "$size_text" in
  *[Kk]) mult=1000 num=${size_text%?} ;;
  *[Mm]) mult=1000000 num=${size_text%?} ;;
  *[Gg]) mult=1000000000 num=${size_text%?} ;;
  *) mult=1 num=$size_text ;;
esac
[[ "$num" =~ ^[0-9]+(\.[0-9]+)?$ ]] || usage
size=$(awk -v n="$num" -v m="$mult" 'BEGIN { printf "%.0f", n * m }')
((size >= 3072)) || { echo "convert_throughput.sh: SIZE must hold one 3x32x32 sample" >&2; exit 2; }

if (($# == 3)); then
  dir=$3
  mkdir -p "$dir"
  keep=1
else
  dir=$(mktemp -d "${TMPDIR:-/tmp}/convert-throughput.XXXXXX")
  keep=0
fi
dir=$(cd "$dir" && pwd)
cleanup() { ((keep)) || rm -rf "$dir"; }
trap cleanup EXIT

echo "# ringfeed-convert throughput: $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs" \
  "($(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2 | sed 's/^ *//' || echo unknown))," \
  "$(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo) memory"
echo "# binary: $bin"
echo "# inputs: $dir, about $size bytes of samples each"

# The inputs, once.
"$py" - "$dir" "$size" "$kinds" <<'EOF'
import os, sys
import numpy as np

out, size, kinds = sys.argv[1], int(sys.argv[2]), sys.argv[3].split()
C, H, W = 3, 32, 32
F = C * H * W
rng = np.random.default_rng(27)
yy, xx = np.meshgrid(np.arange(H), np.arange(W), indexing="ij")
templates = np.empty((10, F), np.uint8)
for k in range(10):
    planes = [96 + 64 * np.sin((xx * (k + 1) + yy * (c + 2)) / 9.0 + c) for c in range(C)]
    templates[k] = np.clip(np.stack(planes), 0, 255).astype(np.uint8).reshape(-1)
BLOCK = 8192  # samples made at a time

def samples(n_bytes_each):
    n = max(1, size // n_bytes_each)
    labels = rng.integers(0, 10, n, dtype=np.uint8)
    return n, labels

def blocks(n, labels):
    for s0 in range(0, n, BLOCK):
        s1 = min(n, s0 + BLOCK)
        noise = rng.integers(0, 32, (s1 - s0, F), dtype=np.uint8)
        yield s0, s1, templates[labels[s0:s1]] + noise  # at most 160 + 31: no wrap

def idx_header(code, dims):
    return bytes([0, 0, code, len(dims)]) + b"".join(d.to_bytes(4, "big") for d in dims)

if "raw" in kinds:
    n, labels = samples(F)
    with open(os.path.join(out, "raw.bin"), "wb") as f:
        for s0, s1, x in blocks(n, labels):
            rec = np.empty((s1 - s0, F + 1), np.uint8)
            rec[:, 0] = labels[s0:s1]
            rec[:, 1:] = x
            rec.tofile(f)
if "idx" in kinds:
    n, labels = samples(F)
    with open(os.path.join(out, "idx-images.idx"), "wb") as f:
        f.write(idx_header(0x08, [n, C, H, W]))
        for _, _, x in blocks(n, labels):
            x.tofile(f)
    with open(os.path.join(out, "idx-labels.idx"), "wb") as f:
        f.write(idx_header(0x08, [n]))
        labels.tofile(f)
if "npy" in kinds:
    n, labels = samples(4 * F)
    x_out = np.lib.format.open_memmap(os.path.join(out, "x.npy"), "w+", np.float32, (n, C, H, W))
    for s0, s1, x in blocks(n, labels):
        x_out[s0:s1] = (x.astype(np.float32) / 255).reshape(-1, C, H, W)
    x_out.flush()
    del x_out
    np.save(os.path.join(out, "y.npy"), labels)
if "pred-u8" in kinds or "pred-f32" in kinds:
    # Feature-major: feature f of sample s at f * N + s (the whole uint8 matrix in memory:
    # a quarter of SIZE).
    n, labels = samples(4 * F)
    m = np.empty((n, F), np.uint8)
    for s0, s1, x in blocks(n, labels):
        m[s0:s1] = x
    with open(os.path.join(out, "images_train.bin"), "wb") as f:
        for f0 in range(0, F, 64):
            (m[:, f0:f0 + 64].T.astype(np.float32) / 255).tofile(f)
    labels.astype(np.int32).tofile(os.path.join(out, "labels_train.bin"))
EOF

input_bytes() {  # the files a kind reads
  local total=0 f
  for f in "$@"; do total=$((total + $(stat -c %s "$f"))); done
  echo "$total"
}

cold() {  # drops the page cache where it can; prints cold or warm
  sync
  if (echo 3 >/proc/sys/vm/drop_caches) 2>/dev/null; then echo cold; else echo warm; fi
}

printf '\n| input | codec | threads | input GB | seconds | GB/s of input | cache |\n'
printf '| --- | --- | --- | --- | --- | --- | --- |\n'
for kind in $kinds; do
  case "$kind" in
    raw) files=("$dir/raw.bin"); args=(raw --records "$dir/raw.bin" --shape 3,32,32) ;;
    idx)
      files=("$dir/idx-images.idx" "$dir/idx-labels.idx")
      args=(idx --images "${files[0]}" --labels "${files[1]}")
      ;;
    npy) files=("$dir/x.npy" "$dir/y.npy"); args=(npy --images "${files[0]}" --labels "${files[1]}") ;;
    pred-u8 | pred-f32)
      files=("$dir/images_train.bin" "$dir/labels_train.bin")
      args=(predecessor --images "${files[0]}" --labels "${files[1]}" --shape 3,32,32
        --dtype "$([ "$kind" = pred-u8 ] && echo uint8 || echo float32)")
      ;;
    *) echo "convert_throughput.sh: unknown kind $kind (raw idx npy pred-u8 pred-f32)" >&2; exit 2 ;;
  esac
  bytes=$(input_bytes "${files[@]}")
  for codec in $codecs; do
    for threads in $threads_list; do
      extra=()
      [ "$threads" = default ] || extra=(--threads "$threads")
      rm -f "$dir/out.rfd"
      cache=$(cold)
      start=$(date +%s.%N)
      "$bin" "${args[@]}" --compress "$codec" "${extra[@]}" -o "$dir/out.rfd" -q
      end=$(date +%s.%N)
      awk -v k="$kind" -v c="$codec" -v t="$threads" -v b="$bytes" -v s="$start" -v e="$end" \
        -v cache="$cache" 'BEGIN { printf "| %s | %s | %s | %.2f | %.2f | %.2f | %s |\n",
          k, c, t, b / 1e9, e - s, b / 1e9 / (e - s), cache }'
    done
  done
  rm -f "$dir/out.rfd"
done
