"""Records of any size (format 2's tokens and bytes) from ringfeed.DatasetWriter to
ringfeed.Loader: batches are (values, offsets, labels), DLPack tensors without a copy; every record
comes back as written, once an epoch, in an order that does not depend on the codec, and a loader
restored from a state dict continues exactly; what records cannot be is refused."""

import numpy as np
import pytest

import ringfeed
from ringfeed import UsageError


def documents(n, longest=1500, seed=3):
    rng = np.random.default_rng(seed)
    return [rng.integers(0, 50000, size=int(rng.integers(1, longest)), dtype=np.uint16)
            for _ in range(n)]


def write_tokens(path, docs, **kw):
    with ringfeed.DatasetWriter(path, records="tokens", dtype="uint16", classes=7,
                                chunk_size="16KiB", **kw) as w:
        for i, d in enumerate(docs):
            w.write(d, i % 7)
    return str(path)


def check_epoch(loader, docs):
    """Every batch of one epoch checked against `docs`; the indices in order."""
    seen = []
    for values, offsets, labels in loader:
        v, o, y = np.from_dlpack(values), np.from_dlpack(offsets), np.from_dlpack(labels)
        assert v.dtype == np.uint16 and o.dtype == np.int64 and y.dtype == np.int64
        assert o[0] == 0 and o[-1] == v.size and len(o) == len(y) + 1
        for i, g in enumerate(values.indices):
            assert np.array_equal(v[o[i]:o[i + 1]], docs[g])
            assert y[i] == g % 7
        seen += list(values.indices)
    return seen


@pytest.mark.parametrize("compress", ["none", "lz4", "zstd"])
def test_token_documents_come_back_once_an_epoch_whatever_the_codec(tmp_path, compress):
    docs = documents(600)
    raw = write_tokens(tmp_path / "raw.rfd", docs)
    packed = write_tokens(tmp_path / "packed.rfd", docs, compress=compress)
    info = ringfeed.dataset_info(packed)
    assert info.record_kind == "tokens" and info.format_version == 3
    assert info.shape == (max(len(d) for d in docs),)
    a = check_epoch(ringfeed.Loader(raw, batch_size=32, seed=5, device="cpu"), docs)
    b = check_epoch(ringfeed.Loader(packed, batch_size=32, seed=5, device="cpu"), docs)
    assert a == b and sorted(a) == list(range(len(docs)))


def test_a_restored_loader_continues_exactly(tmp_path):
    docs = documents(500)
    path = write_tokens(tmp_path / "d.rfd", docs, compress="zstd")
    whole = check_epoch(ringfeed.Loader(path, batch_size=16, seed=9, device="cpu"), docs)
    first = ringfeed.Loader(path, batch_size=16, seed=9, device="cpu")
    it = iter(first)
    taken = []
    for _ in range(7):
        values, offsets, labels = next(it)
        taken += list(values.indices)
    state = first.state_dict()
    second = ringfeed.Loader(path, batch_size=16, seed=9, device="cpu")
    second.load_state_dict(state)
    assert taken + check_epoch(second, docs) == whole


def test_batches_work_as_torch_tensors(tmp_path):
    torch = pytest.importorskip("torch")
    # int32 ids: PyTorch before 2.3 takes no uint16 through DLPack.
    docs = [d.astype(np.int32) for d in documents(100, longest=50)]
    path = tmp_path / "d.rfd"
    with ringfeed.DatasetWriter(path, records="tokens", dtype="int32", labels=False) as w:
        w.write(docs)
    values, offsets, labels = next(iter(ringfeed.Loader(path, batch_size=8, device="cpu",
                                                        shuffle="none")))
    v, o = torch.from_dlpack(values), torch.from_dlpack(offsets)
    parts = torch.split(v, torch.diff(o).tolist())
    for i, p in enumerate(parts):
        assert torch.equal(p, torch.from_numpy(docs[i]))


