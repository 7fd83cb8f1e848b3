"""load_state_dict at another world size (issue 28, item 3): rank 0's state, loaded by every rank of
a world of another size, continues the interrupted epoch: the samples no rank had taken are shared
by the new ranks, each exactly once, through any number of resumes (the stretches a state
records), as `ringfeed train --resume` does; the epochs after it are ordinary. Ranks are emulated
in one process, one loader per rank with explicit rank= and world_size=
(test_state_world_size_torchrun.py runs real processes under torchrun).

The numbers: 999 positional samples in 16 chunks (15 of 66, one of 9), batch 16. At 2 ranks an
ordinary epoch gives each rank 500 (one sample repeated: the padding, in each rank's last window,
which starts at position 396). The ranks stop before any padding entry, so each stretch leaves
exactly what it did not take: 999 - 2 * 80 = 839 for 3 ranks (280 each, the last rank's slice
padded with 1 entry at its end), then 839 - 3 * 112 = 503 for 2 ranks (252 each, 1 padding entry:
the remainder's first sample, which rank 0 takes first, again at the end of rank 1's slice)."""

import collections
import json

import numpy as np
import pytest

import ringfeed
from conftest import CLASSES, index_of, open_loader

SAMPLES = 999
BATCH = 16


def take(loader, batches=None):
    """The sample indices of the loader's next `batches` batches (None: the rest of its epoch),
    each batch's samples checked against the indices it reports and its labels."""
    seen = []
    it = iter(loader)
    while batches is None or len(seen) < batches * BATCH:
        out = next(it, None)
        if out is None:
            assert batches is None, "the epoch ended early"
            break
        samples, labels = out[0], out[-1]
        if len(out) == 2:  # fixed-shape positional samples; records are checked by their caller
            idx = index_of(samples.numpy())
            assert list(idx) == samples.indices
            assert np.array_equal(labels.numpy(), idx % CLASSES)
        seen.extend(samples.indices)
    return seen


def world(path, size, state=None, **options):
    """`size` loaders, ranks 0 .. size - 1, each restored from `state` where given (a copy that
    went through JSON, as a checkpoint file holds it)."""
    loaders = [open_loader(path, BATCH, rank=r, world_size=size, **options) for r in range(size)]
    if state is not None:
        for loader in loaders:
            loader.load_state_dict(json.loads(json.dumps(state)))
    return loaders


