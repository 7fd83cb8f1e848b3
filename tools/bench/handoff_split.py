#!/usr/bin/env python3
"""The hand-off's host time split: next(it), torch.from_dlpack of the samples and of the labels,
and each piece of from_dlpack (the device query, torch.cuda.current_stream, __dlpack__, the
capsule's import), per batch, the worker ahead (a sleep stands for the model's step).

  handoff_split.py --data F.rfd [--batch-size 256] [--batches 400] [--step-ms 2.5]
"""
import argparse
import statistics
import time

import torch
import ringfeed


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--data", required=True)
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--batches", type=int, default=400)
    p.add_argument("--step-ms", type=float, default=2.5)
    a = p.parse_args()
    loader = ringfeed.Loader(a.data, a.batch_size, device="cuda", dtype="bfloat16", layout="NHWC",
                             normalize=True, drop_last=True, io="buffered")
    it = iter(loader)
    for _ in range(50):
        x, y = next(it)
        torch.from_dlpack(x), torch.from_dlpack(y)
    cols = {k: [] for k in ("next", "from_dlpack_x", "from_dlpack_y", "dev", "stream", "dlpack",
                            "import", "native_next")}
    native = loader._native
    for _ in range(a.batches):
        t_end = time.perf_counter() + a.step_ms / 1e3
        while time.perf_counter() < t_end:
            pass
        t0 = time.perf_counter_ns()
        x, y = next(it)
        t1 = time.perf_counter_ns()
        torch.from_dlpack(x)
        t2 = time.perf_counter_ns()
        torch.from_dlpack(y)
        t3 = time.perf_counter_ns()
        # from_dlpack by hand, piece by piece, on the same batch
        d = x.__dlpack_device__()
        t4 = time.perf_counter_ns()
        s = torch.cuda.current_stream(d[1])
        ptr = s.cuda_stream or 1
        t5 = time.perf_counter_ns()
        cap = x.__dlpack__(stream=ptr)
        t6 = time.perf_counter_ns()
        torch.utils.dlpack.from_dlpack(cap)
        t7 = time.perf_counter_ns()
        for k, v in zip(cols, (t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4, t6 - t5, t7 - t6)):
            cols[k].append(v / 1e3)
    # the native call alone (no Python bookkeeping), between steps too
    loader2 = ringfeed.Loader(a.data, a.batch_size, device="cuda", dtype="bfloat16",
                              layout="NHWC", normalize=True, drop_last=True, io="buffered")
    n2 = loader2._native
    iteration = n2.begin()
    for _ in range(a.batches):
        t_end = time.perf_counter() + a.step_ms / 1e3
        while time.perf_counter() < t_end:
            pass
        t0 = time.perf_counter_ns()
        out, _ = n2.next(*iteration)
        t1 = time.perf_counter_ns()
        if out is None:
            iteration = n2.begin()
        cols["native_next"].append((t1 - t0) / 1e3)
    for k, v in cols.items():
        if v:
            print(f"{k:14s} median {statistics.median(v):7.2f} us  p90 {sorted(v)[int(0.9 * len(v))]:7.2f} us")
    print("torch", torch.__version__)


if __name__ == "__main__":
    main()
