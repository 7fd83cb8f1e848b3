"""A rank that its launcher bound to one CPU gets a warning that names the fix: Open MPI's mpirun
binds each rank to one core when it starts 2 ranks or fewer, and ringfeed's reader, copy and
training threads then share that core (13% slower on one H200). `--bind-to none` runs without the
warning, and so does a process started on its own."""

import os
import subprocess

import pytest

import ranks_harness as h

WARNING = "a rank may run on 1 CPU only"


def run(launcher, data):
    cmd = [*launcher, str(h.bin_dir() / "ringfeed"), "train", "--data", str(data), "--device",
           h.DEVICE, *h.MODEL, *h.WINDOW, "--epochs", "1", "--batch-size", str(h.BATCH)]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=h.env_alone())
    assert p.returncode == 0, f"{' '.join(cmd)}: exit {p.returncode}\n{p.stdout}{p.stderr}"
    return p.stdout


def test_a_rank_bound_to_one_core_is_warned_and_bind_to_none_is_not(positional):
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("this process itself has one CPU: nothing to compare")
    mpirun = [h.mpiexec(), "--oversubscribe", "-np", "1"]
    bound = run([*mpirun, "--bind-to", "core"], positional)
    assert WARNING in bound and "--bind-to none" in bound, bound
    assert WARNING not in run([*mpirun, "--bind-to", "none"], positional)
    assert WARNING not in run([], positional)
