#!/usr/bin/env python3
"""An ImageNet-like set of JPEGs made from real photographs, as an ImageFolder tree.

The photographs are scikit-image's sample data, shipped by Debian's python3-skimage package
(/usr/lib/python3/dist-packages/skimage/data: astronaut, coffee, chelsea the cat, a rocket, a
motorcycle, the Hubble deep field, a retina, ...). Each image of the set is a random crop of one
of them (8% to 100% of its area, aspect ratio 3/4 to 4/3), scaled to about 500x375 (landscape,
or 375x500 for one image in four), flipped at random, with brightness, contrast and saturation
jittered (x0.7 to x1.3), and encoded as a baseline JPEG at --quality (90) with 4:2:0 chroma:
smooth skies, fur, text and noise of real scenes, not the random noise that is an entropy
decoder's worst case. Classes are the source photographs (one folder each: OUT/coffee/...).

With --mix web the set holds what web crawls and ImageNet hold besides baseline JPEGs, each image
drawn by its own generator: 8% progressive JPEGs, 1% CMYK JPEGs, 8% PNGs (RGB, one in four with
an alpha channel) and 8% WebPs (lossy at --quality, one in four with alpha), the rest baseline
JPEGs; each file named by its codec's extension. --mix progressive, png or webp makes every image
of that one kind (the per-codec decode rates; PNGs and WebPs one in four with alpha as above).

Deterministic: image i depends only on --seed and i (numpy's PCG64 seeded with both), so any
--workers count writes the same files. Needs python3-pil and python3-numpy (Debian), and
python3-skimage for the photographs.

    /usr/bin/python3 tools/bench/make_jpeg_set.py -o /data/jpegs              # 100,000 images
    /usr/bin/python3 tools/bench/make_jpeg_set.py -o /tmp/small --count 50    # the tests' set
"""

import argparse
import multiprocessing
import os
import sys

import numpy as np
from PIL import Image, ImageEnhance

DATA = "/usr/lib/python3/dist-packages/skimage/data"
# Photographs (not drawings, not binary masks), colour where scikit-image has them.
PHOTOS = [
    "astronaut.png",
    "coffee.png",
    "chelsea.png",
    "rocket.jpg",
    "motorcycle_left.png",
    "hubble_deep_field.jpg",
    "retina.jpg",
    "ihc.png",
    "camera.png",
    "coins.png",
    "moon.png",
    "grass.png",
    "gravel.png",
    "brick.png",
]

_sources = None


def load_sources(data_dir):
    out = []
    for name in PHOTOS:
        path = os.path.join(data_dir, name)
        if os.path.exists(path):
            out.append((os.path.splitext(name)[0], Image.open(path).convert("RGB")))
    if not out:
        sys.exit(f"make_jpeg_set: no photograph in {data_dir} (apt-get install python3-skimage)")
    return out


def _init(data_dir):
    global _sources
    _sources = load_sources(data_dir)


# --mix web: the cumulative shares of each kind but the baseline JPEG.
WEB_MIX = (("progressive", 0.08), ("cmyk", 0.09), ("png", 0.17), ("webp", 0.25))


def save(im, path_stem, kind, quality, rng):
    """Writes `im` as `kind`; returns the file's path."""
    if kind in ("png", "webp") and rng.random() < 0.25:
        im = im.convert("RGBA")
        im.putalpha(int(rng.integers(128, 256)))
    if kind == "png":
        path = path_stem + ".png"
        im.save(path, "PNG")
    elif kind == "webp":
        path = path_stem + ".webp"
        im.save(path, "WEBP", quality=quality)
    elif kind == "cmyk":
        path = path_stem + ".jpg"
        im.convert("CMYK").save(path, "JPEG", quality=quality)
    else:
        path = path_stem + ".jpg"
        im.save(path, "JPEG", quality=quality, subsampling=2, optimize=False,
                progressive=kind == "progressive")
    return path


def make_one(args):
    index, seed, out_dir, quality, width, height, mix = args
    rng = np.random.default_rng([seed, index])
    cls = index % len(_sources)
    name, src = _sources[cls]
    w, h = (width, height) if rng.random() >= 0.25 else (height, width)
    sw, sh = src.size
    # RandomResizedCrop's draw: an area fraction and a log-uniform aspect ratio.
    for _ in range(10):
        area = sw * sh * rng.uniform(0.08, 1.0)
        ratio = np.exp(rng.uniform(np.log(3 / 4), np.log(4 / 3)))
        cw, ch = int(round(np.sqrt(area * ratio))), int(round(np.sqrt(area / ratio)))
        if 0 < cw <= sw and 0 < ch <= sh:
            break
    else:
        cw, ch = sw, sh
    x, y = int(rng.integers(0, sw - cw + 1)), int(rng.integers(0, sh - ch + 1))
    im = src.crop((x, y, x + cw, y + ch)).resize((w, h), Image.BICUBIC)
    if rng.random() < 0.5:
        im = im.transpose(Image.FLIP_LEFT_RIGHT)
    for enhance in (ImageEnhance.Brightness, ImageEnhance.Contrast, ImageEnhance.Color):
        im = enhance(im).enhance(rng.uniform(0.7, 1.3))
    kind = "baseline"
    if mix == "web":
        u = rng.random()
        kind = next((k for k, top in WEB_MIX if u < top), "baseline")
    elif mix != "none":
        kind = mix
    path = save(im, os.path.join(out_dir, name, f"{name}_{index:07d}"), kind, quality, rng)
    return os.path.getsize(path)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("-o", "--output", required=True, help="the ImageFolder to write")
    p.add_argument("--count", type=int, default=100_000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--quality", type=int, default=90)
    p.add_argument("--size", default="500x375", help="WIDTHxHEIGHT of the landscape images")
    p.add_argument("--workers", type=int, default=os.cpu_count())
    p.add_argument("--data", default=DATA, help="where scikit-image's photographs are")
    p.add_argument("--mix", choices=("none", "web", "progressive", "png", "webp"), default="none",
                   help="web: progressive and CMYK JPEGs, PNGs and WebPs among the baseline JPEGs; "
                        "progressive, png, webp: every image of that kind")
    a = p.parse_args()
    width, height = (int(v) for v in a.size.split("x"))
    _init(a.data)
    for name, _ in _sources:
        os.makedirs(os.path.join(a.output, name), exist_ok=True)
    jobs = [(i, a.seed, a.output, a.quality, width, height, a.mix) for i in range(a.count)]
    if a.workers > 1 and a.count > 100:
        with multiprocessing.Pool(a.workers, initializer=_init, initargs=(a.data,)) as pool:
            sizes = pool.map(make_one, jobs, chunksize=64)
    else:
        sizes = [make_one(j) for j in jobs]
    print(f"wrote {a.count} {'JPEGs' if a.mix == 'none' else 'images'} of {len(_sources)} classes to {a.output}: "
          f"{sum(sizes) / 1e6:.1f} MB, {np.mean(sizes) / 1e3:.1f} KB each on average")


if __name__ == "__main__":
    main()
