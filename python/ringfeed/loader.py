"""ringfeed.Loader: batches of a ringfeed dataset for a training loop (rf::Loader underneath).

The Loader is a thin face over the C++ loader (pipeline/loader.h): the reading, the order, the
decode and the buffers are the library's. What this module adds is what only Python can know:
option defaults that depend on the process (torch.distributed's rank, the RANK and WORLD_SIZE
environment variables), the dataset given as a list or a pattern of shard files, and the epoch
protocol of a Python iterable with checkpoints (``state_dict`` / ``load_state_dict``).

The epoch protocol. A loader is at an epoch and a position in it (the samples of this rank's
epoch handed out so far). ``iter(loader)`` continues from there: from the start of
``loader.epoch`` for a fresh epoch, from where a ``break`` left it, or from a restored state.
When the iterator hands out an epoch's last batch, ``loader.epoch`` moves on by one and
``loader.position`` goes back to 0 (so a state saved while that batch is in use resumes with the
next epoch), and the iterator ends. ``set_epoch(e)`` makes the next iteration epoch e from its
start.

Order. Each epoch's order is a function of the dataset, the seed, the shuffle mode and window, the
epoch, the rank and the world size only (rf::WindowOrder): never of timing, ring sizes, queue
depths or the device. So two loaders with the same of these hand out the same batches, and a
loader restored from a state dict continues exactly where the saved one was.
"""

from __future__ import annotations

import errno
import glob
import os
import sys
from typing import Any, Dict, Iterator, NamedTuple, Optional, Sequence, Tuple, Union

from . import _ringfeed
from ._ringfeed import Tensor, UsageError

__all__ = ["DatasetInfo", "Loader"]

PathLike = Union[str, "os.PathLike[str]"]

# The state dict's own version: load_state_dict refuses one it does not know.
_STATE_VERSION = 1
# What identifies an epoch order: a state saved under other values would not resume exactly.
_ORDER_KEYS = ("seed", "batch_size", "shuffle", "shuffle_window", "drop_last", "rank",
               "world_size", "dataset_id", "dataset_samples")

_FLOAT_OUTPUTS = ("float32", "bfloat16", "float16")


