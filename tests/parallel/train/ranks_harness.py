"""What the end-to-end tests of `mpirun -np N ringfeed train` share: the built programs, a small
dataset whose every sample encodes its own index, a training run (alone or under mpirun) with its
per-rank --dump-order files read back, and a reader of checkpoint files' position fields.

ctest names the build's bin directory in RINGFEED_BIN (ringfeed, ringfeed-convert and the MPI
plugin beside them) and mpirun in MPIEXEC; Open MPI's run-as-root variables come from ctest too.
"""

import os
import shutil
import struct
import subprocess
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence

import numpy as np
import pytest

# The positional dataset: T samples of 1x12x12 uint8, T divisible by neither 2 nor 3 (so both
# world sizes pad), in 8 KiB chunks of 56 samples: 18 chunks, the last one short.
SAMPLES = 1003
SHAPE = (1, 12, 12)
CLASSES = 4
CHUNK_SIZE = "8KiB"
# A model and batch that train an epoch of it in well under a second on one core; a shuffle
# window of 4 chunks, so each rank's epoch spans several windows and a resume lands inside one.
BATCH = 16
MODEL = ["--conv", "4,8", "--hidden", "16"]
WINDOW = ["--shuffle-window", "4"]
# The backend the runs train on: the CPU (MPI for the gradient mean) unless RINGFEED_TEST_DEVICE
# says cuda, as tools/bench/run.py's ranks part does on a machine with a GPU a rank (NCCL).
DEVICE = os.environ.get("RINGFEED_TEST_DEVICE", "cpu")


def bin_dir() -> Path:
    d = os.environ.get("RINGFEED_BIN")
    if not d:
        pytest.skip("RINGFEED_BIN is not set (ctest sets it to the build's bin directory)")
    return Path(d)


def mpiexec() -> str:
    m = os.environ.get("MPIEXEC") or shutil.which("mpirun")
    if not m:
        pytest.skip("no mpirun (MPIEXEC is not set and mpirun is not on PATH)")
    return m


def positional_samples(n: int, shape: Sequence[int]) -> np.ndarray:
    """tests/testing/positional_data.h's pattern: bytes 0-7 of sample i hold i as a little-endian
    uint64, byte k >= 8 holds (i * 31 + k) & 0xff."""
    elems = int(np.prod(shape))
    k = np.arange(elems, dtype=np.int64)
    i = np.arange(n, dtype=np.int64)[:, None]
    x = ((i * 31 + k) & 0xFF).astype(np.uint8)
    x[:, :8] = np.arange(n, dtype="<u8").view(np.uint8).reshape(n, 8)
    return x.reshape((n,) + tuple(shape))


def convert(*args: str) -> None:
    cmd = [str(bin_dir() / "ringfeed-convert"), *args, "-q"]
    done = subprocess.run(cmd, capture_output=True, text=True)
    assert done.returncode == 0, f"{' '.join(cmd)}: {done.stdout}{done.stderr}"


def make_positional_dataset(root: Path) -> Path:
    """SAMPLES positional samples labelled i % CLASSES, as root/positional.rfd."""
    out = root / "positional.rfd"
    x, y = root / "positional.x.npy", root / "positional.y.npy"
    np.save(x, positional_samples(SAMPLES, SHAPE))
    np.save(y, (np.arange(SAMPLES) % CLASSES).astype(np.uint8))
    convert("npy", "--images", str(x), "--labels", str(y), "--classes", str(CLASSES),
            "--chunk-size", CHUNK_SIZE, "-o", str(out))
    return out


# --- the dataset file's chunk index (io/format.h) ---------------------------------------------


@dataclass
class ChunkEntry:
    index: int
    first_sample: int
    offset: int
    stored_bytes: int
    sample_count: int


