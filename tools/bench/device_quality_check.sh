#!/usr/bin/env bash
# Issue 13's goals on a GPU machine, in one call:
#   1. accuracy: Fashion-MNIST (IDX .gz files in FMNIST_DIR, converted with ringfeed-convert idx),
#      one `ringfeed train --data train.rfd --test test.rfd --epochs $EPOCHS --seed $SEED` per
#      configuration of $CONFIGS (default model, bf16 and CUDA graph defaults), then the
#      configuration named by $REPEAT again with the same seed (reproducibility: same final
#      accuracy?); every epoch's train and test accuracy is kept;
#   2. speed: an augmented epoch (`--augment $SPEED_AUGMENT`, default crop:4,flip,erase:0.5)
#      against an unaugmented one, interleaved (the order alternates), $ROUNDS rounds (default 2)
#      each, at batch $BATCH (default 256), on two CIFAR-shaped synthetic datasets:
#        hot:  $HOT_GB GB (default 2) read through the page cache (--io buffered) after a warming
#              read; $HOT_EPOCHS epochs a run (default 3), the median of all but the first (the
#              CUDA graph's capture, cuDNN's choices) counts: compute-bound;
#        cold: $GB GB (default 8), page cache dropped before each one-epoch run (--io direct):
#              disk-bound where the disk is slower than the model;
#      samples/s of each epoch, and augmented / unaugmented per round (goal: >= 0.95).
# Writes to OUT_DIR: quality.json (configurations, per-epoch accuracies, final and best accuracy,
# the speed runs and ratios, machine, date), metrics.tar.gz (every run's --metrics JSONL, named
# after its run) and logs.tar.gz (every command's output). Draw and tabulate afterwards, where
# matplotlib is: /usr/bin/python3 tools/bench/plot_accuracy.py OUT_DIR/quality.json -o acc.png
# Usage: tools/bench/device_quality_check.sh PKG_DIR FMNIST_DIR OUT_DIR
#   PKG_DIR holds bin/ of a static build (tools/bench/package_device.sh); FMNIST_DIR the four
#   Fashion-MNIST IDX .gz files (tools/bench/carry_fmnist.sh copies Debian's into .carry/fmnist).
# Variables (defaults in brackets):
#   CONFIGS  ';'-separated NAME=FLAGS entries, FLAGS split on blanks (no quoting) [see below]
#   REPEAT   the configuration run a second time with the same seed, '' for none [final]
#   EPOCHS [30]  SEED [1] (unless a configuration's flags hold --seed)  DEVICE [auto]  FM_BATCH: --batch-size of the accuracy runs [128]
#   PARTS    which parts to run [accuracy speed]
#   ROUNDS [2]  BATCH [256]  HOT_GB [2]  HOT_EPOCHS [3]  GB [8]  SPEED_AUGMENT [crop:4,flip,erase:0.5]
#   SPEED_FLAGS  more flags for every speed run, split on blanks (e.g. a smaller --conv, so that
#                the model outruns the disk and the cold runs are disk-bound) ['']
#   RINGFEED_DATA: where the datasets are written [/var/tmp/ringfeed-quality]
# e.g. CONFIGS='baseline=;aug=--augment crop:2,flip' REPEAT=aug PARTS=accuracy tools/bench/...
# Through the device tool (on an H200 the default set and the speed part take about 3 minutes):
# here, first
#   tools/bench/package_device.sh build-static .carry/pkg.tar.xz && tools/bench/carry_fmnist.sh
# then run with carry [".carry/pkg.tar.xz", ".carry/fmnist"]:
#   mkdir -p /tmp/rf && tar -C /tmp/rf -xJf .carry/pkg.tar.xz &&
#     tools/bench/device_quality_check.sh /tmp/rf/pkg .carry/fmnist "$OUT"
# Tried on the CPU (no GPU): DEVICE=cpu EPOCHS=1 HOT_GB=0.01 GB=0.01 and a few thousand samples
# of Fashion-MNIST run the whole script in about a minute.
set -uo pipefail
pkg=$(realpath "$1")
fm=$(realpath "$2")
out=$(realpath -m "$3")
logs=$out/logs
metrics=$out/metrics
data=${RINGFEED_DATA:-/var/tmp/ringfeed-quality}
mkdir -p "$logs" "$metrics" "$data"
trap 'tar -C "$out" -czf "$out/metrics.tar.gz" metrics && rm -rf "$metrics";
      tar -C "$out" -czf "$out/logs.tar.gz" logs && rm -rf "$logs"' EXIT
bin=$pkg/bin
cold() { sync; echo 3 >/proc/sys/vm/drop_caches 2>/dev/null || echo "(page cache NOT dropped)"; }

