#!/usr/bin/env python3
"""A small GPT trained on packed sequences from a weighted mixture of token corpora via ringfeed.

    examples/torch_tokens.py                          # two demo corpora it writes itself, mixed
    examples/torch_tokens.py --data web.rfd code.rfd --weights 0.7 0.3 --steps 2000 \\
        --checkpoint ck.pt                            # then again with --steps 4000 --resume
    examples/torch_tokens.py --doc-attention          # no attention across documents
    torchrun --nproc_per_node=2 examples/torch_tokens.py --device cuda --dtype bf16

The data. --data names token datasets (.rfd of `tokens` records, one a document: written by
ringfeed.DatasetWriter(records="tokens"), `ringfeed-convert text --tokenizer bytes`, `megatron`,
`jsonl`, or examples/tokenize_corpus.py); --weights mixes them (one weight a dataset). Without
--data it writes two demo corpora under --work, byte-level (ids 0-255), once (a later run reuses
them: a rewritten dataset has another id, and a checkpoint's loader state would not load):
  prose  English: the paragraphs of the license texts in /usr/share/common-licenses (Debian's
         base-files), then of Python's own documentation (pydoc_data.topics), a document each;
  code   Python: the standard library's .py files, a document each;
each up to --demo-bytes, mixed 0.7 prose and 0.3 code, the end-of-document id 256 appended by the
loader (--eod-token; with --data the default is none: ringfeed-convert text and tokenize_corpus.py
write their own). --vocab is the ids' range (default 257: bytes and the end-of-document id).

The loader. ringfeed.Loader([a, b], batch_size, sequence_length=L, weights=[...], eod_token=...)
packs each corpus's documents end to end into rows of L + 1 tokens (inputs [:, :-1], targets
[:, 1:]) and draws each row from one corpus by the weights; a mixture's stream has no end (each
corpus keeps its own epochs), one dataset's is epoch after epoch. A row's targets past its valid
length (`lengths`: an epoch's partial last row, a rank's empty row) are ignored in the loss.

The model. Decoder-only, pre-LayerNorm: token and learned position embeddings, --layers blocks of
causal self-attention (torch.nn.functional.scaled_dot_product_attention where torch has it, 2.0
on; else the softmax written out, as torch 1.13 needs) and a 4x GELU MLP, the output head tied to
the token embedding (its rows padded to a multiple of 64). AdamW (weight decay on matrices only),
a linear warm-up then a constant rate, gradients clipped to norm 1. bf16 autocast on a GPU
(--dtype).

--doc-attention: a token attends only to the earlier tokens of its own document within the row
(block-diagonal causal), and its position embedding counts from its document's start: the
batch's position_ids, which restart at 0 at each document (and at each row's start). The kernel:
flash-attn's flash_attn_varlen_func over the batch's cu_seqlens where flash_attn is installed (on
a GPU in bf16), else scaled_dot_product_attention with a boolean mask made from position_ids, else
(torch 1.13) the masked softmax written out.

Checkpoints. --checkpoint PATH saves the model, the optimizer, the step, the model's shape and
loader.state_dict() every --checkpoint-every steps and at the end (rank 0: its loader state is
the run's), to a temporary name, fsynced and renamed over PATH: PATH is always a whole checkpoint.
A checkpoint is never replaced by one of fewer steps, nor by a run that did not start from it:
a run without --resume refuses to start where PATH exists. --resume continues from PATH: the
batches after it are exactly those an uninterrupted run would have seen (on the CPU, with the same
--threads, the parameters end bit for bit the same). --steps counts the resumed run's steps too.

Under torchrun (RANK, WORLD_SIZE, LOCAL_RANK set): DistributedDataParallel, NCCL on GPUs (each
rank on the GPU of its LOCAL_RANK), gloo on the CPU; the loader takes the rank and world size from
torch.distributed (each rank its own rows; a resume may be at another world size); --batch-size
is per rank; rank 0 writes the demo corpora (the file system is shared) and the checkpoint.

Printed: the loss every --print-every steps (mean over those steps, rank 0's), tokens/s (all
ranks' input tokens, after the first step) and the share of time the loader made the training
wait (loader.stats()["wait_share"]). --compute-only trains on the first batch over and over (no
loader in the loop): the model's speed alone, to compare tokens/s with. Exit status: 0 trained,
1 a data or file error, 2 a usage error (one line naming it).
"""