def read_chunk_index(path: Path) -> List[ChunkEntry]:
    """The chunk index of a one-file dataset: header fields shard_chunks (byte 76) and
    index_offset (byte 88), then 48-byte entries."""
    b = path.read_bytes()
    assert b[:8] == b"RFEEDDS\x1a", f"{path} is not a ringfeed dataset"
    (chunks,) = struct.unpack_from("<I", b, 76)
    (index_offset,) = struct.unpack_from("<Q", b, 88)
    out = []
    for c in range(chunks):
        idx, first, off, stored, count = struct.unpack_from("<4QI", b, index_offset + 48 * c)
        out.append(ChunkEntry(idx, first, off, stored, count))
    return out


# --- checkpoints (model/checkpoint.h, versions 2 to 6: the same fields up to the ranks) -------


@dataclass
class CheckpointPosition:
    seed: int
    epoch: int  # 0-based: the epoch to continue
    next_sample: int  # each rank's position in its part of `epoch`
    step: int
    batch_size: int
    world_size: int
    stretches: List[tuple]
    # A mixture's datasets (version 5): each (epoch, position, drawn); none for one dataset.
    mixture: List[tuple] = field(default_factory=list)


def read_checkpoint(path: Path) -> CheckpointPosition:
    b = Path(path).read_bytes()
    assert b[:8] == b"RFCKPT\0\x1a", f"{path} is not a checkpoint"
    (version,) = struct.unpack_from("<I", b, 8)
    assert version in (2, 3, 4, 5, 6), f"{path}: checkpoint version {version}"  # same fields here
    off = 12 + 4 * 4  # channels, height, width, classes
    (blocks,) = struct.unpack_from("<I", b, off)
    off += 4 + 4 * blocks + 4 + 3 * 4  # conv widths, hidden, lr/momentum/weight decay
    seed, epoch, next_sample, step = struct.unpack_from("<4Q", b, off)
    off += 32
    (batch_size,) = struct.unpack_from("<I", b, off)
    off += 8 + 16  # batch size, order window, dataset id and samples
    world_size, n = struct.unpack_from("<2I", b, off)
    off += 8
    stretches = []
    for _ in range(n):
        stretches.append(struct.unpack_from("<IQ", b, off))
        off += 12
    mixture = []
    if version >= 5:
        off += 20 + 24 + 16 + 4  # optimizer, schedule, augmentation, batch norm
        (datasets,) = struct.unpack_from("<I", b, off)
        off += 4 + (8 if datasets else 0)  # and the steps
        for _ in range(datasets):
            _, _, _, drawn, d_epoch, d_position, d_stretches = struct.unpack_from("<2Qd3QI", b, off)
            off += 8 * 6 + 4 + 12 * d_stretches
            mixture.append((d_epoch, d_position, drawn))
    return CheckpointPosition(seed, epoch, next_sample, step, batch_size, world_size, stretches,
                              mixture)


# --- runs -------------------------------------------------------------------------------------

# An epoch's order as --dump-order writes it: {epoch (1-based): [global sample, ...]}.
Order = Dict[int, List[int]]


def read_order(path: Path) -> Order:
    """One run's order file (a resumed run's file starts with a "# resumed from ..." line)."""
    out: Order = {}
    current: Optional[List[int]] = None
    for line in path.read_text().splitlines():
        if line.startswith("# epoch "):
            epoch = int(line[len("# epoch "):])
            assert epoch not in out, f"{path}: epoch {epoch} twice"
            current = out[epoch] = []
        elif line.startswith("# resumed from "):
            assert not out, f"{path}: a resume after epochs (a file of two runs)"
        else:
            assert current is not None, f"{path}: a sample before the first '# epoch' line"
            current.append(int(line))
    return out


@dataclass
class Run:
    cmd: List[str]
    returncode: int
    stdout: str
    stderr: str
    seconds: float
    order_files: List[Path] = field(default_factory=list)  # per rank, where --dump-order was given
    orders: List[Order] = field(default_factory=list)  # their contents

    def check_ok(self) -> "Run":
        assert self.returncode == 0, (f"{' '.join(self.cmd)} exited {self.returncode} after "
                                      f"{self.seconds:.1f} s\n{self.stdout}\n{self.stderr}")
        return self


