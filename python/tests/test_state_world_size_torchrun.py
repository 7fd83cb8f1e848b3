"""load_state_dict at another world size in real processes (issue 28, item 3): 2 -> 3 -> 2 ranks
under torchrun with gloo, rank 0 alone saving its state and every rank of the next world loading
it; the ranks hand out exactly the batches test_state_world_size.py's one-process emulation does,
so every sample of the epoch reaches exactly one rank once (but the padding it states)."""

import collections
import json
import subprocess
from pathlib import Path

import pytest

from conftest import torchrun
from test_state_world_size import BATCH, SAMPLES, padding_of, resume_2_3_2

torch = pytest.importorskip("torch")

RANK_SCRIPT = Path(__file__).resolve().parent / "state_world_size_rank.py"


def launch(ranks: int, data: str, out: Path, batches: int = 0, state: Path = None) -> dict:
    """One torchrun job of `ranks` ranks; what its rank 0 wrote."""
    cmd = torchrun(ranks) + [str(RANK_SCRIPT),
           "--data", data, "--batch-size", str(BATCH), "--batches", str(batches),
           "--out", str(out)]
    if state is not None:
        cmd += ["--state", str(state)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, f"{' '.join(cmd)}: exit {done.returncode}\n{done.stdout}" \
                                 f"{done.stderr}"
    return json.loads(out.read_text())


def test_2_3_2_ranks_under_torchrun_resume_from_rank_0s_state_alone(datasets, tmp_path):
    try:
        import torch.distributed as dist
        import torch.distributed.run  # noqa: F401
    except ImportError as e:
        pytest.skip(f"torch.distributed.run is unavailable in this torch: {e}")
    if not (dist.is_available() and dist.is_gloo_available()):
        pytest.skip("this torch has no torch.distributed with gloo")
    path = datasets.positional(n=SAMPLES)
    stages = []
    state = None
    for k, (ranks, batches) in enumerate([(2, 5), (3, 7), (2, 0)]):
        done = launch(ranks, path, tmp_path / f"stage{k}.json", batches, state)
        stages.append(done["ranks"])
        state = tmp_path / f"state{k}.json"
        state.write_text(json.dumps(done["state"]))  # rank 0's alone
    assert json.loads(state.read_text())["epoch"] == 1  # the last stage ended the epoch

    emulated = resume_2_3_2(path)
    for stage, expected in zip(stages, emulated[:3]):
        assert [r["seen"] for r in stage] == expected
    assert [tuple(r["counts"]) for r in stages[2]] == [(252, 16)] * 2
    seen = collections.Counter(i for stage in stages for r in stage for i in r["seen"])
    assert set(seen) == set(range(SAMPLES))
    assert seen - collections.Counter(range(SAMPLES)) == padding_of(stages[2][0]["seen"], 503, 2)
