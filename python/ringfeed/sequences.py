"""Packed token sequences: ``ringfeed.Loader(data, batch_size, sequence_length=L, ...)``.

A face over the C++ library's SequenceLoader (pipeline/sequences/sequence_loader.h, whose header
states the packing, the split over ranks, the mixture rule and the state) and its state
(pipeline/state/packed_state.h: the state dict, its checks, set_epoch). ``Loader`` hands its
calls to a :class:`PackedLoader` when ``sequence_length`` is given.
"""

from __future__ import annotations

import threading
from typing import Any, Dict, Iterator, List, NamedTuple, Optional, Tuple

from . import _ringfeed
from ._ringfeed import Tensor, UsageError

__all__ = ["PackedLoader", "Sequences"]


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

    def __init__(self, datasets: List["_ringfeed._Dataset"], options: Dict[str, Any],
                 gpu: int) -> None:
        self._lock = threading.RLock()
        self._mixture = "weights" in options
        self._native: Optional[_ringfeed._SequenceLoader] = None
        self._native = _ringfeed._SequenceLoader(datasets, options, gpu)
        self.options = self._native.options()
        gpu_device = self._native.gpu_device()
        self.device = "cpu" if gpu_device < 0 else f"cuda:{gpu_device}"
        # Bumped by set_epoch and load_state_dict: an iterator made before either is stale.
        self._generation = 0

    def where(self) -> Tuple[int, int]:
        """The first dataset's (epoch, position in rows)."""
        return self._open().where()

    def epoch_sequences(self, source: int = 0) -> int:
        return self._open().epoch_sequences(source)

    def batches_per_epoch(self) -> int:
        if self._mixture:
            raise TypeError("a mixture of datasets has no epoch: each dataset keeps its own")
        return self._open().batches_per_epoch()

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
        with self._lock:
            self._open().set_epoch(epoch)
            self._generation += 1

    def state_dict(self) -> Dict[str, Any]:
        return self._open().state_dict()

    def load_state_dict(self, state: Dict[str, Any]) -> None:
        with self._lock:
            self._open().load_state_dict(state)
            self._generation += 1

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
