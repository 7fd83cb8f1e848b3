"""load_state_dict's checks (issue 23, accepted items 3, 4 and 9): a state of another type, off a
batch boundary, of another augmentation or output dtype is refused naming the field; epochs are
bounded by what a ringfeed checkpoint holds, the same for set_epoch and the state."""

import pytest

import ringfeed
from conftest import open_loader

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
