"""ringfeed.DatasetWriter: datasets written from Python read back exactly, through the loader and
the converter's own checks, with every codec; bad input is refused before anything is written,
and nothing is left behind by a failed or abandoned writer."""

import os

import numpy as np
import pytest

import ringfeed
from conftest import epoch_indices, open_loader, positional_labels, positional_samples

SHAPE = (3, 4, 5)


def write(path, n=1000, pieces=7, **kw):
    x, y = positional_samples(n, SHAPE), positional_labels(n)
    with ringfeed.DatasetWriter(path, SHAPE, **kw) as w:
        for part in np.array_split(np.arange(n), pieces):
            w.write(x[part], y[part])
    return x, y


@pytest.mark.parametrize("compress", ["none", "lz4", "zstd", "zstd:7"])
def test_what_is_written_reads_back_in_order(tmp_path, compress):
    path = tmp_path / "w.rfd"
    x, y = write(path, chunk_size="16KiB", compress=compress)
    info = ringfeed.dataset_info(path)
    assert info.samples == 1000 and info.shape == SHAPE and info.classes == 10
    assert info.format_version == (1 if compress == "none" else 2)
    if compress != "none":
        assert info.codec == (compress if ":" in compress else
                              {"lz4": "lz4", "zstd": "zstd:3"}[compress])
        assert 0 < info.compressed_chunks and info.stored_bytes < info.data_bytes
    loader = open_loader(str(path), shuffle="none", batch_size=100)
    got = np.concatenate([s.numpy() for s, _ in loader])
    assert np.array_equal(got, x)
    assert sorted(epoch_indices(open_loader(str(path)))) == list(range(1000))


def test_equals_the_converters_dataset(tmp_path, datasets):
    """Same samples, same chunk size: the same chunks, statistics and order as ringfeed-convert's."""
    mine = tmp_path / "w.rfd"
    write(mine, chunk_size="4KiB")
    theirs = datasets.positional()
    a, b = ringfeed.dataset_info(mine), ringfeed.dataset_info(theirs)
    assert (a.samples, a.shape, a.classes, a.mean, a.std) == (b.samples, b.shape, b.classes,
                                                              b.mean, b.std)
    assert epoch_indices(open_loader(str(mine))) == epoch_indices(open_loader(theirs))


def test_shards_and_token_rows_without_labels(tmp_path):
    path = tmp_path / "tok.rfd"
    rows = (np.arange(50 * 64) % 50000).astype(np.uint16).reshape(50, 64)
    with ringfeed.DatasetWriter(path, (64,), "uint16", labels=False, shards=3,
                                chunk_size="4KiB", compress="zstd") as w:
        for r in rows:
            w.write(r)  # one sample at a time
    info = ringfeed.dataset_info(path)
    assert len(info.paths) == 3 and info.classes == 0 and info.dtype == "uint16"
    got = np.concatenate([s.numpy() for s, _ in
                          open_loader(str(path), shuffle="none", batch_size=10, dtype="uint16")])
    assert np.array_equal(got, rows)


def test_bad_arrays_are_refused_naming_what_is_wrong(tmp_path):
    w = ringfeed.DatasetWriter(tmp_path / "b.rfd", SHAPE)
    with pytest.raises(ringfeed.UsageError, match="samples are float64, the dataset stores uint8"):
        w.write(np.zeros((2,) + SHAPE), [0, 1])
    with pytest.raises(ringfeed.UsageError, match=r"samples of shape \(2, 3, 4\)"):
        w.write(np.zeros((2, 3, 4), np.uint8), [0, 1])
    with pytest.raises(ringfeed.UsageError, match="has labels"):
        w.write(np.zeros((2,) + SHAPE, np.uint8))
    with pytest.raises(ringfeed.UsageError, match="label 300 does not fit uint8"):
        w.write(np.zeros((2,) + SHAPE, np.uint8), [0, 300])
    with pytest.raises(ringfeed.UsageError, match="labels must be 2 integers"):
        w.write(np.zeros((2,) + SHAPE, np.uint8), [0.5, 1.0])
    w.abort()
    assert os.listdir(tmp_path) == []


