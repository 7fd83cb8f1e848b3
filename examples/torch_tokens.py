#!/usr/bin/env python3
"""A small causal transformer on byte-level tokens, fed by ringfeed.Loader or by np.memmap.

    examples/torch_tokens.py                            # the default corpus, both loaders
    examples/torch_tokens.py --corpus FILE_OR_DIR --loader ringfeed --steps 1000
    examples/torch_tokens.py --data tokens.rfd --loader ringfeed

The corpus: the bytes of text files, concatenated in sorted path order (each file once, symlinks
resolved), are the tokens: vocabulary 256. The default is the first of these holding at least
64 KiB: /usr/share/common-licenses (the license texts of base-files, on every Debian and Ubuntu
system), /usr/share/doc/*/copyright (every installed package's), the Python standard library's
.py files (wherever Python runs). It prints which one it took, and why it passed over the others.

Conversion, under --work: tokens.bin, the corpus as flat uint16 (what the memmap loader reads);
tokens.npy, rows of --context + 1 tokens, row i = tokens[i*context : i*context + context + 1]
(inputs and next-token targets in one row); and `ringfeed-convert npy --images tokens.npy -o
tokens.rfd`: uint16 ids, stored exactly, no labels. --data takes an existing .rfd of id rows
instead (the memmap loader then needs --bin).

The two loaders, each feeding the same model from the same initial weights:
  ringfeed  ringfeed.Loader(tokens.rfd): whole rows, every row once per epoch in a seeded window
            shuffle; id datasets come as their stored integers (no dtype, no normalization)
  memmap    the usual one (nanoGPT's get_batch): np.memmap of tokens.bin, --batch-size random
            offsets, each window copied out, widened to int64 and stacked
For each: tokens/s of the loader alone (batches as int64 tensors on the device, no model), then
of training --steps steps, and the loss at the start and the end. bf16 autocast on a GPU.
"""

import argparse
import glob
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

import ringfeed

VOCAB = 256
MIN_CORPUS = 64 * 1024
REPO_CONVERT = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "build",
                            "bin", "ringfeed-convert")


# --- The model ------------------------------------------------------------------------------------

def causal_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    if hasattr(F, "scaled_dot_product_attention"):  # torch >= 2.0: fused kernels
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)
    t = q.shape[-2]
    att = (q @ k.transpose(-2, -1)) * q.shape[-1] ** -0.5
    mask = torch.ones(t, t, dtype=torch.bool, device=q.device).triu(1)
    return att.masked_fill(mask, float("-inf")).softmax(-1) @ v


class Block(nn.Module):
    """Pre-norm transformer block: causal self-attention, then a 4x MLP, each residual."""

    def __init__(self, d: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, t, 3, self.heads, d // self.heads).permute(
            2, 0, 3, 1, 4)
        x = x + self.proj(causal_attention(q, k, v).transpose(1, 2).reshape(b, t, d))
        return x + self.mlp(self.ln2(x))


class TinyGPT(nn.Module):
    def __init__(self, context: int, layers: int, d: int, heads: int) -> None:
        super().__init__()
        self.tok, self.pos = nn.Embedding(VOCAB, d), nn.Embedding(context, d)
        self.blocks = nn.Sequential(*[Block(d, heads) for _ in range(layers)])
        self.ln, self.head = nn.LayerNorm(d), nn.Linear(d, VOCAB, bias=False)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        pos = torch.arange(ids.shape[1], device=ids.device)
        return self.head(self.ln(self.blocks(self.tok(ids) + self.pos(pos))))


# --- The corpus and its conversion ---------------------------------------------------------------

def corpus_sources():
    """(name, files) candidates, best first."""
    stdlib = sysconfig.get_paths()["stdlib"]
    return [("/usr/share/common-licenses", sorted(glob.glob("/usr/share/common-licenses/*"))),
            ("/usr/share/doc/*/copyright", sorted(glob.glob("/usr/share/doc/*/copyright"))),
            (f"{stdlib}/**/*.py", sorted(glob.glob(f"{stdlib}/**/*.py", recursive=True)))]


def unique_files(paths):
    """Regular files among `paths` (directories expanded), each once by its real path."""
    seen, out = set(), []
    for p in paths:
        files = (sorted(os.path.join(d, f) for d, _, fs in os.walk(p) for f in fs)
                 if os.path.isdir(p) else [p])
        for f in files:
            real = os.path.realpath(f)
            if real not in seen and os.path.isfile(real):
                seen.add(real)
                out.append(real)
    return out


def read_corpus(paths, name: str) -> bytes:
    parts = []
    for f in unique_files(paths):
        try:
            with open(f, "rb") as fh:
                parts.append(fh.read())
        except OSError as e:  # an unreadable file is skipped, not fatal
            print(f"corpus: skipping {f}: {e.strerror}", file=sys.stderr)
    data = b"".join(parts)
    print(f"corpus: {name}: {len(parts)} files, {len(data):,} bytes")
    return data


