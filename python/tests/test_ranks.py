"""Ranks: world_size loaders together cover every sample once per epoch, but for WindowOrder's
padding (fewer than world_size samples repeated, each on two ranks, where the world size does
not divide the dataset); rank and world size default to torch.distributed's, then RANK and
WORLD_SIZE."""

import collections
import sys
import types

import pytest

import ringfeed
from conftest import epoch_indices, open_loader


@pytest.mark.parametrize("samples, world", [(1000, 2), (1000, 3), (999, 2), (1000, 7)])
def test_ranks_cover_the_dataset_once_modulo_padding(datasets, samples, world):
    path = datasets.positional(n=samples)
    loaders = [open_loader(path, 16, rank=r, world_size=world) for r in range(world)]
    per_rank = loaders[0].epoch_samples
    padding = per_rank * world - samples
    assert 0 <= padding < world
    for loader in loaders:
        assert loader.epoch_samples == per_rank
        assert len(loader) == len(loaders[0])
    for _ in range(2):  # two epochs
        counts = collections.Counter()
        for loader in loaders:
            seen = epoch_indices(loader)
            assert len(seen) == per_rank
            assert len(set(seen)) == len(seen), "a rank repeats a sample within its epoch"
            counts.update(seen)
        assert set(counts) == set(range(samples))
        assert sorted(counts.values()) == [1] * (samples - padding) + [2] * padding


def test_ranks_see_other_orders_than_one_process(datasets):
    path = datasets.positional()
    whole = set(epoch_indices(open_loader(path)))
    half = epoch_indices(open_loader(path, rank=1, world_size=2))
    assert set(half) < whole


def test_rank_and_world_size_come_from_the_environment(datasets, monkeypatch):
    monkeypatch.setenv("RANK", "2")
    monkeypatch.setenv("WORLD_SIZE", "3")
    loader = open_loader(datasets.positional())
    assert (loader.rank, loader.world_size) == (2, 3)
    explicit = open_loader(datasets.positional(), rank=0, world_size=1)
    assert (explicit.rank, explicit.world_size) == (0, 1)
    monkeypatch.setenv("WORLD_SIZE", "two")
    with pytest.raises(ringfeed.UsageError, match="WORLD_SIZE environment variable"):
        open_loader(datasets.positional())


def test_without_anything_one_process_is_the_world(datasets, monkeypatch):
    monkeypatch.delenv("RANK", raising=False)
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    loader = open_loader(datasets.positional())
    assert (loader.rank, loader.world_size) == (0, 1)


def test_torch_distributed_wins_over_the_environment(datasets, monkeypatch):
    fake = types.SimpleNamespace(is_available=lambda: True, is_initialized=lambda: True,
                                 get_rank=lambda: 1, get_world_size=lambda: 4)
    monkeypatch.setitem(sys.modules, "torch.distributed", fake)
    monkeypatch.setenv("RANK", "0")
    monkeypatch.setenv("WORLD_SIZE", "2")
    loader = open_loader(datasets.positional())
    assert (loader.rank, loader.world_size) == (1, 4)


def test_real_torch_distributed_group(datasets, monkeypatch, tmp_path):
    torch = pytest.importorskip("torch")
    dist = torch.distributed
    if not dist.is_available():
        pytest.skip("this torch has no torch.distributed")
    monkeypatch.setenv("RANK", "3")
    monkeypatch.setenv("WORLD_SIZE", "5")
    dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'store'}", rank=0,
                            world_size=1)
    try:
        loader = open_loader(datasets.positional())
        assert (loader.rank, loader.world_size) == (0, 1)
    finally:
        dist.destroy_process_group()
