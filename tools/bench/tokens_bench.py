#!/usr/bin/env python3
"""Packed token sequences on the GPU machine (issue 24's goals), in one call, cold, interleaved:

  startup    ringfeed.Loader(..., sequence_length=L) construction to its first batch, cold, on
             corpora of 1e6, 1e9 tokens and one of >= 10 GB; beside it the Megatron-style sample
             index build (this file's MegatronStyle, from Megatron-LM's published design:
             document index, sample index, shuffle index, built at start) on the same corpora
  tokens     tokens/s delivered to the GPU from a cold compressed corpus by ringfeed, against the
             disk's own cold rate (one O_DIRECT-like read of the raw ids with posix_fadvise
             DONTNEED before) times the codec ratio, and against nanoGPT's np.memmap random-offset
             loader and the Megatron-style loader on the raw ids (both cold). ringfeed is
             measured at each batch size of --rate-batches (rows of --seq + 1): at the default
             16 rows the goal's rate is ~40,000 batches/s, where the Python loop's own time a
             batch (printed: the consumer's share of the time over the batches) bounds what any
             loader can hand it; a larger batch shows the loader's own rate

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


WARM = False  # --warm: the page cache is left alone (a shared machine's; the figures are warm)


def drop_caches():
    if WARM:
        return False
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


def to_device(x, device):
    """A host batch on `device` as the usual loaders put it there (pinned, asynchronous)."""
    return x.pin_memory().to(device, non_blocking=True) if device == "cuda" else x


def synchronize(device):
    if device == "cuda":
        import torch
        torch.cuda.synchronize()


def ringfeed_rate(rfd, seq, batch, seconds, device="cuda"):
    """Tokens/s the consumer takes from a cold loader (each batch's tokens as a torch tensor on
    the GPU); with the loader's stats and the consumer's own time a batch."""
    import torch
    ld = ringfeed.Loader(rfd, batch, sequence_length=seq, device=device)
    n, batches, t0 = 0, 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        for b in ld:
            n += torch.from_dlpack(b.tokens).numel()
            batches += 1
            if time.perf_counter() - t0 >= seconds:
                break
    synchronize(device)
    rate = n / (time.perf_counter() - t0)
    s = ld.stats()
    s["consumer_us_a_batch"] = (s["seconds"] - s["wait_seconds"]) / max(batches, 1) * 1e6
    ld.close()
    return rate, s


def memmap_rate(raw, seq, batch, seconds, seed=1, device="cuda"):
    """nanoGPT's get_batch: random offsets into np.memmap, stacked, pinned, to the GPU."""
    import torch
    rng = np.random.default_rng(seed)
    data = np.memmap(raw, dtype=np.uint16, mode="r")
    n, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        ix = rng.integers(0, len(data) - seq - 1, size=batch)
        x = torch.stack([torch.from_numpy(data[i:i + seq + 1].astype(np.int64)) for i in ix])
        x = to_device(x, device)
        n += x.numel()
    synchronize(device)
    return n / (time.perf_counter() - t0)


