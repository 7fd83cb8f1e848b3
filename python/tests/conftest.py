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

import copy
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Dict, Optional, Sequence

import numpy as np
import pytest

import ringfeed


def torchrun(ranks: int) -> list:
    """The command that starts `ranks` processes under torch.distributed.run, on a free port of
    loopback (the launcher's default, 29500, is taken by any other job using it at the time).
    --redirects 1 --tee 1: torch 1.13's launcher fails to parse its default "0" under Python 3.11
    (IntFlag iteration skips 0); teeing stdout works everywhere."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return [sys.executable, "-m", "torch.distributed.run", f"--nproc_per_node={ranks}",
            "--master_addr=127.0.0.1", f"--master_port={port}", "--redirects", "1", "--tee", "1"]


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
    $RINGFEED_PHOTOS (`tools/bench/carry.sh photos`'s copy) or Debian's python3-skimage data; the
    calling test or fixture is skipped, naming both, where neither holds them (scikit-image from
    pip fetches its photographs on first use, which an offline machine cannot)."""
    photos = os.environ.get("RINGFEED_PHOTOS", "/usr/lib/python3/dist-packages/skimage/data")
    if not os.path.isfile(os.path.join(photos, "astronaut.png")):
        pytest.skip(f"no photographs in {photos} (apt-get install python3-skimage, or "
                    f"RINGFEED_PHOTOS naming `tools/bench/carry.sh photos`'s copy)")
    return photos


def codec_tree_dataset(root: Path, kinds: Dict, per_kind: int, convert_args=()) -> tuple:
    """An ImageFolder tree under `root` of `per_kind` photographs (tools/bench/make_jpeg_set.py's)
    in each class of `kinds` (class name -> (file extension, save(PIL RGB image, path))),
    converted by ringfeed-convert images as they are: (the dataset's path, {sample index: (class
    name, the record's bytes)}, the converter's stdout). Skips where PIL (with WebP), the
    photographs or RINGFEED_CONVERT are missing."""
    image = pytest.importorskip("PIL.Image")
    from PIL import features
    if not features.check("webp"):
        pytest.skip("this PIL has no WebP")
    photographs = photographs_or_skip()
    tool = os.environ.get("RINGFEED_CONVERT")
    if not tool:
        pytest.skip("RINGFEED_CONVERT is not set (ctest sets it to the built ringfeed-convert)")
    repo = Path(__file__).resolve().parents[2]
    subprocess.run([sys.executable, str(repo / "tools/bench/make_jpeg_set.py"), "-o",
                    str(root / "jpegs"), "--count", str(per_kind), "--workers", "1", "--data",
                    photographs], check=True, capture_output=True)
    sources = sorted((root / "jpegs").rglob("*.jpg"))
    assert len(sources) == per_kind
    for kind, (ext, save) in kinds.items():
        folder = root / "tree" / kind
        folder.mkdir(parents=True)
        for i, src in enumerate(sources):
            save(image.open(src).convert("RGB"), folder / f"{i}{ext}")
    data = root / "codecs.rfd"
    out = subprocess.run([tool, "images", str(root / "tree"), "-o", str(data), *convert_args],
                         check=True, capture_output=True, text=True)
    files = {}
    loader = ringfeed.Loader(data, batch_size=8, device="cpu", image_size=0)
    for values, offsets, labels in loader:
        v, o, y = np.from_dlpack(values), np.from_dlpack(offsets), np.from_dlpack(labels)
        for i, g in enumerate(values.indices):
            files[g] = (sorted(kinds)[int(y[i])], v[o[i]:o[i + 1]].tobytes())
    assert len(files) == len(kinds) * per_kind
    return str(data), files, out.stdout


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


# --- Token documents and state dicts (packed sequences, mixtures) -------------------------------

# What an iteration past the last epoch a loader hands out is refused with (issue 40, W4).
LAST_EPOCH_MESSAGE = ("epoch 4294967295 is past the last epoch a loader hands out, 4294967294 "
                      "(epochs count from 0; a state or checkpoint holds at most 4294967295, "
                      "where the last one's end leaves it)")


def write_documents(path, seed: int, low: int, high: int, n: int, longest: int = 60) -> str:
    """n documents of 1 to longest - 1 uint16 ids from [low, high) (seeded), as a tokens dataset
    without labels in 4 KiB chunks; returns its path."""
    rng = np.random.default_rng(seed)
    with ringfeed.DatasetWriter(str(path), records="tokens", dtype="uint16", labels=False,
                                chunk_size="4KiB") as w:
        for _ in range(n):
            w.write(rng.integers(low, high, size=int(rng.integers(1, longest))).astype(np.uint16))
    return str(path)


def take_across(loader, k: int, key) -> list:
    """key(batch) of the loader's next k batches, on across epoch ends (an iteration that ends
    at once is the end of an epoch whose last batch was handed out already; two in a row: no
    more)."""
    out, idle = [], 0
    while len(out) < k and idle < 2:
        before = len(out)
        for b in loader:
            out.append(key(b))
            if len(out) == k:
                break
        idle = idle + 1 if len(out) == before else 0
    return out


def edit_state(state: dict, path: tuple, value, drop: bool) -> None:
    """Sets the field of `state` at `path` (keys and list indices) to `value`, or drops it; a
    path no longer there (inside a field already replaced) is left alone."""
    where = state
    for key in path[:-1]:
        if isinstance(where, dict) and key in where or (
                isinstance(where, list) and isinstance(key, int) and key < len(where)):
            where = where[key]
        else:
            return
    last = path[-1]
    if isinstance(where, dict):
        if drop:
            where.pop(last, None)
        else:
            where[last] = value
    elif isinstance(where, list) and isinstance(last, int) and last < len(where):
        where[last] = value


def loads_or_refuses(loader: ringfeed.Loader, state: dict) -> bool:
    """loader.load_state_dict(state): True where taken; where refused (UsageError or DataError,
    the two it may raise) the loader is as it was, and False."""
    before = loader.state_dict()
    try:
        loader.load_state_dict(state)
    except (ringfeed.UsageError, ringfeed.DataError):
        assert loader.state_dict() == before
        return False
    return True


def load_edited(open_one, take, k: int, edits, drop: bool):
    """A property test's case: a loader (open_one()) that took k batches (take(loader, k)) saves
    its state; each (path, value) of `edits` is made to it (edit_state), and a fresh loader loads
    it. (loader, edited state, the fresh loader's state before) where taken; None where refused
    (the loader then as it was: loads_or_refuses)."""
    saved = open_one()
    take(saved, k)
    state = saved.state_dict()
    for path, value in edits:
        edit_state(state, path, copy.deepcopy(value), drop)
    loader = open_one()
    before = loader.state_dict()
    return (loader, state, before) if loads_or_refuses(loader, state) else None


def assert_round_trip(open_one, take, k: int, m: int) -> None:
    """A property test's case: the state of a loader (open_one()) after k batches (take(loader,
    k)) loads into a fresh loader as itself, which then hands out the saved loader's next m
    batches and stands where it does."""
    saved = open_one()
    take(saved, k)
    state = saved.state_dict()
    rest = take(saved, m)
    loader = open_one()
    loader.load_state_dict(copy.deepcopy(state))
    assert loader.state_dict() == state
    assert take(loader, m) == rest
    assert loader.state_dict() == saved.state_dict()
