#!/usr/bin/env python3
"""Packed sequences on the GPU are the CPU's, bit for bit: a corpus of random documents (lz4), and
for each setting (int64 / int32 ids, an eod id of 0, one wider than the ids, none, padding) the
batches of ringfeed.Loader(device='cpu') and of device='cuda' compared, tokens, labels, positions
and lengths. Exit 1 on the first difference; one line a setting.

  tokens_gpu_equal.py [--work DIR] [--docs 3000]
"""

import argparse
import os
import tempfile

import numpy as np
import torch

import ringfeed

CASES = [dict(dtype="int64", eod_token=0), dict(dtype="int32", eod_token=0),
         dict(dtype="int64", eod_token=70000, pad_token=-1),  # eod wider than the ids
         dict(dtype="int64", eod_token=None, pad_token=7),
         dict(dtype="int32", eod_token=0, packing="pad", pad_token=-1)]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--work", default="")
    p.add_argument("--docs", type=int, default=3000)
    a = p.parse_args()
    d = a.work or tempfile.mkdtemp()
    rng = np.random.default_rng(0)
    docs = [rng.integers(1, 30000, size=int(rng.integers(1, 3000))).astype(np.uint16)
            for _ in range(a.docs)]
    path = os.path.join(d, "g.rfd")
    with ringfeed.DatasetWriter(path, records="tokens", dtype="uint16", labels=False,
                                compress="lz4") as w:
        w.write_records(np.concatenate(docs),
                        np.concatenate([[0], np.cumsum([len(x) for x in docs])]))
    for c in CASES:
        cpu = ringfeed.Loader(path, 8, sequence_length=1023, device="cpu", **c)
        gpu = ringfeed.Loader(path, 8, sequence_length=1023, device="cuda", **c)
        n = 0
        for x, y in zip(cpu, gpu):
            for i in range(4):
                if not torch.equal(torch.from_dlpack(x[i]), torch.from_dlpack(y[i]).cpu()):
                    raise SystemExit(f"{c}: batch {n}, field {i} differs")
            n += 1
        print(c, "batches equal on cpu and cuda:", n, flush=True)


if __name__ == "__main__":
    main()
