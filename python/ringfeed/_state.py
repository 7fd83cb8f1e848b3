"""The fields of state dicts as load_state_dict reads them, shared by the loader (loader.py) and
packed sequences (sequences.py): each field checked for its type and range, and the fields a
state records against the loader's own (_check_state), a UsageError naming each and what it must
be otherwise. Whether the values can be of the loader's data is the
library's check (pipeline/sources/mixed_source.h's RestoreCheck, pipeline/sequences/sequence_loader.h's Restore).
"""

from __future__ import annotations

from typing import Any, Dict, List, Tuple

from . import _ringfeed
from ._ringfeed import UsageError

_U64 = 2**64 - 1
_U32 = 2**32 - 1


def _int_option(name: str, value: Any, minimum: int, maximum: int) -> int:
    """An int (NumPy's too, through __index__; not a bool) from minimum to maximum."""
    if not isinstance(value, bool) and hasattr(value, "__index__"):
        value = value.__index__()
    if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= maximum:
        raise UsageError(f"{name} must be a whole number from {minimum} to {maximum}, "
                         f"got {value!r}")
    return value


def _check_state(state: Dict[str, Any], own_state, fields: Tuple[str, ...],
                 keys: Tuple[str, ...], other: str, more_differ=None) -> None:
    """load_state_dict's checks of `state` against this loader's own state (own_state(), asked
    for once every field is present): every one of `fields` present and of the own state's type,
    and `keys` (and what more_differ() returns) equal; a UsageError naming each that is not
    (`other`: what a state that differs is of)."""
    missing = [k for k in fields if k not in state]
    if missing:
        raise UsageError(f"load_state_dict: the state lacks {missing}")
    own = own_state()
    wrong = [f"{k} is {type(state[k]).__name__} {state[k]!r}, not {type(own[k]).__name__}"
             for k in fields if type(state[k]) is not type(own[k])]
    if wrong:
        raise UsageError("load_state_dict: malformed state: " + "; ".join(wrong))
    differ = [f"{k}: the state has {state[k]!r}, this loader {own[k]!r}"
              for k in keys if state[k] != own[k]]
    if more_differ is not None:
        differ += more_differ()
    if differ:
        raise UsageError(f"load_state_dict: the state is {other}: " + "; ".join(differ))


def _list_field(name: str, value: Any) -> list:
    if type(value) is not list:
        raise UsageError(f"load_state_dict: malformed state: {name} must be a list, got "
                         f"{value!r}")
    return value


def _sequence_stream(state: Dict[str, Any]) -> Dict[str, Any]:
    """A packed sequences state's place as the library takes it (SequenceState): rows, drawn and
    each dataset's epoch, position, world size and list, each field checked; its rank within
    its world_size, and each dataset's list split over that world (0: the same). What it holds
    is the library's to check."""
    world = _int_option("the state's world_size", state["world_size"], 1, _U32)
    _int_option("the state's rank", state["rank"], 0, world - 1)
    rows = _int_option("the state's rows", state["rows"], 0, _U64)
    drawn = [_int_option(f"the state's drawn[{i}]", d, 0, _U64)
             for i, d in enumerate(_list_field("drawn", state["drawn"]))]
    sources = []
    for i, g in enumerate(_list_field("sources", state["sources"])):
        keys = {"epoch", "position", "world_size", "list"}
        if type(g) is not dict or set(g) != keys:
            raise UsageError(f"load_state_dict: malformed state: sources[{i}] must be a dict of "
                             f"epoch, position, world_size and list, got {g!r}")
        name = f"the state's sources[{i}]"
        source_world = _int_option(f"{name}['world_size']", g["world_size"], 0, _U32)
        if source_world not in (0, world):
            raise UsageError(f"load_state_dict: {name}['world_size'] must be the state's "
                             f"world_size, {world} (or 0 for it), got {source_world}")
        ranges: List[Tuple[int, int]] = []
        for k, r in enumerate(_list_field(f"sources[{i}]['list']", g["list"])):
            if type(r) not in (list, tuple) or len(r) != 2:
                raise UsageError(f"load_state_dict: malformed state: sources[{i}]['list'][{k}] "
                                 f"must be a [begin, end] pair of sequences, got {r!r}")
            ranges.append((_int_option(f"{name}['list'][{k}][0]", r[0], 0, _U64),
                           _int_option(f"{name}['list'][{k}][1]", r[1], 0, _U64)))
        sources.append({
            "epoch": _int_option(f"{name}['epoch']", g["epoch"], 0, _ringfeed.max_epoch),
            "position": _int_option(f"{name}['position']", g["position"], 0, _U64),
            "world_size": world, "list": ranges})
    return {"rows": rows, "drawn": drawn, "sources": sources}
