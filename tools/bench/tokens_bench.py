#!/usr/bin/env python3
"""Packed token sequences on the GPU machine (issue 24's goals), in one call, cold, interleaved:

  startup    ringfeed.Loader(..., sequence_length=L) construction to its first batch, cold, on
             corpora of 1e6, 1e9 tokens and one of >= 10 GB; beside it the Megatron-style sample
             index build (this file's MegatronStyle, from Megatron-LM's published design:
             document index, sample index, shuffle index, built at start) on the same corpora
  tokens     tokens/s delivered to the GPU from a cold compressed corpus by ringfeed, against the
             disk's own cold rate (one O_DIRECT-like read of the raw ids with posix_fadvise
             DONTNEED before) times the codec ratio, and against nanoGPT's np.memmap random-offset
             loader and the Megatron-style loader on the raw ids (both cold)

The text: .carry/tokens/tokens.rfd (tools/bench/make_token_corpus.py: Linux documentation as
SentencePiece ids, documents ended by id 2), replicated to each size (documents in order,
repeated). Writes JSON to --json and a log to stdout.

    python3 tools/bench/tokens_bench.py --source .carry/tokens/tokens.rfd --work /var/tmp/tok \
        --json OUT/tokens.json
"""

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

import ringfeed

EOS = 2


def drop_caches():
    subprocess.run(["sync"])
    try:
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
        return True
    except OSError:
        return False


def source_documents(path):
    """The source corpus's ids as one array and its documents' ends (each after an EOS)."""
    ld = ringfeed.Loader(path, 64, shuffle="none", device="cpu")
    ids = np.concatenate([np.asarray(s.numpy()).reshape(-1) for s, _ in ld])
    ends = np.flatnonzero(ids == EOS) + 1
    return ids, ends


