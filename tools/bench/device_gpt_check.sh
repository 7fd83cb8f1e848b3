#!/usr/bin/env bash
# A GPT-style model in PyTorch fed by ringfeed's packed sequences (issue 24's goal: >= 0.95 of its
# compute alone), on the GPU machine, after tools/bench/device_tokens_check.sh (which builds the
# extension and the corpora under /var/tmp/ringfeed-tokens). Interleaved rounds of
# examples/torch_tokens.py fed by a mixture of two corpora (0.7 / 0.3) and the same model with
# --compute-only (one batch already on the GPU, over and over), for each GPU count of NPROCS (default
# 1; more than 1 under torchrun, DDP), all interleaved.
# Usage: tools/bench/device_gpt_check.sh OUT_DIR
set -uo pipefail
out=$(realpath -m "$1")
mkdir -p "$out"
export PYTHONPATH=${RINGFEED_DATA:-/var/tmp/ringfeed-python}/site NCCL_NVLS_ENABLE=0
model=${GPT_MODEL:---layers 12 --d-model 768 --heads 12 --seq-len 1024 --batch-size 16 --vocab 32000}
steps=${GPT_STEPS:-150}
data=${GPT_DATA:-"/var/tmp/ringfeed-tokens/c1e9.rfd /var/tmp/ringfeed-tokens/cbig.rfd"}
run() {  # <name> <gpus> <flags...>
  local name=$1 nproc_=$2
  shift 2
  if [ "$nproc_" -gt 1 ]; then
    torchrun --standalone --nproc-per-node "$nproc_" examples/torch_tokens.py --data $data \
      --weights 0.7 0.3 $model --steps "$steps" --dtype bf16 --device cuda --print-every 50 "$@"
  else
    python3 examples/torch_tokens.py --data $data --weights 0.7 0.3 $model --steps "$steps" \
      --dtype bf16 --device cuda --print-every 50 "$@"
  fi >"$out/$name.log" 2>&1
  echo "$name: $(grep -E 'steps to step' "$out/$name.log" | tail -1)"
}
for r in $(seq 1 "${ROUNDS:-3}"); do
  for g in ${NPROCS:-1}; do
    sync; echo 3 >/proc/sys/vm/drop_caches
    run "fed-${g}gpu-$r" "$g"
    run "compute-${g}gpu-$r" "$g" --compute-only
  done
done
