"""Compressed chunks (format version 2) where the disk is the bound, on real bytes: Fashion-MNIST's
pixels laid out as 3x32x32 (tools/bench/fmnist_cifar.py) and real text as uint16 SentencePiece ids
(make_token_corpus.py's, replicated), each converted raw and with lz4, zstd:1 and zstd:3. Every
comparison cold, interleaved, the order rotating round by round."""

import os
import shutil

from .. import data
from ..context import BENCH
from ..measure import ab_lines, alternations, fmt, median, ratio, read, rotations, train
from ..registry import names, part
from .train import TINY_MODEL

TOKENS = ("none", "zstd:3")
# What every part here reads: the datasets' sizes and codecs (made by the first part to need them).
PREP = {"gb": 8.0, "tok_gb": 8.0, "pixels": "none lz4 zstd:1 zstd:3", "fmnist": "", "tokens": ""}
PREP_TINY = {"gb": 0.004, "tok_gb": 0.002, "pixels": "none zstd:1"}


def on_prepared(name, budget, about, settings, tiny, before=False):
    """Registers a part that reads the prepared datasets: PREP's settings beside its own."""
    return part(name, budget=budget, about=about, before=before, settings=dict(PREP, **settings),
                tiny=dict(PREP_TINY, **tiny))


def tag(codec):
    return codec.replace(":", "")


def path(ctx, what, codec):
    return os.path.join(ctx.work, f"{what}-{tag(codec)}.rfd")


def prepared(ctx, s):
    return all(os.path.exists(path(ctx, "pix", c) + ".complete") for c in names(s.pixels))


@on_prepared("codecs", 480, "the datasets (converted raw, lz4, zstd:1, zstd:3; each conversion "
             "timed), then cold `ringfeed read --order train` of each: delivered and stored GB/s, "
             "the decode threads and their busy share; zstd:3 pixels at 1, 2 and 4 decode threads",
             {"rounds": 3, "threads": "1 2 4"}, {"rounds": 1, "threads": "2"})
def codecs(ctx, s):
    prepare(ctx, s)
    sets = [f"pix-{tag(c)}" for c in names(s.pixels)] + [f"tok-{tag(c)}" for c in TOKENS
                                                 if os.path.exists(path(ctx, "tok", c))]
    rows = {}
    ctx.say("cold, --order train: delivered GB/s, stored GB/s, decode threads, busy share")
    for r, name in rotations(s.rounds, sets):
        run = read(ctx, ctx.after, f"read-{name}-{r}", os.path.join(ctx.work, name + ".rfd"),
                   "--order", "train")
        if run:
            rows.setdefault(name, []).append(run)
            ctx.say(f"round {r} {name}: {line(run)}")
    ctx.figure("read", {k: [x["gb_per_s"] for x in v] for k, v in rows.items()})
    zstd = next((c for c in ("zstd:3", "zstd:1") if c in names(s.pixels)), None)
    for t in names(s.threads) if zstd else []:
        for r in range(1, s.rounds + 1):
            run = read(ctx, ctx.after, f"threads{t}-{r}", path(ctx, "pix", zstd), "--order",
                       "train", "--decode-threads", t)
            if run:
                ctx.say(f"round {r} {zstd} pixels, {t} decode threads: {line(run)}")


def line(run):
    return (f"{run['gb_per_s']:.3f} {run.get('stored_gb_per_s', 0):.3f} "
            f"{run.get('decode_threads', '-')} {run.get('decode_busy_share', 0):.3f}")


