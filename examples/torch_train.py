#!/usr/bin/env python3
"""Trains ringfeed's default CNN in PyTorch on a .rfd dataset read through ringfeed.Loader.

    examples/torch_train.py --data train.rfd --test test.rfd --epochs 5
    examples/torch_train.py --data train.rfd --steps 300 --checkpoint ck.pt   # stops at step 300
    examples/torch_train.py --data train.rfd --steps 600 --resume ck.pt       # continues to 600

On a GPU: bf16 autocast and channels_last; the loader decodes each batch on the GPU into
bfloat16, normalized, NHWC, and the model takes its NCHW view (channels_last strides, no copy).
On the CPU: float32 NCHW, normalized by the loader.

A checkpoint holds the model, the optimizer, the loader's state_dict() and the step, written to a
temporary name, fsynced and renamed (a crash leaves the previous one). --resume restores all of
it: the batches after a resume are exactly those an uninterrupted run would have seen, so on the
CPU, with the same --threads, the parameters end bit for bit as that run's.

Each epoch prints the train loss and accuracy, the test accuracy (with --test) and samples/s;
--print-every N prints the loss every N steps. Exit status: 0 trained, 1 a data or file error,
2 a usage error (one line naming it).
"""

import argparse
import os
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ringfeed_cnn  # noqa: E402  (the model and how a batch becomes its input)

import ringfeed  # noqa: E402


