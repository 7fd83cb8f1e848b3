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

Records of any size (tokenized documents, encoded images) are written one by one or packed:

    with ringfeed.DatasetWriter("docs.rfd", records="tokens", dtype="uint16",
                                labels=False, compress="zstd") as w:
        for ids in tokenized_documents():        # 1-D arrays of any length
            w.write(ids)
    with ringfeed.DatasetWriter("images.rfd", records="bytes", media_type="image/jpeg") as w:
        for jpeg_bytes, label in my_images():
            w.write(jpeg_bytes, label)

and a loader over them hands out (values, offsets, labels) batches.
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


def _size(name: str, value: Union[int, str], lo: int, hi: int, span: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise UsageError(f"{name} must be a byte count or a size like '4MiB', got {value!r}")
    if isinstance(value, int):
        n = value
    else:
        m = _SIZE.match(value)
        if not m:
            raise UsageError(f"{name} must be a size like '4MiB' (B, KiB, MiB, GiB), "
                             f"got {value!r}")
        n = int(m.group(1)) * _UNITS[m.group(2)]
    if not lo <= n <= hi:
        raise UsageError(f"{name} must be from {span}, got {value!r}")
    return n


def _chunk_bytes(chunk_size: Union[int, str]) -> int:
    return _size("chunk_size", chunk_size, 4096, 1 << 30, "4KiB to 1GiB")


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
    threads (0: one per core, at most 16). format_version: 0 (1 without a codec, 2 with one, 3
    for records of any size), 1, 2 or 3 (records of any size: 2 or 3; 3's index gives each
    chunk's record bytes, which packed sequences need). keep: files an older dataset of this name may share (inputs) that must not be removed.

    records: what a sample is: 'tensor' (every sample of `shape`), or records of any size,
    'tokens' (1-D runs of uint16, int32 or int64 ids) or 'bytes' (uint8, such as encoded images;
    media_type says what they are, e.g. 'image/jpeg'); records take no shape, and the largest
    record taken is max_record_size (a chunk holds at least one). Records write format 2.

    Processes writing in parallel each write their own dataset into one directory (say
    ``out/part-00003.rfd``); ``ringfeed.Loader("out", ...)`` reads the directory's datasets as
    one, in name order (docs/format.md).

    A context manager: leaving the ``with`` block commits the dataset (``close``), unless an
    exception leaves it, which drops everything written (``abort``). Bad values raise
    UsageError (a label outside [0, classes) too, naming the sample); disk errors OSError naming
    the file. One thread at a time (a lock serializes calls).
    """

    def __init__(self, path: PathLike, shape: Optional[Sequence[int]] = None,
                 dtype: str = "uint8", *, labels: bool = True, label_dtype: str = "uint8",
                 classes: Optional[int] = None, shards: int = 1,
                 chunk_size: Union[int, str] = "4MiB", compress: str = "none", threads: int = 0,
                 format_version: int = 0, keep: Sequence[PathLike] = (),
                 records: str = "tensor", media_type: str = "",
                 max_record_size: Union[int, str] = "64MiB") -> None:
        path = os.fspath(path)
        if not isinstance(path, str):
            raise UsageError(f"path must be a str path, got {path!r}")
        if records not in ("tensor", "tokens", "bytes"):
            raise UsageError(f"records must be 'tensor', 'tokens' or 'bytes', got {records!r}")
        self.records = records
        if records != "tensor":
            if shape is not None:
                raise UsageError(f"{records} records have any size: give no shape")
            shape = (1,)
        elif shape is None:
            raise UsageError("shape: the shape of every sample (records='tensor')")
        if not isinstance(media_type, str):
            raise UsageError(f"media_type must be a str such as 'image/jpeg', got {media_type!r}")
        if isinstance(shape, int):
            shape = (shape,)
        self.shape: Tuple[int, ...] = tuple(
            _count("every dim of shape", d, 1, 2**32 - 1) for d in shape)
        if not 1 <= len(self.shape) <= 4:
            raise UsageError(f"shape must have 1 to 4 dims, got {shape!r}")
        self.dtype = _ringfeed.dtype_name(dtype) if isinstance(dtype, str) else None
        if self.dtype not in _NUMPY:
            raise UsageError(f"dtype must be one of {', '.join(_NUMPY)}, got {dtype!r}")
        if records == "tokens" and self.dtype not in ("uint16", "int32", "int64"):
            raise UsageError(f"tokens records hold uint16, int32 or int64 ids, not {self.dtype}")
        if records == "bytes" and self.dtype != "uint8":
            raise UsageError(f"bytes records are uint8, not {self.dtype}")
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
            _count("threads", threads, 0, 1024), _count("format_version", format_version, 0, 3),
            [os.fspath(k) for k in keep], records, media_type,
            _size("max_record_size", max_record_size, 1, 1 << 30, "1 byte to 1GiB"))
        self.path = path
        self.sample_elems = 1
        for d in self.shape:
            self.sample_elems *= d

    # --- writing -------------------------------------------------------------------------------

    def write(self, samples: Any, labels: Any = None) -> None:
        """Appends samples: an array (numpy, or anything numpy takes: a torch CPU tensor, a
        list) of shape (n, *shape), or one sample of `shape`, in the dataset's dtype (no silent
        conversion: convert first; bfloat16 as its raw uint16 bits or ml_dtypes.bfloat16), and
        their n integer labels where the dataset has labels. Records of any size (records=
        'tokens' or 'bytes'): one record (a 1-D array of the dtype; bytes for bytes records) or
        a list of them, and one label or a list."""
        import numpy as np  # the package itself does not need numpy; writing arrays does

        if self.records != "tensor":
            # One record (bytes, or a 1-D array) or a list of them.
            one = isinstance(samples, (bytes, bytearray, memoryview)) or (
                hasattr(samples, "ndim") and getattr(samples, "ndim") == 1)
            recs = [samples] if one else list(samples)
            arrays = [self._record_array(r) for r in recs]
            offsets = np.zeros(len(arrays) + 1, dtype=np.uint64)
            np.cumsum([a.size for a in arrays], out=offsets[1:])
            values = (np.concatenate(arrays) if arrays
                      else np.zeros(0, dtype=_NUMPY[self.dtype]))
            if one and labels is not None and np.ndim(labels) == 0:
                labels = [labels]
            self.write_records(values, offsets, labels)
            return
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
        y = self._labels_array(labels, n)
        if n == 0:
            return
        x = np.ascontiguousarray(x)
        with self._lock:
            self._native.append(x, y, n)

    def _record_array(self, record: Any) -> Any:
        import numpy as np

        want = np.dtype(_NUMPY[self.dtype])
        if isinstance(record, (bytes, bytearray, memoryview)):
            if self.records != "bytes":
                raise UsageError(f"{self.records} records are arrays of {self.dtype}, not bytes")
            if isinstance(record, memoryview) and not record.c_contiguous:
                record = record.tobytes()  # a strided view's bytes, in its order
            return np.frombuffer(record, dtype=np.uint8)
        a = np.asarray(record)
        if a.dtype != want or a.ndim != 1:
            raise UsageError(f"a record is a 1-D array of {self.dtype} (or bytes for bytes "
                             f"records), got {a.dtype} of shape {tuple(a.shape)}")
        return a

    def write_records(self, values: Any, offsets: Any, labels: Any = None) -> None:
        """Appends records packed as a loader hands them out: record i is
        values[offsets[i]:offsets[i + 1]] (values 1-D in the dataset's dtype, offsets n + 1
        increasing integers from offsets[0]), with n labels where the dataset has them."""
        import numpy as np

        if self.records == "tensor":
            raise UsageError("write_records is for records of any size (records='tokens' or "
                             "'bytes'); write fixed-shape samples with write")
        v = np.asarray(values)
        if v.dtype != np.dtype(_NUMPY[self.dtype]) or v.ndim != 1:
            raise UsageError(f"values must be a 1-D array of {self.dtype}, got {v.dtype} of "
                             f"shape {tuple(v.shape)}")
        o = np.asarray(offsets)
        if o.ndim != 1 or o.size < 1 or o.dtype.kind not in "iu":
            raise UsageError("offsets must be a 1-D array of n + 1 integers")
        if o.size > 1 and (int(o.min()) < 0 or int(o[-1]) > v.size):
            raise UsageError(f"offsets must lie within the {v.size} values")
        n = o.size - 1
        y = self._labels_array(labels, n)
        if n == 0:
            return
        with self._lock:
            self._native.append_records(np.ascontiguousarray(v),
                                        np.ascontiguousarray(o, dtype=np.uint64), y, n)

    def _labels_array(self, labels: Any, n: int) -> Any:
        import numpy as np

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
                raise UsageError(f"label {bad} does not fit {self.label_dtype} labels "
                                 f"({lo} to {hi})")
            y = np.ascontiguousarray(y, dtype=self.label_dtype)
        elif labels is not None:
            raise UsageError("this dataset has no labels (labels=False): write(samples) alone")
        return y

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
        Idempotent; an empty dataset is refused (UsageError) and leaves nothing."""
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
        if getattr(self, "_native", None) is None:  # the constructor refused its arguments
            return "DatasetWriter(not opened)"
        state = "written" if self._result is not None else (
            "open" if self._native.open else "aborted")
        return (f"DatasetWriter({self.path!r}, shape={self.shape}, dtype={self.dtype!r}, "
                f"{self.samples} samples, {state})")
