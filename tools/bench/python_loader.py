#!/usr/bin/env python3
"""ringfeed's Python package against its peers, on the same .rfd file, in one run.

Phases (each starts from a cold page cache where --drop-caches is given, which needs root):
  read            `ringfeed read DATA --order train`: the disk stage alone, in the training order
  loader          ringfeed.Loader iterated from Python, every batch taken by torch.from_dlpack (no
                  copy), nothing else: samples/s and GB/s of the file
  train_ringfeed  PyTorch training ringfeed's default CNN (tools/bench/torch_peer.py's model, bf16
                  autocast, channels_last) fed by ringfeed.Loader (bf16, NHWC, normalized on the GPU)
  train_torch     the same model fed by PyTorch's DataLoader (torch_peer.py's Dataset: a memmap of
                  the same file, shuffled, pinned, --workers workers)
  compute_only    the same model stepping on one batch already on the GPU
Ratios: loader / read, train_ringfeed / compute_only, train_ringfeed / train_torch. The phases run
--repeats times, interleaved, so the disk's drift between runs touches all of them alike.

Memory: for the loader phase, the GPU memory the loader took (cudaMemGetInfo's free before minus
after, through torch.cuda.mem_get_info) and the process's resident set before and at the end.

  python_loader.py --data F.rfd --ringfeed build/ringfeed [--batch-size 256] [--seconds 20]
                   [--repeats 2] [--workers N] [--drop-caches] [--json OUT]
"""
import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_peer  # noqa: E402  (the model, the DataLoader peer and the .rfd memmap Dataset)

import ringfeed  # noqa: E402


def drop_caches(enabled):
    if not enabled:
        return
    os.sync()
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")


def rss_bytes():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def run_read(args):
    out = subprocess.run([args.ringfeed, "read", args.data, "--order", "train", "--seed", "1"],
                         capture_output=True, text=True, check=True).stdout
    # "read N GB in S s: X GB/s ..." -- the tool's own figure, as printed
    line = [s for s in out.splitlines() if "GB/s" in s][-1]
    gbps = float(line.split("GB/s")[0].split()[-1])
    return {"gbps": gbps, "line": line.strip()}


def file_bytes(path):
    return os.path.getsize(path)


