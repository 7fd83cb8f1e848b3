"""Errors: a damaged dataset raises DataError naming the file, the chunk and the byte offset; files
that cannot be read raise OSError; options that cannot be run raise UsageError naming the option;
`data` as a list or a pattern must be one dataset's every shard."""

import os
import shutil

import pytest

import ringfeed
from conftest import epoch_indices, open_loader

CHUNK = 4096  # the positional dataset's chunks (4 KiB each, after the 4 KiB header)


def damaged_copy(datasets, tmp_path, offset):
    path = str(tmp_path / "damaged.rfd")
    shutil.copyfile(datasets.positional(), path)
    with open(path, "r+b") as f:
        f.seek(offset)
        byte = f.read(1)
        f.seek(offset)
        f.write(bytes([byte[0] ^ 0x01]))
    return path


@pytest.mark.parametrize("chunk", [0, 5, 15])
def test_corrupt_chunk_raises_data_error_naming_file_chunk_and_offset(datasets, tmp_path, chunk):
    offset = CHUNK * (1 + chunk)
    path = damaged_copy(datasets, tmp_path, offset + 123)
    loader = open_loader(path, 16)
    with pytest.raises(ringfeed.DataError) as raised:
        epoch_indices(loader)
    e = raised.value
    assert isinstance(e, ValueError)
    message = str(e)
    assert path in message and f"chunk {chunk} " in message and f"at byte {offset}" in message
    assert (e.path, e.chunk, e.offset) == (path, chunk, offset)
    # The loader stays failed on that chunk: the next iteration restarts and meets it again.
    with pytest.raises(ringfeed.DataError, match=f"chunk {chunk} "):
        epoch_indices(loader)


def test_corrupt_chunk_without_verify_is_read_as_is(datasets, tmp_path):
    path = damaged_copy(datasets, tmp_path, CHUNK + 60 * 3 + 1)  # sample 3's byte 1
    loader = open_loader(path, 1000, verify=False, shuffle="none")
    samples, _ = next(iter(loader))
    assert samples.numpy()[3].reshape(-1)[1] == 1  # sample 3 encodes 3: its byte 1 was 0


def test_corrupt_header_raises_data_error_when_opening(datasets, tmp_path):
    path = damaged_copy(datasets, tmp_path, 100)
    with pytest.raises(ringfeed.DataError) as raised:
        open_loader(path)
    assert path in str(raised.value) and raised.value.path == path


def test_missing_file_raises_file_not_found(tmp_path):
    path = str(tmp_path / "absent.rfd")
    with pytest.raises(FileNotFoundError) as raised:
        open_loader(path)
    assert raised.value.filename == path and path in str(raised.value)


def test_pattern_matching_nothing_raises_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError, match="no file matches"):
        open_loader(str(tmp_path / "nothing-*.rfd"))


@pytest.mark.parametrize(
    "options, message",
    [
        (dict(batch_size=0), "batch_size must be a whole number from 1 to 1048576, got 0"),
        (dict(batch_size="8"), "batch_size must be a whole number from 1 to 1048576, got "),
        (dict(batch_size=64.0), "batch_size must be a whole number from 1 to 1048576, got "),
        (dict(dtype="int8"), "dtype: unknown dtype 'int8'"),
        (dict(dtype="float32", normalize="yes"), "normalize must be True or False"),
        (dict(layout="NCWH"), 'layout must be NCHW or NHWC, got "NCWH"'),
        (dict(shuffle="full"), 'shuffle must be window or none, got "full"'),
        (dict(shuffle_window=0), "shuffle_window must be a whole number from 1 to 4096, got 0"),
        (dict(mode="fast"), 'mode must be streaming or managed, got "fast"'),
        (dict(mode="managed", io=None, ring_slots=None), "managed needs a GPU"),
        (dict(mode="managed"), "io does nothing with mode='managed'"),
        (dict(io="aio"), 'io must be direct, buffered or pread, got "aio"'),
        (dict(read_size="3KiB"), "read_size must be a multiple of 4KiB from 4KiB to 1GiB, got"),
        (dict(read_size=5000), "read_size must be a multiple of 4KiB from 4KiB to 1GiB, got 5000"),
        (dict(read_size="lots"), "read_size must be a multiple of 4KiB .* got 'lots'"),
        (dict(device="tpu"), "device must be 'cuda', 'cuda:N', 'cpu' or None"),
        (dict(rank=2, world_size=2), r"rank must be < world_size \(2\), got 2"),
        (dict(rank=0, world_size=0), "world_size must be a whole number from 1 to 65536, got 0"),
        (dict(rank=-1, world_size=2), "rank must be a whole number from 0 to 65535, got -1"),
        (dict(ring_slots=1), "ring_slots must be a whole number from 2 to 1024, got 1"),
        (dict(queue_depth=0), "queue_depth must be a whole number from 1 to 32768, got 0"),
        (dict(prefetch=0), "prefetch must be a whole number from 1 to 64, got 0"),
        (dict(seed=-1), "seed must be a whole number from 0 to 18446744073709551615, got -1"),
        (dict(verify=1), "verify must be True or False, got 1"),
    ])
