"""Decoded images: a dataset of image records (ringfeed-convert images) through
ringfeed.Loader(..., image_size=S).

The crops against torchvision's RandomResizedCrop.get_params re-implemented here from its source
and fed the same uniform draws (Philox4x32-10 written here too, keyed as core/augment.h says);
the pixels of a set of real photographs (tools/bench/make_jpeg_set.py's, from scikit-image's
sample photos) against PIL's decode, crop and bilinear resize of the same bytes (torchvision's
PIL path), within 1 level of 255; the float output as the pixels normalized; a resumed loader's
crops; bad records stopping the loader, or skipped and reported; the options.
"""

import inspect
import io
import math
import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import ringfeed
from ringfeed import BadRecordsSkipped, DataError, UsageError

from conftest import photographs_or_skip

REPO = Path(__file__).resolve().parents[2]
SEED = 3

# --- Philox4x32-10 and torchvision's get_params, written from their definitions -----------------

M0, M1, W0, W1 = 0xD2511F53, 0xCD9E8D57, 0x9E3779B9, 0xBB67AE85
MASK = 0xFFFFFFFF


def philox(ctr, key):
    """Random123's philox4x32_R(10, ctr, key)."""
    ctr, key = list(ctr), list(key)
    for r in range(10):
        if r > 0:
            key = [(key[0] + W0) & MASK, (key[1] + W1) & MASK]
        p0, p1 = M0 * ctr[0], M1 * ctr[2]
        ctr = [(p1 >> 32) ^ ctr[1] ^ key[0], p1 & MASK, (p0 >> 32) ^ ctr[3] ^ key[1], p0 & MASK]
    return ctr


def draws(seed, epoch, index, block):
    """Block `block` of sample `index`'s stream (core/augment.h's Draws)."""
    return philox([index & MASK, index >> 32, seed >> 32, block], [seed & MASK, epoch & MASK])


def get_params(seed, epoch, index, height, width, near_half):
    """torchvision.transforms.RandomResizedCrop.get_params(img, (0.08, 1.0), (3/4, 4/3)), its
    uniform draws u = draw / 2^32 of blocks 17 to 26 (core/resized_crop.h), then the flip of
    block 16. `near_half` counts square roots within 1e-5 of a half-integer."""
    area = height * width
    log_ratio = (math.log(3 / 4), math.log(4 / 3))
    for k in range(10):
        v = draws(seed, epoch, index, 17 + k)
        target_area = area * (0.08 + (1.0 - 0.08) * v[0] / 2**32)
        aspect_ratio = math.exp(log_ratio[0] + (log_ratio[1] - log_ratio[0]) * v[1] / 2**32)
        sw, sh = math.sqrt(target_area * aspect_ratio), math.sqrt(target_area / aspect_ratio)
        near_half[0] += sum(abs(s - math.floor(s) - 0.5) < 1e-5 for s in (sw, sh))
        w, h = int(round(sw)), int(round(sh))
        if 0 < w <= width and 0 < h <= height:
            i = (v[2] * (height - h + 1)) >> 32  # torch.randint(0, height - h + 1)
            j = (v[3] * (width - w + 1)) >> 32
            break
    else:
        in_ratio = width / height
        if in_ratio < 3 / 4:
            w, h = width, int(round(width / (3 / 4)))
        elif in_ratio > 4 / 3:
            h, w = height, int(round(height * (4 / 3)))
        else:
            w, h = width, height
        i, j = (height - h) // 2, (width - w) // 2
    flip = draws(seed, epoch, index, 16)[0] >= 2**31
    return i, j, h, w, flip


def test_crops_are_torchvisions_get_params_of_the_same_draws():
    near_half, differ = [0], 0
    for height, width in [(375, 500), (500, 375), (224, 224), (3, 4000), (1200, 33)]:
        for index in range(0, 600000, 997):  # indices past 2^16 too
            want = get_params(7, 2, index, height, width, near_half)
            got = ringfeed._ringfeed.random_resized_crop(7, 2, index, height, width)
            differ += tuple(got) != want
    assert differ <= near_half[0] and differ <= 1


def test_the_centre_crop_is_resize_then_center_crop():
    # Resize(256): 500x375 -> 341x256; CenterCrop(224): top round(16.0), left round(58.5) = 58.
    assert ringfeed._ringfeed.center_crop(375, 500, 224) == (16, 58, 224, 224, 256, 341)
    with pytest.raises(UsageError):
        ringfeed._ringfeed.random_resized_crop(0, 0, 0, 0, 10)


# --- A set of real photographs --------------------------------------------------------------------


