#!/usr/bin/env python3
"""The GPU loader alone, per kind of batch: how many samples/s ringfeed.Loader hands out, so that
two builds' loaders can be compared with the model out of the figures. Run once per build
(PYTHONPATH picks the build); prints one JSON line per kind: samples_per_s over the whole time,
first_batch_s (each epoch's wait for its first batch, averaged: the epoch's start) and
steady_per_s (the rate after each epoch's first batch), so that a slower start and a slower
steady rate are told apart (an epoch of the page-cache data lasts well under a second).

  DATA, from the page cache: uint8 as stored (a device copy, no decode kernel); float32 NCHW and
      bfloat16 NHWC normalized (the decode kernel)
  --jpeg F.rfd, cold (the page cache dropped first, as root; the loader's default io='direct'):
      one epoch of decoded 224x224 crops, bfloat16 NHWC (nvJPEG with the CPU threads' share)
  --tokens F.rfd, cold: packed sequences of 2048 (+1) tokens, 16 rows a batch, one epoch;
      tokens/s in the figure's place. Written first where it is not there (--make-tokens N: N
      uint16 ids of documents of 1 to 4,000 ids, zstd:1, by this build's DatasetWriter)

  loader_decode_ab.py DATA [--seconds 5] [--batch-size 256] [--jpeg F.rfd]
                     [--tokens F.rfd [--make-tokens N]]
"""
import argparse
import json
import os
import subprocess
import time

import torch

import ringfeed

KINDS = {"uint8": dict(dtype="uint8"),
         "float32-nchw": dict(dtype="float32", layout="NCHW"),
         "bf16-nhwc": dict(dtype="bfloat16", layout="NHWC")}


def drop_caches():
    subprocess.run(["sync"], check=False)
    try:
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
    except OSError:
        pass  # not root: the loader's O_DIRECT reads skip the page cache anyway


def make_tokens(path, count):
    """COUNT uint16 ids in documents of 1 to 4,000 ids, written by this build's DatasetWriter."""
    import numpy as np

    rng = np.random.default_rng(11)
    with ringfeed.DatasetWriter(path + ".part", records="tokens", dtype="uint16", labels=False,
                                compress="zstd:1") as w:
        done = 0
        while done < count:
            n = int(min(1 << 24, count - done))
            ids = rng.integers(3, 32000, n, dtype=np.uint16)
            ends = np.cumsum(rng.integers(1, 4001, n // 1000 + 2))
            offsets = np.concatenate([[0], ends[ends < n], [n]]).astype(np.int64)
            w.write_records(ids, offsets)
            done += n
    os.rename(path + ".part", path)


def timed(loader, seconds, count):
    """Batches of `loader` for `seconds` (0: one epoch); count(batch) each one's figure. Returns
    (figures/s over the whole time, the epochs' mean first-batch seconds, figures/s after each
    epoch's first batch): a slower epoch start and a slower steady rate told apart."""
    n, t0 = 0, time.perf_counter()
    firsts, steady_n, steady_s = [], 0, 0.0
    while True:
        e0, first = time.perf_counter(), None
        for batch in loader:
            k = count(batch)
            n += k
            if first is None:
                first = time.perf_counter()
                firsts.append(first - e0)
            else:
                steady_n += k
            if seconds and time.perf_counter() - t0 >= seconds:
                break
        if first is not None:
            steady_s += time.perf_counter() - first
        if not seconds or time.perf_counter() - t0 >= seconds:
            break
    torch.cuda.synchronize()
    total = n / (time.perf_counter() - t0)
    return total, sum(firsts) / max(len(firsts), 1), steady_n / steady_s if steady_s else 0.0


def report(kind, figures, extra=None):
    total, first, steady = figures
    print(json.dumps({"kind": kind, "samples_per_s": total, "first_batch_s": first,
                      "steady_per_s": steady, **(extra or {})}), flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("data")
    p.add_argument("--seconds", type=float, default=5.0)
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--jpeg", default="")
    p.add_argument("--tokens", default="")
    p.add_argument("--make-tokens", type=float, default=0)
    args = p.parse_args()

    def samples(batch):
        return torch.from_dlpack(batch[0]).shape[0]

    for name, kw in KINDS.items():
        loader = ringfeed.Loader(args.data, args.batch_size, device="cuda", seed=1,
                                 drop_last=True, io="buffered", **kw)
        report(name, timed(loader, args.seconds, samples),
               {"epoch_samples": loader.epoch_samples})
        loader.close()
    if args.jpeg:
        drop_caches()
        loader = ringfeed.Loader(args.jpeg, args.batch_size, device="cuda", seed=1,
                                 image_size=224, dtype="bfloat16", layout="NHWC")
        report("jpeg-cold", timed(loader, 0, samples))
        loader.close()
    if args.tokens:
        if not os.path.exists(args.tokens):
            make_tokens(args.tokens, int(args.make_tokens))
        drop_caches()
        loader = ringfeed.Loader(args.tokens, 16, device="cuda", seed=1, sequence_length=2048,
                                 dtype="int32")

        def tokens(batch):
            return torch.from_dlpack(batch.tokens).numel()

        report("tokens-cold", timed(loader, 0, tokens))
        loader.close()


if __name__ == "__main__":
    main()
