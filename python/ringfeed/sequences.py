"""Packed token sequences: ``ringfeed.Loader(data, batch_size, sequence_length=L, ...)``.

A thin face over the C++ library's SequenceLoader (pipeline/sequences/sequence_loader.h, whose header
states the packing, the split over ranks, the mixture rule and the state). ``Loader`` hands out a
:class:`PackedLoader` when ``sequence_length`` is given; this module adds what only Python knows:
the data given as one dataset or, with ``weights``, a list of datasets, and the state dict.
"""

from __future__ import annotations

import threading
from typing import Any, Dict, Iterator, List, NamedTuple, Optional, Sequence

from . import _ringfeed
from ._ringfeed import Tensor, UsageError
from ._state import _check_state, _sequence_stream

__all__ = ["PackedLoader", "Sequences"]

# The packed state dict's version (load_state_dict refuses another).
_PACKED_STATE_VERSION = 1
# What the batches depend on: a state of other values is refused, naming each.
_PACKED_KEYS = ("seed", "batch_size", "sequence_length", "eod_token", "pad_token", "shuffle",
                "shuffle_window", "drop_last", "dtype")


class Sequences(NamedTuple):
    """One batch of packed sequences, each a :class:`ringfeed.Tensor` (torch.from_dlpack, no
    copy). tokens: [B, L + 1] int64 (or int32), inputs tokens[:, :-1], targets tokens[:, 1:];
    past a row's length it holds pad_token. lengths: [B] int64, each row's valid tokens (L + 1
    but in an epoch's partial last sequence; 0 in the empty row a rank with one sequence fewer
    gets last). cu_seqlens: [S + 1] int32, the document segments of the inputs flattened (B x L
    positions; a segment starts at each row's start and at each document's first token; a row's
    padding is a segment of its own), for variable-length attention. position_ids: [B, L] int64,
    each input token's place in its segment."""

    tokens: Tensor
    lengths: Tensor
    cu_seqlens: Tensor
    position_ids: Tensor


class PackedLoader:
    """Built by ``ringfeed.Loader(..., sequence_length=L)``: see help(ringfeed.Loader)."""

    # The methods Loader forwards here (loader.py binds them).

    def __init__(self, datasets: List["_ringfeed._Dataset"], options: Dict[str, Any],
                 gpu: int) -> None:
        self._lock = threading.RLock()
        self._datasets = datasets
        self._mixture = "weights" in options
        self._native: Optional[_ringfeed._SequenceLoader] = None
        self._native = _ringfeed._SequenceLoader(datasets, options, gpu)
        self._options = self._native.options()
        gpu_device = self._native.gpu_device()
        self.device = "cpu" if gpu_device < 0 else f"cuda:{gpu_device}"
        self._generation = 0

    # --- What it is ---------------------------------------------------------------------------

    @property
    def options(self) -> Dict[str, Any]:
        return self._options

    def epoch_sequences(self, source: int = 0) -> int:
        return self._open().epoch_sequences(source)

    def where(self) -> Dict[str, Any]:
        """The native state: rows, drawn and each source's epoch, position, world size, list."""
        with self._lock:
            return self._open().state()

    def batches_per_epoch(self) -> int:
        if self._mixture:
            raise TypeError("a mixture of datasets has no epoch: each dataset keeps its own")
        return self._open().batches_per_epoch()

    # --- Batches ------------------------------------------------------------------------------

    def iterate(self) -> Iterator[Sequences]:
        with self._lock:
            generation = self._generation
        while True:
            with self._lock:
                if generation != self._generation:
                    raise RuntimeError("this iterator is stale: set_epoch or load_state_dict "
                                       "was called after it started")
                out = self._open().next()
            if out is None:
                return
            yield Sequences(*out)

    def set_epoch(self, epoch: int) -> None:
        """One dataset: its epoch `epoch` from the start, split over this loader's world (the
        counts of rows handed out go on). A mixture: its stream goes on, each dataset at its own
        epoch (as a sample mixture's datasets do). Either way an iterator made before it is
        stale."""
        with self._lock:
            native = self._open()
            if not self._mixture:
                where = native.state()
                where["sources"] = [{"epoch": epoch, "position": 0, "world_size": 0, "list": []}]
                native.restore(where)
            self._generation += 1

    # --- State --------------------------------------------------------------------------------

    def state_dict(self) -> Dict[str, Any]:
        state: Dict[str, Any] = {"version": _PACKED_STATE_VERSION, "kind": "sequences"}
        for key in _PACKED_KEYS:
            state[key] = self._options[key]
        state["rank"] = self._options["rank"]
        state["world_size"] = self._options["world_size"]
        state["weights"] = list(self._options["weights"]) if self._mixture else []
        state["datasets"] = [{"id": f"{d.id:016x}", "samples": d.samples}
                             for d in self._datasets]
        native = self.where()
        state["rows"] = native["rows"]
        state["drawn"] = list(native["drawn"])
        state["sources"] = [{"epoch": s["epoch"], "position": s["position"],
                             "world_size": s["world_size"],
                             "list": [[b, e] for b, e in s["list"]]}
                            for s in native["sources"]]
        return state

    def load_state_dict(self, state: Dict[str, Any]) -> None:
        if not isinstance(state, dict) or state.get("kind") != "sequences":
            raise UsageError("load_state_dict: not a packed sequences state (from a Loader with "
                             "sequence_length): " + (f"kind {state.get('kind')!r}"
                                                     if isinstance(state, dict) else
                                                     type(state).__name__))
        if type(state.get("version")) is not int or state["version"] != _PACKED_STATE_VERSION:
            raise UsageError(f"load_state_dict: unknown packed state version "
                             f"{state.get('version')!r} (this ringfeed reads "
                             f"{_PACKED_STATE_VERSION})")
        own = self.state_dict()
        keys = _PACKED_KEYS + ("weights", "datasets")
        _check_state(state, lambda: own, tuple(own), keys, "of other batches")
        # At the world size it was saved at (the native loader re-splits at another).
        native = _sequence_stream(state)
        with self._lock:
            self._open().restore(native)
            self._generation += 1

    # --- Life -----------------------------------------------------------------------------------

    def stats(self) -> Dict[str, float]:
        return self._open().stats()

    def describe(self) -> str:
        return self._open().describe()

    def close(self) -> None:
        with self._lock:
            native, self._native = self._native, None
        if native is not None:
            native.close()

    def _open(self) -> "_ringfeed._SequenceLoader":
        if self._native is None:
            raise UsageError("the loader is closed")
        return self._native


def open_datasets(data: Any, weights: Optional[Sequence[float]],
                  open_one: Any) -> List["_ringfeed._Dataset"]:
    """The datasets of a packed loader: `data` itself, or with weights a list of datasets (each
    what Loader's data takes: a path, a pattern or a list of shards)."""
    if weights is None:
        return [open_one(data)]
    if isinstance(data, (str, bytes)) or not isinstance(data, (list, tuple)):
        raise UsageError("weights: data must then be a list of datasets, one a weight")
    return [open_one(d) for d in data]
