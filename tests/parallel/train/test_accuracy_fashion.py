"""Data-parallel training learns as one rank does: Fashion-MNIST (Debian's dataset-fashion-mnist),
2 epochs, 2 ranks at batch B (a step of 2B samples, the gradients averaged) against one rank at
batch 2B, the same seed and learning rate: the final test accuracies within 0.5 points.

Both runs train the same samples in every step, so the comparison tests the gradient mean rather
than luck: shuffled, the two runs' orders differ, and that alone moved the final test accuracy by
0.5 to 1.9 points over four seeds (this model, 2 epochs). So the data is stored in chunks of C =
67 samples (52 KiB: a chunk's size is a multiple of 4 KiB, so no chunk of 784-byte samples holds
64), the order is the stored one (--shuffle none), and B = C: a rank's step is one chunk and the
ranks are dealt alternate chunks (pipeline/order/window_order.h), so step k trains chunks 2k and 2k+1
at 2 ranks as at 1. The test checks that premise from --dump-order too."""

import json
from pathlib import Path

import pytest

import ranks_harness as h

FASHION = Path("/usr/share/datasets/fashion-mnist")
CHUNK = 67
# A smaller CNN than the default (32,64,128 / 256, about 100 s a run here): a run takes about
# 10 s on two cores and still reaches 86% test accuracy in 2 epochs.
MODEL = ["--conv", "8,16", "--hidden", "64"]


@pytest.fixture(scope="module")
def fashion(tmp_path_factory):
    files = {k: FASHION / f"{k}-idx{3 if 'images' in k else 1}-ubyte.gz"
             for k in ("train-images", "train-labels", "t10k-images", "t10k-labels")}
    absent = [str(p) for p in files.values() if not p.exists()]
    if absent:
        pytest.skip(f"Fashion-MNIST is not installed (dataset-fashion-mnist): {absent}")
    root = tmp_path_factory.mktemp("fashion")
    train, test = root / "train.rfd", root / "test.rfd"
    h.convert("idx", "--images", str(files["train-images"]), "--labels",
              str(files["train-labels"]), "--chunk-size", "52KiB", "-o", str(train))
    h.convert("idx", "--images", str(files["t10k-images"]), "--labels",
              str(files["t10k-labels"]), "-o", str(test))
    assert h.read_chunk_index(train)[0].sample_count == CHUNK
    return train, test


def epoch_events(metrics: Path):
    epochs = [e for e in map(json.loads, metrics.read_text().splitlines())
              if e["event"] == "epoch"]
    assert [e["epoch"] for e in epochs] == [1, 2], f"{metrics}: epochs {epochs}"
    return epochs


def test_two_ranks_at_half_batch_reach_one_rank_test_accuracy(fashion, tmp_path):
    train, test = fashion
    common = ["--test", str(test), "--epochs", "2", "--seed", "5", "--lr", "0.01", "--shuffle",
              "none"]
    two = h.train(2, train, *common, "--batch-size", str(CHUNK), "--metrics",
                  str(tmp_path / "two.jsonl"), dump=tmp_path / "two", model=MODEL, window=[],
                  timeout=300).check_ok()
    one = h.train(None, train, *common, "--batch-size", str(2 * CHUNK), "--metrics",
                  str(tmp_path / "one.jsonl"), dump=tmp_path / "one", model=MODEL, window=[],
                  timeout=300).check_ok()
    for e in (1, 2):
        whole = one.orders[0][e]
        for k in range(h.ceil_div(len(whole), 2 * CHUNK)):
            both = set().union(*(o[e][k * CHUNK:(k + 1) * CHUNK] for o in two.orders))
            assert both == set(whole[2 * k * CHUNK:2 * (k + 1) * CHUNK]), f"epoch {e}, step {k}"

    e2, e1 = epoch_events(tmp_path / "two.jsonl"), epoch_events(tmp_path / "one.jsonl")
    a2, a1 = e2[-1]["test_accuracy"], e1[-1]["test_accuracy"]
    # -rP shows this in the ctest log: the measured figures.
    print(f"test accuracy after 2 epochs: 2 ranks x {CHUNK} {100 * a2:.2f}% ({two.seconds:.0f} s),"
          f" 1 rank x {2 * CHUNK} {100 * a1:.2f}% ({one.seconds:.0f} s); train loss "
          f"{[round(e['train_loss'], 4) for e in e2]} vs {[round(e['train_loss'], 4) for e in e1]}")
    assert a1 > 0.8 and a2 > 0.8, "did not learn"
    assert abs(a2 - a1) <= 0.005
    # The same steps up to float rounding: each epoch's mean training loss within 1%.
    for x, y in zip(e2, e1):
        assert x["train_loss"] == pytest.approx(y["train_loss"], rel=0.01), f"epoch {x['epoch']}"
