"""Every sample exactly once per epoch over the ranks of `mpirun -np N ringfeed train`, read from
each rank's --dump-order file (pipeline/order/window_order.h's partition, end to end); the order a
function of the seed; a run without mpirun is one rank writing the plain --dump-order file; and
--partition node keeps each machine's chunks from epoch to epoch."""

import json
import struct

import pytest

import ranks_harness as h


@pytest.mark.parametrize("ranks", [2, 3])
def test_each_epoch_visits_every_sample_once_over_the_ranks(uninterrupted, ranks):
    run, _ = uninterrupted.get(ranks)
    assert len(run.orders) == ranks
    for r, order in enumerate(run.orders):
        assert sorted(order) == [1, 2], f"rank {r}'s epochs: {sorted(order)}"
    for epoch in (1, 2):
        h.check_full_epoch([o[epoch] for o in run.orders], h.SAMPLES,
                           f"{ranks} ranks, epoch {epoch}")
    # Shuffled afresh each epoch, and each rank's part differs from the others'.
    assert run.orders[0][1] != run.orders[0][2]
    assert run.orders[0][1] != run.orders[1][1]


@pytest.mark.parametrize("ranks", [2, 3])
def test_same_seed_repeats_order_files_and_checkpoint_bit_for_bit(uninterrupted, ranks):
    first, first_ckpt = uninterrupted.get(ranks)
    again, again_ckpt = uninterrupted.get(ranks, name="again")
    for r in range(ranks):
        assert again.order_files[r].read_bytes() == first.order_files[r].read_bytes(), (
            f"rank {r}: {again.order_files[r]} differs from {first.order_files[r]}")
    # The CPU backend is deterministic and the gradient mean the same bits on every rank.
    assert again_ckpt.read_bytes() == first_ckpt.read_bytes()


@pytest.mark.parametrize("ranks", [2, 3])
def test_another_seed_gives_another_order(uninterrupted, ranks):
    first, _ = uninterrupted.get(ranks, seed=7)
    other, _ = uninterrupted.get(ranks, seed=8)
    for epoch in (1, 2):
        h.check_full_epoch([o[epoch] for o in other.orders], h.SAMPLES,
                           f"{ranks} ranks, seed 8, epoch {epoch}")
        for r in range(ranks):
            assert other.orders[r][epoch] != first.orders[r][epoch], f"rank {r}, epoch {epoch}"


def test_without_mpirun_runs_as_one_rank_writing_the_plain_order_file(positional, tmp_path):
    dump, metrics = tmp_path / "order", tmp_path / "metrics.jsonl"
    run = h.train(None, positional, "--epochs", "2", "--batch-size", str(h.BATCH), "--seed", "7",
                  "--metrics", str(metrics), dump=dump).check_ok()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["metrics.jsonl", "order"]
    start = json.loads(metrics.read_text().splitlines()[0])
    assert (start["event"], start["world_size"]) == ("start", 1)
    # One rank: every sample once an epoch, no padding; and the batch is not "a rank"'s.
    for epoch in (1, 2):
        h.check_full_epoch([run.orders[0][epoch]], h.SAMPLES, f"alone, epoch {epoch}")
    assert f"batch {h.BATCH}\n" in run.stdout


def dealt_chunks(samples, index):
    """The chunks whose every sample is among `samples` (a machine's epoch): its dealt ones."""
    have = set(samples)
    return {c.index for c in index
            if all(s in have for s in range(c.first_sample, c.first_sample + c.sample_count))}


@pytest.mark.parametrize("partition", ["node", "global"])
def test_the_node_partition_keeps_each_machines_chunks_every_epoch(positional, tmp_path, partition):
    """mpirun -np 4 as two machines of two ranks (--partition node --node-ranks 2): every sample
    once an epoch over the ranks, and the chunks each machine trains whole are the same in every
    epoch; under the global partition they change. The checkpoint records the partition."""
    flags = ["--partition", "node", "--node-ranks", "2"] if partition == "node" else []
    ckpt = tmp_path / "last.ckpt"
    run = h.train(4, positional, "--epochs", "3", "--batch-size", str(h.BATCH), "--seed", "7",
                  "--checkpoint", str(ckpt), *flags, dump=tmp_path / "order").check_ok()
    index = h.read_chunk_index(positional)
    for epoch in (1, 2, 3):
        h.check_full_epoch([o[epoch] for o in run.orders], h.SAMPLES, f"{partition}, {epoch}")
    for machine in (0, 1):
        chunks = [dealt_chunks(run.orders[2 * machine][e] + run.orders[2 * machine + 1][e], index)
                  for e in (1, 2, 3)]
        assert chunks[0], f"machine {machine} trained no chunk whole"
        if partition == "node":
            assert chunks[1] == chunks[0] and chunks[2] == chunks[0], f"machine {machine}"
        else:
            assert chunks[1] != chunks[0] or chunks[2] != chunks[0], f"machine {machine}"
    data = ckpt.read_bytes()
    (version,) = struct.unpack_from("<I", data, 8)
    assert version == 6
