#!/usr/bin/env python3
"""torch_train.py data-parallel: one process per GPU (NCCL) or per CPU rank (gloo), under torchrun.

    torchrun --nproc_per_node=8 examples/torch_ddp.py --data train.rfd --test test.rfd --epochs 5
    python3 -m torch.distributed.run --nproc_per_node=2 examples/torch_ddp.py --data train.rfd \\
        --device cpu --steps 20

The flags are torch_train.py's; --batch-size is per rank. What data parallelism changes:
- init_process_group: NCCL on GPUs (each rank on the GPU of its LOCAL_RANK), gloo on the CPU.
- ringfeed.Loader takes rank and world_size from torch.distributed: each rank reads only its own
  chunks of every epoch (whole chunks dealt round-robin in a seeded permutation), plus the few
  left over, which every rank reads and splits sample by sample.
- Every rank's epoch holds ceil(samples / world_size) samples, so every rank steps the same
  number of batches per epoch: ringfeed's rank partition guarantees it, and this script checks it
  before training (DDP hangs at an epoch's end where one rank has a batch more). Where the world
  size does not divide the dataset, fewer than world_size samples come twice per epoch.
- DistributedDataParallel all-reduces the gradients during backward.
- A checkpoint holds rank 0's loader state, written by rank 0 alone: every rank's is the same but
  for its rank (the ranks take the same batches per epoch). --resume loads it on every rank, at
  this world size or another: at another (a job restarted on fewer or more GPUs) the samples of
  the interrupted epoch no rank had trained are shared by the new ranks, each once, and the
  epochs after it are ordinary.
- Rank 0 prints the global samples/s (all ranks' samples over the epoch's wall time) and the test
  accuracy (it evaluates the whole test set; the others wait). Every rank prints its step count
  at the end.
"""

import os
import sys
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ringfeed_cnn  # noqa: E402
import torch_train  # noqa: E402  (the flags, the train step, the atomic checkpoint write)

import ringfeed  # noqa: E402


