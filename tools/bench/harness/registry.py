"""The parts the driver can run: each one small registered function behind one interface.

A part is `fn(ctx, s)`: ctx is the run's Context (harness/context.py), s its settings. What a part
needs (GPUs, PyTorch, a second build) is declared here, once, so that the driver decides up front
what runs and what is skipped, and says why; nothing inside a part asks which machine it is on
except for the finer choices it owns (two GPUs for a DDP pair, say).

Settings are the part's knobs with their full-size defaults; `tiny` holds the values --cpu uses
(tiny data, a few steps), so the same code runs its plumbing on a machine without a GPU.
`--set PART.NAME=VALUE` overrides one; the value is parsed as the default's type.
"""

import dataclasses
from typing import Callable


@dataclasses.dataclass
class Part:
    name: str
    run: Callable
    budget: int  # seconds the part may take at full size; the driver gives it no more
    about: str  # one line: what it runs
    gpus: int = 0  # GPUs it needs at all (0: its plumbing runs on the CPU)
    torch: bool = False  # needs PyTorch
    before: bool = False  # needs a second build (--before)
    settings: dict = dataclasses.field(default_factory=dict)
    tiny: dict = dataclasses.field(default_factory=dict)

    def needs(self):
        words = [f"{self.gpus} GPU" + ("s" if self.gpus > 1 else "")] if self.gpus else []
        words += ["torch"] * self.torch + ["--before"] * self.before
        return ", ".join(words) or "-"


PARTS = {}


def part(name, *, budget, about, gpus=0, torch=False, before=False, settings=None, tiny=None):
    """Registers fn as part NAME (the order of registration is the order of --parts all)."""

    def register(fn):
        assert name not in PARTS, name
        unknown = set(tiny or {}) - set(settings or {})
        assert not unknown, f"{name}: tiny values for unknown settings {unknown}"
        PARTS[name] = Part(name, fn, budget, about, gpus, torch, before, dict(settings or {}),
                           dict(tiny or {}))
        return fn

    return register


class Settings:
    """A part's settings as attributes: its defaults, the --cpu values, then the --set ones."""

    def __init__(self, p, tiny, overrides):
        self._values = dict(p.settings)
        if tiny:
            self._values.update(p.tiny)
        for key, text in overrides.items():
            if key not in self._values:
                raise SystemExit(f"run.py: --set {p.name}.{key}: no such setting; "
                                 f"{p.name} has {', '.join(sorted(self._values)) or 'none'}")
            self._values[key] = parse_like(p.settings[key], text)

    def __getattr__(self, key):
        try:
            return self._values[key]
        except KeyError:
            raise AttributeError(key) from None

    def as_dict(self):
        return dict(self._values)


def parse_like(default, text):
    if isinstance(default, bool):
        if text.lower() not in ("1", "0", "true", "false", "on", "off", "yes", "no"):
            raise SystemExit(f"run.py: not a boolean: {text!r}")
        return text.lower() in ("1", "true", "on", "yes")
    if isinstance(default, int):
        return int(text)
    if isinstance(default, float):
        return float(text)
    return text


def names(text):
    """A setting that lists names (comma- or blank-separated) as a list; '' is empty. Flags are
    split with shlex instead, since theirs may hold commas (--augment crop:4,flip)."""
    return [w for w in text.replace(",", " ").split() if w]
