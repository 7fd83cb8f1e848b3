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


# conftest's DEFAULTS set the streaming reader (io, ring_slots); managed mode refuses them as
# options that would do nothing, so its loaders leave them unset (None: the default).
MODE = {"streaming": {}, "managed": dict(io=None, ring_slots=None)}


def bits(t):
    return t.view(torch.int32) if t.dtype == torch.float32 else t


@pytest.mark.parametrize("mode", ["streaming", "managed"])
def test_gpu_batches_equal_the_cpu_loader_and_are_zero_copy(datasets, mode):
    path = datasets.positional()
    options = dict(batch_size=64, dtype="float32", normalize=True, layout="NHWC")
    cpu = [(torch.from_dlpack(s).clone(), torch.from_dlpack(y).clone())
           for s, y in open_loader(path, **options)]
    gpu = open_loader(path, device="cuda", mode=mode, **MODE[mode], **options)
    assert gpu.device.startswith("cuda:")
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        for (expect_x, expect_y), (samples, labels) in zip(cpu, gpu):
            assert samples.device == gpu.device and samples.__dlpack_device__()[0] == 2
            x, y = torch.from_dlpack(samples), torch.from_dlpack(labels)  # waits on `stream`
            assert x.data_ptr() == samples.data_ptr and x.is_cuda
            assert torch.equal(bits(x.cpu()), bits(expect_x))
            assert torch.equal(y.cpu(), expect_y)
    # tensors="torch": the binding's import, the same batches on the GPU, on the current stream
    torch_gpu = open_loader(path, device="cuda", mode=mode, tensors="torch", **MODE[mode],
                            **options)
    with torch.cuda.stream(stream):
        n = 0
        for (expect_x, expect_y), (x, y) in zip(cpu, torch_gpu):
            assert isinstance(x, torch.Tensor) and x.device == torch.device(torch_gpu.device)
            assert torch.equal(bits(x.cpu()), bits(expect_x)) and torch.equal(y.cpu(), expect_y)
            n += 1
    assert n == len(cpu)


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


@pytest.mark.parametrize("tensors", ["ringfeed", "torch"])
def test_a_slow_consumer_stream_never_reads_a_rewritten_buffer(datasets, tensors):
    """The consumer's stream lags far behind the host (a spin kernel before each read), while the
    loader, two buffers deep, keeps decoding ahead: a buffer handed back must not be rewritten
    before the reads queued on the consumer's stream have run (the release event); nor read
    before the batch is written (the wait, which tensors="torch" queues once for the batch)."""
    path = datasets.positional()
    expect = [torch.from_dlpack(s).double().sum().item()
              for s, _ in open_loader(path, dtype="float32", normalize=False)]
    loader = open_loader(path, device="cuda", dtype="float32", normalize=False, prefetch=2,
                         tensors=tensors)
    stream = torch.cuda.Stream()
    sums = []
    with torch.cuda.stream(stream):
        for samples, _ in loader:
            x = samples if tensors == "torch" else torch.from_dlpack(samples)
            torch.cuda._sleep(2_000_000)  # ~1 ms of GPU time on this stream before the read
            sums.append(x.double().sum())
            del x, samples  # released while the read is still queued
    torch.cuda.synchronize()
    assert [s.item() for s in sums] == expect


@pytest.mark.parametrize("library", ["cupy", "jax"])
def test_other_frameworks_take_the_batches_without_a_copy(datasets, library):
    lib = pytest.importorskip(library)
    path = datasets.positional()
    samples, labels = next(iter(open_loader(path, device="cuda", dtype="float32")))
    expect = torch.from_dlpack(samples).cpu().numpy()
    if library == "cupy":
        x = lib.from_dlpack(samples)
        assert x.data.ptr == samples.data_ptr
        got = lib.asnumpy(x)
    else:
        import jax.dlpack
        x = jax.dlpack.from_dlpack(samples)
        got = jax.device_get(x)
    assert got.shape == tuple(samples.shape)
    assert (got == expect).all()


@pytest.mark.parametrize("mode", ["streaming", "managed"])
@pytest.mark.parametrize("spec", ["crop:1", "flip", "erase:0.7", "crop:2,flip,erase:0.5"])
@pytest.mark.parametrize("dtype, layout, normalize", [("float32", "NCHW", True),
                                                      ("bfloat16", "NHWC", True),
                                                      ("uint8", "NHWC", False)])
def test_gpu_augmented_batches_equal_the_cpu_loader(datasets, mode, spec, dtype, layout,
                                                    normalize):
    """The GPU decode kernel draws each sample's transform from its global index (gathered to the
    device with the batch): the CPU loader's augmented bits, in both modes."""
    path = datasets.positional()
    options = dict(batch_size=64, dtype=dtype, normalize=normalize, layout=layout, augment=spec)
    cpu = [(torch.from_dlpack(s).clone(), s.indices) for s, _ in open_loader(path, **options)]
    gpu = open_loader(path, device="cuda", mode=mode, **MODE[mode], **options)
    plain = [torch.from_dlpack(s).clone()
             for s, _ in open_loader(path, **{**options, "augment": None})]
    assert any(not torch.equal(bits(p), bits(c)) for p, (c, _) in zip(plain, cpu))
    for (expect, indices), (samples, _) in zip(cpu, gpu):
        assert samples.indices == indices
        got = torch.from_dlpack(samples).cpu()
        if got.dtype == torch.bfloat16:
            assert torch.equal(got.view(torch.int16), expect.view(torch.int16))
        else:
            assert torch.equal(bits(got), bits(expect))