def megatron_rate(m, batch, seconds, device="cuda"):
    import torch
    n, i, t0 = 0, 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        x = torch.from_numpy(np.stack([m.sample((i + k) % len(m.shuffle_idx)).astype(np.int64)
                                       for k in range(batch)]))
        x = to_device(x, device)
        n += x.numel()
        i += batch
    synchronize(device)
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
    p.add_argument("--mid-tokens", type=float, default=1e9,
                   help="the start-up comparison's larger corpus (1e9: the goal's)")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--seconds", type=float, default=8.0)
    p.add_argument("--compress", default="lz4")
    p.add_argument("--device", default="cuda",
                   help="where the batches go: cuda (the goals), or cpu (a smoke run anywhere)")
    p.add_argument("--rate-batches", default="16,64",
                   help="the batch sizes ringfeed's tokens/s is measured at, comma-separated")
    p.add_argument("--corpora-only", action="store_true",
                   help="write the corpora (WORK/c1e6.rfd, c1e9.rfd, cbig.rfd) and stop")
    p.add_argument("--warm", action="store_true",
                   help="never drop the page cache (a shared machine): every run is warm")
    a = p.parse_args()
    global WARM
    WARM = a.warm
    os.makedirs(a.work, exist_ok=True)
    out = {"seq": a.seq, "batch": a.batch, "compress": a.compress, "device": a.device}
    ids, ends = source_documents(a.source)
    print(f"source: {ids.size} ids, {ends.size} documents", flush=True)
    t0 = time.perf_counter()
    corpora = {
        "1e6": build(a.work, "c1e6", ids, ends, 10**6, a.compress),
        "1e9": build(a.work, "c1e9", ids, ends, int(a.mid_tokens), a.compress),
        "big": build(a.work, "cbig", ids, ends, int(a.big_gb * 1e9 / 2), a.compress),
    }
    print(f"corpora written in {time.perf_counter() - t0:.0f} s", flush=True)
    for k, (rfd, raw, docs) in corpora.items():
        info = ringfeed.dataset_info(rfd)
        out[f"corpus_{k}"] = {"tokens": int(docs[-1]), "documents": int(docs.size - 1),
                              "stored_bytes": info.stored_bytes, "data_bytes": info.data_bytes,
                              "raw_bytes": os.path.getsize(raw)}
        print(k, out[f"corpus_{k}"], flush=True)
    if a.corpora_only:
        return 0

    # Start-up, cold, interleaved.
    startup = {k: [] for k in corpora}
    megatron = {k: [] for k in corpora}
    for r in range(a.rounds):
        for k, (rfd, raw, docs) in corpora.items():
            drop_caches()
            startup[k].append(first_batch_seconds(rfd, a.seq, a.batch, a.device))
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
    rate_batches = [int(x) for x in a.rate_batches.split(",")]
    rows = {"disk_gbps": [], "memmap": [], "megatron": []}
    for b in rate_batches:
        rows.update({f"ringfeed_b{b}": [], f"wait_share_b{b}": [], f"consumer_us_b{b}": [],
                     f"chunk_stage_share_b{b}": [], f"reader_held_share_b{b}": []})
    for r in range(a.rounds):
        drop_caches()
        rows["disk_gbps"].append(disk_rate(raw) / 1e9)
        goal = 0.95 * ratio * rows["disk_gbps"][-1] * 1e9 / 2
        line = (f"round {r}: disk {rows['disk_gbps'][-1]:.2f} GB/s (ratio {ratio:.2f}: goal "
                f"{goal / 1e6:.0f}M tokens/s)")
        for b in rate_batches:
            drop_caches()
            rate, s = ringfeed_rate(rfd, a.seq, b, a.seconds, a.device)
            secs = max(s["seconds"], 1e-9)
            rows[f"ringfeed_b{b}"].append(rate)
            rows[f"wait_share_b{b}"].append(s["wait_seconds"] / secs)
            rows[f"consumer_us_b{b}"].append(s["consumer_us_a_batch"])
            rows[f"chunk_stage_share_b{b}"].append(
                s["decode_busy_seconds"] / max(s["decode_threads"], 1) / secs)
            rows[f"reader_held_share_b{b}"].append(s["reader_held_seconds"] / secs)
            line += (f"; ringfeed batch {b}: {rate / 1e6:.0f}M tokens/s ({rate / goal:.2f} of the "
                     f"goal; consumer waited {rows[f'wait_share_b{b}'][-1]:.2f}, its own "
                     f"{s['consumer_us_a_batch']:.1f} us a batch; chunk stage busy "
                     f"{rows[f'chunk_stage_share_b{b}'][-1]:.2f} of {s['decode_threads']} "
                     f"threads; reader held {rows[f'reader_held_share_b{b}'][-1]:.2f})")
        drop_caches()
        rows["memmap"].append(memmap_rate(raw, a.seq, a.batch, a.seconds, device=a.device))
        drop_caches()
        rows["megatron"].append(megatron_rate(m, a.batch, a.seconds, a.device))
        line += (f"; memmap {rows['memmap'][-1] / 1e6:.1f}M; megatron-style "
                 f"{rows['megatron'][-1] / 1e6:.1f}M")
        print(line, flush=True)
    out["tokens"] = rows
    out["codec_ratio"] = ratio
    with open(a.json, "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
