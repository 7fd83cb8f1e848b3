"""`mpirun ringfeed train` on a compressed copy of the positional dataset (format version 2, zstd):
the codec changes what the ranks read, never what they train. A run stopped at 2 ranks and resumed
at 3 trains, rank by rank, the same samples in the same order from the zstd copy as from the raw
dataset, and ends with the same weights."""

import struct

import ranks_harness as h

STOP = 13  # steps: inside the first epoch at 2 ranks


def without_dataset_id(path) -> bytes:
    """A checkpoint's bytes less its dataset id and its checksum (ranks_harness.read_checkpoint's
    walk to the position fields): what training made of the samples."""
    b = path.read_bytes()
    (blocks,) = struct.unpack_from("<I", b, 28)
    at = 28 + 4 + 4 * blocks + 4 + 3 * 4 + 32 + 8  # the dataset id
    return b[:at] + b[at + 8:-8]


def run_2_then_3(data, d):
    d.mkdir()
    first = h.train(2, data, "--epochs", "2", "--batch-size", str(h.BATCH), "--seed", "7",
                    "--checkpoint", str(d / "stopped.ckpt"), "--max-steps", str(STOP),
                    dump=d / "first").check_ok()
    resumed = h.train(3, data, "--epochs", "2", "--resume", str(d / "stopped.ckpt"),
                      "--checkpoint", str(d / "final.ckpt"), dump=d / "resumed").check_ok()
    return first, resumed


def test_a_zstd_copy_trains_the_raw_datasets_samples_through_a_world_size_change(positional,
                                                                                  tmp_path):
    packed = tmp_path / "positional-zstd.rfd"
    # The same inputs as the raw dataset (ranks_harness.make_positional_dataset's), compressed.
    h.convert("npy", "--images", str(positional.with_suffix(".x.npy")), "--labels",
              str(positional.with_suffix(".y.npy")), "--classes", str(h.CLASSES), "--chunk-size",
              h.CHUNK_SIZE, "--compress", "zstd", "-o", str(packed))
    assert packed.stat().st_size < positional.stat().st_size
    raw_first, raw_resumed = run_2_then_3(positional, tmp_path / "raw")
    z_first, z_resumed = run_2_then_3(packed, tmp_path / "zstd")
    assert z_first.orders == raw_first.orders
    assert z_resumed.orders == raw_resumed.orders
    a, b = h.read_checkpoint(tmp_path / "raw/final.ckpt"), h.read_checkpoint(tmp_path /
                                                                             "zstd/final.ckpt")
    assert (a.epoch, a.next_sample, a.world_size) == (b.epoch, b.next_sample, b.world_size)
    # The weights, the optimizer and the position, byte for byte: the checkpoints differ at most
    # where they name the dataset.
    assert (without_dataset_id(tmp_path / "raw/final.ckpt") ==
            without_dataset_id(tmp_path / "zstd/final.ckpt"))
