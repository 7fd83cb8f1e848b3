"""Augmentation (augment="crop:P,flip,erase:P"): each sample is its stored image shifted (zeros
filled in), mirrored and erased as the spec says, checked here from the stored values alone; the
same sample gets the same transform whatever the batch size, and load_state_dict resumes the
augmented batches exactly; a bad spec is a UsageError naming --augment."""

import json

import numpy as np
import pytest

import ringfeed
from conftest import Datasets, open_loader, positional_samples

IMAGES = positional_samples(Datasets.SAMPLES, Datasets.SHAPE)  # (C, H, W) = (3, 4, 5)


def augmented(path, spec, **options):
    """{index: sample} over one epoch of a loader with augment=spec."""
    out = {}
    for samples, _ in open_loader(path, augment=spec, **options):
        for i, x in zip(samples.indices, samples.numpy()):
            out[i] = x.copy()
    assert len(out) == Datasets.SAMPLES
    return out


def shifted(x, dy, dx):
    """x (C, H, W) read at (y + dy, x + dx), 0 outside."""
    _, h, w = x.shape
    out = np.zeros_like(x)
    ys, xs = slice(max(0, -dy), min(h, h - dy)), slice(max(0, -dx), min(w, w - dx))
    out[:, ys, xs] = x[:, max(0, dy):min(h, h + dy), max(0, dx):min(w, w + dx)]
    return out


def test_crop_shifts_each_sample_with_zeros_filled_in(datasets):
    seen = set()
    for i, x in augmented(datasets.positional(), "crop:1").items():
        shifts = [(dy, dx) for dy in (-1, 0, 1) for dx in (-1, 0, 1)
                  if np.array_equal(x, shifted(IMAGES[i], dy, dx))]
        assert shifts, f"sample {i} is no shift of its image"
        seen.add(shifts[0])
    assert len(seen) == 9  # every shift of [-1, 1]^2 drawn


def test_crop_pads_with_zero_after_normalization(datasets):
    path = datasets.positional()
    header = ringfeed.dataset_info(path)
    mean = np.asarray(header.mean, np.float32).reshape(-1, 1, 1)
    std = np.asarray(header.std, np.float32).reshape(-1, 1, 1)
    std = np.where(std == 0, np.float32(1), std)
    for i, x in augmented(path, "crop:2", dtype="float32", normalize=True).items():
        ok = False
        for dy in range(-2, 3):
            for dx in range(-2, 3):
                inside = shifted(np.ones_like(IMAGES[i]), dy, dx).astype(bool)
                want = np.where(inside, (shifted(IMAGES[i], dy, dx).astype(np.float32) - mean) / std,
                                np.float32(0))
                ok = ok or np.array_equal(x.view(np.int32), want.astype(np.float32).view(np.int32))
        assert ok, f"sample {i}"


def test_flip_mirrors_about_half_the_samples(datasets):
    flipped = 0
    for i, x in augmented(datasets.positional(), "flip").items():
        if np.array_equal(x, IMAGES[i][:, :, ::-1]):
            flipped += 1
        else:
            assert np.array_equal(x, IMAGES[i]), f"sample {i}"
    assert 400 < flipped < 600


def test_erase_zeroes_one_rectangle(datasets):
    erased = 0
    for i, x in augmented(datasets.positional(), "erase:1").items():
        changed = np.any(x != IMAGES[i], axis=0)
        if not changed.any():
            continue  # erased pixels that held zeros, or no rectangle fitted
        erased += 1
        ys, xs = np.nonzero(changed)
        box = x[:, ys.min():ys.max() + 1, xs.min():xs.max() + 1]
        assert not box.any(), f"sample {i}: changed pixels outside a zeroed rectangle"
    assert erased > 900


def test_the_same_sample_gets_the_same_transform_whatever_the_batch(datasets):
    path = datasets.positional()
    a = augmented(path, "crop:1,flip,erase:0.5", batch_size=32)
    b = augmented(path, "crop:1,flip,erase:0.5", batch_size=7, shuffle="none")
    assert all(np.array_equal(a[i], b[i]) for i in a)
    other_seed = augmented(path, "crop:1,flip,erase:0.5", seed=6)
    assert any(not np.array_equal(a[i], other_seed[i]) for i in a)


def test_resume_mid_epoch_gives_the_uninterrupted_augmented_batches(datasets):
    path = datasets.positional()
    spec = "crop:1,flip,erase:0.5"

    def batches(loader, count=None):
        out = []
        for samples, _ in loader:
            out.append((list(samples.indices), samples.numpy().copy()))
            if count is not None and len(out) == count:
                break
        return out

    whole = open_loader(path, augment=spec)
    reference = batches(whole) + batches(whole)  # two epochs
    first = open_loader(path, augment=spec)
    before = batches(first, 9)
    state = json.loads(json.dumps(first.state_dict()))
    restored = open_loader(path, augment=spec)
    restored.load_state_dict(state)
    got = before + batches(restored) + batches(restored)
    assert len(got) == len(reference)
    for (gi, gx), (ri, rx) in zip(got, reference):
        assert gi == ri and np.array_equal(gx, rx)


def test_no_augment_is_the_plain_decode(datasets):
    path = datasets.positional()
    for spec in (None, "none", ""):
        for i, x in augmented(path, spec).items():
            assert np.array_equal(x, IMAGES[i])


@pytest.mark.parametrize("spec, message", [
    ("crop", r"--augment: 'crop': crop needs a padding"),
    ("flip,flip", r"--augment: 'flip': flip given twice"),
    ("erase:0", r"--augment: 'erase:0': erase needs a probability"),
    ("rotate:5", r"--augment: 'rotate:5': unknown transform 'rotate'"),
])
def test_a_bad_spec_is_a_usage_error(datasets, spec, message):
    with pytest.raises(ringfeed.UsageError, match=message):
        open_loader(datasets.positional(), augment=spec)
    with pytest.raises(ringfeed.UsageError, match="augment must be text"):
        open_loader(datasets.positional(), augment=4)
