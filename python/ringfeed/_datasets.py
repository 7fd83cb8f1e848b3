"""Datasets as ringfeed.Loader and ringfeed.dataset_info take them: a directory of datasets, one
.rfd file, any one shard, the shards' base name, a glob pattern of shard files or a list of them
(_open_dataset), a mixture's list of such (open_datasets), and a dataset's header as a
DatasetInfo."""

from __future__ import annotations

import errno
import glob
import os
from typing import Any, Dict, List, NamedTuple, Optional, Sequence, Tuple, Union

from . import _ringfeed
from ._ringfeed import UsageError

__all__ = ["DatasetInfo", "dataset_info"]

PathLike = Union[str, "os.PathLike[str]"]


class DatasetInfo(NamedTuple):
    """A dataset's header: what ``Loader.dataset`` returns.

    samples: samples in the whole dataset (all ranks). shape: one sample's stored shape, e.g.
    (3, 32, 32) or (2048,). dtype: the stored sample dtype ('uint8', 'float32', ... or an integer
    dtype for token ids). classes: the class count (0: no labels). mean, std: the stored values'
    per-channel statistics, which normalize=True uses (a directory's: its parts' pooled
    exactly). label_dtype: the stored label dtype.
    id: the dataset id every shard carries (a directory's: derived from its parts' ids, in
    order). paths: the shard files (a directory's: every part's). format_version: 1 or 2 (a
    directory's: the newest part's). codec: what the writer compressed chunks with ('none',
    'lz4', 'zstd:3'; a directory whose parts' differ: 'none'). compressed_chunks:
    how many chunks are stored compressed (a chunk that does not shrink is stored raw).
    stored_bytes: the files' bytes; data_bytes: the chunks' data, decompressed. record_kind:
    'tensor' (fixed-shape samples), 'tokens' or 'bytes' (records of any size, whose batches come
    as (values, offsets, labels); shape is then the largest record's). media_type: what bytes
    records are ('image/jpeg'; '' unknown). record_kind 'fields': samples of several fields,
    whose batches come as a dict by field name; fields lists them, each (name, type) in the
    dataset's order, the type as DatasetWriter(fields=...) takes it ('image/jpeg',
    'tokens:int32', 'tensor:float32:512', 'label'; empty for the other kinds). parts: for a
    directory, its datasets in the order they are read as one, each (path, samples); for one
    dataset, itself.
    """

    samples: int
    shape: Tuple[int, ...]
    dtype: str
    classes: int
    mean: Tuple[float, ...]
    std: Tuple[float, ...]
    label_dtype: str
    id: int
    paths: Tuple[str, ...]
    format_version: int = 1
    codec: str = "none"
    compressed_chunks: int = 0
    stored_bytes: int = 0
    data_bytes: int = 0
    record_kind: str = "tensor"
    media_type: str = ""
    parts: Tuple[Tuple[str, int], ...] = ()
    fields: Tuple[Tuple[str, str], ...] = ()


def _info(d: "_ringfeed._Dataset") -> DatasetInfo:
    return DatasetInfo(samples=d.samples, shape=tuple(d.shape), dtype=d.dtype, classes=d.classes,
                       mean=tuple(d.mean), std=tuple(d.std), label_dtype=d.label_dtype, id=d.id,
                       paths=tuple(d.shard_paths), format_version=d.format_version,
                       codec=d.codec, compressed_chunks=d.compressed_chunks,
                       stored_bytes=d.total_bytes, data_bytes=d.data_bytes,
                       record_kind=d.record_kind, media_type=d.media_type,
                       parts=tuple((p, n) for p, n in d.parts),
                       fields=tuple((n, t) for n, t in d.fields))


# The loader options that opening a dataset reads (a remote one's fetch options and its node-local
# cache): the rest are the loader's alone.
REMOTE_OPTIONS = ("ca_bundle", "remote_deadline", "remote_in_flight", "cache_dir", "cache_size",
                  "cache_policy")


