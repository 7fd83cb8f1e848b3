#!/usr/bin/env bash
# Packed token sequences on the GPU machine (issue 24), one call: builds the Python extension
# from the carried package (tools/bench/device_python_check.sh BUILD_ONLY=1), runs the packed
# sequences' tests there with the batches on the GPU compared to the CPU's, then
# tools/bench/tokens_bench.py (start-up cold on 1e6, 1e9 tokens and >= 10 GB; tokens delivered
# cold against the disk x the codec ratio, nanoGPT's memmap loader and a Megatron-style loader).
# Usage: tools/bench/device_tokens_check.sh PKG_DIR TOKENS_RFD OUT_DIR
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
echo "== packed sequences' tests"
RINGFEED_CONVERT=$pkg/bin/ringfeed-convert python3 -m pytest -q -p no:cacheprovider \
  python/tests/test_sequences.py python/tests/test_records.py >"$out/logs/pytest.log" 2>&1
echo "pytest exit $?"; tail -3 "$out/logs/pytest.log"
echo "== the GPU's batches are the CPU's"
python3 - <<'PY' 2>&1 | tee "$out/logs/gpu_equal.log"
import itertools, numpy as np, torch, ringfeed, tempfile, os
d = tempfile.mkdtemp()
rng = np.random.default_rng(0)
docs = [rng.integers(1, 30000, size=int(rng.integers(1, 3000))).astype(np.uint16) for _ in range(3000)]
p = os.path.join(d, "g.rfd")
with ringfeed.DatasetWriter(p, records="tokens", dtype="uint16", labels=False, compress="lz4") as w:
    w.write_records(np.concatenate(docs), np.concatenate([[0], np.cumsum([len(x) for x in docs])]))
for dtype in ("int64", "int32"):
    a = ringfeed.Loader(p, 8, sequence_length=1023, device="cpu", eod_token=0, dtype=dtype)
    g = ringfeed.Loader(p, 8, sequence_length=1023, device="cuda", eod_token=0, dtype=dtype)
    n = 0
    for x, y in zip(a, g):
        for i in range(4):
            assert torch.equal(torch.from_dlpack(x[i]), torch.from_dlpack(y[i]).cpu()), (dtype, n, i)
        n += 1
    print(dtype, "batches equal on cpu and cuda:", n)
PY
echo "== tokens_bench"
python3 tools/bench/tokens_bench.py --source "$source_rfd" --work /var/tmp/ringfeed-tokens \
  --json "$out/tokens.json" ${TOKENS_ARGS:-} 2>&1 | tee "$out/logs/tokens_bench.log"
