"""The examples (examples/*.py) run as programs, on the CPU: torch_train.py learns and resumes bit
for bit, torch_ddp.py runs 2 gloo ranks in step and resumes their checkpoint at 1 (torch_tokens.py:
test_torch_tokens.py)."""

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import convert, torchrun

torch = pytest.importorskip("torch")

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SAMPLES, BATCH, STEPS, RESUME_AT = 320, 16, 30, 13  # 20 batches an epoch: the run crosses one


def run(*args: str, timeout: int = 60) -> str:
    """Runs a command with this interpreter's environment (ctest's PYTHONPATH and
    RINGFEED_CONVERT); returns its stdout, failing the test with both streams on a non-zero exit."""
    done = subprocess.run(list(args), capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, \
        f"{' '.join(args)}: exit {done.returncode}\n{done.stdout}{done.stderr}"
    return done.stdout


def train(*args: str) -> str:
    return run(sys.executable, str(EXAMPLES / "torch_train.py"), *args)


def step_losses(out: str) -> dict:
    return {int(s): float(v) for s, v in re.findall(r"^step (\d+): loss (\S+)", out, re.M)}


@pytest.fixture(scope="module")
def images(tmp_path_factory) -> str:
    """A learnable 3x8x8 dataset of 10 classes: class c is a bright 2x2 block at a place of its
    own, over noise. 4 KiB chunks of 21 samples: an epoch spans several shuffle windows."""
    rng = np.random.default_rng(3)
    y = (np.arange(SAMPLES) * 7 % 10).astype(np.uint8)
    x = rng.integers(0, 64, (SAMPLES, 3, 8, 8)).astype(np.uint8)
    for c in range(10):
        r, q = divmod(c, 4)
        x[y == c, :, 2 * r:2 * r + 2, 2 * q:2 * q + 2] += 160
    return convert(tmp_path_factory.mktemp("examples") / "images.rfd", x, y, "--chunk-size", "4KiB")


@pytest.fixture(scope="module")
def uninterrupted(images, tmp_path_factory) -> tuple:
    """STEPS steps in one run: (stdout, checkpoint path)."""
    ckpt = tmp_path_factory.mktemp("whole") / "whole.pt"
    out = train("--data", images, "--test", images, "--epochs", "2", "--steps", str(STEPS),
                "--batch-size", str(BATCH), "--device", "cpu", "--threads", "1", "--io",
                "buffered", "--print-every", "1", "--checkpoint", str(ckpt))
    return out, ckpt


def common(images: str, *more: str) -> list:
    return ["--data", images, "--epochs", "2", "--batch-size", str(BATCH), "--device", "cpu",
            "--threads", "1", "--io", "buffered", "--print-every", "1", *more]


def test_torch_train_loss_goes_down(uninterrupted):
    out, _ = uninterrupted
    losses = step_losses(out)
    assert sorted(losses) == list(range(1, STEPS + 1))
    last = np.mean([losses[s] for s in range(STEPS - 4, STEPS + 1)])
    assert last < 0.25 * losses[1], out
    epochs = re.findall(r"^epoch (\d)(?: \(stopped at step (\d+)\))?: loss \S+, train accuracy "
                        rf"\S+%, [\d,]+ samples/s, test accuracy (\S+)% \({SAMPLES} samples\)$",
                        out, re.M)
    assert [e[:2] for e in epochs] == [("0", ""), ("1", str(STEPS))], out
    assert float(epochs[-1][2]) >= 90, out


# Issue 26, item 7: --steps 60 stopped at 26, the end of the default single epoch. --steps alone
# trains as many epochs as it takes.
def test_torch_train_steps_alone_cross_epochs(images):
    out = train("--data", images, "--steps", "45", "--batch-size", str(BATCH), "--device", "cpu",
                "--threads", "1", "--io", "buffered")
    assert out.rstrip().splitlines()[-1].startswith("45 steps;"), out
    assert re.findall(r"^epoch (\d)", out, re.M) == ["0", "1", "2"], out


def test_torch_train_resume_equals_uninterrupted_run_bit_for_bit(images, uninterrupted, tmp_path):
    whole_out, whole_ckpt = uninterrupted
    ckpt = tmp_path / "part.pt"
    first = train(*common(images, "--steps", str(RESUME_AT), "--checkpoint", str(ckpt)))
    assert f"epoch 0 (stopped at step {RESUME_AT})" in first
    second = train(*common(images, "--steps", str(STEPS), "--checkpoint", str(ckpt),
                           "--resume", str(ckpt)))
    assert f"resumed {ckpt}: step {RESUME_AT}, epoch 0 at sample {RESUME_AT * BATCH}" in second
    # The same batches: every step's loss as the uninterrupted run's, printed to 7 digits ...
    assert {**step_losses(first), **step_losses(second)} == step_losses(whole_out)
    # ... and the same parameters, optimizer state and loader position, bit for bit.
    whole, resumed = torch.load(whole_ckpt), torch.load(ckpt)
    assert whole["step"] == resumed["step"] == STEPS
    assert whole["loader"] == resumed["loader"]
    for name, value in whole["model"].items():
        assert torch.equal(value, resumed["model"][name]), name
    for key, state in whole["optimizer"]["state"].items():
        assert torch.equal(state["momentum_buffer"],
                           resumed["optimizer"]["state"][key]["momentum_buffer"]), key


def test_torch_train_refuses_token_rows(tmp_path):
    rows = convert(tmp_path / "rows.rfd", np.zeros((10, 33), np.uint16), None)
    done = subprocess.run([sys.executable, str(EXAMPLES / "torch_train.py"), "--data", rows,
                           "--device", "cpu"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr.strip() == f"torch_train: {rows}: uint16 samples are ids, not images"


def test_torch_ddp_two_cpu_ranks_step_together(images, tmp_path):
    try:
        import torch.distributed as dist
        import torch.distributed.run  # noqa: F401
    except ImportError as e:
        pytest.skip(f"torch.distributed.run is unavailable in this torch: {e}")
    if not (dist.is_available() and dist.is_gloo_available()):
        pytest.skip("this torch has no torch.distributed with gloo")
    ckpt = tmp_path / "ddp.pt"
    out = run(*torchrun(2), str(EXAMPLES / "torch_ddp.py"),
              *common(images, "--steps", "12", "--checkpoint", str(ckpt)), timeout=120)
    assert (f"2 ranks on the CPU (gloo), each 10 batches of {BATCH} ({SAMPLES // 2} samples) per "
            "epoch: equal on every rank") in out, out
    steps = dict(re.findall(r"rank (\d) of 2: (\d+) steps", out))
    assert steps == {"0": "12", "1": "12"}, out
    assert f"{12 * BATCH * 2} samples over all ranks" in out
    saved = torch.load(ckpt)["loader"]  # rank 0's: 12 steps are 2 into epoch 1
    assert (saved["rank"], saved["epoch"], saved["position"]) == (0, 1, (12 - 10) * BATCH)

    # Resumed by one rank: it trains the rest of epoch 1 that the 2 ranks left, 320 - 2 * 32.
    more = tmp_path / "more.pt"
    out = run(*torchrun(1), str(EXAMPLES / "torch_ddp.py"),
              *common(images, "--steps", "20", "--resume", str(ckpt), "--checkpoint", str(more)),
              timeout=120)
    assert (f"1 ranks on the CPU (gloo), each 16 batches of {BATCH} (256 samples) per epoch: "
            f"equal on every rank, as ringfeed's rank partition makes them (checked); resumed "
            f"{ckpt} at step 12") in out, out
    assert "rank 0 of 1: 20 steps" in out, out
    saved = torch.load(more)["loader"]
    assert (saved["world_size"], saved["epoch"], saved["position"]) == (1, 1, 8 * BATCH)
    assert saved["stretches"] == [{"world_size": 2, "position": 2 * BATCH}]
