"""A packed sequences state under hostile edits (issue 40): every field that is not what it must
be is refused with UsageError naming it and what it must be (a negative, None, float or string
field said "malformed sequences state (Unable to cast Python instance to C++ type ...)", a missing
list raised KeyError and list=5 TypeError); a state whose counters no loader reaches is refused
(drawn=[2**63, 0] gave none of 400 rows from the dataset of weight 0.7; rows=2**64-1, rows that
are not the draws' sum, rank 5 of world_size 2 and world_size 0 were taken); and epochs stop
where a state can follow them (the end of epoch 2**32 - 2 leaves the loader at 2**32 - 1, which
its state holds and whose iteration is refused)."""

import copy
import itertools

import numpy as np
import pytest

import ringfeed
from conftest import LAST_EPOCH_MESSAGE, write_documents

U64 = "from 0 to 18446744073709551615"


@pytest.fixture(scope="module")
def two(tmp_path_factory):
    d = tmp_path_factory.mktemp("packed_state")
    return (write_documents(d / "a.rfd", 1, 1, 500, 200),
            write_documents(d / "b.rfd", 2, 500, 1000, 200))


KW = dict(sequence_length=15, device="cpu", eod_token=0, shuffle_window=2)


def mixture(two):
    return ringfeed.Loader(list(two), 4, weights=[0.7, 0.3], **KW)


@pytest.fixture(scope="module")
def saved(two):
    ld = mixture(two)
    list(itertools.islice(ld, 10))
    state = ld.state_dict()
    assert (state["rows"], state["drawn"]) == (40, [28, 12])
    return state


def refusal(two, state):
    with pytest.raises(ringfeed.UsageError) as e:
        mixture(two).load_state_dict(state)
    return str(e.value)


def edited(state, **fields):
    s = copy.deepcopy(state)
    for key, value in fields.items():
        if key.startswith("source_"):
            s["sources"][0][key[len("source_"):]] = value
        else:
            s[key] = value
    return s


@pytest.mark.parametrize("value", [-1, None, 1.5, "28", True])
def test_a_field_of_another_type_or_range_is_refused_naming_it(two, saved, value):
    for field, name in (("source_position", "sources[0]['position']"),
                        ("source_epoch", "sources[0]['epoch']")):
        bound = "from 0 to 4294967295" if field == "source_epoch" else U64
        assert refusal(two, edited(saved, **{field: value})) == (
            f"the state's {name} must be a whole number {bound}, got {value!r}")
    # A top-level field: of the saved state's type, then in its range, as the other states'.
    assert refusal(two, edited(saved, rows=value)) == (
        f"the state's rows must be a whole number {U64}, got -1" if value == -1 else
        f"load_state_dict: malformed state: rows is {type(value).__name__} {value!r}, not int")
    assert refusal(two, edited(saved, drawn=[value, 12])) == (
        f"the state's drawn[0] must be a whole number {U64}, got {value!r}")


def test_a_malformed_list_or_source_is_refused_naming_it(two, saved):
    s = copy.deepcopy(saved)
    del s["sources"][0]["list"]
    assert refusal(two, s).startswith("load_state_dict: malformed state: sources[0] must be a "
                                      "dict of epoch, position, world_size and list, got ")
    assert refusal(two, edited(saved, source_list=5)) == (
        "load_state_dict: malformed state: sources[0]['list'] must be a list, got 5")
    assert refusal(two, edited(saved, source_list=[[1]])) == (
        "load_state_dict: malformed state: sources[0]['list'][0] must be a [begin, end] pair of "
        "sequences, got [1]")
    assert refusal(two, edited(saved, source_list=[[0, -3]])) == (
        f"the state's sources[0]['list'][0][1] must be a whole number {U64}, got -3")
    assert refusal(two, edited(saved, sources=7)) == (
        "load_state_dict: malformed state: sources is int 7, not list")
    assert refusal(two, edited(saved, seed=1.0)) == (
        "load_state_dict: malformed state: seed is float 1.0, not int")


def test_counters_no_loader_reaches_are_refused(two, saved):
    assert refusal(two, edited(saved, drawn=[2**63, 0])) == (
        "the state's draws sum to 9223372036854775808, not its 40 rows")
    # The sum agreeing: the draws are still none the rule makes.
    assert refusal(two, edited(saved, drawn=[2**63, 0], rows=2**63)).startswith(
        "the state's dataset 0 drew 9223372036854775808 of its 9223372036854775808 rows, which "
        "no mixture of these weights draws: the rule draws within ")
    assert refusal(two, edited(saved, drawn=[40, 0])) == (
        "the state's dataset 0 drew 40 of its 40 rows, which no mixture of these weights draws: "
        "the rule draws within 1 of 28 (weight 0.7)")
    assert refusal(two, edited(saved, rows=2**64 - 1)) == (
        "the state's draws sum to 40, not its 18446744073709551615 rows")
    assert refusal(two, edited(saved, rows=41)) == "the state's draws sum to 40, not its 41 rows"
    assert refusal(two, edited(saved, rank=5, world_size=2)) == (
        "the state's rank must be a whole number from 0 to 1, got 5")
    assert refusal(two, edited(saved, world_size=0)) == (
        "the state's world_size must be a whole number from 1 to 4294967295, got 0")
    assert refusal(two, edited(saved, source_world_size=3)) == (
        "load_state_dict: the state's sources[0]['world_size'] must be the state's world_size, "
        "1 (or 0 for it), got 3")
    # What the loader reached is taken, and goes on as the saved one.
    ld, again = mixture(two), mixture(two)
    list(itertools.islice(ld, 10))
    again.load_state_dict(saved)
    assert all(np.array_equal(a.tokens.numpy(), b.tokens.numpy())
               for a, b in zip(itertools.islice(ld, 5), itertools.islice(again, 5)))


def test_the_end_of_the_last_epoch_leaves_a_state_the_loader_takes_back(two):
    one = ringfeed.Loader(two[0], 4, **KW)
    one.set_epoch(2**32 - 2)
    batches = len(one)
    assert sum(1 for _ in one) == batches
    assert one.epoch == 2**32 - 1
    other = ringfeed.Loader(two[0], 4, **KW)
    other.load_state_dict(one.state_dict())
    assert other.epoch == 2**32 - 1
    for ld in (one, other):
        with pytest.raises(ringfeed.UsageError) as e:
            next(iter(ld))
        assert str(e.value) == LAST_EPOCH_MESSAGE
    with pytest.raises(ringfeed.UsageError, match="sources\\[0\\]\\['epoch'\\] must be a whole "
                                                  "number from 0 to 4294967295, got 4294967296"):
        other.load_state_dict(edited(one.state_dict(), source_epoch=2**32))
