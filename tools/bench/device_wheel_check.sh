#!/usr/bin/env bash
# Issue 28's wheel on a GPU machine, in one device call (at most 10 minutes; the steps share a
# TIME budget, and the tests get what the build leaves):
#   package  unpacks tools/bench/package_device.sh's archive: its deps/ and lib/ and include/ are
#            the static libraries and headers the machine lacks (liburing, xxhash, zlib,
#            zstd, lz4, libjpeg, TurboJPEG, OpenBLAS, nlohmann-json, Random123, dlpack);
#   wheel    `pip wheel . --no-build-isolation --no-deps` of this checkout (run from its root, the
#            device's working directory) with $PYTHON, CUDA on: the project's own build backend and
#            CMake build (RINGFEED_STATIC_DEPS) as `pip install .` runs it anywhere, told where the
#            carried libraries are through what it already reads: CMAKE_ARGS
#            (-DCMAKE_PREFIX_PATH=PKG/deps;PKG: searched before the machine's own) and
#            RINGFEED_WHEEL_BUILD_DIR; Ninja where it is found, every core;
#   install  a fresh `$PYTHON -m venv --system-site-packages`, the wheel installed with
#            `pip install --no-index --no-deps`; where $PYTHON is itself a virtual environment
#            (the GPU machines' /opt/torch/.venv), whose site directory a nested venv's
#            --system-site-packages does not reach, a .pth file in the new venv names it, so torch,
#            numpy and pytest are seen; `ldd` of the installed extension, which may need nothing
#            beyond glibc, libstdc++, libgcc_s, the dynamic loader, libcuda and libcudart (FAILS
#            otherwise; the programs' ldd is printed, not judged); `import ringfeed` without torch
#            being imported; `ringfeed --help` and `ringfeed-convert --help` from the venv's bin/;
#   pytest   python/tests with the venv's python, run from outside the source tree (the
#            installed ringfeed.__file__ is printed and checked: RINGFEED_TEST_WHEEL=1), with
#            RINGFEED_CONVERT the venv's ringfeed-convert, under `timeout` (what TIME leaves, at
#            most PYTEST_TIMEOUT); passed/failed/skipped counts from its JUnit XML.
# Each step's command is printed (`+ ...`) as it can be run again. Writes OUT/summary.txt and
# OUT/logs.tar.gz (pip's build log, the tests' output and JUnit XML).
# Usage: tools/bench/device_wheel_check.sh PKG OUT
#   PKG: tools/bench/package_device.sh's archive (.tar.xz, unpacked into $WORK/pkg-*) or its
#   unpacked pkg/ directory.
# Variables (defaults in brackets):
#   PYTHON: the interpreter the wheel is for [python3]  CUDA: the backend's cuda setting [on]
#   TIME: seconds for the whole script [540]  PYTEST_TIMEOUT [TIME's rest]  PYTEST_ARGS ['']
#   WORK: the build, the wheel, the venv [/var/tmp/ringfeed-wheel; emptied each run]
# Through the device tool: here, first
#   tools/bench/package_device.sh build-static .carry/wheel.tar.xz
# then run with carry [".carry/wheel.tar.xz", ".carry/photos"] (tools/bench/carry_photos.sh: the
# image tests' photographs; without them those tests skip):
#   tools/bench/device_wheel_check.sh .carry/wheel.tar.xz "$OUT"
# Here (no GPU: its tests skip), e.g. PYTHON=/usr/bin/python3 CUDA=off.
set -uo pipefail
[ $# -eq 2 ] || { sed -n '2,/^set -uo/p' "$0" | sed '$d'; exit 2; }
repo=$(cd "$(dirname "$0")/../.." && pwd)
out=$(realpath -m "$2")
logs=$out/logs
work=$(realpath -m "${WORK:-/var/tmp/ringfeed-wheel}")
py=$(command -v "${PYTHON:-python3}") || { echo "no ${PYTHON:-python3}"; exit 1; }
cuda=${CUDA:-on}
budget=${TIME:-540}
rm -rf "$work"
mkdir -p "$logs" "$work"
trap 'tar -C "$out" -czf "$out/logs.tar.gz" logs && rm -rf "$logs"' EXIT
export NCCL_NVLS_ENABLE=0
summary=$out/summary.txt
: >"$summary"
say() { echo "$*" | tee -a "$summary"; }
left() { echo $((budget - SECONDS)); }
# step LOG CMD...: prints CMD as it can be run again, runs it with its output in LOG.
step() {
  local log=$1
  shift
  say "+ $(printf '%q ' "$@")"
  "$@" >"$log" 2>&1
}
fail() { say "FAILED: $*"; exit 1; }

gpu=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)
say "== machine: ${gpu:-no GPU}, $(nproc) cores, $(date -u +%FT%TZ), kernel $(uname -r)"
say "python $py: $("$py" -c 'import sys; print(sys.version.split()[0])' 2>&1)," \
  "$("$py" -c 'import torch; print("torch", torch.__version__)' 2>&1 | tail -1)," \
  "$(cmake --version 2>&1 | head -1), $(g++ --version 2>&1 | head -1)"
