"""Fixtures of the ringfeed package's tests: datasets made by the built ringfeed-convert from numpy
arrays whose every sample encodes its own index (the project's one positional pattern, as
tests/testing/positional_data.h writes it: bytes 0-7 of sample i hold i as a little-endian uint64,
byte k >= 8 holds (i * 31 + k) & 0xff; its label is i % 10), so any misordered, repeated, lost or
damaged sample shows.

ctest runs these against the build tree (PYTHONPATH=<build>/python) and names the converter in
RINGFEED_CONVERT; without it the tests skip. tools/test_wheel.sh runs them against a wheel
installed into a virtual environment, with no build tree on sys.path, RINGFEED_CONVERT naming the
wheel's console entry point and RINGFEED_TEST_WHEEL=1, under which `ringfeed` must be the
installed distribution's (installed_package() says where it is from).
"""

import os
import subprocess
from pathlib import Path
from typing import Dict, Optional, Sequence

import numpy as np
import pytest

import ringfeed


def installed_package() -> Optional[Path]:
    """The directory of the installed distribution `ringfeed` (a wheel's), where the imported
    package is that one; None where it is not (the build tree, or a CMake install, which records
    no distribution)."""
    try:
        from importlib import metadata
        init = metadata.distribution("ringfeed").locate_file("ringfeed/__init__.py")
    except Exception:  # no such distribution (PackageNotFoundError), or no importlib.metadata
        return None
    here = Path(ringfeed.__file__).resolve()
    return here.parent if Path(init).resolve() == here else None


if os.environ.get("RINGFEED_TEST_WHEEL") == "1" and installed_package() is None:
    raise pytest.UsageError(f"RINGFEED_TEST_WHEEL=1, but ringfeed was imported from "
                            f"{ringfeed.__file__}, not from an installed wheel (is a build tree on "
                            f"PYTHONPATH?)")

CLASSES = 10


def photographs_or_skip() -> str:
    """The folder of photographs tools/bench/make_jpeg_set.py makes its JPEGs from:
    $RINGFEED_PHOTOS (tools/bench/carry_photos.sh's copy) or Debian's python3-skimage data; the
    calling test or fixture is skipped, naming both, where neither holds them (scikit-image from
    pip fetches its photographs on first use, which an offline machine cannot)."""
    photos = os.environ.get("RINGFEED_PHOTOS", "/usr/lib/python3/dist-packages/skimage/data")
    if not os.path.isfile(os.path.join(photos, "astronaut.png")):
        pytest.skip(f"no photographs in {photos} (apt-get install python3-skimage, or "
                    f"RINGFEED_PHOTOS naming tools/bench/carry_photos.sh's copy)")
    return photos


def positional_samples(n: int, shape: Sequence[int]) -> np.ndarray:
    """n uint8 samples of `shape` in the positional pattern."""
    elems = int(np.prod(shape))
    k = np.arange(elems, dtype=np.int64)
    i = np.arange(n, dtype=np.int64)[:, None]
    x = ((i * 31 + k) & 0xFF).astype(np.uint8)
    head = min(8, elems)
    x[:, :head] = np.arange(n, dtype="<u8").view(np.uint8).reshape(n, 8)[:, :head]
    return x.reshape((n,) + tuple(shape))


def positional_labels(n: int) -> np.ndarray:
    return (np.arange(n) % CLASSES).astype(np.uint8)


def index_of(samples) -> np.ndarray:
    """The index each sample of a batch encodes: samples in NCHW (or the stored shape), values
    as stored (uint8, or floats holding them exactly)."""
    a = np.asarray(samples)
    head = a.reshape(a.shape[0], -1)[:, :8].astype(np.uint64)
    return (head << (np.uint64(8) * np.arange(8, dtype=np.uint64))).sum(axis=1, dtype=np.uint64)


def convert(out: Path, images: np.ndarray, labels: Optional[np.ndarray], *flags: str) -> str:
    """Writes `images` (and `labels`) as .npy files beside `out` and converts them with the
    built ringfeed-convert; returns the dataset's path."""
    tool = os.environ.get("RINGFEED_CONVERT")
    if not tool:
        pytest.skip("RINGFEED_CONVERT is not set (ctest sets it to the built ringfeed-convert)")
    x = out.with_suffix(".x.npy")
    np.save(x, images)
    cmd = [tool, "npy", "--images", str(x), "-o", str(out), "-q", *flags]
    if labels is not None:
        y = out.with_suffix(".y.npy")
        np.save(y, labels)
        cmd += ["--labels", str(y)]
    done = subprocess.run(cmd, capture_output=True, text=True)
    assert done.returncode == 0, f"{' '.join(cmd)}: {done.stdout}{done.stderr}"
    return str(out)


class Datasets:
    """Datasets made once per session, by name."""

    SAMPLES = 1000
    SHAPE = (3, 4, 5)  # 60 bytes: 4 KiB chunks hold 66 samples, so 1000 samples are 16 chunks

    def __init__(self, root: Path) -> None:
        self.root = root
        self._made: Dict[str, str] = {}

    def make(self, name: str, images: np.ndarray, labels: Optional[np.ndarray], *flags: str) -> str:
        if name not in self._made:
            self._made[name] = convert(self.root / f"{name}.rfd", images, labels, *flags)
        return self._made[name]

    def positional(self, n: int = SAMPLES, shards: int = 1, chunk_size: str = "4KiB",
                   compress: str = "none") -> str:
        """The standard test dataset: n positional uint8 samples of SHAPE, labels i % 10; stored
        with the codec `compress` (format version 2 where it is not none)."""
        codec = "" if compress == "none" else "-" + compress.replace(":", "")
        return self.make(f"positional-{n}-{shards}-{chunk_size}{codec}",
                         positional_samples(n, self.SHAPE), positional_labels(n),
                         "--chunk-size", chunk_size, "--shards", str(shards),
                         "--compress", compress)


@pytest.fixture(scope="session")
def datasets(tmp_path_factory) -> Datasets:
    return Datasets(tmp_path_factory.mktemp("datasets"))


# Options every test loader takes unless it says otherwise: the CPU, the stored bytes (uint8, not
# normalized), a small window so an epoch has several, buffered reads (a temporary directory may
# be on tmpfs, which refuses O_DIRECT).
DEFAULTS = dict(device="cpu", dtype="uint8", io="buffered", shuffle_window=3, ring_slots=4,
                seed=5)


def open_loader(data, batch_size: int = 32, **options) -> ringfeed.Loader:
    return ringfeed.Loader(data, batch_size, **{**DEFAULTS, **options})


def epoch_indices(loader: ringfeed.Loader) -> list:
    """One iteration's sample indices, in order, checking each batch's labels and that the
    batch's own index list matches what its samples encode."""
    seen = []
    for samples, labels in loader:
        idx = index_of(samples.numpy())
        assert list(idx) == samples.indices
        assert np.array_equal(labels.numpy(), idx % CLASSES)
        seen.extend(int(i) for i in idx)
    return seen
