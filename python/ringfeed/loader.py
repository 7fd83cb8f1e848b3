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

Resume at another world size. A state dict records, besides the epoch and position, the stretches
of its epoch that earlier loaders at other world sizes had trained (core/order_settings.h's
ResumedEpoch, what `ringfeed train`'s checkpoints record). A loader of another world size that
loads it appends the saved world's stretch (pipeline/order/window_order.h's ResumeAt, the rule of
`ringfeed train --resume`) and reopens the native loader with that resumed epoch
(PipelineConfig's order.resumed): the library's order then shares what no rank had taken among
the new ranks, each sample once. Nothing of that order is computed here.
"""

from __future__ import annotations

import errno
import glob
import os
import sys
import threading
import warnings
from typing import Any, Dict, Iterator, NamedTuple, Optional, Sequence, Tuple, Union

from . import _ringfeed
from ._options import options_help, signature
from ._ringfeed import Tensor, UsageError
from ._state import _check_state, _int_option
from .sequences import PackedLoader, open_datasets

__all__ = ["BadRecordsSkipped", "DatasetInfo", "Loader"]

PathLike = Union[str, "os.PathLike[str]"]

# The state dict's own version: load_state_dict refuses one it does not know. Version 2 added
# the augmentation and the output dtype; version 3 the stretches, with which a state loads at
# any world size (a state of version 1 or 2 has none: its epoch was an ordinary one); version 4
# the look of the samples (_LOOK_KEYS).
_STATE_VERSION = 4
# A sample mixture's state dict (kind 'mixture') has a version of its own: version 2 added the
# look of the samples.
_MIXTURE_STATE_VERSION = 2
# What identifies an epoch order: a state saved under other values would not resume exactly.
_ORDER_KEYS = ("seed", "batch_size", "shuffle", "shuffle_window", "drop_last", "dataset_id",
               "dataset_samples")
# Whose part of the order the state was: another rank or world size continues the same epoch.
_RANK_KEYS = ("rank", "world_size")
# What else the batches depend on (version 2 on).
_OUTPUT_KEYS = ("augment", "dtype")
# What the samples look like (version 4 on; a mixture's state: version 2 on), recorded in every
# state and checked where they decide this loader's samples: the layout and the normalization
# (normalize, and mean and std where given) where the batches are decoded (not records of any
# size), and a dataset of image/jpeg records' decode: image_size (0 too: its bytes) and
# image_crop ('random': RandomResizedCrop and a flip, each keyed by the seed, the epoch and the
# sample; 'center'). A state saved before them (without these fields) loads with them unchecked:
# unknown, not taken as the defaults, which an older loader may not have had.
# Recorded nowhere, so free to change at a resume, as what cannot change a sample's crop:
# skip_bad_records and max_image_side (what becomes of a record that does not decode: a loader
# that stopped on a bad record goes on from its state with skip_bad_records=True, as the error
# says), image_decoder and image_cpu_share (the same crops, decoded by nvJPEG or the CPU: their
# pixels within a few levels of each other), image_threads and prefetch (nothing).
_LOOK_KEYS = ("layout", "normalize", "mean", "std")
_IMAGE_KEYS = ("image_size", "image_crop")
# The most stretches a state may hold: what a ringfeed checkpoint holds (model/checkpoint.h's
# kMaxCheckpointStretches); a resume adds one.
_MAX_STRETCHES = 1024
# The loader options a state records.
_OPTION_KEYS = ("seed", "batch_size", "shuffle", "shuffle_window", "drop_last", "rank",
                "world_size", "augment", "dtype") + _LOOK_KEYS + _IMAGE_KEYS

class BadRecordsSkipped(UserWarning):
    """Warned at the end of an epoch in which a loader with skip_bad_records=True skipped image
    records that did not decode: how many, and the first ten named (sample index, file, chunk,
    record, why)."""


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
    records are ('image/jpeg'; '' unknown). parts: for a directory, its datasets in the order
    they are read as one, each (path, samples); for one dataset, itself.
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


def _info(d: "_ringfeed._Dataset") -> DatasetInfo:
    return DatasetInfo(samples=d.samples, shape=tuple(d.shape), dtype=d.dtype, classes=d.classes,
                       mean=tuple(d.mean), std=tuple(d.std), label_dtype=d.label_dtype, id=d.id,
                       paths=tuple(d.shard_paths), format_version=d.format_version,
                       codec=d.codec, compressed_chunks=d.compressed_chunks,
                       stored_bytes=d.total_bytes, data_bytes=d.data_bytes,
                       record_kind=d.record_kind, media_type=d.media_type,
                       parts=tuple((p, n) for p, n in d.parts))


def dataset_info(data: Union[PathLike, Sequence[PathLike]]) -> DatasetInfo:
    """A dataset's header (:class:`DatasetInfo`) without a loader: the files are opened and
    checked (header and chunk index), no chunk is read. `data` as for :class:`Loader`."""
    return _info(_open_dataset(data))


def _open_dataset(data: Union[PathLike, Sequence[PathLike]]) -> "_ringfeed._Dataset":
    """Opens `data`: a directory of datasets, one .rfd file, any one shard, the shards' base
    name, a glob pattern of shard files, or a list of them. A pattern or a list must name every
    shard of one dataset exactly once (UsageError otherwise); a pattern matching nothing is
    FileNotFoundError."""
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


def _stretches(value: list) -> Tuple[Tuple[int, int], ...]:
    """A state's stretches (a list of dicts of world_size and position, oldest first) as
    ((world_size, position), ...); UsageError naming what is malformed. Whether a loader of the
    dataset can have trained them is the library's check (PipelineConfig::ValidateFor)."""
    if len(value) > _MAX_STRETCHES:
        raise UsageError(f"load_state_dict: malformed state: {len(value)} stretches, more than "
                         f"the {_MAX_STRETCHES} a state holds")
    out = []
    for k, stretch in enumerate(value):
        if type(stretch) is not dict or set(stretch) != {"world_size", "position"}:
            raise UsageError(f"load_state_dict: malformed state: stretches[{k}] must be a dict "
                             f"of world_size and position, got {stretch!r}")
        out.append((_int_option(f"the state's stretches[{k}]['world_size']",
                                stretch["world_size"], 1, 2**32 - 1),
                    _int_option(f"the state's stretches[{k}]['position']", stretch["position"],
                                0, 2**64 - 1)))
    return tuple(out)


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


# The loader's options, declared once in the library (pipeline/plan/loader_options.h): name, type,
# default, rule, words, what None means where the default is not one value, help. The Loader's
# signature and the "Options" part of its help are made from them, and every keyword argument is
# checked and set by the library through the same declarations as `ringfeed train`'s flags.
_OPTIONS: Dict[str, Dict[str, Any]] = {o["name"]: o for o in _ringfeed.loader_options()}


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
    on by one and ``position`` returns to 0. Every iterator of a loader takes its batches from
    the loader's position, so iterators used at once (by threads, say) share the epoch, each
    batch handed out once. ``set_epoch(e)`` makes the next iteration epoch e from its start (an
    iterator made before it refuses to go on); ``len(loader)`` is the batches of the current
    epoch for this rank (the same in every epoch but one resumed at another world size). The
    order is a function of the dataset, seed, shuffle, shuffle_window, epoch, rank and
    world_size only.

    Checkpoints: ``state_dict()`` is a small JSON-able dict of the epoch, the position and what
    the batches depend on; ``load_state_dict(state)`` on a loader with the same options continues
    with exactly the batches the saved loader would have handed out next. At another world size
    (or rank) it continues the saved epoch too: the samples no rank of the saved world had taken
    are shared by the new ranks, each exactly once, through any number of such resumes, and the
    epochs after it are ordinary. Every rank's state is the same but for ``rank`` (the ranks take
    the same number of batches), so rank 0's alone is saved and every new rank loads it. A
    loader cannot be copied (``copy.copy``): open another with the same options and
    ``load_state_dict``.

    Arguments: ``data`` (the first), ``batch_size`` (the second, or by name) and the options,
    by name: the options of ``ringfeed train`` with '_' for '-', plus the output's, with the
    same defaults and bounds (``help(ringfeed.Loader)`` lists them below). None for any option
    means its default.

    data: the dataset: a ``.rfd`` file, any one of its shards or the shards' base name, a glob
        pattern of its shard files, or a list of them (every shard of one dataset, once); or a
        directory, whose datasets (each written by its own DatasetWriter, say) are read as one,
        in the order of their names. With ``weights``, a list of datasets (each any of those),
        mixed sample by sample: each step of each rank takes a sample of the dataset with the
        largest deficit w_i (k + 1) - drawn_i, a pure function of (weights, seed, k); each
        dataset keeps its own epochs and order (a single-dataset loader's, this rank's part of
        each); an epoch of the mixture is its datasets' samples together; a batch's indices count
        the datasets one after another (pipeline/sources/mixed_source.h).
    device also takes 'cuda:N' (GPU N) and a torch.device; 'cuda' is the current GPU, as
        torch.cuda.set_device sets it. dtype: 'bf16' and other names of a dtype work too.

    Errors: ringfeed.UsageError (a ValueError) for options that cannot be run, naming the option;
    ringfeed.DataError (a ValueError) for bad data, naming the file, the chunk and the byte offset
    (also as .path, .chunk, .offset); OSError (FileNotFoundError, PermissionError, ...) for files
    that cannot be read. After an error (or a KeyboardInterrupt while waiting for a batch) the
    next iteration starts over at the position of the last batch handed out.

    Threads: the loader's methods may be called from any thread, one call at a time (a second
    thread's call waits); the GIL is released while a call waits for disk or the GPU.

    Options:

    """

    def __init__(self, data: Union[PathLike, Sequence[PathLike]],
                 batch_size: Optional[int] = None, **options: Any) -> None:
        # The signature help() and inspect show is made from the declarations (end of file).
        self._native: Optional[_ringfeed._Loader] = None
        self._packed: Optional[PackedLoader] = None
        self._mixture: Optional[list] = None  # a sample mixture's datasets
        self._lock = threading.RLock()
        unknown = [k for k in options if k not in _OPTIONS or k == "batch_size"]
        if unknown:
            raise TypeError(f"Loader() got an unexpected keyword argument {unknown[0]!r}")
        options = {k: v for k, v in options.items() if v is not None}
        if batch_size is not None:
            options["batch_size"] = batch_size
        kind, gpu = _device_option(options.pop("device", None))
        options["device"] = kind
        if "rank" not in options or "world_size" not in options:
            process_rank, process_world = _process_rank()
            options.setdefault("rank", process_rank)
            options.setdefault("world_size", process_world)
        if isinstance(options.get("layout"), str):
            options["layout"] = options["layout"].upper()
        if options.get("sequence_length"):
            self._init_packed(data, options, gpu)
            return

        # A sample mixture (weights): several datasets of one sample shape and type, each drawn
        # by its weight (pipeline/sources/mixed_source.h); else one dataset.
        mixture = open_datasets(data, options["weights"], _open_dataset) if (
            "weights" in options) else None
        dataset = mixture[0] if mixture else _open_dataset(data)
        if "dtype" in options:
            dtype = options["dtype"]
            canonical = _ringfeed.dtype_name(dtype) if isinstance(dtype, str) else None
            if canonical is None:
                raise UsageError(f"dtype: unknown dtype {dtype!r} (float32, bfloat16, float16, "
                                 f"or the dataset's own, {dataset.dtype})")
            options["dtype"] = canonical
        if ("mean" in options) != ("std" in options):
            raise UsageError("mean and std: give both or neither")

        self._dataset = dataset
        self._mixture = mixture
        if mixture:
            self._native = _ringfeed._Loader(mixture, options, gpu)
        else:
            self._native = _ringfeed._Loader(dataset, options, gpu)
        # What the batches depend on, as the library took it (its defaults where not given),
        # and the kind of batch it decided (pipeline/plan/loader_plan.h).
        self._options = self._native.options()
        self._records = self._native.kind() == "records"
        # The recorded keys a state must agree on with this loader (_LOOK_KEYS).
        self._look_keys = ((() if self._records else _LOOK_KEYS) +
                           (_IMAGE_KEYS if dataset.record_kind == "bytes"
                            and dataset.media_type == "image/jpeg" else ()))
        self._batch_size = self._options["batch_size"]
        # The samples of an ordinary epoch of this rank, at which such an epoch is over: every
        # sample, or with drop_last the last full batch's end.
        self._ordinary_samples = self._native.epoch_samples()
        gpu_device = self._native.gpu_device()
        self._device = "cpu" if gpu_device < 0 else f"cuda:{gpu_device}"
        # What reopens the native loader for a resumed epoch (load_state_dict): the same options,
        # on the GPU this one took.
        self._native_args = (options, gpu_device if gpu_device >= 0 else gpu)
        # The epoch begun at other world sizes that the native loader continues, as (epoch,
        # ((world_size, position), ...)), and its samples of this rank; None: every epoch is
        # ordinary.
        self._resumed: Optional[Tuple[int, Tuple[Tuple[int, int], ...]]] = None
        self._resumed_samples = 0
        self._epoch = 0
        self._position = 0
        # Where the native loader's next batch would come from; None: unknown (never started, or
        # a call failed), so the next batch restarts it at (epoch, position).
        self._native_at: Optional[Tuple[int, int]] = None
        # Bumped by set_epoch and load_state_dict: an iterator made before either is stale.
        self._generation = 0

    def _init_packed(self, data: Any, options: Dict[str, Any], gpu: int) -> None:
        """Packed token sequences (sequence_length): the library's SequenceLoader."""
        datasets = open_datasets(data, options.get("weights"), _open_dataset)
        dtype = options.get("dtype", "int64")
        canonical = _ringfeed.dtype_name(dtype) if isinstance(dtype, str) else None
        if canonical not in ("int64", "int32"):
            raise UsageError(f"dtype: packed sequences' tokens are int64 or int32, got {dtype!r}")
        options["dtype"] = canonical
        self._packed = PackedLoader(datasets, options, gpu)
        self._dataset = datasets[0]
        self._options = self._packed.options
        self._batch_size = self._options["batch_size"]
        self._device = self._packed.device

    def __copy__(self) -> "Loader":
        raise TypeError("a ringfeed.Loader cannot be copied: the copy would share its reader and "
                        "position. Open another Loader with the same options and hand it "
                        "loader.state_dict() (load_state_dict) to continue from the same place")

    def __deepcopy__(self, memo: Dict[int, Any]) -> "Loader":
        return self.__copy__()

    def __reduce_ex__(self, protocol: Any) -> Any:
        raise TypeError("a ringfeed.Loader cannot be pickled or copied: save "
                        "loader.state_dict() and open a new Loader with the same options")

    # --- What the loader is -------------------------------------------------------------------

    @property
    def dataset(self) -> DatasetInfo:
        """The dataset's header (:class:`DatasetInfo`); a mixture's first dataset's."""
        return _info(self._dataset)

    @property
    def datasets(self) -> Tuple[DatasetInfo, ...]:
        """A sample mixture's datasets' headers, in the order given (one dataset: itself)."""
        return tuple(_info(d) for d in (self._mixture or [self._dataset]))

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
        return self._options["rank"]

    @property
    def world_size(self) -> int:
        """The number of ranks sharing each epoch."""
        return self._options["world_size"]

    @property
    def epoch_samples(self) -> int:
        """Samples in the current epoch of this rank: the same for every epoch and rank, but in
        an epoch resumed at another world size (load_state_dict), which holds this rank's share
        of what the earlier ranks left. With drop_last, the full batches' samples."""
        return self._samples_of(self._epoch)

    @property
    def epoch(self) -> int:
        """The epoch the next batch comes from (packed sequences of a mixture: the first
        dataset's)."""
        if self._packed is not None:
            return self._packed.where()["sources"][0]["epoch"]
        return self._epoch

    @property
    def position(self) -> int:
        """Samples of the current epoch handed out so far (where the next batch starts); packed
        sequences: rows."""
        if self._packed is not None:
            return self._packed.where()["sources"][0]["position"]
        return self._position

    def __len__(self) -> int:
        """Batches in the current epoch for this rank (the last one included unless drop_last
        drops it): the same for every epoch but one resumed at another world size. Packed
        sequences from a mixture (weights) have no epoch: TypeError."""
        if self._packed is not None:
            return self._packed.batches_per_epoch()
        return -(-self._samples_of(self._epoch) // self._batch_size)

    def __repr__(self) -> str:
        if self._packed is not None:
            return f"<ringfeed.Loader (packed sequences): {self._packed.describe()}>"
        if self._native is None:
            return "<ringfeed.Loader (closed)>"
        return (f"<ringfeed.Loader {self._dataset.shard_paths[0]!r} batch_size={self._batch_size}"
                f" epoch={self._epoch} position={self._position}: {self._native.describe()}>")

    # --- Batches ------------------------------------------------------------------------------

    def __iter__(self) -> Iterator[Tuple[Tensor, Tensor]]:
        """The rest of the current epoch, batch by batch: (samples, labels). Packed sequences:
        :class:`ringfeed.Sequences`, to the epoch's end (a mixture: without end)."""
        if self._packed is not None:
            return self._packed.iterate()
        with self._lock:
            return _EpochIterator(self, self._epoch, self._generation)

    def _next_batch(self, epoch: int, generation: int) -> Optional[Tuple[Tensor, Tensor]]:
        """The next batch of `epoch` for an iterator made at `generation`, or None once that
        epoch is over. Under the loader's lock from the position it reads to the position it
        leaves, so threads sharing the loader get each batch once."""
        with self._lock:
            if generation != self._generation:
                raise RuntimeError("this iterator is stale: set_epoch or load_state_dict was "
                                   "called after it started")
            if self._epoch != epoch:
                return None
            epoch_end = self._samples_of(epoch)
            # Nothing to hand out: the epoch is over at once (but for an epoch past the last one
            # a loader hands out, which the library's start refuses).
            if epoch_end == 0 and epoch < _ringfeed.max_epoch:
                self._epoch += 1
                return None
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
                raise RuntimeError(f"the loader ended epoch {self._epoch} at sample "
                                   f"{self._position} of {epoch_end}")
            # (samples, labels), or for records of any size (values, offsets, labels). A batch
            # spans its samples, and the bad image records skipped from it (skip_bad_records).
            end = out[0].position + out[0].span
            self._native_at = (self._epoch, end)
            if end >= epoch_end:
                skipped = native.skipped()
                if skipped:  # decoded images under skip_bad_records: the epoch's report
                    warnings.warn(skipped, BadRecordsSkipped, stacklevel=3)
                self._epoch += 1
                self._position = 0
            else:
                self._position = end
            return out

    def set_epoch(self, epoch: int) -> None:
        """Makes the next iteration epoch `epoch`, from its start (0 to 2**32 - 1: what a
        ringfeed checkpoint holds; the last epoch a loader hands out is 2**32 - 2, whose end
        leaves it at 2**32 - 1, where an iteration is refused). A loader that load_state_dict
        resumed at another world size keeps that epoch's order: set back to it, it gives the same
        share of the remainder. A mixture's datasets are not rewound: its stream goes on, the
        next epoch named `epoch` (packed sequences of a mixture, which have no epoch of their
        own, go on as they are: each dataset keeps its epoch). An iterator made before it
        refuses to go on."""
        epoch = _int_option("epoch", epoch, 0, _ringfeed.max_epoch)
        if self._packed is not None:
            self._packed.set_epoch(epoch)
            return
        with self._lock:
            self._epoch = epoch
            self._position = 0
            self._generation += 1

    # --- Checkpoints --------------------------------------------------------------------------

    def state_dict(self) -> Dict[str, Any]:
        """Where the loader is, as a plain dict of str, int, bool and list (JSON-able): the
        epoch, the position (samples of the epoch handed out so far), the stretches (the epoch's
        parts trained by earlier loaders at other world sizes, oldest first, each a dict of
        world_size and position; [] for an ordinary epoch) and what identifies its batches
        (seed, batch size, shuffle mode and window, drop_last, rank, world size, the
        augmentation and the output dtype, the dataset's id, as a hex string, and sample count)
        and what its samples look like (layout, normalize, mean, std; and the decode of
        image/jpeg records: image_size and image_crop, recorded whatever the dataset and checked
        where they apply). Its size does not grow with the dataset: one stretch per resume at
        another world size.

        Ranks that have taken the same number of batches (as data-parallel training does) have
        the same state but for ``rank``: rank 0's holds what every rank, of this world size or
        another, needs to continue.

        A mixture of datasets (weights): kind 'mixture', the epoch, position and stretches of
        the mixture's epoch, the options above, the normalized weights, each dataset's id,
        samples and path, and the stream: its steps, each dataset's draws, and each dataset's
        epoch, position and stretches. Rank 0's holds what every rank needs, at any world size.

        Packed sequences: kind 'sequences', what the batches depend on (seed, batch_size,
        sequence_length, eod_token, pad_token, shuffle, shuffle_window, drop_last, dtype,
        weights, each dataset's id and samples) and where they stand (rows handed out, each
        dataset's draws, and each dataset's epoch, position in rows, world size and list of the
        epoch's sequences left, [] for all): rank 0's holds what every rank needs, at this world
        size or another."""
        if self._packed is not None:
            return self._packed.state_dict()
        if self._mixture:
            return self._mixture_state_dict()
        with self._lock:
            state = {"version": _STATE_VERSION, "epoch": self._epoch,
                     "position": self._position,
                     "stretches": [{"world_size": w, "position": p}
                                   for w, p in self._stretches_of(self._epoch)]}
        for key in _OPTION_KEYS:
            state[key] = self._options[key]
        state["dataset_id"] = f"{self._dataset.id:016x}"
        state["dataset_samples"] = self._dataset.samples
        return state

    def load_state_dict(self, state: Dict[str, Any]) -> None:
        """Positions the loader where `state` (from state_dict, of any rank) was.

        At the state's world size, the next batches are exactly those the saved loader's rank
        ``self.rank`` would have handed out next. At another world size, this loader's next
        epoch is this rank's share of what the saved epoch's ranks had not taken (every such
        sample goes to exactly one of this world's ranks, plus fewer than world_size repeats
        where the ranks' equal shares need padding), from position 0; ``len(loader)`` and
        ``epoch_samples`` are that epoch's, and the epochs after it are ordinary epochs at this
        world size. Any number of such resumes may follow one another within an epoch.

        UsageError where the state is of other batches (each differing field named, with both
        values: seed, dataset, batch size, image_size, ...; rank and world_size may differ;
        skip_bad_records, max_image_side, image_decoder, image_cpu_share and image_threads are
        not recorded, and may change: they change no sample's crop), malformed (a
        field of another type: 64.0 for 64, True for 1; a rank not below its world_size;
        stretches that are no list of dicts of world_size and position, or that no loader of
        this dataset can have trained), or at a position no loader stops at. The loader is then
        as it was.

        A mixture (weights): kind 'mixture', refused where its options, normalized weights or
        datasets (each id and sample count; the path is named, not compared) differ from this
        loader's, each named. At the state's world size the next batches are exactly those the
        saved loader would have handed out; at another, the mixture epoch goes on with what the
        saved ranks left of it, and each dataset's interrupted epoch with the samples no rank
        had taken, each once (the stretches of each, as above); the draws go on; a mixture's
        state of version 1 (before the look of the samples was recorded) loads without it
        checked. States of version 1 (before augment and dtype were recorded) load without
        those two checked; states of versions 1 and 2 (before stretches) are of ordinary
        epochs; states of versions 1 to 3 (before layout, normalize, mean, std, image_size and
        image_crop were recorded) load without those checked.

        Resuming at another world size reopens the native loader for the resumed epoch (its
        stats() start again); should that reopening fail (memory, say), the loader is closed."""
        if self._packed is not None:
            self._packed.load_state_dict(state)
            return
        if self._mixture:
            self._load_mixture_state(state)
            return
        if not isinstance(state, dict):
            raise UsageError(f"load_state_dict takes a dict from state_dict(), got "
                             f"{type(state).__name__}")
        if state.get("kind") == "mixture":
            raise UsageError(f"load_state_dict: the state is a mixture's of "
                             f"{len(state.get('datasets') or [])} datasets (weights); this loader "
                             f"reads one dataset")
        version = state.get("version")
        if type(version) is not int or version not in (1, 2, 3, _STATE_VERSION):
            raise UsageError(f"load_state_dict: unknown state version {version!r} "
                             f"(this ringfeed reads 1 to {_STATE_VERSION})")
        keys = _ORDER_KEYS if version == 1 else _ORDER_KEYS + _OUTPUT_KEYS
        fields = ("epoch", "position") + keys + _RANK_KEYS + (
            ("stretches",) if version >= 3 else ()) + (
            _LOOK_KEYS + _IMAGE_KEYS if version >= 4 else ())
        if version >= 4:
            keys += self._look_keys
        _check_state(state, self.state_dict, fields, keys, "of other batches")
        epoch, position, saved_world, stretches = _state_place(state, self._batch_size,
                                                               version >= 3)
        # Where this loader continues: the library's rule, `ringfeed train --resume`'s (at the
        # state's world size, in the same order at the same position; at another, the saved
        # stretch appended, and this world's ranks share what the stretches left from the start).
        resumed_stretches, at = _ringfeed.resume_at(epoch, list(stretches), saved_world,
                                                    position, self.world_size)
        stretches = tuple(resumed_stretches)
        resumed = (epoch, stretches) if stretches else None
        with self._lock:
            native = self._open_native()
            if resumed == self._resumed:
                samples = self._samples_of(epoch)
            else:
                try:  # the library's count of the resumed epoch, checking the stretches
                    samples = native.epoch_samples_for(epoch, epoch, list(stretches))
                except UsageError as e:
                    raise UsageError(f"load_state_dict: {e}") from None
            if at >= max(samples, 1):
                raise UsageError(f"load_state_dict: position {at} is no batch boundary of "
                                 f"this loader's epoch {epoch} (multiples of batch_size "
                                 f"{self._batch_size} below {max(samples, 1)})")
            if resumed != self._resumed:
                self._reopen(resumed, samples)
            self._epoch = epoch
            self._position = at
            self._generation += 1

    # --- A sample mixture's checkpoints ---------------------------------------------------------

    def _mixture_state_dict(self) -> Dict[str, Any]:
        """state_dict of a sample mixture: the mixture epoch's place (epoch, position, its
        stretches), what the batches depend on, and the stream: its steps, each dataset's draws,
        and each dataset's epoch, position and stretches."""
        with self._lock:
            state: Dict[str, Any] = {
                "version": _MIXTURE_STATE_VERSION, "kind": "mixture", "epoch": self._epoch,
                "position": self._position,
                "stretches": [{"world_size": w, "position": p}
                              for w, p in self._stretches_of(self._epoch)]}
            native = self._open_native().mixture_state()
        for key in _OPTION_KEYS:
            state[key] = self._options[key]
        state["weights"] = self._weights()
        state["datasets"] = [{"id": f"{d.id:016x}", "samples": d.samples,
                              "path": d.shard_paths[0]} for d in self._mixture]
        state["steps"] = native["steps"]
        state["drawn"] = list(native["drawn"])
        state["sources"] = [{"epoch": g["epoch"], "position": g["position"],
                             "stretches": [{"world_size": w, "position": p}
                                           for w, p in g["stretches"]]}
                            for g in native["sources"]]
        return state

    def _weights(self) -> list:
        """The weights, normalized to sum 1 (as the library draws by them)."""
        weights = [float(w) for w in self._options["weights"]]
        total = sum(weights)
        return [w / total for w in weights]

    def _load_mixture_state(self, state: Dict[str, Any]) -> None:
        """load_state_dict of a sample mixture (see load_state_dict)."""
        if not isinstance(state, dict) or state.get("kind") != "mixture":
            raise UsageError("load_state_dict: not a mixture's state (from a Loader of several "
                             "datasets with weights): " +
                             (f"kind {state.get('kind')!r}" if isinstance(state, dict)
                              else type(state).__name__))
        version = state.get("version")
        if type(version) is not int or version not in (1, _MIXTURE_STATE_VERSION):
            raise UsageError(f"load_state_dict: unknown mixture state version "
                             f"{version!r} (this ringfeed reads 1 to "
                             f"{_MIXTURE_STATE_VERSION})")
        own = self._mixture_state_dict()
        keys = ("seed", "batch_size", "shuffle", "shuffle_window", "drop_last", "augment",
                "dtype", "weights")
        fields = tuple(own)
        if version >= 2:
            keys += self._look_keys
        else:  # before the look of the samples was recorded: unknown, unchecked
            fields = tuple(k for k in fields if k not in _LOOK_KEYS + _IMAGE_KEYS)
        _check_state(state, lambda: own, fields, keys, "of another mixture",
                     lambda: _datasets_differ(state["datasets"], own["datasets"]))
        epoch, position, saved_world, stretches = _state_place(state, self._batch_size, True)
        native = _mixture_stream(state)
        # The mixture epoch continues by the library's rule, as a dataset's epoch does; each
        # dataset's epoch by the same rule, in the library (ContinueMixture).
        resumed_stretches, at = _ringfeed.resume_at(epoch, list(stretches), saved_world,
                                                    position, self.world_size)
        stretches = tuple(resumed_stretches)
        resumed = (epoch, stretches) if stretches else None
        with self._lock:
            loader = self._open_native()
            try:
                samples = loader.epoch_samples_for(epoch, epoch, list(stretches))
            except UsageError as e:
                raise UsageError(f"load_state_dict: {e}") from None
            if at >= max(samples, 1):
                raise UsageError(f"load_state_dict: position {at} is no batch boundary of "
                                 f"this loader's epoch {epoch} (multiples of batch_size "
                                 f"{self._batch_size} below {max(samples, 1)})")
            try:
                loader.restore_mixture(native, saved_world, epoch if resumed else 0,
                                       list(stretches))
            except UsageError as e:
                raise UsageError(f"load_state_dict: {e}") from None
            self._resumed = resumed
            self._resumed_samples = samples if resumed is not None else 0
            self._native_at = None
            self._epoch = epoch
            self._position = at
            self._generation += 1

    def _stretches_of(self, epoch: int) -> Tuple[Tuple[int, int], ...]:
        """The stretches of `epoch` earlier loaders at other world sizes trained (window_order.h's
        StretchesAt without this loader's own): the resumed epoch's, else none."""
        if self._resumed is not None and self._resumed[0] == epoch:
            return self._resumed[1]
        return ()

    def _samples_of(self, epoch: int) -> int:
        """Samples of `epoch` for this rank: the resumed epoch's own count, else an ordinary
        epoch's (the position at which the epoch is over)."""
        if self._resumed is not None and self._resumed[0] == epoch:
            return self._resumed_samples
        return self._ordinary_samples

    def _reopen(self, resumed: Optional[Tuple[int, Tuple[Tuple[int, int], ...]]],
                samples: int) -> None:
        """Replaces the native loader by one of the same options whose order continues
        `resumed` (None: every epoch ordinary), of `samples` samples. The old one is closed
        first (its memory is freed before the new one takes the same again); under the lock."""
        old, self._native = self._native, None
        self._native_at = None
        if old is not None:
            old.close()
        options, gpu = self._native_args
        epoch, stretches = resumed if resumed is not None else (0, ())
        self._native = _ringfeed._Loader(self._dataset, options, gpu, epoch, list(stretches))
        self._resumed = resumed
        self._resumed_samples = samples if resumed is not None else 0

    # --- Figures and life -----------------------------------------------------------------------

    def stats(self) -> Dict[str, float]:
        """What the loader read and how fast (since it opened, or since load_state_dict last
        reopened it, for a state of another world size): bytes_read (from disk), seconds
        (since the first batch was asked for), disk_gbps (bytes_read / seconds, 1e9 bytes/s),
        bytes_delivered and delivered_gbps (the chunks' data: bytes_read decompressed, for a
        compressed dataset), decode_threads and decode_busy_share (the threads that verify and
        decompress chunks, and the share of their time they worked), wait_seconds and wait_share
        (the time and the share of `seconds` spent waiting for data), reader_held_seconds (the
        disk reader idle for want of a free ring slot), batches (handed out); for decoded images,
        image_threads and image_busy_share (the threads that decode and crop JPEG records, and the
        share of their time they worked), images_decoded (records decoded, up to the batches in
        flight ahead of those handed out), records_skipped (bad records, skip_bad_records) and
        image_wait_seconds (the loader's own wait for its decoder, on its worker thread: ahead of
        the consumer, whose wait is wait_seconds)."""
        s = self._packed.stats() if self._packed is not None else self._open_native().stats()
        seconds = s["seconds"]
        s["disk_gbps"] = s["bytes_read"] / seconds / 1e9 if seconds > 0 else 0.0
        s["delivered_gbps"] = s["bytes_delivered"] / seconds / 1e9 if seconds > 0 else 0.0
        threads = s["decode_threads"]
        s["decode_busy_share"] = (s["decode_busy_seconds"] / seconds / threads
                                  if seconds > 0 and threads > 0 else 0.0)
        s["wait_share"] = s["wait_seconds"] / seconds if seconds > 0 else 0.0
        if "image_threads" in s:
            image_threads = s["image_threads"]
            s["image_busy_share"] = (s["image_busy_seconds"] / seconds / image_threads
                                     if seconds > 0 and image_threads > 0 else 0.0)
        return s

    def close(self) -> None:
        """Stops the loader's threads and reads and frees its memory, but for the batches still
        held, which stay valid. Also what deleting the loader does. Idempotent."""
        if self._packed is not None:
            self._packed.close()
        with self._lock:
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



def _state_place(state: Dict[str, Any], batch_size: int,
                 has_stretches: bool) -> Tuple[int, int, int, Tuple[Tuple[int, int], ...]]:
    """A checked state's epoch, position, world_size and stretches (none without has_stretches),
    its rank within that world and its position a batch boundary: UsageError otherwise."""
    epoch = _int_option("the state's epoch", state["epoch"], 0, _ringfeed.max_epoch)
    position = _int_option("the state's position", state["position"], 0, 2**64 - 1)
    saved_world = _int_option("the state's world_size", state["world_size"], 1, 2**32 - 1)
    _int_option("the state's rank", state["rank"], 0, saved_world - 1)
    stretches = _stretches(state["stretches"]) if has_stretches else ()
    if position % batch_size != 0:
        raise UsageError(f"load_state_dict: position {position} is no batch boundary (a "
                         f"multiple of batch_size {batch_size})")
    return epoch, position, saved_world, stretches


def _datasets_differ(saved: list, own: list) -> list:
    """What differs between a mixture state's datasets and a loader's (each id and samples; the
    path is named, not compared: a dataset may move)."""
    if len(saved) != len(own):
        return [f"datasets: the state has {len(saved)}, this loader {len(own)}"]
    out = []
    for i, (a, b) in enumerate(zip(saved, own)):
        if type(a) is not dict or (a.get("id"), a.get("samples")) != (b["id"], b["samples"]):
            shown = (f"id {a.get('id')} ({a.get('path')}, {a.get('samples')} samples)"
                     if type(a) is dict else repr(a))
            out.append(f"datasets[{i}]: the state has {shown}, this loader id {b['id']} "
                       f"({b['path']}, {b['samples']} samples)")
    return out


def _mixture_stream(state: Dict[str, Any]) -> Dict[str, Any]:
    """A mixture state's stream as the library takes it (MixtureState); UsageError naming what
    is malformed. Whether the datasets can have been there is the library's check."""
    steps = _int_option("the state's steps", state["steps"], 0, 2**64 - 1)
    drawn = [_int_option(f"the state's drawn[{i}]", d, 0, 2**64 - 1)
             for i, d in enumerate(state["drawn"])]
    sources = []
    for i, g in enumerate(state["sources"]):
        if type(g) is not dict or set(g) != {"epoch", "position", "stretches"}:
            raise UsageError(f"load_state_dict: malformed state: sources[{i}] must be a dict of "
                             f"epoch, position and stretches, got {g!r}")
        if type(g["stretches"]) is not list:
            raise UsageError(f"load_state_dict: malformed state: sources[{i}]['stretches'] must "
                             f"be a list, got {g['stretches']!r}")
        sources.append({
            "epoch": _int_option(f"the state's sources[{i}]['epoch']", g["epoch"], 0,
                                 _ringfeed.max_epoch),
            "position": _int_option(f"the state's sources[{i}]['position']", g["position"], 0,
                                    2**64 - 1),
            "stretches": list(_stretches(g["stretches"]))})
    return {"steps": steps, "drawn": drawn, "sources": sources}


class _EpochIterator:
    """An iteration of one epoch of a Loader: each next() takes the loader's next batch of that
    epoch under the loader's lock, so one iterator may be shared by threads (each batch handed
    out once) and several iterators of one loader share its position."""

    def __init__(self, loader: Loader, epoch: int, generation: int) -> None:
        self._loader = loader
        self._epoch = epoch
        self._generation = generation

    def __iter__(self) -> "_EpochIterator":
        return self

    def __next__(self) -> Tuple[Tensor, Tensor]:
        out = self._loader._next_batch(self._epoch, self._generation)
        if out is None:
            raise StopIteration
        return out


Loader.__init__.__signature__ = signature(  # type: ignore[attr-defined]
    _OPTIONS, ["data"], ["batch_size"])
Loader.__doc__ = (Loader.__doc__ or "").rstrip(" ") + options_help(_OPTIONS) + "\n"
