"""On a GPU (skipped without one, or without a CUDA torch): batches in GPU memory, exported to
torch without a copy and ordered on torch's current stream; the same values as the CPU loader,
bit for bit, in both modes."""

import gc

import pytest

import ringfeed
from conftest import open_loader

torch = pytest.importorskip("torch")
if not (ringfeed.cuda_available() and torch.cuda.is_available()):
    pytest.skip("needs a GPU and a CUDA build of ringfeed and torch", allow_module_level=True)


def bits(t):
    return t.view(torch.int32) if t.dtype == torch.float32 else t


@pytest.mark.parametrize("mode", ["streaming", "managed"])
def test_gpu_batches_equal_the_cpu_loader_and_are_zero_copy(datasets, mode):
    path = datasets.positional()
    options = dict(batch_size=64, dtype="float32", normalize=True, layout="NHWC")
    cpu = [(torch.from_dlpack(s).clone(), torch.from_dlpack(y).clone())
           for s, y in open_loader(path, **options)]
    gpu = open_loader(path, device="cuda", mode=mode, **options)
    assert gpu.device.startswith("cuda:")
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        for (expect_x, expect_y), (samples, labels) in zip(cpu, gpu):
            assert samples.device == gpu.device and samples.__dlpack_device__()[0] == 2
            x, y = torch.from_dlpack(samples), torch.from_dlpack(labels)  # waits on `stream`
            assert x.data_ptr() == samples.data_ptr and x.is_cuda
            assert torch.equal(bits(x.cpu()), bits(expect_x))
            assert torch.equal(y.cpu(), expect_y)


def test_stream_values(datasets):
    samples, _ = next(iter(open_loader(datasets.positional(), device="cuda")))
    for stream in (None, 1, 2, -1, torch.cuda.current_stream().cuda_stream or 1):
        capsule = samples.__dlpack__(stream=stream)
        assert torch.utils.dlpack.from_dlpack(capsule).data_ptr() == samples.data_ptr
    with pytest.raises(BufferError, match="stream 0 is ambiguous"):
        samples.__dlpack__(stream=0)
    with pytest.raises(BufferError, match="dl_device"):
        samples.__dlpack__(dl_device=(1, 0))
    with pytest.raises(TypeError, match="cuda"):
        samples.numpy()


def test_gpu_batch_outlives_the_loader(datasets):
    loader = open_loader(datasets.positional(), device="cuda", dtype="float32")
    samples, _ = next(iter(loader))
    x = torch.from_dlpack(samples)
    expect = x.clone()
    torch.cuda.synchronize()
    del samples, loader
    gc.collect()
    assert torch.equal(x, expect)
