"""An error on one rank ends `mpirun -np 2 ringfeed train`: a damaged chunk that only rank 1
reads makes the job exit non-zero within 30 s, rank 1 naming itself, the file and the chunk."""

import re
import shutil
import time

import ranks_harness as h


def test_damaged_chunk_read_by_rank_1_only_ends_job_naming_rank_file_and_chunk(positional,
                                                                             tmp_path):
    flags = ["--epochs", "1", "--batch-size", str(h.BATCH), "--seed", "7"]
    clean = h.train(2, positional, *flags, dump=tmp_path / "clean").check_ok()
    chunks = h.read_chunk_index(positional)

    def chunk_of(sample: int) -> int:
        return next(c.index for c in chunks
                    if c.first_sample <= sample < c.first_sample + c.sample_count)

    # The full chunks are dealt whole to one rank each; a chunk only rank 1 trains on is one
    # only it reads (rank 0 reads its own and the shared ones, from which it trains too).
    read_by_0 = {chunk_of(s) for s in clean.orders[0][1]}
    only_1 = [c for c in dict.fromkeys(chunk_of(s) for s in clean.orders[1][1])
              if c not in read_by_0]
    assert only_1, "rank 1 reads no chunk of its own"
    victim = chunks[only_1[0]]

    damaged = tmp_path / "damaged.rfd"
    shutil.copyfile(positional, damaged)
    with open(damaged, "r+b") as f:  # one byte of one sample, inside the chunk's payload
        f.seek(victim.offset + 100)
        b = f.read(1)
        f.seek(victim.offset + 100)
        f.write(bytes([b[0] ^ 0x40]))

    t0 = time.monotonic()
    run = h.train(2, damaged, *flags, timeout=120)
    seconds = time.monotonic() - t0
    assert run.returncode != 0, f"exit 0 on a damaged chunk\n{run.stdout}{run.stderr}"
    assert seconds < 30, f"the job took {seconds:.1f} s to end"
    line = (rf"^ringfeed train: rank 1 of 2: {re.escape(str(damaged))}: chunk {victim.index} "
            rf"at byte {victim.offset}: checksum mismatch")
    assert re.search(line, run.stderr, re.M), f"no line matching {line!r} in:\n{run.stderr}"
    assert "rank 0 of 2: " + str(damaged) not in run.stderr, "rank 0 read the damaged chunk"
