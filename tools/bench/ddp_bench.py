#!/usr/bin/env python3
"""Data-parallel PyTorch on a .rfd file: ringfeed.Loader against DataLoader + DistributedSampler.

Run under torchrun, one process per GPU (NCCL):

    torchrun --nproc_per_node=2 tools/bench/ddp_bench.py --data F.rfd --phase ringfeed
    torchrun --nproc_per_node=2 tools/bench/ddp_bench.py --data F.rfd --phase torch --workers 14

Every phase trains tools/bench/torch_peer.py's model (ringfeed's default CNN, bf16 autocast,
channels_last, SGD) wrapped in DistributedDataParallel, the same on every rank:
  ringfeed   fed by ringfeed.Loader (bf16, NHWC, normalized on the GPU; rank and world size from
             torch.distributed: each rank reads only its own chunks)
  torch      fed by DataLoader over torch_peer.RfdDataset (a memmap of the same file) with
             DistributedSampler (shuffled, drop_last), --workers worker processes per rank,
             pinned, normalized on the GPU
  compute    the same steps on one batch already on each GPU: what the GPUs can do without a
             loader (the all-reduce included)
  allreduce  only the gradient all-reduce: the model's parameter count in float32, as DDP
             reduces it (one bucket for this small model), --steps times
The clock starts after warm-up (cuDNN autotuning, NCCL's first all-reduce, DataLoader worker
code pages via in-memory batches) and a barrier, before the loader is built: the first batch
and worker start-up count. It stops after one epoch (or --max-steps steps) when every rank is
done. Rank 0 prints one JSON line: the phase, the world size, samples/s of all ranks together,
the first batch, and for allreduce the time of one. Drop the page cache before a cold run.
"""
import argparse
import json
import os
import sys
import time

