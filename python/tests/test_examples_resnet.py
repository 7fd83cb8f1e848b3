"""examples/torch_resnet50.py on the CPU (--arch resnet18 --image-size 32), on 40 JPEGs of real
photographs (tools/bench/make_jpeg_set.py, from scikit-image's sample photos) converted by
ringfeed-convert images: each mode prints its JSON line (fed by ringfeed.Loader, compute alone,
the torchvision DataLoader baseline), and a run stopped, checkpointed and resumed ends bit for bit
as the uninterrupted run (model, optimizer, schedule, loader state), across an epoch's end.
Skipped without torch, torchvision, PIL, scikit-image's photographs (python3-skimage, or a copy
named by RINGFEED_PHOTOS: `tools/bench/carry.sh photos`'s, for a machine without scikit-image) or
RINGFEED_CONVERT."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import photographs_or_skip

torch = pytest.importorskip("torch")
pytest.importorskip("torchvision")
pytest.importorskip("PIL")

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "torch_resnet50.py"
COUNT, BATCH = 40, 8  # 5 batches an epoch
SMALL = ["--device", "cpu", "--arch", "resnet18", "--image-size", "32", "--batch", str(BATCH),
         "--threads", "1"]


def run(*args: str, timeout: int = 180) -> dict:
    """Runs the example; returns its JSON line, failing the test with both streams on a non-zero
    exit."""
    done = subprocess.run([sys.executable, str(EXAMPLE), *args], capture_output=True, text=True,
                          timeout=timeout)
    assert done.returncode == 0, \
        f"{' '.join(args)}: exit {done.returncode}\n{done.stdout}{done.stderr}"
    lines = [x for x in done.stdout.splitlines() if x.startswith("{")]
    assert len(lines) == 1, done.stdout
    return json.loads(lines[0])


@pytest.fixture(scope="module")
def jpegs(tmp_path_factory):
    """(the ImageFolder, its dataset) of COUNT photographs of 14 classes."""
    tool = os.environ.get("RINGFEED_CONVERT")
    if not tool:
        pytest.skip("RINGFEED_CONVERT is not set (ctest sets it to the built ringfeed-convert)")
    photographs = photographs_or_skip()
    root = tmp_path_factory.mktemp("resnet")
    folder, data = root / "folder", root / "photos.rfd"
    subprocess.run([sys.executable, str(REPO / "tools/bench/make_jpeg_set.py"), "-o", str(folder),
                    "--count", str(COUNT), "--workers", "1", "--data", photographs], check=True,
                   capture_output=True)
    subprocess.run([tool, "images", str(folder), "-o", str(data), "--chunk-size", "256KiB", "-q"],
                   check=True, capture_output=True)
    return str(folder), str(data)


def test_fed_by_ringfeed(jpegs):
    _, data = jpegs
    r = run("--data", data, *SMALL, "--steps", "3", "--warm", "1", "--io", "buffered")
    assert (r["mode"], r["arch"], r["world_size"], r["steps"], r["step"]) == \
        ("ringfeed", "resnet18", 1, 3, 4)
    assert r["samples_per_s"] > 0 and r["loss"] == r["loss"], r  # a rate, a finite loss
    assert r["stats"]["image_threads"] >= 1 and r["stats"]["records_skipped"] == 0, r
    assert 0 <= r["stats"]["image_wait_seconds"] <= r["stats"]["seconds"], r
    # One rank's timed steps: each wait and launch (no GPU: no stream's times).
    [steps] = r["ranks"]
    assert len(steps["take_ms"]) == len(steps["launch_ms"]) == 3 and "gap_ms" not in steps, r
    assert steps["sums_ms"]["launch"] == pytest.approx(sum(steps["launch_ms"]), abs=0.1), r


def test_compute_alone(jpegs):
    _, data = jpegs
    r = run("--data", data, *SMALL, "--steps", "3", "--warm", "1", "--io", "buffered",
            "--compute-alone")
    assert (r["mode"], r["step"]) == ("compute_alone", 4) and r["samples_per_s"] > 0, r


def test_the_dataloader_baseline(jpegs):
    folder, _ = jpegs
    r = run("--dataloader", folder, *SMALL, "--steps", "3", "--warm", "1", "--workers", "1")
    assert (r["mode"], r["step"], r["stats"]["workers"]) == ("dataloader", 4, 1), r
    assert r["samples_per_s"] > 0, r


def test_the_loaders_options_are_refused_for_the_baseline(jpegs):
    folder, _ = jpegs
    done = subprocess.run([sys.executable, str(EXAMPLE), "--dataloader", folder, *SMALL,
                           "--image-threads", "2"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "--image-threads" in done.stderr, done.stderr


def test_resume_equals_the_uninterrupted_run_bit_for_bit(jpegs, tmp_path):
    _, data = jpegs
    common = ["--data", data, *SMALL, "--warm", "0", "--io", "buffered", "--warmup-steps", "3"]
    whole, part = tmp_path / "whole.pt", tmp_path / "part.pt"
    run(*common, "--steps", "7", "--checkpoint", str(whole))
    run(*common, "--steps", "3", "--checkpoint", str(part))
    r = run(*common, "--steps", "4", "--resume", str(part), "--checkpoint", str(part))
    assert (r["step"], r["resumed"]) == (7, str(part)), r
    a, b = torch.load(whole), torch.load(part)
    # 7 steps of 5-batch epochs: 2 batches into epoch 1.
    assert (a["step"], a["loader"]["epoch"], a["loader"]["position"]) == (7, 1, 2 * BATCH)
    assert a["loader"] == b["loader"] and a["scheduler"] == b["scheduler"]
    for name, value in a["model"].items():
        assert torch.equal(value, b["model"][name]), name
    for key, state in a["optimizer"]["state"].items():
        assert torch.equal(state["momentum_buffer"],
                           b["optimizer"]["state"][key]["momentum_buffer"]), key