# The README's command ("final") and the same without each of its parts, the defaults, and
# crop:1 in place of crop:2; REPEAT runs "final" again with the same seed.
sched="--lr-schedule cosine --warmup-epochs 1 --label-smoothing 0.1"
crop2="--augment crop:2,flip"
final="$crop2 $sched --batch-norm --lr 0.05"
default_configs="baseline=;final=$final;no-bn=$crop2 $sched --lr 0.05;no-aug=$sched --batch-norm --lr 0.05"
default_configs+=";no-sched=$crop2 --batch-norm --lr 0.05"
default_configs+=";no-smooth=$crop2 --lr-schedule cosine --warmup-epochs 1 --batch-norm --lr 0.05"
default_configs+=";plain-lr05=--lr 0.05;crop1=--augment crop:1,flip $sched --batch-norm --lr 0.05"
CONFIGS=${CONFIGS:-$default_configs}
REPEAT=${REPEAT-final}
EPOCHS=${EPOCHS:-30}
SEED=${SEED:-1}
DEVICE=${DEVICE:-auto}
FM_BATCH=${FM_BATCH:-128}
PARTS=${PARTS:-accuracy speed}
ROUNDS=${ROUNDS:-2}
BATCH=${BATCH:-256}
HOT_GB=${HOT_GB:-2}
HOT_EPOCHS=${HOT_EPOCHS:-3}
GB=${GB:-8}
SPEED_AUGMENT=${SPEED_AUGMENT:-crop:4,flip,erase:0.5}
SPEED_FLAGS=${SPEED_FLAGS:-}
read -ra speed_flags <<<"$SPEED_FLAGS"
export CONFIGS REPEAT EPOCHS SEED DEVICE FM_BATCH PARTS ROUNDS BATCH HOT_GB HOT_EPOCHS GB SPEED_AUGMENT
export SPEED_FLAGS
runs=$out/runs.tsv  # kind, name, round, exit status, wall seconds, flags: one line per run
: >"$runs"
configs=$out/configs.tsv  # fm-NAME, the configuration's own flags
: >"$configs"

echo "== machine"
gpu=$(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null |
      head -1)
echo "${gpu:-no GPU (nvidia-smi)}"
echo "kernel $(uname -r), $(nproc) cores, $(date -u)"

# run KIND NAME ROUND FLAGS...: one `ringfeed train`; its metrics in $metrics/NAME.jsonl, its
# output in $logs/NAME.log; one line in $runs.
run() {
  local kind=$1 name=$2 round=$3; shift 3
  local t0 t1 rc
  t0=$(date +%s.%N)
  "$bin/ringfeed" train --device "$DEVICE" --metrics "$metrics/$name.jsonl" "$@" \
    >"$logs/$name.log" 2>&1
  rc=$?
  t1=$(date +%s.%N)
  printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$kind" "$name" "$round" "$rc" \
    "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')" "$*" >>"$runs"
  [ $rc -eq 0 ] || { echo "$name: exit $rc"; tail -3 "$logs/$name.log"; }
  return $rc
}

