#!/usr/bin/env bash
# Two builds of ringfeed measured against each other in one run on a GPU machine, interleaved so
# that the disk's and the machine's swings fall on both alike (a refactoring's "no change in
# speed" check):
#   compute  ringfeed-bench-compute of each build, data already on the GPU;
#   cached   a streaming epoch of each build with the dataset in the page cache and buffered
#            reads, at --batch-size $SMALL (default 128: the model is the bound, so any overhead
#            the pipeline adds shows);
#   reader   each build's reader alone (ringfeed read --order train) from a cold page cache, in
#            the order the epoch reads its chunks: the bound of the cold epoch;
#   cold     a streaming epoch of each build from a cold page cache (O_DIRECT), at $BATCH
#            (default 256: the disk is the bound on the H100 machine);
# $ROUNDS rounds (default 3), the build that goes first alternating, then the median of each.
# Usage: tools/bench/compare_builds.sh BEFORE_BIN AFTER_BIN OUT_DIR
# (BIN: a folder with ringfeed, ringfeed-convert and ringfeed-bench-compute; the dataset is
# written with AFTER's converter to $RINGFEED_DATA, $GB GB, default 8.)
set -uo pipefail
before=$(realpath "$1")
after=$(realpath "$2")
out=$(realpath -m "$3")
data=${RINGFEED_DATA:-/var/tmp/ringfeed-compare}
gb=${GB:-8}
rounds=${ROUNDS:-3}
small=${SMALL:-128}
batch=${BATCH:-256}
mkdir -p "$out" "$data"
cold() { sync; echo 3 >/proc/sys/vm/drop_caches 2>/dev/null || echo "(page cache NOT dropped)"; }

echo "== machine"
nvidia-smi --query-gpu=name,memory.total,memory.used --format=csv,noheader
echo "kernel $(uname -r), $(nproc) cores, $(date -u)"
samples=$((gb * 1000000000 / 3073))
"$after/ringfeed-convert" synthetic --samples "$samples" --shape 3,32,32 --classes 10 --seed 1 \
  -q -o "$data/big.rfd" || exit 1
ls -la "$data"

epoch() {  # epoch BUILD NAME BATCH [flags]: one streaming epoch, its samples/s from --metrics
  local bin=$1 name=$2 b=$3
  shift 3
  "$bin/ringfeed" train --data "$data/big.rfd" --epochs 1 --batch-size "$b" \
    --metrics "$out/$name.jsonl" "$@" >"$out/$name.log" 2>&1 || { tail -3 "$out/$name.log"; return; }
}

for r in $(seq 1 "$rounds"); do
  order="before after"
  [ $((r % 2)) -eq 0 ] && order="after before"
  for which in $order; do
    bin=$before
    [ "$which" = after ] && bin=$after
    "$bin/ringfeed-bench-compute" --batch "$small" --bf16 on --graph on --steps 600 \
      --json "$out/compute-$which-$r.json" >/dev/null 2>&1
    cat "$data/big.rfd" >/dev/null  # into the page cache
    epoch "$bin" "cached-$which-$r" "$small" --io buffered
    cold
    "$bin/ringfeed" read "$data/big.rfd" --order train --seed 1 --json "$out/reader-$which-$r.json" \
      >"$out/reader-$which-$r.log" 2>&1
    cold
    epoch "$bin" "cold-$which-$r" "$batch"
  done
done

python3 - "$out" "$rounds" <<'PY'
import json, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
def epoch(name):
    try:
        lines = [json.loads(l) for l in open(f"{out}/{name}.jsonl")]
    except OSError:
        return None
    ep = [l for l in lines if l.get("event") == "epoch"]
    return ep[0] if ep else None
def reader(name):  # samples/s: the dataset's samples over the reader's seconds
    try:
        run = json.load(open(f"{out}/{name}.json"))["runs"][0]
        e = epoch(name.replace("reader", "cold"))
        return e["samples_per_s"] * e["seconds"] / run["seconds"] if e else None
    except (OSError, KeyError, IndexError):
        return None
def compute(name):
    try:
        return json.load(open(f"{out}/{name}.json"))["results"][0]["samples_per_s"]
    except (OSError, KeyError, IndexError):
        return None
rows = {}
kinds = ("compute", "cached", "reader", "cold")
for kind in kinds:
    for which in ("before", "after"):
        vals = []
        for r in range(1, rounds + 1):
            if kind == "compute":
                vals.append(compute(f"compute-{which}-{r}"))
            elif kind == "reader":
                vals.append(reader(f"reader-{which}-{r}"))
            else:
                e = epoch(f"{kind}-{which}-{r}")
                vals.append(e["samples_per_s"] if e else None)
        rows[(kind, which)] = vals
summary = {}
for kind in kinds:
    b, a = rows[(kind, "before")], rows[(kind, "after")]
    fmt = lambda v: " / ".join("-" if x is None else f"{x:,.0f}" for x in v)
    ok = [x for x in b if x] and [x for x in a if x]
    mb = statistics.median([x for x in b if x]) if ok else None
    ma = statistics.median([x for x in a if x]) if ok else None
    ratio = ma / mb if ok else None
    summary[kind] = {"before": b, "after": a, "median_before": mb, "median_after": ma,
                     "after_over_before": ratio}
    print(f"{kind:8s} before {fmt(b)}  after {fmt(a)}  samples/s; median after/before "
          + (f"{ratio:.3f}" if ratio else "-"))
for which in ("before", "after"):
    e = epoch(f"cold-{which}-1")
    if e:
        print(f"cold epoch, {which}: waited {100 * e['data_wait_share']:.1f}%, disk "
              f"{e['disk_gb_per_s']:.3f} GB/s, GPU {e['gpu_bytes'] / 2**20:.0f} MiB, "
              f"RSS {e['rss_bytes'] / 2**20:.0f} MiB")
json.dump(summary, open(f"{out}/compare.json", "w"), indent=1)
PY