import argparse
import itertools
import math
import os
import sys
import sysconfig
import time
from typing import NamedTuple, Optional

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

import ringfeed

BYTE_EOD = 256  # the byte tokenizer's end-of-document id: ringfeed-convert text's too
IGNORE = -100  # cross_entropy's ignore_index: targets past a row's valid length

try:  # variable-length flash attention, where installed (pip install flash-attn; GPUs only)
    from flash_attn import flash_attn_varlen_func
except ImportError:
    flash_attn_varlen_func = None


# --- Attention ----------------------------------------------------------------------------------

class Documents(NamedTuple):
    """What document-aware attention needs of one batch: the boolean mask [B, 1, L, L] (True:
    may attend) for the dense kernels, or for flash attention's varlen kernel the segments'
    cu_seqlens [S + 1] int32 over the B x L flattened positions and an upper bound of a segment's
    length."""

    mask: Optional[torch.Tensor]
    cu_seqlens: Optional[torch.Tensor]
    max_seqlen: int


def document_mask(position_ids: torch.Tensor) -> torch.Tensor:
    """[B, L] positions that restart at 0 at each document -> [B, 1, L, L] bool, True where query
    i may attend key j: j at or before i and in i's document, i.e. i - position_ids[i] <= j <= i
    (a segment starts position_ids[i] tokens before i). Block-diagonal causal, made without a
    segment id."""
    t = position_ids.shape[-1]
    i = torch.arange(t, device=position_ids.device)
    back = i[:, None] - i[None, :]  # i - j
    return ((back >= 0) & (back <= position_ids[:, :, None]))[:, None]


def causal_mask(t: int, device: torch.device) -> torch.Tensor:
    return torch.ones(t, t, dtype=torch.bool, device=device).tril()


def softmax_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                      mask: torch.Tensor) -> torch.Tensor:
    """Attention written out (torch 1.13 has no scaled_dot_product_attention): [B, H, L, D]; mask
    broadcasts to [B, H, L, L], True where a query may attend (each query has itself, so no row
    is all -inf)."""
    att = (q @ k.transpose(-2, -1)) * q.shape[-1] ** -0.5
    return att.masked_fill(~mask, float("-inf")).softmax(-1) @ v


def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
              docs: Optional[Documents]) -> torch.Tensor:
    """q, k, v [B, L, H, D] -> [B, L, H, D]: causal within each row (docs None), or within each
    document of a row (block-diagonal causal)."""
    b, t, h, d = q.shape
    if docs is not None and docs.cu_seqlens is not None:  # flash attention's varlen kernel
        out = flash_attn_varlen_func(q.reshape(b * t, h, d), k.reshape(b * t, h, d),
                                     v.reshape(b * t, h, d), docs.cu_seqlens, docs.cu_seqlens,
                                     docs.max_seqlen, docs.max_seqlen, causal=True)
        return out.view(b, t, h, d)
    q, k, v = (x.transpose(1, 2) for x in (q, k, v))  # [B, H, L, D]
    if hasattr(F, "scaled_dot_product_attention"):  # torch >= 2.0: fused kernels
        out = (F.scaled_dot_product_attention(q, k, v, is_causal=True) if docs is None
               else F.scaled_dot_product_attention(q, k, v, attn_mask=docs.mask))
    else:
        out = softmax_attention(q, k, v, causal_mask(t, q.device) if docs is None else docs.mask)
    return out.transpose(1, 2)


