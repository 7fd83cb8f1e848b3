#!/usr/bin/env bash
# The README's test command: installs what ringfeed needs, builds it with warnings as errors,
# installs the Python package (`import ringfeed` works afterwards), and runs every test (GPU
# tests skip themselves where no GPU is found; the Python tests run against the build tree).
set -euo pipefail
cd "$(dirname "$0")/.."
tools/install-deps.sh
build=${RINGFEED_BUILD_DIR:-build}
cmake -S . -B "$build" -DRINGFEED_WERROR=ON
cmake --build "$build" -j"$(nproc)"
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
$sudo cmake --install "$build" --component python
ctest --test-dir "$build" --output-on-failure -j"$(nproc)"
