#!/usr/bin/env python3
"""The CPU JPEG path's speed (issue 25's CPU goal), on the same files, in interleaved rounds:

  turbojpeg   libjpeg-turbo's own full decode, one core: a loop over tjDecompress2 (through
              ctypes; the GIL is released in the call) of every file, held in memory, to RGB
  ringfeed-1  ringfeed.Loader(image_size=S, image_threads=1) over the dataset of those files
              (page-cached): the decode and the fused crop, resize, flip and normalization, as
              training reads it (float32 NCHW, and uint8), batches handed out and dropped; one
              loader a contestant, its first epoch (the first touch of its buffers) before the
              rounds, one epoch a round; images/s, and images per CPU-second of the whole
              process (its reader and copy threads included: the rate per core)
  ringfeed-N  the same with image_threads = every core of the machine
  PIL         PIL's decode, torchvision's RandomResizedCrop (torchvision's own transforms where
              it is installed, else the same get_params and PIL's crop and bilinear resize) and
              a random horizontal flip, one core, of every file, held in memory; and the same
              plus ToTensor and Normalize (float32 CHW), what a PyTorch DataLoader worker does

Each round runs every contestant once, in that order, so a machine shared with other work
slows them alike; the median round of each is reported. The goal (issue 25): ringfeed per core
at least 0.9 of libjpeg-turbo's own decode and at least 2x PIL with the crop.

    /usr/bin/python3 tools/bench/make_jpeg_set.py -o /tmp/jpegs --count 2000 --workers 2
    PYTHONPATH=build/python /usr/bin/python3 tools/bench/jpeg_cpu_bench.py /tmp/jpegs \\
        --convert build/bin/ringfeed-convert --rounds 5
"""

import argparse
import ctypes
import io
import math
import os
import random
import statistics
import subprocess
import sys
import time

import numpy as np

import ringfeed

TJPF_RGB = 0


def jpeg_files(folder, count):
    paths = []
    for d, _, names in sorted(os.walk(folder)):
        paths += [os.path.join(d, n) for n in sorted(names) if n.lower().endswith((".jpg", ".jpeg"))]
    paths.sort()
    if count:
        paths = paths[:count]
    data = []
    for p in paths:
        with open(p, "rb") as f:
            data.append(f.read())
    return paths, data


class TurboJpeg:
    """tjDecompress2 through ctypes, one handle, one output buffer grown to the largest image."""

    def __init__(self):
        self.lib = ctypes.CDLL("libturbojpeg.so.0")
        self.lib.tjInitDecompress.restype = ctypes.c_void_p
        self.lib.tjDecompressHeader3.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_ulong] + \
            [ctypes.POINTER(ctypes.c_int)] * 4
        self.lib.tjDecompress2.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_ulong,
                                           ctypes.c_void_p, ctypes.c_int, ctypes.c_int,
                                           ctypes.c_int, ctypes.c_int, ctypes.c_int]
        self.handle = self.lib.tjInitDecompress()
        self.out = ctypes.create_string_buffer(1)

    def decode(self, jpeg):
        w, h, s, c = (ctypes.c_int() for _ in range(4))
        if self.lib.tjDecompressHeader3(self.handle, jpeg, len(jpeg), ctypes.byref(w),
                                        ctypes.byref(h), ctypes.byref(s), ctypes.byref(c)) != 0:
            raise RuntimeError("tjDecompressHeader3 failed")
        need = w.value * h.value * 3
        if len(self.out) < need:
            self.out = ctypes.create_string_buffer(need)
        if self.lib.tjDecompress2(self.handle, jpeg, len(jpeg), self.out, w.value, 0, h.value,
                                  TJPF_RGB, 0) != 0:
            raise RuntimeError("tjDecompress2 failed")


def timed(fn):
    """(wall seconds, process CPU seconds) of fn()."""
    w, c = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - w, time.process_time() - c


def run_turbojpeg(jpegs):
    tj = TurboJpeg()
    return timed(lambda: [tj.decode(j) for j in jpegs])


class RingfeedEpochs:
    """One loader, its first epoch run at once (the first touch of its output buffers and
    staging: page faults a run pays once); each call times one more epoch, as training runs
    them."""

    def __init__(self, data, size, threads, dtype, batch):
        self.loader = ringfeed.Loader(data, batch_size=batch, device="cpu", image_size=size,
                                      image_threads=threads, dtype=dtype, shuffle="none")
        self.epoch()

    def epoch(self):
        n = 0
        for samples, _ in self.loader:
            n += samples.shape[0]
        return n

    def __call__(self):
        return timed(self.epoch)


def get_params(rng, height, width):
    """torchvision.transforms.RandomResizedCrop.get_params, scale (0.08, 1), ratio (3/4, 4/3)."""
    area = height * width
    log_ratio = (math.log(3 / 4), math.log(4 / 3))
    for _ in range(10):
        target_area = area * rng.uniform(0.08, 1.0)
        aspect = math.exp(rng.uniform(*log_ratio))
        w, h = int(round(math.sqrt(target_area * aspect))), int(round(math.sqrt(target_area / aspect)))
        if 0 < w <= width and 0 < h <= height:
            return rng.randint(0, height - h), rng.randint(0, width - w), h, w
    in_ratio = width / height
    if in_ratio < 3 / 4:
        w, h = width, int(round(width / (3 / 4)))
    elif in_ratio > 4 / 3:
        h, w = height, int(round(height * (4 / 3)))
    else:
        w, h = width, height
    return (height - h) // 2, (width - w) // 2, h, w