def attention_kernel(doc_attention: bool, dev: torch.device, bf16: bool) -> str:
    """Which kernel attention() runs, in words."""
    sdpa = hasattr(F, "scaled_dot_product_attention")
    if not doc_attention:
        return ("scaled_dot_product_attention (causal)" if sdpa
                else "softmax written out (causal; torch < 2.0)")
    if use_flash(dev, bf16):
        return "flash_attn_varlen_func over cu_seqlens (document-aware)"
    return ("scaled_dot_product_attention with a block-diagonal causal mask" if sdpa
            else "softmax written out with a block-diagonal causal mask (torch < 2.0)")


def use_flash(dev: torch.device, bf16: bool) -> bool:
    return flash_attn_varlen_func is not None and dev.type == "cuda" and bf16


# --- The model ----------------------------------------------------------------------------------

class Block(nn.Module):
    """Pre-LayerNorm: x + attention(ln(x)), then x + mlp(ln(x))."""

    def __init__(self, d: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x: torch.Tensor, docs: Optional[Documents]) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, t, 3, self.heads, d // self.heads).unbind(2)
        x = x + self.proj(attention(q, k, v, docs).reshape(b, t, d))
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    def __init__(self, vocab: int, context: int, layers: int, d: int, heads: int) -> None:
        super().__init__()
        rows = -(-vocab // 64) * 64  # the embedding's rows (and logits) padded to a multiple of 64
        self.tok, self.pos = nn.Embedding(rows, d), nn.Embedding(context, d)
        self.blocks = nn.ModuleList(Block(d, heads) for _ in range(layers))
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, rows, bias=False)
        self.head.weight = self.tok.weight  # tied
        for name, p in self.named_parameters():  # GPT-2's initialization
            if p.dim() == 2:  # the residual branches' last layers scaled down by depth
                residual = name.endswith(("proj.weight", "mlp.2.weight"))
                nn.init.normal_(p, 0.0, 0.02 / math.sqrt(2 * layers) if residual else 0.02)
            elif name.endswith("bias"):
                nn.init.zeros_(p)

    def forward(self, ids: torch.Tensor, positions: torch.Tensor,
                docs: Optional[Documents]) -> torch.Tensor:
        x = self.tok(ids) + self.pos(positions)
        for block in self.blocks:
            x = block(x, docs)
        return self.head(self.ln(x))


# --- The demo corpora ---------------------------------------------------------------------------

def paragraphs(text: str):
    for p in text.replace("\r\n", "\n").split("\n\n"):
        if p.strip():
            yield p.strip("\n")


def prose_documents():
    """English prose, a paragraph a document: the license texts, then Python's documentation."""
    seen = set()
    for f in sorted(os.listdir("/usr/share/common-licenses")
                    if os.path.isdir("/usr/share/common-licenses") else []):
        real = os.path.realpath(os.path.join("/usr/share/common-licenses", f))
        if real in seen or not os.path.isfile(real):
            continue
        seen.add(real)
        with open(real, encoding="utf-8", errors="replace") as fh:
            yield from paragraphs(fh.read())
    try:
        from pydoc_data.topics import topics
    except ImportError:  # a Python without its documentation
        return
    for name in sorted(topics):
        yield from paragraphs(topics[name])


def code_documents():
    """Python source, a file a document: the standard library's, in path order."""
    stdlib = sysconfig.get_paths()["stdlib"]
    for root, dirs, files in os.walk(stdlib):
        dirs.sort()
        dirs[:] = [d for d in dirs if d not in ("site-packages", "dist-packages", "__pycache__")]
        for f in sorted(files):
            if f.endswith(".py"):
                try:
                    with open(os.path.join(root, f), "rb") as fh:
                        yield fh.read()
                except OSError:
                    continue


