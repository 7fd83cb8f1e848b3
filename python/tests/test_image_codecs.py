"""Image records of every codec through ringfeed.Loader(..., image_size=S), against PIL.

The same photographs (tools/bench/make_jpeg_set.py's, from scikit-image's sample photos) saved by
PIL as baseline, progressive and CMYK JPEGs, as PNGs (RGB, palette, grey with alpha, RGBA) and as
WebPs (lossy, lossless, lossy with alpha), one ImageFolder class a kind, converted by
ringfeed-convert images as they are (a dataset of media type image/*): each record's crop is
PIL's decode, crop and bilinear resize of the same bytes (torchvision's PIL path) within 1 level
of 255, its mean within 1 (the issue's bound), the centre crop and the training crop alike.
"""


import numpy as np
import pytest

import ringfeed

from conftest import codec_tree_dataset
from test_images import SEED, pil_reference


# The kinds: ImageFolder class name -> how PIL saves a photo as it.
KINDS = {
    "jpeg-baseline": lambda im, f: im.save(f, "JPEG", quality=90),
    "jpeg-progressive": lambda im, f: im.save(f, "JPEG", quality=90, progressive=True),
    "jpeg-cmyk": lambda im, f: im.convert("CMYK").save(f, "JPEG", quality=92),
    "png-rgb": lambda im, f: im.save(f, "PNG"),
    "png-palette": lambda im, f: im.quantize(200).save(f, "PNG"),
    "png-grey-alpha": lambda im, f: im.convert("LA").save(f, "PNG"),
    "png-rgba": lambda im, f: im.convert("RGBA").save(f, "PNG"),
    "webp-lossy": lambda im, f: im.save(f, "WEBP", quality=80),
    "webp-lossless": lambda im, f: im.save(f, "WEBP", lossless=True),
    "webp-alpha": lambda im, f: im.convert("RGBA").save(f, "WEBP", quality=80),
}
EXTENSION = {"jpeg": ".jpg", "png": ".png", "webp": ".webp"}
PER_KIND = 3


@pytest.fixture(scope="module")
def codecs(tmp_path_factory):
    """(dataset path, {index: (kind, file bytes)}): PER_KIND photos of each kind."""
    kinds = {k: (EXTENSION[k.split("-")[0]], save) for k, save in KINDS.items()}
    data, files, out = codec_tree_dataset(tmp_path_factory.mktemp("codecs"), kinds, PER_KIND,
                                          ["--chunk-size", "256KiB"])
    assert f"{len(KINDS) * PER_KIND} images (" in out, out
    assert "image/*" in out, out
    assert ringfeed.dataset_info(data).media_type == "image/*"
    return data, files


@pytest.mark.parametrize("crop", ["center", "random"])
def test_every_codec_is_pils_decode_crop_and_resize_within_one_level(codecs, crop):
    data, files = codecs
    loader = ringfeed.Loader(data, batch_size=8, device="cpu", dtype="uint8", layout="NHWC",
                             image_crop=crop, seed=SEED, image_threads=2)
    worst, means = {}, {}
    for samples, _ in loader:
        x = np.from_dlpack(samples)
        for i, g in enumerate(samples.indices):
            kind, record = files[g]
            d = np.abs(x[i].astype(int) - pil_reference(record, 224, crop, 0, g))
            worst[kind] = max(worst.get(kind, 0), int(d.max()))
            means[kind] = max(means.get(kind, 0.0), float(d.mean()))
    assert sorted(worst) == sorted(KINDS)
    # Each kind's every pixel within 1 level of PIL's; its mean far below the bound of 1.
    assert all(w <= 1 for w in worst.values()), worst
    assert all(m < 0.25 for m in means.values()), means


def test_the_records_are_the_files_bytes_and_the_loader_describes_the_decode(codecs):
    data, files = codecs
    kinds = {kind for kind, _ in files.values()}
    assert kinds == set(KINDS)
    signatures = {"jpeg": b"\xff\xd8\xff", "png": b"\x89PNG\r\n\x1a\n", "webp": b"RIFF"}
    for kind, record in files.values():
        assert record.startswith(signatures[kind.split("-")[0]]), kind
    info = ringfeed.dataset_info(data)
    assert info.media_type == "image/*" and info.record_kind == "bytes"
    loader = ringfeed.Loader(data, batch_size=8, device="cpu", image_size=32, image_threads=2)
    assert "image decode on 2 CPU threads" in repr(loader)
