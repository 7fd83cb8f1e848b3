#!/usr/bin/env python3
"""The GPU loader alone, from the page cache, per output kind: how many samples/s ringfeed.Loader
hands out for a few decodes (uint8 as stored: a device copy, no decode kernel; float32 NCHW and
bfloat16 NHWC normalized: the decode kernel), so that two builds' loaders can be compared with
the disk and the model out of the figures. Run once per build (PYTHONPATH picks the build);
prints one JSON line per kind.

  loader_decode_ab.py DATA [--seconds 5] [--batch-size 256]
"""
import argparse
import json
import time

import torch

import ringfeed

KINDS = {"uint8": dict(dtype="uint8"),
         "float32-nchw": dict(dtype="float32", layout="NCHW"),
         "bf16-nhwc": dict(dtype="bfloat16", layout="NHWC")}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("data")
    p.add_argument("--seconds", type=float, default=5.0)
    p.add_argument("--batch-size", type=int, default=256)
    args = p.parse_args()
    for name, kw in KINDS.items():
        loader = ringfeed.Loader(args.data, args.batch_size, device="cuda", seed=1,
                                 drop_last=True, io="buffered", **kw)
        n, t0 = 0, time.perf_counter()
        while time.perf_counter() - t0 < args.seconds:
            for x, _ in loader:
                n += torch.from_dlpack(x).shape[0]
                if time.perf_counter() - t0 >= args.seconds:
                    break
        torch.cuda.synchronize()
        print(json.dumps({"kind": name, "samples_per_s": n / (time.perf_counter() - t0)}),
              flush=True)
        loader.close()


if __name__ == "__main__":
    main()
