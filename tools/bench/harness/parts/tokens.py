"""Packed token sequences: their tests, the GPU's batches against the CPU's, the packing alone
(ringfeed-bench-pack, builds interleaved), start-up and tokens delivered cold against the disk,
nanoGPT's memmap loader and a Megatron-style loader (tokens_bench.py), and a GPT in PyTorch fed by
a mixture of two corpora against its compute alone (examples/torch_tokens.py)."""

import os
import shlex
import statistics

from .. import data
from ..context import BENCH, ROOT
from ..measure import gtest, load_json, pytest, rotations
from ..registry import names, part

CORPORA = {"corpora_gb": 10.0, "mid_tokens": 1e9, "tokens": ""}
CORPORA_TINY = {"corpora_gb": 0.002, "mid_tokens": 2e5}


def corpora(ctx, s, *extra):
    """tokens_bench.py's corpora (1e6, MID_TOKENS and CORPORA_GB of the real text's ids) under
    WORK/tokens, or the whole bench with EXTRA; returns the run."""
    source = data.token_source(ctx, s.tokens)
    if not source:
        ctx.fail("no .carry/tokens/tokens.rfd (tools/bench/make_token_corpus.py; carry.sh tokens)")
    return ctx.run("tokens_bench" + ("-corpora" if "--corpora-only" in extra else ""), [
        ctx.python_exe, os.path.join(BENCH, "tokens_bench.py"), "--source", source, "--work",
        os.path.join(ctx.work, "tokens"), "--json", ctx.log_path("tokens", ".json"),
        "--big-gb", s.corpora_gb, "--mid-tokens", s.mid_tokens, "--device", ctx.device,
        *(["--warm"] if ctx.cpu else []), *extra])


def pack_corpus(ctx, tokens, compress):
    path = os.path.join(ctx.work, f"pack-{int(tokens)}-{compress}.rfd")
    if not os.path.exists(path):
        r = ctx.run("pack-make", [ctx.after.tool("ringfeed-bench-pack"), "--make", path,
                                  "--tokens", int(tokens), "--compress", compress, "--rounds", 0])
        if not r.ok:
            ctx.fail(f"ringfeed-bench-pack --make: {r.tail(2)}")
    return path


@part("tokens", budget=480, about="the packed sequences' tests (pytest and C++), every GPU batch "
      "against the CPU's (tokens_gpu_equal.py), the packing alone from the page cache "
      "(ringfeed-bench-pack), tokens_bench.py (start-up cold on 1e6 and 1e9 tokens and 10 GB, "
      "tokens delivered cold against the disk x the codec ratio, memmap and Megatron-style "
      "loaders), and the first batch's timeline",
      settings=dict(CORPORA, pack_tokens=5e8, pack_seconds=4.0, pack_rounds=2, batches="16 64",
                    args="", pytest=True),
      tiny=dict(CORPORA_TINY, pack_tokens=2e5, pack_seconds=0.2, pack_rounds=1, batches="16",
                args="--rounds 1 --seconds 0.2 --rate-batches 16", pytest=False))
def tokens(ctx, s):
    ctx.extension()
    if s.pytest:
        pytest(ctx, "pytest-sequences", [os.path.join(ROOT, "python/tests", f) for f in
                                         ("test_sequences.py", "test_records.py")])
    for t in ("pipeline_sequence_loader_test", "pipeline_cuda_sequence_loader_test"):
        if os.path.exists(os.path.join(ctx.after.tests, t)):
            gtest(ctx, os.path.join(ctx.after.tests, t))
    if ctx.gpus and ctx.torch_version:
        r = ctx.run("gpu-equal", [ctx.python_exe, os.path.join(BENCH, "tokens_gpu_equal.py"),
                                  "--work", ctx.work])
        for line in r.out.splitlines()[-6:]:
            ctx.say(line)
    else:
        ctx.skip("the GPU's batches against the CPU's", "no GPU" if not ctx.gpus else "no torch")
    if ctx.after.has("ringfeed-bench-pack"):
        corpus = pack_corpus(ctx, s.pack_tokens, "lz4")
        data.warm(corpus)
        for b in names(s.batches):
            out = ctx.log_path(f"pack-b{b}", ".json")
            r = ctx.run(f"pack-b{b}", [ctx.after.tool("ringfeed-bench-pack"), "--data", corpus,
                                       "--device", ctx.device, "--batch", b, "--rounds",
                                       s.pack_rounds, "--seconds", s.pack_seconds, "--warmup",
                                       min(3, s.pack_seconds), "--json", out])
            if r.ok:
                j = ctx.figure(f"pack_b{b}", load_json(out))
                ctx.say(f"packing alone, {b} rows: {j['median_tokens_per_s'] / 1e6:,.0f}M tokens/s"
                        f", the packing thread {j['median_packing_tokens_per_busy_s'] / 1e6:,.0f}M "
                        "tokens per busy second")
    else:
        ctx.skip("the packing alone", f"no ringfeed-bench-pack in {ctx.after.bin}")
    if not ctx.torch_version:
        ctx.skip("tokens_bench.py's rates", "no torch; the corpora alone")
        r = corpora(ctx, s, "--corpora-only")
        ctx.say(f"corpora: {r.tail(1) if r.ok else r.why()}")
        return
    r = corpora(ctx, s, *shlex.split(s.args))
    for line in r.out.splitlines():
        if line.startswith(("round", "source", "corpora")):
            ctx.say(line)
    if os.path.exists(ctx.log_path("tokens", ".json")):
        ctx.figure("tokens_bench", load_json(ctx.log_path("tokens", ".json")))
    if ctx.after.has("ringfeed-bench-pack"):
        for c in ("c1e6", "c1e9"):  # where a first batch's time goes, cold
            r = ctx.run(f"first-{c}", [ctx.after.tool("ringfeed-bench-pack"), "--data",
                                       os.path.join(ctx.work, "tokens", f"{c}.rfd"), "--device",
                                       ctx.device, "--first-batch", 3, "--rounds", 0, "--trace",
                                       ctx.log_path(f"first-{c}", ""),
                                       *(["--warm"] if ctx.cpu else [])])
            for line in r.out.splitlines()[-4:]:
                ctx.say(f"{c} {line}")


