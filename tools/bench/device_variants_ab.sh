#!/usr/bin/env bash
# Two builds, each running the same `ringfeed train` variants, interleaved in one call on a GPU
# machine (the build that goes first alternates by round), so that a kernel change's effect on
# each variant, and each variant's cost within one build, are measured side by side:
#   hot-plain, hot-aug   a $HOT_GB GB (default 2) CIFAR-shaped synthetic file read through the page
#                        cache (--io buffered, warmed first), batch $BATCH (256), $HOT_EPOCHS (3)
#                        epochs, without and with --augment $AUG (crop:4,flip,erase:0.5);
#   fm-plain, fm-bn      Fashion-MNIST train split (converted from FMNIST_DIR's IDX files), batch
#                        128, $FM_EPOCHS (4) epochs, no test split, without and with --batch-norm.
# A run's speed is the median samples/s of its epochs but the first (the graph's capture, cuDNN's
# search). Prints every run, then per variant the median over $ROUNDS rounds (2) for each build
# and after/before, and per build aug/plain and bn/plain.
# Usage: tools/bench/device_variants_ab.sh BEFORE_BIN AFTER_BIN FMNIST_DIR OUT_DIR
#   (BIN: a folder with ringfeed and ringfeed-convert; data is written with AFTER's converter to
#   $RINGFEED_DATA, default /var/tmp/ringfeed-variants). Logs and metrics: OUT_DIR/variants.tar.gz.
set -uo pipefail
before=$(realpath "$1")
after=$(realpath "$2")
fm=$(realpath "$3")
out=$(realpath -m "$4")
data=${RINGFEED_DATA:-/var/tmp/ringfeed-variants}
work=$out/variants
mkdir -p "$work" "$data"
trap 'tar -C "$out" -czf "$out/variants.tar.gz" variants && rm -rf "$work"' EXIT
ROUNDS=${ROUNDS:-2} BATCH=${BATCH:-256} HOT_GB=${HOT_GB:-2} HOT_EPOCHS=${HOT_EPOCHS:-3}
FM_EPOCHS=${FM_EPOCHS:-4} AUG=${AUG:-crop:4,flip,erase:0.5}

nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
echo "$(nproc) cores, $(date -u)"
"$after/ringfeed-convert" synthetic --samples "$(awk -v g="$HOT_GB" 'BEGIN { printf "%d", g * 1e9 / 3073 }')" \
  --shape 3,32,32 --classes 10 --seed 2 -o "$data/hot.rfd" 2>&1 | tail -1
"$after/ringfeed-convert" idx --images "$fm/train-images-idx3-ubyte.gz" \
  --labels "$fm/train-labels-idx1-ubyte.gz" -o "$data/fm.rfd" 2>&1 | tail -1

# run BUILD_NAME BIN VARIANT ROUND
run() {
  local name=$1 bin=$2 variant=$3 round=$4 args=()
  case $variant in
    hot-plain) args=(--data "$data/hot.rfd" --io buffered --epochs "$HOT_EPOCHS" --batch-size "$BATCH") ;;
    hot-aug) args=(--data "$data/hot.rfd" --io buffered --epochs "$HOT_EPOCHS" --batch-size "$BATCH"
                   --augment "$AUG") ;;
    fm-plain) args=(--data "$data/fm.rfd" --epochs "$FM_EPOCHS" --batch-size 128) ;;
    fm-bn) args=(--data "$data/fm.rfd" --epochs "$FM_EPOCHS" --batch-size 128 --batch-norm) ;;
  esac
  local tag=$name-$variant-$round
  [[ $variant == hot-* ]] && cat "$data/hot.rfd" >/dev/null
  "$bin/ringfeed" train --seed "$round" --metrics "$work/$tag.jsonl" "${args[@]}" \
    >"$work/$tag.log" 2>&1 || { echo "$tag: exit $?"; tail -2 "$work/$tag.log"; }
}

variants="hot-plain hot-aug fm-plain fm-bn"
for r in $(seq 1 "$ROUNDS"); do
  order="before after"
  [ $((r % 2)) -eq 0 ] && order="after before"
  for v in $variants; do
    for b in $order; do
      bin=$before
      [ "$b" = after ] && bin=$after
      run "$b" "$bin" "$v" "$r"
    done
  done
done

python3 - "$work" "$ROUNDS" $variants <<'PY'
import json, os, statistics, sys
work, rounds, variants = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
def speed(tag):
    path = os.path.join(work, tag + ".jsonl")
    if not os.path.exists(path):
        return None
    ep = [json.loads(l) for l in open(path) if l.strip()]
    ep = [e["samples_per_s"] for e in ep if e.get("event") == "epoch"]
    return statistics.median(ep[1:] or ep) if ep else None
med = {}
for v in variants:
    for b in ("before", "after"):
        runs = [speed(f"{b}-{v}-{r}") for r in range(1, rounds + 1)]
        print(f"{v:>10} {b:>6}: " + ", ".join("-" if x is None else f"{x:,.0f}" for x in runs))
        ok = [x for x in runs if x]
        med[v, b] = statistics.median(ok) if ok else None
for v in variants:
    a, b = med[v, "after"], med[v, "before"]
    if a and b:
        print(f"{v:>10}: median before {b:,.0f}, after {a:,.0f} samples/s: after/before {a / b:.3f}")
for b in ("before", "after"):
    for x, y in (("hot-aug", "hot-plain"), ("fm-bn", "fm-plain")):
        if med.get((x, b)) and med.get((y, b)):
            print(f"{b:>6}: {x}/{y} {med[x, b] / med[y, b]:.3f}")
PY
