"""DLPack export: torch and numpy view the loader's own buffer (no copy); the array API's
__dlpack__ keywords are taken or refused with BufferError; a capsule never consumed gives its
batch back."""

import gc

import numpy as np
import pytest

from conftest import index_of, open_loader

torch = pytest.importorskip("torch")


def first_batch(loader):
    return next(iter(loader))


def test_torch_from_dlpack_is_zero_copy(datasets):
    samples, labels = first_batch(open_loader(datasets.positional()))
    x, y = torch.from_dlpack(samples), torch.from_dlpack(labels)
    assert x.data_ptr() == samples.data_ptr
    assert y.data_ptr() == labels.data_ptr
    assert tuple(x.shape) == samples.shape == (32, 3, 4, 5)
    assert x.dtype == torch.uint8 and y.dtype == torch.int64
    assert tuple(y.shape) == labels.shape == (32,)
    assert x.device.type == "cpu"
    assert np.array_equal(index_of(x.numpy()), samples.indices)


def test_numpy_from_dlpack_is_zero_copy(datasets):
    samples, labels = first_batch(open_loader(datasets.positional()))
    x, y = np.from_dlpack(samples), np.from_dlpack(labels)
    assert x.ctypes.data == samples.data_ptr and y.ctypes.data == labels.data_ptr
    assert samples.numpy().ctypes.data == samples.data_ptr
    assert x.dtype == np.uint8 and y.dtype == np.int64
    assert x.shape == samples.shape and y.shape == labels.shape


def test_tensor_describes_itself(datasets):
    samples, labels = first_batch(open_loader(datasets.positional(), dtype="float32"))
    assert samples.dtype == "float32" and labels.dtype == "int64"
    assert samples.device == "cpu"
    assert samples.__dlpack_device__() == (1, 0)
    assert samples.nbytes == 32 * 60 * 4 and labels.nbytes == 32 * 8
    assert samples.epoch == 0 and samples.position == 0
    assert repr(samples) == "ringfeed.Tensor(shape=(32, 3, 4, 5), dtype=float32, device='cpu')"
    assert repr(labels) == "ringfeed.Tensor(shape=(32,), dtype=int64, device='cpu')"


def test_each_export_is_its_own_view_of_one_buffer(datasets):
    samples, _ = first_batch(open_loader(datasets.positional()))
    a, b = torch.from_dlpack(samples), torch.from_dlpack(samples)
    assert a.data_ptr() == b.data_ptr() == samples.data_ptr


def test_array_api_keywords_on_host_memory(datasets):
    samples, _ = first_batch(open_loader(datasets.positional()))
    for kwargs in (dict(), dict(stream=None), dict(stream=-1), dict(max_version=(1, 0)),
                   dict(dl_device=(1, 0)), dict(copy=False), dict(copy=None)):
        capsule = samples.__dlpack__(**kwargs)
        assert "dltensor" in repr(capsule)
        assert torch.utils.dlpack.from_dlpack(capsule).data_ptr() == samples.data_ptr
    with pytest.raises(BufferError, match="stream must be None or -1"):
        samples.__dlpack__(stream=1)
    with pytest.raises(BufferError, match="copy=True is not supported"):
        samples.__dlpack__(copy=True)
    with pytest.raises(BufferError, match=r"dl_device \(kDLCUDA=2, 0\) is not"):
        samples.__dlpack__(dl_device=(2, 0))
    with pytest.raises(TypeError):
        samples.__dlpack__(1)  # the keywords are keyword-only


def test_an_unconsumed_capsule_gives_its_batch_back(datasets):
    loader = open_loader(datasets.positional(), prefetch=1)
    for samples, labels in loader:
        capsules = [samples.__dlpack__(), labels.__dlpack__()]
        del samples, labels, capsules  # never consumed: the capsules' destructors delete them
        gc.collect()
    # Every batch went back: the epoch ran through one buffer (nothing to assert on it here but
    # that nothing crashed or leaked into a later batch).
    assert sorted(i for s, _ in loader for i in s.indices) == list(range(datasets.SAMPLES))


def test_numpy_refuses_bfloat16(datasets):
    samples, _ = first_batch(open_loader(datasets.positional(), dtype="bfloat16"))
    with pytest.raises(TypeError, match="no bfloat16"):
        samples.numpy()
    assert torch.from_dlpack(samples).dtype == torch.bfloat16
