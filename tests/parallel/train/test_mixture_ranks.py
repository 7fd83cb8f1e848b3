"""`mpirun -np N ringfeed train --data a,b --weights 0.6,0.4`: a mixture stopped at 2 ranks,
resumed at 3 and stopped, resumed at 2 again. Over the three runs every sample of each dataset's
interrupted epoch is trained once (plus fewer repeats than the ranks of the resumed splits: their
padding), the ranks of a run draw the same dataset at every step, and each checkpoint records
where each dataset's epoch stands (pipeline/sources/mixture.h). The datasets hold consecutive samples of
the positional pattern, so --dump-order's indices (dataset i's sample j: first_i + j) are the
samples' own."""

from collections import Counter
from pathlib import Path
from typing import List, Tuple

import numpy as np

import ranks_harness as h

SIZES = (600, 400)
WEIGHTS = "0.6,0.4"
# (ranks, --max-steps in all): 13 steps into the mixture epoch at 2 ranks (32 steps), 8 more at 3
# (its rest: 13 steps), then at 2 past the epoch's end (7 steps) into the next.
STAGES = [(2, 13), (3, 21), (2, 41)]


def make_mixture(root: Path) -> Tuple[List[Path], List[int]]:
    everything = h.positional_samples(sum(SIZES), h.SHAPE)
    paths, firsts, first = [], [], 0
    for i, n in enumerate(SIZES):
        x, y, out = root / f"m{i}.x.npy", root / f"m{i}.y.npy", root / f"m{i}.rfd"
        np.save(x, everything[first:first + n])
        np.save(y, (np.arange(first, first + n) % h.CLASSES).astype(np.uint8))
        h.convert("npy", "--images", str(x), "--labels", str(y), "--classes", str(h.CLASSES),
                  "--chunk-size", h.CHUNK_SIZE, "-o", str(out))
        paths.append(out)
        firsts.append(first)
        first += n
    return paths, firsts


def test_two_three_two_ranks_train_each_datasets_interrupted_epoch_once(tmp_path):
    paths, firsts = make_mixture(tmp_path)
    data = ",".join(str(p) for p in paths)

    def source(index: int) -> int:
        return 0 if index < firsts[1] else 1

    ckpt = tmp_path / "mixture.ckpt"
    before = [(0, 0), (0, 0)]  # each dataset's (epoch, position) where a run starts
    epoch0 = [Counter(), Counter()]
    steps_so_far = 0
    for k, (ranks, steps) in enumerate(STAGES):
        flags = ["--weights", WEIGHTS, "--epochs", "3", "--batch-size", str(h.BATCH), "--seed",
                 "7", "--checkpoint", str(ckpt), "--max-steps", str(steps)]
        if k:
            flags += ["--resume", str(ckpt)]
        run = h.train(ranks, Path(data), *flags, dump=tmp_path / f"run{k}").check_ok()
        pos = h.read_checkpoint(ckpt)
        assert pos.world_size == ranks and len(pos.mixture) == 2, pos
        # Each rank's samples of the run, mixture epochs one after another.
        taken = [[s for e in sorted(order) for s in order[e]] for order in run.orders]
        steps_so_far += len(taken[0])  # the draws count the steps (the epoch's last batch: 4)
        assert sum(d for _, _, d in pos.mixture) == steps_so_far
        datasets = [[source(s) for s in t] for t in taken]
        assert all(d == datasets[0] for d in datasets), f"run {k}: the ranks draw differently"
        for i in range(2):
            end_epoch, end_position, _ = pos.mixture[i]
            if before[i][0] > 0:
                continue  # past its epoch 0 already
            assert end_epoch <= 1, f"run {k}: dataset {i} ran through a whole epoch"
            for t in taken:
                mine = [s for s in t if source(s) == i]
                # Where the dataset moved on into epoch 1, its last end_position draws are of it.
                epoch0[i].update(mine if end_epoch == 0 else mine[:len(mine) - end_position])
        before = [(e, p) for e, p, _ in pos.mixture]
    assert all(e == 1 for e, _ in before), f"each dataset's epoch 0 done: {before}"
    for i, n in enumerate(SIZES):
        everyone = set(range(firsts[i], firsts[i] + n))
        missing = sorted(everyone - set(epoch0[i]))
        assert not missing, f"dataset {i}: {len(missing)} samples never trained: {missing[:5]}"
        assert set(epoch0[i]) == everyone, f"dataset {i}: samples of another dataset"
        # Each resume at another world size pads its split with fewer repeats than its ranks.
        assert sum(epoch0[i].values()) - n < 3 + 2, f"dataset {i}: {epoch0[i].most_common(3)}"
