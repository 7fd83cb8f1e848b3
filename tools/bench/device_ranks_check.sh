#!/usr/bin/env bash
# Data-parallel pieces on a GPU machine, in one call (device time is scarce):
#   1. what the machine offers: its MPI (mpirun, libmpi), NCCL and GPUs; whether the carried MPI
#      plugin (built against Debian's Open MPI) loads against its libmpi;
#   2. tests/parallel_ranks_test alone and under `mpirun -np R` for R up to the GPU count (the NCCL
#      test needs a GPU a rank on a machine) and the C++ test executables named in $TESTS;
#   3. `ringfeed train` on a synthetic CIFAR-shaped dataset: one process, and under mpirun with
#      1 and (where there are 2 GPUs) 2 ranks, $EPOCHS epochs each, page cache warm and read
#      through it (--io buffered: compute-bound), then cold with O_DIRECT (disk-bound); with
#      2 GPUs also over sockets (NCCL_P2P_DISABLE=1, NCCL_SHM_DISABLE=1), as between machines.
# Usage: tools/bench/device_ranks_check.sh PKG_DIR OUT_DIR
#   PKG_DIR holds bin/ (ringfeed, libringfeed_mpi.so, ringfeed-convert) and tests/ of a static
#   build. Logs go to OUT_DIR/ranks-logs.tar.gz.
set -uo pipefail
pkg=$(realpath "$1")
out=$(realpath -m "$2")
logs=$out/ranks-logs
work=${RINGFEED_DATA:-/var/tmp/ringfeed-ranks}
mkdir -p "$logs" "$work"
trap 'tar -C "$out" -czf "$out/ranks-logs.tar.gz" ranks-logs && rm -rf "$logs"' EXIT
export NCCL_NVLS_ENABLE=0 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export RINGFEED_MPI_PLUGIN=$pkg/bin/libringfeed_mpi.so RINGFEED_BIN=$pkg/bin

echo "== machine"
gpus=$(nvidia-smi --query-gpu=name --format=csv,noheader | wc -l)
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
echo "kernel $(uname -r), $(nproc) cores, $gpus GPUs"
command -v mpirun && mpirun --version 2>&1 | head -1
ldconfig -p | grep -E 'libmpi\.so|libnccl\.so' | head
# NCCL: the system's, else the one pip installed beside PyTorch.
if ! ldconfig -p | grep -q 'libnccl\.so\.2'; then
  nccl=$(python3 -c "import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], 'lib'))" 2>/dev/null)
  [ -n "$nccl" ] && export LD_LIBRARY_PATH=$nccl${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} && echo "NCCL from $nccl"
fi
ldd "$pkg/bin/ringfeed" | grep -E 'nccl|not found'
ldd "$RINGFEED_MPI_PLUGIN" | grep -E 'mpi|not found'

echo "== tests"
run_test() {  # name command...
  local name=$1; shift
  if "$@" >"$logs/$name.log" 2>&1; then echo "$name: ok, $(grep -Eo '[0-9]+ tests? from [0-9]+ test suites? ran' "$logs/$name.log" | head -1), $(grep -c '^\[  SKIPPED \]' "$logs/$name.log") skipped lines"
  else echo "$name: FAILED"; grep -E -B2 -A10 '(Failure|FAILED|rror)' "$logs/$name.log" | head -40; fi
}
run_test parallel_ranks_test "$pkg/tests/parallel_ranks_test"
for r in $(seq 1 "$gpus"); do
  run_test "parallel_ranks_test_mpi$r" mpirun --oversubscribe -np "$r" -x RINGFEED_MPI_PLUGIN \
    -x NCCL_NVLS_ENABLE ${LD_LIBRARY_PATH:+-x LD_LIBRARY_PATH} "$pkg/tests/parallel_ranks_test"
done
for t in ${TESTS:-}; do run_test "$t" "$pkg/tests/$t"; done
# The end-to-end tests of `mpirun -np N ringfeed train` (every sample once per epoch across ranks,
# resume at the same and at another world size, a killed or failing rank) on the GPUs: NCCL.
if [ "$gpus" -ge 2 ] && [ "${E2E:-1}" = 1 ]; then
  pytest_path=""
  python3 -c "import pytest" 2>/dev/null || pytest_path=$pkg/pytest
  PYTHONPATH=$pytest_path RINGFEED_TEST_DEVICE=cuda RINGFEED_TEST_GPUS=$gpus RINGFEED_BIN=$pkg/bin MPIEXEC=$(command -v mpirun) \
    timeout 400 python3 -m pytest -q -p no:cacheprovider tests/parallel/train \
    --ignore=tests/parallel/train/test_accuracy_fashion.py >"$logs/e2e-cuda.log" 2>&1
  echo "e2e on the GPUs (pytest exit $?): $(tail -1 "$logs/e2e-cuda.log")"
  grep -E '^(FAILED|ERROR)' "$logs/e2e-cuda.log" | head
fi

[ "${TRAIN:-1}" = 1 ] || exit 0
echo "== training"
data=$work/cifar.rfd
[ -f "$data" ] || "$pkg/bin/ringfeed-convert" synthetic -o "$data" --samples "${SAMPLES:-1000000}" \
  --shape 3,32,32 --classes 10 --seed 7 >"$logs/convert.log" 2>&1
ls -l "$data"
train() {  # label ranks cold|warm extra...
  local label=$1 ranks=$2 cache=$3; shift 3
  [ "$cache" = cold ] && { sync; echo 3 >/proc/sys/vm/drop_caches; }
  [ "$cache" = warm ] && set -- --io buffered "$@"
  local cmd=("$pkg/bin/ringfeed" train --data "$data" --epochs "${EPOCHS:-2}" --batch-size 256
             --metrics "$logs/$label.jsonl" "$@")
  local pass=()
  for v in LD_LIBRARY_PATH RINGFEED_MPI_PLUGIN NCCL_NVLS_ENABLE NCCL_P2P_DISABLE NCCL_SHM_DISABLE; do
    [ -n "${!v:-}" ] && pass+=(-x "$v")
  done
  [ "$ranks" -gt 0 ] && cmd=(mpirun --oversubscribe -np "$ranks" "${pass[@]}" "${cmd[@]}")
  local t0=$(date +%s%N)
  "${cmd[@]}" >"$logs/$label.log" 2>&1; local rc=$?
  local ms=$((($(date +%s%N) - t0) / 1000000))
  echo "$label (rc $rc, $ms ms): $(grep -E '^epoch' "$logs/$label.log" | tail -1)"
  [ $rc = 0 ] || tail -20 "$logs/$label.log"
}
cat "$data" >/dev/null  # warm
for round in 1 2; do
  train "alone-warm-$round" 0 warm
  train "mpi1-warm-$round" 1 warm
  [ "$gpus" -ge 2 ] && train "mpi2-warm-$round" 2 warm
  [ "$gpus" -ge 2 ] && NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 train "mpi2-sockets-warm-$round" 2 warm
done
for round in 1 2; do
  train "alone-cold-$round" 0 cold
  [ "$gpus" -ge 2 ] && train "mpi2-cold-$round" 2 cold
  sync; echo 3 >/proc/sys/vm/drop_caches
  "$pkg/bin/ringfeed" read "$data" --order train 2>&1 | grep GB/s | sed "s/^/read-cold-$round: /"
done
