#!/usr/bin/env python3
"""Real pixels in a CIFAR-like shape, for the compressed-data benchmarks (issue 27: "real pixels,
not synthetic noise; say how"): Fashion-MNIST's 60,000 training images laid out as 3x32x32 uint8
samples, written as raw records (one label byte, then the 3,072 pixel bytes: `ringfeed-convert
raw --records OUT --shape 3,32,32 --label first`) until the file holds SIZE GB.

How: sample j of replica r takes three Fashion-MNIST images as its three channels, images
(j + r) mod N, (7j + 13r + 1) mod N and (11j + 29r + 2) mod N, each 28x28 image centred in
32x32 with a 2-pixel border of zeros; its label is the first image's. So every sample is real
pixels, no two replicas repeat a sample, and no chunk repeats another's bytes.

    tools/bench/fmnist_cifar.py FMNIST_DIR OUT.bin --gb 8
    tools/bench/fmnist_cifar.py FMNIST_DIR OUT.rfd --gb 37 --compress zstd:1   # ringfeed.DatasetWriter

With an OUT ending in .rfd the samples go straight into a ringfeed dataset through
ringfeed.DatasetWriter (--compress), with no raw file between: datasets larger than the disk's
room for both.
"""

import argparse
import gzip
import sys
from pathlib import Path

import numpy as np


def idx(path: Path) -> np.ndarray:
    data = gzip.decompress(path.read_bytes())
    ndim = data[3]
    dims = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(data, np.uint8, offset=4 + 4 * ndim).reshape(dims)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("fmnist", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("--gb", type=float, default=8.0)
    ap.add_argument("--compress", default="none", help="the codec, for an OUT.rfd")
    a = ap.parse_args()
    images = idx(a.fmnist / "train-images-idx3-ubyte.gz")
    labels = idx(a.fmnist / "train-labels-idx1-ubyte.gz")
    n = images.shape[0]
    padded = np.zeros((n, 32, 32), np.uint8)
    padded[:, 2:30, 2:30] = images
    record = 1 + 3 * 32 * 32
    total = int(a.gb * 1e9) // record
    j = np.arange(n, dtype=np.int64)
    written = 0
    writer = None
    if a.out.suffix == ".rfd":
        import ringfeed
        writer = ringfeed.DatasetWriter(a.out, (3, 32, 32), "uint8", classes=10,
                                        compress=a.compress)
    with (writer if writer is not None else open(a.out, "wb")) as f:
        r = 0
        while written < total:
            k = min(n, total - written)
            jj = j[:k]
            picks = [(jj + r) % n, (7 * jj + 13 * r + 1) % n, (11 * jj + 29 * r + 2) % n]
            block = np.empty((k, record), np.uint8)
            block[:, 0] = labels[picks[0]]
            block[:, 1:] = np.stack([padded[p] for p in picks], axis=1).reshape(k, -1)
            if writer is not None:
                writer.write(block[:, 1:].reshape(k, 3, 32, 32), block[:, 0])
            else:
                f.write(block.tobytes())
            written += k
            r += 1
    print(f"{a.out}: {written} samples of 3x32x32 ({written * record / 1e9:.2f} GB), "
          f"{r} replicas of Fashion-MNIST's {n} images")
    return 0


if __name__ == "__main__":
    sys.exit(main())