def prepare(ctx, s):
    """The pixels and the tokens, converted with each codec; timed, sizes and ratios said."""
    if prepared(ctx, s):
        ctx.say("the datasets: made by an earlier part of this run (or call)")
        return
    fm = data.fmnist_dir(ctx, s.fmnist)
    if not fm:
        ctx.fail("no Fashion-MNIST IDX files (.carry/fmnist: tools/bench/carry.sh fmnist)")
    pixels = os.path.join(ctx.work, "pixels.bin")
    r = ctx.run("fmnist_cifar", [ctx.python_exe, os.path.join(BENCH, "fmnist_cifar.py"), fm,
                                 pixels, "--gb", s.gb])
    if not r.ok:
        ctx.fail(f"fmnist_cifar.py: {r.tail(2)}")
    ctx.say(r.tail(1))
    ids = data.token_ids(ctx, s.tokens)
    tokens = os.path.join(ctx.work, "tokens.bin")
    if ids:
        done, distinct = data.replicate(ids, tokens, s.tok_gb)
        ctx.say(f"tokens: {done:,} uint16 ids ({done * 2 / 1e9:.2f} GB), {distinct:,} "
                "distinct-text ids replicated")
    else:
        ctx.skip("the text", "no .carry/tokens (tools/bench/make_token_corpus.py, carry.sh "
                 "tokens)")
    conv = ctx.after.tool("ringfeed-convert")
    todo = [("pix", c, ["raw", "--records", pixels, "--shape", "3,32,32", "--label", "first"])
            for c in names(s.pixels)]
    if ids:
        todo += [("tok", c, ["raw", "--records", tokens, "--shape", 2048, "--dtype", "uint16",
                             "--label", "none"]) for c in TOKENS]
    sizes = {}
    for what, codec, args in todo:
        out = path(ctx, what, codec)
        source = pixels if what == "pix" else tokens
        r = ctx.run(f"convert-{what}-{tag(codec)}", [conv, *args, "--compress", codec, "-q", "-o",
                                                     out], cold=True)
        if not r.ok:
            ctx.fail(f"convert {what} {codec}: {r.tail(2)}")
        open(out + ".complete", "w").close()
        sizes[what, codec] = os.path.getsize(out)
        ctx.say(f"convert {what} --compress {codec}: {r.seconds:.1f} s, "
                f"{os.path.getsize(source) / r.seconds / 1e9:.2f} GB/s of input, "
                f"{sizes[what, codec]:,} bytes, ratio "
                f"{sizes[what, 'none'] / sizes[what, codec]:.2f}")
    ctx.figure("sizes", {f"{w}-{c}": v for (w, c), v in sizes.items()})
    # the raw pixels again as uncompressed format 2 (codecs-noregress)
    r = ctx.run("recompress-v2", [conv, "recompress", path(ctx, "pix", "none"), "-o",
                                  os.path.join(ctx.work, "pix-v2.rfd"), "--compress", "none",
                                  "--format-version", 2, "-q"])
    if not r.ok:
        ctx.say(f"recompress to format 2 FAILED: {r.tail(1)}")
    for f in (pixels, tokens):
        if os.path.exists(f):
            os.unlink(f)


@on_prepared("codecs-train", 360, "`ringfeed train` (mpirun -np RANKS) one epoch of the raw, lz4 "
             "and zstd:1 pixels, cold, rotated rounds, against the same from the page cache (the "
             "compute bound): samples/s and the share of time waiting for data",
             {"ranks": 2, "rounds": 3, "batch": 256}, {"ranks": 0, "rounds": 1, "batch": 64})
def codecs_train(ctx, s):
    if not prepared(ctx, s):
        prepare(ctx, s)
    ranks = s.ranks if s.ranks <= max(ctx.gpus, 1) or ctx.cpu else 0
    if ranks != s.ranks:
        ctx.say(f"{ctx.gpus} GPU(s): one process instead of {s.ranks} ranks")
    flags = ["--epochs", 1, "--batch-size", s.batch] + (TINY_MODEL.split() if ctx.cpu else [])
    rates = {}
    for r, c in rotations(s.rounds, [c for c in ("none", "lz4", "zstd:1") if c in names(s.pixels)]):
        m = train(ctx, ctx.after, f"train-{tag(c)}-{r}", ["--data", path(ctx, "pix", c), *flags],
                  ranks=ranks, cold=True)
        rates.setdefault(c, []).append(m.last.get("samples_per_s") if m and m.epochs else None)
        ctx.say(f"round {r} pixels {c}: {m.line() if m else 'failed'}")
    data.warm(path(ctx, "pix", "zstd:1"))
    for r in (1, 2):
        m = train(ctx, ctx.after, f"cached-{r}", ["--data", path(ctx, "pix", "zstd:1"), "--io",
                                                   "buffered", *flags], ranks=ranks)
        rates.setdefault("cached zstd:1", []).append(m.last.get("samples_per_s")
                                                     if m and m.epochs else None)
        ctx.say(f"page-cached zstd:1, {r}: {m.line() if m else 'failed'}")
    ctx.figure("samples_per_s", rates)


@part("codecs-memory", budget=240, about="host RSS and GPU memory of one-process training on "
      "each of GBS on disk of zstd:1 pixels (written by ringfeed.DatasetWriter through "
      "fmnist_cifar.py): flat in the dataset's size",
      settings={"gbs": "2 16", "batch": 256, "fmnist": ""},
      tiny={"gbs": str(data.TINY_GB), "batch": 64})
