"""One rank of `mpirun -np 2 ringfeed train` killed with SIGKILL mid-epoch: the whole job ends,
non-zero, within 30 s (no rank left waiting in a collective for the dead one), and the last
checkpoint it wrote is whole (a run resumes from it)."""

import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Dict, List, Optional, Tuple

import pytest

import ranks_harness as h

EVERY = 5  # --checkpoint-every: 32 steps an epoch at 2 ranks, so most checkpoints are mid-epoch


def stat_fields(pid: int) -> Optional[List[str]]:
    """/proc/PID/stat's fields after "(comm)" (state, ppid, ..., field 22 the start time at
    index 19), or None where the process is gone. comm may hold spaces: split after its ')'."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat[stat.rindex(")") + 2:].split()


def rank_processes(mpirun_pid: int) -> Dict[int, Tuple[int, str]]:
    """{rank: (pid, start time)} of the ringfeed processes mpirun started: its children, with
    OMPI_COMM_WORLD_RANK in their environment."""
    out = {}
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        f = stat_fields(int(d.name))
        try:
            if f is None or int(f[1]) != mpirun_pid or (d / "comm").read_text() != "ringfeed\n":
                continue
            env = (d / "environ").read_bytes().split(b"\0")
        except OSError:
            continue  # gone meanwhile
        for kv in env:
            if kv.startswith(b"OMPI_COMM_WORLD_RANK="):
                out[int(kv.split(b"=", 1)[1])] = (int(d.name), f[19])
    return out


def alive(process: Tuple[int, str]) -> bool:
    """Whether the process (pid, start time) runs: not gone, not a zombie (exited, not yet
    reaped), and not another process that has since taken its pid."""
    f = stat_fields(process[0])
    return f is not None and f[0] != "Z" and f[19] == process[1]


def wait_for(what: str, ready, proc: subprocess.Popen, seconds: float):
    """ready()'s first true value, polled while the job runs."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        got = ready()
        if got:
            return got
        assert proc.poll() is None, f"the job ended (exit {proc.returncode}) before {what}"
        time.sleep(0.05)
    pytest.fail(f"no {what} after {seconds} s")


def checkpoint_step(path: Path) -> int:
    """The step of the checkpoint at `path`, 0 before there is one."""
    try:
        return h.read_checkpoint(path).step
    except FileNotFoundError:
        return 0


@pytest.mark.parametrize("victim", [1, 0])
def test_killed_rank_ends_job_within_30_s_and_last_checkpoint_resumes(positional, tmp_path,
                                                                     victim):
    ckpt = tmp_path / "run.ckpt"
    cmd = h.train_command(2, positional, "--epochs", "100000", "--batch-size", str(h.BATCH),
                          "--seed", "7", "--checkpoint", str(ckpt), "--checkpoint-every",
                          str(EVERY))
    # Output to files: a pipe nobody reads while the job runs would fill and stall rank 0.
    out, err = tmp_path / "stdout", tmp_path / "stderr"
    with open(out, "w") as o, open(err, "w") as e:
        proc = subprocess.Popen(cmd, stdout=o, stderr=e, env=h.env_alone())
    ranks: Dict[int, Tuple[int, str]] = {}

    def both_ranks():
        found = rank_processes(proc.pid)
        return found if len(found) == 2 else None

    try:
        ranks = wait_for("2 ranks", both_ranks, proc, 60)
        first = wait_for("checkpoint", lambda: checkpoint_step(ckpt), proc, 60)
        # Gone on a bit: three more checkpoints written since the first one seen.
        wait_for("later checkpoint", lambda: checkpoint_step(ckpt) >= first + 3 * EVERY, proc, 60)
        os.kill(ranks[victim][0], signal.SIGKILL)
        killed = time.monotonic()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            pytest.fail(f"mpirun still running 60 s after rank {victim} was killed")
        ended_after = time.monotonic() - killed
        # mpirun ends the other rank (SIGTERM, then SIGKILL) and may exit before the kernel has
        # torn that rank down, which takes a while on a loaded machine. A rank stuck in a
        # collective would never go: 10 s tells the two apart.
        survivor = ranks[1 - victim]
        gone_by = time.monotonic() + 10
        while alive(survivor) and time.monotonic() < gone_by:
            time.sleep(0.05)
        survived = alive(survivor)
    finally:  # whatever failed above: end this test's processes, checked by start time too
        if proc.poll() is None:
            ranks = ranks or rank_processes(proc.pid)
            h.stop(proc)
        for p in ranks.values():
            if alive(p):
                os.kill(p[0], signal.SIGKILL)
    log = f"\n{out.read_text()}{err.read_text()}"
    assert proc.returncode != 0, f"mpirun exited 0 after rank {victim} was killed{log}"
    assert ended_after < 30, f"the job took {ended_after:.1f} s to end{log}"
    assert not survived, f"rank {1 - victim} outlived mpirun by 10 s{log}"

    # The checkpoint is whole: a run resumes from it and trains on.
    pos = h.read_checkpoint(ckpt)
    assert pos.world_size == 2 and pos.step % EVERY == 0 and pos.step >= first + 3 * EVERY
    after = tmp_path / "after.ckpt"
    run = h.train(2, positional, "--epochs", "100000", "--resume", str(ckpt), "--checkpoint",
                  str(after), "--max-steps", str(pos.step + 3)).check_ok()
    assert f"resumed from {ckpt}" in run.stdout
    assert h.read_checkpoint(after).step == pos.step + 3
