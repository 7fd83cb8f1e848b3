#!/usr/bin/env bash
# The README's test command: installs what ringfeed needs, builds it with warnings as errors,
# installs the Python package (`import ringfeed` works afterwards), and runs every test (GPU
# tests skip themselves where no GPU is found; the Python tests run against the build tree, and
# tools/test_wheel.sh runs them against an installed wheel: CI runs both).
#
#   tools/test.sh                      the above, in build/ (RINGFEED_BUILD_DIR), configured by
#                                      tools/configure.sh as tools/main-job.sh configures it:
#                                      after the main job only the tests are compiled
#   tools/test.sh --sanitize           both sanitizer runs below, one after the other
#   tools/test.sh --sanitize=address   AddressSanitizer + UndefinedBehaviorSanitizer: the whole
#                                      suite, built with CUDA OFF (no CUDA header reachable), in
#                                      build-asan/
#   tools/test.sh --sanitize=thread    ThreadSanitizer: the threaded suites (ctest labels io,
#                                      remote, pipeline and parallel: the reader, the cache's
#                                      filler, ring, feeder, staging and copier threads, the ranks
#                                      and their watchdog), in build-tsan/
#
# A sanitizer finding fails its test: ASan and TSan halt on the first report, UBSan is built
# without recovery. A finding in a process a test starts (ringfeed-convert, ringfeed under
# mpirun, the Python interpreter) exits 1, which a test expecting a refusal cannot tell from the
# refusal's own exit 1 (issue 40: a UBSan report passed so), hence: ASan and TSan write every
# process's report to BUILD/sanitizer-reports/ (log_path), UBSan exits 86 (no program of ours
# does) and its reports are looked for in every test's output (ctest's LastTest.log; GCC's UBSan
# beside ASan takes no log_path); the run fails, printing each report and naming the test, where
# any was found.
# Suppressions (tools/sanitizers/) name third-party libraries only.
# Extra ctest arguments go after `--`, e.g. `tools/test.sh --sanitize=thread -- -R Feeder`; CI
# (.ci/run) leaves the Python suite out of the plain and ASan runs with `-- -LE '^python$'` and runs
# it once, against the wheel (tools/test_wheel.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

sanitize=""
while (($#)); do
  case "$1" in
    --sanitize) sanitize="address thread" ;;
    --sanitize=address | --sanitize=address,undefined) sanitize="address" ;;
    --sanitize=thread) sanitize="thread" ;;
    --) shift; break ;;
    *) echo "usage: tools/test.sh [--sanitize[=address|thread]] [-- CTEST_ARGS...]" >&2; exit 2 ;;
  esac
  shift
done

tools/install-deps.sh
jobs=$(nproc)

step_start=$SECONDS
step_took() {  # <what>: prints how long the step since the last call took
  echo "test.sh: $1 took $((SECONDS - step_start)) s"
  step_start=$SECONDS
}

if [ -z "$sanitize" ]; then
  build=${RINGFEED_BUILD_DIR:-build}
  tools/configure.sh "$build"
  cmake --build "$build" -j"$jobs"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo cmake --install "$build" --component python
  step_took "the build ($build)"
  ctest --test-dir "$build" --output-on-failure -j"$jobs" "$@"
  step_took "ctest ($build)"
  exit 0
fi

