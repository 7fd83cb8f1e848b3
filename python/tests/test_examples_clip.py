"""examples/torch_clip.py as a program, on the CPU: its demo image-caption pairs written as samples
of two fields (the captions tokenized by SentencePiece at conversion), every caption of each epoch
reaching the model once with its own image (the example checks each against the one written for
its sample), and the contrastive model learning (the loss falls; in-batch retrieval well above
chance)."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("sentencepiece")
pytest.importorskip("PIL")

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "torch_clip.py"


def test_every_caption_reaches_the_model_once_an_epoch_with_its_image_and_it_learns(tmp_path):
    done = subprocess.run(
        [sys.executable, str(EXAMPLE), "--work", str(tmp_path), "--demo-samples", "640",
         "--epochs", "4", "--batch-size", "64", "--device", "cpu", "--threads", "2",
         "--print-every", "1", "--check-captions"],
        capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    epochs = re.findall(r"^epoch (\d+): (\d+) samples, (\d+) distinct, captions checked; "
                        r"top-1 retrieval in batch (\S+)", out, re.M)
    assert [int(e[0]) for e in epochs] == [0, 1, 2, 3]
    assert all(int(n) == 640 and int(d) == 640 for _, n, d, _ in epochs)
    losses = [float(v) for v in re.findall(r"^step \d+: loss (\S+)", out, re.M)]
    assert len(losses) == 40
    assert sum(losses[-5:]) / 5 < sum(losses[:5]) / 5 - 0.2  # from ln(64) = 4.16
    assert float(epochs[-1][3]) > 3 / 64  # three times chance
    assert (tmp_path / "demo.model").exists() and (tmp_path / "demo.rfd").exists()