@pytest.fixture(scope="module")
def photos(tmp_path_factory):
    """(dataset path, {index: jpeg bytes}) of 48 JPEGs of 500x375 (or 375x500) made by
    tools/bench/make_jpeg_set.py from scikit-image's photographs, converted by ringfeed-convert."""
    pytest.importorskip("PIL")
    photographs = photographs_or_skip()
    tool = os.environ.get("RINGFEED_CONVERT")
    if not tool:
        pytest.skip("RINGFEED_CONVERT is not set (ctest sets it to the built ringfeed-convert)")
    root = tmp_path_factory.mktemp("photos")
    subprocess.run([sys.executable, str(REPO / "tools/bench/make_jpeg_set.py"), "-o",
                    str(root / "folder"), "--count", "48", "--workers", "1", "--data",
                    photographs], check=True, capture_output=True)
    data = root / "photos.rfd"
    subprocess.run([tool, "images", str(root / "folder"), "-o", str(data), "--chunk-size",
                    "256KiB", "-q"], check=True, capture_output=True)
    jpegs = {}
    for values, offsets, _ in ringfeed.Loader(data, batch_size=16, device="cpu", image_size=0):
        v, o = np.from_dlpack(values), np.from_dlpack(offsets)
        for i, g in enumerate(values.indices):
            jpegs[g] = v[o[i]:o[i + 1]].tobytes()
    assert len(jpegs) == 48
    return str(data), jpegs


def pil_reference(jpeg, size, crop, epoch, index, mode="RGB"):
    """torchvision's PIL path for one image: decode, (RandomResizedCrop: crop, then resize
    bilinear; flip) or (Resize(size / 0.875) bilinear, then CenterCrop), as uint8 HWC. mode
    "RGBA": convert("RGBA"), each band resized on its own (straight alpha: PIL's resize of an
    RGBA image premultiplies it, a tensor resize does not)."""
    from PIL import Image
    img = Image.open(io.BytesIO(jpeg)).convert(mode)
    width, height = img.size
    bands = img.split() if mode == "RGBA" else [img]
    if crop == "random":
        top, left, h, w, flip = ringfeed._ringfeed.random_resized_crop(SEED, epoch, index,
                                                                       height, width)
        outs = [b.crop((left, top, left + w, top + h)).resize((size, size), Image.BILINEAR)
                for b in bands]
        if flip:
            outs = [o.transpose(Image.FLIP_LEFT_RIGHT) for o in outs]
    else:
        top, left, _, _, rh, rw = ringfeed._ringfeed.center_crop(height, width, size)
        outs = [b.resize((rw, rh), Image.BILINEAR).crop((left, top, left + size, top + size))
                for b in bands]
    return np.asarray(outs[0]) if len(outs) == 1 else np.dstack([np.asarray(o) for o in outs])


@pytest.mark.parametrize("crop", ["random", "center"])
def test_photos_are_pils_decode_crop_and_resize_within_one_level(photos, crop):
    # 224 of 500x375 photos: the crops keep the full DCT scale, so PIL's decode (libjpeg-turbo
    # too) is the same image; PIL's two resize passes round in between, ringfeed's once.
    data, jpegs = photos
    loader = ringfeed.Loader(data, batch_size=16, device="cpu", dtype="uint8", layout="NHWC",
                             image_crop=crop, seed=SEED, image_threads=2)
    assert loader.dataset.media_type == "image/jpeg"
    worst, means, seen = 0, [], 0
    for epoch in (0, 1):
        loader.set_epoch(epoch)
        for samples, labels in loader:
            x = np.from_dlpack(samples)
            assert samples.shape == (len(samples.indices), 224, 224, 3) and samples.dtype == "uint8"
            assert np.from_dlpack(labels).dtype == np.int64
            for i, g in enumerate(samples.indices):
                d = np.abs(x[i].astype(int) - pil_reference(jpegs[g], 224, crop, epoch, g))
                worst, seen = max(worst, int(d.max())), seen + 1
                means.append(d.mean())
    assert seen == 96
    assert worst <= 1, worst
    assert max(means) < 0.25


def test_the_default_output_is_float32_normalized_with_imagenets_statistics(photos):
    data, _ = photos
    pixels = ringfeed.Loader(data, batch_size=16, device="cpu", dtype="uint8", image_size=64)
    floats = ringfeed.Loader(data, batch_size=16, device="cpu", image_size=64)
    (p, _), (f, _) = next(iter(pixels)), next(iter(floats))
    assert f.dtype == "float32" and f.shape == (16, 3, 64, 64) and p.shape == (16, 3, 64, 64)
    # ImageNet's 0.485, 0.456, 0.406 and 0.229, 0.224, 0.225, times 255.
    mean, std = np.float32([123.675, 116.28, 103.53]), np.float32([58.395, 57.12, 57.375])
    want = (np.from_dlpack(p).astype(np.float32) - mean[:, None, None]) / std[:, None, None]
    assert np.array_equal(np.from_dlpack(f), want)
    assert floats.stats()["image_threads"] >= 1


