"""A run stopped mid-epoch at N ranks and resumed at M: the samples the N ranks had not trained in
that epoch are trained by the M ranks, each once (pipeline/order/window_order.h's stretches), and the
next epoch is an ordinary M-rank epoch. Also over two changes (2 -> 3 -> 2), where the checkpoint
of the middle run carries the first run's stretch."""

from collections import Counter
from typing import List

import pytest

import ranks_harness as h

STOP = 13  # steps: inside the first epoch at 2 ranks (32 steps) and at 3 (21)

def first_run(positional, tmp_path, ranks: int) -> h.Run:
    """Epoch 1 of `ranks` ranks stopped after STOP steps (tmp_path/stopped.ckpt)."""
    return h.train(ranks, positional, "--epochs", "2", "--batch-size", str(h.BATCH), "--seed",
                   "7", "--checkpoint", str(tmp_path / "stopped.ckpt"), "--max-steps",
                   str(STOP), dump=tmp_path / "first").check_ok()


def resumed_part(run: h.Run, what: str) -> List[List[int]]:
    """Each rank's samples of a resumed run's first epoch (epoch 1): equal counts, none twice."""
    parts = [o[1] for o in run.orders]
    assert len({len(p) for p in parts}) == 1, f"{what}: counts {[len(p) for p in parts]}"
    for r, p in enumerate(parts):
        assert len(set(p)) == len(p), f"{what}: rank {r} trains a sample twice"
    return parts


def check_trains_remaining_once(parts: List[List[int]], trained: Counter, what: str) -> None:
    """`parts` (the epoch's last run, each rank's samples) train every sample of the epoch that
    `trained` (the runs before) lacks, with fewer than len(parts) entries to spare (padding: a
    repeat, or a sample trained before)."""
    remaining = set(range(h.SAMPLES)) - set(trained)
    counts = Counter(s for p in parts for s in p)
    missing = sorted(remaining - set(counts))
    assert not missing, f"{what}: {len(missing)} remaining samples never trained: {missing[:5]}"
    extra = sum(counts.values()) - len(remaining)
    assert extra < len(parts), (f"{what}: {sum(counts.values())} samples trained for "
                                f"{len(remaining)} remaining ({len(set(counts) & set(trained))} "
                                f"of them trained before)")


def check_next_epoch_is_ordinary(run: h.Run, uninterrupted, ranks: int) -> None:
    at_m, _ = uninterrupted.get(ranks)
    h.check_full_epoch([o[2] for o in run.orders], h.SAMPLES, f"epoch 2 at {ranks} ranks")
    for r in range(ranks):
        assert run.orders[r][2] == at_m.orders[r][2], f"epoch 2, rank {r}"


@pytest.mark.parametrize("before,after", [(2, 3), (3, 2)])
def test_resume_at_other_world_size_trains_each_remaining_sample_once(
        uninterrupted, positional, tmp_path, before, after):
    first = first_run(positional, tmp_path, before)
    ckpt = tmp_path / "stopped.ckpt"
    pos = h.read_checkpoint(ckpt)
    assert (pos.epoch, pos.next_sample, pos.world_size) == (0, STOP * h.BATCH, before)
    # Each rank trained the first next_sample samples of its part (all its dump holds).
    trained = Counter()
    for r, order in enumerate(first.orders):
        assert len(order[1]) == pos.next_sample, f"first run, rank {r}"
        trained.update(order[1])
    assert sum(trained.values()) - len(trained) < before, "first run: repeats beyond padding"

    # A resumed run that trains nothing names where the epoch stands, not "sample 0" alone (issue
    # 23: it read as the epoch's start), and leaves the checkpoint as it was.
    written = ckpt.read_bytes()
    idle = h.train(after, positional, "--epochs", "2", "--resume", str(ckpt), "--checkpoint",
                   str(ckpt), "--max-steps", str(STOP)).check_ok()
    assert (f"(next: epoch 1, sample 0 of what earlier runs left: they trained "
            f"{STOP * h.BATCH * before} samples of it at {before} ranks); no step trained"
            in idle.stdout), idle.stdout
    assert ckpt.read_bytes() == written

    resumed = h.train(after, positional, "--epochs", "2", "--resume", str(ckpt),
                      dump=tmp_path / "resumed").check_ok()
    parts = resumed_part(resumed, f"resumed at {after}")
    check_trains_remaining_once(parts, trained, f"resumed at {after}")
    check_next_epoch_is_ordinary(resumed, uninterrupted, after)


def test_resume_after_two_world_size_changes_trains_each_remaining_sample_once(
        uninterrupted, positional, tmp_path):
    # 2 ranks train STOP steps of epoch 1; 3 ranks MORE steps of what they left; 2 ranks the rest.
    more = 5
    first = first_run(positional, tmp_path, 2)
    trained = Counter(s for o in first.orders for s in o[1])
    middle_ckpt = tmp_path / "middle.ckpt"
    middle = h.train(3, positional, "--epochs", "2", "--resume", str(tmp_path / "stopped.ckpt"),
                     "--checkpoint", str(middle_ckpt), "--max-steps", str(STOP + more),
                     dump=tmp_path / "middle").check_ok()
    pos = h.read_checkpoint(middle_ckpt)
    assert (pos.epoch, pos.next_sample, pos.world_size) == (0, more * h.BATCH, 3)
    assert pos.stretches == [(2, STOP * h.BATCH)], "the first run's stretch"
    parts = resumed_part(middle, "middle run at 3")
    assert all(len(p) == more * h.BATCH for p in parts)
    counts = Counter(s for p in parts for s in p)
    # Only what the first run left, but for padding (fewer than 3 entries).
    again = sum(n for s, n in counts.items() if s in trained)
    repeats = sum(counts.values()) - len(counts)
    assert again + repeats < 3, (f"middle run: {again} samples the first run trained, "
                                 f"{repeats} repeats")
    trained.update(counts)

    last = h.train(2, positional, "--epochs", "2", "--resume", str(middle_ckpt),
                   dump=tmp_path / "last").check_ok()
    check_trains_remaining_once(resumed_part(last, "last run at 2"), trained, "last run at 2")
    check_next_epoch_is_ordinary(last, uninterrupted, 2)
