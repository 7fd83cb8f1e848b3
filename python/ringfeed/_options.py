"""The signature and the "Options" part of the help of a class whose keyword arguments are an
option table's (the library's declarations: pipeline/plan/loader_options.h for Loader,
io/writer_options.h for DatasetWriter), made from the table's own list: name, type, default,
rule, words, what None means, help. The library checks and sets every keyword argument through
the same declarations, so the help, the signature and what is taken cannot drift apart. And
the defaults only Python knows: the process's rank and world size, the device's words."""

from __future__ import annotations

import inspect
import os
import re
import sys
from typing import Any, Dict, Sequence, Tuple

from ._ringfeed import UsageError


def options_help(options: Dict[str, Dict[str, Any]]) -> str:
    """Each option, its help, its rule for a number or size, and its default, wrapped at 96."""
    lines = []
    for o in options.values():
        # The declarations' help names other options as the command line does: --shuffle-window.
        text = re.sub(r"--([a-z][a-z-]*)", lambda m: m.group(1).replace("-", "_"), o["help"])
        if o["type"] in ("int", "float", "Sequence[float]", "Sequence[int]", "Union[int, str]"):
            text += f" ({o['rule']})"
        text += f". Default: {o['unset'] if o['unset'] else repr(o['default'])}."
        words, line = text.split(), "    " + o["name"] + ":"
        for w in words:
            if len(line) + 1 + len(w) > 96:
                lines.append(line)
                line = "       "
            line += " " + w
        lines.append(line)
    return "\n".join(lines)


def signature(options: Dict[str, Dict[str, Any]], first: Sequence[str],
              positional: Sequence[str]) -> inspect.Signature:
    """self, the arguments `first` (no default), the options named in `positional` (by position
    or name, in that order), then every other option by name alone; each option with its
    declared default, or None where the default depends on the data or the process (what None
    means is in the help)."""
    kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
    params = [inspect.Parameter(n, kind) for n in ("self", *first)]
    by_name = {}
    for o in options.values():
        default = None if o["unset"] else o["default"]
        by_name[o["name"]] = inspect.Parameter(
            o["name"], kind if o["name"] in positional else inspect.Parameter.KEYWORD_ONLY,
            default=default)
    params += [by_name[n] for n in positional]
    params += [p for n, p in by_name.items() if n not in positional]
    return inspect.Signature(params)


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
