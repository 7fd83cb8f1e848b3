#!/usr/bin/env python3
"""Trains torchvision's ResNet-50 on decoded JPEGs from ringfeed.Loader, and times it.

    examples/torch_resnet50.py --data imagenet-train.rfd --steps 200            # one GPU
    torchrun --nproc_per_node=8 examples/torch_resnet50.py --data train.rfd     # DDP, NCCL
    mpirun -np 2 --bind-to none python3 examples/torch_resnet50.py --data train.rfd
    examples/torch_resnet50.py --data train.rfd --compute-alone                 # no data
    examples/torch_resnet50.py --dataloader train/                              # the baseline
    examples/torch_resnet50.py --data train.rfd --device cpu --arch resnet18 --image-size 32

The dataset is `ringfeed-convert images train/ -o train.rfd` of an ImageFolder tree. The loader
decodes each batch into `--image-size` crops (RandomResizedCrop and a flip, torchvision's), on a
GPU as bfloat16 NHWC normalized with ImageNet's statistics, and the model takes its NCHW view
(channels_last strides, no copy) under bf16 autocast; labels are int64. On the CPU: float32 NCHW,
no autocast. SGD with momentum 0.9 and weight decay 1e-4, its learning rate 0.1 x the global
batch / 256, ramped linearly over the first --warmup-steps steps.

What is timed: --warm steps first (cuDNN's choices, the loader's start), then --steps steps
between two torch.cuda.synchronize() calls; the run prints one JSON line (rank 0) with
samples/s over all ranks, and the host time spent taking batches (next() and from_dlpack, or the
DataLoader's next() and the copy to the GPU queued), and each rank's timed steps under "ranks":
the wait in next(), the host's launch time, and on a GPU the model's stream busy with the step and
idle before it (CUDA events). Three modes, on the same model and batch:
  (default)        batches from ringfeed.Loader(--data, ...)
  --compute-alone  one batch taken once (from --data, or --dataloader) and kept on the device;
                   every step trains on it: the model's speed without data
  --dataloader DIR the baseline: torchvision's ImageFolder(DIR) with RandomResizedCrop,
                   RandomHorizontalFlip, ToTensor and Normalize, DataLoader(--workers workers,
                   default every core of this rank's share, pin_memory, persistent workers),
                   each batch copied to the GPU (non_blocking) as channels_last

Several processes: under torchrun (LOCAL_RANK, RANK, WORLD_SIZE) or Open MPI's mpirun
(OMPI_COMM_WORLD_*; one machine unless MASTER_ADDR is set), one process a GPU, the model in
DistributedDataParallel; the loader is given rank and world_size (each rank reads its part of
every epoch, the same number of batches on each), the DataLoader a DistributedSampler. --batch is
per rank.

--checkpoint PATH saves the model, the optimizer, the learning-rate schedule, the step and the
loader's state_dict() at the end (rank 0; written to a temporary name and renamed over PATH, as
examples/torch_train.py does); --resume PATH restores them, and the batches go on from where the
saved run's stopped (the DataLoader baseline has no such state: it starts its epoch again).
Exit status: 0, 1 a data or file error, 2 a usage error (one line naming it).
"""

import argparse
import ast
import json
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_train  # noqa: E402  (the atomic checkpoint write)

import ringfeed  # noqa: E402

MEAN = (0.485, 0.456, 0.406)  # ImageNet's, as the loader normalizes decoded images by default
STD = (0.229, 0.224, 0.225)
ARCHS = ("resnet18", "resnet34", "resnet50", "resnet101")