def test_bad_options_raise_usage_error(datasets, options, message):
    options = {"batch_size": 8, **options}
    with pytest.raises(ringfeed.UsageError, match=message):
        open_loader(datasets.positional(), **options)


def test_cuda_without_a_gpu_is_a_usage_error(datasets):
    if ringfeed.cuda_available():
        pytest.skip("this machine has a GPU")
    with pytest.raises(ringfeed.UsageError):
        open_loader(datasets.positional(), device="cuda")


def test_data_of_another_type_is_a_usage_error():
    with pytest.raises(ringfeed.UsageError, match="data must be a path"):
        ringfeed.Loader(42, 8)


def test_shards_as_list_pattern_or_base(datasets):
    base = datasets.positional(shards=3)
    shards = list(open_loader(base).dataset.paths)
    assert [os.path.basename(s) for s in shards] == [
        f"positional-1000-3-4KiB-{i:05d}-of-00003.rfd" for i in range(3)]
    expect = epoch_indices(open_loader(base))
    assert epoch_indices(open_loader(shards)) == expect
    assert epoch_indices(open_loader(list(reversed(shards)))) == expect
    pattern = os.path.join(os.path.dirname(base), "positional-1000-3-4KiB-*-of-00003.rfd")
    assert epoch_indices(open_loader(pattern)) == expect
    assert epoch_indices(open_loader(shards[1])) == expect  # any one shard names the dataset


def test_a_list_must_be_every_shard_of_one_dataset(datasets):
    shards = list(open_loader(datasets.positional(shards=3)).dataset.paths)
    with pytest.raises(ringfeed.UsageError, match=r"missing shards: \[.*-00002-of-00003.rfd'\]"):
        open_loader(shards[:2])
    other = datasets.positional(n=999)
    with pytest.raises(ringfeed.UsageError, match="not shards of"):
        open_loader(shards + [other])
    with pytest.raises(ringfeed.UsageError, match="names a file twice"):
        open_loader(shards + shards[:1])
    with pytest.raises(ringfeed.UsageError, match="one or more str paths"):
        open_loader([])
    pattern = shards[0].replace("-00000-of-", "-0000[01]-of-")
    with pytest.raises(ringfeed.UsageError, match="missing shards"):
        open_loader(pattern)


# Issue 40: refusals outside the documented exceptions (DataError, UsageError, OSError).
def test_a_name_two_datasets_share_is_a_usage_error(datasets, tmp_path):
    (tmp_path / "one").mkdir()
    shutil.copyfile(datasets.positional(n=100), tmp_path / "one" / "x.rfd")
    sharded = datasets.positional(n=100, shards=2)
    for i in range(2):
        src = sharded.replace(".rfd", f"-{i:05d}-of-00002.rfd")
        shutil.copyfile(src, tmp_path / "one" / f"x-{i:05d}-of-00002.rfd")
    with pytest.raises(ringfeed.UsageError, match="2 datasets have this name: "):
        open_loader(str(tmp_path / "one" / "x.rfd"))


def test_an_image_size_past_its_bound_is_refused_before_anything_is_allocated(datasets):
    with pytest.raises(ringfeed.UsageError) as e:
        open_loader(datasets.positional(), image_size=65535)
    assert str(e.value) == "image_size must be a whole number from 0 to 8192, got 65535"


def test_an_output_buffer_that_cannot_be_allocated_is_an_os_error(tmp_path):
    """It was a RuntimeError; it is ENOMEM, as the kernel says it."""
    image = pytest.importorskip("PIL.Image")
    import errno
    import io

    import numpy as np
    with ringfeed.DatasetWriter(tmp_path / "j.rfd", records="bytes", media_type="image/jpeg",
                                classes=2) as w:
        for i in range(2):
            buf = io.BytesIO()
            image.fromarray(np.full((8, 8, 3), 40 * i, np.uint8)).save(buf, format="JPEG")
            w.write(buf.getvalue(), i)
    with pytest.raises(OSError) as e:
        ringfeed.Loader(tmp_path / "j.rfd", 2**20, device="cpu", image_size=8192,
                        image_threads=1)
    assert e.value.errno == errno.ENOMEM
    assert "cannot allocate a 844424946909248-byte output buffer" in str(e.value)
