"""The signature and the "Options" part of the help of a class whose keyword arguments are an
option table's (the library's declarations: pipeline/plan/loader_options.h for Loader,
io/writer_options.h for DatasetWriter), made from the table's own list: name, type, default,
rule, words, what None means, help. The library checks and sets every keyword argument through
the same declarations, so the help, the signature and what is taken cannot drift apart."""

from __future__ import annotations

import inspect
import re
from typing import Any, Dict, Sequence


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
