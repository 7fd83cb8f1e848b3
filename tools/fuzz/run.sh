#!/usr/bin/env bash
# Fuzzes ringfeed's parsers of hostile files for a bounded time and fails on the first crash.
#
#   tools/fuzz/run.sh [--seconds N] [--merge] [TARGET...]
#
# Builds the libFuzzer targets of tools/fuzz with clang (ASan + UBSan over everything, in
# $RINGFEED_FUZZ_BUILD_DIR, default build-fuzz), writes the seed corpus, then runs each TARGET
# (default all 11: header header_raw index dataset codec checkpoint checkpoint_raw options image
# tar jsonl) for N seconds (default $RINGFEED_FUZZ_SECONDS, else 60), one after another, from the
# seeds, the corpus kept in the tree (tools/fuzz/corpus/TARGET, read only) and what earlier runs
# here found: the corpus grows in BUILD/fuzz/corpus/TARGET and is kept between runs. --merge then
# minimizes all three into tools/fuzz/corpus/TARGET (libFuzzer's -merge=1: the fewest inputs
# that reach the same coverage), to commit. A crash, a sanitizer
# report, a hang (-timeout), an allocation above -malloc_limit_mb (a size taken from the file) or
# an accepted file that breaks its decoder's contract (RF_FUZZ_CHECK) stops that target; the
# input is saved under BUILD/fuzz/artifacts/TARGET/ and the script exits 1 after running the
# others. Each target's executions and corpus size are printed, and written to
# BUILD/fuzz/summary.txt.
#
# Replay a saved input: BUILD/fuzz/fuzz_TARGET ARTIFACT. For CI (.ci/run): exit 0 means no crash.
set -euo pipefail
cd "$(dirname "$0")/../.."

seconds=${RINGFEED_FUZZ_SECONDS:-60}
merge=0
targets=()
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) seconds=$2; shift 2 ;;
    --seconds=*) seconds=${1#--seconds=}; shift ;;
    --merge) merge=1; shift ;;
    -h|--help) sed -n '2,21p' "$0"; exit 0 ;;
    *) targets+=("$1"); shift ;;
  esac
done
[ ${#targets[@]} -gt 0 ] || targets=(header header_raw index dataset codec checkpoint checkpoint_raw options
                                     image tar jsonl state)
case "$seconds" in ''|*[!0-9]*) echo "run.sh: --seconds wants a whole number, got '$seconds'" >&2; exit 2 ;; esac

build=${RINGFEED_FUZZ_BUILD_DIR:-build-fuzz}
jobs=${RINGFEED_FUZZ_JOBS:-$(nproc)}
cc=${RINGFEED_FUZZ_CC:-clang}
cxx=${RINGFEED_FUZZ_CXX:-clang++}
command -v "$cxx" >/dev/null || { echo "run.sh: $cxx not found (Debian: apt install clang)" >&2; exit 1; }

# -gline-tables-only: a crash's stack keeps file:line of every frame; full -g compiled 11-20%
# slower (clang 14, two files) for nothing a report prints.
CC=$cc CXX=$cxx cmake -S . -B "$build" -DRINGFEED_FUZZ=ON -DRINGFEED_TESTS=OFF \
  -DRINGFEED_CUDA=OFF -DRINGFEED_PYTHON=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O2 -gline-tables-only -DNDEBUG" \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -gline-tables-only -DNDEBUG" >/dev/null
binaries=(fuzz_seeds)
for t in "${targets[@]}"; do binaries+=("fuzz_$t"); done
cmake --build "$build" -j"$jobs" --target "${binaries[@]}"

out=$build/fuzz
"$out/fuzz_seeds" "$out/seeds"  # written anew each run: they follow the writers' format
summary=$out/summary.txt
: > "$summary"
failed=()
# -malloc_limit_mb: no single allocation may exceed it; every valid file here is a few KiB, so a
# larger one was sized from a forged field.
limits=(-timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=256)
for t in "${targets[@]}"; do
  # A target its seeds writer has none for (state: its corpus is kept in the tree) still runs.
  mkdir -p "$out/corpus/$t" "$out/artifacts/$t" "$out/seeds/$t"
  kept=tools/fuzz/corpus/$t  # read only: new inputs go to the first directory
  dirs=("$out/corpus/$t" "$out/seeds/$t")
  [ -d "$kept" ] && dirs+=("$kept")
  log=$out/$t.log
  echo "== fuzz_$t: $seconds s"
  set +e
  "$out/fuzz_$t" "${dirs[@]}" -max_total_time="$seconds" "${limits[@]}" \
    -artifact_prefix="$out/artifacts/$t/" -print_final_stats=1 >"$log" 2>&1
  rc=$?
  set -e
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  corpus=$(find "${dirs[@]}" -type f | wc -l)  # the seeds and the kept ones counted too
  if ((merge && rc == 0)); then
    # Only what the seeds do not reach is kept: the seeds go in first, so that the merge adds
    # just the inputs that reach more, and are taken out after (each run writes them).
    rm -rf "$kept.new"
    mkdir -p tools/fuzz/corpus
    cp -r "$out/seeds/$t" "$kept.new"
    "$out/fuzz_$t" -merge=1 "${limits[@]}" "$kept.new" "${dirs[@]}" >"$out/$t.merge.log" 2>&1
    (cd "$out/seeds/$t" && find . -type f -print0) | (cd "$kept.new" && xargs -0 rm -f)
    rm -rf "$kept"
    mv "$kept.new" "$kept"
    echo "fuzz_$t: merged into $kept: $(find "$kept" -type f | wc -l) inputs," \
      "$(cat "$kept"/* | wc -c) bytes"
  fi
  line="fuzz_$t: ${execs:-?} executions in $seconds s, corpus $corpus inputs, exit $rc"
  echo "$line" | tee -a "$summary"
  if [ $rc -ne 0 ]; then
    failed+=("$t")
    grep -E "ERROR|invariant|SUMMARY|Test unit written" "$log" | head -20 >&2 || true
    tail -5 "$log" >&2
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "run.sh: crashes in: ${failed[*]} (inputs under $out/artifacts/)" >&2
  exit 1
fi
echo "run.sh: no crashes (${#targets[@]} targets, $seconds s each)"