def launcher(ranks: Optional[int]) -> List[str]:
    """None: the process alone (a world of one); N: under mpirun with N ranks (on GPUs, skips the
    test where the machine has fewer than N: ringfeed takes one GPU a rank)."""
    if ranks is None:
        return []
    gpus = int(os.environ.get("RINGFEED_TEST_GPUS", "0"))
    if DEVICE != "cpu" and ranks > gpus:
        pytest.skip(f"{ranks} ranks on {gpus} GPUs (RINGFEED_TEST_GPUS): one GPU a rank")
    return [mpiexec(), "--oversubscribe", "-np", str(ranks)]


def train_command(ranks: Optional[int], data: Path, *flags: str,
                  model: Sequence[str] = MODEL, window: Sequence[str] = WINDOW) -> List[str]:
    return [*launcher(ranks), str(bin_dir() / "ringfeed"), "train", "--data", str(data),
            "--device", DEVICE, *model, *window, *flags]


def env_alone() -> Dict[str, str]:
    """The environment without any launcher's variables, so a plain start is a world of one even
    where the tests themselves run under a launcher."""
    prefixes = ("OMPI_COMM_WORLD_", "PMIX_RANK", "PMI_SIZE", "SLURM_PROCID")
    return {k: v for k, v in os.environ.items() if not k.startswith(prefixes)}


def stop(proc: subprocess.Popen) -> None:
    """Ends a run that has to go: SIGTERM first, which mpirun passes on to its ranks (SIGKILL
    would leave them running without it), then SIGKILL after 10 s."""
    proc.terminate()
    try:
        proc.communicate(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()


def train(ranks: Optional[int], data: Path, *flags: str, dump: Optional[Path] = None,
          timeout: float = 120, **kwargs) -> Run:
    """Runs `ringfeed train` to its end and reads back each rank's --dump-order file (PATH alone,
    PATH.rankR with several ranks). kwargs: train_command's."""
    cmd = train_command(ranks, data, *flags, *(["--dump-order", str(dump)] if dump else []),
                        **kwargs)
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env_alone())
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        stop(proc)
        pytest.fail(f"{' '.join(cmd)} still running after {timeout} s")
    run = Run(cmd, proc.returncode, out, err, time.monotonic() - t0)
    if dump is not None and proc.returncode == 0:
        run.order_files = [dump] if not ranks or ranks == 1 else [
            Path(f"{dump}.rank{r}") for r in range(ranks)]
        run.orders = [read_order(p) for p in run.order_files]
    return run


# --- what an epoch over several ranks must be -------------------------------------------------


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def check_full_epoch(parts: List[List[int]], samples: int, what: str) -> None:
    """`parts`: each rank's samples of one epoch. Every rank has ceil(T/N) of them, none twice;
    over the ranks every sample comes once, except that N*ceil(T/N) - T (< N) come twice."""
    n = len(parts)
    per_rank = ceil_div(samples, n)
    for r, p in enumerate(parts):
        assert len(p) == per_rank, f"{what}: rank {r} has {len(p)} samples, want {per_rank}"
        assert len(set(p)) == len(p), f"{what}: rank {r} visits a sample twice"
    counts = Counter(s for p in parts for s in p)
    missing = [s for s in range(samples) if counts[s] == 0]
    assert not missing, f"{what}: {len(missing)} samples never visited, first {missing[:5]}"
    foreign = [s for s in counts if not 0 <= s < samples]
    assert not foreign, f"{what}: sample indices outside the dataset: {foreign[:5]}"
    repeats = sum(counts.values()) - samples
    assert repeats == n * per_rank - samples, f"{what}: {repeats} repeats"
    assert repeats < n
    assert max(counts.values()) <= 2, f"{what}: a sample visited {max(counts.values())} times"
