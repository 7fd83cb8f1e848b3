"""Threads and copies (issue 23, W1 and W6): a loader called from several threads hands out each
batch once, whether each thread takes its own iterator or all share one; a loader cannot be
copied, since a copy would share its reader and position."""

import copy
import pickle
import threading

import pytest

from conftest import open_loader


def drain_from_threads(loader, take, threads=4):
    """Every thread calls take() until the epoch ends; returns every batch's first sample
    index, in the order handed out, and the exceptions the threads met."""
    got, errors, lock = [], [], threading.Lock()

    def work():
        try:
            while True:
                batch = take()
                if batch is None:
                    return
                with lock:
                    got.append(batch[0].indices[0])
        except BaseException as e:  # noqa: BLE001 (reported to the test)
            errors.append(e)

    pool = [threading.Thread(target=work) for _ in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join(timeout=60)
    return got, errors


def test_threads_each_iterating_get_every_batch_once(datasets):
    loader = open_loader(datasets.positional(), 10, shuffle="none")  # 100 batches an epoch
    taken, lock = [0], threading.Lock()

    def take():
        # 80 batches of the epoch's 100, as the trial took: at most 3 threads past the
        # count at once, so every call stays inside epoch 0.
        with lock:
            if taken[0] >= 80:
                return None
            taken[0] += 1
        return next(iter(loader))

    got, errors = drain_from_threads(loader, take)
    assert errors == []
    assert len(got) == 80 and len(set(got)) == 80  # 13-20 duplicates of 80 before
    assert set(got) <= set(range(0, 1000, 10))


def test_threads_sharing_one_iterator_get_every_batch_once(datasets):
    loader = open_loader(datasets.positional(), 10, shuffle="none")
    it = iter(loader)
    got, errors = drain_from_threads(loader, lambda: next(it, None))
    assert errors == []  # "generator already executing" before
    assert sorted(got) == list(range(0, 1000, 10))
    assert loader.epoch == 1 and loader.position == 0


@pytest.mark.parametrize("how", [copy.copy, copy.deepcopy, pickle.dumps])
def test_a_loader_cannot_be_copied(datasets, how):
    loader = open_loader(datasets.positional())
    with pytest.raises(TypeError, match="cannot be"):
        how(loader)
    # The loader itself goes on unharmed.
    assert len(list(loader)) == len(loader)
