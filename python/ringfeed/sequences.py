"""Packed token sequences: ``ringfeed.Loader(data, batch_size, sequence_length=L, ...)`` hands out
:class:`Sequences`. The packing, the split over ranks, the mixture rule and the state are the
library's (pipeline/sequences/sequence_loader.h, behind pipeline/loader.h as the maker of its
kind, pipeline/makers/sequence_maker.cc).
"""

from __future__ import annotations

from typing import NamedTuple

from ._ringfeed import Tensor

__all__ = ["Sequences"]


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
