#!/usr/bin/env bash
# Installs what ringfeed needs to build, test and run its main job, from Debian's packages.
# Idempotent: packages already present are left as they are. Needs root (or sudo).
set -euo pipefail

packages=(
  build-essential cmake pkg-config
  liburing-dev                  # io_uring reader (static .a used for GPU-machine builds)
  libxxhash-dev                 # per-chunk XXH3 checksums
  nlohmann-json3-dev            # metrics and benchmark JSON; ringfeed-convert jsonl
  libopenblas-dev               # CPU training backend (sgemm)
  zlib1g-dev                    # gzipped IDX input
  libzstd-dev liblz4-dev        # compressed chunks (format version 2)
  libturbojpeg0-dev             # the tests: they make and read JPEGs (libjpeg-turbo 2.1.5)
  libjpeg62-turbo-dev           # the loader's JPEG decode: the crop's region (its libjpeg API)
  libpng-dev libwebp-dev        # ... its PNG and WebP decode (and the tests' encoders)
  libgtest-dev                  # tests
  libcurl4-openssl-dev          # io/remote: curl/curl.h (libcurl.so.4 itself is loaded at run time)
  libexpat1-dev                 # ... S3 listings (ListObjectsV2's XML)
  nginx openssl                 # ... and its tests: a real nginx over HTTP and HTTPS, a test CA
  python3-botocore nodejs       # ... the S3 tests: s3rver (npm, below) behind a SigV4-checking proxy
  openmpi-bin libopenmpi-dev    # data-parallel runs (mpirun; the MPI plugin) and their tests
  python3-dev pybind11-dev      # the Python package's extension (python/)
  python3-pip python3-venv      # the wheel (tools/test_wheel.sh) and the venvs it is tested in
  libgfortran-12-dev            # static OpenBLAS's Fortran runtime (RINGFEED_STATIC_DEPS, wheels)
  libdlpack-dev                 # dlpack/dlpack.h: batches exported to torch/numpy
  librandom123-dev              # Random123's Philox: augmentation's draws, host and GPU alike
  python3-numpy python3-pytest  # the Python package's tests
  python3-pil python3-skimage   # tools/bench/make_jpeg_set.py: JPEGs from skimage's photographs
  python3-sentencepiece         # examples: captions and corpora tokenized (torch_clip.py, tokenize_corpus.py)
  python3-hypothesis            # ... and its property tests (load_state_dict)
  python3-torch                 # ... which check zero-copy export to torch (CPU build)
  dataset-fashion-mnist         # the real data the main job and the tests convert
  clang libclang-rt-14-dev      # tools/fuzz/run.sh: libFuzzer (clang's runtime is not pulled in)
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "install-deps: installing ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# The S3 tests' store: s3rver from npm, into its own folder under /opt (no global npm state; the
# tests look there, or at $RINGFEED_S3RVER). npm comes with NodeSource's nodejs; Debian's nodejs
# needs Debian's npm beside it. Left as it is where the pinned version is already there.
s3rver_dir=/opt/ringfeed/s3rver
s3rver_version=3.7.1
if ! grep -qs "\"version\": \"$s3rver_version\"" "$s3rver_dir/node_modules/s3rver/package.json"; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  if ! command -v npm >/dev/null; then
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends npm
  fi
  echo "install-deps: installing s3rver $s3rver_version into $s3rver_dir"
  $sudo mkdir -p "$s3rver_dir"
  $sudo npm install --prefix "$s3rver_dir" --no-audit --no-fund --loglevel=error \
    "s3rver@$s3rver_version" >/dev/null
fi
