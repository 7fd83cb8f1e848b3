"""tensors="torch": a batch's arrays are torch tensors viewing the loader's memory, imported by the
binding; the same batches, in the same order, as torch.from_dlpack of the ringfeed.Tensors, for
every kind of batch (samples and labels, records, samples of several fields, packed sequences);
a tensor keeps its batch after the loader is gone; a resume continues exactly; what cannot be is
refused. On a GPU (test_cuda.py) the current stream waits for each batch."""

import gc
import itertools
import sys

import numpy as np
import pytest

import ringfeed
from conftest import index_of, open_loader

torch = pytest.importorskip("torch")


def arrays(batch):
    """A batch's arrays in order, as torch tensors (a ringfeed.Tensor through torch.from_dlpack),
    whatever its kind: a tuple, a Sequences, or a dict by field name (a field of two arrays as
    two)."""
    if isinstance(batch, dict):
        batch = [a for v in batch.values() for a in (v if isinstance(v, tuple) else (v,))]
    return [a if isinstance(a, torch.Tensor) else torch.from_dlpack(a) for a in batch]


def same_batches(a, b):
    """Two loaders' epochs, batch for batch: every array equal, dtype and shape too."""
    count = 0
    for x, y in itertools.zip_longest(a, b):
        assert x is not None and y is not None, "the epochs differ in length"
        assert all(isinstance(t, torch.Tensor) for t in arrays(y))
        for p, q in zip(arrays(x), arrays(y), strict=True):
            assert p.dtype == q.dtype and p.shape == q.shape and torch.equal(p, q)
        count += 1
    return count


def test_samples_and_labels_are_torch_tensors_of_the_same_batches(datasets):
    path = datasets.positional()
    for options in (dict(), dict(dtype="float32", normalize=True, layout="NHWC")):
        assert same_batches(open_loader(path, **options),
                            open_loader(path, tensors="torch", **options)) == 32
    x, y = next(iter(open_loader(path, tensors="torch")))
    assert x.dtype == torch.uint8 and tuple(x.shape) == (32, 3, 4, 5) and x.device.type == "cpu"
    assert y.dtype == torch.int64
    assert np.array_equal(y.numpy(), (index_of(x.numpy()) % 10).astype(np.int64))


def test_records_fields_and_packed_sequences_come_as_torch_tensors(tmp_path):
    rng = np.random.default_rng(1)
    docs = [rng.integers(1, 900, size=int(rng.integers(1, 90))).astype(np.int32)
            for _ in range(300)]
    tokens = str(tmp_path / "tokens.rfd")  # int32: Debian's torch 1.13 has no uint16
    with ringfeed.DatasetWriter(tokens, records="tokens", dtype="int32", classes=3,
                                chunk_size="16KiB") as w:
        for i, d in enumerate(docs):
            w.write(d, i % 3)
    pairs = str(tmp_path / "pairs.rfd")
    with ringfeed.DatasetWriter(pairs, fields={"txt": "tokens:int32", "emb": "tensor:float32:4",
                                               "cls": "label"}, chunk_size="16KiB") as w:
        w.write([{"txt": np.arange(i % 5, dtype=np.int32) + i, "emb": np.full(4, i, np.float32),
                  "cls": i % 3} for i in range(200)])
    for path, options in ((tokens, {}), (pairs, {}),
                          (tokens, dict(sequence_length=31, shuffle_window=3))):
        a = ringfeed.Loader(path, 16, device="cpu", seed=3, **options)
        b = ringfeed.Loader(path, 16, device="cpu", seed=3, tensors="torch", **options)
        assert same_batches(a, b) > 5
    batch = next(iter(ringfeed.Loader(pairs, 16, device="cpu", tensors="torch")))
    values, offsets = batch["txt"]
    assert values.dtype == torch.int32 and offsets.dtype == torch.int64
    seq = next(iter(ringfeed.Loader(tokens, 4, device="cpu", tensors="torch",
                                    sequence_length=31)))
    assert isinstance(seq, ringfeed.Sequences) and isinstance(seq.tokens, torch.Tensor)
    assert tuple(seq.tokens.shape) == (4, 32)


def test_a_tensor_keeps_its_batch_after_the_loader_is_gone(datasets):
    loader = open_loader(datasets.positional(), tensors="torch", prefetch=2)
    it = iter(loader)
    x, y = next(it)
    expect_x, expect_y = x.clone(), y.clone()
    for _ in range(5):  # the loader goes on, its other buffers reused; this batch's kept
        next(it)
    del it, loader
    gc.collect()
    assert torch.equal(x, expect_x) and torch.equal(y, expect_y)


def test_a_restored_loader_continues_exactly(datasets):
    path = datasets.positional()
    a = open_loader(path, tensors="torch")
    it = iter(a)
    for _ in range(7):
        next(it)
    b = open_loader(path, tensors="torch")
    b.load_state_dict(a.state_dict())
    assert same_batches(it, b) == 32 - 7


def test_what_cannot_be_is_refused(datasets, monkeypatch):
    path = datasets.positional()
    with pytest.raises(ringfeed.UsageError, match="tensors must be ringfeed or torch"):
        open_loader(path, tensors="jax")
    monkeypatch.setitem(sys.modules, "torch", None)  # import torch raises ImportError
    with pytest.raises(ringfeed.UsageError, match="tensors: 'torch' needs PyTorch"):
        open_loader(path, tensors="torch")
