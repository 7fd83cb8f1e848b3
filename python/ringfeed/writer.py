"""ringfeed.DatasetWriter: writes a ringfeed dataset from any Python loop.

For data ``ringfeed-convert`` does not read: arrays made by your own code, in any number of
``write`` calls, of any total size (memory stays one chunk per shard and per compression thread).
The writer is rf::DatasetWriter (io/dataset_writer.h), the converter's own: the same format, the
same per-channel statistics, the same safety (written under temporary names and renamed into
place only by ``close``; a writer dropped or failing before that leaves nothing behind, and an
older dataset of the same name is replaced only once the new one is safe).

    import numpy as np, ringfeed

    with ringfeed.DatasetWriter("train.rfd", shape=(3, 32, 32), dtype="uint8",
                                compress="zstd") as w:
        for images, labels in my_batches():      # (n, 3, 32, 32) uint8, (n,) ints
            w.write(images, labels)
    loader = ringfeed.Loader("train.rfd", batch_size=256)
"""

from __future__ import annotations

import os
import re
import threading
from typing import Any, Dict, Optional, Sequence, Tuple, Union

from . import _ringfeed
from ._ringfeed import UsageError

__all__ = ["DatasetWriter"]

PathLike = Union[str, "os.PathLike[str]"]

_SIZE = re.compile(r"^([0-9]+)(B|KiB|MiB|GiB)?$")
_UNITS = {None: 1, "B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}
# numpy's names of the stored dtypes; bfloat16 takes its raw bits as uint16 (numpy has none) or
# ml_dtypes' bfloat16.
_NUMPY = {"uint8": "uint8", "uint16": "uint16", "int32": "int32", "int64": "int64",
          "float16": "float16", "float32": "float32", "bfloat16": "uint16"}
_LABEL_RANGE = {"uint8": (0, 255), "uint16": (0, 65535), "int32": (0, 2**31 - 1)}


def _chunk_bytes(chunk_size: Union[int, str]) -> int:
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, (int, str)):
        raise UsageError(f"chunk_size must be a byte count or a size like '4MiB', "
                         f"got {chunk_size!r}")
    if isinstance(chunk_size, int):
        n = chunk_size
    else:
        m = _SIZE.match(chunk_size)
        if not m:
            raise UsageError(f"chunk_size must be a size like '4MiB' (B, KiB, MiB, GiB), "
                             f"got {chunk_size!r}")
        n = int(m.group(1)) * _UNITS[m.group(2)]
    if not 4096 <= n <= 1 << 30:
        raise UsageError(f"chunk_size must be from 4KiB to 1GiB, got {chunk_size!r}")
    return n


