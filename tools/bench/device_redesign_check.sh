#!/usr/bin/env bash
# A refactoring's "behaviour changes nowhere" checks on a GPU machine, BEFORE against AFTER (two
# static packages made by tools/bench/package_device.sh, each with its test executables and the
# sources of its commit), in one call:
#   tests    every test executable AFTER carries (its GPU tests run: nothing skips on a GPU);
#   quality  the README's Fashion-MNIST command ($QUALITY_FLAGS, $EPOCHS epochs, seed 1) with each
#            build: every epoch's train loss and test accuracy, and the final checkpoints' bytes,
#            must be equal;
#   resume   BEFORE trains the same command to step $STOP and writes its checkpoint, AFTER resumes
#            from it to the end: AFTER's final checkpoint must equal BEFORE's uninterrupted one
#            byte for byte (a checkpoint written before the change resumes after it, exactly);
#   python   each build's Python extension built there (device_python_check.sh BUILD_ONLY=1), the
#            pytest suite (python/tests, GPU tests included) against AFTER's, then
#            tools/bench/python_loader.py's loader and train_ringfeed phases for each, cold,
#            interleaved, $PY_ROUNDS rounds;
#   speed    tools/bench/compare_builds.sh BEFORE AFTER (compute, cached, reader, cold; $ROUNDS
#            rounds, $GB GB);
#   pycached the python part's phases on a $PYC_GB GB (default 2) dataset held in the page cache,
#            read with io='buffered': the disk out of the figures, so the loader's own work (its
#            GPU decode among it) and the training it feeds are what is compared ($PY_ROUNDS);
#   reader   each build's `ringfeed read --order train` alone, cold, $READ_ROUNDS rounds (default
#            6) alternating which goes first: the disk stage with more rounds than speed gives it.
# $PARTS picks which parts run [tests quality resume python speed]. Writes OUT_DIR/summary.txt
# (every verdict and figure), OUT_DIR/compare.json (speed) and OUT_DIR/logs.tar.gz.
# Usage: tools/bench/device_redesign_check.sh BEFORE_PKG AFTER_PKG FMNIST_DIR OUT_DIR
# Through the device tool, with carry [".carry/before.tar.xz", ".carry/after.tar.xz",
# ".carry/fmnist"] (tools/bench/carry_fmnist.sh):
#   for p in before after; do mkdir -p /tmp/$p && tar -C /tmp/$p -xJf .carry/$p.tar.xz; done &&
#     tools/bench/device_redesign_check.sh /tmp/before/pkg /tmp/after/pkg .carry/fmnist "$OUT"
set -uo pipefail
before=$(realpath "$1")
after=$(realpath "$2")
fm=$(realpath "$3")
out=$(realpath -m "$4")
logs=$out/logs
work=${RINGFEED_DATA:-/var/tmp/ringfeed-redesign}
parts=${PARTS:-tests quality resume python pycached speed reader}
epochs=${EPOCHS:-30}
stop=${STOP:-7000}
flags=${QUALITY_FLAGS:---batch-norm --lr 0.05 --augment crop:2,flip --lr-schedule cosine --warmup-epochs 1 --label-smoothing 0.1}
mkdir -p "$logs" "$work"
trap 'tar -C "$out" -czf "$out/logs.tar.gz" logs && rm -rf "$logs"' EXIT
export NCCL_NVLS_ENABLE=0
summary=$out/summary.txt
say() { echo "$*" | tee -a "$summary"; }
has() { [[ " $parts " == *" $1 "* ]]; }
cold() { sync; echo 3 >/proc/sys/vm/drop_caches 2>/dev/null || echo "(page cache NOT dropped)"; }

say "== machine: $(nvidia-smi --query-gpu=name,memory.total --format=csv,noheader), $(nproc) cores, $(date -u)"

