#!/usr/bin/env bash
# Packed sequences' packing (pipeline/sequences/sequence_loader.h), a build before a change against one
# after it, on any machine (no GPU), interleaved so that the machine's other load falls on both
# alike: ringfeed-bench-pack (tools/bench/pack_throughput.cc, one source file that builds
# against either) on a token corpus in the page cache, device cpu, int64, rows of 2049, batch
# 16, each run one loader warmed up for $WARMUP s then measured for $RUN_SECONDS s:
#   before        BEFORE's loader
#   after-1       AFTER's, pack_threads 1
#   after-N       AFTER's, pack_threads $THREADS (default 2)
#   after-narrow  AFTER's, pack_threads 1, packed the GPU's way (--narrow: the ids narrow, the
#                 widening done on the host by the putter thread, as a GPU's kernel does it)
# $ROUNDS rounds (default 3), the order rotating, then the median of each: tokens/s handed out,
# and the packing thread's tokens per busy second (per second of its CPU time: what a loaded
# machine does not falsify as it does the wall clock).
# Usage: tools/bench/pack_ab.sh BEFORE_BIN AFTER_BIN OUT_DIR
# (BIN: a folder with ringfeed-bench-pack; the corpus, $CORPUS, is written by AFTER's if absent:
# $TOKENS uint16 ids, default 2e8, codec $COMPRESS, default none.)
set -uo pipefail
before=$(realpath "$1")
after=$(realpath "$2")
out=$(realpath -m "$3")
corpus=${CORPUS:-/var/tmp/ringfeed-pack/corpus.rfd}
rounds=${ROUNDS:-3}
threads=${THREADS:-2}
mkdir -p "$out" "$(dirname "$corpus")"
if [ ! -e "$corpus" ]; then
  "$after/ringfeed-bench-pack" --make "$corpus" --tokens "${TOKENS:-200000000}" \
    --compress "${COMPRESS:-none}" --rounds 0 || exit 1
fi
echo "$(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u)"
run() {  # run NAME BIN [flags]
  local name=$1 bin=$2
  shift 2
  "$bin/ringfeed-bench-pack" --data "$corpus" --rounds 1 --seconds "${RUN_SECONDS:-4}" \
    --warmup "${WARMUP:-4}" --json "$out/$name-$r.json" "$@" >"$out/$name-$r.log" 2>&1 ||
    { echo "$name round $r failed:"; tail -3 "$out/$name-$r.log"; }
  grep '^round' "$out/$name-$r.log" | sed "s/^round 0/$name round $r/"
}
variants=(before after-1 after-N after-narrow)
for r in $(seq 1 "$rounds"); do
  for k in 0 1 2 3; do
    v=${variants[$(((k + r - 1) % 4))]}
    case $v in
      before) run before "$before" ;;
      after-1) run after-1 "$after" --pack-threads 1 ;;
      after-N) run "after-$threads" "$after" --pack-threads "$threads" ;;
      after-narrow) run after-narrow "$after" --pack-threads 1 --narrow ;;
    esac
  done
done
python3 - "$out" "$threads" <<'PY'
import glob, json, statistics, sys
out, threads = sys.argv[1], sys.argv[2]
print(f"{'variant':14} {'M tokens/s':>11} {'packing thread: M tokens per busy s':>36}")
for v in ("before", "after-1", f"after-{threads}", "after-narrow"):
    docs = [json.load(open(f)) for f in sorted(glob.glob(f"{out}/{v}-*.json"))]
    if not docs:
        continue
    rate = statistics.median(d["median_tokens_per_s"] for d in docs) / 1e6
    pack = statistics.median(d["median_packing_tokens_per_busy_s"] for d in docs) / 1e6
    print(f"{v:14} {rate:11.0f} {pack:36.0f}")
PY
