#!/usr/bin/env python3
"""The node-local cache's eviction, Belady's rule by the known order against LRU, on the same
training run: ringfeed.Loader reads an http:// dataset (nginx on loopback) for several shuffled
epochs through a cache of a fraction of the dataset, and nginx's access log counts the bytes
fetched in each epoch. Beside them the least any cache of that size can fetch an epoch (every
epoch reads the whole dataset, so at least its bytes less the cache's), and no cache at all.

    cache_policy.py DATASET.rfd --fractions 0.25,0.5,0.75 --epochs 4 --json out.json
    cache_policy.py DATASET.rfd --ranks 2 ...

With --ranks L, L processes (ranks 0 .. L-1 of a world of L, one machine) share the cache, each
epoch ended by all of them before the bytes are counted, and Belady runs twice: told the machine's
reads (LOCAL_WORLD_SIZE=L, as torchrun sets it: each rank's schedule interleaves every local
rank's chunks) and told its own only ("belady-rank", LOCAL_WORLD_SIZE unset).

Each (policy, fraction) starts from an empty cache; epoch 0 fills it. The loader reads ahead into
the next epoch, so an epoch's bytes are counted where they are fetched, and the figure compared is
the run's total: against the least any cache of that size can fetch in E epochs, the whole
dataset once and then its bytes less the cache's each later epoch, D + (E - 1) * max(0, D - C)
(the read-ahead into epoch E comes on top, for every policy alike).
"""

import argparse
import glob
import json
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import remote_read  # noqa: E402


def start_nginx(root: str, work: str):
    """nginx serving ROOT, logging each request's body bytes; (process, port, log path)."""
    log = os.path.join(work, "access.log")
    proc, port = remote_read.start_nginx(root, work, access_log=log)
    return proc, port, log


def one_rank(url, a, cache, size, policy, log):
    """The bytes fetched each epoch by one Loader reading through CACHE."""
    import ringfeed
    start = remote_read.logged_bytes(log)
    loader = ringfeed.Loader(url, a.batch_size, device="cpu", io="buffered", cache_dir=cache,
                             cache_size=size, cache_policy=policy, seed=3)
    per_epoch = []
    for epoch in range(a.epochs):
        loader.set_epoch(epoch)
        for _ in loader:
            pass
        now = remote_read.logged_bytes(log)
        per_epoch.append(now - start)
        start = now
    del loader
    return per_epoch


def run_rank(url, rank, ranks, epochs, batch_size, cache, size, policy, barrier):
    """One rank of RANKS sharing CACHE: EPOCHS epochs, each ended at BARRIER (twice: the parent
    counts the bytes between the two)."""
    if policy == "belady-rank":
        os.environ.pop("LOCAL_WORLD_SIZE", None)
    else:
        os.environ["LOCAL_WORLD_SIZE"] = str(ranks)
    import ringfeed
    loader = ringfeed.Loader(url, batch_size, device="cpu", io="buffered", cache_dir=cache,
                             cache_size=size, cache_policy=policy.split("-")[0], seed=3,
                             rank=rank, world_size=ranks)
    for epoch in range(epochs):
        loader.set_epoch(epoch)
        for _ in loader:
            pass
        barrier.wait()
        barrier.wait()
    del loader


def run_ranks(url, a, cache, size, policy, log):
    """The bytes fetched each epoch by A.ranks processes sharing CACHE."""
    import multiprocessing as mp
    ctx = mp.get_context("fork")
    barrier = ctx.Barrier(a.ranks + 1)
    procs = [ctx.Process(target=run_rank, args=(url, r, a.ranks, a.epochs, a.batch_size, cache,
                                                size, policy, barrier))
             for r in range(a.ranks)]
    start = remote_read.logged_bytes(log)  # before any rank fetches
    for p in procs:
        p.start()
    per_epoch = []
    for _ in range(a.epochs):
        barrier.wait(timeout=600)
        now = remote_read.logged_bytes(log)
        per_epoch.append(now - start)
        start = now
        barrier.wait(timeout=60)
    for p in procs:
        p.join(60)
        if p.exitcode != 0:
            raise RuntimeError(f"a rank exited {p.exitcode}")
    return per_epoch


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("data", help="a local .rfd dataset (a file, or one shard: all are served)")
    ap.add_argument("--fractions", default="0.25,0.5,0.75",
                    help="cache sizes as fractions of the dataset's chunk bytes")
    ap.add_argument("--epochs", type=int, default=4)
    ap.add_argument("--batch-size", type=int, default=256)
    ap.add_argument("--ranks", type=int, default=1,
                    help="processes of one machine sharing the cache (ranks of a world of that)")
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--nginx", default=remote_read.NGINX)
    a = ap.parse_args()
    remote_read.NGINX = a.nginx

    import ringfeed
    from ringfeed import _ringfeed

    base = os.path.abspath(a.data)
    stem = os.path.basename(base)[:-4].split("-0")[0]
    files = sorted(glob.glob(os.path.join(os.path.dirname(base), stem + "*.rfd")))
    work = tempfile.mkdtemp(prefix="rf-cache-policy-")
    root = os.path.join(work, "root")
    os.makedirs(root)
    for f in files:
        os.symlink(f, os.path.join(root, os.path.basename(f)))
    proc, port, log = start_nginx(root, work)
    url = f"http://127.0.0.1:{port}/{os.path.basename(files[0])}"
    local = _ringfeed._Dataset(files[0])
    info = ringfeed.dataset_info(files[0])
    chunk_bytes = info.stored_bytes  # the files' bytes: the chunks, headers and indices
    rows = []
    try:
        for fraction in [float(x) for x in a.fractions.split(",")]:
            policies = ("belady", "belady-rank", "lru") if a.ranks > 1 else ("belady", "lru")
            for policy in policies:
                cache = os.path.join(work, "cache")
                shutil.rmtree(cache, ignore_errors=True)
                size = int(chunk_bytes * fraction)
                if a.ranks > 1:
                    per_epoch = run_ranks(url, a, cache, size, policy, log)
                else:
                    per_epoch = one_rank(url, a, cache, size, policy, log)
                total = sum(per_epoch)
                least = chunk_bytes + (a.epochs - 1) * max(0, chunk_bytes - size)
                row = {"policy": policy, "ranks": a.ranks, "fraction": fraction, "cache_bytes": size,
                       "dataset_bytes": chunk_bytes, "chunks": local.chunks,
                       "fetched_per_epoch": per_epoch, "fetched_bytes": total,
                       "least_bytes": least, "uncached_bytes": a.epochs * chunk_bytes,
                       "over_least": total / least}
                rows.append(row)
                print(f"cache {fraction:.2f} of {chunk_bytes / 1e6:.1f} MB, {a.ranks} rank(s), "
                      f"{policy:11s}: "
                      f"epochs {', '.join(f'{b / 1e6:.1f}' for b in per_epoch)} MB fetched, "
                      f"{total / 1e6:.1f} MB in all: {total / least:.3f} of the least any cache "
                      f"can ({least / 1e6:.1f} MB), {total / (a.epochs * chunk_bytes):.3f} of no "
                      f"cache's", flush=True)
    finally:
        proc.terminate()
        proc.wait(10)
        shutil.rmtree(work, ignore_errors=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"results": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
