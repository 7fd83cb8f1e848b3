#!/usr/bin/env bash
# The one configuration of the build directory that tools/main-job.sh and tools/test.sh share,
# so that the test command after the main job compiles only what the main job did not build
# (the tests), never the tree a second time: the same flags in both, hence the same objects.
#
#   Release              -O3 without debug information: the fastest to compile and to run;
#   RINGFEED_WERROR=ON   warnings are errors (what CI checks). Set RINGFEED_WERROR=OFF in the
#                        environment for a compiler that warns where Debian 12's GCC 12 does not;
#   RINGFEED_CUDA=AUTO   the CUDA parts where a toolkit is found (/usr/local/cuda), as before.
#
# A build directory configured otherwise by hand is set back to these (and recompiled once).
# Prints CMake's own "ringfeed:" lines (CUDA, Python package, MPI); the whole log on failure.
# Usage: tools/configure.sh BUILD_DIR
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:?usage: tools/configure.sh BUILD_DIR}
if ! log=$(cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Release \
  -DRINGFEED_WERROR="${RINGFEED_WERROR:-ON}" 2>&1); then
  echo "$log" >&2
  exit 1
fi
grep '^-- ringfeed:' <<<"$log" || true
