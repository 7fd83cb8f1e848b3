#!/usr/bin/env bash
# The Python package on a GPU machine, in one call (device time is scarce):
#   1. builds the extension `ringfeed._ringfeed` for the machine's python3 (its pybind11 from pip)
#      against the carried position-independent static libraries of this tree, with g++;
#   2. runs the pytest suite (python/tests, the GPU tests included) and the C++ test executables
#      named in $TESTS (default: the loader and decode tests);
#   3. benchmarks (tools/bench/python_loader.py) on a cold synthetic CIFAR-shaped dataset of
#      $BIG_GB GB (default 9.2): `ringfeed read` against ringfeed.Loader from Python, and the CNN in
#      PyTorch fed by ringfeed.Loader against PyTorch's DataLoader and against compute alone,
#      interleaved, $REPEATS times (default 2); then the loader's GPU memory and host RSS on a
#      $SMALL_GB GB (default 2) dataset against the big one.
# Usage: tools/bench/device_python_check.sh PKG_DIR OUT_DIR
#   PKG_DIR holds bin/ (ringfeed, ringfeed-convert), tests/ (test executables), lib/ (librf_*.a,
#   liburing.a, libxxhash.a, libz.a: position-independent), include/ (dlpack/dlpack.h), src/ (the
#   extension's sources and the project headers of the commit it was built from; without it, this
#   tree's) and, where the machine lacks pytest, pytest/ (Debian's pure-Python pytest and its
#   dependencies). SITE: where the extension and package go [$RINGFEED_DATA/site]; BUILD_ONLY=1
#   stops after building it.
# Logs go to OUT_DIR/logs.tar.gz (the device tool returns at most 8 files).
set -uo pipefail
pkg=$(realpath "$1")
out=$(realpath -m "$2")
logs=$out/logs
work=${RINGFEED_DATA:-/var/tmp/ringfeed-python}
mkdir -p "$logs" "$work"
trap 'tar -C "$out" -czf "$out/logs.tar.gz" logs && rm -rf "$logs"' EXIT
export NCCL_NVLS_ENABLE=0
export XLA_PYTHON_CLIENT_PREALLOCATE=false  # JAX (a test imports it) takes GPU memory as it needs it

echo "== machine"
nvidia-smi --query-gpu=name,memory.total,memory.used,driver_version --format=csv,noheader
echo "kernel $(uname -r), $(nproc) cores, $(python3 --version)"
python3 -c "import torch; print('torch', torch.__version__)"

echo "== build the extension"
site=${SITE:-$work/site}
mkdir -p "$site/ringfeed"
# The package's own sources where it carries them (a package of another commit), else this tree's.
srcroot=.
[ -d "$pkg/src/python" ] && srcroot=$pkg/src
cp "$srcroot"/python/ringfeed/*.py "$srcroot"/python/ringfeed/*.pyi "$srcroot"/python/ringfeed/py.typed \
  "$site/ringfeed/"
suffix=$(python3 -c "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))")
libs=$(ls "$pkg"/lib/lib*.a | grep -v '/librf_jpeg\.a$')
# The JPEG decode (decoded image records: decode/jpeg_image.cc, jpeg_errors.cc, image_resample.cc)
# compiled here, against this machine's libjpeg-turbo (its jpeglib.h, its shared libjpeg: Debian's
# libjpeg.a is not position-independent, and this machine's libjpeg may be of another ABI, 8 not
# 6.2).
jpeg_libs=""
if [ -f "$pkg/lib/librf_jpeg.a" ]; then
  jpeg_obj=$(mktemp -d)
  for f in jpeg_errors jpeg_image image_resample; do
    [ -f "$srcroot/decode/$f.cc" ] || continue  # a package from before jpeg_errors.cc
    g++ -O2 -std=c++20 -fPIC -ffp-contract=off -fvisibility=hidden -I"$srcroot" -I"$pkg/include" \
      -c "$srcroot/decode/$f.cc" -o "$jpeg_obj/$f.o" ||
      { echo "extension build FAILED: decode/$f.cc"; exit 1; }
  done
  ar rcs "$jpeg_obj/librf_jpeg.a" "$jpeg_obj"/*.o
  libs="$libs $jpeg_obj/librf_jpeg.a"
  jpeg_libs="-ljpeg"
fi
# The codecs (format version 2): the machine's own shared libzstd and liblz4 (Debian's .a are not
# position-independent); a package from before them links without.
codec_libs=""
ls "$srcroot"/io/codec.h >/dev/null 2>&1 && codec_libs="-l:libzstd.so.1 -l:liblz4.so.1"

# ringfeed.__version__ (module.cc's RINGFEED_VERSION): the project() version of the sources' tree.
version=$(sed -n 's/^project(ringfeed VERSION \([0-9.]*\).*/\1/p' "$srcroot/CMakeLists.txt" \
  2>/dev/null || true)

