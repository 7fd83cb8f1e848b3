"""Lifetimes: a held batch stays valid and unchanged while later batches come, and after the
loader is closed, deleted or collected mid-epoch; tensors made from it keep it too."""

import gc
import threading
import weakref

import numpy as np
import pytest

import ringfeed
from conftest import index_of, open_loader


def test_a_held_batch_outlives_later_batches_unchanged(datasets):
    loader = open_loader(datasets.positional(), 16, prefetch=2)
    held, _ = next(iter(loader))
    copy = held.numpy().copy()
    later = [s.numpy().copy() for s, _ in loader]  # the rest of the epoch, far more than 2 buffers
    later += [s.numpy().copy() for s, _ in loader]  # and another epoch
    assert len(later) > 100
    assert np.array_equal(held.numpy(), copy)
    assert list(index_of(held.numpy())) == held.indices


def test_holding_many_batches_never_blocks_the_loader(datasets):
    loader = open_loader(datasets.positional(), 16, prefetch=1)
    held = list(loader)  # every batch of the epoch held at once
    assert len(held) == len(loader)
    seen = [int(i) for s, _ in held for i in index_of(s.numpy())]
    assert sorted(seen) == list(range(datasets.SAMPLES))


def test_a_held_batch_outlives_the_loader(datasets):
    torch = pytest.importorskip("torch")
    loader = open_loader(datasets.positional(), dtype="float32", normalize=False)
    samples, labels = next(iter(loader))
    x = torch.from_dlpack(samples)
    expect_x, expect_y = x.clone(), torch.from_dlpack(labels).clone()
    del samples
    ref = weakref.ref(loader)
    del loader
    gc.collect()
    assert ref() is None
    assert torch.equal(x, expect_x)  # the torch tensor alone keeps the buffer
    assert torch.equal(torch.from_dlpack(labels), expect_y)


def test_a_loader_deleted_mid_epoch_while_a_batch_is_held(datasets):
    loader = open_loader(datasets.positional(), 8)
    it = iter(loader)
    for _ in range(5):
        samples, labels = next(it)
    copy = samples.numpy().copy()
    del loader  # the iterator still refers to it; collecting both stops the threads
    del it
    gc.collect()
    assert np.array_equal(samples.numpy(), copy)
    assert np.array_equal(labels.numpy(), index_of(copy) % 10)


def test_close_stops_the_loader_and_keeps_its_batches(datasets):
    with open_loader(datasets.positional()) as loader:
        samples, _ = next(iter(loader))
        copy = samples.numpy().copy()
    assert "closed" in repr(loader)
    assert np.array_equal(samples.numpy(), copy)
    with pytest.raises(ringfeed.UsageError, match="closed"):
        next(iter(loader))
    with pytest.raises(ringfeed.UsageError, match="closed"):
        loader.stats()
    loader.close()  # again: nothing


def test_calls_from_another_thread_take_turns(datasets):
    loader = open_loader(datasets.positional(), 8)
    done = threading.Event()
    figures = []

    def watch():
        while not done.is_set():
            figures.append(loader.stats()["batches"])

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        count = sum(1 for _ in loader)
    finally:
        done.set()
        watcher.join()
    assert count == len(loader)
    assert figures == sorted(figures) and figures[-1] <= count
