"""ringfeed.Loader: batches of a ringfeed dataset for a training loop.

A face over the C++ library (pipeline/epoch_loader.h over pipeline/loader.h): the reading, the
order, the decode, the buffers, the epoch protocol and the checkpoints with every check of a
saved state (pipeline/state/loader_state.h) are the library's. What this module adds is what only
Python can know: option defaults that depend on the process (torch.distributed's rank, the RANK
and WORLD_SIZE environment variables), the dataset given as a list or a pattern of shard files
(_datasets.py), and the iterable with its warnings.
"""

from __future__ import annotations

import os
import threading
import warnings
from typing import Any, Dict, Iterator, Optional, Sequence, Tuple, Union

from . import _ringfeed
from ._datasets import DatasetInfo, _info, _open_dataset, dataset_info, open_datasets
from ._options import _device_option, _process_rank, options_help, signature
from ._ringfeed import Tensor, UsageError
from .sequences import Sequences
from ._torch import TorchImport, import_torch

__all__ = ["BadRecordsSkipped", "DatasetInfo", "Loader", "dataset_info"]

PathLike = Union[str, "os.PathLike[str]"]


class BadRecordsSkipped(UserWarning):
    """Warned at the end of an epoch in which a loader with skip_bad_records=True skipped image
    records that did not decode: how many, and the first ten named (sample index, file, chunk,
    record, why)."""


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
    does not), ``numpy.from_dlpack`` or ``.numpy()`` (host memory); ``tensors="torch"`` hands
    out torch tensors of the same memory instead. A batch stays valid,
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
        # One dataset, or a mixture (weights): several datasets, each drawn by its weight
        # (pipeline/sources/mixed_source.h, pipeline/sequences/sequence_loader.h).
        self._datasets = open_datasets(data, options)
        if "dtype" in options:
            dtype = options["dtype"]
            canonical = _ringfeed.dtype_name(dtype) if isinstance(dtype, str) else None
            if canonical is None:
                raise UsageError(f"dtype: unknown dtype {dtype!r} (float32, bfloat16, float16, "
                                 f"or the dataset's own, {self._datasets[0].dtype})")
            options["dtype"] = canonical
        if ("mean" in options) != ("std" in options):
            raise UsageError("mean and std: give both or neither")
        torch = import_torch() if options.get("tensors") == "torch" else None
        self._native = _ringfeed._Loader(self._datasets, options, gpu)
        # What the batches depend on, as the library took it (its defaults where not given),
        # and the kind of batch it decided (pipeline/plan/loader_plan.h).
        self._options = self._native.options()
        self._packed = self._native.kind() == "sequences"
        self._mixture = "weights" in options
        gpu_device = self._native.gpu_device()
        self._device = "cpu" if gpu_device < 0 else f"cuda:{gpu_device}"
        self._torch = None if torch is None else TorchImport(torch, gpu_device)

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
        return _info(self._datasets[0])

    @property
    def datasets(self) -> Tuple[DatasetInfo, ...]:
        """A mixture's datasets' headers, in the order given (one dataset: itself)."""
        return tuple(_info(d) for d in self._datasets)

    @property
    def device(self) -> str:
        """Where batches are: 'cpu' or 'cuda:N'."""
        return self._device

    @property
    def batch_size(self) -> int:
        """Samples per batch (the epoch's last batch may hold fewer)."""
        return self._options["batch_size"]

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
        if self._packed:
            raise TypeError("packed sequences count rows, not samples: len(loader) is their "
                            "batches")
        return self._open_native().epoch_samples()

    @property
    def epoch(self) -> int:
        """The epoch the next batch comes from (packed sequences of a mixture: the first
        dataset's)."""
        return self._open_native().epoch()

    @property
    def position(self) -> int:
        """Samples of the current epoch handed out so far (where the next batch starts); packed
        sequences: rows."""
        return self._open_native().position()

    def __len__(self) -> int:
        """Batches in the current epoch for this rank (the last one included unless drop_last
        drops it): the same for every epoch but one resumed at another world size. Packed
        sequences from a mixture (weights) have no epoch: TypeError."""
        if self._packed and self._mixture:
            raise TypeError("a mixture of datasets has no epoch: each dataset keeps its own")
        return self._open_native().batches()

    def __repr__(self) -> str:
        if self._native is None:
            return "<ringfeed.Loader (closed)>"
        return (f"<ringfeed.Loader {self._datasets[0].shard_paths[0]!r} "
                f"batch_size={self.batch_size} epoch={self.epoch} position={self.position}: "
                f"{self._native.describe()}>")

    # --- Batches ------------------------------------------------------------------------------

    def __iter__(self) -> Iterator[Tuple[Tensor, Tensor]]:
        """The rest of the current epoch, batch by batch: (samples, labels). Packed sequences:
        :class:`ringfeed.Sequences`, to the epoch's end (a mixture: without end)."""
        return _EpochIterator(self._open_native(), self._packed, self._torch)

    def set_epoch(self, epoch: int) -> None:
        """Makes the next iteration epoch `epoch`, from its start (0 to 2**32 - 1: what a
        ringfeed checkpoint holds; the last epoch a loader hands out is 2**32 - 2, whose end
        leaves it at 2**32 - 1, where an iteration is refused). A loader that load_state_dict
        resumed at another world size keeps that epoch's order: set back to it, it gives the same
        share of the remainder. A mixture's datasets are not rewound: its stream goes on, the
        next epoch named `epoch` (packed sequences of a mixture, which have no epoch of their
        own, go on as they are: each dataset keeps its epoch). An iterator made before it
        refuses to go on."""
        self._open_native().set_epoch(epoch)

    # --- Checkpoints --------------------------------------------------------------------------

    def state_dict(self) -> Dict[str, Any]:
        """Where the loader is, as a plain dict of str, int, bool and list (JSON-able): the
        epoch, the position (samples of the epoch handed out so far), the stretches (the epoch's
        parts trained by earlier loaders at other world sizes, oldest first, each a dict of
        world_size and position; [] for an ordinary epoch) and what identifies its batches
        (seed, batch size, shuffle mode and window, drop_last, rank, world size, the
        augmentation and the output dtype, the dataset's id, as a hex string, and sample count)
        and what its samples look like (layout, normalize, mean, std; and the decode of
        image records: image_size and image_crop, recorded whatever the dataset and checked
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
        return self._open_native().state_dict()

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
        self._open_native().load_state_dict(state)

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
        s = self._open_native().stats()
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
        with self._lock:
            native, self._native = self._native, None
        if native is not None:
            native.close()

    def __enter__(self) -> "Loader":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _open_native(self) -> "_ringfeed._Loader":
        native = self._native
        if native is None:
            raise UsageError("the loader is closed")
        return native


class _EpochIterator:
    """An iteration of one epoch of a Loader (EpochLoader::Begin): each next() takes the loader's
    next batch of that epoch, so one iterator may be shared by threads (each batch handed out
    once) and several iterators of one loader share its position."""

    def __init__(self, native: "_ringfeed._Loader", packed: bool,
                 torch: Optional[TorchImport]) -> None:
        self._native = native
        self._packed = packed  # batches as Sequences
        self._iteration = native.begin()
        self._torch = torch

    def __iter__(self) -> "_EpochIterator":
        return self

    def __next__(self) -> Tuple[Tensor, Tensor]:
        if self._torch is None:
            out, skipped = self._native.next(*self._iteration)
        else:  # tensors="torch": the binding imports each array (one stream wait a batch)
            out, skipped = self._native.next(*self._iteration, self._torch.import_capsule,
                                             self._torch.stream())
        if skipped:  # decoded images under skip_bad_records: the epoch's report
            warnings.warn(skipped, BadRecordsSkipped, stacklevel=2)
        if out is None:
            raise StopIteration
        return Sequences(*out) if self._packed else out


Loader.__init__.__signature__ = signature(  # type: ignore[attr-defined]
    _OPTIONS, ["data"], ["batch_size"])
Loader.__doc__ = (Loader.__doc__ or "").rstrip(" ") + options_help(_OPTIONS) + "\n"
