"""Compressed datasets (format version 2) through ringfeed.Loader: the codec changes what the disk
reads, never the batches: every codec gives the raw dataset's batches, in its order, on every rank;
stats() gives the stored and the delivered bytes and the chunk stage's share; a damaged frame is
an exception naming file, chunk and offset."""

import os

import numpy as np
import pytest

from conftest import epoch_indices, open_loader

CODECS = ["lz4", "zstd", "zstd:9"]


def batches(loader):
    return [(s.numpy().copy(), l.numpy().copy(), list(s.indices)) for s, l in loader]


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("rank, world", [(0, 1), (1, 2)])
def test_every_codec_gives_the_raw_datasets_batches(datasets, codec, rank, world):
    # 16 KiB chunks: several 4 KiB blocks each, so they shrink and are stored compressed.
    raw = datasets.positional(chunk_size="16KiB")
    packed = datasets.positional(chunk_size="16KiB", compress=codec)
    assert os.path.getsize(packed) < os.path.getsize(raw)
    a = batches(open_loader(raw, rank=rank, world_size=world))
    b = batches(open_loader(packed, rank=rank, world_size=world))
    assert len(a) == len(b) > 0
    for (xa, ya, ia), (xb, yb, ib) in zip(a, b):
        assert ia == ib
        assert np.array_equal(xa, xb) and np.array_equal(ya, yb)


def test_an_epoch_of_a_compressed_dataset_holds_every_sample_once(datasets):
    loader = open_loader(datasets.positional(chunk_size="16KiB", compress="zstd"))
    assert sorted(epoch_indices(loader)) == list(range(1000))


def test_stats_give_the_stored_and_the_delivered_bytes(datasets):
    loader = open_loader(datasets.positional(chunk_size="16KiB", compress="zstd"),
                         decode_threads=3)
    for _ in loader:
        pass
    s = loader.stats()
    assert s["decode_threads"] == 3
    assert s["bytes_delivered"] > 1.5 * s["bytes_read"] > 0
    assert s["delivered_gbps"] > s["disk_gbps"] > 0
    assert 0 < s["decode_busy_share"] <= 1


def test_a_raw_dataset_delivers_what_it_reads(datasets):
    loader = open_loader(datasets.positional())  # ring_slots=4, 4 KiB chunks
    for _ in loader:
        pass
    s = loader.stats()
    # The reader runs ahead; the chunks read and not yet through the stage are in ring slots.
    assert 0 <= s["bytes_read"] - s["bytes_delivered"] <= 4 * 4096
    assert s["bytes_delivered"] > 0


def test_a_damaged_frame_is_an_exception_naming_file_chunk_and_offset(datasets, tmp_path):
    src = datasets.positional(chunk_size="16KiB", compress="lz4")
    bad = tmp_path / "bad.rfd"
    data = bytearray(open(src, "rb").read())
    data[4096 + 100] ^= 0x40  # inside chunk 0's stored frame (it starts after the header)
    bad.write_bytes(bytes(data))
    for verify in (True, False):  # unchecked, the frame's own checks still refuse it
        loader = open_loader(str(bad), verify=verify, shuffle="none")
        with pytest.raises(Exception) as e:
            for _ in loader:
                pass
        msg = str(e.value)
        assert str(bad) in msg and "chunk 0" in msg and "at byte 4096" in msg, msg