say "CUDA=$cuda TIME=$budget WORK=$work"

# --- the package -------------------------------------------------------------------------------
if [ -f "$1" ]; then
  pkg_root=$work/pkg-$(basename "$1" | sed 's/\.tar.*//')
  mkdir -p "$pkg_root"
  tar -C "$pkg_root" -xJf "$1" || fail "cannot unpack $1"
  pkg=$pkg_root/pkg
else
  pkg=$(realpath "$1")
fi
[ -d "$pkg/deps/lib" ] || fail "$pkg has no deps/ (a package_device.sh from before the wheel check)"
say "package $1: deps/lib: $(cd "$pkg/deps/lib" && echo *.a)"

# --- the wheel ---------------------------------------------------------------------------------
say "== wheel (pip wheel ., cuda=$cuda)"
cd "$repo" || exit 1
generator=()
command -v ninja >/dev/null && generator=(CMAKE_GENERATOR=Ninja)
t0=$SECONDS
step "$logs/pip-wheel.log" env "${generator[@]}" PIP_NO_INDEX=1 \
  CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}" \
  CMAKE_ARGS="-DCMAKE_PREFIX_PATH=$pkg/deps;$pkg${CMAKE_ARGS:+ $CMAKE_ARGS}" \
  RINGFEED_WHEEL_BUILD_DIR="$work/build" \
  "$py" -m pip wheel . -v --no-build-isolation --no-deps --no-cache-dir \
  --config-settings=cuda="$cuda" -w "$work/dist" ||
  { tail -40 "$logs/pip-wheel.log"; fail "pip wheel ($logs/pip-wheel.log)"; }
wheel=$(ls "$work"/dist/ringfeed-*.whl)
say "built $(basename "$wheel") ($(du -h "$wheel" | cut -f1)) in $((SECONDS - t0)) s"
# Where the configure step found what (the carried prefix, else the machine's).
grep -E '^("dep::[a-z_]+_STATIC_LIB"|RINGFEED_(CUDNN_LIB|NCCL_LIB|GFORTRAN_A|QUADMATH_A)|nlohmann_json_DIR|pybind11_DIR|MPI_C_LIB_NAMES):' \
  "$work/build/CMakeCache.txt" | sed -E 's/^"?([^"]+)"?:[A-Z]+=/  \1 = /' | tee -a "$summary"
grep -m1 'ringfeed: CUDA' "$logs/pip-wheel.log" | sed 's/^ *-- /  /' | tee -a "$summary"

# --- install, ldd, import, entry points ----------------------------------------------------------
say "== install into a fresh venv"
venv=$work/venv
vpip=("$venv/bin/python" -m pip)
if ! step "$logs/venv.log" "$py" -m venv --system-site-packages "$venv"; then
  # A Python without ensurepip: the venv without pip, the wheel installed by $PYTHON's pip.
  cat "$logs/venv.log"
  rm -rf "$venv"
  step "$logs/venv.log" "$py" -m venv --system-site-packages --without-pip "$venv" || fail "venv"
  vpip=("$py" -m pip --python "$venv/bin/python")
fi
# A venv made by a venv's python sees the base interpreter's site directory, not that venv's:
# name the latter in a .pth (appended to sys.path after the new venv's own, so its ringfeed wins).
parent=$("$py" -c 'import sys, sysconfig
if sys.prefix != sys.base_prefix:
    print("\n".join(dict.fromkeys(sysconfig.get_paths()[k] for k in ("purelib", "platlib"))))')
if [ -n "$parent" ]; then
  vsite=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  echo "$parent" >"$vsite/_ringfeed_check_parent_venv.pth"
  say "$py is a venv: $vsite/_ringfeed_check_parent_venv.pth names its site directory: $(echo "$parent" | xargs)"
fi
step "$logs/pip-install.log" "${vpip[@]}" install --no-index --no-deps --no-cache-dir "$wheel" || { cat "$logs/pip-install.log"; fail "pip install"; }
cd "$work" || exit 1  # from here on, out of the source tree: the installed package alone
unset PYTHONPATH
say "torch in the venv: $("$venv/bin/python" -c 'import torch; print(torch.__version__,
      "cuda", torch.version.cuda, "GPU", torch.cuda.is_available())' 2>&1 | tail -1)"
