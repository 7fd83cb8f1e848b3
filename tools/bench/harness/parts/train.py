"""`ringfeed train` against its bounds: the streaming epoch against the reader and the model alone,
the two modes and their memory, the model alone per batch, and a traced epoch's timeline. With
--before every round runs both builds, the one that goes first alternating, and the figures are
compared after/before."""

import os

from .. import data
from ..context import BENCH
from ..measure import ab_lines, alternations, compute, fmt, load_json, median, ratio, read, train
from ..registry import names, part

TINY_MODEL = "--conv 4,8 --hidden 16"  # --cpu's model: the plumbing, not the figures


def model_flags(ctx, s):
    return (TINY_MODEL.split() if ctx.cpu else []) + s.flags.split()


@part("stream", budget=480, about="rounds of the reader alone (stored and training order), the "
      "model alone and a cold streaming epoch, and a page-cached epoch at a smaller batch against "
      "the model alone there: the epoch over min(reader, compute)",
      settings={"gb": 16.0, "rounds": 3, "batch": 256, "small_batch": 128, "orders": "stored train",
                "flags": ""},
      tiny={"gb": data.TINY_GB, "rounds": 1, "batch": 64, "small_batch": 32, "orders": "train"})
def stream(ctx, s):
    big = data.synthetic(ctx, s.gb, seed=1)
    samples = data.samples_in(s.gb)
    flags = model_flags(ctx, s)
    have_compute = ctx.gpus > 0
    if not have_compute:
        ctx.skip("the model alone (ringfeed-bench-compute)", "no GPU")
    rows = {}
    for r, b in alternations(s.rounds, ctx.builds):
        row = rows.setdefault((b.name, r), {})
        for order in names(s.orders):
            run = read(ctx, b, f"read-{order}-{b.name}-{r}", big, "--order", order)
            if run:
                row[f"reader_{order}_gb_per_s"] = run["gb_per_s"]
                row[f"reader_{order}_samples_per_s"] = samples / run["seconds"]
        if have_compute:
            row["compute"] = compute(ctx, b, f"compute-{b.name}-{r}", s.batch, "--bf16", "on",
                                     "--graph", "on", steps=max(100, samples // s.batch // 2))
            row["compute_small"] = compute(ctx, b, f"compute-b{s.small_batch}-{b.name}-{r}",
                                           s.small_batch, "--bf16", "on", "--graph", "on",
                                           steps=max(100, samples // s.small_batch // 2))
        m = train(ctx, b, f"stream-{b.name}-{r}", ["--data", big, "--epochs", 1, "--batch-size",
                                                   s.batch, *flags], cold=True)
        if m and m.epochs:
            e = m.last
            row.update(streaming=e["samples_per_s"], waited=e["data_wait_share"],
                       disk_gb_per_s=e.get("disk_gb_per_s"), gpu_bytes=e.get("gpu_bytes"),
                       peak_rss_bytes=m.end.get("peak_rss_bytes"),
                       first_batch_ms=m.end.get("first_batch_ms"))
            bound = min(x for x in (row.get("reader_train_samples_per_s"), row.get("compute"))
                        if x) if row.get("reader_train_samples_per_s") else None
            row["over_bound"] = ratio(row["streaming"], bound)
            ctx.say(f"round {r} {b.name}: reader {fmt(row.get('reader_stored_gb_per_s'), '.2f')}"
                    f" GB/s stored order, {fmt(row.get('reader_train_gb_per_s'), '.2f')} training "
                    f"order; compute {fmt(row.get('compute'))}; streaming {m.line()}, first "
                    f"batch {fmt(row['first_batch_ms'], '.0f')} ms: "
                    f"{fmt(row['over_bound'], '.3f')} of min(reader, compute)")
        data.warm(big)
        m = train(ctx, b, f"cached-{b.name}-{r}", ["--data", big, "--epochs", 1, "--batch-size",
                                                   s.small_batch, "--io", "buffered", *flags])
        if m and m.epochs:
            row["cached_small"] = m.last["samples_per_s"]
            row["cached_waited"] = m.last["data_wait_share"]
            ctx.say(f"round {r} {b.name}: page-cached epoch at batch {s.small_batch}: {m.line()}"
                    f"; {fmt(ratio(row['cached_small'], row.get('compute_small')), '.3f')} of "
                    "the model alone")
    summarize(ctx, rows, ("reader_stored_gb_per_s", "reader_train_gb_per_s", "compute",
                          "streaming", "over_bound", "cached_small", "compute_small"))


def summarize(ctx, rows, keys):
    """Medians per build, and after/before where there are two."""
    per = {}
    for (build, _), row in rows.items():
        for k in keys:
            per.setdefault((k, build), []).append(row.get(k))
    ctx.figure("rounds", {f"{b}-{r}": row for (b, r), row in rows.items()})
    medians = {f"{k}:{b}": median(v) for (k, b), v in per.items()}
    ctx.figure("medians", medians)
    for b in dict.fromkeys(b for _, b in per):
        known = [k for k in keys if medians.get(f"{k}:{b}") is not None]
        ctx.say(f"{b}, medians: " + ", ".join(f"{k} {fmt(medians[f'{k}:{b}'], ',.3f')}"
                                               for k in known))
    if ctx.before:
        ctx.figure("after_over_before", ab_lines(ctx, "", {(k, b): v for (k, b), v in
                                                           per.items()}, ",.3f"))


@part("modes", budget=300, about="the managed mode against streaming on the same cold files "
      "(load, epoch, GPU memory and host RSS at two sizes), and the naive pread -> copy -> step "
      "loop (ringfeed-bench-naive)",
      settings={"gb": 16.0, "small_gb": 1.0, "batch": 256, "naive_seconds": 20.0, "flags": ""},
      tiny={"gb": data.TINY_GB, "small_gb": data.TINY_GB / 2, "batch": 64, "naive_seconds": 2.0})
def modes(ctx, s):
    flags = model_flags(ctx, s)
    sizes = (("small", data.synthetic(ctx, s.small_gb, seed=2)),
             ("big", data.synthetic(ctx, s.gb, seed=1)))
    variants = [("streaming", [])]
    if ctx.gpus:
        variants += [("managed", ["--mode", "managed"]),
                     ("managed-prefetch", ["--mode", "managed", "--managed-prefetch", 4,
                                           "--managed-advise"])]
    else:
        ctx.skip("managed mode", "no GPU")
    res = {}
    for size, path in sizes:
        for mode, extra in variants:
            m = train(ctx, ctx.after, f"{mode}-{size}", ["--data", path, "--epochs", 1,
                                                          "--batch-size", s.batch, *extra,
                                                          *flags], cold=True)
            if not (m and m.epochs):
                continue
            e = m.last
            res[f"{mode}_{size}"] = {
                "setup_seconds": m.start.get("setup_seconds"), "samples_per_s": e["samples_per_s"],
                "epoch_seconds": e["seconds"], "gpu_bytes": e.get("gpu_bytes"),
                "peak_rss_bytes": m.end.get("peak_rss_bytes"),
                "first_batch_ms": m.end.get("first_batch_ms")}
            ctx.say(f"{mode}, {size} ({os.path.getsize(path) / 1e9:.2f} GB): set up in "
                    f"{m.start.get('setup_seconds', 0):.1f} s, {m.line()}, peak RSS "
                    f"{m.end.get('peak_rss_bytes', 0) / 2**20:.0f} MiB")
    ctx.figure("modes", res)
    st, ma = res.get("streaming_big"), res.get("managed_big")
    if st and ma:
        ctx.say(f"managed / streaming, big: {ma['samples_per_s'] / st['samples_per_s']:.3f} "
                f"(epoch); load + first epoch {ma['setup_seconds'] + ma['epoch_seconds']:.1f} s "
                f"against {st['epoch_seconds']:.1f} s")
    if not ctx.gpus:
        ctx.skip("the naive loop (ringfeed-bench-naive)", "no GPU")
        return
    out = ctx.log_path("naive", ".json")
    r = ctx.run("naive", [ctx.after.tool("ringfeed-bench-naive"), "--data", sizes[1][1],
                          "--batch-size", s.batch, "--seconds", s.naive_seconds, "--json", out],
                cold=True)
    if r.ok:
        n = ctx.figure("naive", load_json(out))
        ctx.say(f"naive pread -> copy -> step: {n['samples_per_s']:,.0f} samples/s (reading "
                f"{100 * n['read_s'] / n['seconds']:.0f}% of the time); "
                f"{fmt(ratio(n['samples_per_s'], (st or {}).get('samples_per_s')), '.3f')} "
                "of streaming")


@part("compute", budget=240, gpus=1, about="the model alone (ringfeed-bench-compute) at batches "
      "128, 256 and 1024 for each flag set, builds interleaved; ncu's per-kernel split of a step",
      settings={"batches": "128 256 1024", "variants": "--bf16 on --graph on;--bf16 on --graph "
                "off;--tf32 on --graph on", "steps": 300, "rounds": 1, "ncu": True})
def compute_part(ctx, s):
    table = {}
    for r, b in alternations(s.rounds, ctx.builds):
        for v in s.variants.split(";"):
            for batch in names(s.batches):
                x = compute(ctx, b, f"compute-{b.name}-{v.replace(' ', '')}-b{batch}-{r}", batch,
                            *v.split(), steps=s.steps)
                table.setdefault((f"{v} batch {batch}", b.name), []).append(x)
                ctx.say(f"{b.name} round {r}: {v}, batch {batch}: {fmt(x)} samples/s")
    ctx.figure("samples_per_s", {f"{k}:{b}": v for (k, b), v in table.items()})
    if ctx.before:
        ctx.figure("after_over_before", ab_lines(ctx, "compute", table))
    if s.ncu:
        if not ctx.run("ncu-version", ["ncu", "--version"], quiet=True).ok:
            ctx.skip("ncu", "not on this machine")
            return
        r = ctx.run("ncu", [ctx.python_exe, os.path.join(BENCH, "ncu_kernels.py"),
                            ctx.after.tool("ringfeed-bench-compute"), "--bf16", "on", "--graph",
                            "off", "--batch", 256, "--steps", 5, "--warmup", 5])
        for line in r.out.splitlines()[:40]:
            ctx.say(line)


@part("timeline", budget=90, about="a traced streaming epoch (ringfeed train --trace) drawn as "
      "$OUT/timeline.png by tools/bench/timeline.py",
      settings={"gb": 2.0, "batch": 256, "window_ms": 25.0, "flags": ""},
      tiny={"gb": data.TINY_GB, "batch": 64})
def timeline(ctx, s):
    small = data.synthetic(ctx, s.gb, seed=2)
    trace = ctx.work_path("trace.json")
    m = train(ctx, ctx.after, "traced", ["--data", small, "--epochs", 1, "--batch-size", s.batch,
                                         "--trace", trace, *model_flags(ctx, s)], cold=True)
    if not m:
        ctx.fail("the traced epoch")
    ctx.say(f"traced epoch: {m.line()}")
    png = os.path.join(ctx.out, "timeline.png")
    r = ctx.run("timeline", [ctx.python_exe, os.path.join(BENCH, "timeline.py"), trace, png,
                             "--window-ms", s.window_ms, "--title",
                             f"ringfeed streaming, batch {s.batch}, {s.window_ms:.0f} ms "
                             "mid-epoch (cold file)"])
    if r.rc == 3:
        ctx.skip("the PNG", "no matplotlib")
    elif not r.ok:
        ctx.fail(f"timeline.py: {r.why()}")
    else:
        ctx.say(f"drawn: {png}")