def dataset_info(data: Union[PathLike, Sequence[PathLike]], *, ca_bundle: Optional[str] = None,
                 remote_deadline: Optional[int] = None,
                 remote_in_flight: Optional[int] = None) -> DatasetInfo:
    """A dataset's header (:class:`DatasetInfo`) without a loader: the files are opened and
    checked (header and chunk index), no chunk is read. `data` and the remote options as for
    :class:`Loader`."""
    remote = {"ca_bundle": ca_bundle, "remote_deadline": remote_deadline,
              "remote_in_flight": remote_in_flight}
    return _info(_open_dataset(data, {k: v for k, v in remote.items() if v is not None}))


def _open_dataset(data: Union[PathLike, Sequence[PathLike]],
                  remote: Optional[Dict[str, Any]] = None,
                  datasets: int = 1) -> "_ringfeed._Dataset":
    """Opens `data`: a directory of datasets, one .rfd file, any one shard, the shards' base
    name, a glob pattern of shard files, or a list of them; or a remote dataset's URL
    (https://, http://, s3://: a file or one shard), or a list of its shards' URLs. A pattern or
    a list must name every shard of one dataset exactly once (UsageError otherwise); a pattern
    matching nothing is FileNotFoundError. `remote`: the loader options of REMOTE_OPTIONS, a
    cache's budget shared by `datasets` (a mixture's)."""
    remote = remote or {}
    if isinstance(data, (str, os.PathLike)):
        path = os.fspath(data)
        if not isinstance(path, str):
            raise UsageError(f"data must be a str path, got {data!r}")
        if _ringfeed.is_remote_path(path) or os.path.exists(path) or not glob.has_magic(path):
            return _ringfeed._Dataset(path, remote, datasets)
        files = sorted(glob.glob(path))
        if not files:
            raise FileNotFoundError(errno.ENOENT, f"no file matches the pattern {path!r}", path)
        what = f"the files matching {path!r}"
    elif isinstance(data, (list, tuple)):
        files = [os.fspath(f) for f in data]
        if not files or not all(isinstance(f, str) for f in files):
            raise UsageError(f"data: a list of shard paths must hold one or more str paths, "
                             f"got {data!r}")
        what = "the list"
    else:
        raise UsageError(f"data must be a path, a shard pattern or a list of shard paths, "
                         f"got {type(data).__name__}")
    dataset = _ringfeed._Dataset(files[0], remote, datasets)
    same = _ringfeed.shown_path if _ringfeed.is_remote_path(files[0]) else os.path.realpath
    given = [same(f) for f in files]
    shards = [same(f) for f in dataset.shard_paths]
    if len(set(given)) != len(given):
        raise UsageError(f"data: {what} names a file twice: {files}")
    missing = [p for p, r in zip(dataset.shard_paths, shards) if r not in given]
    foreign = [f for f, r in zip(files, given) if r not in shards]
    if missing or foreign:
        parts = []
        if foreign:
            parts.append(f"not shards of {dataset.shard_paths[0]}'s dataset: {foreign}")
        if missing:
            parts.append(f"missing shards: {missing}")
        raise UsageError(f"data: {what} must hold every shard of one dataset exactly once; "
                         + "; ".join(parts))
    return dataset


def open_datasets(data: Any, options: Dict[str, Any]) -> List["_ringfeed._Dataset"]:
    """The datasets of a loader of keyword arguments `options`: `data` itself, or with weights a
    list of datasets (each what Loader's data takes: a path, a pattern or a list of shards)."""
    remote = {k: options[k] for k in REMOTE_OPTIONS if k in options}
    if options.get("weights") is None:
        return [_open_dataset(data, remote)]
    if isinstance(data, (str, bytes)) or not isinstance(data, (list, tuple)):
        raise UsageError("weights: data must then be a list of datasets, one a weight")
    return [_open_dataset(d, remote, len(data)) for d in data]
