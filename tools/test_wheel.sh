#!/usr/bin/env bash
# The Python package as users install it: builds the CPU wheel (`pip wheel .`, build isolation on,
# no index: nothing is fetched), checks that its extension and programs link nothing beyond glibc
# and the C++ runtime, installs it into a fresh virtual environment of Debian's Python that sees
# the system's numpy, pytest and torch (--system-site-packages) and runs python/tests there, with
# no build tree on sys.path and the converter reached through the wheel's `ringfeed-convert` entry
# point; then installs it into a plain virtual environment (no numpy) and makes and reads a
# dataset there through both entry points. CI runs it after tools/test.sh (.ci/run).
#
#   tools/test_wheel.sh [PYTEST_ARGS...]
#
# The CMake build is build-wheel/cp3XX-cuda-off (kept: a second run compiles only what changed;
# the compiler launcher, e.g. CMAKE_CXX_COMPILER_LAUNCHER=ccache, is CMake's as always); the
# wheel, the environments and the tests' files go to build-wheel/test/, made anew each run.
# RINGFEED_WHEEL_PYTHON names another interpreter (default /usr/bin/python3, Debian's).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
py=${RINGFEED_WHEEL_PYTHON:-/usr/bin/python3}
work=$root/build-wheel/test
start=$SECONDS

tools/install-deps.sh
rm -rf "$work"
mkdir -p "$work"
export CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}
# Warnings are errors here as in tools/test.sh's build (the same compiler, other flags).
echo "test_wheel: building the CPU wheel (pip wheel ., cuda=off)"
log=$work/pip-wheel.log
if ! PIP_NO_INDEX=1 CMAKE_ARGS="-DRINGFEED_WERROR=ON ${CMAKE_ARGS:-}" "$py" -m pip wheel \
  --no-deps --no-cache-dir --config-settings=cuda=off -w "$work/dist" . >"$log" 2>&1; then
  tail -50 "$log"
  echo "test_wheel: pip wheel failed ($log)" >&2
  exit 1
fi
wheel=$(ls "$work"/dist/ringfeed-*.whl)
echo "test_wheel: built $(basename "$wheel") ($(du -h "$wheel" | cut -f1))" \
  "in $((SECONDS - start)) s"

# A CPU wheel's extension and programs need glibc and the C++ runtime alone (every other library
# is linked statically); the MPI plugin, loaded only under mpirun, needs the machine's libmpi.
mkdir "$work/unpacked"
"$py" -m zipfile -e "$wheel" "$work/unpacked"
allowed='^(linux-vdso\.so\.1|/lib64/ld-linux-x86-64\.so\.2|'
allowed+='lib(c|m|stdc\+\+|gcc_s|pthread|dl|rt)\.so\.[0-9]+)$'
bad=0
for f in "$work"/unpacked/ringfeed/_ringfeed*.so "$work"/unpacked/ringfeed/bin/ringfeed \
         "$work"/unpacked/ringfeed/bin/ringfeed-convert; do
  echo "test_wheel: ldd ${f#"$work/unpacked/"}:"
  ldd "$f" | sed 's/^/    /'
  extra=$(ldd "$f" | awk '{print $1}' | grep -Ev "$allowed" || true)
  if [ -n "$extra" ]; then
    echo "test_wheel: ${f#"$work/unpacked/"} needs more than glibc and the C++ runtime:" $extra >&2
    bad=1
  fi
done
((bad == 0)) || exit 1

# The tests, against the wheel installed in a venv that also sees Debian's numpy, pytest, torch.
venv=$work/venv
"$py" -m venv --system-site-packages "$venv"
"$venv/bin/python" -m pip install --no-index --no-deps --no-cache-dir -q "$wheel"
where=$(cd "$work" && env -u PYTHONPATH "$venv/bin/python" -c 'import ringfeed
print(ringfeed.__file__)')
echo "test_wheel: python/tests against $where"
tests_start=$SECONDS
(cd "$work" && env -u PYTHONPATH RINGFEED_TEST_WHEEL=1 \
  RINGFEED_CONVERT="$venv/bin/ringfeed-convert" PYTHONDONTWRITEBYTECODE=1 \
  HYPOTHESIS_STORAGE_DIRECTORY="$work/.hypothesis" \
  "$venv/bin/python" -m pytest -q -p no:cacheprovider -rs "$root/python/tests" "$@")
echo "test_wheel: the tests took $((SECONDS - tests_start)) s"

# A plain venv (no numpy, no torch): the wheel installs and runs there too.
plain=$work/plain
"$py" -m venv "$plain"
"$plain/bin/python" -m pip install --no-index --no-deps --no-cache-dir -q "$wheel"
(cd "$work" && env -u PYTHONPATH "$plain/bin/ringfeed-convert" synthetic --samples 1000 \
  --shape 3,8,8 --classes 10 -o plain.rfd -q &&
  env -u PYTHONPATH "$plain/bin/ringfeed" read plain.rfd --io buffered &&
  env -u PYTHONPATH "$plain/bin/python" -c '
import importlib.util, ringfeed
assert importlib.util.find_spec("numpy") is None, "numpy is importable in the plain venv"
n = sum(len(s.indices) for s, _ in ringfeed.Loader("plain.rfd", 64, device="cpu", io="buffered"))
assert n == 1000, n
print(f"test_wheel: plain venv: ringfeed {ringfeed.__version__} read {n} samples, no numpy")')

echo "test_wheel: passed in $((SECONDS - start)) s"
