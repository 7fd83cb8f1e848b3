"""examples/tokenize_corpus.py on the CPU: a tiny SentencePiece BPE trained in the test tokenizes a
small corpus, and every document comes back from ringfeed.Loader as the model encodes it, the
end-of-sentence id after it, empty lines skipped. Skipped where sentencepiece is absent."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import ringfeed

spm = pytest.importorskip("sentencepiece")

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "tokenize_corpus.py"

WORDS = ("ring feed reads chunks of tokens from disk while the model trains on the batch before "
         "it every document becomes one record of ids and the loader hands them out as values "
         "and offsets").split()


def corpus(path: Path, lines: int) -> list:
    """Lines whose words follow from their number (so the test is the same every run), a blank
    line among them."""
    text = []
    for i in range(lines):
        text.append(" ".join(WORDS[(i * 7 + j * 3) % len(WORDS)] for j in range(3 + i % 11)))
    text.insert(5, "")
    path.write_text("\n".join(text) + "\n", encoding="utf-8")
    return [t for t in text if t]


def run(*args: str) -> str:
    done = subprocess.run([sys.executable, str(EXAMPLE), *args], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, f"exit {done.returncode}\n{done.stdout}{done.stderr}"
    return done.stdout


def records(path: str) -> list:
    out = []
    for values, offsets, _ in ringfeed.Loader(path, batch_size=7, shuffle="none", device="cpu"):
        v, o = np.from_dlpack(values), np.from_dlpack(offsets)
        out += [v[o[i]:o[i + 1]].tolist() for i in range(len(o) - 1)]
    return out


def test_each_line_is_a_record_of_the_models_ids_and_its_end(tmp_path):
    docs = corpus(tmp_path / "c.txt", 300)
    model = str(tmp_path / "bpe.model")
    out = run(str(tmp_path / "c.txt"), "--train-vocab", "120", "--model", model, "--split",
              "lines", "--compress", "zstd", "--chunk-size", "4KiB", "-o",
              str(tmp_path / "c.rfd"))
    sp = spm.SentencePieceProcessor(model_file=model)
    want = [sp.encode(d) + [sp.eos_id()] for d in docs]
    assert f"wrote {tmp_path / 'c.rfd'}: {len(docs)} documents" in out
    assert records(str(tmp_path / "c.rfd")) == want
    d = ringfeed.Loader(str(tmp_path / "c.rfd"), batch_size=1, device="cpu").dataset
    assert d.record_kind == "tokens" and d.dtype == "uint16" and d.classes == 0


def test_each_file_is_a_record_and_a_trained_model_is_reused(tmp_path):
    corpus(tmp_path / "a.txt", 200)
    (tmp_path / "b.txt").write_text("ring feed reads\n", encoding="utf-8")
    model = str(tmp_path / "bpe.model")
    run(str(tmp_path / "a.txt"), "--train-vocab", "100", "--model", model, "-o",
        str(tmp_path / "t.rfd"))
    run(str(tmp_path / "a.txt"), str(tmp_path / "b.txt"), "--model", model, "--no-eos", "-o",
        str(tmp_path / "f.rfd"))
    sp = spm.SentencePieceProcessor(model_file=model)
    want = [sp.encode(p.read_text(encoding="utf-8")) for p in (tmp_path / "a.txt",
                                                                  tmp_path / "b.txt")]
    assert records(str(tmp_path / "f.rfd")) == want
