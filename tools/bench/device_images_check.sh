#!/usr/bin/env bash
# Issue 25's GPU figures for decoded JPEG records, in one device call (at most 10 minutes; the
# parts share a TIME budget, and a part that would not fit in what is left is skipped, saying so):
#   build   the Python extension for the machine's python3 from the package
#           (tools/bench/device_python_check.sh BUILD_ONLY=1, as device_scaling_check.sh does);
#           then (every call) what the machine has of nvJPEG: libnvjpeg's files, whether
#           libnvjpeg.so.13 loads by name (where it does not but a file of that name is found,
#           RINGFEED_NVJPEG is set to it for every part), whether the loader knows image_decoder;
#   data    an ImageNet-like ImageFolder of $COUNT JPEGs (500x375 q90, 14 classes;
#           tools/bench/make_jpeg_set.py --workers $(nproc) from the photographs in $PHOTOS,
#           tools/bench/carry_photos.sh's copy; timed, images/s), kept between calls of a warm
#           machine; converted by the package's `ringfeed-convert images` (every call: the
#           dataset is the package's); and its first $COUNT/8 images (hard links; the same files
#           make_jpeg_set.py --count $COUNT/8 writes) converted too, for the memory figures;
#   tests   the package's test executables named in $TESTS (default: those whose names hold
#           "image" or "jpeg"), each under `timeout $TEST_TIMEOUT`;
#   bench   tools/bench/images_gpu_bench.py: ringfeed's nvJPEG loader cold and warm, its CPU
#           decode on every core, torchvision's GPU decode alone and with RandomResizedCrop, PIL
#           in a DataLoader, $ROUNDS interleaved rounds; the memory of one loader epoch on the
#           small and the full dataset; where the bench dies of a signal (a crash in native code),
#           it runs again without the nvJPEG contestants, so the baselines still come back;
#   resnet  examples/torch_resnet50.py on the GPU, $STEPS timed steps after $WARM: fed by
#           ringfeed.Loader, --compute-alone and --dataloader (the folder, in the page cache), in
#           $RESNET_ROUNDS rounds whose order alternates; fed / alone, dataloader / alone;
#   pytest  python/tests/test_examples_resnet.py (and $PYTEST_FILES) on this machine's torch and
#           torchvision, RINGFEED_PHOTOS=$PHOTOS.
# Writes OUT/summary.txt, OUT/images_bench.jsonl, OUT/resnet.jsonl and OUT/logs.tar.gz.
# Usage: tools/bench/device_images_check.sh PKG OUT
#   PKG: tools/bench/package_device.sh's archive (.tar.xz, unpacked into $RINGFEED_DATA/pkg-*) or
#   its unpacked pkg/ directory.
# Variables (defaults in brackets):
#   PARTS [build data tests bench resnet pytest]  TIME: seconds for the whole script [540]
#   COUNT: JPEGs [32000]  SMALL_COUNT [COUNT/8]  PHOTOS [.carry/photos]  GEN_WORKERS [nproc]
#   TESTS [the package's *image* and *jpeg* tests; 'none': none]  TEST_TIMEOUT [120]
#   ROUNDS: the bench's rounds [3]  BENCH_ARGS: more flags for images_gpu_bench.py ['']
#   STEPS [100]  WARM [20]  BATCH [256]  ARCH [resnet50]  RESNET_ROUNDS [2]
#   RESNET_NPROCS: GPUs, one process each under torch.distributed.run (DDP) [1]
#   RESNET_MODES: any of fed alone dataloader fed-nvjpeg fed-cpu, and fed:FLAG,FLAG (fed with
#   those flags: fed:--image-cpu-share=0,--image-threads=4), each optionally NAME=VALUE,...@MODE
#   (MODE with that environment) [fed alone dataloader]
#   RESNET_PROFILE: a mode ('fed' or one above) run once more after the rounds, its 6 steps after
#   the timed ones profiled by torch.profiler: OUT/resnet-profile.json.gz (rank 0) ['']
#   RESNET_FLAGS: more flags for every torch_resnet50.py run, RESNET_FED_FLAGS for those reading
#   the dataset (fed*, alone: --image-threads, --io, ...) ['']  RESNET_RESERVE: seconds kept for
#   the resnet part while the bench runs [200]  RINGFEED_DATA [/var/tmp/ringfeed-images]
# Through the device tool: here, first
#   tools/bench/package_device.sh build-static .carry/pkg.tar.xz pipeline_cuda_loader_images_test
#   tools/bench/carry_photos.sh
# then run with carry [".carry/pkg.tar.xz", ".carry/photos"]:
#   tools/bench/device_images_check.sh .carry/pkg.tar.xz "$OUT"
#   COUNT=16000 ROUNDS=2 PARTS="build data bench" tools/bench/device_images_check.sh ...  # less
set -uo pipefail
[ $# -eq 2 ] || { sed -n '2,/^set -uo/p' "$0" | sed '$d'; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
out=$(realpath -m "$2")
logs=$out/logs
work=${RINGFEED_DATA:-/var/tmp/ringfeed-images}
mkdir -p "$logs" "$work"
rm -f "$out/images_bench.jsonl" "$out/resnet.jsonl"
trap 'tar -C "$out" -czf "$out/logs.tar.gz" logs && rm -rf "$logs"' EXIT
export NCCL_NVLS_ENABLE=0
budget=${TIME:-540}
parts=${PARTS:-build data tests bench resnet pytest}
count=${COUNT:-32000}
small_count=${SMALL_COUNT:-$((count / 8))}
photos=$(realpath -m "${PHOTOS:-$repo/.carry/photos}")
rounds=${ROUNDS:-3}
steps=${STEPS:-100}
warm=${WARM:-20}
batch=${BATCH:-256}
arch=${ARCH:-resnet50}
resnet_rounds=${RESNET_ROUNDS:-2}
nprocs=${RESNET_NPROCS:-1}
cores=$(nproc)
summary=$out/summary.txt
: >"$summary"
say() { echo "$*" | tee -a "$summary"; }
has() { [[ " $parts " == *" $1 "* ]]; }
left() { echo $((budget - SECONDS)); }
# fits NAME SECONDS: true where SECONDS are left, else says the part is skipped.
fits() {
  if [ "$(left)" -ge "$2" ]; then return 0; fi
  say "-- $1 SKIPPED: $(left) s of TIME=$budget left, it needs about $2 s"
  return 1
}
tcmd() { printf '%q ' "$@"; }  # a command as it can be run again

gpu=$(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | head -1)
say "== machine: $gpu, $cores cores, $(date -u +%FT%TZ)"
versions=$(python3 -c 'import torch, torchvision
print("torch", torch.__version__, "torchvision", torchvision.__version__)' 2>&1 | tail -1)
say "kernel $(uname -r), $(python3 --version 2>&1), $versions"
say "work $work: $(df -h --output=avail,fstype "$work" | tail -1 | xargs) free;" \
  "PARTS=\"$parts\" TIME=$budget COUNT=$count"

# --- the package ---------------------------------------------------------------------------------
if [ -f "$1" ]; then
  pkg_root=$work/pkg-$(basename "$1" | sed 's/\.tar.*//')
  rm -rf "$pkg_root" && mkdir -p "$pkg_root"
  tar -C "$pkg_root" -xJf "$1" || { say "cannot unpack $1"; exit 1; }
  pkg=$pkg_root/pkg
else
  pkg=$(realpath "$1")
fi
[ -x "$pkg/bin/ringfeed-convert" ] || { say "no bin/ringfeed-convert in $pkg"; exit 1; }
carried=()
for t in "$pkg"/tests/*; do [ -x "$t" ] && carried+=("$(basename "$t")"); done
say "package $1: ${#carried[@]} test executables (${carried[*]})"

site=$work/site
export PYTHONPATH=$site
if has build; then
  say "== build (the extension for $(python3 --version 2>&1))"
  t0=$SECONDS
  if SITE=$site BUILD_ONLY=1 RINGFEED_DATA=$work "$here/device_python_check.sh" "$pkg" \
      "$logs/pybuild" >"$logs/pybuild.log" 2>&1; then
    say "built in $((SECONDS - t0)) s: $(grep -m1 '^import ringfeed' "$logs/pybuild.log")"
  else
    say "extension build FAILED"; tail -20 "$logs/pybuild.log" | tee -a "$summary"; exit 1
  fi
fi
python3 -c "import ringfeed" 2>/dev/null ||
  { say "no ringfeed package in $site (PARTS without build?)"; exit 1; }
# What the machine has of nvJPEG; where the loader would not find libnvjpeg.so.13 by name but the
# machine has it (the NVIDIA wheels beside PyTorch, CUDA's lib64), RINGFEED_NVJPEG names it.
python3 - "$work/nvjpeg-path" <<'PY' 2>&1 | tee -a "$summary"
import ctypes, glob, inspect, os, site, subprocess, sys
found = set(glob.glob("/usr/local/cuda*/lib64/libnvjpeg.so*"))
for d in site.getsitepackages():
    found.update(glob.glob(d + "/nvidia/**/libnvjpeg.so*", recursive=True))
cache = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True).stdout
found.update(w for w in cache.split() if "libnvjpeg.so" in w and w.startswith("/"))
loads = []
for name in ("libnvjpeg.so.13", "libnvjpeg.so.12", "libnvjpeg.so"):
    try:
        ctypes.CDLL(name)
        loads.append(name)
    except OSError:
        pass
print("nvJPEG here:", " ".join(sorted(found)) or "none found", "; dlopen by name:",
      " ".join(loads) or "none")
path = ""
if "libnvjpeg.so.13" not in loads:
    path = next((f for f in sorted(found, key=len)
                 if os.path.basename(f).startswith("libnvjpeg.so.13")), "")
open(sys.argv[1], "w").write(path)
import ringfeed
p = inspect.signature(ringfeed.Loader).parameters
print("the loader's image_decoder option:", repr(p["image_decoder"].default) + " by default"
      if "image_decoder" in p else "NOT in this build")
PY
if [ -z "${RINGFEED_NVJPEG:-}" ] && [ -s "$work/nvjpeg-path" ]; then
  RINGFEED_NVJPEG=$(cat "$work/nvjpeg-path")
  export RINGFEED_NVJPEG
  say "RINGFEED_NVJPEG=$RINGFEED_NVJPEG (libnvjpeg.so.13 is not found by name here)"
fi
# cuda/nvjpeg_library.h's declarations against this machine's nvjpeg.h (a compile-time check).
if has build; then
  hdr=$(ls /usr/local/cuda*/targets/x86_64-linux/include/nvjpeg.h /usr/local/cuda*/include/nvjpeg.h \
        2>/dev/null | head -1)
  if [ -z "$hdr" ]; then
    say "nvjpeg_abi_check: no nvjpeg.h on this machine"
  elif g++ -std=c++20 -fsyntax-only -I"$pkg/src" -I"$(dirname "$hdr")" \
      "$here/../../tests/pipeline/nvjpeg_abi_check.cc" >"$logs/nvjpeg_abi_check.log" 2>&1; then
    say "nvjpeg_abi_check: cuda/nvjpeg_library.h matches $hdr"
  else
    say "nvjpeg_abi_check FAILED against $hdr"; head -30 "$logs/nvjpeg_abi_check.log" | tee -a "$summary"
  fi
fi

# --- the data ------------------------------------------------------------------------------------
folder=$work/jpegs-$count
small_folder=$work/jpegs-$count-first$small_count
data=$work/images-$count.rfd
small=$work/images-$count-first$small_count.rfd
conv=$pkg/bin/ringfeed-convert
if has data; then
  say "== data"
  if [ "$(cat "$folder/.complete" 2>/dev/null)" = "$count" ]; then
    say "$folder: $count JPEGs made by an earlier call on this machine"
  else
    [ -f "$photos/astronaut.png" ] ||
      { say "no photographs in $photos (tools/bench/carry_photos.sh; carry .carry/photos)"; exit 1; }
    rm -rf "$folder" "$small_folder"
    cmd=(python3 "$here/make_jpeg_set.py" -o "$folder" --count "$count" --workers
         "${GEN_WORKERS:-$cores}" --data "$photos")
    t0=$(date +%s.%N)
    "${cmd[@]}" >"$logs/make_jpeg_set.log" 2>&1 ||
      { say "make_jpeg_set FAILED"; tail -5 "$logs/make_jpeg_set.log" | tee -a "$summary"; exit 1; }
    t1=$(date +%s.%N)
    echo "$count" >"$folder/.complete"
    say "$(tail -1 "$logs/make_jpeg_set.log")"
    rate=$(python3 -c "print(f'{$t1 - $t0:.1f} s, {$count / ($t1 - $t0):.0f} images/s')")
    say "generated in $rate on ${GEN_WORKERS:-$cores} workers: $(tcmd "${cmd[@]}")"
  fi
  if [ ! -d "$small_folder" ]; then
    # Image i depends on the seed and i alone, so the first N are make_jpeg_set.py --count N's.
    python3 - "$folder" "$small_folder" "$small_count" <<'PY' || { say "small set FAILED"; exit 1; }
import os, shutil, sys
src, dst, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
for c in sorted(os.listdir(src)):
    if not os.path.isdir(os.path.join(src, c)):
        continue
    os.makedirs(os.path.join(dst, c), exist_ok=True)
    for f in os.listdir(os.path.join(src, c)):
        if int(f.rsplit("_", 1)[1].split(".")[0]) < n:
            try:
                os.link(os.path.join(src, c, f), os.path.join(dst, c, f))
            except OSError:
                shutil.copy(os.path.join(src, c, f), os.path.join(dst, c, f))
PY
  fi
  for pair in "$folder:$data" "$small_folder:$small"; do
    f=${pair%%:*} d=${pair#*:}
    rm -f "$d"
    t0=$SECONDS
    log=$logs/convert-$(basename "$d").log
    "$conv" images "$f" -o "$d" >"$log" 2>&1 ||
      { say "convert $f FAILED"; tail -5 "$log" | tee -a "$summary"; exit 1; }
    say "$(grep -m1 '^wrote' "$log") [$((SECONDS - t0)) s: $(tcmd "$conv" images "$f" -o "$d")]"
  done
fi
[ -f "$data" ] || { say "no dataset $data (PARTS without data?)"; exit 1; }

# --- the C++ tests -------------------------------------------------------------------------------
if has tests; then
  say "== tests"
  tests=${TESTS-}
  if [ -z "${TESTS+x}" ]; then
    for t in "${carried[@]}"; do [[ ${t,,} == *image* || ${t,,} == *jpeg* ]] && tests+=" $t"; done
  fi
  [ "$tests" = none ] && tests=""
  [ -n "$tests" ] || say "no test executables named (TESTS) or carried"
  for t in $tests; do
    fits "test $t" 30 || break
    if [ ! -x "$pkg/tests/$t" ]; then say "$t: not in the package"; continue; fi
    t0=$SECONDS
    timeout "${TEST_TIMEOUT:-120}" "$pkg/tests/$t" >"$logs/$t.log" 2>&1
    rc=$?
    if [ $rc = 0 ]; then
      passed=$(grep -E '^\[  PASSED' "$logs/$t.log" | head -1)
      say "$t: ok in $((SECONDS - t0)) s, $passed $(grep -c '^\[  SKIPPED' "$logs/$t.log") skipped lines"
    else
      say "$t: FAILED (exit $rc$([ $rc = 124 ] && echo ", timed out after ${TEST_TIMEOUT:-120} s"))"
      grep -E -A8 '(Failure|FAILED|Which is)' "$logs/$t.log" | head -30 | tee -a "$summary"
      [ $rc -gt 128 ] && [ $rc != 124 ] && tail -15 "$logs/$t.log" | tee -a "$summary"
    fi
  done
fi

# --- the decode benchmark ------------------------------------------------------------------------
reserve=0
has resnet && reserve=${RESNET_RESERVE:-200}
if has bench && fits bench $((reserve + 90)); then
  say "== images_gpu_bench ($rounds rounds)"
  bench_budget=$(($(left) - reserve - 20))
  cmd=(python3 "$here/images_gpu_bench.py" "$folder" --data "$data" --datasets "$small,$data"
       --rounds "$rounds" --drop-caches --budget "$bench_budget" --json "$out/images_bench.jsonl"
       ${BENCH_ARGS:-})
  say "$(tcmd "${cmd[@]}")"
  timeout $((bench_budget + 60)) "${cmd[@]}" >"$logs/images_bench.log" 2>&1
  rc=$?
  sed -n '/^memory:/,/^{/p' "$logs/images_bench.log" | grep -Ev '^(\{|# )' | tee -a "$summary"
  sed -n '/^summary:/,$p' "$logs/images_bench.log" | grep -v '^{' | tee -a "$summary"
  grep -E '^# ' "$logs/images_bench.log" | tee -a "$summary"
  if [ $rc != 0 ]; then
    say "images_gpu_bench: exit $rc$([ $rc = 124 ] && echo ' (timed out)')"
    grep -E -A12 'Fatal Python error|Traceback' "$logs/images_bench.log" | head -30 |
      tee -a "$summary"
    if [ $rc -gt 128 ] && [ $rc != 124 ] && fits "bench without nvJPEG" $((reserve + 60)); then
      say "-- again without the nvJPEG contestants (the baselines)"
      bench_budget=$(($(left) - reserve - 20))
      cmd=(python3 "$here/images_gpu_bench.py" "$folder" --data "$data" --rounds "$rounds"
           --contestants ringfeed-cpu,tv-decode,tv-crop,pil-dataloader --drop-caches
           --budget "$bench_budget" --json "$out/images_bench.jsonl" ${BENCH_ARGS:-})
      say "$(tcmd "${cmd[@]}")"
      timeout $((bench_budget + 60)) "${cmd[@]}" >"$logs/images_bench_baselines.log" 2>&1
      say "exit $?"
      sed -n '/^summary:/,$p' "$logs/images_bench_baselines.log" | grep -v '^{' | tee -a "$summary"
    fi
  fi
fi

# --- ResNet-50 -----------------------------------------------------------------------------------
if has resnet && fits resnet 60; then
  say "== $arch: fed by ringfeed.Loader, compute alone, the DataLoader ($steps timed steps" \
    "after $warm, batch $batch a GPU, $nprocs GPU(s), $resnet_rounds rounds; the folder in the" \
    "page cache)"
  find "$folder" -name '*.jpg' -print0 | xargs -0 -P "$cores" -n 256 cat >/dev/null
  modes=(${RESNET_MODES:-fed alone dataloader})
  per_run=60  # seconds a run is allowed before the first has shown what one takes
  # One run of mode $1 in round $2 (more flags after), its figures into resnet.jsonl and here.
  resnet_run() {
    local m=$1 r=$2 label=$1 extra env=()
    shift 2
    local fed_flags=(${RESNET_FED_FLAGS:-})
    # NAME=VALUE,NAME=VALUE@MODE: MODE with that environment.
    if [[ $m == *@* ]]; then
      local assigns=${m%%@*}
      env=(${assigns//,/ })
      m=${m#*@}
    fi
    case $m in
      fed) src=(--data "$data" "${fed_flags[@]}") ;;
      # fed:FLAG,FLAG: fed with more flags (fed:--image-cpu-share=0,--image-threads=4)
      fed:*) extra=${m#fed:}; src=(--data "$data" "${fed_flags[@]}" ${extra//,/ }) ;;
      fed-nvjpeg) src=(--data "$data" --image-decoder nvjpeg "${fed_flags[@]}") ;;
      fed-cpu) src=(--data "$data" --image-decoder cpu "${fed_flags[@]}") ;;
      alone) src=(--data "$data" --compute-alone "${fed_flags[@]}") ;;
      dataloader) src=(--dataloader "$folder") ;;
      *) say "RESNET_MODES: unknown $m"; return ;;
    esac
    local launch=(env "${env[@]}" python3)
    [ "$nprocs" -gt 1 ] && launch=(env "${env[@]}" python3 -m torch.distributed.run --standalone
                                   --nproc_per_node="$nprocs")
    local cmd=("${launch[@]}" "$repo/examples/torch_resnet50.py" "${src[@]}" --arch "$arch"
               --batch "$batch" --steps "$steps" --warm "$warm" ${RESNET_FLAGS:-} "$@")
    local log="$logs/resnet-${label//[:,=@]/_}-r$r.log" t0=$SECONDS rc took line figures
    timeout $(($(left) - 5)) "${cmd[@]}" >"$log" 2>&1
    rc=$?
    took=$((SECONDS - t0))
    [ $((took + 10)) -gt $per_run ] && per_run=$((took + 10))
    line=$(grep -m1 '^{' "$log")
    # The run's JSON line, labelled, into resnet.jsonl; its figures on one line here.
    figures=$(python3 - "$line" "$label" "$r" "$(tcmd "${cmd[@]}")" "$out/resnet.jsonl" <<'PY'
import json, sys
line, label, rnd, command, sink = sys.argv[1:]
if not line:
    print("no figure")
    sys.exit()
d = json.loads(line)
d.update(label=label, round=int(rnd) if rnd.isdigit() else rnd, command=command)
with open(sink, "a") as f:
    f.write(json.dumps(d) + "\n")
# Each rank's timed steps summed (ms): next()'s waits, the launches, the GPU's steps and its idle
# time between them.
ranks = "; ".join(f"rank {i}: " + ", ".join(f"{k} {v}" for k, v in t["sums_ms"].items())
                  for i, t in enumerate(d.get("ranks") or []) if t)
print(f"{d['samples_per_s']} samples/s, taking batches {d['take_ms_per_step']} ms a step "
      f"{d.get('take_ms_quantiles')}, {d['stats']}; summed ms: {ranks}")
PY
)
    say "round $r $label: exit $rc in $took s: $figures"
    [ $rc = 0 ] || tail -8 "$log" | tee -a "$summary"
  }
  for r in $(seq 1 "$resnet_rounds"); do
    order=("${modes[@]}")
    if [ $((r % 2)) = 0 ]; then  # every other round backwards
      order=(); for ((i = ${#modes[@]} - 1; i >= 0; i--)); do order+=("${modes[$i]}"); done
    fi
    for m in "${order[@]}"; do
      fits "$arch $m round $r" "$per_run" || break 2
      resnet_run "$m" "$r"
    done
  done
  if [ -n "${RESNET_PROFILE:-}" ] && fits "$arch $RESNET_PROFILE profiled" $((per_run + 20)); then
    resnet_run "$RESNET_PROFILE" profiled --profile "$out/resnet-profile.json"
    [ -f "$out/resnet-profile.json" ] && gzip -f "$out/resnet-profile.json"
  fi
  if [ -s "$out/resnet.jsonl" ]; then
    python3 - "$out/resnet.jsonl" <<'PY' | tee -a "$summary"
import json, statistics, sys
runs = [json.loads(x) for x in open(sys.argv[1])]
runs = [r for r in runs if r["round"] != "profiled"]
by = {}
for r in runs:
    by.setdefault(r["label"], []).append(r["samples_per_s"])
med = {k: statistics.median(v) for k, v in by.items()}
print(f"{runs[0]['arch']} on {runs[0]['device']}, batch {runs[0]['batch']}, {runs[0]['steps']} "
      f"timed steps a run; samples/s, median of the rounds (each round's in brackets):")
for k, v in by.items():
    print(f"  {k:12s} {med[k]:9.1f}  {v}")
rounds = sorted({r["round"] for r in runs})
pairs = [(k, "alone") for k in by if k != "alone"] + [("fed", "dataloader")]
for a, b in pairs:
    if a in med and b in med:
        per = []
        for n in rounds:
            x = [r["samples_per_s"] for r in runs if r["label"] == a and r["round"] == n]
            y = [r["samples_per_s"] for r in runs if r["label"] == b and r["round"] == n]
            if x and y:
                per.append(round(x[0] / y[0], 3))
        print(f"  {a} / {b}: {med[a] / med[b]:.3f} (per round {per})")
PY
  fi
fi

# --- the example's test --------------------------------------------------------------------------
if has pytest && fits pytest 45; then
  say "== pytest: test_examples_resnet.py ${PYTEST_FILES:-}"
  pytest_path=""
  python3 -c "import pytest" 2>/dev/null || pytest_path=:$pkg/pytest
  (cd "$repo" && PYTHONPATH=$site$pytest_path RINGFEED_CONVERT=$conv RINGFEED_PHOTOS=$photos \
    timeout $(($(left) - 5)) python3 -m pytest -q -rs -p no:cacheprovider \
    python/tests/test_examples_resnet.py ${PYTEST_FILES:-} >"$logs/pytest.log" 2>&1)
  say "pytest exit $?: $(tail -1 "$logs/pytest.log")"
  grep -E '^(FAILED|ERROR|SKIPPED)' "$logs/pytest.log" | head | tee -a "$summary"
fi
say "== done in $SECONDS s of TIME=$budget"
