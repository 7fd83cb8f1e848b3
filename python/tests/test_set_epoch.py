"""set_epoch for every kind of loader (issue 40, W3: on packed sequences it raised AttributeError):
the batches after set_epoch(e) are a fresh loader's epoch e. One dataset (fixed-shape tensors,
records of any size, decoded JPEG records, packed sequences): epoch e's order from its start,
wherever the loader was. A mixture (of samples, or of packed rows): its datasets are not rewound,
so set_epoch(e) at the place a loader reaches epoch e leaves its batches those of a loader that
never called it (the idiom `loader.set_epoch(epoch)` before each epoch changes nothing), and an
iterator made before set_epoch refuses to go on."""

import io
import itertools

import numpy as np
import pytest

import ringfeed
from conftest import open_loader, write_documents

EPOCH = 3


def batch_bytes(batch):
    """A batch as comparable values: each of its tensors' bytes, and its indices where it has
    them (packed rows have none)."""
    parts = tuple(batch)
    out = [np.from_dlpack(t).tobytes() for t in parts]
    if hasattr(parts[0], "indices"):
        out.append(tuple(parts[0].indices))
    return tuple(out)


def epoch_of(loader, steps=None):
    it = iter(loader) if steps is None else itertools.islice(loader, steps)
    return [batch_bytes(b) for b in it]


def jpeg_dataset(path):
    image = pytest.importorskip("PIL.Image")
    rng = np.random.default_rng(1)
    with ringfeed.DatasetWriter(str(path), records="bytes", media_type="image/jpeg", classes=10,
                                chunk_size="16KiB") as w:
        for i in range(40):
            buf = io.BytesIO()
            pixels = rng.integers(0, 256, size=(24 + i % 5, 20 + i % 7, 3), dtype=np.uint8)
            image.fromarray(pixels).save(buf, format="JPEG")
            w.write(buf.getvalue(), i % 10)
    return str(path)


@pytest.fixture(scope="module")
def data(tmp_path_factory, datasets):
    root = tmp_path_factory.mktemp("set_epoch")
    return {"tensors": datasets.positional(n=200),
            "other": datasets.positional(n=130, chunk_size="8KiB"),
            "tokens": write_documents(root / "a.rfd", 1, 1, 1000, 120),
            "tokens_b": write_documents(root / "b.rfd", 2, 1000, 2000, 60),
            "jpeg": jpeg_dataset(root / "jpeg.rfd")}


# One dataset: (what a loader of it is opened with). batch_size 16 in all.
SINGLE = {
    "tensors": lambda d: open_loader(d["tensors"], 16),
    "records": lambda d: open_loader(d["tokens"], 16, dtype="uint16"),
    "images": lambda d: ringfeed.Loader(d["jpeg"], 8, device="cpu", image_size=16,
                                        image_threads=1, dtype="uint8", shuffle_window=2),
    "packed": lambda d: ringfeed.Loader(d["tokens"], 4, sequence_length=15, device="cpu",
                                        shuffle_window=2, eod_token=0),
}


@pytest.mark.parametrize("kind", sorted(SINGLE))
def test_set_epoch_gives_epoch_e_from_its_start_wherever_the_loader_was(data, kind):
    open_ = SINGLE[kind]
    fresh = open_(data)
    fresh.set_epoch(EPOCH)
    want = epoch_of(fresh)
    assert len(want) > 2
    assert fresh.epoch == EPOCH + 1

    # From the middle of another epoch: the rest of it is dropped.
    moved = open_(data)
    moved.set_epoch(1)
    it = iter(moved)
    next(it)
    next(it)
    moved.set_epoch(EPOCH)
    assert moved.epoch == EPOCH and moved.position == 0
    with pytest.raises(RuntimeError, match="stale"):
        next(it)
    assert epoch_of(moved) == want

    # A loader that went through epochs 0 to EPOCH - 1 gives the same epoch EPOCH.
    through = open_(data)
    for _ in range(EPOCH):
        epoch_of(through)
    assert through.epoch == EPOCH
    assert epoch_of(through) == want
    # And back: epoch 0 again is epoch 0.
    again = open_(data)
    first = epoch_of(again)
    again.set_epoch(0)
    assert epoch_of(again) == first and first != want


# A mixture: (what a loader is opened with, batches an epoch: None for a sample mixture's own).
MIXTURES = {
    "samples": (lambda d: open_loader([d["tensors"], d["other"]], 16, weights=[0.7, 0.3]), None),
    "packed": (lambda d: ringfeed.Loader([d["tokens"], d["tokens_b"]], 4, sequence_length=15,
                                         weights=[0.7, 0.3], device="cpu", shuffle_window=2,
                                         eod_token=0), 25),
}


@pytest.mark.parametrize("kind", sorted(MIXTURES))
def test_set_epoch_leaves_a_mixtures_stream_where_it_is(data, kind):
    open_, steps = MIXTURES[kind]
    plain = open_(data)
    want = [epoch_of(plain, steps) for _ in range(EPOCH + 1)]
    idiom = open_(data)
    got = []
    for epoch in range(EPOCH + 1):
        idiom.set_epoch(epoch)
        if steps is None:
            assert idiom.epoch == epoch
        got.append(epoch_of(idiom, steps))
    assert got == want
    assert idiom.state_dict() == plain.state_dict()
    # An iterator made before set_epoch refuses to go on.
    it = iter(idiom)
    next(it)
    idiom.set_epoch(EPOCH)
    with pytest.raises(RuntimeError, match="stale"):
        next(it)