@part("pack", budget=240, about="the packing alone on the CPU (ringfeed-bench-pack, device cpu, "
      "int64, rows of 2049, batch 16), corpus in the page cache: BEFORE's loader, AFTER's at "
      "pack_threads 1 and N, and packed the GPU's way (--narrow); tokens/s and the packing "
      "thread's tokens per busy second, rotated rounds",
      settings={"tokens": 2e8, "compress": "none", "threads": 2, "rounds": 3, "seconds": 4.0,
                "warmup": 4.0},
      tiny={"tokens": 2e5, "rounds": 1, "seconds": 0.1, "warmup": 0.1})
def pack(ctx, s):
    if not ctx.after.has("ringfeed-bench-pack"):
        ctx.skip("pack", f"no ringfeed-bench-pack in {ctx.after.bin}")
        return
    corpus = pack_corpus(ctx, s.tokens, s.compress)
    data.warm(corpus)
    variants = {"after-1": (ctx.after, ["--pack-threads", 1]),
                f"after-{s.threads}": (ctx.after, ["--pack-threads", s.threads]),
                "after-narrow": (ctx.after, ["--pack-threads", 1, "--narrow"])}
    if ctx.before and ctx.before.has("ringfeed-bench-pack"):
        variants = {"before": (ctx.before, []), **variants}
    docs = {}
    for r, v in rotations(s.rounds, variants):
        b, flags = variants[v]
        out = ctx.log_path(f"{v}-{r}", ".json")
        run = ctx.run(f"{v}-{r}", [b.tool("ringfeed-bench-pack"), "--data", corpus, "--device",
                                   "cpu", "--rounds", 1, "--seconds", s.seconds, "--warmup",
                                   s.warmup, "--json", out, *flags])
        if run.ok:
            docs.setdefault(v, []).append(load_json(out))
    ctx.say(f"{'variant':14} {'M tokens/s':>11} {'packing thread: M tokens per busy s':>36}")
    for v, ds in docs.items():
        rate = statistics.median(d["median_tokens_per_s"] for d in ds) / 1e6
        busy = statistics.median(d["median_packing_tokens_per_busy_s"] for d in ds) / 1e6
        ctx.figure(v, {"tokens_per_s": rate * 1e6, "packing_tokens_per_busy_s": busy * 1e6})
        ctx.say(f"{v:14} {rate:11.0f} {busy:36.0f}")


@part("gpt", budget=420, gpus=1, torch=True, about="a 110M-parameter GPT (bf16, rows of 1024, "
      "batch 16 a GPU) fed by a mixture of two corpora (0.7 / 0.3) against the same model on one "
      "batch already on the GPU, for each GPU count, rounds interleaved "
      "(examples/torch_tokens.py)",
      settings=dict(CORPORA, model="--layers 12 --d-model 768 --heads 12 --seq-len 1024 "
                    "--batch-size 16 --vocab 32000", steps=150, rounds=3, nprocs="1"))
def gpt(ctx, s):
    ctx.extension()
    work = os.path.join(ctx.work, "tokens")
    mix = [os.path.join(work, "c1e9.rfd"), os.path.join(work, "cbig.rfd")]
    if not all(os.path.exists(m) for m in mix):
        r = corpora(ctx, s, "--corpora-only")
        if not r.ok:
            ctx.fail(f"the corpora: {r.why()}")
    figures = {}
    for r in range(1, s.rounds + 1):
        for g in names(s.nprocs):
            if int(g) > ctx.gpus:
                ctx.skip(f"{g} GPUs", f"{ctx.gpus} here")
                continue
            for label, extra in (("fed", []), ("compute", ["--compute-only"])):
                cold = label == "fed"
                run = ctx.run(f"{label}-{g}gpu-{r}", [
                    *ctx.torchrun(int(g)), os.path.join(ROOT, "examples", "torch_tokens.py"),
                    "--data", *mix, "--weights", 0.7, 0.3, *shlex.split(s.model), "--steps",
                    s.steps, "--dtype", "bf16", "--device", "cuda", "--print-every", 50, *extra],
                    cold=cold)
                line = next((x for x in reversed(run.out.splitlines()) if "steps to step" in x),
                            run.why())
                figures.setdefault(f"{label}-{g}gpu", []).append(line)
                ctx.say(f"{label}-{g}gpu-{r}: {line}")
    ctx.figure("runs", figures)