# Sanitizer builds: -O1 (ASan's and TSan's own advice: fast enough, stacks still exact) with
# assertions on, CUDA OFF (device code cannot be instrumented; compute-sanitizer covers it on
# the GPU machine). -g1: line tables and function names, all a report's stack prints (file:line
# of every frame, inlined ones too), without the variables' locations: -g compiled 22-34% slower
# (GCC 12, three of the heaviest files) for nothing a report shows.
sanitizer_build() {  # <dir> <sanitizers> [targets...] (none: all)
  local dir=$1 san=$2
  shift 2
  cmake -S . -B "$dir" -DRINGFEED_WERROR=ON -DRINGFEED_CUDA=OFF -DRINGFEED_SANITIZE="$san" \
    -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_FLAGS_DEBUG="-O1 -g1" -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g1"
  # Defect 13: a CUDA-OFF build compiles with no CUDA include directory, so an unguarded CUDA
  # header anywhere fails the build instead of being found in /usr/local/cuda.
  if grep -Eq -- '-(I|isystem) *[^ ]*cuda[^ ]*/include' "$dir/compile_commands.json"; then
    echo "test.sh: a CUDA include directory is on a CUDA-OFF build's command lines" >&2
    exit 1
  fi
  if (($#)); then
    cmake --build "$dir" -j"$jobs" --target "$@"
  else
    cmake --build "$dir" -j"$jobs"
  fi
  # ... and the compiler's own record of every header each file included names none.
  local found
  found=$(find "$dir" -name '*.o.d' -print0 |
    xargs -0 -r grep -lE '(/usr/local/cuda|cuda_runtime|cudnn|cublas|nccl)[^ ]*\.h' || true)
  if [ -n "$found" ]; then
    echo "test.sh: a CUDA-OFF build included a CUDA header, in:" >&2
    echo "$found" >&2
    exit 1
  fi
  step_took "the build ($dir)"
}

# reports_check <dir>: fails where the run left a sanitizer report: a file in
# <dir>/sanitizer-reports/ (log_path: one a process, named after its program and pid; the stack
# names the test or the program a test ran), or a UBSan report ("FILE:LINE:COL: runtime error:")
# in a test's output, which names the test.
reports_check() {
  local reports=$1/sanitizer-reports f found=0
  step_took "ctest ($1)"
  for f in "$reports"/*; do
    [ -e "$f" ] || continue
    # Reports, not the runtimes' notes (a WARNING of ASan's about the stack, say): TSan names its
    # reports WARNING: ThreadSanitizer.
    if grep -Eq 'ERROR: (Address|Leak)Sanitizer|WARNING: ThreadSanitizer|SUMMARY: ' "$f"; then
      echo "test.sh: sanitizer report $f:" >&2
      found=1
    else
      echo "test.sh: sanitizer output $f (not a report):" >&2
    fi
    head -60 "$f" >&2
  done
  if [ -f "$1/Testing/Temporary/LastTest.log" ] &&
    awk '/^[0-9]+\/[0-9]+ Testing: / { test = $3 }
         /^[^ ]+:[0-9]+:[0-9]+: runtime error: / { print "test.sh: UBSan report in " test ": " $0; n++ }
         END { exit n == 0 }' "$1/Testing/Temporary/LastTest.log" >&2; then
    found=1
  fi
  if ((found)); then
    echo "test.sh: sanitizer reports above (a passing test's too): the run fails" >&2
    return 1
  fi
}
reports_reset() {  # <dir>: an empty report folder before each run
  rm -rf "$1/sanitizer-reports"
  mkdir -p "$1/sanitizer-reports"
}

sup=$root/tools/sanitizers
status=0
for s in $sanitize; do
  case "$s" in
    address)
      dir=${RINGFEED_BUILD_DIR:-build}-asan
      sanitizer_build "$dir" address,undefined
      # Leak checking is on except in the processes mpirun starts (Open MPI's leaks cannot be
      # told apart: tests/parallel/CMakeLists.txt) and in python_tests, which preloads the ASan
      # runtime into the interpreter (python/CMakeLists.txt); both set ASAN_OPTIONS of their own,
      # with the same log_path.
      reports=$dir/sanitizer-reports
      reports_reset "$dir"
      ASAN_OPTIONS=halt_on_error=1:detect_leaks=1:check_initialization_order=1:strict_init_order=1:log_path=$reports/asan:log_exe_name=1 \
      UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1:exitcode=86 \
        ctest --test-dir "$dir" --output-on-failure -j"$jobs" "$@" || status=1
      reports_check "$dir" || status=1
      ;;
    thread)
      dir=${RINGFEED_BUILD_DIR:-build}-tsan
      sanitizer_build "$dir" thread tests_io tests_remote tests_pipeline tests_parallel  # + MPI plugin
      # Three times over (a test stops at its first failure): a race shows only in some
      # interleavings, and these suites take half a minute.
      reports=$dir/sanitizer-reports
      reports_reset "$dir"
      TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1:suppressions=$sup/tsan.supp:log_path=$reports/tsan:log_exe_name=1 \
        ctest --test-dir "$dir" --output-on-failure -j"$jobs" -L '^(io|remote|pipeline|parallel)$' \
        --repeat until-fail:3 "$@" || status=1
      reports_check "$dir" || status=1
      ;;
  esac
done
exit $status