def padding_of(first, remainder, size):
    """The repeats of a level of `remainder` samples over `size` ranks (window_order.h): each
    short rank's slice is padded with the level's first samples, which are rank 0's `first`."""
    q = -(-remainder // size)
    extra = collections.Counter()
    for j in range(size):
        real = max(0, min((j + 1) * q, remainder) - j * q)
        extra.update(first[:q - real])
    return extra


def resume_2_3_2(path, **options):
    """Epoch 0 at 2 ranks for 5 batches, rank 0's state to 3 ranks for 7 batches, rank 0's state
    to 2 ranks to the epoch's end. Returns each stage's per-rank indices and the final loaders."""
    first = world(path, 2, **options)
    stage0 = [take(l, 5) for l in first]
    state = first[0].state_dict()
    assert (state["epoch"], state["position"], state["stretches"]) == (0, 80, [])

    second = world(path, 3, state, **options)
    for loader in second:
        assert (loader.epoch, loader.position) == (0, 0)
    stage1 = [take(l, 7) for l in second]
    state = second[0].state_dict()
    assert (state["epoch"], state["position"]) == (0, 112)
    assert state["stretches"] == [{"world_size": 2, "position": 80}]
    assert state["world_size"] == 3 and state["version"] == 6

    third = world(path, 2, state, **options)
    counts = [(l.epoch_samples, len(l)) for l in third]
    stage2 = [take(l) for l in third]
    for loader in third:  # the resumed epoch is over: the next one is ordinary
        assert (loader.epoch, loader.position) == (1, 0)
        assert loader.state_dict()["stretches"] == []
    return stage0, stage1, stage2, counts, third


@pytest.mark.parametrize("shuffle", ["window", "none"])
def test_an_epoch_resumed_2_3_2_gives_every_sample_once_but_the_stated_padding(datasets, shuffle):
    path = datasets.positional(n=SAMPLES)
    stage0, stage1, stage2, counts, third = resume_2_3_2(path, shuffle=shuffle)
    assert [len(s) for s in stage0] == [80, 80]
    assert [len(s) for s in stage1] == [112] * 3
    assert counts == [(252, 16)] * 2  # ceil(503 / 2) samples, ceil(252 / 16) batches a rank
    assert [len(s) for s in stage2] == [252, 252]
    for rank in stage0 + stage1 + stage2:
        assert len(set(rank)) == len(rank), "a rank repeats a sample within its stretch"

    seen = collections.Counter()
    for rank in stage0 + stage1 + stage2:
        seen.update(rank)
    assert set(seen) == set(range(SAMPLES))  # every sample of the epoch reached a rank
    repeats = seen - collections.Counter(range(SAMPLES))
    assert repeats == padding_of(stage2[0], 503, 2)
    assert sum(repeats.values()) == 1 and stage2[1][-1] == stage2[0][0]

    # The epoch after the resumed one is the ordinary epoch 1 at 2 ranks.
    fresh = world(path, 2, shuffle=shuffle)
    for loader in fresh:
        loader.set_epoch(1)
    for loader, ordinary in zip(third, fresh):
        assert (loader.epoch_samples, len(loader)) == (500, 32)
        assert take(loader) == take(ordinary)


def test_drop_last_drops_each_resumed_ranks_partial_batch_and_nothing_else(datasets):
    path = datasets.positional(n=SAMPLES)
    whole = resume_2_3_2(path)
    stage0, stage1, stage2, counts, third = resume_2_3_2(path, drop_last=True)
    # The same samples in the same order, each stretch's ranks stopping at their full batches:
    # 280 and 252 samples a rank become 272 and 240.
    assert (stage0, stage1) == (whole[0], whole[1])
    assert counts == [(240, 15)] * 2
    assert stage2 == [rank[:240] for rank in whole[2]]
    seen = collections.Counter()
    for rank in stage0 + stage1 + stage2:
        seen.update(rank)
    assert max(seen.values()) == 1  # the padding entry was in rank 1's dropped tail
    assert len(seen) == SAMPLES - (2 * 12 - 1)  # 12 a rank dropped, 1 of them the padding


def test_a_resumed_epochs_counts_follow_it_from_the_load_to_its_end(datasets):
    path = datasets.positional(n=SAMPLES)
    state = world(path, 2)[0].state_dict()
    state["position"] = 80
    loader = world(path, 3, state)[1]
    assert (loader.epoch, loader.position, loader.epoch_samples, len(loader)) == (0, 0, 280, 18)
    batches = list(loader)
    assert [b[0].position for b in batches] == list(range(0, 280, BATCH))
    assert batches[-1][0].shape[0] == 280 - 17 * BATCH  # the partial last batch
    assert (loader.epoch, loader.position, loader.epoch_samples, len(loader)) == (1, 0, 333, 21)
    # set_epoch back to the resumed epoch gives this rank's share of it again.
    loader.set_epoch(0)
    assert len(loader) == 18 and [b[0].indices for b in loader] == [b[0].indices for b in batches]


def test_a_batch_held_across_a_resume_at_another_world_size_stays_as_it_was(datasets):
    path = datasets.positional(n=SAMPLES)
    loader = open_loader(path, BATCH, rank=0, world_size=3)
    samples, labels = next(iter(loader))
    before = samples.numpy().copy()
    state = world(path, 2)[0].state_dict()
    state["position"] = 80
    loader.load_state_dict(state)  # reopens the native loader
    take(loader)
    assert np.array_equal(samples.numpy(), before)
    assert list(index_of(before)) == samples.indices


def test_a_state_at_its_own_world_size_continues_exactly_on_any_rank(datasets):
    path = datasets.positional(n=SAMPLES)
    uninterrupted = world(path, 3)
    saved = world(path, 3)
    for a, b in zip(uninterrupted, saved):
        assert take(a, 4) == take(b, 4)
    state = saved[0].state_dict()
    for r, a in enumerate(uninterrupted):
        b = open_loader(path, BATCH, rank=r, world_size=3)
        b.load_state_dict(state)
        assert b.state_dict() == {**state, "rank": r}
        assert take(b) == take(a)

    # Mid-way through a resumed epoch, at that epoch's own world size: the same stretches, the
    # same position, the batches the saved ranks would have had.
    start = world(path, 2)[0].state_dict()
    start["position"] = 160
    resumed = world(path, 3, start)
    halfway = [take(l, 3) for l in resumed]
    state = resumed[0].state_dict()
    assert state["stretches"] == [{"world_size": 2, "position": 160}] and halfway[0]
    again = world(path, 3, state)
    for a, b in zip(resumed, again):
        assert b.state_dict()["stretches"] == state["stretches"]
        assert take(b) == take(a)


def test_an_epoch_boundary_state_at_another_world_size_is_an_ordinary_epoch(datasets):
    path = datasets.positional(n=SAMPLES)
    two = world(path, 2)
    for loader in two:
        take(loader)
    state = two[0].state_dict()
    assert (state["epoch"], state["position"], state["stretches"]) == (1, 0, [])
    three = world(path, 3, state)
    fresh = world(path, 3)
    for a, b in zip(three, fresh):
        b.set_epoch(1)
        assert a.state_dict()["stretches"] == [] and len(a) == len(b) == 21
        assert take(a) == take(b)


def test_a_version_2_state_resumes_at_another_world_size(datasets):
    path = datasets.positional(n=SAMPLES)
    two = world(path, 2)
    for loader in two:
        take(loader, 5)
    state = two[0].state_dict()
    old = {k: v for k, v in state.items() if k != "stretches"}
    old["version"] = 2
    for a, b in zip(world(path, 3, state), world(path, 3, old)):
        assert a.state_dict() == b.state_dict()
        assert take(a) == take(b)


def test_a_loader_resumed_then_given_an_ordinary_state_is_ordinary_again(datasets):
    path = datasets.positional(n=SAMPLES)
    state = world(path, 2)[0].state_dict()
    state["position"] = 80
    loader = world(path, 3, state)[0]
    assert loader.epoch_samples == 280
    ordinary = world(path, 3)[0].state_dict()
    loader.load_state_dict(ordinary)
    assert (loader.epoch_samples, len(loader)) == (333, 21)
    assert loader.state_dict()["stretches"] == []
    assert take(loader) == take(world(path, 3)[0])


@pytest.mark.parametrize("change, field", [(dict(seed=6), "seed: the state has 5, this loader 6"),
                                           (dict(batch_size=32), "batch_size: the state has 16"),
                                           (dict(shuffle="none"), "shuffle: the state has")])
def test_a_state_of_other_batches_is_refused_at_another_world_size_too(datasets, change, field):
    path = datasets.positional(n=SAMPLES)
    state = world(path, 2)[0].state_dict()
    options = dict(batch_size=BATCH, rank=1, world_size=3)
    options.update(change)
    other = open_loader(path, **options)
    with pytest.raises(ringfeed.UsageError, match=field):
        other.load_state_dict(state)


def test_a_state_of_another_dataset_is_refused_at_another_world_size(datasets):
    state = world(datasets.positional(n=SAMPLES), 2)[0].state_dict()
    other = open_loader(datasets.positional(n=1000), BATCH, rank=0, world_size=3)
    with pytest.raises(ringfeed.UsageError, match="dataset_id: the state has .*dataset_samples: "
                                                  "the state has 999, this loader 1000"):
        other.load_state_dict(state)


@pytest.mark.parametrize("edit, message", [
    (dict(stretches={"world_size": 2}), "stretches is dict .*, not list"),
    (dict(stretches=[[2, 80]]), r"stretches\[0\] must be a dict of world_size and position "
                                r"\(and node_ranks\), "
                                r"got \[2, 80\]"),
    (dict(stretches=[{"world_size": 2}]), r"stretches\[0\] must be a dict of world_size and "
                                          r"position"),
    (dict(stretches=[{"world_size": 2, "position": 80, "rank": 0}]), r"stretches\[0\] must be"),
    (dict(stretches=[{"world_size": 0, "position": 80}]),
     r"the state's stretches\[0\]\['world_size'\] must be a whole number from 1"),
    (dict(stretches=[{"world_size": 2, "position": True}]),
     r"the state's stretches\[0\]\['position'\] must be a whole number"),
    (dict(stretches=[{"world_size": 2, "position": 1008}]),
     r"stretch 1 of epoch 1 \(world size 2\): position 1008 is past its 500 samples per rank"),
    (dict(stretches=[{"world_size": 70000, "position": 0}]),
     "stretch 1 of epoch 1: world size must be from 1 to 65536, got 70000"),
    (dict(stretches=[{"world_size": 2, "position": 0}] * 1025),
     "1025 stretches, more than the 1024 a state holds"),
    (dict(rank=2), "the state's rank must be a whole number from 0 to 1, got 2"),
    (dict(world_size=0), "the state's world_size must be a whole number from 1"),
    (dict(world_size=70000, rank=0), "stretch 1 of epoch 1: world size must be from 1 to 65536"),
    (dict(position=88), "position 88 is no batch boundary"),
    (dict(position=512), r"stretch 1 of epoch 1 \(world size 2\): position 512 is past its 500"),
])
def test_a_malformed_state_at_another_world_size_is_refused_and_changes_nothing(datasets, edit,
                                                                                message):
    path = datasets.positional(n=SAMPLES)
    state = world(path, 2)[0].state_dict()
    state["position"] = 80
    state.update(edit)
    loader = open_loader(path, BATCH, rank=1, world_size=3)
    take(loader, 2)
    before = loader.state_dict()
    with pytest.raises(ringfeed.UsageError, match=message):
        loader.load_state_dict(state)
    assert loader.state_dict() == before
    reference = open_loader(path, BATCH, rank=1, world_size=3)
    take(reference, 2)
    assert take(loader) == take(reference)


def test_a_position_past_a_resumed_epochs_end_is_refused_at_its_world_size(datasets):
    path = datasets.positional(n=SAMPLES)
    state = world(path, 2)[0].state_dict()
    state["position"] = 80
    saved = world(path, 3, state)[0].state_dict()
    for position, ok in ((272, True), (288, False)):
        loader = open_loader(path, BATCH, rank=0, world_size=3)
        if ok:
            loader.load_state_dict({**saved, "position": position})
            assert len(take(loader)) == 280 - 272
        else:
            with pytest.raises(ringfeed.UsageError,
                               match="position 288 is no batch boundary of this loader's epoch 0 "
                                     r"\(multiples of batch_size 16 below 280\)"):
                loader.load_state_dict({**saved, "position": position})


# --- Records of any size: positions count records --------------------------------------------

def write_tokens(path, n):
    rng = np.random.default_rng(11)
    docs = [rng.integers(0, 60000, size=int(rng.integers(1, 300)), dtype=np.uint16)
            for _ in range(n)]
    with ringfeed.DatasetWriter(path, records="tokens", dtype="uint16", classes=7,
                                chunk_size="4KiB") as w:
        for i, d in enumerate(docs):
            w.write(d, i % 7)
    return str(path), docs


def take_records(loader, docs, batches=None):
    """The next `batches` batches' record indices (None: the rest of the epoch), each record
    checked against what was written."""
    seen = []
    it = iter(loader)
    while batches is None or len(seen) < batches * BATCH:
        out = next(it, None)
        if out is None:
            break
        values, offsets, labels = (np.from_dlpack(t) for t in out)
        for k, g in enumerate(out[0].indices):
            assert np.array_equal(values[offsets[k]:offsets[k + 1]], docs[g])
            assert labels[k] == g % 7
        seen.extend(out[0].indices)
    return seen


def test_token_records_resume_2_3_2_each_record_once(tmp_path):
    path, docs = write_tokens(tmp_path / "tokens.rfd", 701)
    options = dict(device="cpu", seed=3, shuffle_window=2)

    def ranks(size, state=None):
        loaders = [ringfeed.Loader(path, BATCH, rank=r, world_size=size, **options)
                   for r in range(size)]
        for loader in loaders:
            if state is not None:
                loader.load_state_dict(json.loads(json.dumps(state)))
        return loaders

    seen = collections.Counter()
    two = ranks(2)
    for loader in two:
        seen.update(take_records(loader, docs, 3))
    three = ranks(3, two[0].state_dict())
    assert three[0].state_dict()["stretches"] == [{"world_size": 2, "position": 48}]
    for loader in three:
        seen.update(take_records(loader, docs, 4))
    state = three[0].state_dict()
    assert state["position"] == 64 and len(state["stretches"]) == 1
    last = ranks(2, state)
    remainder = 701 - 2 * 48 - 3 * 64
    assert [l.epoch_samples for l in last] == [-(-remainder // 2)] * 2
    finals = [take_records(loader, docs) for loader in last]
    for final in finals:
        seen.update(final)
    assert set(seen) == set(range(701))
    assert seen - collections.Counter(range(701)) == padding_of(finals[0], remainder, 2)
    assert all(l.epoch == 1 and l.position == 0 for l in last)


def test_an_epoch_begun_under_the_node_partition_resumes_at_another_world_size(datasets):
    """4 ranks on 2 machines (node_ranks 2) take 3 batches each; rank 0's state, loaded at 3
    ranks under the global partition, shares what they left, each sample once; the state
    records the stretch's partition."""
    path = datasets.positional(n=SAMPLES)
    first = world(path, 4, partition="node", node_ranks=2)
    stage0 = [take(l, 3) for l in first]
    state = first[0].state_dict()
    assert (state["node_ranks"], state["world_size"], state["position"]) == (2, 4, 48)
    second = world(path, 3, state)
    stage1 = [take(l) for l in second]
    assert second[0].state_dict()["stretches"] == []  # the epoch is over
    seen = collections.Counter()
    for rank in stage0 + stage1:
        seen.update(rank)
    assert set(seen) == set(range(SAMPLES))
    # The 3 ranks repeat fewer than 3 samples; and a sample the 4 took comes again only where one
    # of them took it as its padding repeat (999 samples over 4 ranks pad 1, and with 3 dealt
    # chunks a rank, each rank's epoch is one window: its first 48 samples may hold it).
    later = collections.Counter()
    for rank in stage1:
        later.update(rank)
    assert sum(later.values()) - len(later) < 3
    assert len(set(later) & set(sum(stage0, []))) <= 1
    # Mid-way, the state of the second world names the first stretch with its partition.
    again = world(path, 3, state)
    take(again[0], 2)
    assert again[0].state_dict()["stretches"] == [
        {"world_size": 4, "position": 48, "node_ranks": 2}]
