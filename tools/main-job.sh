#!/usr/bin/env bash
# The README's main command: installs what ringfeed needs, builds it, and runs the main job on
# an embedded default:
#   1. synthesize a CIFAR-shaped dataset (learnable: class patterns plus noise),
#   2. convert the real Fashion-MNIST (Debian's dataset-fashion-mnist) to ringfeed's format,
#   3. read each through the io_uring reader and report GB/s,
#   4. train on Fashion-MNIST with the CPU backend in streaming mode ($RINGFEED_EPOCHS epochs,
#      default 1), with the test split evaluated after every epoch,
#   5. read one epoch of it through the installed Python package (`import ringfeed`),
#   6. train ringfeed's CNN in PyTorch on the CPU through the package for 300 steps
#      (examples/torch_train.py), printing the loss and the test accuracy.
# It builds only what it runs (the two programs and the Python package), in build/
# ($RINGFEED_BUILD_DIR) configured by tools/configure.sh exactly as tools/test.sh configures it,
# so the test command afterwards compiles the tests alone. Everything it writes goes under
# $RINGFEED_WORK (default build/main-job). It ends with what happened and what to try next.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/install-deps.sh
build=${RINGFEED_BUILD_DIR:-build}
tools/configure.sh "$build"
cmake --build "$build" -j"$(nproc)" --target ringfeed ringfeed-convert ringfeed_python
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
$sudo cmake --install "$build" --component python >/dev/null

bin=$build/bin
work=${RINGFEED_WORK:-$build/main-job}
samples=${RINGFEED_SYNTHETIC_SAMPLES:-200000}
fmnist=/usr/share/datasets/fashion-mnist
mkdir -p "$work"
set -x
"$bin/ringfeed-convert" synthetic --samples "$samples" --shape 3,32,32 --classes 10 --seed 1 \
  -o "$work/synthetic.rfd"
"$bin/ringfeed-convert" idx --images "$fmnist/train-images-idx3-ubyte.gz" \
  --labels "$fmnist/train-labels-idx1-ubyte.gz" -o "$work/fashion-mnist-train.rfd"
"$bin/ringfeed-convert" idx --images "$fmnist/t10k-images-idx3-ubyte.gz" \
  --labels "$fmnist/t10k-labels-idx1-ubyte.gz" -o "$work/fashion-mnist-test.rfd"
"$bin/ringfeed-convert" inspect "$work/fashion-mnist-train.rfd"
"$bin/ringfeed" read "$work/synthetic.rfd"
"$bin/ringfeed" read "$work/fashion-mnist-train.rfd"
"$bin/ringfeed" read "$work/fashion-mnist-test.rfd"
"$bin/ringfeed" train --data "$work/fashion-mnist-train.rfd" --test "$work/fashion-mnist-test.rfd" \
  --device cpu --epochs "${RINGFEED_EPOCHS:-1}" --batch-size 128 \
  --metrics "$work/fashion-mnist-train-metrics.jsonl" --overwrite  # this job's own, each run
/usr/bin/python3 - "$work/fashion-mnist-train.rfd" <<'EOF'
import sys, ringfeed
loader = ringfeed.Loader(sys.argv[1], 256, device="cpu")
n = sum(samples.shape[0] for samples, _ in loader)
gbps = loader.stats()["disk_gbps"]
print(f"ringfeed (Python, {ringfeed.__file__}): {n} samples in {len(loader)} batches, {gbps:.2f} GB/s")
EOF
/usr/bin/python3 examples/torch_train.py --data "$work/fashion-mnist-train.rfd" \
  --test "$work/fashion-mnist-test.rfd" --device cpu --steps 300 --print-every 50 \
  --threads "$(nproc)"
{ set +x; } 2>/dev/null
train=$work/fashion-mnist-train.rfd
test=$work/fashion-mnist-test.rfd
cat <<EOF

ringfeed main job: done in $((SECONDS / 60)) min $((SECONDS % 60)) s. What just happened:
  built $bin/ringfeed, $bin/ringfeed-convert and the Python package (installed: import ringfeed);
  converted Fashion-MNIST and a synthetic CIFAR-shaped set into ringfeed's format ($work/),
  read each through the io_uring reader (the GB/s lines), trained ringfeed's CNN on the CPU
  (the epoch line: loss, accuracy, test accuracy, samples/s), and the same CNN in PyTorch fed
  by ringfeed.Loader (examples/torch_train.py).
Try next:
  tools/test.sh                     every test (reuses this build: compiles only what tests add)
  $bin/ringfeed train --help
  $bin/ringfeed train --data $train --test $test --epochs 5 --augment crop:2,flip
                                    (the GPU where there is one, else the CPU)
  README.md for the commands, docs/ for the Python loader, many GPUs and the measurements.
EOF