if [[ " $PARTS " == *" accuracy "* ]]; then
  echo "== Fashion-MNIST: $EPOCHS epochs, seed $SEED, batch $FM_BATCH"
  conv="$bin/ringfeed-convert"
  if ! { "$conv" idx --images "$fm/train-images-idx3-ubyte.gz" \
           --labels "$fm/train-labels-idx1-ubyte.gz" -o "$data/fm-train.rfd" &&
         "$conv" idx --images "$fm/t10k-images-idx3-ubyte.gz" \
           --labels "$fm/t10k-labels-idx1-ubyte.gz" -o "$data/fm-test.rfd"; } \
       >"$logs/convert-fm.log" 2>&1; then
    cat "$logs/convert-fm.log"
  fi
  IFS=';' read -ra entries <<<"$CONFIGS"
  todo=("${entries[@]}")
  if [ -n "$REPEAT" ]; then
    for e in "${entries[@]}"; do
      [ "${e%%=*}" = "$REPEAT" ] && todo+=("$REPEAT-repeat=${e#*=}")
    done
  fi
  for e in "${todo[@]}"; do
    name=${e%%=*}
    flags=${e#*=}
    [ -n "$name" ] || continue
    printf 'fm-%s\t%s\n' "$name" "$flags" >>"$configs"
    seed=(--seed "$SEED")  # unless the configuration names its own
    [[ " $flags " == *" --seed "* ]] && seed=()
    # shellcheck disable=SC2086  # FLAGS are words, split on purpose
    run accuracy "fm-$name" 0 --data "$data/fm-train.rfd" --test "$data/fm-test.rfd" \
      --epochs "$EPOCHS" "${seed[@]}" --batch-size "$FM_BATCH" $flags
    grep -E "^epoch" "$logs/fm-$name.log" | tail -1 | sed "s/^/$name: /"
  done
fi

if [[ " $PARTS " == *" speed "* ]]; then
  samples() { awk -v g="$1" 'BEGIN { printf "%d", g * 1e9 / 3073 }'; }
  echo "== speed datasets: hot $HOT_GB GB, cold $GB GB"
  "$bin/ringfeed-convert" synthetic --samples "$(samples "$HOT_GB")" --shape 3,32,32 --classes 10 \
    --seed 2 -o "$data/hot.rfd" 2>&1 | tail -1
  "$bin/ringfeed-convert" synthetic --samples "$(samples "$GB")" --shape 3,32,32 --classes 10 \
    --seed 1 -o "$data/cold.rfd" 2>&1 | tail -1
  free -g | sed -n 2p
  cat "$data/hot.rfd" >/dev/null
  echo "== speed: augment $SPEED_AUGMENT vs none, batch $BATCH, $ROUNDS rounds"
  for r in $(seq 1 "$ROUNDS"); do
    order="plain aug"
    [ $((r % 2)) -eq 0 ] && order="aug plain"
    for v in $order; do
      aug=()
      [ "$v" = aug ] && aug=(--augment "$SPEED_AUGMENT")
      cat "$data/hot.rfd" >/dev/null  # still cached after the cold runs?
      run hot "hot-$v-$r" "$r" --data "$data/hot.rfd" --epochs "$HOT_EPOCHS" --io buffered \
        --batch-size "$BATCH" --seed "$r" "${aug[@]}" "${speed_flags[@]}"
      grep -E "^epoch" "$logs/hot-$v-$r.log" | tail -1 | sed "s/^/hot-$v-$r: /"
    done
    for v in $order; do
      aug=()
      [ "$v" = aug ] && aug=(--augment "$SPEED_AUGMENT")
      cold
      run cold "cold-$v-$r" "$r" --data "$data/cold.rfd" --epochs 1 \
        --batch-size "$BATCH" --seed "$r" "${aug[@]}" "${speed_flags[@]}"
      grep -E "^epoch" "$logs/cold-$v-$r.log" | tail -1 | sed "s/^/cold-$v-$r: /"
    done
  done
fi

echo "== summary"
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
python3 - "$out" "$runs" "$metrics" "$gpu" "$commit" "$configs" <<'PY'
import json, os, platform, statistics, sys, time
out, runs_tsv, mdir, gpu, commit, configs_tsv = sys.argv[1:7]
config_flags = dict(l.rstrip("\n").split("\t", 1) for l in open(configs_tsv) if l.strip())
env = os.environ

def records(name):
    path = os.path.join(mdir, name + ".jsonl")
    if not os.path.exists(path):
        return []
    return [json.loads(l) for l in open(path) if l.strip()]

KEEP = ("epoch", "train_accuracy", "test_accuracy", "train_loss", "test_loss", "lr",
        "samples_per_s", "seconds", "data_wait_share", "disk_gb_per_s")
runs = []
for line in open(runs_tsv):
    kind, name, rnd, rc, wall, flags = line.rstrip("\n").split("\t")
    recs = records(name)
    epochs = [{k: e[k] for k in KEEP if k in e} for e in recs if e.get("event") == "epoch"]
    end = next((e for e in recs if e.get("event") == "end"), {})
    runs.append({"kind": kind, "name": name, "round": int(rnd), "exit": int(rc),
                 "wall_s": float(wall), "flags": flags, "epochs": epochs,
                 "first_batch_ms": end.get("first_batch_ms")})

accuracy = []
for r in (r for r in runs if r["kind"] == "accuracy"):
    name = r["name"][len("fm-"):]
    ep = r["epochs"]
    test = [e.get("test_accuracy") for e in ep]
    best = max(range(len(ep)), key=lambda i: test[i]) if ep else None
    accuracy.append({
        "config": name, "flags": config_flags.get(r["name"], ""), "command_flags": r["flags"],
        "repeat_of": name[:-len("-repeat")] if name.endswith("-repeat") else None,
        "exit": r["exit"], "wall_s": r["wall_s"], "epochs_run": len(ep),
        "final_test_accuracy": test[-1] if ep else None,
        "final_train_accuracy": ep[-1].get("train_accuracy") if ep else None,
        "best_test_accuracy": test[best] if ep else None,
        "best_epoch": ep[best]["epoch"] if ep else None,
        "median_samples_per_s": statistics.median(e["samples_per_s"] for e in ep) if ep else None,
        "epochs": ep})

repeats = []
for a in accuracy:
    if not a["repeat_of"]:
        continue
    o = next((b for b in accuracy if b["config"] == a["repeat_of"]), None)
    if o is None or not o["epochs"] or not a["epochs"]:
        continue
    pairs = list(zip(o["epochs"], a["epochs"]))
    repeats.append({
        "config": o["config"],
        "final_test_accuracy": [o["final_test_accuracy"], a["final_test_accuracy"]],
        "final_equal": o["final_test_accuracy"] == a["final_test_accuracy"],
        "epochs_equal": sum(x.get("test_accuracy") == y.get("test_accuracy") for x, y in pairs),
        "epochs_compared": len(pairs),
        "max_test_accuracy_diff": max(abs(x["test_accuracy"] - y["test_accuracy"]) for x, y in pairs),
        "max_train_loss_diff": max(abs(x["train_loss"] - y["train_loss"]) for x, y in pairs)})

speed = {}
for kind in ("hot", "cold"):
    rows = []
    for rnd in sorted({r["round"] for r in runs if r["kind"] == kind}):
        row = {"round": rnd}
        for v in ("plain", "aug"):
            r = next((r for r in runs if r["name"] == f"{kind}-{v}-{rnd}"), None)
            if r is None or not r["epochs"]:
                row[v] = None
                continue
            ep = r["epochs"][1:] or r["epochs"]  # hot: all but the first epoch; cold: its one
            med = lambda k: statistics.median(e.get(k) or 0 for e in ep)
            row[v] = {"samples_per_s": med("samples_per_s"),
                      "all_epochs_samples_per_s": [e["samples_per_s"] for e in r["epochs"]],
                      "seconds": med("seconds"), "data_wait_share": med("data_wait_share"),
                      "disk_gb_per_s": med("disk_gb_per_s"), "exit": r["exit"]}
        if row["plain"] and row["aug"]:
            row["ratio"] = row["aug"]["samples_per_s"] / row["plain"]["samples_per_s"]
        rows.append(row)
    if rows:
        ratios = [x["ratio"] for x in rows if "ratio" in x]
        speed[kind] = {"rounds": rows, "ratios": ratios,
                       "median_ratio": statistics.median(ratios) if ratios else None,
                       "gb": float(env.get("HOT_GB" if kind == "hot" else "GB", "0") or 0),
                       "epochs_per_run": int(env.get("HOT_EPOCHS", "3")) if kind == "hot" else 1,
                       "io": "buffered" if kind == "hot" else "direct"}

summary = {
    "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
    "machine": {"gpu": gpu or None, "cores": os.cpu_count(), "kernel": platform.release(),
                "host": platform.node()},
    "commit": commit,
    "settings": {k: env.get(k) for k in ("CONFIGS", "REPEAT", "EPOCHS", "SEED", "DEVICE",
                                          "FM_BATCH", "PARTS", "ROUNDS", "BATCH", "HOT_GB",
                                          "HOT_EPOCHS", "GB", "SPEED_AUGMENT",
                                          "SPEED_FLAGS")},
    "accuracy": accuracy, "repeats": repeats, "speed": speed, "runs": runs}
json.dump(summary, open(os.path.join(out, "quality.json"), "w"), indent=1)

for a in accuracy:
    f = lambda x: "-" if x is None else f"{100 * x:.2f}%"
    sps = a["median_samples_per_s"]
    print(f"{a['config']:>16}: final test {f(a['final_test_accuracy'])}, best "
          f"{f(a['best_test_accuracy'])} (epoch {a['best_epoch']}), final train "
          f"{f(a['final_train_accuracy'])}, {0 if sps is None else sps:,.0f} samples/s, "
          f"{a['epochs_run']} epochs, exit {a['exit']}")
for p in repeats:
    print(f"repeat of {p['config']}: final {p['final_test_accuracy']}, equal {p['final_equal']}, "
          f"{p['epochs_equal']}/{p['epochs_compared']} epochs equal, max test diff "
          f"{p['max_test_accuracy_diff']:.4g}, max train loss diff {p['max_train_loss_diff']:.3g}")
for kind, s in speed.items():
    for x in s["rounds"]:
        g = lambda v: "-" if not x[v] else (f"{x[v]['samples_per_s']:,.0f} (waited "
                                           f"{100 * (x[v]['data_wait_share'] or 0):.1f}%)")
        ratio = f"{x['ratio']:.3f}" if "ratio" in x else "-"
        print(f"{kind} round {x['round']}: plain {g('plain')}, augmented {g('aug')}: ratio {ratio}")
    if s["median_ratio"] is not None:
        print(f"{kind}: median ratio {s['median_ratio']:.3f} (goal >= 0.95)")
PY
mv "$runs" "$configs" "$metrics/"