import numpy as np
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_peer  # noqa: E402  (the model and the memmap Dataset)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", required=True)
    p.add_argument("--phase", required=True, choices=["ringfeed", "torch", "compute", "allreduce"])
    p.add_argument("--batch-size", type=int, default=256, help="per rank")
    p.add_argument("--workers", type=int, default=0,
                   help="DataLoader workers per rank (0: the machine's cores / ranks - 2)")
    p.add_argument("--max-steps", type=int, default=0, help="0: one whole epoch")
    p.add_argument("--steps", type=int, default=200, help="compute and allreduce phases")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--json", help="rank 0 appends its JSON line here")
    p.add_argument("--label", default="", help="goes into the JSON line")
    args = p.parse_args()
    if "LOCAL_RANK" not in os.environ:
        p.error("run it under torchrun")
    dev = torch.device("cuda", int(os.environ["LOCAL_RANK"]))
    torch.cuda.set_device(dev)
    torch.backends.cudnn.benchmark = True
    dist.init_process_group("nccl", device_id=dev)
    rank, world = dist.get_rank(), dist.get_world_size()
    if args.workers == 0:
        args.workers = max(1, (os.cpu_count() or 2) // world - 2)
    try:
        result = run(args, dev, rank, world)
    finally:
        dist.destroy_process_group()
    if rank == 0:
        line = json.dumps({"label": args.label, "phase": args.phase, "world": world,
                           "batch_size": args.batch_size, **result})
        print(line, flush=True)
        if args.json:
            with open(args.json, "a") as f:
                f.write(line + "\n")
    return 0


def run(args, dev, rank, world):
    ds = torch_peer.RfdDataset(args.data, as_tensor=True)
    torch.manual_seed(args.seed)
    model = torch_peer.build_model(ds).to(dev, memory_format=torch.channels_last)
    ddp = DistributedDataParallel(model, device_ids=[dev.index])
    opt = torch.optim.SGD(ddp.parameters(), lr=0.01, momentum=0.9, weight_decay=5e-4)
    mean = torch.tensor(ds.mean, dtype=torch.float32, device=dev).view(1, -1, 1, 1)
    std = torch.tensor(np.where(ds.std == 0, 1.0, ds.std), dtype=torch.float32,
                       device=dev).view(1, -1, 1, 1)

    def step(x, y):  # x: N,C,H,W sizes, normalized (channels_last strides or contiguous)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = torch.nn.functional.cross_entropy(ddp(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    def ringfeed_step(x, y):  # (N, H, W, C) bf16 -> the NCHW view with channels_last strides
        step(x.permute(0, 3, 1, 2), y)

    def torch_step(x, y):  # uint8 NCHW from the DataLoader
        step((x.contiguous(memory_format=torch.channels_last).float() - mean) / std, y)

    xw = torch.randint(0, 256, (args.batch_size, ds.channels, ds.height, ds.width),
                       dtype=torch.uint8, device=dev)
    yw = torch.randint(0, ds.classes, (args.batch_size,), device=dev)
    x0 = ((xw.float() - mean) / std).to(torch.bfloat16).permute(0, 2, 3, 1).contiguous()
    for _ in range(20):  # outside the clock: autotuning, lazy loading, NCCL's first all-reduce
        torch_step(xw, yw)
        ringfeed_step(x0, yw)
    if args.phase == "torch":
        torch_peer.warm_up_workers(ds, argparse.Namespace(batch_size=args.batch_size,
                                                          workers=args.workers), dev)
    torch.cuda.synchronize()

    if args.phase == "allreduce":
        flat = torch.zeros(sum(q.numel() for q in model.parameters()), device=dev)
        for _ in range(10):
            dist.all_reduce(flat)
        torch.cuda.synchronize()
        dist.barrier(device_ids=[dev.index])
        t0 = time.perf_counter()
        for _ in range(args.steps):
            dist.all_reduce(flat)
        torch.cuda.synchronize()
        secs = time.perf_counter() - t0
        return {"floats": flat.numel(), "allreduce_us": round(secs / args.steps * 1e6, 1)}

    dist.barrier(device_ids=[dev.index])
    t0 = time.perf_counter()
    steps, first = 0, None
    limit = args.max_steps or (args.steps if args.phase == "compute" else sys.maxsize)
    if args.phase == "compute":
        while steps < limit:
            ringfeed_step(x0, yw)
            steps += 1
        first = 0.0
    elif args.phase == "ringfeed":
        import ringfeed
        loader = ringfeed.Loader(args.data, args.batch_size, device="cuda", dtype="bfloat16",
                                 layout="NHWC", normalize=True, seed=args.seed, drop_last=True)
        assert (loader.rank, loader.world_size) == (rank, world)
        for x, y in loader:
            ringfeed_step(torch.from_dlpack(x), torch.from_dlpack(y))
            if first is None:
                first = time.perf_counter() - t0
            steps += 1
            if steps >= limit:
                break
    else:
        sampler = torch.utils.data.distributed.DistributedSampler(
            ds, num_replicas=world, rank=rank, shuffle=True, seed=args.seed, drop_last=True)
        sampler.set_epoch(0)
        dl = torch.utils.data.DataLoader(ds, batch_size=args.batch_size, sampler=sampler,
                                         num_workers=args.workers, pin_memory=True,
                                         drop_last=True)
        for x, y in dl:
            torch_step(x.to(dev, non_blocking=True), y.to(dev, non_blocking=True))
            if first is None:
                first = time.perf_counter() - t0
            steps += 1
            if steps >= limit:
                break
    torch.cuda.synchronize()
    dist.barrier(device_ids=[dev.index])
    secs = time.perf_counter() - t0
    counts = torch.tensor([steps], device=dev)
    dist.all_reduce(counts)
    samples = int(counts.item()) * args.batch_size
    firsts = [None] * world
    dist.all_gather_object(firsts, first)
    return {"samples": samples, "seconds": round(secs, 3),
            "samples_per_s": round(samples / secs, 1),
            "first_batch_s": round(max(firsts), 4),
            "workers": args.workers if args.phase == "torch" else None}


if __name__ == "__main__":
    sys.exit(main())
