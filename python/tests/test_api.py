"""The package's surface: the dataset's header, the loader's figures, the defaults, and a
docstring on everything help() shows."""

import inspect
import os
import pydoc

import pytest

import ringfeed
from conftest import Datasets, open_loader


def test_dataset_is_the_header(datasets):
    path = datasets.positional()
    info = open_loader(path).dataset
    assert isinstance(info, ringfeed.DatasetInfo)
    assert info.samples == Datasets.SAMPLES and info.shape == Datasets.SHAPE
    assert info.dtype == "uint8" and info.label_dtype == "uint8" and info.classes == 10
    assert len(info.mean) == len(info.std) == 3
    assert info.paths == (path,) and info.id != 0


def test_stats_count_what_was_read(datasets):
    loader = open_loader(datasets.positional())
    assert loader.stats()["batches"] == 0
    for _ in loader:
        pass
    s = loader.stats()
    assert set(s) >= {"bytes_read", "seconds", "disk_gbps", "wait_seconds", "wait_share",
                      "batches", "reader_held_seconds"}
    assert s["batches"] == len(loader)
    assert s["bytes_read"] >= os.path.getsize(datasets.positional()) - 2 * 4096  # all the chunks
    assert s["seconds"] > 0 and s["disk_gbps"] > 0
    assert s["wait_share"] >= 0


def test_wait_share_is_at_most_one(datasets):
    loader = open_loader(datasets.positional(), shuffle_window=16)
    for _ in loader:
        pass
    assert loader.stats()["wait_share"] <= 1


def test_default_device_follows_the_machine(datasets):
    loader = ringfeed.Loader(datasets.positional(), 8, io="buffered")
    assert loader.device == ("cuda:0" if ringfeed.cuda_available() else "cpu")
    assert open_loader(datasets.positional()).device == "cpu"


def test_repr_names_the_dataset_and_place(datasets):
    text = repr(open_loader(datasets.positional(), 8))
    assert datasets.positional() in text and "epoch=0 position=0" in text


def test_everything_public_has_a_docstring():
    for obj in (ringfeed, ringfeed.Loader, ringfeed.Tensor, ringfeed.DataError,
                ringfeed.UsageError, ringfeed.DatasetInfo, ringfeed.cuda_available):
        assert inspect.getdoc(obj), obj
    for cls in (ringfeed.Loader, ringfeed.Tensor):
        for name, member in vars(cls).items():
            if name.startswith("_") and name not in ("__iter__", "__len__", "__dlpack__",
                                                     "__dlpack_device__"):
                continue
            assert inspect.getdoc(member), f"{cls.__name__}.{name}"
    text = pydoc.render_doc(ringfeed.Loader, renderer=pydoc.plaintext)
    for option in ("shuffle_window", "world_size", "managed_oversubscribe", "state_dict",
                   "load_state_dict", "set_epoch", "DataError", "UsageError"):
        assert option in text


def test_errors_are_value_errors():
    assert issubclass(ringfeed.DataError, ValueError)
    assert issubclass(ringfeed.UsageError, ValueError)
    assert ringfeed.DataError.__module__ == "ringfeed"


def test_dataset_info_reads_the_header_without_a_loader(datasets, tmp_path):
    path = datasets.positional()
    info = ringfeed.dataset_info(path)
    assert info == open_loader(path).dataset
    assert info.samples > 0 and len(info.paths) == 1
    bad = tmp_path / "bad.rfd"
    data = bytearray(open(path, "rb").read())
    data[100] ^= 0x10  # inside the checksummed header
    bad.write_bytes(bytes(data))
    with pytest.raises(ringfeed.DataError, match="bad.rfd"):
        ringfeed.dataset_info(str(bad))


def test_given_statistics_normalize_instead_of_the_headers(datasets):
    import numpy as np
    path = datasets.positional()
    raw = next(iter(open_loader(path, dtype="float32", normalize=False)))[0].numpy().copy()
    c = len(ringfeed.dataset_info(path).mean)
    got = next(iter(open_loader(path, dtype="float32", normalize=True, mean=[10.0] * c,
                                std=[2.0] * c)))[0]
    assert np.array_equal(got.numpy(), ((raw - np.float32(10)) / np.float32(2)).astype(np.float32))
    with pytest.raises(ringfeed.UsageError, match="both or neither"):
        open_loader(path, mean=[1.0] * c)
    with pytest.raises(ringfeed.UsageError, match="normalize"):
        open_loader(path, mean=[1.0] * (c + 1), std=[1.0] * (c + 1), normalize=True)
    with pytest.raises(ringfeed.UsageError, match="normalize off"):
        open_loader(path, mean=[1.0] * c, std=[1.0] * c, normalize=False)
