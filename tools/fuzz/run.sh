#!/usr/bin/env bash
# Fuzzes ringfeed's parsers of hostile files for a bounded time and fails on the first crash.
#
#   tools/fuzz/run.sh [--seconds N] [TARGET...]
#
# Builds the libFuzzer targets of tools/fuzz with clang (ASan + UBSan over everything, in
# $RINGFEED_FUZZ_BUILD_DIR, default build-fuzz), writes the seed corpus, then runs each TARGET
# (default all 11: header header_raw index dataset codec checkpoint checkpoint_raw options jpeg
# tar jsonl) for N seconds (default $RINGFEED_FUZZ_SECONDS, else 60), one after another. The
# corpus grows in BUILD/fuzz/corpus/TARGET and is kept between runs. A crash, a sanitizer
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
targets=()
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) seconds=$2; shift 2 ;;
    --seconds=*) seconds=${1#--seconds=}; shift ;;
    -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
    *) targets+=("$1"); shift ;;
  esac
done
[ ${#targets[@]} -gt 0 ] || targets=(header header_raw index dataset codec checkpoint checkpoint_raw options
                                     jpeg tar jsonl)
case "$seconds" in ''|*[!0-9]*) echo "run.sh: --seconds wants a whole number, got '$seconds'" >&2; exit 2 ;; esac

build=${RINGFEED_FUZZ_BUILD_DIR:-build-fuzz}
jobs=${RINGFEED_FUZZ_JOBS:-$(nproc)}
cc=${RINGFEED_FUZZ_CC:-clang}
cxx=${RINGFEED_FUZZ_CXX:-clang++}
command -v "$cxx" >/dev/null || { echo "run.sh: $cxx not found (Debian: apt install clang)" >&2; exit 1; }

CC=$cc CXX=$cxx cmake -S . -B "$build" -DRINGFEED_FUZZ=ON -DRINGFEED_TESTS=OFF \
  -DRINGFEED_CUDA=OFF -DRINGFEED_PYTHON=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
binaries=(fuzz_seeds)
for t in "${targets[@]}"; do binaries+=("fuzz_$t"); done
cmake --build "$build" -j"$jobs" --target "${binaries[@]}"

out=$build/fuzz
"$out/fuzz_seeds" "$out/corpus"
summary=$out/summary.txt
: > "$summary"
failed=()
for t in "${targets[@]}"; do
  mkdir -p "$out/corpus/$t" "$out/artifacts/$t"
  log=$out/$t.log
  echo "== fuzz_$t: $seconds s"
  set +e
  # -malloc_limit_mb: no single allocation may exceed it; every valid file here is a few KiB,
  # so a larger one was sized from a forged field.
  "$out/fuzz_$t" "$out/corpus/$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -malloc_limit_mb=256 -artifact_prefix="$out/artifacts/$t/" -print_final_stats=1 \
    >"$log" 2>&1
  rc=$?
  set -e
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  corpus=$(find "$out/corpus/$t" -type f | wc -l)
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
