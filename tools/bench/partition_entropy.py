#!/usr/bin/env python3
"""What the node partition costs the shuffle (issue 42): the per-batch label entropy of a
label-sorted dataset (`ringfeed-convert synthetic --order sorted`: every chunk one class, the
hardest case for a window shuffle) under the global partition and under `partition="node"` at
several machine counts, against a uniform shuffle's (every batch drawn from a permutation of
all the samples).

    partition_entropy.py DATASET.rfd --world 8 --batch 256 --epochs 2

Prints one line a layout: the mean over every rank's full batches of the label entropy in bits,
and its share of the uniform shuffle's; --json writes them."""

import argparse
import json
import math

import numpy as np

import ringfeed


def entropy(labels: np.ndarray) -> float:
    counts = np.bincount(labels)
    p = counts[counts > 0] / labels.size
    return float(-(p * np.log2(p)).sum())


def mean_entropy(path: str, world: int, batch: int, epochs: int, **options) -> float:
    values = []
    for rank in range(world):
        loader = ringfeed.Loader(path, batch, device="cpu", rank=rank, world_size=world,
                                 drop_last=True, **options)
        for epoch in range(epochs):
            loader.set_epoch(epoch)
            for _, labels in loader:
                values.append(entropy(labels.numpy().astype(np.int64)))
    return sum(values) / len(values)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("dataset")
    p.add_argument("--world", type=int, default=8)
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--json")
    a = p.parse_args()
    info = ringfeed.dataset_info(a.dataset)
    chunks = ringfeed._ringfeed._Dataset(a.dataset).chunks
    # The uniform shuffle: every batch from one permutation of every sample's label.
    # (astype copies: a view would keep its whole batch, records and all, alive)
    labels = np.concatenate([y.numpy().astype(np.int64) for _, y in ringfeed.Loader(
        a.dataset, 1024, device="cpu", shuffle="none")])
    rng = np.random.default_rng(1)
    uniform = []
    for _ in range(a.epochs):
        perm = labels[rng.permutation(labels.size)]
        for i in range(0, perm.size - a.batch + 1, a.batch):
            uniform.append(entropy(perm[i:i + a.batch]))
    uniform_bits = sum(uniform) / len(uniform)
    rows = [{"layout": "uniform shuffle", "bits": uniform_bits, "share": 1.0}]
    layouts = [("global", {})]
    per = 1
    while per < a.world:
        layouts.append((f"node: {a.world // per} machines of {per}",
                        dict(partition="node", node_ranks=per)))
        per *= 2
    for name, options in layouts:
        bits = mean_entropy(a.dataset, a.world, a.batch, a.epochs, **options)
        rows.append({"layout": name, "bits": bits, "share": bits / uniform_bits})
    print(f"{info.samples} samples, {chunks} chunks, {a.world} ranks, batch {a.batch}, "
          f"{a.epochs} epochs, the default window")
    for r in rows:
        print(f"{r['layout']}: {r['bits']:.3f} bits a batch ({r['share']:.3f} of uniform)")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"dataset": a.dataset, "world": a.world, "batch": a.batch, "rows": rows}, f,
                      indent=1)


if __name__ == "__main__":
    main()