def _count(name: str, value: Any, lo: int, hi: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise UsageError(f"{name} must be a whole number from {lo} to {hi}, got {value!r}")
    return value


class DatasetWriter:
    """Writes the dataset `path` (shards ``NAME-0000K-of-0000N.rfd`` for shards=N) of samples of
    one `shape` (1 to 4 dims) and `dtype` ('uint8', 'float16', 'bfloat16', 'float32' for
    intensities; 'uint16', 'int32', 'int64' for ids such as tokens).

    labels: whether samples have labels (then every write gives them), stored as `label_dtype`
    ('uint8', 'uint16', 'int32'). classes: the class count; None: one more than the largest
    label written. chunk_size: the target size of a chunk's data (bytes or '4MiB'). compress:
    each chunk's codec, 'none', 'lz4', 'zstd' or 'zstd:LEVEL' (1 to 22); any codec writes
    format version 2, and a chunk that does not shrink is stored raw. threads: compression
    threads (0: one per core, at most 16). format_version: 0 (1 without a codec, 2 with one), 1
    or 2. keep: files an older dataset of this name may share (inputs) that must not be removed.

    Processes writing in parallel each write their own dataset into one directory (say
    ``out/part-00003.rfd``); ``ringfeed.Loader("out", ...)`` reads the directory's datasets as
    one, in name order (docs/format.md).

    A context manager: leaving the ``with`` block commits the dataset (``close``), unless an
    exception leaves it, which drops everything written (``abort``). Bad values raise
    UsageError; a label outside [0, classes) ValueError naming the sample; disk errors OSError
    naming the file. One thread at a time (a lock serializes calls).
    """

    def __init__(self, path: PathLike, shape: Sequence[int], dtype: str = "uint8", *,
                 labels: bool = True, label_dtype: str = "uint8", classes: Optional[int] = None,
                 shards: int = 1, chunk_size: Union[int, str] = "4MiB", compress: str = "none",
                 threads: int = 0, format_version: int = 0,
                 keep: Sequence[PathLike] = ()) -> None:
        path = os.fspath(path)
        if not isinstance(path, str):
            raise UsageError(f"path must be a str path, got {path!r}")
        if isinstance(shape, int):
            shape = (shape,)
        self.shape: Tuple[int, ...] = tuple(
            _count("every dim of shape", d, 1, 2**32 - 1) for d in shape)
        if not 1 <= len(self.shape) <= 4:
            raise UsageError(f"shape must have 1 to 4 dims, got {shape!r}")
        self.dtype = _ringfeed.dtype_name(dtype) if isinstance(dtype, str) else None
        if self.dtype not in _NUMPY:
            raise UsageError(f"dtype must be one of {', '.join(_NUMPY)}, got {dtype!r}")
        if not isinstance(labels, bool):
            raise UsageError(f"labels must be True or False, got {labels!r}")
        self.labels = labels
        self.label_dtype = (_ringfeed.dtype_name(label_dtype)
                            if isinstance(label_dtype, str) else None)
        if self.label_dtype not in _LABEL_RANGE:
            raise UsageError(f"label_dtype must be uint8, uint16 or int32, got {label_dtype!r}")
        if not labels and (classes not in (None, 0) or self.label_dtype != "uint8"):
            raise UsageError("a dataset without labels has no classes and no label_dtype")
        hi = _LABEL_RANGE[self.label_dtype][1] + 1
        n_classes = 0 if classes is None else _count("classes", classes, 1, hi)
        if not isinstance(compress, str):
            raise UsageError(f"compress must be a str such as 'zstd', got {compress!r}")
        self._lock = threading.Lock()
        self._result: Optional[Dict[str, Any]] = None
        self._native = _ringfeed._DatasetWriter(
            path, list(self.shape), self.dtype, labels, self.label_dtype, n_classes,
            _count("shards", shards, 1, 99999), _chunk_bytes(chunk_size), compress,
            _count("threads", threads, 0, 1024), _count("format_version", format_version, 0, 2),
            [os.fspath(k) for k in keep])
        self.path = path
        self.sample_elems = 1
        for d in self.shape:
            self.sample_elems *= d

    # --- writing -------------------------------------------------------------------------------

    def write(self, samples: Any, labels: Any = None) -> None:
        """Appends samples: an array (numpy, or anything numpy takes: a torch CPU tensor, a
        list) of shape (n, *shape), or one sample of `shape`, in the dataset's dtype (no silent
        conversion: convert first; bfloat16 as its raw uint16 bits or ml_dtypes.bfloat16), and
        their n integer labels where the dataset has labels."""
        import numpy as np  # the package itself does not need numpy; writing arrays does

        want = np.dtype(_NUMPY[self.dtype])
        x = np.asarray(samples)
        if self.dtype == "bfloat16" and x.dtype.name == "bfloat16":
            x = x.view(np.uint16)
        if x.dtype != want:
            raise UsageError(f"samples are {x.dtype}, the dataset stores {self.dtype}: convert "
                             f"them first")
        if x.shape == self.shape:
            x = x.reshape((1,) + self.shape)
        if x.ndim != len(self.shape) + 1 or tuple(x.shape[1:]) != self.shape:
            raise UsageError(f"samples of shape {tuple(x.shape)}: expected (n, "
                             f"{', '.join(map(str, self.shape))}) or one sample of {self.shape}")
        n = x.shape[0]
        y = None
        if self.labels:
            if labels is None:
                raise UsageError("this dataset has labels: write(samples, labels)")
            y = np.asarray(labels)
            if y.ndim == 0:
                y = y.reshape(1)
            if y.shape != (n,) or y.dtype.kind not in "iu":
                raise UsageError(f"labels must be {n} integers, got an array of {y.dtype}, "
                                 f"shape {tuple(y.shape)}")
            lo, hi = _LABEL_RANGE[self.label_dtype]
            if n and (int(y.min()) < lo or int(y.max()) > hi):
                bad = int(y.min()) if int(y.min()) < lo else int(y.max())
                raise ValueError(f"label {bad} does not fit {self.label_dtype} labels "
                                 f"({lo} to {hi})")
            y = np.ascontiguousarray(y, dtype=self.label_dtype)
        elif labels is not None:
            raise UsageError("this dataset has no labels (labels=False): write(samples) alone")
        if n == 0:
            return
        x = np.ascontiguousarray(x)
        with self._lock:
            self._native.append(x, y, n)

    # --- life ----------------------------------------------------------------------------------

    @property
    def samples(self) -> int:
        """Samples written so far (after close: in the dataset)."""
        if self._result is not None:
            return self._result["samples"]
        return self._native.samples

    def close(self) -> Dict[str, Any]:
        """Commits the dataset: writes the indices and headers, fsyncs, renames every shard into
        place, removes an older dataset of the same name. Returns what was written: paths,
        removed (older files replaced), samples, stored_bytes, data_bytes, chunk_samples.
        Idempotent; an empty dataset is refused (ValueError) and leaves nothing."""
        with self._lock:
            if self._result is None:
                try:
                    self._result = self._native.finish()
                except BaseException:
                    self._native.abort()
                    raise
            return dict(self._result)

    def abort(self) -> None:
        """Drops everything written (the temporary files); an older dataset of the name stays."""
        with self._lock:
            if self._result is None:
                self._native.abort()

    def __enter__(self) -> "DatasetWriter":
        return self

    def __exit__(self, kind, value, traceback) -> None:
        if kind is None:
            self.close()
        else:
            self.abort()

    def __repr__(self) -> str:
        state = "written" if self._result is not None else (
            "open" if self._native.open else "aborted")
        return (f"DatasetWriter({self.path!r}, shape={self.shape}, dtype={self.dtype!r}, "
                f"{self.samples} samples, {state})")