def make_parser(description: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--data", required=True, help="the training dataset (.rfd, a shard or pattern)")
    p.add_argument("--test", help="a test dataset, evaluated after every epoch (accuracy)")
    p.add_argument("--epochs", type=int, default=None,
                   help="epochs in all, counting a resumed run's (default: 1, or as many as "
                   "--steps takes where --steps is given)")
    p.add_argument("--steps", type=int, default=None,
                   help="stop after this many steps in all (counting a resumed run's); with "
                   "--epochs too, at whichever comes first")
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--lr", type=float, default=0.01, help="SGD, momentum 0.9, weight decay 5e-4")
    p.add_argument("--seed", type=int, default=1, help="initial weights and the loader's order")
    p.add_argument("--device", choices=["auto", "cuda", "cpu"], default="auto")
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's)")
    p.add_argument("--io", choices=["direct", "buffered", "pread"], default="direct",
                   help="the loader's reads (direct falls back to buffered where refused)")
    p.add_argument("--checkpoint", help="save model, optimizer and loader state here at the end "
                   "of every epoch and of the run")
    p.add_argument("--checkpoint-every", type=int, default=0, help="also every N steps")
    p.add_argument("--resume", help="continue from this checkpoint")
    p.add_argument("--print-every", type=int, default=0, help="print the loss every N steps")
    return p


def check_args(p: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    if args.epochs is None:
        # --steps alone trains as many epochs as its steps take (--steps 60 on a 26-batch epoch
        # stopped at step 26 when the default epoch count of 1 still applied).
        args.epochs = float("inf") if args.steps is not None else 1
    if args.batch_size < 1 or args.epochs < 0 or (args.steps is not None and args.steps < 0):
        p.error("--batch-size must be positive, --epochs and --steps not negative")
    if args.checkpoint_every < 0 or args.print_every < 0 or (args.threads or 1) < 1:
        p.error("--checkpoint-every, --print-every and --threads must be positive")
    if args.checkpoint_every and not args.checkpoint:
        p.error("--checkpoint-every needs --checkpoint")


def pick_device(name: str) -> torch.device:
    cuda = torch.cuda.is_available() and ringfeed.cuda_available()
    if name == "cuda" and not cuda:
        raise ringfeed.UsageError("--device cuda: torch or this ringfeed build has no CUDA GPU")
    return torch.device("cuda" if name == "cuda" or (name == "auto" and cuda) else "cpu")


def save_checkpoint(path: str, state: dict) -> None:
    """torch.save to a temporary name in the same directory, fsync, rename over `path`, fsync the
    directory: `path` is always a whole checkpoint, the new one or the previous one."""
    tmp = f"{path}.tmp-{os.getpid()}"
    try:
        with open(tmp, "wb") as f:
            torch.save(state, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    fd = os.open(os.path.dirname(os.path.abspath(path)), os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def open_test(args: argparse.Namespace, dev: torch.device, info) -> "ringfeed.Loader":
    """The --test loader (None without one): the whole test set in stored order, float32 NCHW,
    normalized with the training set's statistics (mean=, std=), as the model was trained."""
    if not args.test:
        return None
    test = ringfeed.Loader(args.test, args.batch_size, device=dev.type, dtype="float32",
                           normalize=True, mean=info.mean, std=info.std, shuffle="none",
                           io=args.io, rank=0, world_size=1)
    if test.dataset.shape != info.shape or test.dataset.classes != info.classes:
        raise ringfeed.UsageError(f"--test {args.test}: samples of shape {test.dataset.shape} in "
                                  f"{test.dataset.classes} classes; --data has {info.shape} in "
                                  f"{info.classes}")
    return test


def train_step(model: torch.nn.Module, opt: torch.optim.Optimizer, x: torch.Tensor,
               y: torch.Tensor, cuda: bool):
    """One SGD step; returns the loss and the logits (bf16 autocast on a GPU)."""
    with torch.autocast(device_type=x.device.type, dtype=torch.bfloat16, enabled=cuda):
        logits = model(x)
        loss = F.cross_entropy(logits, y)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    return loss, logits


def main() -> int:
    p = make_parser(__doc__.split("\n")[0])
    args = p.parse_args()
    check_args(p, args)
    if args.threads:
        torch.set_num_threads(args.threads)
    dev = pick_device(args.device)
    cuda = dev.type == "cuda"
    if cuda:
        torch.backends.cudnn.benchmark = True

    info = ringfeed_cnn.dataset_info(args.data)
    try:
        chw = ringfeed_cnn.image_shape(info)  # refuses token rows, ids, datasets without labels
    except ValueError as e:
        raise ringfeed.UsageError(str(e)) from None
    options = ringfeed_cnn.loader_options(info, cuda)
    train = ringfeed.Loader(args.data, args.batch_size, seed=args.seed, io=args.io, **options)
    test = open_test(args, dev, info)

    torch.manual_seed(args.seed)
    try:
        model = ringfeed_cnn.build_model(*chw, info.classes).to(dev)
    except ValueError as e:  # images too small for the pooling blocks
        raise ringfeed.UsageError(f"{args.data}: {e}") from None
    if cuda:
        model = model.to(memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9, weight_decay=5e-4)
    print(f"{info.paths[0]}: {info.samples} samples {'x'.join(map(str, chw))} {info.dtype}, "
          f"{info.classes} classes; {len(train)} batches of {args.batch_size} per epoch on {dev}"
          + (" (bf16 autocast, channels_last)" if cuda else " (float32)"))
    step = 0
    if args.resume:
        state = torch.load(args.resume, map_location=dev)
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
        train.load_state_dict(state["loader"])  # refuses another seed, batch size or dataset
        step = state["step"]
        print(f"resumed {args.resume}: step {step}, epoch {train.epoch} at sample "
              f"{train.position} of {train.epoch_samples}")

    def checkpoint() -> None:
        if args.checkpoint:
            save_checkpoint(args.checkpoint, {"model": model.state_dict(),
                                              "optimizer": opt.state_dict(),
                                              "loader": train.state_dict(), "step": step})

    steps = args.steps if args.steps is not None else float("inf")
    while train.epoch < args.epochs and step < steps:
        epoch, start = train.epoch, train.position
        loss_sum = torch.zeros((), device=dev)
        correct = torch.zeros((), dtype=torch.int64, device=dev)
        seen = 0
        t0 = time.perf_counter()
        for samples, labels in train:  # the rest of this epoch
            x = ringfeed_cnn.model_input(samples, options["layout"], chw)  # no copy
            y = torch.from_dlpack(labels)  # int64
            loss, logits = train_step(model, opt, x, y, cuda)
            step += 1
            seen += y.numel()
            loss_sum += loss.detach().float() * y.numel()
            correct += (logits.argmax(1) == y).sum()
            if args.print_every and step % args.print_every == 0:
                print(f"step {step}: loss {loss.item():.7g}", flush=True)
            if args.checkpoint_every and step % args.checkpoint_every == 0:
                checkpoint()
            if step >= steps:
                break
        if cuda:
            torch.cuda.synchronize()
        secs = time.perf_counter() - t0
        line = (f"epoch {epoch}" + (f" from sample {start}" if start else "")
                + (f" (stopped at step {step})" if train.epoch == epoch else "")
                + f": loss {float(loss_sum) / max(seen, 1):.4f}, train accuracy "
                f"{int(correct) / max(seen, 1):.2%}, {seen / secs:,.0f} samples/s")
        if test is not None:
            right, count = ringfeed_cnn.evaluate(model, test, chw, cuda)
            line += f", test accuracy {right / count:.2%} ({count} samples)"
        print(line, flush=True)
        checkpoint()
    stats = train.stats()
    print(f"{step} steps; the loader read {stats['bytes_read'] / 1e6:,.1f} MB "
          f"({stats['bytes_read'] / max(stats['seconds'], 1e-9) / 1e6:,.1f} MB/s) and waited "
          f"for data {stats['wait_share']:.1%} of the time")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (ringfeed.UsageError, ringfeed.DataError, OSError) as e:
        print(f"torch_train: {e}", file=sys.stderr)
        sys.exit(2 if isinstance(e, ringfeed.UsageError) else 1)
