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

and a loader over them hands out (values, offsets, labels) batches. Samples of several fields
(an image, its caption's token ids, a label) are dicts:

    with ringfeed.DatasetWriter("pairs.rfd", fields={"jpg": "image/jpeg", "txt": "tokens:int32",
                                                     "cls": "label"}) as w:
        for jpeg_bytes, ids, label in my_pairs():
            w.write({"jpg": jpeg_bytes, "txt": ids, "cls": label})

and a loader over them hands out each batch as a dict by field name.
"""

from __future__ import annotations

import os
import threading
from typing import Any, Dict, Optional, Tuple, Union

from . import _ringfeed
from ._options import options_help, signature
from ._ringfeed import UsageError

__all__ = ["DatasetWriter"]

PathLike = Union[str, "os.PathLike[str]"]

# numpy's names of the stored dtypes; bfloat16 takes its raw bits as uint16 (numpy has none) or
# ml_dtypes' bfloat16.
_NUMPY = {"uint8": "uint8", "uint16": "uint16", "int32": "int32", "int64": "int64",
          "float16": "float16", "float32": "float32", "bfloat16": "uint16"}
_LABEL_RANGE = {"uint8": (0, 255), "uint16": (0, 65535), "int32": (0, 2**31 - 1)}

# The writer's options, declared once in the library (io/writer_options.h), where
# ringfeed-convert's writer flags are declared too: name, type, default, rule, words, what None
# means, help. DatasetWriter's signature and the "Options" part of its help are made from them,
# and every keyword argument is checked and set by the library through the same declarations.
_OPTIONS: Dict[str, Dict[str, Any]] = {o["name"]: o for o in _ringfeed.writer_options()}


class DatasetWriter:
    """Writes the dataset `path` (shards ``NAME-0000K-of-0000N.rfd`` for shards=N) of samples of
    one `shape` (1 to 4 dims) and `dtype` (intensities, or ids such as tokens), or of records of
    any size (`records`: 'tokens', 1-D runs of ids, or 'bytes', such as encoded images; records
    take no shape, and the largest record taken is max_record_size: a chunk holds at least one).
    The options are listed below; they are ringfeed-convert's writer flags too (--chunk-size,
    --compress, ...), declared once with the same defaults and bounds.

    Processes writing in parallel each write their own dataset into one directory (say
    ``out/part-00003.rfd``); ``ringfeed.Loader("out", ...)`` reads the directory's datasets as
    one, in name order (docs/format.md).

    A context manager: leaving the ``with`` block commits the dataset (``close``), unless an
    exception leaves it, which drops everything written (``abort``). Bad values raise
    UsageError naming the keyword (a label outside [0, classes) too, naming the sample); disk
    errors OSError naming the file. One thread at a time (a lock serializes calls).

    Options:

    """

    def __init__(self, path: PathLike, shape: Any = None, dtype: Any = None,
                 **options: Any) -> None:
        # The signature help() and inspect show is made from the declarations (end of file).
        unknown = [k for k in options if k not in _OPTIONS or k in ("shape", "dtype")]
        if unknown:
            raise TypeError(f"DatasetWriter() got an unexpected keyword argument {unknown[0]!r}")
        options.update(shape=shape, dtype=dtype)
        fields = options.get("fields")
        if isinstance(fields, dict):  # {"jpg": "image/jpeg", ...}: the table's text
            for name, kind in fields.items():
                if not isinstance(name, str) or not isinstance(kind, str):
                    raise UsageError(f"fields: each is a name and a type, both str: got "
                                     f"{name!r}: {kind!r}")
            options["fields"] = ",".join(f"{name}={kind}" for name, kind in fields.items())
        keep = options.get("keep")
        if keep is not None and not isinstance(keep, (str, bytes, os.PathLike)):
            options["keep"] = [os.fspath(k) for k in keep]  # one path alone: refused as no list
        self._lock = threading.Lock()
        self._result: Optional[Dict[str, Any]] = None
        self._native = _ringfeed._DatasetWriter(os.fspath(path), options)
        # What the writer took (its defaults where not given), its dtypes by their own names.
        took = self._native.options()
        self.path = os.fspath(path)
        self.records: str = took["records"]
        self.shape: Tuple[int, ...] = tuple(took["shape"]) if self.records == "tensor" else (1,)
        self.dtype: str = took["dtype"]
        self.labels: bool = took["labels"]
        self.label_dtype: str = took["label_dtype"]
        self.sample_elems = 1
        for d in self.shape:
            self.sample_elems *= d
        # Samples of several fields: {name: type} in the table's order (io/fields.h).
        self.fields: Dict[str, str] = dict(self._native.fields())

    # --- writing -------------------------------------------------------------------------------

    def write(self, samples: Any, labels: Any = None) -> None:
        """Appends samples: an array (numpy, or anything numpy takes: a torch CPU tensor, a
        list) of shape (n, *shape), or one sample of `shape`, in the dataset's dtype (no silent
        conversion: convert first; bfloat16 as its raw uint16 bits or ml_dtypes.bfloat16), and
        their n integer labels where the dataset has labels. Records of any size (records=
        'tokens' or 'bytes'): one record (a 1-D array of the dtype; bytes for bytes records) or
        a list of them, and one label or a list."""
        import numpy as np  # the package itself does not need numpy; writing arrays does

        if self.records == "fields":
            if labels is not None:
                raise UsageError("samples of several fields carry their label as a field "
                                 "(NAME=label): write(sample) alone")
            self._write_samples([samples] if isinstance(samples, dict) else list(samples))
            return
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

    def _write_samples(self, samples: list) -> None:
        """Samples of several fields: each a dict of every field by name."""
        names = list(self.fields)
        label = next((n for n, t in self.fields.items() if t == "label"), None)
        parts, ys = [], []
        for i, sample in enumerate(samples):
            which = f"sample {self.samples + i}"
            if not isinstance(sample, dict):
                raise UsageError(f"{which}: a sample of several fields is a dict of them "
                                 f"({', '.join(names)}), got {type(sample).__name__}")
            missing = [n for n in names if n not in sample]
            unknown = [n for n in sample if n not in self.fields]
            if missing or unknown:
                raise UsageError(f"{which}: " + (f"no field {missing[0]!r}" if missing else
                                                 f"no such field {unknown[0]!r}") +
                                 f" (the fields are {', '.join(names)})")
            parts.append([self._field_bytes(which, n, self.fields[n], sample[n])
                          for n in names if n != label])
            if label is not None:
                ys.append(sample[label])
        y = self._labels_array(ys if label is not None else None, len(samples))
        if samples:
            with self._lock:
                self._native.append_samples(parts, y)

    @staticmethod
    def _field_bytes(which: str, name: str, kind: str, value: Any) -> Any:
        """One field's stored bytes, as a contiguous buffer (io/fields.h's kinds)."""
        import numpy as np

        if kind.startswith("tokens:") or kind.startswith("tensor:"):
            dtype = np.dtype(_NUMPY[kind.split(":")[1]])
            a = (np.asarray(value, dtype=dtype) if isinstance(value, (list, tuple))
                 else np.asarray(value))
            if a.dtype != dtype:
                raise UsageError(f"{which}: field {name!r} ({kind}) is {a.dtype}: convert it "
                                 f"first")
            if kind.startswith("tokens:") and a.ndim != 1:
                raise UsageError(f"{which}: field {name!r} ({kind}) is a 1-D array of ids, "
                                 f"got shape {tuple(a.shape)}")
            if kind.startswith("tensor:"):
                want = tuple(int(d) for d in kind.split(":")[2].split("x"))
                if tuple(a.shape) != want:
                    raise UsageError(f"{which}: field {name!r} ({kind}) of shape "
                                     f"{tuple(a.shape)}, not {want}")
            return np.ascontiguousarray(a).view(np.uint8).reshape(-1)
        if isinstance(value, str):
            return value.encode("utf-8")
        if isinstance(value, (bytes, bytearray)):
            return value
        if isinstance(value, memoryview):
            return value.tobytes() if not value.c_contiguous else value
        raise UsageError(f"{which}: field {name!r} ({kind}) is bytes (or str, stored as "
                         f"UTF-8), got {type(value).__name__}")

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


DatasetWriter.__init__.__signature__ = signature(  # type: ignore[attr-defined]
    _OPTIONS, ["path"], ["shape", "dtype"])
DatasetWriter.__doc__ = (DatasetWriter.__doc__ or "").rstrip(" ") + options_help(_OPTIONS) + "\n"