def main() -> int:
    p = torch_train.make_parser(__doc__.split("\n")[0])
    args = p.parse_args()
    torch_train.check_args(p, args)
    if "LOCAL_RANK" not in os.environ:
        p.error("run it under torchrun (or python3 -m torch.distributed.run)")
    if args.threads:
        torch.set_num_threads(args.threads)
    dev = torch_train.pick_device(args.device)
    cuda = dev.type == "cuda"
    if cuda:
        dev = torch.device("cuda", int(os.environ["LOCAL_RANK"]))
        torch.cuda.set_device(dev)  # the loader's device="cuda" is this GPU too
        torch.backends.cudnn.benchmark = True
    dist.init_process_group("nccl" if cuda else "gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    try:
        return train(args, dev, rank, world)
    finally:
        dist.destroy_process_group()


def train(args, dev: torch.device, rank: int, world: int) -> int:
    cuda = dev.type == "cuda"
    info = ringfeed_cnn.dataset_info(args.data)
    try:
        chw = ringfeed_cnn.image_shape(info)
    except ValueError as e:
        raise ringfeed.UsageError(str(e)) from None
    options = ringfeed_cnn.loader_options(info, cuda)
    # rank and world_size: torch.distributed's, taken by the loader itself.
    train = ringfeed.Loader(args.data, args.batch_size, seed=args.seed, io=args.io, **options)
    assert (train.rank, train.world_size) == (rank, world)
    test = torch_train.open_test(args, dev, info) if rank == 0 else None

    torch.manual_seed(args.seed)
    model = ringfeed_cnn.build_model(*chw, info.classes).to(dev)
    if cuda:
        model = model.to(memory_format=torch.channels_last)
    step = 0
    state = torch.load(args.resume, map_location=dev) if args.resume else None
    if state is not None:
        model.load_state_dict(state["model"])
        train.load_state_dict(state["loader"])  # rank 0's, at any world size
        step = state["step"]
    # Checked after the resume, whose epoch may be one resumed at another world size.
    counts = [None] * world
    dist.all_gather_object(counts, (len(train), train.epoch_samples))
    if len(set(counts)) != 1:
        raise RuntimeError(f"ranks have different epochs (batches, samples): {counts}")
    ddp = DistributedDataParallel(model, device_ids=[dev.index] if cuda else None)
    opt = torch.optim.SGD(ddp.parameters(), lr=args.lr, momentum=0.9, weight_decay=5e-4)
    if state is not None:
        opt.load_state_dict(state["optimizer"])
    if rank == 0:
        where = "GPUs (NCCL)" if cuda else "the CPU (gloo)"
        print(f"{info.paths[0]}: {info.samples} samples {'x'.join(map(str, chw))} {info.dtype}, "
              f"{info.classes} classes; {world} ranks on {where}, each {len(train)} batches of "
              f"{args.batch_size} ({train.epoch_samples} samples) per epoch: equal on every rank, "
              f"as ringfeed's rank partition makes them (checked)"
              + (f"; resumed {args.resume} at step {step}" if state is not None else ""),
              flush=True)

    def checkpoint() -> None:
        if not args.checkpoint:
            return
        if rank == 0:  # rank 0's loader state holds what every rank needs
            torch_train.save_checkpoint(args.checkpoint, {
                "model": model.state_dict(), "optimizer": opt.state_dict(),
                "loader": train.state_dict(), "step": step})

    steps = args.steps if args.steps is not None else float("inf")
    total = 0
    while train.epoch < args.epochs and step < steps:
        epoch, start = train.epoch, train.position
        loss_sum = torch.zeros((), device=dev)
        correct = torch.zeros((), dtype=torch.int64, device=dev)
        seen = 0
        dist.barrier(device_ids=[dev.index] if cuda else None)  # NCCL: on this rank's GPU
        t0 = time.perf_counter()
        for samples, labels in train:  # this rank's part of the rest of the epoch
            x = ringfeed_cnn.model_input(samples, options["layout"], chw)
            y = torch.from_dlpack(labels)
            loss, logits = torch_train.train_step(ddp, opt, x, y, cuda)
            step += 1
            seen += y.numel()
            loss_sum += loss.detach().float() * y.numel()
            correct += (logits.argmax(1) == y).sum()
            if args.print_every and step % args.print_every == 0 and rank == 0:
                print(f"step {step}: loss {loss.item():.7g} (rank 0)", flush=True)
            if args.checkpoint_every and step % args.checkpoint_every == 0:
                checkpoint()
            if step >= steps:
                break
        sums = torch.stack([loss_sum.double(), correct.double(),
                            torch.tensor(float(seen), dtype=torch.float64, device=dev)])
        dist.all_reduce(sums)  # the whole epoch's figures, every rank's summed
        secs = time.perf_counter() - t0  # all_reduce waited for the slowest rank
        loss_sum, correct, seen = sums.tolist()
        total += int(seen)
        if rank == 0:
            line = (f"epoch {epoch}" + (f" from sample {start} of each rank" if start else "")
                    + (f" (stopped at step {step})" if train.epoch == epoch else "")
                    + f": loss {loss_sum / max(seen, 1):.4f}, train accuracy "
                    f"{correct / max(seen, 1):.2%}, {seen / secs:,.0f} samples/s over {world} "
                    f"ranks")
            if test is not None:
                right, count = ringfeed_cnn.evaluate(model, test, chw, cuda)
                line += f", test accuracy {right / count:.2%} ({count} samples)"
            print(line, flush=True)
        checkpoint()
    print(f"rank {rank} of {world}: {step} steps, {len(train)} batches per epoch", flush=True)
    if rank == 0:
        print(f"{total} samples over all ranks", flush=True)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (ringfeed.UsageError, ringfeed.DataError, OSError) as e:
        print(f"torch_ddp: {e}", file=sys.stderr)
        sys.exit(2 if isinstance(e, ringfeed.UsageError) else 1)
