"""examples/torch_tokens.py on the CPU: the GPT learns from its two demo corpora (byte-level prose
and Python, mixed 0.7 / 0.3), a run of 2N steps and a run of N steps resumed for N more end bit for
bit the same (--data and --weights given, with --doc-attention), and document-aware attention's
mask is block-diagonal causal: from position_ids, against cu_seqlens, on real batches."""

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import ringfeed
from conftest import torchrun

torch = pytest.importorskip("torch")

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
sys.path.insert(0, str(EXAMPLES))
import torch_tokens  # noqa: E402

# A tiny model on short rows: a step takes milliseconds on one thread.
TINY = ["--batch-size", "8", "--seq-len", "32", "--layers", "1", "--d-model", "32", "--heads",
        "2", "--lr", "3e-3", "--warmup", "5", "--device", "cpu", "--threads", "1", "--io",
        "buffered", "--print-every", "1"]
STEPS, HALF = 40, 12


def run(*args: str) -> str:
    done = subprocess.run([sys.executable, str(EXAMPLES / "torch_tokens.py"), *args],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"{' '.join(args)}: exit {done.returncode}\n{done.stdout}" \
                                 f"{done.stderr}"
    return done.stdout


def step_losses(out: str) -> dict:
    return {int(s): float(v) for s, v in re.findall(r"^step (\d+): loss ([\d.]+)", out, re.M)}


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    """STEPS steps on the demo corpora it writes (64 KiB each): (stdout, the corpora)."""
    work = tmp_path_factory.mktemp("gpt")
    out = run("--work", str(work), "--demo-bytes", str(64 << 10), "--steps", str(STEPS), *TINY)
    return out, [str(work / f"{name}-{64 << 10}.rfd") for name in ("prose", "code")]


def test_learns_from_the_demo_mixture(demo):
    out, corpora = demo
    for path in corpora:
        assert re.search(rf"^wrote {re.escape(path)}: [\d,]+ documents, 65,536 byte tokens$", out,
                         re.M), out
    assert re.search(r"^data: .*prose-65536\.rfd \(0\.7\) \+ .*code-65536\.rfd \(0\.3\); "
                     r"end-of-document id 256; rows of 32 \+ 1 tokens", out, re.M), out
    losses = step_losses(out)
    assert sorted(losses) == list(range(1, STEPS + 1)), out
    first = np.mean([losses[s] for s in range(1, 6)])
    last = np.mean([losses[s] for s in range(STEPS - 4, STEPS + 1)])
    assert 5.0 < first < 6.0, out  # about ln 257 = 5.55 from the start
    assert last < first - 1.2, out  # byte-level text: the unigram statistics alone give ~2
    m = re.search(rf"^{STEPS} steps to step {STEPS}: ([\d,]+) tokens/s after the first step; "
                  r"the loader waited for data ([\d.]+)% of the time$", out, re.M)
    assert m and int(m[1].replace(",", "")) > 0, out


def test_resume_equals_uninterrupted_run_bit_for_bit(demo, tmp_path):
    _, corpora = demo
    args = ["--data", *corpora, "--weights", "0.6", "0.4", "--eod-token", "256",
            "--doc-attention", *TINY]
    whole, part = tmp_path / "whole.pt", tmp_path / "part.pt"
    whole_out = run(*args, "--steps", str(2 * HALF), "--checkpoint", str(whole))
    assert "attention: softmax written out with a block-diagonal causal mask" in whole_out or \
        "attention: scaled_dot_product_attention with a block-diagonal causal mask" in whole_out
    first = run(*args, "--steps", str(HALF), "--checkpoint", str(part))
    second = run(*args, "--steps", str(2 * HALF), "--checkpoint", str(part), "--resume")
    assert f"resumed {part} at step {HALF}" in second, second
    # The same batches: every step's loss as the uninterrupted run's, to 7 digits ...
    assert {**step_losses(first), **step_losses(second)} == step_losses(whole_out)
    assert sorted(step_losses(second)) == list(range(HALF + 1, 2 * HALF + 1))
    # ... and the same parameters, optimizer state and loader state, bit for bit.
    a, b = torch.load(whole), torch.load(part)
    assert a["step"] == b["step"] == 2 * HALF
    assert a["loader"] == b["loader"]
    assert a["loader"]["rows"] == 2 * HALF * 8
    for name, value in a["model"].items():
        assert torch.equal(value, b["model"][name]), name
    for key, state in a["optimizer"]["state"].items():
        for k in ("exp_avg", "exp_avg_sq"):
            assert torch.equal(state[k], b["optimizer"]["state"][key][k]), (key, k)


def test_checkpoint_is_never_replaced_by_a_run_that_did_not_start_from_it(tmp_path):
    ckpt = tmp_path / "ck.pt"
    ckpt.write_bytes(b"a checkpoint")
    with pytest.raises(SystemExit) as e:
        torch_tokens.parse_args(["--checkpoint", str(ckpt)])
    assert e.value.code == 2
    with pytest.raises(SystemExit):
        torch_tokens.parse_args(["--resume", "--checkpoint", str(tmp_path / "none.pt")])
    with pytest.raises(SystemExit):
        torch_tokens.parse_args(["--data", "a.rfd", "b.rfd"])  # several datasets, no weights
    assert torch_tokens.parse_args(["--checkpoint", str(ckpt), "--resume"]).resume


def test_two_cpu_ranks_then_resumed_at_one(demo, tmp_path):
    """Under torchrun: 2 gloo ranks each read their own rows of the mixture; rank 0's checkpoint
    resumes at 1 rank (the loader re-splits what the 2 had not taken)."""
    try:
        import torch.distributed as dist
        import torch.distributed.run  # noqa: F401
    except ImportError as e:
        pytest.skip(f"torch.distributed.run is unavailable in this torch: {e}")
    if not (dist.is_available() and dist.is_gloo_available()):
        pytest.skip("this torch has no torch.distributed with gloo")
    _, corpora = demo
    ckpt = tmp_path / "ddp.pt"
    args = ["--data", *corpora, "--weights", "0.7", "0.3", "--eod-token", "256", *TINY]
    done = subprocess.run([*torchrun(2), str(EXAMPLES / "torch_tokens.py"),
                           *args, "--steps", "6", "--checkpoint", str(ckpt)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "batch 8 per rank x 2" in done.stdout and "on cpu x 2" in done.stdout, done.stdout
    saved = torch.load(ckpt)["loader"]
    assert (saved["world_size"], saved["rows"], sum(saved["drawn"])) == (2, 6 * 8, 6 * 8)
    out = run(*args, "--steps", "8", "--checkpoint", str(ckpt), "--resume")
    assert f"resumed {ckpt} at step 6" in out and sorted(step_losses(out)) == [7, 8], out
    assert torch.load(ckpt)["loader"]["world_size"] == 1


# --- Document-aware attention -------------------------------------------------------------------

def segments_mask(cu_seqlens: np.ndarray, rows: int, length: int) -> np.ndarray:
    """Block-diagonal causal from cu_seqlens alone: [rows, length, length], True where query i may
    attend key j of the same row (same segment, j <= i)."""
    seg = np.searchsorted(cu_seqlens, np.arange(rows * length), side="right").reshape(rows,
                                                                                       length)
    i = np.arange(length)
    return (seg[:, :, None] == seg[:, None, :]) & (i[None, :, None] >= i[None, None, :])


def test_document_mask_of_a_row():
    pos = torch.tensor([[0, 1, 2, 0, 1, 0, 0, 1], [0, 1, 2, 3, 4, 5, 6, 7]])
    mask = torch_tokens.document_mask(pos)
    assert mask.shape == (2, 1, 8, 8) and mask.dtype == torch.bool
    want = np.zeros((2, 8, 8), bool)
    for a, e in ((0, 3), (3, 5), (5, 6), (6, 8)):
        want[0, a:e, a:e] = np.tril(np.ones((e - a, e - a), bool))
    want[1] = np.tril(np.ones((8, 8), bool))
    assert np.array_equal(mask[:, 0].numpy(), want)


@pytest.fixture(scope="module")
def documents(tmp_path_factory):
    """80 documents of 1 to 70 ids (rows of 32 cut most and hold several short ones)."""
    rng = np.random.default_rng(7)
    docs = [rng.integers(0, 256, int(rng.integers(1, 70))).astype(np.uint16) for _ in range(80)]
    path = tmp_path_factory.mktemp("docs") / "docs.rfd"
    with ringfeed.DatasetWriter(str(path), records="tokens", dtype="uint16", labels=False) as w:
        w.write_records(np.concatenate(docs), np.cumsum([0] + [len(d) for d in docs]))
    return str(path)


def test_document_mask_is_block_diagonal_causal_on_loader_batches(documents):
    L = 32
    loader = ringfeed.Loader(documents, 8, sequence_length=L, eod_token=256, device="cpu",
                             io="buffered", seed=3)
    batches = 0
    for seq in loader:  # one epoch, its partial last row and smaller last batch included
        batch = torch_tokens.model_batch(seq, L, doc_attention=True, flash=False)
        rows = batch.inputs.shape[0]
        mask = batch.docs.mask[:, 0].numpy()
        want = segments_mask(seq.cu_seqlens.numpy(), rows, L)
        assert np.array_equal(mask, want)
        assert np.array_equal(batch.positions.numpy(), seq.position_ids.numpy())
        # Targets past a row's valid length are ignored, the others are the next tokens.
        lengths = seq.lengths.numpy()
        tokens = seq.tokens.numpy()
        for r in range(rows):
            real = max(int(lengths[r]) - 1, 0)
            assert np.array_equal(batch.targets[r, :real].numpy(), tokens[r, 1:real + 1])
            assert (batch.targets[r, real:] == torch_tokens.IGNORE).all()
        batches += 1
    assert batches >= 3
    assert (lengths < L + 1).any()  # the epoch's partial last row was among them


def causal_reference(q, k, v):
    """Causal softmax attention of one sequence, [T, H, D], written out here."""
    att = torch.einsum("ihd,jhd->hij", q, k) * q.shape[-1] ** -0.5
    t = q.shape[0]
    att = att.masked_fill(~torch.ones(t, t, dtype=torch.bool).tril(), float("-inf"))
    return torch.einsum("hij,jhd->ihd", att.softmax(-1), v)


def sdpa_reference(q, k, v, attn_mask=None, is_causal=False):
    """torch.nn.functional.scaled_dot_product_attention as its documentation defines it (a
    boolean mask: True takes part), for a torch older than 2.0."""
    t = q.shape[-2]
    bias = torch.zeros(t, t, dtype=q.dtype)
    if is_causal:
        bias = bias.masked_fill(~torch.ones(t, t, dtype=torch.bool).tril(), float("-inf"))
    if attn_mask is not None:
        bias = bias.masked_fill(~attn_mask, float("-inf"))
    return ((q @ k.transpose(-2, -1)) * q.shape[-1] ** -0.5 + bias).softmax(-1) @ v


def varlen_reference(q, k, v, cu_q, cu_k, max_q, max_k, causal=False):
    """flash_attn_varlen_func as flash-attn defines it: q, k, v [total, H, D], each segment of
    cu_seqlens its own sequence (causal: each token attends to its segment's earlier ones)."""
    assert causal and cu_q is cu_k and cu_q.dtype == torch.int32 and max_q == max_k
    cu = cu_q.tolist()
    assert max(e - a for a, e in zip(cu, cu[1:])) <= max_q
    return torch.cat([causal_reference(q[a:e], k[a:e], v[a:e]) for a, e in zip(cu, cu[1:])])


@pytest.mark.parametrize("kernel", ["written-out", "sdpa", "flash-varlen"])
def test_document_attention_is_each_documents_own_causal_attention(documents, kernel,
                                                                   monkeypatch):
    """attention() with a batch's documents gives each token what causal attention over its own
    document alone (within its row) gives, through each of the example's three kernels: the
    softmax written out (torch < 2.0), scaled_dot_product_attention with the mask, and flash
    attention's varlen over cu_seqlens (the latter two emulated by their documented definition
    where this torch or machine lacks them)."""
    if kernel == "written-out":
        monkeypatch.delattr(torch.nn.functional, "scaled_dot_product_attention", raising=False)
    elif kernel == "sdpa" and not hasattr(torch.nn.functional, "scaled_dot_product_attention"):
        monkeypatch.setattr(torch.nn.functional, "scaled_dot_product_attention", sdpa_reference,
                            raising=False)
    elif kernel == "flash-varlen":
        monkeypatch.setattr(torch_tokens, "flash_attn_varlen_func", varlen_reference)
    L, B, H, D = 32, 4, 2, 4
    seq = next(iter(ringfeed.Loader(documents, B, sequence_length=L, eod_token=256,
                                    device="cpu", io="buffered", seed=3)))
    batch = torch_tokens.model_batch(seq, L, doc_attention=True, flash=kernel == "flash-varlen")
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(B, L, H, D, generator=g, dtype=torch.float64) for _ in range(3))
    out = torch_tokens.attention(q, k, v, batch.docs)
    assert out.shape == (B, L, H, D)
    cu = seq.cu_seqlens.numpy()
    assert len(cu) > B + 1  # some row holds more than one document
    for a, e in zip(cu[:-1], cu[1:]):
        r, a, e = a // L, a % L, (e - 1) % L + 1
        alone = causal_reference(q[r, a:e], k[r, a:e], v[r, a:e])
        assert torch.allclose(out[r, a:e], alone, atol=1e-12), (r, a, e)
    # Without documents: causal over the whole row.
    plain = torch_tokens.attention(q, k, v, None)
    for r in range(B):
        assert torch.allclose(plain[r], causal_reference(q[r], k[r], v[r]), atol=1e-12)