def write_demo(path: str, documents, limit: int) -> None:
    """Byte-level documents (ids 0-255 as uint16, no end-of-document id: the loader appends it)
    up to `limit` bytes in all, through ringfeed.DatasetWriter (written under a temporary name,
    renamed by close)."""
    total = count = 0
    with ringfeed.DatasetWriter(path, records="tokens", dtype="uint16", labels=False,
                                chunk_size="64KiB") as w:
        for doc in documents:
            data = doc.encode("utf-8") if isinstance(doc, str) else doc
            if not data:
                continue
            data = data[:limit - total]
            w.write(np.frombuffer(data, dtype=np.uint8).astype(np.uint16))
            total += len(data)
            count += 1
            if total >= limit:
                break
    if count == 0:
        raise ringfeed.UsageError(f"{path}: no text found for this demo corpus; give --data")
    print(f"wrote {path}: {count:,} documents, {total:,} byte tokens", flush=True)


def demo_corpora(work: str, limit: int, rank: int, barrier) -> list:
    """The two demo corpora under `work` (written by rank 0 where missing): [prose, code]."""
    paths = [os.path.join(work, f"{name}-{limit}.rfd") for name in ("prose", "code")]
    if rank == 0:
        os.makedirs(work, exist_ok=True)
        for path, docs in zip(paths, (prose_documents(), code_documents())):
            if not os.path.exists(path):
                write_demo(path, docs, limit)
    barrier()
    return paths


# --- Training -----------------------------------------------------------------------------------

class Batch(NamedTuple):
    inputs: torch.Tensor  # [B, L] int64
    targets: torch.Tensor  # [B, L] int64, IGNORE past each row's valid length
    positions: torch.Tensor  # [L] or [B, L] (document-aware)
    docs: Optional[Documents]
    tokens: int  # B x L


def model_batch(seq: ringfeed.Sequences, L: int, doc_attention: bool, flash: bool) -> Batch:
    """A ringfeed.Sequences batch as the model's inputs, targets and positions (views of the
    loader's buffers but the targets, which are masked into a tensor of their own)."""
    tokens = torch.from_dlpack(seq.tokens)  # [B, L + 1] int64
    lengths = torch.from_dlpack(seq.lengths)  # [B]: L + 1, fewer in a partial row, 0 in a pad row
    # Target j (token j + 1) is real where j + 1 < length.
    valid = torch.arange(L, device=tokens.device) < (lengths - 1)[:, None]
    targets = tokens[:, 1:].masked_fill(~valid, IGNORE)
    docs = None
    if doc_attention:
        positions = torch.from_dlpack(seq.position_ids)  # [B, L], 0 at each document's start
        docs = (Documents(None, torch.from_dlpack(seq.cu_seqlens), L) if flash
                else Documents(document_mask(positions), None, L))
    else:
        positions = torch.arange(L, device=tokens.device)
    return Batch(tokens[:, :-1], targets, positions, docs, tokens.shape[0] * L)


def stream(loader: ringfeed.Loader, mixture: bool):
    """The loader's batches without end: a mixture's own stream, one dataset's epoch after
    epoch."""
    while True:
        n = 0
        for seq in loader:
            n += 1
            yield seq
        if mixture or n == 0:
            raise ringfeed.UsageError("the data holds no sequence" if n == 0 else
                                      "the mixture's stream ended")


def loss_of(model: nn.Module, batch: Batch, bf16: bool) -> torch.Tensor:
    """Mean cross-entropy over the batch's real targets (0 where it has none)."""
    with torch.autocast(device_type=batch.inputs.device.type, dtype=torch.bfloat16,
                        enabled=bf16):
        logits = model(batch.inputs, batch.positions, batch.docs)
    total = F.cross_entropy(logits.float().flatten(0, 1), batch.targets.flatten(),
                            ignore_index=IGNORE, reduction="sum")
    return total / (batch.targets != IGNORE).sum().clamp(min=1)


