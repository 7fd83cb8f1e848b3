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
# Everything it writes goes under $RINGFEED_WORK (default build/main-job).
set -euo pipefail
cd "$(dirname "$0")/.."
tools/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)"
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
$sudo cmake --install build --component python >/dev/null

work=${RINGFEED_WORK:-build/main-job}
samples=${RINGFEED_SYNTHETIC_SAMPLES:-200000}
fmnist=/usr/share/datasets/fashion-mnist
mkdir -p "$work"
set -x
build/bin/ringfeed-convert synthetic --samples "$samples" --shape 3,32,32 --classes 10 --seed 1 \
  -o "$work/synthetic.rfd"
build/bin/ringfeed-convert idx --images "$fmnist/train-images-idx3-ubyte.gz" \
  --labels "$fmnist/train-labels-idx1-ubyte.gz" -o "$work/fashion-mnist-train.rfd"
build/bin/ringfeed-convert idx --images "$fmnist/t10k-images-idx3-ubyte.gz" \
  --labels "$fmnist/t10k-labels-idx1-ubyte.gz" -o "$work/fashion-mnist-test.rfd"
build/bin/ringfeed-convert inspect "$work/fashion-mnist-train.rfd"
build/bin/ringfeed read "$work/synthetic.rfd"
build/bin/ringfeed read "$work/fashion-mnist-train.rfd"
build/bin/ringfeed read "$work/fashion-mnist-test.rfd"
build/bin/ringfeed train --data "$work/fashion-mnist-train.rfd" --test "$work/fashion-mnist-test.rfd" \
  --device cpu --epochs "${RINGFEED_EPOCHS:-1}" --batch-size 128 \
  --metrics "$work/fashion-mnist-train-metrics.jsonl"
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
