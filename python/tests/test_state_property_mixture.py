"""Property tests of a sample mixture's state (issue 40), at one rank and at rank 1 of two: a
state saved at any place is taken back exactly (the batches after load_state_dict are the saved
loader's next ones, across the mixture's epochs); and whatever a saved state is made into (fields
of every JSON type and edge values, dropped, added, inside its stream), load_state_dict refuses
it with UsageError or DataError, or takes it and then stands at a place a loader reaches: its
draws are the rule's for its steps, and it goes on as any loader given that state does. Never a
crash, never another exception."""

import numpy as np
import pytest

import ringfeed

from conftest import assert_round_trip, load_edited, open_loader, take_across

hypothesis = pytest.importorskip("hypothesis")  # Debian: python3-hypothesis
from hypothesis import HealthCheck, event, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

BATCH = 16
KINDS = ("one", "rank 1 of 2")
SETTINGS = dict(deadline=None, database=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture])


def open_kind(datasets, kind):
    data = [datasets.positional(n=200), datasets.positional(n=130)]
    world = dict(rank=1, world_size=2) if kind == "rank 1 of 2" else dict(rank=0, world_size=1)
    return open_loader(data, BATCH, weights=[0.7, 0.3], **world)


def take(loader, k):
    """k batches' sample indices, on across the mixture's epochs."""
    return take_across(loader, k, lambda b: tuple(b[0].indices))


@settings(max_examples=50, **SETTINGS)
@given(kind=st.sampled_from(KINDS), k=st.integers(0, 50), m=st.integers(1, 6))
def test_a_state_saved_anywhere_is_taken_back_exactly(datasets, kind, k, m):
    assert_round_trip(lambda: open_kind(datasets, kind), take, k, m)


EDGES = [0, 1, 2, 3, 8, 16, 32, 100, 130, 200, 2**32 - 1, 2**32, 2**63, 2**64 - 1, 2**64, -1]
# Small whole numbers most often (a place near the saved one, which may well be taken), and
# values of every JSON type and the edges.
NEAR = st.integers(0, 300)
VALUES = st.one_of(NEAR, NEAR, NEAR, NEAR, st.none(), st.booleans(),
                   st.integers(min_value=-2**70, max_value=2**70), st.floats(allow_nan=True),
                   st.text(max_size=6), st.sampled_from(EDGES),
                   st.sampled_from(["mixture", "window", "none", "uint8", "float32"]),
                   st.lists(st.sampled_from(EDGES), max_size=3),
                   st.lists(st.fixed_dictionaries({
                       "world_size": st.sampled_from([0, 1, 2, 3, 2**16 + 1]),
                       "position": st.sampled_from(EDGES)}), max_size=2),
                   st.fixed_dictionaries({"epoch": st.sampled_from(EDGES),
                                          "position": st.sampled_from(EDGES),
                                          "stretches": st.just([])}))
TOP = ["version", "kind", "epoch", "position", "stretches", "seed", "batch_size", "shuffle",
       "shuffle_window", "drop_last", "rank", "world_size", "augment", "dtype", "layout",
       "normalize", "mean", "std", "weights", "datasets", "steps", "drawn", "sources", "extra"]
INNER = ["epoch", "position", "stretches", "extra"]
PATHS = st.one_of(st.tuples(st.sampled_from(TOP)),
                  st.tuples(st.just("drawn"), st.integers(0, 1)),
                  st.tuples(st.just("sources"), st.integers(0, 1), st.sampled_from(INNER)))


def outcome(loader, n=3):
    """The next n batches' place, or the UsageError that ends them (an epoch past the bound)."""
    try:
        return take(loader, n)
    except ringfeed.UsageError as e:
        assert "is past the last epoch a loader hands out" in str(e), e
        return str(e)


@settings(max_examples=400, **SETTINGS)
@given(kind=st.sampled_from(KINDS), k=st.integers(0, 30),
       edits=st.lists(st.tuples(PATHS, VALUES), min_size=1, max_size=2), drop=st.booleans())
def test_any_state_is_refused_or_stands_where_a_loader_can(datasets, kind, k, edits, drop):
    case = load_edited(lambda: open_kind(datasets, kind), take, k, edits, drop)
    event("taken" if case else "refused")
    if case is None:
        return
    loader, state, before = case
    mine = loader.state_dict()
    assert (mine["rank"], mine["world_size"]) == (before["rank"], before["world_size"])
    for key in ("seed", "batch_size", "shuffle", "shuffle_window", "drop_last", "augment",
                "dtype", "weights"):
        assert state[key] == mine[key], key
    # The draws are the rule's for the steps.
    steps, drawn = mine["steps"], mine["drawn"]
    assert sum(drawn) == steps
    w = np.array(mine["weights"])
    assert all(abs(d - wi * steps) < 1 + steps * 2**-50 for d, wi in zip(drawn, w))
    if state["world_size"] == mine["world_size"]:
        assert (mine["epoch"], mine["position"], mine["steps"], mine["drawn"]) == (
            state["epoch"], state["position"], state["steps"], state["drawn"])
    # It goes on as any loader given its place does: the same batches, or the same refusal (a
    # dataset at the last epoch a state holds goes no further).
    again = open_kind(datasets, kind)
    again.load_state_dict(mine)
    assert outcome(loader) == outcome(again)
