"""A sample mixture: ringfeed.Loader([a, b], batch_size, weights=[...]) without sequence_length
(pipeline/sources/mixed_source.h). The datasets' samples encode their index in the mixture's index space
(dataset i's sample j: first_i + j, first_i the samples of the datasets before it), so each
batch's samples are checked against the indices it reports, and each sample's dataset is known.
The shares stay within max(1, n - 1) of the weights at every prefix, by the rule computed apart;
each dataset's samples come once per its own epoch; state_dict continues exactly at the same world
size and, through 2 -> 3 -> 2 ranks, hands every sample of each dataset's interrupted epoch out
once (plus the few repeats a resumed split may pad with); what cannot be mixed, and a state of
another mixture, are refused naming what differs."""

import collections
import json
import math

import numpy as np
import pytest

import ringfeed
from conftest import CLASSES, Datasets, index_of, open_loader, positional_samples

BATCH = 8
SIZES = (400, 300)  # 4 KiB chunks of 66 samples: 7 and 5 chunks


def mixture_data(datasets, sizes=SIZES, shape=Datasets.SHAPE, tag=""):
    """Datasets of `sizes` positional samples, dataset i holding samples first_i .. first_i +
    sizes[i] - 1 of the pattern; their paths and first indices."""
    paths, firsts, first = [], [], 0
    everything = positional_samples(sum(sizes), shape)
    for i, n in enumerate(sizes):
        images = everything[first:first + n]
        labels = (np.arange(first, first + n) % CLASSES).astype(np.uint8)
        paths.append(datasets.make(f"mix{tag}-{'-'.join(map(str, sizes))}-{i}", images, labels,
                                   "--chunk-size", "4KiB"))
        firsts.append(first)
        first += n
    return paths, firsts


def source_of(firsts, index):
    return max(i for i, f in enumerate(firsts) if f <= index)


def take(loader, batches):
    """The next `batches` batches' indices (crossing mixture epochs), each batch checked against
    what its samples encode; and, per batch, the state after it."""
    out, states = [], []
    it = iter(loader)
    while len(states) < batches:
        batch = next(it, None)
        if batch is None:  # the mixture epoch's end: the next one
            it = iter(loader)
            continue
        samples, labels = batch
        idx = index_of(samples.numpy())
        assert list(idx) == samples.indices
        assert np.array_equal(labels.numpy(), idx % CLASSES)
        out.append([int(i) for i in idx])
        states.append(loader.state_dict())
    return out, states


def mixed(paths, weights, **options):
    return open_loader(list(paths), BATCH, weights=weights, **options)


def deficit_rule(weights, seed, steps):
    """pipeline/sources/mixture.h's rule, computed apart: each step's dataset."""
    n, total = len(weights), sum(weights)
    w = [x / total for x in weights]
    drawn, out = [0] * n, []
    for k in range(steps):
        best, best_deficit = 0, -math.inf
        for j in range(n):
            i = (seed + j) % n
            if w[i] <= 0:
                continue
            d = w[i] * (k + 1) - drawn[i]
            if d > best_deficit:
                best, best_deficit = i, d
        drawn[best] += 1
        out.append(best)
    return out