ext=$("$venv/bin/python" -c 'import importlib.util as u; print(u.find_spec("ringfeed._ringfeed").origin)') ||
  fail "no ringfeed._ringfeed in $venv"
say "ldd ${ext#"$venv/"}:"
ldd "$ext" | sed 's/^/    /' | tee -a "$summary"
allowed='^(linux-vdso\.so\.1|/lib64/ld-linux-x86-64\.so\.2|'
allowed+='lib(c|m|stdc\+\+|gcc_s|pthread|dl|rt|cuda|cudart)\.so\.[0-9]+)$'
extra=$(ldd "$ext" | awk '{print $1}' | grep -Ev "$allowed")
[ -z "$extra" ] || fail "the extension needs more than glibc, libstdc++, libcuda and libcudart:" \
  "$(echo "$extra" | xargs)"
say "extension: needs nothing beyond glibc, libstdc++, libgcc_s, libcuda, libcudart: ok"
for p in ringfeed ringfeed-convert; do
  f=$(dirname "$ext")/bin/$p
  say "ldd ${f#"$venv/"} (not judged): $(ldd "$f" | awk '{print $1 ($3 == "not" ? " NOT-FOUND" : "")}' |
    xargs)"
done
step "$logs/import.log" "$venv/bin/python" -c \
  "import ringfeed, sys; assert 'torch' not in sys.modules; print(ringfeed.__version__, ringfeed.__file__)" ||
  { cat "$logs/import.log"; fail "import ringfeed"; }
say "import ringfeed (torch not imported): $(cat "$logs/import.log")"
for p in ringfeed ringfeed-convert; do
  if step "$logs/$p-help.log" "$venv/bin/$p" --help; then
    say "$p --help: ok ($(head -1 "$logs/$p-help.log"))"
  else
    say "$p --help FAILED:"; tail -5 "$logs/$p-help.log" | tee -a "$summary"; bad_help=1
  fi
done

# --- the tests against the installed wheel -------------------------------------------------------
say "== python/tests against the installed wheel"
where=$("$venv/bin/python" -c 'import ringfeed; print(ringfeed.__file__)')
case $where in "$venv"/*) ;; *) fail "ringfeed comes from $where, not from $venv" ;; esac
say "ringfeed.__file__ = $where"
limit=$(left)
[ -n "${PYTEST_TIMEOUT:-}" ] && [ "$PYTEST_TIMEOUT" -lt "$limit" ] && limit=$PYTEST_TIMEOUT
[ "$limit" -ge 30 ] || fail "$limit s of TIME=$budget left for the tests"
t0=$SECONDS
# The photographs the image tests make their JPEGs from (tools/bench/carry_photos.sh's copy, where
# it was carried; else the tests look for python3-skimage's and skip without them).
photos=${RINGFEED_PHOTOS:-$repo/.carry/photos}
[ -f "$photos/astronaut.png" ] && export RINGFEED_PHOTOS=$photos
# shellcheck disable=SC2086
step "$logs/pytest.log" env RINGFEED_TEST_WHEEL=1 RINGFEED_CONVERT="$venv/bin/ringfeed-convert" \
  PYTHONDONTWRITEBYTECODE=1 HYPOTHESIS_STORAGE_DIRECTORY="$work/.hypothesis" \
  timeout "$limit" "$venv/bin/python" -m pytest -q -p no:cacheprovider -rs \
  --junitxml="$logs/pytest.xml" "$repo/python/tests" ${PYTEST_ARGS:-}
rc=$?
tail -15 "$logs/pytest.log"
counts=$("$py" - "$logs/pytest.xml" <<'PY' 2>&1
import sys, xml.etree.ElementTree as ET
s = ET.parse(sys.argv[1]).getroot()
s = s if s.tag == "testsuite" else s.find("testsuite")
n, f, e, k = (int(s.get(a, 0)) for a in ("tests", "failures", "errors", "skipped"))
print(f"{n - f - e - k} passed, {f} failed, {e} errors, {k} skipped")
PY
)
say "pytest exit $rc in $((SECONDS - t0)) s (timeout $limit s): $counts"
[ "$rc" -eq 124 ] && say "pytest TIMED OUT"
grep -E '^(FAILED|ERROR) ' "$logs/pytest.log" | head -20 | tee -a "$summary"
if [ "$rc" -ne 0 ] || [ -n "${bad_help:-}" ]; then say "== wheel check FAILED"; exit 1; fi
say "== wheel check passed in $SECONDS s"