g++ -O2 ${EXTRA_CXXFLAGS:-} -std=c++20 -shared -fPIC -fvisibility=hidden -DRINGFEED_HAVE_CUDA=1 \
  -DRINGFEED_VERSION="\"${version:-unknown}\"" \
  -I"$srcroot" -I"$pkg/include" -I/usr/local/cuda/include $(python3 -m pybind11 --includes) \
  $(ls "$srcroot"/python/src/module.cc "$srcroot"/python/src/option_values.cc \
    "$srcroot"/python/src/writer.cc 2>/dev/null) \
  -o "$site/ringfeed/_ringfeed$suffix" \
  -Wl,--start-group $libs -Wl,--end-group $codec_libs $jpeg_libs \
  -L/usr/local/cuda/lib64 -lcudart_static -lpthread -ldl -lrt -Wl,--exclude-libs,ALL \
  >"$logs/build.log" 2>&1 || { echo "extension build FAILED"; tail -30 "$logs/build.log"; exit 1; }
echo "built: $site/ringfeed/_ringfeed$suffix"
export PYTHONPATH=$site
python3 -c "import ringfeed; print('import ringfeed:', ringfeed.__file__)"
[ "${BUILD_ONLY:-0}" = 1 ] && exit 0

if [ "${PYTEST:-1}" = 1 ]; then
echo "== python tests"
pytest_path=""
python3 -c "import pytest" 2>/dev/null || pytest_path=":$pkg/pytest"
PYTHONPATH=$site$pytest_path RINGFEED_CONVERT=$pkg/bin/ringfeed-convert \
  python3 -m pytest -q -p no:cacheprovider ${PYTEST_FILES:-python/tests} -rs >"$logs/pytest.log" 2>&1
echo "pytest exit $?"; tail -15 "$logs/pytest.log"
fi

echo "== C++ tests"
[ "${TESTS:-}" = none ] && TESTS=""
for t in ${TESTS-pipeline_loader_test pipeline_cuda_loader_test pipeline_cuda_batch_decode_test pipeline_cuda_streaming_source_test pipeline_cuda_modes_test}; do
  if "$pkg/tests/$t" >"$logs/$t.log" 2>&1; then
    echo "$t: $(grep -E '^\[  PASSED' "$logs/$t.log") $(grep -c '^\[  SKIPPED' "$logs/$t.log") skipped"
  else
    echo "$t: FAILED"; grep -E 'FAILED|Failure' "$logs/$t.log" | head -10
  fi
done

[ "${BENCH:-1}" = 1 ] || exit 0
echo "== datasets"
make_data() {  # GB path
  local n
  n=$(python3 -c "print(int($1 * 1e9 / 3073))")
  [ -f "$2" ] || "$pkg/bin/ringfeed-convert" synthetic -o "$2" --samples "$n" --shape 3,32,32 \
    --classes 10 --seed 7 >>"$logs/convert.log" 2>&1 || { echo "convert FAILED"; tail "$logs/convert.log"; exit 1; }
  ls -l "$2"
}
make_data "${BIG_GB:-9.2}" "$work/big.rfd"
[ "${MEMORY:-1}" = 1 ] && make_data "${SMALL_GB:-2}" "$work/small.rfd"

echo "== benchmarks (cold, interleaved, ${REPEATS:-2} rounds)"
python3 tools/bench/python_loader.py --data "$work/big.rfd" --ringfeed "$pkg/bin/ringfeed" \
  --batch-size 256 --seconds "${SECONDS_PER_PHASE:-15}" --repeats "${REPEATS:-2}" --drop-caches \
  --phases "${PHASES:-read,loader,train_ringfeed,train_torch,compute_only}" \
  --loader-epochs "${LOADER_EPOCHS:-0}" \
  --json "$out/python_loader.json" 2>&1 | tee "$logs/python_loader.log" | grep -vE '^\s*$'

[ "${MEMORY:-1}" = 1 ] || exit 0
echo "== loader memory: small vs big dataset"
for d in small big; do
  python3 tools/bench/python_loader.py --data "$work/$d.rfd" --ringfeed "$pkg/bin/ringfeed" \
    --batch-size 256 --seconds 8 --repeats 1 --drop-caches --phases loader \
    --json "$out/memory_$d.json" 2>&1 | grep -E 'loader:' | sed "s/^/$d /"
done
