"""Decoded images with their alpha kept: ringfeed.Loader(..., image_alpha="keep") against PIL.

Photographs (tools/bench/make_jpeg_set.py's) given an alpha of their own (a gradient with a
transparent band), saved by PIL as RGBA and grey + alpha PNGs, a palette PNG with a tRNS chunk,
a lossless and a lossy WebP with alpha, and, without alpha, a baseline JPEG and an RGB PNG; one
ImageFolder class a kind, converted by ringfeed-convert images as they are. Each record's RGBA
crop is PIL's convert("RGBA"), crop and bilinear resize of the same bytes (each band on its own)
within 1 level of 255, an image without alpha opaque; the float outputs' alpha is alpha / 255;
the options that make no sense are refused naming themselves.
"""


import numpy as np
import pytest

import ringfeed

from conftest import codec_tree_dataset
from test_images import SEED, pil_reference

PER_KIND = 2


def with_alpha(im):
    """`im` (RGB) as RGBA: alpha a diagonal gradient, 0 in a band across the middle."""
    from PIL import Image
    w, h = im.size
    y, x = np.mgrid[0:h, 0:w]
    a = (40 + 215 * (x + y) / (w + h)).astype(np.uint8)
    a[(y > h // 3) & (y < h // 2)] = 0
    out = im.convert("RGBA")
    out.putalpha(Image.fromarray(a, "L"))
    return out


def palette_with_trns(im, f):
    p = im.quantize(64)
    p.save(f, "PNG", transparency=bytes(range(0, 256, 4)))  # each entry's own alpha


KINDS = {
    "jpeg-baseline": (".jpg", lambda im, f: im.save(f, "JPEG", quality=90)),
    "png-rgb": (".png", lambda im, f: im.save(f, "PNG")),
    "png-rgba": (".png", lambda im, f: with_alpha(im).save(f, "PNG")),
    "png-grey-alpha": (".png", lambda im, f: with_alpha(im).convert("LA").save(f, "PNG")),
    "png-palette-trns": (".png", palette_with_trns),
    "webp-lossless-alpha": (".webp", lambda im, f: with_alpha(im).save(f, "WEBP", lossless=True)),
    "webp-lossy-alpha": (".webp", lambda im, f: with_alpha(im).save(f, "WEBP", quality=85)),
}
OPAQUE = {"jpeg-baseline", "png-rgb"}


@pytest.fixture(scope="module")
def alphas(tmp_path_factory):
    """(dataset path, {index: (kind, file bytes)})."""
    data, files, _ = codec_tree_dataset(tmp_path_factory.mktemp("alpha"), KINDS, PER_KIND)
    return data, files


@pytest.mark.parametrize("crop", ["center", "random"])
def test_the_rgba_crop_is_pils_band_by_band_within_one_level(alphas, crop):
    data, files = alphas
    loader = ringfeed.Loader(data, batch_size=8, device="cpu", dtype="uint8", layout="NHWC",
                             image_crop=crop, seed=SEED, image_threads=2, image_alpha="keep")
    worst, means, transparent = {}, {}, {}
    for samples, _ in loader:
        x = np.from_dlpack(samples)
        assert x.shape == (len(samples.indices), 224, 224, 4)
        for i, g in enumerate(samples.indices):
            kind, record = files[g]
            want = pil_reference(record, 224, crop, 0, g, mode="RGBA")
            d = np.abs(x[i].astype(int) - want)
            worst[kind] = max(worst.get(kind, 0), int(d.max()))
            means[kind] = max(means.get(kind, 0.0), float(d.mean()))
            transparent[kind] = transparent.get(kind, 0) + int((x[i, :, :, 3] < 128).sum())
            if kind in OPAQUE:
                assert (x[i, :, :, 3] == 255).all(), kind
    assert sorted(worst) == sorted(KINDS)
    assert all(w <= 1 for w in worst.values()), worst
    assert all(m < 0.25 for m in means.values()), means
    # The alpha is really there: every kind with alpha has pixels below half opacity.
    assert all(transparent[k] > 0 for k in KINDS if k not in OPAQUE), transparent


def test_float_outputs_normalize_the_alpha_by_its_own_statistics(alphas):
    data, _ = alphas
    kw = dict(batch_size=8, device="cpu", layout="NCHW", image_crop="center", shuffle="none",
              image_threads=2, image_alpha="keep")
    u8 = [np.from_dlpack(s).copy() for s, _ in ringfeed.Loader(data, dtype="uint8", **kw)]
    f32 = [np.from_dlpack(s).copy() for s, _ in ringfeed.Loader(data, dtype="float32", **kw)]
    mean = (123.675, 116.28, 103.53, 0.0)
    std = (58.395, 57.12, 57.375, 255.0)
    for a, b in zip(u8, f32):
        assert b.shape == a.shape and a.shape[1] == 4
        want = (a.astype(np.float32) - np.array(mean, np.float32)[None, :, None, None]) / \
            np.array(std, np.float32)[None, :, None, None]
        assert np.array_equal(b, want)
    # Four statistics of one's own.
    mine = [np.from_dlpack(s).copy() for s, _ in ringfeed.Loader(
        data, dtype="float32", mean=(0, 0, 0, 127.5), std=(255, 255, 255, 127.5), **kw)]
    assert np.array_equal(mine[0][:, 3], (u8[0][:, 3].astype(np.float32) - 127.5) /
                          np.float32(127.5))


def test_options_that_would_do_nothing_are_refused_naming_themselves(alphas, tmp_path):
    data, _ = alphas
    with pytest.raises(ringfeed.UsageError, match="mean and std: decoded images have 4 channels"):
        ringfeed.Loader(data, batch_size=8, device="cpu", image_alpha="keep",
                        mean=(1, 2, 3, 4, 5), std=(1, 1, 1, 1, 1))
    with pytest.raises(ringfeed.UsageError, match="decoded images have 3 channels"):
        ringfeed.Loader(data, batch_size=8, device="cpu", mean=(1, 2, 3, 4), std=(1, 1, 1, 1))
    with pytest.raises(ringfeed.UsageError, match="image_alpha: image_size 0"):
        ringfeed.Loader(data, batch_size=8, device="cpu", image_size=0, image_alpha="keep")
    with pytest.raises(ringfeed.UsageError, match="image_alpha"):
        ringfeed.Loader(data, batch_size=8, device="cpu", image_alpha="half")
    tensors = tmp_path / "t.rfd"
    with ringfeed.DatasetWriter(str(tensors), shape=(3, 4, 4), dtype="uint8") as w:
        w.write(np.zeros((4, 3, 4, 4), np.uint8), np.zeros(4, np.int64))
    with pytest.raises(ringfeed.UsageError, match="image_alpha: this dataset's batches are no"):
        ringfeed.Loader(str(tensors), batch_size=2, device="cpu", image_alpha="keep")


def test_the_state_records_the_alpha_and_a_loader_of_the_other_refuses_it(alphas):
    data, _ = alphas
    kw = dict(batch_size=4, device="cpu", image_size=32, image_threads=2)
    keep = ringfeed.Loader(data, image_alpha="keep", **kw)
    next(iter(keep))
    state = keep.state_dict()
    assert state["image_alpha"] == "keep" and state["version"] == 6
    with pytest.raises(ringfeed.UsageError, match="image_alpha: the state has 'keep', this loader "
                                                  "'drop'"):
        ringfeed.Loader(data, **kw).load_state_dict(state)
    again = ringfeed.Loader(data, image_alpha="keep", **kw)
    again.load_state_dict(state)
    assert again.position == keep.position
    # A state of before the alpha was recorded (version 5) loads into either.
    old = {k: v for k, v in state.items() if k != "image_alpha"}
    old["version"] = 5
    ringfeed.Loader(data, **kw).load_state_dict(old)
