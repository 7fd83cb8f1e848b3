"""A run stopped mid-epoch (--max-steps) and resumed (--resume) at the same world size continues
each rank's order exactly and ends bit-identical to the run that was never stopped."""

import pytest

import ranks_harness as h

# Steps an epoch: ceil(ceil(1003 / N) / 16): 32 at 2 ranks, 21 at 3. Stops in the first epoch and
# in the second (where momentum and the epoch's order both have to survive the stop).
STOPS = [(2, 13), (3, 13), (2, 32 + 5), (3, 21 + 11)]


@pytest.mark.parametrize("ranks,stop", STOPS)
def test_resume_at_same_world_size_continues_order_and_ends_bit_identical(
        uninterrupted, positional, tmp_path, ranks, stop):
    full, full_ckpt = uninterrupted.get(ranks)
    steps_per_epoch = h.ceil_div(h.ceil_div(h.SAMPLES, ranks), h.BATCH)
    stop_epoch, steps_in = divmod(stop, steps_per_epoch)
    assert 0 < steps_in, "the stop must fall inside an epoch"
    cut = steps_in * h.BATCH

    stopped_ckpt, end_ckpt = tmp_path / "stopped.ckpt", tmp_path / "end.ckpt"
    first = h.train(ranks, positional, "--epochs", "2", "--batch-size", str(h.BATCH), "--seed",
                    "7", "--checkpoint", str(stopped_ckpt), "--max-steps", str(stop),
                    dump=tmp_path / "first").check_ok()
    pos = h.read_checkpoint(stopped_ckpt)
    assert (pos.epoch, pos.next_sample, pos.step, pos.world_size) == (stop_epoch, cut, stop, ranks)

    # No --seed or --batch-size: the checkpoint's are the run's.
    resumed = h.train(ranks, positional, "--epochs", "2", "--resume", str(stopped_ckpt),
                      "--checkpoint", str(end_ckpt), dump=tmp_path / "resumed").check_ok()
    e = stop_epoch + 1  # --dump-order's epochs count from 1
    for r in range(ranks):
        want_first = {k: v for k, v in full.orders[r].items() if k < e}
        want_first[e] = full.orders[r][e][:cut]
        assert first.orders[r] == want_first, f"rank {r}: the stopped run's order"
        want_resumed = {k: v for k, v in full.orders[r].items() if k > e}
        want_resumed[e] = full.orders[r][e][cut:]
        assert resumed.orders[r] == want_resumed, f"rank {r}: the resumed run's order"
    assert end_ckpt.read_bytes() == full_ckpt.read_bytes()