if has tests; then
  say "== tests (AFTER's executables)"
  for t in "$after"/tests/*; do
    name=$(basename "$t")
    if timeout 300 "$t" --gtest_brief=1 >"$logs/test-$name.log" 2>&1; then
      say "$name: $(grep -E '^\[  PASSED' "$logs/test-$name.log") $(grep -c '^\[  SKIPPED' "$logs/test-$name.log") skipped"
    else
      say "$name: FAILED"
      grep -E '^\[  FAILED|Failure' "$logs/test-$name.log" | head -10 | tee -a "$summary"
    fi
  done
fi

if has quality || has resume; then
  say "== Fashion-MNIST"
  "$after/bin/ringfeed-convert" idx --images "$fm/train-images-idx3-ubyte.gz" \
    --labels "$fm/train-labels-idx1-ubyte.gz" -o "$work/train.rfd" -q >"$logs/convert.log" 2>&1 &&
    "$after/bin/ringfeed-convert" idx --images "$fm/t10k-images-idx3-ubyte.gz" \
      --labels "$fm/t10k-labels-idx1-ubyte.gz" -o "$work/test.rfd" -q >>"$logs/convert.log" 2>&1 ||
    { say "convert FAILED"; tail "$logs/convert.log"; exit 1; }
  train() {  # BUILD NAME [flags]: the quality command, its metrics and checkpoint named NAME
    local pkg=$1 name=$2
    shift 2
    # shellcheck disable=SC2086
    "$pkg/bin/ringfeed" train --data "$work/train.rfd" --test "$work/test.rfd" --epochs "$epochs" \
      --seed 1 $flags --metrics "$work/$name.jsonl" --checkpoint "$work/$name.ckpt" "$@" \
      >"$logs/$name.log" 2>&1 || { say "$name: FAILED"; tail -3 "$logs/$name.log" | tee -a "$summary"; }
  }
  curve() {  # NAME: "epoch train_loss test_accuracy" lines
    python3 -c '
import json, sys
for l in open(sys.argv[1]):
    j = json.loads(l)
    if j.get("event") == "epoch":
        print(j["epoch"], repr(j["train_loss"]), repr(j.get("test_accuracy")))' "$work/$1.jsonl"
  }
fi

if has quality; then
  train "$before" q-before
  train "$after" q-after
  if diff <(curve q-before) <(curve q-after) >"$logs/quality.diff"; then
    say "quality: every one of $epochs epochs equal (train loss and test accuracy); final test accuracy $(curve q-after | tail -1 | cut -d' ' -f3)"
  else
    say "quality: DIFFERENT (logs/quality.diff)"; head -5 "$logs/quality.diff" | tee -a "$summary"
  fi
  cmp -s "$work/q-before.ckpt" "$work/q-after.ckpt" && say "quality: final checkpoints identical" ||
    say "quality: final checkpoints DIFFER"
fi

if has resume; then
  train "$before" r-straight
  train "$before" r-part --max-steps "$stop"
  cp "$work/r-part.ckpt" "$work/r-resumed.ckpt"
  # shellcheck disable=SC2086
  "$after/bin/ringfeed" train --data "$work/train.rfd" --test "$work/test.rfd" --epochs "$epochs" \
    $flags --resume "$work/r-resumed.ckpt" --checkpoint "$work/r-resumed.ckpt" \
    >"$logs/r-resumed.log" 2>&1 ||
    { say "resume: AFTER FAILED"; tail -3 "$logs/r-resumed.log" | tee -a "$summary"; }
  cmp -s "$work/r-straight.ckpt" "$work/r-resumed.ckpt" &&
    say "resume: BEFORE's checkpoint at step $stop, resumed by AFTER: final checkpoint identical to BEFORE's uninterrupted run" ||
    say "resume: final checkpoints DIFFER"
fi

build_sites() {
  for which in before after; do
    pkg=$before
    [ $which = after ] && pkg=$after
    [ -d "$work/site-$which/ringfeed" ] && continue
    SITE=$work/site-$which BUILD_ONLY=1 RINGFEED_DATA=$work tools/bench/device_python_check.sh \
      "$pkg" "$out/py-$which" >"$logs/py-build-$which.log" 2>&1 || { say "python $which build FAILED"; tail -5 "$logs/py-build-$which.log"; }
  done
}
py_compare() {  # TAG DATA [python_loader.py flags]: interleaved rounds of both builds, then the medians
  local tag=$1 data=$2
  shift 2
  for r in $(seq 1 "${PY_ROUNDS:-3}"); do
    order="before after"
    [ $((r % 2)) -eq 0 ] && order="after before"
    for which in $order; do
      pkg=$before
      [ $which = after ] && pkg=$after
      PYTHONPATH=$work/site-$which python3 tools/bench/python_loader.py --data "$data" \
        --ringfeed "$pkg/bin/ringfeed" --batch-size 256 --seconds "${PY_SECONDS:-12}" --repeats 1 \
        --phases loader,train_ringfeed --json "$work/$tag-$which-$r.json" "$@" \
        >"$logs/$tag-$which-$r.log" 2>&1 || say "python $tag $which round $r FAILED"
    done
  done
  python3 - "$work" "$tag" "${PY_ROUNDS:-3}" <<'PY' | tee -a "$summary"
import json, statistics, sys
work, tag, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
def rate(which, r, phase):
    try:
        return json.load(open(f"{work}/{tag}-{which}-{r}.json"))["results"][phase][0]["samples_per_s"]
    except (OSError, KeyError, IndexError):
        return None
for phase in ("loader", "train_ringfeed"):
    b = [rate("before", r, phase) for r in range(1, rounds + 1)]
    a = [rate("after", r, phase) for r in range(1, rounds + 1)]
    fmt = lambda v: " / ".join("-" if x is None else f"{x:,.0f}" for x in v)
    ok = all(b) and all(a)
    ratio = statistics.median(a) / statistics.median(b) if ok else None
    print(f"python {tag} {phase}: before {fmt(b)}  after {fmt(a)} samples/s; median after/before "
          + (f"{ratio:.3f}" if ratio else "-"))
PY
}

if has pycached; then
  say "== python loader (page cache, io buffered, interleaved)"
  build_sites
  n=$(python3 -c "print(int(${PYC_GB:-2} * 1e9 / 3073))")
  [ -f "$work/pyc.rfd" ] || "$after/bin/ringfeed-convert" synthetic -o "$work/pyc.rfd" --samples "$n" \
    --shape 3,32,32 --classes 10 --seed 7 -q >"$logs/pyc-convert.log" 2>&1
  cat "$work/pyc.rfd" >/dev/null
  py_compare pycached "$work/pyc.rfd" --io buffered
fi

if has python; then
  say "== python loader (cold, interleaved)"
  build_sites
  PYTHONPATH=$work/site-after RINGFEED_CONVERT=$after/bin/ringfeed-convert \
    RINGFEED_BIN=$after/bin XLA_PYTHON_CLIENT_PREALLOCATE=false \
    timeout 400 python3 -m pytest -q -p no:cacheprovider python/tests -rs >"$logs/pytest.log" 2>&1
  say "pytest (AFTER, python/tests): exit $? -- $(tail -1 "$logs/pytest.log")"
  grep -E "^(FAILED|ERROR)" "$logs/pytest.log" | head -10 | tee -a "$summary"
  n=$(python3 -c "print(int(${PY_GB:-8} * 1e9 / 3073))")
  [ -f "$work/py.rfd" ] || "$after/bin/ringfeed-convert" synthetic -o "$work/py.rfd" --samples "$n" \
    --shape 3,32,32 --classes 10 --seed 7 -q >"$logs/py-convert.log" 2>&1
  py_compare py "$work/py.rfd" --drop-caches
fi

if has speed; then
  say "== speed (compare_builds.sh)"
  ROUNDS=${ROUNDS:-3} GB=${GB:-8} RINGFEED_DATA=$work/speed tools/bench/compare_builds.sh \
    "$before/bin" "$after/bin" "$work/speed-out" 2>&1 | tee "$logs/speed.log" | grep -E "median|cold epoch" |
    tee -a "$summary"
  cp "$work/speed-out/compare.json" "$out/compare.json" 2>/dev/null
fi

if has reader; then
  say "== reader alone (cold, interleaved)"
  n=$((${GB:-8} * 1000000000 / 3073))
  [ -f "$work/read.rfd" ] || "$after/bin/ringfeed-convert" synthetic --samples "$n" --shape 3,32,32 \
    --classes 10 --seed 1 -q -o "$work/read.rfd" >"$logs/read-convert.log" 2>&1
  for r in $(seq 1 "${READ_ROUNDS:-6}"); do
    order="before after"
    [ $((r % 2)) -eq 0 ] && order="after before"
    for which in $order; do
      pkg=$before
      [ $which = after ] && pkg=$after
      cold
      "$pkg/bin/ringfeed" read "$work/read.rfd" --order train --seed 1 \
        --json "$work/read-$which-$r.json" >"$logs/read-$which-$r.log" 2>&1
    done
  done
  python3 - "$work" "${READ_ROUNDS:-6}" <<'PY' | tee -a "$summary"
import json, statistics, sys
work, rounds = sys.argv[1], int(sys.argv[2])
def gbps(which, r):
    try:
        run = json.load(open(f"{work}/read-{which}-{r}.json"))["runs"][0]
        return run["bytes"] / run["seconds"] / 1e9
    except (OSError, KeyError, IndexError):
        return None
b = [gbps("before", r) for r in range(1, rounds + 1)]
a = [gbps("after", r) for r in range(1, rounds + 1)]
fmt = lambda v: " / ".join("-" if x is None else f"{x:.3f}" for x in v)
ok = all(b) and all(a)
print(f"reader GB/s: before {fmt(b)}  after {fmt(a)}; median after/before "
      + (f"{statistics.median(a) / statistics.median(b):.3f}" if ok else "-"))
PY
fi