def make_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--data", help="the dataset of JPEG records (ringfeed-convert images)")
    src.add_argument("--dataloader", metavar="DIR",
                     help="the baseline: this ImageFolder through torchvision and a DataLoader")
    p.add_argument("--batch", type=int, default=256, help="samples a step on each rank")
    p.add_argument("--steps", type=int, default=100, help="timed steps")
    p.add_argument("--warm", type=int, default=20, help="steps before the timed ones")
    p.add_argument("--image-size", type=int, default=224)
    p.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    p.add_argument("--arch", choices=ARCHS, default="resnet50")
    p.add_argument("--compute-alone", action="store_true",
                   help="train on one batch already on the device: the model without data")
    p.add_argument("--lr", type=float, default=None,
                   help="peak learning rate (default 0.1 x the global batch / 256)")
    p.add_argument("--warmup-steps", type=int, default=10, help="linear learning-rate ramp")
    p.add_argument("--seed", type=int, default=1, help="the initial weights and the order")
    p.add_argument("--image-decoder", choices=["auto", "nvjpeg", "cpu"], default=None,
                   help="the loader's image_decoder (default: the loader's own)")
    p.add_argument("--image-threads", type=int, default=None,
                   help="the loader's image_threads (default: the loader's own)")
    p.add_argument("--image-cpu-share", type=float, default=None,
                   help="the loader's image_cpu_share (default: the loader's own)")
    p.add_argument("--loader-option", action="append", default=[], metavar="NAME=VALUE",
                   help="any other ringfeed.Loader option (prefetch=6, shuffle_window=16); the "
                        "value is read as a Python literal where it is one")
    p.add_argument("--io", choices=["direct", "buffered", "pread"], default=None,
                   help="the loader's reads (default: the loader's own)")
    p.add_argument("--workers", type=int, default=None,
                   help="--dataloader's workers (default: the cores of this rank's share)")
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    p.add_argument("--checkpoint", help="save model, optimizer and loader state here at the end")
    p.add_argument("--resume", help="continue from this checkpoint")
    p.add_argument("--profile", metavar="FILE",
                   help="after the timed steps, profile 6 more with torch.profiler (CPU and CUDA) "
                        "and write rank 0's Chrome trace here")
    return p


