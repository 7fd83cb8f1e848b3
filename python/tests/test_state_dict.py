"""state_dict / load_state_dict: a loader restored from a state hands out exactly the batches the
saved one would have; a state of another order is refused, naming what differs."""

import json

import pytest

import ringfeed
from conftest import open_loader


def batches(loader, count=None):
    """The next `count` batches' indices (all of the current epoch where None)."""
    out = []
    for samples, _ in loader:
        out.append(list(samples.indices))
        if count is not None and len(out) == count:
            break
    return out


@pytest.mark.parametrize("stop_after", [0, 1, 7, 31])
def test_resume_mid_epoch_gives_the_uninterrupted_run(datasets, stop_after):
    path = datasets.positional()
    uninterrupted = open_loader(path)
    reference = batches(uninterrupted) + batches(uninterrupted)  # two epochs

    first = open_loader(path)
    before = batches(first, stop_after) if stop_after else []
    state = json.loads(json.dumps(first.state_dict()))  # what a checkpoint file holds
    del first

    restored = open_loader(path)
    restored.load_state_dict(state)
    assert (restored.epoch, restored.position) == (state["epoch"], state["position"])
    after = batches(restored) + batches(restored)
    assert before + after == reference


def test_resume_in_a_later_epoch(datasets):
    path = datasets.positional()
    a = open_loader(path, 50)
    batches(a)
    batches(a, 3)
    state = a.state_dict()
    assert state["epoch"] == 1 and state["position"] == 150
    rest = batches(a)

    b = open_loader(path, 50)
    b.load_state_dict(state)
    assert batches(b) == rest


def test_state_saved_during_the_last_batch_resumes_with_the_next_epoch(datasets):
    path = datasets.positional()
    a = open_loader(path, 400)
    states = [a.state_dict() for _ in a]
    assert states[-1]["epoch"] == 1 and states[-1]["position"] == 0
    b = open_loader(path, 400)
    b.load_state_dict(states[-1])
    assert batches(b) == batches(a)


def test_state_is_plain_json_and_names_the_order(datasets):
    loader = open_loader(datasets.positional(), 16, seed=9, rank=1, world_size=2)
    state = loader.state_dict()
    assert json.loads(json.dumps(state)) == state
    assert state["seed"] == 9 and state["batch_size"] == 16
    assert state["rank"] == 1 and state["world_size"] == 2
    assert state["shuffle"] == "window" and state["shuffle_window"] == 3
    assert state["dataset_samples"] == datasets.SAMPLES
    assert int(state["dataset_id"], 16) == loader.dataset.id


@pytest.mark.parametrize(
    "change, field",
    [(dict(seed=6), "seed"), (dict(batch_size=16), "batch_size"),
     (dict(shuffle="none"), "shuffle"), (dict(shuffle_window=4), "shuffle_window"),
     (dict(drop_last=True), "drop_last")])
def test_a_state_of_another_order_is_refused(datasets, change, field):
    # Another rank or world size continues the state's epoch instead: test_state_world_size.py.
    path = datasets.positional()
    state = open_loader(path).state_dict()
    options = dict(batch_size=32)
    options.update(change)
    other = open_loader(path, **options)
    with pytest.raises(ringfeed.UsageError, match=f"{field}: the state has"):
        other.load_state_dict(state)


def test_a_state_of_another_dataset_is_refused(datasets):
    state = open_loader(datasets.positional()).state_dict()
    other = open_loader(datasets.positional(n=999))
    with pytest.raises(ringfeed.UsageError, match="dataset_id: the state has"):
        other.load_state_dict(state)


def test_malformed_states_are_refused(datasets):
    loader = open_loader(datasets.positional())
    good = loader.state_dict()
    with pytest.raises(ringfeed.UsageError, match="takes a dict"):
        loader.load_state_dict([1, 2])
    with pytest.raises(ringfeed.UsageError, match="lacks \\['position'\\]"):
        loader.load_state_dict({k: v for k, v in good.items() if k != "position"})
    with pytest.raises(ringfeed.UsageError, match="unknown state version"):
        loader.load_state_dict({**good, "version": 99})
    with pytest.raises(ringfeed.UsageError, match="position 1000 is no batch boundary"):
        loader.load_state_dict({**good, "position": 1000})