def pil_transform(size):
    """One image's PIL pipeline: decode, random resized crop, flip (torchvision's where
    installed)."""
    from PIL import Image
    try:
        import torchvision.transforms as T
        tv = T.Compose([T.RandomResizedCrop(size), T.RandomHorizontalFlip()])
        return "torchvision.transforms", lambda b: tv(Image.open(io.BytesIO(b)).convert("RGB"))
    except ImportError:
        rng = random.Random(0)
        def f(b):
            img = Image.open(io.BytesIO(b)).convert("RGB")
            top, left, h, w = get_params(rng, img.height, img.width)
            img = img.crop((left, top, left + w, top + h)).resize((size, size), Image.BILINEAR)
            return img.transpose(Image.FLIP_LEFT_RIGHT) if rng.random() < 0.5 else img
        return "PIL crop + resize(BILINEAR) + transpose, torchvision's get_params", f


MEAN = np.float32([0.485, 0.456, 0.406])[:, None, None]
STD = np.float32([0.229, 0.224, 0.225])[:, None, None]


def run_pil(jpegs, transform, to_tensor):
    def loop():
        for j in jpegs:
            img = transform(j)
            if to_tensor:  # ToTensor + Normalize: float32 CHW
                x = np.asarray(img, dtype=np.float32).transpose(2, 0, 1) / np.float32(255)
                (x - MEAN) / STD
    return timed(loop)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("folder", help="an ImageFolder of JPEGs (tools/bench/make_jpeg_set.py's)")
    p.add_argument("--data", help="its dataset (ringfeed-convert images); made with --convert "
                                  "where not given")
    p.add_argument("--convert", default="ringfeed-convert", help="the ringfeed-convert program")
    p.add_argument("--count", type=int, default=0, help="the first N files only (0: all)")
    p.add_argument("--size", type=int, default=224)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--threads", type=int, default=os.cpu_count(), help="ringfeed-N's threads")
    a = p.parse_args()

    paths, jpegs = jpeg_files(a.folder, a.count)
    n = len(jpegs)
    data = a.data
    if data is None:
        if a.count:
            sys.exit("jpeg_cpu_bench: give --data with --count (the dataset must hold the same files)")
        data = os.path.join(os.path.dirname(os.path.abspath(a.folder)),
                            os.path.basename(os.path.normpath(a.folder)) + ".rfd")
        if not os.path.exists(data):
            subprocess.run([a.convert, "images", a.folder, "-o", data, "-q"], check=True)
    info = ringfeed.dataset_info(data)
    if info.samples != n:
        sys.exit(f"jpeg_cpu_bench: {data} holds {info.samples} records, the folder {n} files")
    pil_name, transform = pil_transform(a.size)
    print(f"{n} JPEGs of {a.folder} ({sum(map(len, jpegs)) / n / 1e3:.1f} KB each), dataset "
          f"{data}; output {a.size}x{a.size}; {os.cpu_count()} cores; PIL: {pil_name}")

    contestants = [
        ("turbojpeg full decode, 1 core", lambda: run_turbojpeg(jpegs)),
        ("ringfeed decode+crop float32, 1 thread", RingfeedEpochs(data, a.size, 1, "float32", a.batch)),
        ("ringfeed decode+crop uint8, 1 thread", RingfeedEpochs(data, a.size, 1, "uint8", a.batch)),
        (f"ringfeed decode+crop float32, {a.threads} threads",
         RingfeedEpochs(data, a.size, a.threads, "float32", a.batch)),
        ("PIL decode+crop+flip, 1 core", lambda: run_pil(jpegs, transform, False)),
        ("PIL decode+crop+flip+ToTensor+Normalize, 1 core", lambda: run_pil(jpegs, transform, True)),
    ]
    results = {name: [] for name, _ in contestants}
    for r in range(a.rounds):
        for name, fn in contestants:
            results[name].append(fn())
        print(f"round {r + 1}: " + ", ".join(f"{name.split(',')[0]} {n / w:.0f}/s"
                                              for name, (w, _) in
                                              ((k, v[-1]) for k, v in results.items())), flush=True)
    print(f"\nmedian of {a.rounds} rounds (images/s of wall time; images per CPU-second of the "
          f"process):")
    rate = {}
    for name, runs in results.items():
        wall = statistics.median(n / w for w, _ in runs)
        cpu = statistics.median(n / c for _, c in runs)
        rate[name] = (wall, cpu)
        print(f"  {name:52s} {wall:8.0f}/s  {cpu:8.0f}/CPU-s")
    tj = rate["turbojpeg full decode, 1 core"][0]
    ours = rate["ringfeed decode+crop float32, 1 thread"]
    ours8 = rate["ringfeed decode+crop uint8, 1 thread"]
    pil = rate["PIL decode+crop+flip, 1 core"][0]
    pil_t = rate["PIL decode+crop+flip+ToTensor+Normalize, 1 core"][0]
    print(f"\nringfeed float32 per core / turbojpeg full decode: {ours[1] / tj:.2f} (per CPU-s), "
          f"{ours[0] / tj:.2f} (1 thread, wall); uint8: {ours8[1] / tj:.2f}, {ours8[0] / tj:.2f}")
    print(f"ringfeed float32 per core / PIL decode+crop+flip: {ours[1] / pil:.2f}; / PIL with "
          f"ToTensor+Normalize: {ours[1] / pil_t:.2f}")


if __name__ == "__main__":
    main()
