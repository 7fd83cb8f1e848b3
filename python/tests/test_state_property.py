"""A property test of load_state_dict (issue 23: "so the next such defect is found by CI"):
whatever a saved state is made into (fields of every JSON type and edge values, fields dropped,
fields added), load_state_dict refuses it with UsageError or takes it and then continues exactly
as a loader at that epoch and position does; a state of another world size or with stretches
(issue 28) is taken as the rule of ringfeed train's resume says, and its epoch holds what that
rule's count says, each sample once."""

import pytest

import ringfeed
from conftest import open_loader

hypothesis = pytest.importorskip("hypothesis")  # Debian: python3-hypothesis
from hypothesis import HealthCheck, example, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


def _mutations():
    """A field of the state and what it becomes: values of every JSON type and the edges."""
    values = st.one_of(st.none(), st.booleans(), st.integers(min_value=-2**70, max_value=2**70),
                       st.floats(allow_nan=True), st.text(max_size=8),
                       st.sampled_from([0, 1, 2, 32, 64, 999, 1000, 2**32 - 1, 2**32, 2**63,
                                        "window", "none", "flip", "uint8", "float32", "NHWC",
                                        "center", 224]),
                       st.lists(st.integers(), max_size=2),
                       st.lists(st.fixed_dictionaries({
                           "world_size": st.sampled_from([0, 1, 2, 3, 7, 2**16 + 1]),
                           "position": st.sampled_from([0, 32, 64, 66, 100, 128, 2**64])}),
                           max_size=3))
    fields = st.sampled_from(["version", "epoch", "position", "stretches", "seed", "batch_size",
                              "shuffle", "shuffle_window", "drop_last", "rank", "world_size",
                              "dataset_id", "dataset_samples", "augment", "dtype", "layout",
                              "normalize", "mean", "std", "image_size", "image_crop", "image_alpha",
                              "extra"])
    return st.lists(st.tuples(fields, values), min_size=1, max_size=3)


@settings(max_examples=150, deadline=None, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(edits=_mutations(), drop=st.booleans())
# Found by this test: a state at the last epoch's end is taken, and no batch comes of it.
@example(edits=[("epoch", 2**32 - 1)], drop=False)
def test_any_state_is_refused_or_resumes_exactly(datasets, edits, drop):
    path = datasets.positional(n=200)
    saved = open_loader(path)
    it = iter(saved)
    next(it)
    next(it)
    state = saved.state_dict()
    for field, value in edits:
        if drop and field in state:
            del state[field]
        else:
            state[field] = value
    loader = open_loader(path)
    try:
        loader.load_state_dict(state)
    except ringfeed.UsageError:
        return  # refused, by the one exception it may raise
    # Taken: the fields that name its batches are its own (but for those a version 1 state does
    # not record, those versions 1 to 3 do not, and the image decode's, which a dataset of
    # tensors does not take), its rank and world size stay its own, and it stands where the
    # resume rule (src/train_config.h's ApplyCheckpoint) puts it: at another world size, the
    # state's position ends one more stretch of its epoch, and the loader starts that epoch's
    # remainder.
    mine = loader.state_dict()
    unchecked = ("image_size", "image_crop", "image_alpha")
    if state["version"] == 1:
        unchecked += ("augment", "dtype")
    if state["version"] < 4:
        unchecked += ("layout", "normalize", "mean", "std")
    for key in mine:
        if key not in ("epoch", "position", "version", "rank", "world_size", "stretches",
                       *unchecked):
            assert key not in state or (state[key] == mine[key]
                                        and type(state[key]) is type(mine[key])), key
    assert (mine["rank"], mine["world_size"]) == (0, 1)
    stretches = state["stretches"] if state["version"] >= 3 else []
    position = state["position"]
    if state["world_size"] != 1 and (position != 0 or stretches):
        stretches = stretches + [{"world_size": state["world_size"], "position": position}]
        position = 0
    assert (mine["epoch"], mine["position"], mine["stretches"]) == (state["epoch"], position,
                                                                     stretches)
    if stretches:
        # A resumed epoch at one rank: what the stretches left, each sample once, from position.
        left = loader.epoch_samples - position
        rest = [i for b in loader for i in b[0].indices]
        assert len(rest) == len(set(rest)) == left
        return
    fresh = open_loader(path)
    fresh.set_epoch(state["epoch"])
    if state["epoch"] == 2**32 - 1:
        # Where the last epoch a loader hands out leaves it: a state may stand there, and no
        # batch comes of it, as none comes of a fresh loader set there.
        for at_end in (loader, fresh):
            with pytest.raises(ringfeed.UsageError, match="is past the last epoch a loader "):
                next(iter(at_end))
        return
    skip = state["position"] // 32
    expected = [b[0].indices for b in fresh][skip:]
    assert [b[0].indices for b in loader] == expected