# The rule of each is the library's declaration's (io/writer_options.h), ringfeed-convert's too.
CODECS = r"compress must be none, lz4, zstd or zstd:LEVEL with LEVEL 1 to 22, got "


@pytest.mark.parametrize("kw, match", [
    (dict(compress="zstd:99"), CODECS + "'zstd:99'"),
    (dict(compress="gzip"), CODECS + "'gzip'"),
    (dict(chunk_size="3KiB"), "chunk_size must be a byte size from 4KiB to 1GiB, got 3KiB"),
    (dict(chunk_size="four MiB"),
     "chunk_size must be a byte size from 4KiB to 1GiB, got 'four MiB'"),
    (dict(shards=0), "shards must be a whole number from 1 to 99999"),
    (dict(dtype="float64"), "dtype must be uint8, float16, bfloat16, float32, uint16, int32 or "
                            "int64, got \"float64\""),
    (dict(label_dtype="int64"), "label_dtype must be uint8, uint16 or int32"),
    (dict(format_version=1, compress="lz4"),
     r"format_version=1 has no compression: compress='lz4' needs version 2"),
])
def test_bad_options_are_usage_errors(tmp_path, kw, match):
    with pytest.raises(ringfeed.UsageError, match=match):
        ringfeed.DatasetWriter(tmp_path / "o.rfd", SHAPE, **kw)
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("kw, error, match", [
    # A value of another type, or off its rule, names the keyword and what was given.
    (dict(threads=2000), ringfeed.UsageError,
     r"^threads must be a whole number from 0 to 1024, got 2000$"),
    (dict(threads="2"), ringfeed.UsageError, r"^threads must be a whole number from 0 to 1024, "
                                             r"got '2'$"),
    (dict(labels=1), ringfeed.UsageError, r"^labels must be True or False, got 1$"),
    (dict(shape=(3, -4, 5)), ringfeed.UsageError, r"^shape must be 1 to 4 comma-separated whole "
                                                  r"numbers from 1 to 4294967295, got \(3, -4, 5\)$"),
    (dict(shape=(1, 2, 3, 4, 5)), ringfeed.UsageError, r"^shape must be 1 to 4 "),
    (dict(keep="a.bin"), ringfeed.UsageError, r"^keep must be texts, got 'a.bin'$"),
    (dict(classes=300), ringfeed.UsageError,
     r"^classes=300: uint8 labels name at most 256 classes \(label_dtype\)$"),
    # An option that does nothing with the others, named with the one it contradicts.
    (dict(labels=False, classes=10), ringfeed.UsageError,
     r"^classes does nothing with labels=False \(a dataset without labels has no classes\); "
     r"leave it out$"),
    (dict(max_record_size="1MiB"), ringfeed.UsageError,
     r"^max_record_size does nothing with records='tensor' "),
    (dict(media_type="image/jpeg"), ringfeed.UsageError,
     r"^media_type does nothing with records='tensor' "),
    # An unknown keyword is Python's own error for one.
    (dict(chunksize="4MiB"), TypeError, "unexpected keyword argument 'chunksize'"),
])
def test_a_bad_keyword_is_refused_naming_it_before_anything_is_written(tmp_path, kw, error,
                                                                       match):
    shape = kw.pop("shape", SHAPE)
    with pytest.raises(error, match=match):
        ringfeed.DatasetWriter(tmp_path / "k.rfd", shape, **kw)
    assert os.listdir(tmp_path) == []


