"""The order and the epoch protocol: every sample once per epoch; the order a function of the
seed and the epoch; iteration continues where it stopped and moves on by whole epochs."""

import pytest

from conftest import epoch_indices, open_loader


@pytest.mark.parametrize("batch_size", [1, 32, 100, 999, 1000, 4096])
def test_every_sample_exactly_once_per_epoch(datasets, batch_size):
    loader = open_loader(datasets.positional(), batch_size)
    n = datasets.SAMPLES
    assert len(loader) == -(-n // batch_size)
    for epoch in range(2):
        assert loader.epoch == epoch and loader.position == 0
        seen = epoch_indices(loader)
        assert sorted(seen) == list(range(n))
    assert loader.epoch == 2


def test_drop_last_skips_the_partial_last_batch(datasets):
    loader = open_loader(datasets.positional(), 300, drop_last=True)
    assert len(loader) == 3
    sizes = [s.shape[0] for s, _ in loader]
    assert sizes == [300, 300, 300]
    assert loader.epoch == 1
    # The next epoch is another full one.
    assert [s.shape[0] for s, _ in loader] == [300, 300, 300]


def test_sharded_dataset_is_read_whole(datasets):
    loader = open_loader(datasets.positional(shards=3), 64)
    assert len(loader.dataset.paths) == 3
    assert sorted(epoch_indices(loader)) == list(range(datasets.SAMPLES))


def test_same_seed_same_order_other_seed_another(datasets):
    path = datasets.positional()
    a = epoch_indices(open_loader(path, seed=7))
    b = epoch_indices(open_loader(path, seed=7, ring_slots=2, queue_depth=1, prefetch=1))
    c = epoch_indices(open_loader(path, seed=8))
    assert a == b
    assert a != c and sorted(a) == sorted(c)


def test_epochs_differ_and_set_epoch_selects_one(datasets):
    path = datasets.positional()
    loader = open_loader(path)
    e0, e1 = epoch_indices(loader), epoch_indices(loader)
    assert e0 != e1
    other = open_loader(path)
    other.set_epoch(1)
    assert other.epoch == 1
    assert epoch_indices(other) == e1
    other.set_epoch(0)
    assert epoch_indices(other) == e0


def test_shuffle_none_is_stored_order(datasets):
    loader = open_loader(datasets.positional(), shuffle="none")
    assert epoch_indices(loader) == list(range(datasets.SAMPLES))
    assert epoch_indices(loader) == list(range(datasets.SAMPLES))


def test_break_and_iterate_again_continues_where_it_stopped(datasets):
    path = datasets.positional()
    whole = epoch_indices(open_loader(path))
    loader = open_loader(path)
    got = []
    for i, (samples, _) in enumerate(loader):
        got.extend(samples.indices)
        if i == 4:
            break
    assert loader.epoch == 0 and loader.position == 5 * 32
    got.extend(epoch_indices(loader))
    assert got == whole
    assert loader.epoch == 1 and loader.position == 0


def test_epoch_moves_on_when_its_last_batch_is_handed_out(datasets):
    loader = open_loader(datasets.positional(), 400)
    positions = []
    for samples, _ in loader:
        positions.append((samples.position, loader.epoch, loader.position))
    assert positions == [(0, 0, 400), (400, 0, 800), (800, 1, 0)]


def test_a_stale_iterator_refuses_to_go_on(datasets):
    loader = open_loader(datasets.positional())
    first = iter(loader)
    next(first)
    loader.set_epoch(3)
    with pytest.raises(RuntimeError, match="stale"):
        next(first)
    first = iter(loader)
    next(first)
    loader.load_state_dict(loader.state_dict())
    with pytest.raises(RuntimeError, match="stale"):
        next(first)


def test_iterators_of_one_loader_share_its_position(datasets):
    loader = open_loader(datasets.positional(), 100, shuffle="none")
    first, second = iter(loader), iter(loader)
    assert next(first)[0].position == 0
    assert next(second)[0].position == 100
    assert next(first)[0].position == 200