def lr_at(step: int, args: argparse.Namespace) -> float:
    """Linear warm-up over --warmup steps, then constant (a function of the step alone: a resumed
    run continues it, whatever its --steps)."""
    return args.lr * min(1.0, (step + 1) / max(args.warmup, 1))


def make_optimizer(model: nn.Module, args: argparse.Namespace) -> torch.optim.Optimizer:
    decay = [p for p in model.parameters() if p.dim() >= 2]
    rest = [p for p in model.parameters() if p.dim() < 2]
    return torch.optim.AdamW([{"params": decay, "weight_decay": args.weight_decay},
                              {"params": rest, "weight_decay": 0.0}],
                             lr=args.lr, betas=(0.9, 0.95))


# What a checkpoint's model must match to be resumed (the loader checks its own options).
MODEL_KEYS = ("vocab", "seq_len", "layers", "d_model", "heads", "doc_attention")


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


def sync(dev: torch.device) -> None:
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)


def train(args: argparse.Namespace, dev: torch.device, rank: int, world: int, dist) -> int:
    bf16 = args.dtype == "bf16"
    say = print if rank == 0 else (lambda *a, **k: None)
    barrier = dist.barrier if dist is not None else (lambda: None)
    if args.data:
        data, weights = args.data, args.weights
        eod = -1 if args.eod_token is None else args.eod_token
    else:
        data = demo_corpora(args.work, args.demo_bytes, rank, barrier)
        weights = args.weights or [0.7, 0.3]
        eod = BYTE_EOD if args.eod_token is None else args.eod_token
    mixture = weights is not None
    loader = ringfeed.Loader(data if mixture else data[0], args.batch_size,
                             sequence_length=args.seq_len, weights=weights, eod_token=eod,
                             seed=args.seed, device=dev.type, dtype="int64", io=args.io)
    assert (loader.rank, loader.world_size) == (rank, world)

    torch.manual_seed(args.seed)
    model = GPT(args.vocab, args.seq_len, args.layers, args.d_model, args.heads).to(dev)
    opt = make_optimizer(model, args)
    config = {k: getattr(args, k) for k in MODEL_KEYS}
    step = 0
    if args.resume:
        state = torch.load(args.checkpoint, map_location=dev)
        differ = [f"{k} {state['config'][k]} (--{k.replace('_', '-')} here {config[k]})"
                  for k in MODEL_KEYS if state["config"][k] != config[k]]
        if differ:
            raise ringfeed.UsageError(f"--resume: {args.checkpoint} is of another model: "
                                      + ", ".join(differ))
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
        loader.load_state_dict(state["loader"])  # refuses other data, weights, seed, batch, L
        step = state["step"]
    net = model
    if dist is not None:
        from torch.nn.parallel import DistributedDataParallel
        net = DistributedDataParallel(model, device_ids=[dev.index] if dev.type == "cuda"
                                      else None)

    params = sum(p.numel() for p in model.parameters())
    sources = " + ".join(f"{p} ({w:g})" for p, w in zip(data, weights)) if mixture else data[0]
    say(f"data: {sources}; "
        f"end-of-document id {eod if eod >= 0 else 'none'}; "
        f"rows of {args.seq_len} + 1 tokens, batch {args.batch_size} per rank x {world}")
    say(f"model: {args.layers} layers, d_model {args.d_model}, {args.heads} heads, vocabulary "
        f"{args.vocab}, {params:,} parameters; attention: "
        f"{attention_kernel(args.doc_attention, dev, bf16)}; on {dev}"
        + (f" x {world}" if world > 1 else "") + (" (bf16 autocast)" if bf16 else " (float32)"))
    if args.resume:
        say(f"resumed {args.checkpoint} at step {step}")

    def checkpoint() -> None:
        if args.checkpoint and rank == 0:
            save_checkpoint(args.checkpoint, {"model": model.state_dict(),
                                              "optimizer": opt.state_dict(), "step": step,
                                              "loader": loader.state_dict(), "config": config})

    batches = (model_batch(seq, args.seq_len, args.doc_attention, use_flash(dev, bf16))
               for seq in stream(loader, mixture))
    if args.compute_only:
        batches = itertools.repeat(next(batches))
    first = step
    tokens = 0  # all ranks' input tokens since the first step
    t0 = t_print = None
    loss_sum, losses = torch.zeros((), device=dev), 0
    while step < args.steps:
        batch = next(batches)
        if step == first:
            top = int(max(batch.inputs.max(), batch.targets.max()))  # the first batch's
            if top >= args.vocab:
                raise ringfeed.UsageError(f"the data holds id {top}, outside --vocab "
                                          f"{args.vocab}")
        for group in opt.param_groups:
            group["lr"] = lr_at(step, args)
        loss = loss_of(net, batch, bf16)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        step += 1
        loss_sum += loss.detach()
        losses += 1
        if step == first + 1:  # the clock starts after the first step (start-up on both sides)
            sync(dev)
            t0 = t_print = time.perf_counter()
            tokens_print = 0
        else:
            tokens += batch.tokens * world
            tokens_print += batch.tokens * world
        if step % args.print_every == 0 or step == args.steps:
            mean = float(loss_sum) / losses  # syncs
            now = time.perf_counter()
            rate = f", {tokens_print / (now - t_print):,.0f} tokens/s" if now > t_print and \
                tokens_print else ""
            say(f"step {step}: loss {mean:.7g}{rate}, the loader's wait so far "
                f"{loader.stats()['wait_share']:.1%}", flush=True)
            loss_sum.zero_()
            losses, t_print, tokens_print = 0, now, 0
        if args.checkpoint_every and step % args.checkpoint_every == 0:
            checkpoint()
    sync(dev)
    if step == first:
        say(f"{args.checkpoint} is at step {step}: nothing to do for --steps {args.steps}")
        return 0
    if not (args.checkpoint_every and step % args.checkpoint_every == 0):  # not saved just now
        checkpoint()
    secs = time.perf_counter() - t0
    stats = loader.stats()
    say(f"{step - first} steps to step {step}: {tokens / secs if secs > 0 else 0:,.0f} tokens/s "
        f"after the first step; the loader waited for data {stats['wait_share']:.1%} of the time"
        + (" (--compute-only: the loader ran once)" if args.compute_only else ""))
    return 0


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", nargs="+", help="token datasets (.rfd), mixed by --weights where "
                   "more than one (default: the two demo corpora)")
    p.add_argument("--weights", nargs="+", type=float, help="one a dataset (default for the demo "
                   "corpora: 0.7 0.3)")
    p.add_argument("--eod-token", type=int, default=None, help="the id the loader appends after "
                   f"each document (default: {BYTE_EOD} for the demo corpora, none with --data; "
                   "-1: none)")
    p.add_argument("--vocab", type=int, default=BYTE_EOD + 1, help="ids are below this "
                   "(default: %(default)s, bytes and the end-of-document id)")
    p.add_argument("--work", default=os.path.join(os.environ.get("TMPDIR", "/tmp"),
                                                  "ringfeed-gpt"),
                   help="where the demo corpora are written (default: %(default)s)")
    p.add_argument("--demo-bytes", type=int, default=1 << 20, help="byte tokens in each demo "
                   "corpus at most (default: %(default)s)")
    p.add_argument("--steps", type=int, default=200, help="train to this step, counting a resumed "
                   "run's (default: %(default)s)")
    p.add_argument("--batch-size", type=int, default=32, help="rows per step and rank")
    p.add_argument("--seq-len", type=int, default=128, help="input tokens a row (L)")
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--d-model", type=int, default=128)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--lr", type=float, default=2e-3)
    p.add_argument("--warmup", type=int, default=20, help="steps of linear warm-up")
    p.add_argument("--weight-decay", type=float, default=0.1)
    p.add_argument("--seed", type=int, default=1, help="initial weights and the loader's order")
    p.add_argument("--device", choices=["auto", "cuda", "cpu"], default="auto")
    p.add_argument("--dtype", choices=["auto", "bf16", "fp32"], default="auto",
                   help="bf16: autocast (GPU only); auto: bf16 on a GPU, fp32 on the CPU")
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's)")
    p.add_argument("--io", choices=["direct", "buffered", "pread"], default="direct",
                   help="the loader's reads (direct falls back to buffered where refused)")
    p.add_argument("--doc-attention", action="store_true",
                   help="attend within each document only, positions from its start")
    p.add_argument("--checkpoint", help="save model, optimizer, step and loader state here")
    p.add_argument("--checkpoint-every", type=int, default=0, help="also every N steps")
    p.add_argument("--resume", action="store_true", help="continue from --checkpoint")
    p.add_argument("--print-every", type=int, default=10)
    p.add_argument("--compute-only", action="store_true",
                   help="train on the first batch over and over: the model's speed alone")
    args = p.parse_args(argv)
    if min(args.steps, args.batch_size, args.seq_len, args.layers, args.heads, args.d_model,
           args.print_every, args.demo_bytes, args.vocab) < 1 or args.d_model % args.heads:
        p.error("--steps, --batch-size, --seq-len, --layers, --heads, --d-model, --print-every, "
                "--demo-bytes and --vocab must be positive, and --d-model a multiple of --heads")
    if args.checkpoint_every < 0 or args.warmup < 0 or (args.threads or 1) < 1:
        p.error("--checkpoint-every, --warmup and --threads must not be negative")
    if args.weights is not None and len(args.weights) != len(args.data or [None, None]):
        p.error(f"--weights: {len(args.weights)} weights for "
                f"{len(args.data) if args.data else 2} datasets")
    if args.weights is None and args.data and len(args.data) > 1:
        p.error("--weights: several datasets are mixed by weights, one a dataset")
    if (args.resume or args.checkpoint_every) and not args.checkpoint:
        p.error("--resume and --checkpoint-every need --checkpoint")
    if args.checkpoint and args.resume and not os.path.exists(args.checkpoint):
        p.error(f"--resume: {args.checkpoint} does not exist")
    if args.checkpoint and not args.resume and os.path.exists(args.checkpoint):
        p.error(f"--checkpoint {args.checkpoint} exists: continue it with --resume, or name "
                "another (a run that did not start from it never replaces it)")
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    cuda = torch.cuda.is_available() and ringfeed.cuda_available()
    if args.device == "cuda" and not cuda:
        raise ringfeed.UsageError("--device cuda: torch or this ringfeed build has no CUDA GPU")
    dev = torch.device("cuda" if args.device == "cuda" or (args.device == "auto" and cuda)
                       else "cpu")
    if args.dtype == "auto":
        args.dtype = "bf16" if dev.type == "cuda" else "fp32"
    if args.dtype == "bf16" and dev.type != "cuda":
        raise ringfeed.UsageError("--dtype bf16: autocast to bfloat16 on a GPU only (--device "
                                  "cuda)")
    if int(os.environ.get("WORLD_SIZE", "1")) <= 1:
        return train(args, dev, 0, 1, None)
    import torch.distributed as dist
    if dev.type == "cuda":
        dev = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
        torch.cuda.set_device(dev)  # the loader's device="cuda" is this GPU too
    dist.init_process_group("nccl" if dev.type == "cuda" else "gloo")
    try:
        return train(args, dev, dist.get_rank(), dist.get_world_size(), dist)
    finally:
        dist.destroy_process_group()


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (ringfeed.UsageError, ringfeed.DataError, OSError) as e:
        print(f"torch_tokens: {e}", file=sys.stderr)
        sys.exit(2 if isinstance(e, ringfeed.UsageError) else 1)
