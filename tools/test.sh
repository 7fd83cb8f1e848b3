#!/usr/bin/env bash
# The README's test command: installs what ringfeed needs, builds it with warnings as errors,
# and runs every test (GPU tests skip themselves where no GPU is found).
set -euo pipefail
cd "$(dirname "$0")/.."
tools/install-deps.sh
build=${RINGFEED_BUILD_DIR:-build}
cmake -S . -B "$build" -DRINGFEED_WERROR=ON
cmake --build "$build" -j"$(nproc)"
ctest --test-dir "$build" --output-on-failure -j"$(nproc)"
