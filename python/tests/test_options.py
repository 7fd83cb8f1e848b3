"""The loader's options are the library's declarations (pipeline/plan/loader_options.h): the signature
help() shows, the defaults (the command line's), the bounds checked before anything is allocated,
the types (NumPy's integers and bools taken as Python's), and the options that would do nothing
refused as `ringfeed train` refuses them."""

import inspect

import numpy as np
import pytest

import ringfeed
from ringfeed import _ringfeed
from conftest import open_loader

def test_the_signature_is_the_declarations_with_their_defaults():
    declared = {o["name"]: o for o in _ringfeed.loader_options()}
    params = inspect.signature(ringfeed.Loader).parameters
    assert list(params)[:2] == ["data", "batch_size"]
    assert set(params) - {"data"} == set(declared)
    for name, o in declared.items():
        expected = None if o["unset"] else o["default"]
        assert params[name].default == expected, name
    # None: what the data or the process gives.
    assert {n for n, o in declared.items() if o["unset"]} == {
        "device", "dtype", "normalize", "rank", "world_size", "node_ranks", "mean", "std",
        "weights"}
    # One default for every face: the command line's (`ringfeed train --seed` is 1).
    assert params["seed"].default == 1 and params["batch_size"].default == 128
    assert params["queue_depth"].default == 8 and params["read_size"].default == "4MiB"
    assert params["shuffle"].default == "window" and params["verify"].default is True
    # And help(ringfeed.Loader) lists every option with its bound.
    for name in declared:
        assert f"    {name}:" in ringfeed.Loader.__doc__, name
    assert "(a whole number from 1 to 32768)" in " ".join(ringfeed.Loader.__doc__.split())


def test_defaults_are_what_the_loader_takes(datasets):
    loader = ringfeed.Loader(datasets.positional(), device="cpu", dtype="uint8", io="buffered")
    state = loader.state_dict()
    assert state["seed"] == 1 and state["batch_size"] == 128 and state["shuffle_window"] == 64


def test_unknown_keyword_is_a_type_error(datasets):
    with pytest.raises(TypeError, match="unexpected keyword argument 'queue_dpeth'"):
        open_loader(datasets.positional(), queue_dpeth=4)


# Issue 23, C1 and H1: 2**32-1 reads in flight aborted the process (std::bad_alloc), and 2**32-1
# prefetched batches never returned while memory grew; both are refused naming the bound.
@pytest.mark.parametrize("name, bound", [("queue_depth", 32768), ("prefetch", 64),
                                         ("ring_slots", 1024), ("shuffle_window", 4096),
                                         ("batch_size", 1048576), ("copy_streams", 16),
                                         ("world_size", 65536)])
def test_every_size_has_an_upper_bound(datasets, name, bound):
    for value in (2**32 - 1, 2**64 + 5, bound + 1):
        with pytest.raises(ringfeed.UsageError, match=f"{name} must be a whole number from "
                                                      f"\\d+ to {bound}, got"):
            open_loader(datasets.positional(), **{name: value})


def test_numpy_integers_and_bools_are_taken_as_pythons(datasets):
    loader = open_loader(datasets.positional(), np.int64(64), shuffle_window=np.uint32(3),
                         drop_last=np.bool_(True), seed=np.int64(7))
    state = loader.state_dict()
    assert (state["batch_size"], state["seed"], state["drop_last"]) == (64, 7, True)
    assert type(state["batch_size"]) is int


@pytest.mark.parametrize("value, word", [(True, "window"), (False, "none")])
def test_shuffle_takes_a_bool(datasets, value, word):
    assert open_loader(datasets.positional(), shuffle=value).state_dict()["shuffle"] == word


@pytest.mark.parametrize("options, message", [
    (dict(batch_size=True), "batch_size must be a whole number"),
    (dict(seed=1.5), "seed must be a whole number"),
    (dict(drop_last="yes"), "drop_last must be True or False"),
    (dict(shuffle=1), "shuffle must be window or none, got 1"),
    (dict(std=[-1.0, 1.0, 1.0], mean=[0.0, 0.0, 0.0], dtype="float32"),
     "std must be a list of finite numbers > 0"),
    (dict(std=[float("nan")] * 3, mean=[0.0] * 3, dtype="float32"), "std must be a list"),
    (dict(mean="0,0,0", std=[1.0] * 3, dtype="float32"), "mean must be a list of finite"),
])
def test_values_of_another_type_or_off_the_rule_are_refused(datasets, options, message):
    with pytest.raises(ringfeed.UsageError, match=message):
        open_loader(datasets.positional(), **options)


# Issue 23, accepted item 6: options that do nothing are refused as the command line refuses them.
@pytest.mark.parametrize("options, message", [
    (dict(copy_streams=2), r"copy_streams does nothing with device='cpu' \(GPU only\)"),
    (dict(managed_prefetch=1),
     r"managed_prefetch does nothing with mode='streaming' \(managed mode only\)"),
    (dict(managed_advise=True), "managed_advise does nothing with mode='streaming'"),
    (dict(managed_oversubscribe=False), "managed_oversubscribe does nothing with mode='streaming'"),
])
def test_options_that_would_do_nothing_are_refused(datasets, options, message):
    with pytest.raises(ringfeed.UsageError, match=message):
        open_loader(datasets.positional(), **options)


# Issue 23, W2 and W3: augmentation flipped or zeroed token ids, and a crop larger than the
# image made every image padding.
def test_augmentation_of_what_is_not_an_image_is_refused(datasets):
    ids = (np.arange(64 * 16) % 1000).astype(np.uint16).reshape(64, 16)
    path = datasets.make("ids-for-augment", ids, None, "--chunk-size", "4KiB")
    with pytest.raises(ringfeed.UsageError,
                       match=r"augment flip: augmentation transforms images, and this dataset's "
                             r"samples are uint16 of shape 16; leave it off"):
        ringfeed.Loader(path, 8, device="cpu", augment="flip", io="buffered")


def test_a_crop_larger_than_the_image_is_refused(datasets):
    # The positional images are 3x4x5: a padding of 4 would leave crops of padding only.
    with pytest.raises(ringfeed.UsageError,
                       match=r"a crop padding of 4 pixels is not below the 4x5 images' side.*at "
                             r"most 3"):
        open_loader(datasets.positional(), augment="crop:4")
    open_loader(datasets.positional(), augment="crop:3")


# Issue 23, accepted item 7: --drop-last with a batch larger than the epoch trained 0 steps.
def test_drop_last_with_a_batch_larger_than_the_epoch_is_refused(datasets):
    with pytest.raises(ringfeed.UsageError, match="drops every batch: an epoch holds 1000 samples"):
        open_loader(datasets.positional(), 1001, drop_last=True)
    assert len(open_loader(datasets.positional(), 1000, drop_last=True)) == 1


# Issue 23, unclear messages: a file that is not a dataset is named as what it is. A directory
# is a dataset now (its datasets read as one): one without any says so.
def test_a_device_or_directory_is_named_as_what_it_is(tmp_path):
    with pytest.raises(ringfeed.UsageError, match="/dev/null: a character device, not a dataset"):
        ringfeed.Loader("/dev/null", 8)
    with pytest.raises(FileNotFoundError, match="no dataset in this directory"):
        ringfeed.Loader(str(tmp_path), 8)
    (tmp_path / "sub.rfd").mkdir()
    with pytest.raises(ringfeed.UsageError, match="sub.rfd: a directory, not a dataset"):
        ringfeed.Loader(str(tmp_path), 8)