def codecs_memory(ctx, s):
    ctx.extension()
    fm = data.fmnist_dir(ctx, s.fmnist)
    if not fm:
        ctx.fail("no Fashion-MNIST IDX files (.carry/fmnist)")
    for size in map(float, names(s.gbs)):
        out = os.path.join(ctx.work, f"mem-{size}.rfd")
        # zstd:1 stores these pixels about 2.3x smaller: the data's GB for SIZE GB on disk
        r = ctx.run(f"make-mem-{size}", [ctx.python_exe, os.path.join(BENCH, "fmnist_cifar.py"),
                                         fm, out, "--gb", size * 2.3, "--compress", "zstd:1"])
        if not r.ok:
            ctx.say(f"making {out} FAILED: {r.tail(2)}")
            continue
        m = train(ctx, ctx.after, f"mem-{size}", ["--data", out, "--epochs", 1, "--batch-size",
                                                  s.batch, *(TINY_MODEL.split() if ctx.cpu
                                                             else [])], cold=True)
        ctx.say(f"{os.path.getsize(out):,} bytes on disk: {m.line() if m else 'failed'}")
        if m and m.epochs:
            ctx.figure(f"mem_{size}gb", {k: m.last.get(k) for k in ("rss_bytes", "gpu_bytes")})
        os.unlink(out)


@on_prepared("whole-shard", 180, "MosaicML MDS / litdata's way, a whole 64 MB shard compressed and "
             "decompressed into a cache before its first sample, against ringfeed's first batch "
             "and disk space, same bytes, same codec (ringfeed-bench-whole-shard)",
             {"rounds": 3, "codecs": "zstd:1 lz4"}, {"rounds": 1, "codecs": "zstd:1"})
def whole_shard(ctx, s):
    if not ctx.after.has("ringfeed-bench-whole-shard"):
        ctx.skip("whole-shard", f"no ringfeed-bench-whole-shard in {ctx.after.bin}")
        return
    if not prepared(ctx, s):
        prepare(ctx, s)
    for c in names(s.codecs):
        shards = os.path.join(ctx.work, f"shards-{tag(c)}")
        os.makedirs(shards, exist_ok=True)
        cmd = [ctx.after.tool("ringfeed-bench-whole-shard"), "--raw", path(ctx, "pix", "none"),
               "--chunked", path(ctx, "pix", c), "--codec", c, "--work", shards]
        for r in range(0, s.rounds + 1):  # round 0 prepares the shards
            run = ctx.run(f"whole-shard-{tag(c)}-{r}", cmd + (["--prepare"] if r == 0 else []),
                          cold=r > 0)
            for x in run.out.splitlines():
                ctx.say(x)
        shutil.rmtree(shards, ignore_errors=True)


@on_prepared("codecs-noregress", 300, "BEFORE's and AFTER's `ringfeed read` and one-process "
             "`ringfeed train` of the raw (format 1) pixels, and AFTER's of the same as "
             "uncompressed format 2, cold, interleaved (goal >= 0.98)",
             {"rounds": 3, "batch": 256}, {"rounds": 1, "batch": 64}, before=True)
def codecs_noregress(ctx, s):
    if not prepared(ctx, s):
        prepare(ctx, s)
    v2 = os.path.join(ctx.work, "pix-v2.rfd")
    contestants = [(b, path(ctx, "pix", "none"), b.name) for b in ctx.builds]
    if os.path.exists(v2):
        contestants.append((ctx.after, v2, "after-v2"))
    table = {}
    for r, (b, d, label) in alternations(s.rounds, contestants):
        run = read(ctx, b, f"nr-read-{label}-{r}", d, "--order", "train")
        table.setdefault(("read", label), []).append(run["gb_per_s"] if run else None)
        m = train(ctx, b, f"nr-train-{label}-{r}", ["--data", d, "--epochs", 1, "--batch-size",
                                                     s.batch, *(TINY_MODEL.split() if ctx.cpu
                                                                else [])], cold=True)
        table.setdefault(("train", label), []).append(m.last.get("samples_per_s")
                                                      if m and m.epochs else None)
        ctx.say(f"round {r} {label}: read {fmt(table['read', label][-1], '.3f')} GB/s, train "
                f"{fmt(table['train', label][-1])} samples/s")
    ctx.figure("rounds", {f"{k}:{n}": v for (k, n), v in table.items()})
    ctx.figure("after_over_before", ab_lines(ctx, "", table, ",.3f"))
    if os.path.exists(v2):
        for k in ("read", "train"):
            x = ratio(median(table[k, "after-v2"]), median(table[k, "after"]))
            ctx.say(f"{k}: format 2 uncompressed / format 1, after: {fmt(x, '.3f')}")
