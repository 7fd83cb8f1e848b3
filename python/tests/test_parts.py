"""A directory of datasets read as one (issue 27, item 4): parts written in parallel by separate
processes, each with its own ringfeed.DatasetWriter, are one dataset to ringfeed.Loader (every
sample once an epoch, with its label), with the statistics one writer would have computed over
all the samples; the order and its checkpoints work as for one file, and a checkpoint refuses
the directory once its parts change."""

import json
import multiprocessing
import os

import numpy as np
import pytest

import ringfeed
from conftest import epoch_indices, open_loader, positional_labels, positional_samples

SHAPE = (3, 4, 5)
SIZES = (250, 301, 199, 250)  # part k holds the samples after those of parts 0 .. k-1
TOTAL = sum(SIZES)


def write_part(path: str, first: int, n: int) -> None:
    """A worker process's whole job: samples first .. first + n - 1, in several writes."""
    x = positional_samples(first + n, SHAPE)[first:]
    y = positional_labels(first + n)[first:]
    with ringfeed.DatasetWriter(path, SHAPE, classes=10, chunk_size="4KiB") as w:
        for piece in np.array_split(np.arange(n), 5):
            w.write(x[piece], y[piece])


def write_parts(out, sizes=SIZES) -> None:
    """The parts out/part-0000K.rfd, written by one process each, all at once."""
    os.makedirs(out, exist_ok=True)
    firsts = np.cumsum((0,) + tuple(sizes[:-1]))
    ctx = multiprocessing.get_context("spawn")  # a fresh interpreter each, as a user's pool
    procs = [ctx.Process(target=write_part, args=(os.path.join(out, f"part-{k:05d}.rfd"),
                                                  int(first), n))
             for k, (first, n) in enumerate(zip(firsts, sizes))]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
        assert p.exitcode == 0


def test_parts_written_by_four_processes_are_one_dataset(tmp_path):
    out = tmp_path / "out"
    write_parts(str(out))
    info = ringfeed.dataset_info(out)
    assert info.samples == TOTAL
    assert info.parts == tuple((str(out / f"part-{k:05d}.rfd"), n) for k, n in enumerate(SIZES))
    assert len(info.paths) == 4
    # One epoch: every sample exactly once, each with its label (epoch_indices checks both).
    seen = epoch_indices(open_loader(str(out), batch_size=64))
    assert sorted(seen) == list(range(TOTAL))
    assert epoch_indices(open_loader(out, batch_size=64, shuffle="none")) == list(range(TOTAL))

    # The statistics one writer computes over the same samples, to float32's precision.
    one = tmp_path / "one.rfd"
    with ringfeed.DatasetWriter(one, SHAPE, classes=10, chunk_size="4KiB") as w:
        w.write(positional_samples(TOTAL, SHAPE), positional_labels(TOTAL))
    single = ringfeed.dataset_info(one)
    assert np.allclose(info.mean, single.mean, rtol=1e-5, atol=0)
    assert np.allclose(info.std, single.std, rtol=1e-5, atol=0)
    assert info.id != single.id


def test_ranks_share_the_directory_and_resume_continues_across_parts(tmp_path):
    out = tmp_path / "out"
    write_parts(str(out))
    ranks = [epoch_indices(open_loader(out, 40, rank=r, world_size=3)) for r in range(3)]
    assert len({len(r) for r in ranks}) == 1
    assert set().union(*ranks) == set(range(TOTAL))
    # A state saved mid-epoch (position 260: part 1's samples in stored order) resumes exactly.
    for shuffle in ("none", "window"):
        reference = epoch_indices(open_loader(out, 20, shuffle=shuffle))
        first = open_loader(out, 20, shuffle=shuffle)
        before = []
        for samples, _ in first:
            before.extend(samples.indices)
            if len(before) == 260:
                break
        state = json.loads(json.dumps(first.state_dict()))
        restored = open_loader(out, 20, shuffle=shuffle)
        restored.load_state_dict(state)
        assert before + epoch_indices(restored) == reference


def test_a_state_refuses_the_directory_once_its_parts_change(tmp_path):
    out = tmp_path / "out"
    write_parts(str(out), SIZES[:2])
    state = open_loader(out).state_dict()
    write_parts(str(tmp_path / "more"), (10,))
    os.rename(tmp_path / "more" / "part-00000.rfd", out / "part-00002.rfd")
    with pytest.raises(ringfeed.UsageError, match="dataset_id: the state has"):
        open_loader(out).load_state_dict(state)


def test_a_part_still_being_written_is_not_read_and_bad_parts_are_refused(tmp_path):
    out = tmp_path / "out"
    write_parts(str(out), SIZES[:2])
    w = ringfeed.DatasetWriter(out / "part-00002.rfd", SHAPE, classes=10, chunk_size="4KiB")
    w.write(positional_samples(100, SHAPE), positional_labels(100))
    assert ringfeed.dataset_info(out).samples == sum(SIZES[:2])  # its temporary is no part
    w.close()
    assert ringfeed.dataset_info(out).samples == sum(SIZES[:2]) + 100
    # Another dtype: refused, naming both files and the field.
    with ringfeed.DatasetWriter(out / "part-00003.rfd", SHAPE, "float32", classes=10) as w:
        w.write(np.zeros((5,) + SHAPE, np.float32), np.zeros(5, np.uint8))
    # A UsageError (issue 40: it was a plain ValueError, outside the documented exceptions).
    with pytest.raises(ringfeed.UsageError, match="part-00003.rfd: holds other records than .*"
                                         "part-00000.rfd: sample dtype float32, not uint8"):
        ringfeed.Loader(out, 10, device="cpu")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(FileNotFoundError, match="no dataset in this directory"):
        ringfeed.dataset_info(empty)
