"""load_state_dict's checks (issue 23, accepted items 3, 4 and 9): a state of another type, off a
batch boundary, of another augmentation or output dtype is refused naming the field; epochs are
bounded by what a ringfeed checkpoint holds, the same for set_epoch and the state."""

import pytest

import ringfeed
from conftest import LAST_EPOCH_MESSAGE, open_loader

MAX_EPOCH = 2**32 - 1


@pytest.mark.parametrize("field, value, message", [
    ("version", 2.0, "unknown state version 2.0"),
    ("batch_size", 32.0, "batch_size is float 32.0, not int"),
    ("world_size", True, "world_size is bool True, not int"),
    ("drop_last", 0, "drop_last is int 0, not bool"),
    ("epoch", "1", "epoch is str '1', not int"),
    ("position", 32.0, "position is float 32.0, not int"),
    ("position", 33, "position 33 is no batch boundary"),
    ("position", -32, "the state's position must be a whole number from 0"),
    ("epoch", MAX_EPOCH + 1, "the state's epoch must be a whole number from 0 to 4294967295"),
])
def test_a_malformed_state_is_refused_naming_the_field(datasets, field, value, message):
    loader = open_loader(datasets.positional())
    state = {**loader.state_dict(), field: value}
    with pytest.raises(ringfeed.UsageError, match=message):
        loader.load_state_dict(state)


@pytest.mark.parametrize("change, field", [(dict(augment="flip"), "augment"),
                                           (dict(dtype="float32"), "dtype")])
def test_a_state_of_another_augmentation_or_dtype_is_refused(datasets, change, field):
    path = datasets.positional()
    state = open_loader(path).state_dict()
    assert state["augment"] == "none" and state["dtype"] == "uint8"
    with pytest.raises(ringfeed.UsageError, match=f"{field}: the state has"):
        open_loader(path, **change).load_state_dict(state)


def test_a_version_1_state_still_loads(datasets):
    loader = open_loader(datasets.positional())
    next(iter(loader))
    state = loader.state_dict()
    old = {k: v for k, v in state.items() if k not in ("augment", "dtype")}
    old["version"] = 1
    other = open_loader(datasets.positional())
    other.load_state_dict(old)
    assert other.state_dict() == state


def test_epochs_are_bounded_as_a_checkpoint_holds_them(datasets):
    loader = open_loader(datasets.positional())
    with pytest.raises(ringfeed.UsageError, match="epoch must be a whole number from 0 to 4294967295"):
        loader.set_epoch(2**63 - 1)
    loader.set_epoch(MAX_EPOCH)
    state = loader.state_dict()
    other = open_loader(datasets.positional())
    other.load_state_dict(state)  # what set_epoch takes, the state takes back
    assert other.epoch == MAX_EPOCH


@pytest.mark.parametrize("mixture", [False, True])
def test_the_last_epochs_end_leaves_a_state_the_loader_takes_back(datasets, mixture):
    """Issue 40, W4: after set_epoch(2**32 - 1) and an epoch the loader was at 2**32, which its
    own load_state_dict refused; the last epoch handed out is 2**32 - 2, whose end leaves the
    loader at 2**32 - 1, and an iteration of that epoch is refused, naming the bound."""
    data = ([datasets.positional(n=200), datasets.positional(n=130)] if mixture
            else datasets.positional(n=200))
    kw = dict(weights=[0.5, 0.5]) if mixture else {}
    loader = open_loader(data, **kw)
    loader.set_epoch(MAX_EPOCH - 1)
    assert sum(1 for _ in loader) == len(loader)
    assert (loader.epoch, loader.position) == (MAX_EPOCH, 0)
    other = open_loader(data, **kw)
    other.load_state_dict(loader.state_dict())
    assert other.epoch == MAX_EPOCH
    for ld in (loader, other):
        with pytest.raises(ringfeed.UsageError) as e:
            next(iter(ld))
        assert str(e.value) == LAST_EPOCH_MESSAGE
        assert ld.epoch == MAX_EPOCH  # refused, it stays where it was


def test_a_state_nested_too_deep_or_holding_itself_is_refused(datasets):
    """The dict is converted for the library value for value: a list holding itself, or nested
    far deeper than any state, is refused (no recursion without end), and the loader goes on."""
    loader = open_loader(datasets.positional())
    state = loader.state_dict()
    looped = []
    looped.append(looped)
    deep = []
    for _ in range(100000):
        deep = [deep]
    for value in (looped, deep):
        with pytest.raises(ringfeed.UsageError, match="nested more than 32 deep"):
            loader.load_state_dict({**state, "stretches": value})
    with pytest.raises(ringfeed.UsageError, match="malformed state: seed is object"):
        loader.load_state_dict({**state, "seed": object()})
    loader.load_state_dict(state)
    assert loader.state_dict() == state