def test_bytes_records_keep_their_media_type_and_bytes(tmp_path):
    rng = np.random.default_rng(1)
    blobs = [rng.integers(0, 256, size=int(rng.integers(1, 9000)), dtype=np.uint8).tobytes()
             for _ in range(200)]
    path = tmp_path / "img.rfd"
    with ringfeed.DatasetWriter(path, records="bytes", media_type="image/jpeg", classes=10) as w:
        w.write(blobs[:50], [i % 10 for i in range(50)])
        for i in range(50, 200):
            w.write(blobs[i], i % 10)
    info = ringfeed.dataset_info(path)
    assert (info.record_kind, info.media_type, info.dtype) == ("bytes", "image/jpeg", "uint8")
    seen = 0
    # image records are decoded into images unless image_size is 0: these are random bytes.
    for values, offsets, labels in ringfeed.Loader(path, batch_size=32, device="cpu",
                                                   image_size=0):
        v, o, y = np.from_dlpack(values), np.from_dlpack(offsets), np.from_dlpack(labels)
        for i, g in enumerate(values.indices):
            assert v[o[i]:o[i + 1]].tobytes() == blobs[g] and y[i] == g % 10
        seen += len(y)
    assert seen == 200


def test_packed_records_write_as_a_loader_hands_them_out(tmp_path):
    docs = documents(300)
    a = write_tokens(tmp_path / "a.rfd", docs)
    with ringfeed.DatasetWriter(tmp_path / "b.rfd", records="tokens", dtype="uint16",
                                classes=7, chunk_size="16KiB") as w:
        for values, offsets, labels in ringfeed.Loader(a, batch_size=64, shuffle="none",
                                                       device="cpu"):
            w.write_records(np.from_dlpack(values), np.from_dlpack(offsets),
                            np.from_dlpack(labels))
    assert sorted(check_epoch(ringfeed.Loader(str(tmp_path / "b.rfd"), batch_size=10,
                                              device="cpu"), docs)) == list(range(300))


def test_a_strided_memoryview_is_written_as_the_bytes_it_shows(tmp_path):
    """Issue 40: a memoryview that is not contiguous raised BufferError from numpy."""
    data = bytes(range(40))
    with ringfeed.DatasetWriter(tmp_path / "m.rfd", records="bytes", labels=False) as w:
        w.write(memoryview(data)[::3])
        w.write([memoryview(data)[1::2], memoryview(data)[5:9]])
    values, offsets, _ = next(iter(ringfeed.Loader(tmp_path / "m.rfd", 3, device="cpu",
                                                   shuffle="none")))
    v, o = np.from_dlpack(values), np.from_dlpack(offsets)
    assert [v[o[i]:o[i + 1]].tobytes() for i in range(3)] == [data[::3], data[1::2], data[5:9]]


def test_what_records_cannot_be_is_refused(tmp_path):
    with pytest.raises(UsageError, match=r"^shape does nothing with records='tokens' \(records of "
                                         r"any size have no fixed shape\); leave it out$"):
        ringfeed.DatasetWriter(tmp_path / "x.rfd", shape=(4,), records="tokens", dtype="uint16")
    with pytest.raises(UsageError, match="records must be"):
        ringfeed.DatasetWriter(tmp_path / "x.rfd", records="text")
    with pytest.raises(UsageError, match="uint16, int32 or int64"):
        ringfeed.DatasetWriter(tmp_path / "x.rfd", records="tokens", dtype="float32")
    with ringfeed.DatasetWriter(tmp_path / "x.rfd", records="tokens", dtype="uint16",
                                labels=False, max_record_size=64) as w:
        with pytest.raises(UsageError, match="record 0 is empty"):
            w.write(np.zeros(0, dtype=np.uint16))
        with pytest.raises(UsageError, match="max_record_bytes"):
            w.write(np.zeros(33, dtype=np.uint16))
        with pytest.raises(UsageError, match="1-D array of uint16"):
            w.write(np.zeros(3, dtype=np.int32))
        w.write(np.arange(5, dtype=np.uint16))
    path = str(tmp_path / "x.rfd")
    with pytest.raises(UsageError, match="not decoded"):
        ringfeed.Loader(path, batch_size=4, dtype="float32", device="cpu")
    with pytest.raises(UsageError, match="not images"):
        ringfeed.Loader(path, batch_size=4, augment="flip", device="cpu")
