#!/usr/bin/env bash
# Packed token sequences on the GPU machine (issue 24), one call: builds the Python extension
# from the carried package (tools/bench/device_python_check.sh BUILD_ONLY=1), runs the packed
# sequences' tests there (pytest, and the C++ tests the package carries: the GPU's batches, ids
# widened by the kernel, against the host's bit for bit), every batch on the GPU compared to the
# CPU's from Python, then the packing alone on a corpus in the page cache
# (ringfeed-bench-pack --device cuda, where the package carries it: tokens/s and each thread's
# rate per busy second on this host, no Python in the loop), then tools/bench/tokens_bench.py
# (start-up cold on 1e6, 1e9 tokens and >= 10 GB; tokens delivered cold against the disk x the
# codec ratio at batches of 16 and 64 rows, nanoGPT's memmap loader and a Megatron-style loader,
# in the same call), and the first batch's timeline on the start-up corpora.
# Usage: tools/bench/device_tokens_check.sh PKG_DIR TOKENS_RFD OUT_DIR
# (the package: tools/bench/package_device.sh BUILD OUT.tar.xz pipeline_sequence_loader_test
#  pipeline_cuda_sequence_loader_test, from a build with RINGFEED_STATIC_DEPS=ON; PACK_ARGS and
#  TOKENS_ARGS go to the two benchmarks.)
set -uo pipefail
pkg=$(realpath "$1")
source_rfd=$(realpath "$2")
out=$(realpath -m "$3")
mkdir -p "$out/logs"
trap 'tar -C "$out" -czf "$out/logs.tar.gz" logs && rm -rf "$out/logs"' EXIT
export RINGFEED_DATA=${RINGFEED_DATA:-/var/tmp/ringfeed-python}
BUILD_ONLY=1 tools/bench/device_python_check.sh "$pkg" "$out/build" || exit 1
export PYTHONPATH=$RINGFEED_DATA/site
export NCCL_NVLS_ENABLE=0
echo "== machine"
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
echo "$(nproc) cores, $(date -u)"
echo "== packed sequences' tests"
RINGFEED_CONVERT=$pkg/bin/ringfeed-convert python3 -m pytest -q -p no:cacheprovider \
  python/tests/test_sequences.py python/tests/test_records.py >"$out/logs/pytest.log" 2>&1
echo "pytest exit $?"; tail -3 "$out/logs/pytest.log"
for t in pipeline_sequence_loader_test pipeline_cuda_sequence_loader_test; do
  [ -x "$pkg/tests/$t" ] || { echo "$t: not in the package"; continue; }
  if "$pkg/tests/$t" >"$out/logs/$t.log" 2>&1; then
    echo "$t: $(grep -E '^\[  PASSED' "$out/logs/$t.log") $(grep -c '^\[  SKIPPED' "$out/logs/$t.log") skipped"
  else
    echo "$t: FAILED"; grep -E 'FAILED|Failure|Which is' "$out/logs/$t.log" | head -10
  fi
done
echo "== the GPU's batches are the CPU's"
python3 - <<'PY' 2>&1 | tee "$out/logs/gpu_equal.log"
import numpy as np, torch, ringfeed, tempfile, os
d = tempfile.mkdtemp()
rng = np.random.default_rng(0)
docs = [rng.integers(1, 30000, size=int(rng.integers(1, 3000))).astype(np.uint16) for _ in range(3000)]
p = os.path.join(d, "g.rfd")
with ringfeed.DatasetWriter(p, records="tokens", dtype="uint16", labels=False, compress="lz4") as w:
    w.write_records(np.concatenate(docs), np.concatenate([[0], np.cumsum([len(x) for x in docs])]))
cases = [dict(dtype="int64", eod_token=0), dict(dtype="int32", eod_token=0),
         dict(dtype="int64", eod_token=70000, pad_token=-1),  # eod wider than the ids
         dict(dtype="int64", eod_token=None, pad_token=7),
         dict(dtype="int32", eod_token=0, packing="pad", pad_token=-1)]
for c in cases:
    a = ringfeed.Loader(p, 8, sequence_length=1023, device="cpu", **c)
    g = ringfeed.Loader(p, 8, sequence_length=1023, device="cuda", **c)
    n = 0
    for x, y in zip(a, g):
        for i in range(4):
            assert torch.equal(torch.from_dlpack(x[i]), torch.from_dlpack(y[i]).cpu()), (c, n, i)
        n += 1
    print(c, "batches equal on cpu and cuda:", n)
PY
if [ -x "$pkg/bin/ringfeed-bench-pack" ]; then
  echo "== the packing alone, corpus in the page cache (ringfeed-bench-pack)"
  corpus=/var/tmp/ringfeed-tokens/pack.rfd
  mkdir -p "$(dirname "$corpus")"
  [ -e "$corpus" ] || "$pkg/bin/ringfeed-bench-pack" --make "$corpus" --tokens 500000000 \
    --compress lz4 --rounds 0 >"$out/logs/pack_make.log" 2>&1
  for b in 16 64; do
    "$pkg/bin/ringfeed-bench-pack" --data "$corpus" --device cuda --batch "$b" --rounds 2 \
      --seconds 4 --warmup 3 --json "$out/pack_b$b.json" ${PACK_ARGS:-} 2>&1 |
      tee "$out/logs/pack_b$b.log" | grep -vE '^\s*$'
  done
fi
echo "== tokens_bench"
python3 tools/bench/tokens_bench.py --source "$source_rfd" --work /var/tmp/ringfeed-tokens \
  --json "$out/tokens.json" ${TOKENS_ARGS:-} 2>&1 | tee "$out/logs/tokens_bench.log"
if [ -x "$pkg/bin/ringfeed-bench-pack" ]; then
  # Where a first batch's time goes (reads, checksums, decompression, copies, the wait), cold, on
  # the start-up corpora tokens_bench made: logs/first-CORPUS-K.json, Chrome traces.
  echo "== the first batch's timeline, cold (ringfeed-bench-pack --first-batch)"
  for c in c1e6 c1e9; do
    "$pkg/bin/ringfeed-bench-pack" --data "/var/tmp/ringfeed-tokens/$c.rfd" --device cuda \
      --first-batch 3 --rounds 0 --trace "$out/logs/first-$c" 2>&1 | sed "s/^/$c /"
  done
fi