def default_corpus() -> bytes:
    for name, files in corpus_sources():
        data = read_corpus(files, name) if files else b""
        if len(data) >= MIN_CORPUS:
            return data
        print(f"corpus: {name} holds {len(data):,} bytes, under {MIN_CORPUS:,}; trying the next")
    raise ringfeed.UsageError("no default corpus found; name one with --corpus")


def find_convert(given) -> str:
    for tool in (given, os.environ.get("RINGFEED_CONVERT"), shutil.which("ringfeed-convert"),
                 REPO_CONVERT):
        if tool and os.access(tool, os.X_OK):
            return tool
    raise ringfeed.UsageError("ringfeed-convert not found: give --convert, set RINGFEED_CONVERT, "
                              "put it on PATH or build it (build/bin/ringfeed-convert)")


def convert(corpus: bytes, work: str, context: int, convert_tool: str):
    """Writes work/tokens.bin and work/tokens.rfd; returns their paths."""
    tokens = np.frombuffer(corpus, dtype=np.uint8).astype(np.uint16)
    rows = (len(tokens) - 1) // context
    if rows < 1:
        raise ringfeed.UsageError(f"the corpus ({len(tokens)} tokens) is shorter than one row of "
                                  f"{context + 1}")
    os.makedirs(work, exist_ok=True)
    bin_path, npy_path, rfd_path = (os.path.join(work, f"tokens.{ext}")
                                    for ext in ("bin", "npy", "rfd"))
    tokens.tofile(bin_path)
    starts = np.arange(rows)[:, None] * context
    np.save(npy_path, tokens[starts + np.arange(context + 1)])  # (rows, context + 1) uint16
    cmd = [convert_tool, "npy", "--images", npy_path, "-o", rfd_path, "-q"]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        raise ringfeed.UsageError(f"{' '.join(cmd)} failed: {done.stderr.strip()}")
    os.unlink(npy_path)
    print(f"converted: {len(tokens):,} tokens -> {rfd_path}: {rows:,} rows of {context + 1} "
          f"uint16 ({os.path.getsize(rfd_path):,} bytes); {bin_path} for the memmap loader")
    return bin_path, rfd_path


# --- The two loaders: endless streams of (B, context + 1) int64 id tensors on the device ---------

def int64_ids(samples: ringfeed.Tensor) -> torch.Tensor:
    """A batch of stored ids as the int64 tensor nn.Embedding takes (one copy: the widening).
    torch.from_dlpack takes int32 and int64 ids, and uint16 where torch has torch.uint16 (2.3
    and later); an older torch has no uint16, so uint16 ids go through numpy (host batches)."""
    if samples.dtype == "uint16" and not hasattr(torch, "uint16"):
        if samples.device != "cpu":
            raise ringfeed.UsageError(f"torch {torch.__version__} has no uint16 to take the GPU "
                                      f"batches of uint16 ids: use --device cpu, torch >= 2.3, or "
                                      f"ids stored as int32 (ringfeed-convert --dtype int32)")
        return torch.from_numpy(samples.numpy().astype(np.int64))
    return torch.from_dlpack(samples).long()


def ringfeed_batches(rfd: str, args, dev: torch.device):
    loader = ringfeed.Loader(rfd, args.batch_size, device=dev.type, seed=args.seed,
                             drop_last=True, io=args.io)
    info = loader.dataset
    if len(info.shape) != 1 or info.shape[0] < args.context + 1 or info.classes:
        raise ringfeed.UsageError(f"{rfd}: samples of shape {info.shape} ({info.dtype}); this "
                                  f"needs rows of --context + 1 = {args.context + 1} or more ids")
    if len(loader) == 0:
        raise ringfeed.UsageError(f"{rfd}: {info.samples} rows, fewer than one batch")
    while True:
        for samples, _ in loader:  # the labels of a dataset without labels: zeros, unused
            yield int64_ids(samples)[:, :args.context + 1]


def memmap_batches(bin_path: str, args, dev: torch.device):
    """nanoGPT's get_batch: random windows of a flat uint16 token file, pinned and copied to a
    GPU (non_blocking) where there is one."""
    gen = torch.Generator().manual_seed(args.seed)
    n = os.path.getsize(bin_path) // 2
    if n < args.context + 1:
        raise ringfeed.UsageError(f"{bin_path}: {n} tokens, fewer than {args.context + 1}")
    while True:
        data = np.memmap(bin_path, dtype=np.uint16, mode="r")  # anew per batch, as nanoGPT does
        ix = torch.randint(n - args.context, (args.batch_size,), generator=gen)
        rows = torch.stack([torch.from_numpy(data[i:i + args.context + 1].astype(np.int64))
                            for i in ix.tolist()])
        yield rows.pin_memory().to(dev, non_blocking=True) if dev.type == "cuda" else rows


# --- Measuring ---------------------------------------------------------------------------------

