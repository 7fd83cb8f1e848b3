"""The decode: every output dtype, layout and normalization equals a numpy recomputation from the
stored values and the header's mean and std, ((x - mean[c]) / std[c] in float32, then rounded to
nearest even); token ids come out exactly, in their stored integer dtype."""

import numpy as np
import pytest

import ringfeed
from conftest import Datasets, convert, open_loader, positional_labels, positional_samples

torch = pytest.importorskip("torch")

N = 200
STORED = ["uint8", "float16", "bfloat16", "float32"]


@pytest.fixture(scope="module")
def images():
    return positional_samples(N, Datasets.SHAPE)


def stored_dataset(datasets, images, stored):
    # Every stored dtype holds the uint8 values 0..255 exactly, so the stored values are `images`.
    return datasets.make(f"decode-{stored}", images, positional_labels(N), "--dtype", stored,
                         "--chunk-size", "8KiB")


def reference(images, indices, header, normalize, layout, dtype):
    """What the loader must hand out, computed here from the stored values."""
    x = images[np.asarray(indices)].astype(np.float32)
    if normalize:
        mean = np.asarray(header.mean, dtype=np.float32).reshape(1, -1, 1, 1)
        std = np.asarray(header.std, dtype=np.float32).reshape(1, -1, 1, 1)
        x = (x - mean) / np.where(std == 0, np.float32(1), std)
    if layout == "NHWC":
        x = np.ascontiguousarray(x.transpose(0, 2, 3, 1))
    t = torch.from_numpy(x)
    return {"float32": t, "bfloat16": t.to(torch.bfloat16), "float16": t.to(torch.float16),
            "uint8": t.to(torch.uint8)}[dtype]


def same_bits(a, b):
    if a.dtype in (torch.bfloat16, torch.float16):
        return torch.equal(a.view(torch.int16), b.view(torch.int16))
    if a.dtype == torch.float32:
        return torch.equal(a.view(torch.int32), b.view(torch.int32))
    return torch.equal(a, b)


# Every stored dtype x every output dtype it decodes to x layout x normalization (not of uint8
# output: test_integer_output_refuses_normalize).
CASES = [(stored, dtype, layout, normalize)
         for stored in STORED
         for dtype in sorted({"float32", "bfloat16", "float16", stored})
         for layout in ("NCHW", "NHWC")
         for normalize in (True, False)
         if not (normalize and dtype == "uint8")]


@pytest.mark.parametrize("stored, dtype, layout, normalize", CASES)
def test_decode_equals_numpy(datasets, images, stored, dtype, layout, normalize):
    loader = open_loader(stored_dataset(datasets, images, stored), 64, dtype=dtype,
                         layout=layout, normalize=normalize)
    count = 0
    for samples, labels in loader:
        assert samples.dtype == dtype
        expect = reference(images, samples.indices, loader.dataset, normalize, layout, dtype)
        got = torch.from_dlpack(samples)
        assert got.shape == expect.shape
        assert same_bits(got, expect)
        assert np.array_equal(labels.numpy(), np.asarray(samples.indices) % 10)
        count += samples.shape[0]
    assert count == N


def test_defaults_are_normalized_float32(datasets, images):
    loader = ringfeed.Loader(stored_dataset(datasets, images, "uint8"), 50, device="cpu",
                             io="buffered")
    samples, _ = next(iter(loader))
    assert samples.dtype == "float32" and samples.shape == (50, 3, 4, 5)
    expect = reference(images, samples.indices, loader.dataset, True, "NCHW", "float32")
    assert same_bits(torch.from_dlpack(samples), expect)


def test_header_statistics_are_the_stored_values(datasets, images):
    header = open_loader(stored_dataset(datasets, images, "uint8")).dataset
    x = images.astype(np.float64)
    assert header.shape == Datasets.SHAPE and header.dtype == "uint8"
    assert header.samples == N and header.classes == 10 and header.label_dtype == "uint8"
    np.testing.assert_allclose(header.mean, x.mean(axis=(0, 2, 3)), rtol=1e-4)
    np.testing.assert_allclose(header.std, x.std(axis=(0, 2, 3)), rtol=1e-3)


def test_integer_output_refuses_normalize(datasets, images):
    with pytest.raises(ringfeed.UsageError, match="normalize"):
        open_loader(stored_dataset(datasets, images, "uint8"), dtype="uint8", normalize=True)


@pytest.mark.parametrize("stored", ["int32", "int64", "uint16"])
def test_token_ids_come_out_exactly(datasets, stored):
    length = 24
    base = {"int32": 2**30, "int64": 2**40, "uint16": 0}[stored]
    i = np.arange(N, dtype=np.int64)[:, None]
    j = np.arange(length, dtype=np.int64)
    ids = i * length + j if stored == "uint16" else base + i * 1000 + j
    path = datasets.make(f"tokens-{stored}", ids.astype(stored), None, "--chunk-size", "8KiB")
    loader = open_loader(path, 32, dtype=None)
    assert loader.dataset.dtype == stored and loader.dataset.shape == (length,)
    assert loader.dataset.classes == 0
    seen = []
    for samples, labels in loader:
        assert samples.dtype == stored and samples.shape[1:] == (length,)
        got = np.from_dlpack(samples) if stored != "uint16" else samples.numpy()
        assert np.array_equal(got, ids[np.asarray(samples.indices)].astype(stored))
        assert not labels.numpy().any()
        seen.extend(samples.indices)
    assert sorted(seen) == list(range(N))
    with pytest.raises(ringfeed.UsageError, match="dtype uint8 cannot be decoded from " + stored):
        open_loader(path, dtype="uint8")