@pytest.mark.parametrize("weights", [[0.7, 0.3], [1e-6, 1.0], [1.0, 0.0], [3, 1]])
def test_shares_stay_within_the_bound_at_every_prefix(datasets, weights):
    paths, firsts = mixture_data(datasets)
    loader = mixed(paths, weights)
    assert loader.epoch_samples == sum(n for n, w in zip(SIZES, weights) if w > 0)
    assert len(loader) == -(-loader.epoch_samples // BATCH)
    batches, _ = take(loader, 60)
    order = [source_of(firsts, i) for b in batches for i in b]
    assert order == deficit_rule(weights, 5, len(order))
    w = np.array(weights, float) / sum(weights)
    drawn = np.zeros(2)
    for k, i in enumerate(order):
        assert weights[i] > 0
        drawn[i] += 1
        assert np.all(np.abs(drawn - w * (k + 1)) < 1), (k, drawn)
    # The same weights and seed draw the same; the state's draws are the count.
    again, states = take(mixed(paths, weights), 60)
    assert again == batches
    assert states[-1]["drawn"] == [int(d) for d in drawn]
    assert states[-1]["steps"] == len(order)


def test_each_dataset_comes_once_per_its_own_epoch(datasets):
    paths, firsts = mixture_data(datasets)
    loader = mixed(paths, [0.55, 0.45])
    batches, _ = take(loader, 250)
    per = collections.defaultdict(list)
    for b in batches:
        for i in b:
            per[source_of(firsts, i)].append(i - firsts[source_of(firsts, i)])
    for s, n in enumerate(SIZES):
        assert len(per[s]) > 2 * n
        for e in range(len(per[s]) // n):
            assert sorted(per[s][e * n:(e + 1) * n]) == list(range(n)), (s, e)
    assert loader.datasets[1].samples == SIZES[1]
    assert loader.dataset == loader.datasets[0]


def test_state_dict_continues_exactly_and_goes_through_json(datasets):
    paths, _ = mixture_data(datasets)
    first = mixed(paths, [0.7, 0.3], rank=1, world_size=2)
    take(first, 5)
    state = json.loads(json.dumps(first.state_dict()))
    assert state["kind"] == "mixture" and state["position"] == 5 * BATCH
    assert len(state["sources"]) == 2 and sum(state["drawn"]) == state["steps"]
    want, _ = take(first, 40)
    for fresh in (mixed(paths, [0.7, 0.3], rank=1, world_size=2),
                  mixed(paths, [0.7, 0.3], rank=1, world_size=2, prefetch=2)):
        take(fresh, 2)  # somewhere else first
        fresh.load_state_dict(state)
        assert fresh.epoch == state["epoch"] and fresh.position == state["position"]
        got, _ = take(fresh, 40)
        assert got == want


def test_two_then_three_then_two_ranks_take_every_sample_of_each_epoch_once(datasets):
    paths, firsts = mixture_data(datasets)
    weights = [0.6, 0.4]
    taken = collections.defaultdict(collections.Counter)  # dataset -> its epoch 0's samples
    state = None
    for size, batches in ((2, 7), (3, 5), (2, None)):
        ranks = [mixed(paths, weights, rank=r, world_size=size) for r in range(size)]
        if state is not None:
            for loader in ranks:
                loader.load_state_dict(json.loads(json.dumps(state)))
        steps = 0
        while batches is None or steps < batches:
            steps += 1
            before = [loader.state_dict()["sources"] for loader in ranks]
            afters = []
            for r, loader in enumerate(ranks):
                got, states = take(loader, 1)
                after = states[0]["sources"]
                afters.append(after)
                for s in range(2):
                    mine = [i for i in got[0] if source_of(firsts, i) == s]
                    # Its draws of this batch in its epoch 0: all where it is still in epoch 0,
                    # those before the position it ended at where it moved on in this batch.
                    if before[r][s]["epoch"] == 0:
                        in_zero = mine if after[s]["epoch"] == 0 else mine[:len(mine) -
                                                                           after[s]["position"]]
                        taken[s].update(in_zero)
            assert all(a == afters[0] for a in afters), "the ranks disagree"
            if batches is None and all(g["epoch"] >= 1 for g in afters[0]):
                break
            assert steps < 1000
        state = ranks[0].state_dict()
    for s, n in enumerate(SIZES):
        assert set(taken[s]) == set(range(firsts[s], firsts[s] + n)), s
        # A resume at another world size pads its split with fewer repeats than its ranks.
        assert sum(taken[s].values()) - n < 3 + 2, s


def test_what_cannot_be_mixed_is_refused(datasets):
    paths, _ = mixture_data(datasets)
    other, _ = mixture_data(datasets, sizes=(40,), shape=(3, 4, 4), tag="wide")
    with pytest.raises(ringfeed.UsageError, match=r"sample shape 3x4x4, not 3x4x5"):
        mixed([paths[0], other[0]], [1, 1])
    for bad in ([-1, 1], [float("nan"), 1], [0, 0]):
        with pytest.raises(ringfeed.UsageError):
            mixed(paths, bad)
    with pytest.raises(ringfeed.UsageError, match="2 datasets, 3 weights"):
        mixed(paths, [1, 1, 1])
    with pytest.raises(ringfeed.UsageError, match="a list of datasets"):
        open_loader(paths[0], BATCH, weights=[1])


def test_a_state_of_another_mixture_is_refused_naming_what_differs(datasets):
    paths, _ = mixture_data(datasets)
    other, _ = mixture_data(datasets, sizes=(400, 250), tag="other")
    loader = mixed(paths, [0.7, 0.3])
    take(loader, 3)
    state = loader.state_dict()
    with pytest.raises(ringfeed.UsageError, match=r"weights: the state has \[0\.69999"):
        mixed(paths, [0.5, 0.5]).load_state_dict(state)
    with pytest.raises(ringfeed.UsageError, match=r"datasets\[1\]: the state has id .*300 "
                                                  r"samples.*250 samples"):
        mixed([paths[0], other[1]], [0.7, 0.3]).load_state_dict(state)
    with pytest.raises(ringfeed.UsageError, match="seed: the state has 5, this loader 6"):
        mixed(paths, [0.7, 0.3], seed=6).load_state_dict(state)
    with pytest.raises(ringfeed.UsageError, match="not a mixture's state"):
        mixed(paths, [0.7, 0.3]).load_state_dict(open_loader(paths[0], BATCH).state_dict())
    with pytest.raises(ringfeed.UsageError, match="a mixture's of 2 datasets"):
        open_loader(paths[0], BATCH).load_state_dict(state)
    bad = json.loads(json.dumps(state))
    bad["sources"][1]["position"] = 10_000
    fresh = mixed(paths, [0.7, 0.3])
    before, _ = take(mixed(paths, [0.7, 0.3]), 2)
    with pytest.raises(ringfeed.UsageError, match="position 10000 is past"):
        fresh.load_state_dict(bad)
    assert take(fresh, 2)[0] == before  # a refused state changes nothing