class DatasetInfo(NamedTuple):
    """A dataset's header: what ``Loader.dataset`` returns.

    samples: samples in the whole dataset (all ranks). shape: one sample's stored shape, e.g.
    (3, 32, 32) or (2048,). dtype: the stored sample dtype ('uint8', 'float32', ... or an integer
    dtype for token ids). classes: the class count (0: no labels). mean, std: the stored values'
    per-channel statistics, which normalize=True uses. label_dtype: the stored label dtype.
    id: the dataset id every shard carries. paths: the shard files.
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


def _info(d: "_ringfeed._Dataset") -> DatasetInfo:
    return DatasetInfo(samples=d.samples, shape=tuple(d.shape), dtype=d.dtype, classes=d.classes,
                       mean=tuple(d.mean), std=tuple(d.std), label_dtype=d.label_dtype, id=d.id,
                       paths=tuple(d.shard_paths))


def dataset_info(data: Union[PathLike, Sequence[PathLike]]) -> DatasetInfo:
    """A dataset's header (:class:`DatasetInfo`) without a loader: the files are opened and
    checked (header and chunk index), no chunk is read. `data` as for :class:`Loader`."""
    return _info(_open_dataset(data))


def _open_dataset(data: Union[PathLike, Sequence[PathLike]]) -> "_ringfeed._Dataset":
    """Opens `data`: one .rfd file, any one shard, the shards' base name, a glob pattern of
    shard files, or a list of them. A pattern or a list must name every shard of one dataset
    exactly once (UsageError otherwise); a pattern matching nothing is FileNotFoundError."""
    if isinstance(data, (str, os.PathLike)):
        path = os.fspath(data)
        if not isinstance(path, str):
            raise UsageError(f"data must be a str path, got {data!r}")
        if os.path.exists(path) or not glob.has_magic(path):
            return _ringfeed._Dataset(path)
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
    dataset = _ringfeed._Dataset(files[0])
    given = [os.path.realpath(f) for f in files]
    shards = [os.path.realpath(f) for f in dataset.shard_paths]
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


def _int_option(name: str, value: Any, minimum: int, maximum: int = 2**32 - 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= maximum:
        raise UsageError(f"{name} must be an integer from {minimum} to {maximum}, got {value!r}")
    return value


def _bool_option(name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise UsageError(f"{name} must be True or False, got {value!r}")
    return value


def _str_option(name: str, value: Any) -> str:
    if not isinstance(value, str):
        raise UsageError(f"{name} must be a str, got {value!r}")
    return value


def _process_rank() -> Tuple[int, int]:
    """This process's (rank, world size): torch.distributed's where it is initialized (looked
    up, never imported: a process that runs torch.distributed has imported it), else the RANK
    and WORLD_SIZE environment variables (as torchrun sets them), else (0, 1)."""
    dist = sys.modules.get("torch.distributed")
    if dist is not None and dist.is_available() and dist.is_initialized():
        return int(dist.get_rank()), int(dist.get_world_size())
    values = []
    for var, default in (("RANK", 0), ("WORLD_SIZE", 1)):
        text = os.environ.get(var)
        if text is None or text == "":
            values.append(default)
            continue
        try:
            values.append(int(text))
        except ValueError:
            raise UsageError(f"the {var} environment variable must be an integer, "
                             f"got {text!r}") from None
    return values[0], values[1]


def _device_option(device: Any) -> Tuple[str, int]:
    """'cuda', 'cuda:N', 'cpu', 'auto' or None (a torch.device works too) -> (kind, gpu)."""
    if device is None:
        return "auto", -1
    text = str(device)
    kind, _, index = text.partition(":")
    if kind == "cuda" and index:
        if not index.isdigit():
            raise UsageError(f"device must be 'cuda', 'cuda:N', 'cpu' or None, got {device!r}")
        return "cuda", int(index)
    if kind not in ("cuda", "cpu", "auto") or index:
        raise UsageError(f"device must be 'cuda', 'cuda:N', 'cpu' or None, got {device!r}")
    return kind, -1


class Loader:
    """Batches of a ringfeed dataset, read from disk as training goes, in fixed memory.

    ``for samples, labels in loader:`` yields the rest of the current epoch. ``samples`` and
    ``labels`` are :class:`ringfeed.Tensor` objects viewing the loader's own buffers: hand them to
    ``torch.from_dlpack`` (no copy; on the GPU the current stream waits for the batch, the host
    does not), ``numpy.from_dlpack`` or ``.numpy()`` (host memory). A batch stays valid,
    unchanged, for as long as it or anything made from it is held, whatever the loader does
    meanwhile and even after the loader is gone; holding more than ``prefetch`` batches at once
    makes the loader allocate a buffer per extra batch held.

    Epochs: the loader is at ``epoch`` and ``position`` (samples of this rank's epoch handed out
    so far). An iteration continues from there (the epoch's start, where a ``break`` left it, or a
    restored state) to the epoch's end; as the epoch's last batch is handed out, ``epoch`` moves
    on by one and ``position`` returns to 0. ``set_epoch(e)`` makes the next iteration epoch e
    from its start; ``len(loader)`` is the batches per epoch for this rank. The order is a
    function of the dataset, seed, shuffle, shuffle_window, epoch, rank and world_size only.

    Checkpoints: ``state_dict()`` is a JSON-able dict of the epoch, the position and what the
    order depends on; ``load_state_dict(state)`` on a loader with the same options continues with
    exactly the batches the saved loader would have handed out next.

    Arguments (all but the first two keyword-only):

    data: the dataset: a ``.rfd`` file, any one of its shards or the shards' base name, a glob
        pattern of its shard files, or a list of them (every shard of one dataset, once).
    batch_size: samples per batch; the epoch's last batch may be smaller (see drop_last).
    device: 'cuda' (the current GPU, as torch.cuda.set_device sets it), 'cuda:N', 'cpu', or None:
        'cuda' where the build has CUDA and a GPU is found, else 'cpu'.
    dtype: the samples' output dtype: 'float32', 'bfloat16', 'float16', or the stored dtype
        itself ('uint8' for uint8 images, the stored integer dtype for token ids). None: float32
        for image data, the stored dtype for token ids. Labels are always int64.
    layout: 'NCHW' (as stored) or 'NHWC' (channels last), for image data.
    normalize: (x - mean[c]) / std[c] with the header's per-channel statistics (in float32, a
        std of 0 taken as 1). None: True for a float output, False otherwise.
    mean, std: per-channel statistics to normalize with instead of the header's (both or
        neither, one value per channel), e.g. a test split normalized as its training split:
        ``mean=train.dataset.mean, std=train.dataset.std``.
    augment: data augmentation, as ``ringfeed train --augment``: a comma list of 'crop:P'
        (random crop with P pixels of zero padding), 'flip' (random horizontal flip) and
        'erase:P' (random erasing with probability P), e.g. ``augment="crop:4,flip"``; None or
        'none': off. Fused into the decode (on the GPU, in the same kernel); each sample's
        transform depends only on seed, the epoch and the sample's index in the dataset, so it
        is the same on the CPU and the GPU, whatever the batch size or rank, and after
        load_state_dict. Zero filled pixels are 0 in the output (after normalization). Leave it
        off for a test split.
    shuffle: 'window' (chunks in a seeded permutation per epoch, and the samples of
        shuffle_window chunks resident together in a seeded permutation of their own) or 'none'
        (stored order).
    shuffle_window: chunks shuffled together (more: better mixed batches, more memory).
    seed: the order's seed.
    drop_last: skip each epoch's last batch where it is smaller than batch_size.
    rank, world_size: this process's part of every epoch. None: torch.distributed's rank and
        world size where it is initialized, else the RANK and WORLD_SIZE environment variables,
        else 0 and 1. Every rank's epoch holds the same number of samples; where the world size
        does not divide the dataset, fewer than world_size samples are repeated, one each on that
        many ranks (rf::WindowOrder's padding).
    mode: 'streaming' (read as training goes, fixed memory) or 'managed' (the whole dataset in
        one CUDA managed allocation; GPU only).
    io: 'direct' (io_uring, O_DIRECT), 'buffered' (io_uring through the page cache) or 'pread'.
    queue_depth: reads in flight. read_size: the largest single read ('4MiB', '64KiB' or bytes;
        a multiple of 4 KiB). ring_slots: host ring slots, one chunk each. copy_streams:
        host-to-device copy streams (GPU). verify: check every chunk's checksum.
    prefetch: decoded batches the loader keeps buffers for (>= 1).
    managed_prefetch, managed_advise, managed_oversubscribe: the managed mode's paging: prefetch
        the chunks of the batch this many ahead; advise read-mostly and preferred on the GPU;
        allow a dataset larger than the GPU's free memory.

    Errors: ringfeed.UsageError (a ValueError) for options that cannot be run, naming the option;
    ringfeed.DataError (a ValueError) for bad data, naming the file, the chunk and the byte offset
    (also as .path, .chunk, .offset); OSError (FileNotFoundError, PermissionError, ...) for files
    that cannot be read. After an error (or a KeyboardInterrupt while waiting for a batch) the
    next iteration starts over at the position of the last batch handed out.

    Threads: the loader's methods may be called from any thread, one call at a time (a second
    thread's call waits); the GIL is released while a call waits for disk or the GPU.
    """

    def __init__(
        self,
        data: Union[PathLike, Sequence[PathLike]],
        batch_size: int,
        *,
        device: Optional[str] = None,
        dtype: Optional[str] = None,
        layout: str = "NCHW",
        normalize: Optional[bool] = None,
        mean: Optional[Sequence[float]] = None,
        std: Optional[Sequence[float]] = None,
        augment: Optional[str] = None,
        shuffle: str = "window",
        shuffle_window: int = 64,
        seed: int = 0,
        drop_last: bool = False,
        rank: Optional[int] = None,
        world_size: Optional[int] = None,
        mode: str = "streaming",
        io: str = "direct",
        queue_depth: int = 8,
        read_size: Union[str, int] = "4MiB",
        ring_slots: int = 16,
        copy_streams: int = 2,
        verify: bool = True,
        prefetch: int = 4,
        managed_prefetch: int = 0,
        managed_advise: bool = False,
        managed_oversubscribe: bool = False,
    ) -> None:
        self._native: Optional[_ringfeed._Loader] = None
        batch_size = _int_option("batch_size", batch_size, 1)
        shuffle_window = _int_option("shuffle_window", shuffle_window, 1)
        seed = _int_option("seed", seed, 0, 2**64 - 1)
        drop_last = _bool_option("drop_last", drop_last)
        device_kind, gpu = _device_option(device)
        layout_text = _str_option("layout", layout).upper()
        if layout_text not in ("NCHW", "NHWC"):
            raise UsageError(f"layout must be 'NCHW' or 'NHWC', got {layout!r}")
        if isinstance(read_size, int) and not isinstance(read_size, bool):
            read_size = str(read_size)
        read_size = _str_option("read_size", read_size)
        if rank is None or world_size is None:
            process_rank, process_world = _process_rank()
            rank = process_rank if rank is None else rank
            world_size = process_world if world_size is None else world_size
        rank = _int_option("rank", rank, 0)
        world_size = _int_option("world_size", world_size, 1)
        if rank >= world_size:
            raise UsageError(f"rank must be below world_size ({world_size}), got {rank}")

        dataset = _open_dataset(data)
        if dtype is None:
            dtype = "float32" if dataset.is_image else dataset.dtype
        dtype = _str_option("dtype", dtype)
        canonical = _ringfeed.dtype_name(dtype)
        if canonical is None:
            raise UsageError(f"dtype: unknown dtype {dtype!r} (float32, bfloat16, float16, or the "
                             f"dataset's own, {dataset.dtype})")
        if normalize is None:
            normalize = canonical in _FLOAT_OUTPUTS
        normalize = _bool_option("normalize", normalize)
        if (mean is None) != (std is None):
            raise UsageError("mean and std: give both or neither")
        try:
            mean = [float(v) for v in (mean if mean is not None else ())]
            std = [float(v) for v in (std if std is not None else ())]
        except (TypeError, ValueError):
            raise UsageError(f"mean and std must be sequences of numbers, got {mean!r}, "
                             f"{std!r}") from None

        augment = "none" if augment is None else _str_option("augment", augment)

        self._dataset = dataset
        self._batch_size = batch_size
        self._seed = seed
        self._shuffle = _str_option("shuffle", shuffle)
        self._shuffle_window = shuffle_window
        self._drop_last = drop_last
        self._rank = rank
        self._world_size = world_size
        self._native = _ringfeed._Loader(
            dataset,
            batch_size=batch_size,
            device=device_kind,
            gpu=gpu,
            dtype=canonical,
            layout=getattr(_ringfeed.SampleLayout, layout_text),
            normalize=normalize,
            mean=mean,
            std=std,
            augment=augment,
            shuffle=self._shuffle,
            shuffle_window=shuffle_window,
            seed=seed,
            drop_last=drop_last,
            rank=rank,
            world_size=world_size,
            mode=_str_option("mode", mode),
            io=_str_option("io", io),
            queue_depth=_int_option("queue_depth", queue_depth, 1),
            read_size=read_size,
            ring_slots=_int_option("ring_slots", ring_slots, 2),
            copy_streams=_int_option("copy_streams", copy_streams, 1),
            verify=_bool_option("verify", verify),
            output_buffers=_int_option("prefetch", prefetch, 1),
            managed_prefetch=_int_option("managed_prefetch", managed_prefetch, 0),
            managed_advise=_bool_option("managed_advise", managed_advise),
            managed_oversubscribe=_bool_option("managed_oversubscribe", managed_oversubscribe),
        )
        self._batches_per_epoch = self._native.batches_per_epoch()
        self._epoch_samples = self._native.epoch_samples()
        # The position at which an epoch is over: every sample, or with drop_last the last full
        # batch's end.
        self._epoch_end = min(self._batches_per_epoch * batch_size, self._epoch_samples)
        gpu_device = self._native.gpu_device()
        self._device = "cpu" if gpu_device < 0 else f"cuda:{gpu_device}"
        self._epoch = 0
        self._position = 0
        # Where the native loader's next batch would come from; None: unknown (never started, or
        # a call failed), so the next batch restarts it at (epoch, position).
        self._native_at: Optional[Tuple[int, int]] = None
        # Bumped by every iter(), set_epoch and load_state_dict: an older iterator is stale.
        self._generation = 0

    # --- What the loader is -------------------------------------------------------------------

    @property
    def dataset(self) -> DatasetInfo:
        """The dataset's header (:class:`DatasetInfo`)."""
        return _info(self._dataset)

    @property
    def device(self) -> str:
        """Where batches are: 'cpu' or 'cuda:N'."""
        return self._device

    @property
    def batch_size(self) -> int:
        """Samples per batch (the epoch's last batch may hold fewer)."""
        return self._batch_size

    @property
    def rank(self) -> int:
        """This loader's rank."""
        return self._rank

    @property
    def world_size(self) -> int:
        """The number of ranks sharing each epoch."""
        return self._world_size

    @property
    def epoch_samples(self) -> int:
        """Samples in one epoch of this rank (the same for every epoch and rank)."""
        return self._epoch_samples

    @property
    def epoch(self) -> int:
        """The epoch the next batch comes from."""
        return self._epoch

    @property
    def position(self) -> int:
        """Samples of the current epoch handed out so far (where the next batch starts)."""
        return self._position

    def __len__(self) -> int:
        """Batches per epoch for this rank (the last one included unless drop_last drops it)."""
        return self._batches_per_epoch

    def __repr__(self) -> str:
        if self._native is None:
            return "<ringfeed.Loader (closed)>"
        return (f"<ringfeed.Loader {self._dataset.shard_paths[0]!r} batch_size={self._batch_size}"
                f" epoch={self._epoch} position={self._position}: {self._native.describe()}>")

    # --- Batches ------------------------------------------------------------------------------

    def __iter__(self) -> Iterator[Tuple[Tensor, Tensor]]:
        """The rest of the current epoch, batch by batch: (samples, labels)."""
        self._generation += 1
        return self._epoch_batches(self._generation)

    def _epoch_batches(self, generation: int) -> Iterator[Tuple[Tensor, Tensor]]:
        epoch = self._epoch
        if self._epoch_end == 0:  # nothing to hand out: the epoch is over at once
            self._epoch += 1
            return
        while self._epoch == epoch:
            if generation != self._generation:
                raise RuntimeError("this iterator is stale: the loader was iterated again, or "
                                   "set_epoch or load_state_dict was called, after it started")
            yield self._next_batch()

    def _next_batch(self) -> Tuple[Tensor, Tensor]:
        native = self._open_native()
        at = (self._epoch, self._position)
        try:
            if self._native_at != at:
                self._native_at = None
                native.start_epoch(*at)
            out = native.next()
        except BaseException:
            self._native_at = None  # the batch in flight, if any, is handed out again
            raise
        if out is None:
            self._native_at = None
            raise RuntimeError(f"the loader ended epoch {self._epoch} at sample {self._position}"
                               f" of {self._epoch_end}")
        samples = out[0]
        end = samples.position + samples.shape[0]
        self._native_at = (self._epoch, end)
        if end >= self._epoch_end:
            self._epoch += 1
            self._position = 0
        else:
            self._position = end
        return out

    def set_epoch(self, epoch: int) -> None:
        """Makes the next iteration epoch `epoch`, from its start."""
        self._epoch = _int_option("epoch", epoch, 0, 2**63 - 1)
        self._position = 0
        self._generation += 1

    # --- Checkpoints --------------------------------------------------------------------------

    def state_dict(self) -> Dict[str, Any]:
        """Where the loader is, as a plain dict of str, int and bool (JSON-able): the epoch, the
        position (samples of the epoch handed out so far) and what identifies the order (seed,
        batch size, shuffle mode and window, drop_last, rank, world size, the dataset's id, as a
        hex string, and sample count)."""
        return {
            "version": _STATE_VERSION,
            "epoch": self._epoch,
            "position": self._position,
            "seed": self._seed,
            "batch_size": self._batch_size,
            "shuffle": self._shuffle,
            "shuffle_window": self._shuffle_window,
            "drop_last": self._drop_last,
            "rank": self._rank,
            "world_size": self._world_size,
            "dataset_id": f"{self._dataset.id:016x}",
            "dataset_samples": self._dataset.samples,
        }

    def load_state_dict(self, state: Dict[str, Any]) -> None:
        """Positions the loader where `state` (from state_dict) was: the next batches are
        exactly those the saved loader would have handed out next. UsageError where the state
        is of another order (each differing field named, with both values) or malformed."""
        if not isinstance(state, dict):
            raise UsageError(f"load_state_dict takes a dict from state_dict(), got "
                             f"{type(state).__name__}")
        if state.get("version") != _STATE_VERSION:
            raise UsageError(f"load_state_dict: unknown state version {state.get('version')!r} "
                             f"(this ringfeed writes {_STATE_VERSION})")
        missing = [k for k in ("epoch", "position") + _ORDER_KEYS if k not in state]
        if missing:
            raise UsageError(f"load_state_dict: the state lacks {missing}")
        own = self.state_dict()
        differ = [f"{k}: the state has {state[k]!r}, this loader {own[k]!r}"
                  for k in _ORDER_KEYS if state[k] != own[k]]
        if differ:
            raise UsageError("load_state_dict: the state is of another order: " + "; ".join(differ))
        epoch = _int_option("the state's epoch", state["epoch"], 0, 2**63 - 1)
        position = _int_option("the state's position", state["position"], 0, 2**64 - 1)
        if position >= max(self._epoch_end, 1):
            raise UsageError(f"load_state_dict: position {position} is past the epoch's "
                             f"{self._epoch_end} samples")
        self._epoch = epoch
        self._position = position
        self._generation += 1

    # --- Figures and life -----------------------------------------------------------------------

    def stats(self) -> Dict[str, float]:
        """What the loader read and how fast: bytes_read (from disk, since it opened), seconds
        (since the first batch was asked for), disk_gbps (bytes_read / seconds, 1e9 bytes/s),
        wait_seconds and wait_share (the time and the share of `seconds` spent waiting for data),
        reader_held_seconds (the disk reader idle for want of a free ring slot), batches (handed
        out)."""
        s = self._open_native().stats()
        seconds = s["seconds"]
        s["disk_gbps"] = s["bytes_read"] / seconds / 1e9 if seconds > 0 else 0.0
        s["wait_share"] = s["wait_seconds"] / seconds if seconds > 0 else 0.0
        return s

    def close(self) -> None:
        """Stops the loader's threads and reads and frees its memory, but for the batches still
        held, which stay valid. Also what deleting the loader does. Idempotent."""
        native, self._native = self._native, None
        if native is not None:
            native.close()

    def __enter__(self) -> "Loader":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _open_native(self) -> "_ringfeed._Loader":
        if self._native is None:
            raise UsageError("the loader is closed")
        return self._native

