"""Read faults planted with RINGFEED_FAULTS (io/fault_plan.h) reach Python as the library reports
them: a read that keeps failing with EIO raises OSError (errno EIO) naming the file, the chunk and
the byte offset, and the attempts made; a transient one is retried and the epoch is the same as an
unfaulted one's."""

import errno

import pytest

from conftest import epoch_indices, open_loader

CHUNK_BYTES = 4096  # the positional dataset's chunks (after the 4 KiB header)


@pytest.mark.parametrize("chunk", [0, 7])
def test_persistent_eio_raises_oserror_naming_file_chunk_and_offset(datasets, monkeypatch, chunk):
    path = datasets.positional()
    monkeypatch.setenv("RINGFEED_FAULTS", f"read:eio@chunk={chunk},times=always")
    loader = open_loader(path, 16)
    with pytest.raises(OSError) as raised:
        epoch_indices(loader)
    e = raised.value
    offset = CHUNK_BYTES * (1 + chunk)  # chunks follow the 4 KiB header
    assert e.errno == errno.EIO
    assert (e.filename, e.chunk, e.offset) == (path, chunk, offset)
    message = str(e)
    assert f"chunk {chunk} at byte {offset}" in message and path in message
    assert "read failed after 4 attempts" in message


def test_transient_eio_gives_the_same_epoch(datasets, monkeypatch):
    path = datasets.positional()
    clean = epoch_indices(open_loader(path, 16))
    monkeypatch.setenv("RINGFEED_FAULTS", "read:eio@chunk=3,times=2;read:reorder")
    assert epoch_indices(open_loader(path, 16)) == clean