def build(work, name, ids, ends, tokens, compress):
    """A tokens dataset of about `tokens` ids (the source's documents repeated) and the same ids
    as a raw .bin (nanoGPT's format) with its document offsets."""
    rfd = os.path.join(work, f"{name}.rfd")
    raw = os.path.join(work, f"{name}.bin")
    offs = os.path.join(work, f"{name}.docs.npy")
    if os.path.exists(rfd) and os.path.exists(raw):
        return rfd, raw, np.load(offs)
    doc_offsets = np.concatenate([[0], ends]).astype(np.int64)
    reps = max(1, -(-tokens // ids.size))
    with ringfeed.DatasetWriter(rfd + ".tmp", records="tokens", dtype="uint16", labels=False,
                                compress=compress, threads=0) as w, open(raw, "wb") as f:
        written = 0
        for _ in range(reps):
            take = min(ids.size, tokens - written) if tokens < ids.size else ids.size
            cut = doc_offsets[doc_offsets <= take]
            w.write_records(ids[:cut[-1]], cut)
            f.write(ids[:cut[-1]].tobytes())
            written += int(cut[-1])
            if written >= tokens:
                break
    os.replace(rfd + ".tmp", rfd)
    all_offsets = []
    base = 0
    for _ in range(max(1, written // int(doc_offsets[-1]) + 1)):
        all_offsets.append(doc_offsets[:-1] + base)
        base += int(doc_offsets[-1])
    docs = np.concatenate(all_offsets)
    docs = np.append(docs[docs < written], written)
    np.save(offs, docs)
    return rfd, raw, docs


class MegatronStyle:
    """Megatron-LM's GPT dataset as published: at start, a document index (the documents,
    shuffled, one epoch), a sample index (for each sample of seq+1 tokens, the document and the
    offset it starts at) and a shuffle index over the samples; each sample is then read from the
    memory-mapped ids by its (document, offset) pairs."""

    def __init__(self, raw, docs, seq, seed=1):
        t0 = time.perf_counter()
        self.ids = np.memmap(raw, dtype=np.uint16, mode="r")
        self.docs = docs
        rng = np.random.default_rng(seed)
        doc_idx = rng.permutation(docs.size - 1)
        sizes = np.diff(docs)[doc_idx]
        # Sample index: token offsets of the shuffled stream where each sample starts.
        starts = np.concatenate([[0], np.cumsum(sizes)])
        total = int(starts[-1])
        n = (total - 1) // seq
        pos = np.arange(n + 1, dtype=np.int64) * seq
        which = np.searchsorted(starts, pos, side="right") - 1
        self.sample_idx = np.stack([which, pos - starts[which]], axis=1)
        self.shuffle_idx = rng.permutation(n)
        self.doc_idx, self.starts, self.seq = doc_idx, starts, seq
        self.build_seconds = time.perf_counter() - t0

    def sample(self, i):
        j = self.shuffle_idx[i]
        d, off = self.sample_idx[j]
        d2, off2 = self.sample_idx[j + 1]
        parts = []
        for k in range(d, d2 + 1):
            doc = self.doc_idx[k]
            a, b = int(self.docs[doc]), int(self.docs[doc + 1])
            lo = a + (off if k == d else 0)
            hi = a + off2 + 1 if k == d2 else b
            parts.append(self.ids[lo:hi])
        return np.concatenate(parts)[: self.seq + 1]


def first_batch_seconds(rfd, seq, batch, device):
    t0 = time.perf_counter()
    ld = ringfeed.Loader(rfd, batch, sequence_length=seq, device=device, eod_token=None)
    b = next(iter(ld))
    if device == "cuda":
        import torch
        torch.from_dlpack(b.tokens).sum().item()
    return time.perf_counter() - t0


def ringfeed_rate(rfd, seq, batch, seconds):
    import torch
    ld = ringfeed.Loader(rfd, batch, sequence_length=seq, device="cuda")
    n, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        for b in ld:
            torch.from_dlpack(b.tokens)
            n += int(np.prod(b.tokens.shape))
            if time.perf_counter() - t0 >= seconds:
                break
    torch.cuda.synchronize()
    s = ld.stats()
    return n / (time.perf_counter() - t0), s


def memmap_rate(raw, seq, batch, seconds, seed=1):
    """nanoGPT's get_batch: random offsets into np.memmap, stacked, pinned, to the GPU."""
    import torch
    rng = np.random.default_rng(seed)
    data = np.memmap(raw, dtype=np.uint16, mode="r")
    n, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        ix = rng.integers(0, len(data) - seq - 1, size=batch)
        x = torch.stack([torch.from_numpy(data[i:i + seq + 1].astype(np.int64)) for i in ix])
        x = x.pin_memory().to("cuda", non_blocking=True)
        n += x.numel()
    torch.cuda.synchronize()
    return n / (time.perf_counter() - t0)


def megatron_rate(m, batch, seconds):
    import torch
    n, i, t0 = 0, 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        x = torch.from_numpy(np.stack([m.sample((i + k) % len(m.shuffle_idx)).astype(np.int64)
                                       for k in range(batch)]))
        x = x.pin_memory().to("cuda", non_blocking=True)
        n += x.numel()
        i += batch
    torch.cuda.synchronize()
    return n / (time.perf_counter() - t0)


def disk_rate(raw, limit=4 << 30):
    """The disk's cold read rate: the raw file read sequentially in 16 MiB blocks."""
    fd = os.open(raw, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        t0, n = time.perf_counter(), 0
        while n < limit:
            b = os.read(fd, 16 << 20)
            if not b:
                break
            n += len(b)
        return n / (time.perf_counter() - t0)
    finally:
        os.close(fd)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--source", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--json", required=True)
    p.add_argument("--seq", type=int, default=2048)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--big-gb", type=float, default=10.0)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--seconds", type=float, default=8.0)
    p.add_argument("--compress", default="lz4")
    a = p.parse_args()
    os.makedirs(a.work, exist_ok=True)
    out = {"seq": a.seq, "batch": a.batch, "compress": a.compress}
    ids, ends = source_documents(a.source)
    print(f"source: {ids.size} ids, {ends.size} documents", flush=True)
    t0 = time.perf_counter()
    corpora = {
        "1e6": build(a.work, "c1e6", ids, ends, 10**6, a.compress),
        "1e9": build(a.work, "c1e9", ids, ends, 10**9, a.compress),
        "big": build(a.work, "cbig", ids, ends, int(a.big_gb * 1e9 / 2), a.compress),
    }
    print(f"corpora written in {time.perf_counter() - t0:.0f} s", flush=True)
    for k, (rfd, raw, docs) in corpora.items():
        info = ringfeed.dataset_info(rfd)
        out[f"corpus_{k}"] = {"tokens": int(docs[-1]), "documents": int(docs.size - 1),
                              "stored_bytes": info.stored_bytes, "data_bytes": info.data_bytes,
                              "raw_bytes": os.path.getsize(raw)}
        print(k, out[f"corpus_{k}"], flush=True)

    # Start-up, cold, interleaved.
    startup = {k: [] for k in corpora}
    megatron = {k: [] for k in corpora}
    for r in range(a.rounds):
        for k, (rfd, raw, docs) in corpora.items():
            drop_caches()
            startup[k].append(first_batch_seconds(rfd, a.seq, a.batch, "cuda"))
        for k, (rfd, raw, docs) in corpora.items():
            drop_caches()
            megatron[k].append(MegatronStyle(raw, docs, a.seq).build_seconds)
        print(f"round {r}: first batch {[round(startup[k][-1], 3) for k in corpora]} s; "
              f"megatron-style index {[round(megatron[k][-1], 3) for k in corpora]} s",
              flush=True)
    out["first_batch_seconds"] = startup
    out["megatron_index_seconds"] = megatron

    # Tokens delivered, cold, interleaved: the big corpus.
    rfd, raw, docs = corpora["big"]
    m = MegatronStyle(raw, docs, a.seq)
    info = out["corpus_big"]
    ratio = info["data_bytes"] / info["stored_bytes"]
    rows = {"disk_gbps": [], "ringfeed": [], "memmap": [], "megatron": [], "wait_share": []}
    for r in range(a.rounds):
        drop_caches()
        rows["disk_gbps"].append(disk_rate(raw) / 1e9)
        drop_caches()
        rate, s = ringfeed_rate(rfd, a.seq, a.batch, a.seconds)
        rows["ringfeed"].append(rate)
        rows["wait_share"].append(s["wait_seconds"] / max(s["seconds"], 1e-9))
        drop_caches()
        rows["memmap"].append(memmap_rate(raw, a.seq, a.batch, a.seconds))
        drop_caches()
        rows["megatron"].append(megatron_rate(m, a.batch, a.seconds))
        goal = 0.95 * ratio * rows["disk_gbps"][-1] * 1e9 / 2
        print(f"round {r}: disk {rows['disk_gbps'][-1]:.2f} GB/s (ratio {ratio:.2f}: goal "
              f"{goal / 1e6:.0f}M tokens/s); ringfeed {rate / 1e6:.0f}M tokens/s (wait "
              f"{rows['wait_share'][-1]:.3f}); memmap {rows['memmap'][-1] / 1e6:.1f}M; "
              f"megatron-style {rows['megatron'][-1] / 1e6:.1f}M", flush=True)
    out["tokens"] = rows
    out["codec_ratio"] = ratio
    with open(a.json, "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