def sync(dev: torch.device) -> None:
    if dev.type == "cuda":
        torch.cuda.synchronize()


def loader_alone(batches, args, dev: torch.device) -> float:
    """tokens/s of --steps batches, nothing else done with them."""
    next(batches)  # start-up (threads, first reads) left out, as the training's first step is
    sync(dev)
    t0 = time.perf_counter()
    for _ in range(args.steps):
        next(batches)
    sync(dev)
    return args.steps * args.batch_size * args.context / (time.perf_counter() - t0)


def train(batches, args, dev: torch.device):
    """Trains a fresh model --steps steps; returns (tokens/s after the first step, first loss,
    mean loss of the last 10 steps)."""
    torch.manual_seed(args.seed)
    model = TinyGPT(args.context, args.layers, args.d_model, args.heads).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.1)
    losses = []
    t0 = None
    for step in range(args.steps + 1):
        if step == 1:  # the clock starts after the first step (lazy start-up of both sides)
            sync(dev)
            t0 = time.perf_counter()
        rows = next(batches)
        x, y = rows[:, :-1], rows[:, 1:]
        with torch.autocast(device_type=dev.type, dtype=torch.bfloat16, enabled=dev.type == "cuda"):
            logits = model(x)
            loss = F.cross_entropy(logits.float().reshape(-1, VOCAB), y.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        losses.append(loss.detach())
    sync(dev)
    rate = args.steps * args.batch_size * args.context / (time.perf_counter() - t0)
    losses = torch.stack(losses).float().cpu()
    return rate, float(losses[0]), float(losses[-10:].mean())


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--corpus", nargs="+", help="text files or directories (default: see above)")
    p.add_argument("--data", help="an existing .rfd of id rows, instead of converting a corpus")
    p.add_argument("--bin", help="with --data: the flat uint16 token file for the memmap loader")
    p.add_argument("--work", default=os.path.join(tempfile.gettempdir(), "ringfeed-tokens"),
                   help="where the conversion writes tokens.bin and tokens.rfd "
                   "(default: %(default)s)")
    p.add_argument("--convert", help="ringfeed-convert (default: $RINGFEED_CONVERT, PATH, "
                   "build/bin)")
    p.add_argument("--loader", choices=["ringfeed", "memmap", "both"], default="both")
    p.add_argument("--steps", type=int, default=200, help="steps per loader (and batches timed "
                   "for the loader alone)")
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--context", type=int, default=128)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--d-model", type=int, default=128)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--device", choices=["auto", "cuda", "cpu"], default="auto")
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's)")
    p.add_argument("--io", choices=["direct", "buffered", "pread"], default="direct")
    args = p.parse_args()
    if min(args.steps, args.batch_size, args.context, args.layers, args.heads) < 1 \
            or args.d_model % args.heads:
        p.error("--steps, --batch-size, --context, --layers and --heads must be positive, and "
                "--d-model a multiple of --heads")
    if args.data and args.corpus:
        p.error("--data and --corpus exclude each other")
    if args.threads:
        torch.set_num_threads(args.threads)
    cuda = torch.cuda.is_available() and ringfeed.cuda_available()
    if args.device == "cuda" and not cuda:
        raise ringfeed.UsageError("--device cuda: torch or this ringfeed build has no CUDA GPU")
    dev = torch.device("cuda" if args.device == "cuda" or (args.device == "auto" and cuda)
                       else "cpu")

    if args.data:
        rfd, bin_path = args.data, args.bin
    else:
        corpus = (read_corpus(args.corpus, " ".join(args.corpus)) if args.corpus
                  else default_corpus())
        bin_path, rfd = convert(corpus, args.work, args.context, find_convert(args.convert))
    kinds = ["ringfeed", "memmap"] if args.loader == "both" else [args.loader]
    if "memmap" in kinds and not bin_path:
        raise ringfeed.UsageError("the memmap loader needs --bin (the flat uint16 tokens) with "
                                  "--data")

    print(f"model: {args.layers} layers, d_model {args.d_model}, {args.heads} heads, context "
          f"{args.context}, vocabulary {VOCAB}; batch {args.batch_size}, {args.steps} steps on "
          f"{dev}"
          + (" (bf16 autocast)" if dev.type == "cuda" else " (float32)"))
    for kind in kinds:
        make = ((lambda: ringfeed_batches(rfd, args, dev)) if kind == "ringfeed"
                else (lambda: memmap_batches(bin_path, args, dev)))
        alone = loader_alone(make(), args, dev)
        rate, first, last = train(make(), args, dev)
        print(f"{kind:8s}: loader alone {alone:,.0f} tokens/s; training {rate:,.0f} tokens/s, "
              f"loss {first:.3f} -> {last:.3f} (mean of the last 10 steps)", flush=True)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (ringfeed.UsageError, ringfeed.DataError, OSError) as e:
        print(f"torch_tokens: {e}", file=sys.stderr)
        sys.exit(2 if isinstance(e, ringfeed.UsageError) else 1)