def test_a_resumed_loader_sees_the_crops_of_one_never_stopped(photos):
    data, _ = photos
    def loader():
        return ringfeed.Loader(data, batch_size=8, device="cpu", dtype="uint8", image_size=48,
                               seed=SEED)
    straight = loader()
    straight.set_epoch(1)
    whole = {g: np.from_dlpack(x)[i].copy() for x, _ in straight for i, g in enumerate(x.indices)}
    stopped = loader()
    stopped.set_epoch(1)
    it = iter(stopped)
    next(it), next(it)
    state = stopped.state_dict()
    resumed = loader()
    resumed.load_state_dict(state)
    rest = {g: np.from_dlpack(x)[i].copy() for x, _ in resumed for i, g in enumerate(x.indices)}
    assert len(rest) == 48 - 16
    for g, pixels in rest.items():
        assert np.array_equal(pixels, whole[g]), g


# --- Bad records -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def bad_set(photos, tmp_path_factory):
    """The photos with record 5 cut in half and record 20 a PNG signature and nothing of a PNG
    after it, in stored order."""
    _, jpegs = photos
    records = [jpegs[g] for g in range(48)]
    records[5] = records[5][:len(records[5]) // 2]
    records[20] = b"\x89PNG\r\n\x1a\n" + bytes(40)
    path = tmp_path_factory.mktemp("bad") / "bad.rfd"
    with ringfeed.DatasetWriter(path, records="bytes", media_type="image/jpeg", classes=14,
                                chunk_size="128KiB") as w:
        for g, r in enumerate(records):
            w.write(r, g % 14)
    return str(path)


def test_a_bad_record_stops_the_loader_naming_file_chunk_and_record(bad_set):
    loader = ringfeed.Loader(bad_set, batch_size=8, device="cpu", image_size=32, shuffle="none")
    with pytest.raises(DataError) as e:
        for _ in loader:
            pass
    assert e.value.path == bad_set and e.value.chunk is not None and e.value.offset is not None
    assert "record 5 (sample 5 of the dataset)" in str(e.value)
    assert "Premature end of JPEG file" in str(e.value)
    with open(bad_set, "rb") as f:  # the offset is the record's own first byte
        f.seek(e.value.offset)
        assert f.read(2) == b"\xff\xd8"


def test_skip_bad_records_skips_counts_and_warns_at_the_epochs_end(bad_set):
    loader = ringfeed.Loader(bad_set, batch_size=8, device="cpu", image_size=32, shuffle="none",
                             skip_bad_records=True)
    seen, sizes = [], []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for samples, labels in loader:
            seen += samples.indices
            sizes.append((samples.shape[0], samples.span))
    assert sorted(seen) == [g for g in range(48) if g not in (5, 20)]
    assert sizes[0] == (7, 8) and sizes[2] == (7, 8) and len(sizes) == 6
    assert loader.epoch == 1 and loader.position == 0
    skipped = [w for w in caught if issubclass(w.category, BadRecordsSkipped)]
    assert len(skipped) == 1
    text = str(skipped[0].message)
    assert text.startswith("2 bad image records skipped in epoch 0: sample 5 (")
    assert "JPEG: libjpeg-turbo: Premature end of JPEG file" in text
    assert "PNG: no IHDR chunk first" in text
    assert loader.stats()["records_skipped"] == 2


# --- Options ---------------------------------------------------------------------------------------


def test_image_options_and_what_they_refuse(photos):
    data, jpegs = photos
    # image_size=0: the records as stored.
    values, offsets, labels = next(iter(ringfeed.Loader(data, batch_size=4, device="cpu",
                                                        image_size=0)))
    o = np.from_dlpack(offsets)
    assert np.from_dlpack(values)[o[0]:o[1]].tobytes() == jpegs[values.indices[0]]
    # Evaluation crops are the same every epoch.
    center = ringfeed.Loader(data, batch_size=48, device="cpu", image_size=40,
                             image_crop="center", dtype="uint8", shuffle="none")
    first = np.from_dlpack(next(iter(center))[0]).copy()
    assert np.array_equal(np.from_dlpack(next(iter(center))[0]), first)
    for bad, match in [({"augment": "flip"}, "augment"),
                       ({"mean": [1, 2], "std": [1, 2]}, "3 channels"),
                       ({"dtype": "int32"}, "float32, bfloat16, float16 or uint8"),
                       ({"image_size": 0, "image_crop": "center"}, "image_crop"),
                       ({"image_size": 70000}, "image_size"),
                       ({"max_image_side": 0}, "max_image_side"),
                       ({"image_decoder": "nvjpeg"}, "image_decoder nvjpeg decodes on a GPU"),
                       ({"image_decoder": "gpu"}, "image_decoder")]:
        with pytest.raises(UsageError, match=match):
            ringfeed.Loader(data, batch_size=4, device="cpu", **bad)
    params = inspect.signature(ringfeed.Loader).parameters
    for name in ("image_size", "image_crop", "image_threads", "skip_bad_records",
                 "max_image_side", "image_decoder"):
        assert name in params
