"""Fixtures of the `mpirun ... ringfeed train` tests: the positional dataset, made once, and the
uninterrupted training runs several tests compare against, each run once per session."""

from pathlib import Path
from typing import Dict, Tuple

import pytest

import ranks_harness as h


@pytest.fixture(scope="session")
def positional(tmp_path_factory) -> Path:
    return h.make_positional_dataset(tmp_path_factory.mktemp("data"))


class Uninterrupted:
    """2-epoch runs at a world size and seed with --dump-order and a final --checkpoint, each run
    once and kept: (run, its checkpoint's path)."""

    EPOCHS = 2

    def __init__(self, root: Path, data: Path) -> None:
        self.root, self.data = root, data
        self._runs: Dict[Tuple[int, int, str], Tuple[h.Run, Path]] = {}

    def get(self, ranks: int, seed: int = 7, name: str = "a") -> Tuple[h.Run, Path]:
        """`name` tells apart runs of the same settings (a repeat to compare with)."""
        key = (ranks, seed, name)
        if key not in self._runs:
            d = self.root / f"n{ranks}-s{seed}-{name}"
            d.mkdir(exist_ok=True)  # a run skipped before it started may come again
            ckpt = d / "final.ckpt"
            run = h.train(ranks, self.data, "--epochs", str(self.EPOCHS), "--batch-size",
                          str(h.BATCH), "--seed", str(seed), "--checkpoint", str(ckpt),
                          dump=d / "order").check_ok()
            self._runs[key] = (run, ckpt)
        return self._runs[key]


@pytest.fixture(scope="session")
def uninterrupted(tmp_path_factory, positional) -> Uninterrupted:
    return Uninterrupted(tmp_path_factory.mktemp("uninterrupted"), positional)