def test_the_signature_and_help_are_the_declarations_the_converter_reads_too(tmp_path):
    """DatasetWriter's keyword arguments are ringfeed-convert's writer flags: one declaration
    each (io/writer_options.h), so the same defaults and rules in both helps."""
    import inspect
    import subprocess

    params = inspect.signature(ringfeed.DatasetWriter).parameters
    assert list(params)[:3] == ["path", "shape", "dtype"]
    assert params["shape"].default is None and params["dtype"].default == "uint8"
    assert (params["chunk_size"].default, params["compress"].default, params["threads"].default,
            params["shards"].default, params["max_record_size"].default) == (
                "4MiB", "none", 0, 1, "64MiB")
    assert params["compress"].kind is inspect.Parameter.KEYWORD_ONLY
    doc = " ".join(ringfeed.DatasetWriter.__doc__.split())
    assert "threads: threads that compress (0: one per core, at most 16) (a whole number from 0 " \
           "to 1024). Default: 0." in doc
    assert "chunk_size: target size of a chunk's data" in doc
    tool = os.environ.get("RINGFEED_CONVERT")
    if not tool:
        pytest.skip("RINGFEED_CONVERT is not set (ctest sets it to the built ringfeed-convert)")
    out = " ".join(subprocess.run([tool, "idx", "--help"], capture_output=True,
                                  text=True).stdout.split())
    assert "--compress-threads N threads that compress (0: one per core, at most 16) (a whole " \
           "number from 0 to 1024; default 0)" in out
    # What the writer took: the defaults where not given, a dtype by its own name.
    with ringfeed.DatasetWriter(tmp_path / "t.rfd", 7, "bf16", labels=False) as w:
        assert (w.shape, w.dtype, w.labels, w.records) == ((7,), "bfloat16", False, "tensor")
        w.write(np.zeros((2, 7), np.uint16))


def test_a_label_past_classes_names_its_sample_and_nothing_is_left(tmp_path):
    with pytest.raises(ringfeed.UsageError, match="label 7 of sample 12 is outside"):
        with ringfeed.DatasetWriter(tmp_path / "c.rfd", SHAPE, classes=5) as w:
            w.write(positional_samples(20, SHAPE), np.r_[np.zeros(12, int), [7], np.zeros(7, int)])
    assert os.listdir(tmp_path) == []


def test_an_exception_in_the_loop_keeps_the_older_dataset(tmp_path):
    path = tmp_path / "d.rfd"
    write(path, n=100)
    before = path.read_bytes()
    with pytest.raises(RuntimeError):
        with ringfeed.DatasetWriter(path, SHAPE) as w:
            w.write(positional_samples(10, SHAPE), positional_labels(10))
            raise RuntimeError("the user's loop failed")
    assert path.read_bytes() == before
    assert sorted(os.listdir(tmp_path)) == ["d.rfd"]


def test_an_empty_dataset_is_refused_and_leaves_nothing(tmp_path):
    w = ringfeed.DatasetWriter(tmp_path / "e.rfd", SHAPE)
    with pytest.raises(ringfeed.UsageError, match="no samples to write"):
        w.close()
    assert os.listdir(tmp_path) == []


def test_close_reports_what_was_written_and_is_idempotent(tmp_path):
    path = tmp_path / "r.rfd"
    w = ringfeed.DatasetWriter(path, SHAPE, compress="zstd", chunk_size="16KiB")
    w.write(positional_samples(500, SHAPE), positional_labels(500))
    r = w.close()
    assert r == w.close()
    assert r["paths"] == [str(path)] and r["samples"] == 500 == w.samples
    assert r["stored_bytes"] < r["data_bytes"]
    assert "written" in repr(w)
    with pytest.raises(ringfeed.UsageError, match="closed"):
        w.write(positional_samples(1, SHAPE), positional_labels(1))


def test_a_file_of_the_name_that_would_stay_is_refused_before_anything_is_written(tmp_path):
    # Issue 40, W5: DatasetWriter(shards=2) beside a text file of the dataset's name wrote both
    # shards and exited cleanly; nothing could then open the dataset by its name.
    (tmp_path / "n.rfd").write_text("notes")
    with pytest.raises(ringfeed.UsageError,
                       match=r"n\.rfd has the name of the dataset being written and would stay "
                             r"\(it is not a ringfeed dataset\), so its 2 shards"):
        write(tmp_path / "n.rfd", shards=2)
    assert sorted(os.listdir(tmp_path)) == ["n.rfd"]
    assert (tmp_path / "n.rfd").read_text() == "notes"