def check_args(p: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    if args.batch < 1 or args.steps < 1 or args.warm < 0 or args.warmup_steps < 0:
        p.error("--batch and --steps must be positive, --warm and --warmup-steps not negative")
    if args.image_size < 8:
        p.error("--image-size must be 8 or more")
    if (args.workers is not None and args.workers < 0) or (args.threads or 1) < 1:
        p.error("--workers must not be negative, --threads must be positive")
    loader_flags = (args.image_decoder, args.image_threads, args.image_cpu_share, args.io)
    if args.dataloader and (any(f is not None for f in loader_flags) or args.loader_option):
        p.error("--image-decoder, --image-threads, --image-cpu-share, --io and --loader-option "
                "are the ringfeed loader's (--data)")
    for o in args.loader_option:
        if "=" not in o or not o.split("=", 1)[0].isidentifier():
            p.error(f"--loader-option wants NAME=VALUE, got {o!r}")


def process_group() -> tuple:
    """(rank, world size, local rank): torchrun's variables, else Open MPI's (mapped to
    torchrun's, MASTER_ADDR 127.0.0.1 and MASTER_PORT 29500 unless set), else one process."""
    env = os.environ
    if "LOCAL_RANK" not in env and "OMPI_COMM_WORLD_RANK" in env:
        env["RANK"] = env["OMPI_COMM_WORLD_RANK"]
        env["WORLD_SIZE"] = env["OMPI_COMM_WORLD_SIZE"]
        env["LOCAL_RANK"] = env.get("OMPI_COMM_WORLD_LOCAL_RANK", env["RANK"])
        env.setdefault("MASTER_ADDR", "127.0.0.1")
        env.setdefault("MASTER_PORT", "29500")
    if "LOCAL_RANK" not in env:
        return 0, 1, 0
    return int(env["RANK"]), int(env["WORLD_SIZE"]), int(env["LOCAL_RANK"])


def local_world() -> int:
    return int(os.environ.get("LOCAL_WORLD_SIZE",
                              os.environ.get("OMPI_COMM_WORLD_LOCAL_SIZE", "1")))


def build_model(arch: str, classes: int, dev: torch.device) -> torch.nn.Module:
    import torchvision
    model = getattr(torchvision.models, arch)(num_classes=classes)
    model = model.to(dev)
    if dev.type == "cuda":
        model = model.to(memory_format=torch.channels_last)
    return model


class RingfeedBatches:
    """Batches of ringfeed.Loader as the model's (x, y), epoch after epoch."""

    def __init__(self, args, dev: torch.device, rank: int, world: int):
        cuda = dev.type == "cuda"
        options = dict(image_size=args.image_size, device="cuda" if cuda else "cpu",
                       dtype="bfloat16" if cuda else "float32", layout="NHWC" if cuda else "NCHW",
                       rank=rank, world_size=world, seed=args.seed, drop_last=True)
        for name in ("image_decoder", "image_threads", "image_cpu_share", "io"):
            if getattr(args, name) is not None:
                options[name] = getattr(args, name)
        for o in args.loader_option:
            name, text = o.split("=", 1)
            try:
                options[name] = ast.literal_eval(text)
            except (ValueError, SyntaxError):
                options[name] = text
        info = ringfeed.dataset_info(args.data)
        if info.media_type != "image/jpeg":
            raise ringfeed.UsageError(f"--data {args.data}: not a dataset of JPEG records "
                                      f"(ringfeed-convert images makes one)")
        try:
            self.loader = ringfeed.Loader(args.data, args.batch, **options)
        except TypeError as e:  # a ringfeed from before the option
            if "image_decoder" not in options or "image_decoder" not in str(e):
                raise
            raise ringfeed.UsageError(f"--image-decoder: this ringfeed's Loader has no "
                                      f"image_decoder option ({e})") from None
        self.classes = info.classes
        self.cuda = cuda
        self.batches = iter(())

    def __next__(self):
        while True:
            try:
                x, y = next(self.batches)
                break
            except StopIteration:
                self.batches = iter(self.loader)  # the next epoch
        x, y = torch.from_dlpack(x), torch.from_dlpack(y)  # no copy; the stream waits
        return (x.permute(0, 3, 1, 2) if self.cuda else x), y  # NCHW view, channels_last strides

    def state_dict(self):
        return self.loader.state_dict()

    def load_state_dict(self, state):
        self.loader.load_state_dict(state)

    def stats(self):
        s = self.loader.stats()
        out = {k: s.get(k) for k in ("image_threads", "image_busy_share", "wait_share",
                                     "wait_seconds", "image_wait_seconds", "seconds",
                                     "reader_held_seconds", "bytes_read", "disk_gbps",
                                     "records_skipped")}
        out["loader"] = repr(self.loader)  # its decoder's figures among them
        return out

    def close(self):
        self.loader.close()


class DataLoaderBatches:
    """The baseline: torchvision's ImageFolder and transforms in a DataLoader, epoch after epoch."""

    def __init__(self, args, dev: torch.device, rank: int, world: int):
        import torchvision.datasets as datasets
        import torchvision.transforms as T
        self.dataset = datasets.ImageFolder(args.dataloader, T.Compose([
            T.RandomResizedCrop(args.image_size), T.RandomHorizontalFlip(), T.ToTensor(),
            T.Normalize(MEAN, STD)]))
        self.classes = len(self.dataset.classes)
        self.workers = args.workers if args.workers is not None else max(
            1, len(os.sched_getaffinity(0)) // local_world())
        self.sampler = None
        if world > 1:
            self.sampler = torch.utils.data.distributed.DistributedSampler(
                self.dataset, num_replicas=world, rank=rank, seed=args.seed, drop_last=True)
        self.loader = torch.utils.data.DataLoader(
            self.dataset, batch_size=args.batch, shuffle=self.sampler is None,
            sampler=self.sampler, num_workers=self.workers, pin_memory=dev.type == "cuda",
            drop_last=True, persistent_workers=self.workers > 0)
        self.dev = dev
        self.epoch = 0
        self.batches = iter(())

    def __next__(self):
        while True:
            try:
                x, y = next(self.batches)
                break
            except StopIteration:
                if self.sampler is not None:
                    self.sampler.set_epoch(self.epoch)
                self.epoch += 1
                self.batches = iter(self.loader)
        x = x.to(self.dev, non_blocking=True)
        if self.dev.type == "cuda":
            x = x.contiguous(memory_format=torch.channels_last)
        return x, y.to(self.dev, non_blocking=True)

    def state_dict(self):
        return None  # a DataLoader keeps no position

    def load_state_dict(self, state):
        pass

    def stats(self):
        return {"workers": self.workers}

    def close(self):
        self.batches = iter(())


class OneBatch:
    """--compute-alone: one batch of the source, kept on the device, every step. The source is
    closed once the batch is taken: none of its threads runs beside the model."""

    def __init__(self, source):
        x, y = next(source)
        self.x, self.y = x.clone(), y.clone()  # the model's own memory, not the loader's
        self.state = source.state_dict()
        source.close()

    def __next__(self):
        return self.x, self.y

    def state_dict(self):
        return self.state

    def stats(self):
        return {}

    def close(self):
        pass


def take_quantiles(takes_ns) -> dict:
    """The timed steps' waits in next(): median, 90th percentile and largest, ms."""
    if not takes_ns:
        return {}
    ordered = sorted(takes_ns)
    pick = lambda q: ordered[min(len(ordered) - 1, int(q * len(ordered)))] / 1e6
    return {"p50": round(pick(0.5), 3), "p90": round(pick(0.9), 3),
            "max": round(ordered[-1] / 1e6, 3)}


def step_timeline(takes_ns, launches_ns, marks) -> dict:
    """One rank's timed steps, ms each: the wait in next() (take_ms), the host's time launching
    the step (launch_ms), and on a GPU the model's stream from the step's start to its end
    (step_ms) and idle before it (gap_ms: from the previous step's end to this one's start, which
    includes a wait for the batch's decode; 0 for the first), with their sums."""
    ms = lambda v: [round(t / 1e6, 2) for t in v]
    out = {"take_ms": ms(takes_ns), "launch_ms": ms(launches_ns)}
    if marks:
        step_ms = [a.elapsed_time(b) for a, b in marks]
        gap_ms = [0.0] + [marks[i - 1][1].elapsed_time(marks[i][0]) for i in range(1, len(marks))]
        out["step_ms"] = [round(t, 2) for t in step_ms]
        out["gap_ms"] = [round(t, 2) for t in gap_ms]
    out["sums_ms"] = {k[:-3]: round(sum(v), 1) for k, v in out.items()}
    return out


def profile_steps(path: str, rank: int, cuda: bool, steps) -> None:
    """Runs `steps` under torch.profiler; rank 0 writes the Chrome trace to `path`."""
    from torch.profiler import ProfilerActivity, profile
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    with profile(activities=activities) as prof:
        steps()
        if cuda:
            torch.cuda.synchronize()
    if rank == 0:
        prof.export_chrome_trace(path)


def main() -> int:
    p = make_parser()
    args = p.parse_args()
    check_args(p, args)
    if args.threads:
        torch.set_num_threads(args.threads)
    rank, world, local = process_group()
    if args.device == "cuda":
        if not (torch.cuda.is_available() and ringfeed.cuda_available()):
            raise ringfeed.UsageError("--device cuda: torch or this ringfeed build has no CUDA "
                                      "GPU (--device cpu)")
        dev = torch.device("cuda", local)
        torch.cuda.set_device(dev)  # the loader's device='cuda' is this GPU too
        torch.backends.cudnn.benchmark = True
    else:
        dev = torch.device("cpu")
    if world > 1:
        dist.init_process_group("nccl" if dev.type == "cuda" else "gloo")
    try:
        return train(args, dev, rank, world)
    finally:
        if world > 1:
            dist.destroy_process_group()


def train(args, dev: torch.device, rank: int, world: int) -> int:
    cuda = dev.type == "cuda"
    mode = "compute_alone" if args.compute_alone else "dataloader" if args.dataloader else \
        "ringfeed"
    source = (DataLoaderBatches if args.dataloader else RingfeedBatches)(args, dev, rank, world)
    torch.manual_seed(args.seed)
    net = build_model(args.arch, source.classes, dev)
    model = net
    if world > 1:
        model = torch.nn.parallel.DistributedDataParallel(net, device_ids=[dev.index] if cuda
                                                          else None)
    lr = args.lr if args.lr is not None else 0.1 * args.batch * world / 256
    opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9, weight_decay=1e-4)
    ramp = max(1, args.warmup_steps)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / ramp))
    step = 0
    if args.resume:
        state = torch.load(args.resume, map_location=dev)
        net.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
        sched.load_state_dict(state["scheduler"])
        if state.get("loader") is not None:
            source.load_state_dict(state["loader"])  # refuses another dataset, seed or batch
        step = state["step"]
    if args.compute_alone:
        source = OneBatch(source)

    def train_step(x, y):
        with torch.autocast(device_type=dev.type, dtype=torch.bfloat16, enabled=cuda):
            loss = F.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        return loss

    takes = []  # each timed step's wait in next(), ns
    launches = []  # each timed step's host time from next()'s return to its last launch, ns
    marks = []  # each timed step's (start, end) events on the model's stream (CUDA)

    def run(n, record=False):
        nonlocal step
        take_ns, loss = 0, None
        for _ in range(n):
            t0 = time.perf_counter_ns()
            x, y = next(source)
            t1 = time.perf_counter_ns()
            take_ns += t1 - t0
            start = None
            if record:
                takes.append(t1 - t0)
                if cuda:  # after the stream's wait for the batch (from_dlpack queued it)
                    start = torch.cuda.Event(enable_timing=True)
                    start.record()
            loss = train_step(x, y)
            if record:
                launches.append(time.perf_counter_ns() - t1)
                if cuda:
                    end = torch.cuda.Event(enable_timing=True)
                    end.record()
                    marks.append((start, end))
            step += 1
        return take_ns, loss

    def barrier():
        if cuda:
            torch.cuda.synchronize()
        if world > 1:
            dist.barrier(device_ids=[dev.index] if cuda else None)  # NCCL: on this rank's GPU

    _, loss = run(args.warm)
    warm_loss = float(loss) if loss is not None else None
    barrier()
    t0 = time.perf_counter()
    take_ns, loss = run(args.steps, record=True)
    barrier()  # the slowest rank's end
    secs = time.perf_counter() - t0
    loss = float(loss)
    if args.profile:
        profile_steps(args.profile, rank, cuda, lambda: run(6))

    if args.checkpoint and rank == 0:  # rank 0's loader state holds what every rank needs
        torch_train.save_checkpoint(args.checkpoint, {
            "model": net.state_dict(), "optimizer": opt.state_dict(),
            "scheduler": sched.state_dict(), "loader": source.state_dict(), "step": step})
    stats = source.stats()
    source.close()
    timeline = step_timeline(takes, launches, marks)
    timelines = [timeline]
    if world > 1:
        timelines = [None] * world
        dist.all_gather_object(timelines, timeline)
    if rank == 0:
        record = {
            "example": "torch_resnet50", "mode": mode, "arch": args.arch,
            "device": torch.cuda.get_device_name(dev) if cuda else "cpu", "world_size": world,
            "batch": args.batch, "image_size": args.image_size, "warm": args.warm,
            "steps": args.steps, "step": step, "seconds": round(secs, 4),
            "samples_per_s": round(args.steps * args.batch * world / secs, 1),
            "take_ms_per_step": round(take_ns / args.steps / 1e6, 3),
            "take_ms_quantiles": take_quantiles(takes),
            "take_ms": timeline["take_ms"],
            "ranks": timelines,
            "loss": round(loss, 5), "warm_loss": None if warm_loss is None else round(warm_loss, 5),
            "data": args.data or args.dataloader, "stats": stats}
        if args.image_decoder:
            record["image_decoder"] = args.image_decoder
        if args.resume:
            record["resumed"] = args.resume
        print(json.dumps(record), flush=True)
    if not torch.isfinite(torch.tensor(loss)):
        print(f"torch_resnet50: the loss is {loss} at step {step}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (ringfeed.UsageError, ringfeed.DataError, OSError) as e:
        print(f"torch_resnet50: {e}", file=sys.stderr)
        sys.exit(2 if isinstance(e, ringfeed.UsageError) else 1)