def run_loader(args, step=None, epochs=None, **loader_kwargs):
    """Iterates ringfeed.Loader for --seconds (or, given `epochs`, exactly that many whole epochs),
    calling step(x, y) on each batch as torch tensors (no copy). Returns rates and memory; the
    time runs from the loader's construction."""
    dev = torch.device("cuda")
    free_before = torch.cuda.mem_get_info(dev)[0]
    rss_before = rss_bytes()
    t0 = time.perf_counter()
    if args.io:
        loader_kwargs["io"] = args.io
    loader = ringfeed.Loader(args.data, args.batch_size, device="cuda", seed=args.seed,
                             drop_last=True,
                             **loader_kwargs)
    samples, first = 0, None
    done = False
    epochs_done = 0
    while not done:
        for x, y in loader:
            xt, yt = torch.from_dlpack(x), torch.from_dlpack(y)
            if first is None:
                first = time.perf_counter() - t0
            if step is not None:
                step(xt, yt)
            samples += xt.shape[0]
            if epochs is None and time.perf_counter() - t0 >= args.seconds:
                done = True
                break
        epochs_done += 1
        if epochs is not None and epochs_done >= epochs:
            done = True
    torch.cuda.synchronize()
    secs = time.perf_counter() - t0
    free_after = torch.cuda.mem_get_info(dev)[0]
    stats = loader.stats()
    r = {"samples": samples, "seconds": round(secs, 4), "samples_per_s": round(samples / secs, 1),
         "first_batch_s": round(first, 4),
         "disk_gbps": stats.get("disk_gbps"), "wait_share": stats.get("wait_share"),
         "file_gbps_wall": round(epochs_done * file_bytes(args.data) / secs / 1e9, 4)
         if epochs is not None else None,
         "reader_held_s": stats.get("reader_held_seconds"),
         "loader_gpu_bytes": free_before - free_after,
         "rss_before": rss_before, "rss_end": rss_bytes()}
    del loader
    return r


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", required=True)
    p.add_argument("--ringfeed", required=True, help="the ringfeed binary (for the read phase)")
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--seconds", type=float, default=20.0)
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--workers", type=int, default=os.cpu_count())
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--drop-caches", action="store_true")
    p.add_argument("--io", default="", help="the loader's io (direct, buffered, pread); "
                   "buffered with a dataset in the page cache takes the disk out of the figures")
    p.add_argument("--phases", default="read,loader,train_ringfeed,train_torch,compute_only")
    p.add_argument("--loader-epochs", type=int, default=0,
                   help="the loader phase iterates this many whole epochs (the bytes `read` "
                        "reads) instead of --seconds; 0: --seconds")
    p.add_argument("--json")
    args = p.parse_args()
    phases = args.phases.split(",")

    torch.backends.cudnn.benchmark = True
    dev = torch.device("cuda")
    torch.zeros(1, device=dev)
    ds = torch_peer.RfdDataset(args.data, as_tensor=True)
    model = torch_peer.build_model(ds).to(dev, memory_format=torch.channels_last)
    initial = {k: v.clone() for k, v in model.state_dict().items()}
    mean = torch.tensor(ds.mean, dtype=torch.float32, device=dev).view(1, -1, 1, 1)
    std = torch.tensor(np.where(ds.std == 0, 1.0, ds.std), dtype=torch.float32,
                       device=dev).view(1, -1, 1, 1)
    state = {}

    def fresh_optimizer():
        model.load_state_dict(initial)
        state["opt"] = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9,
                                       weight_decay=5e-4)

    def train_step(x, y):  # x: normalized, NCHW-shaped (channels_last strides from NHWC)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = torch.nn.functional.cross_entropy(model(x), y)
        state["opt"].zero_grad(set_to_none=True)
        loss.backward()
        state["opt"].step()

    def ringfeed_step(x, y):  # (N, H, W, C) bf16 -> the NCHW view with channels_last strides
        train_step(x.permute(0, 3, 1, 2), y)

    def torch_step(x, y):  # uint8 NCHW from the DataLoader, normalized on the GPU
        train_step((x.contiguous(memory_format=torch.channels_last).float() - mean) / std, y)

    fresh_optimizer()  # warm-up outside every clock: cudnn autotuning, lazy kernel loading
    xw = torch.randint(0, 256, (args.batch_size, ds.channels, ds.height, ds.width),
                       dtype=torch.uint8, device=dev)
    yw = torch.randint(0, ds.classes, (args.batch_size,), device=dev)
    for _ in range(20):
        torch_step(xw, yw)
        ringfeed_step(((xw.float() - mean) / std).to(torch.bfloat16).permute(0, 2, 3, 1), yw)
    torch.cuda.synchronize()
    torch_peer.warm_up_workers(ds, args, dev)

    results = {p_: [] for p_ in phases}
    for rep in range(args.repeats):
        for phase in phases:
            drop_caches(args.drop_caches)
            if phase == "read":
                r = run_read(args)
            elif phase == "loader":
                r = run_loader(args, epochs=args.loader_epochs or None)
            elif phase == "train_ringfeed":
                fresh_optimizer()
                r = run_loader(args, ringfeed_step, dtype="bfloat16", layout="NHWC",
                               normalize=True)
            elif phase == "train_torch":
                fresh_optimizer()
                args.max_samples = sys.maxsize
                r = torch_peer.run_loader(ds, args, dev, torch_step)
            elif phase == "compute_only":
                fresh_optimizer()
                x0 = ((xw.float() - mean) / std).to(torch.bfloat16).permute(0, 2, 3, 1)
                for _ in range(10):
                    ringfeed_step(x0, yw)
                torch.cuda.synchronize()
                steps, t0 = 0, time.perf_counter()
                while time.perf_counter() - t0 < min(5.0, args.seconds / 4):
                    for _ in range(10):
                        ringfeed_step(x0, yw)
                    steps += 10
                    torch.cuda.synchronize()
                secs = time.perf_counter() - t0
                r = {"samples_per_s": round(steps * args.batch_size / secs, 1)}
            print(f"[{rep}] {phase}: {json.dumps(r)}", flush=True)
            results[phase].append(r)

    def best(phase, key="samples_per_s"):
        vals = [r[key] for r in results.get(phase, []) if r.get(key) is not None]
        return max(vals) if vals else None

    summary = {}
    if "read" in results and "loader" in results:
        # Whole epochs: the file's bytes over the wall time from construction, as `read` counts
        # them; else the samples' bytes over the phase.
        loader_gbps = [r["file_gbps_wall"] or r["samples_per_s"] * ds.sample_bytes / 1e9
                       for r in results["loader"]]
        summary["loader_over_read"] = [round(l / r["gbps"], 3)
                                       for l, r in zip(loader_gbps, results["read"])]
    if "train_ringfeed" in results and "compute_only" in results:
        summary["train_ringfeed_over_compute"] = [
            round(t["samples_per_s"] / c["samples_per_s"], 3)
            for t, c in zip(results["train_ringfeed"], results["compute_only"])]
    if "train_ringfeed" in results and "train_torch" in results:
        summary["train_ringfeed_over_train_torch"] = [
            round(a["samples_per_s"] / b["samples_per_s"], 3)
            for a, b in zip(results["train_ringfeed"], results["train_torch"])]
    print("summary:", json.dumps(summary), flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"args": vars(args), "device": torch.cuda.get_device_name(dev),
                       "torch": torch.__version__, "results": results, "summary": summary},
                      f, indent=2)
            f.write("\n")


if __name__ == "__main__":
    main()
