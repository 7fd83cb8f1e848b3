"""ringfeed.Loader from Python: against `ringfeed read` and PyTorch's DataLoader feeding the same
model (tools/bench/python_loader.py, torch_peer.py), its memory at two sizes, the hand-off into
PyTorch (handoff_profile.py, handoff_split.py) and the loader alone per output kind."""

import os

from .. import data
from ..context import BENCH
from ..measure import ab_lines, alternations, fmt, load_json, median
from ..registry import part


@part("python", budget=420, gpus=1, torch=True, about="tools/bench/python_loader.py: `ringfeed "
      "read`, the loader alone, the CNN in PyTorch fed by it, by the DataLoader and alone, cold "
      "(or page-cached: io=buffered), interleaved rounds, builds interleaved; the loader's "
      "memory at two sizes",
      settings={"gb": 9.2, "small_gb": 2.0, "rounds": 2, "seconds": 15.0, "batch": 256,
                "phases": "read,loader,train_ringfeed,train_torch,compute_only", "io": "",
                "loader_epochs": 0, "memory": True})
def python(ctx, s):
    for b in ctx.builds:
        ctx.extension(b)
    big = data.synthetic(ctx, s.gb, seed=7)
    cached = s.io == "buffered"
    if cached:
        data.warm(big)
    table, summaries = {}, {}
    for r, b in alternations(s.rounds, ctx.builds):
        out = ctx.log_path(f"python-{b.name}-{r}", ".json")
        args = [ctx.python_exe, os.path.join(BENCH, "python_loader.py"), "--data", big,
                "--ringfeed", b.tool("ringfeed"), "--batch-size", s.batch, "--seconds",
                s.seconds, "--repeats", 1, "--phases", s.phases, "--loader-epochs",
                s.loader_epochs, "--json", out]
        args += ["--io", s.io] if s.io else []
        args += [] if cached else ["--drop-caches"]
        run = ctx.run(f"python-{b.name}-{r}", args, env=ctx.python_env(b))
        if not run.ok:
            continue
        doc = load_json(out)
        summaries[f"{b.name}-{r}"] = doc["summary"]
        for phase, results in doc["results"].items():
            x = results[0].get("samples_per_s") if results else None
            table.setdefault((phase, b.name), []).append(x)
        ctx.say(f"round {r} {b.name}: " + ", ".join(
            f"{phase} {fmt(table[phase, b.name][-1])}" for phase in doc["results"])
            + f"; {doc['summary']}")
    ctx.figure("samples_per_s", {f"{p}:{b}": v for (p, b), v in table.items()})
    ctx.figure("ratios", summaries)
    for (phase, b), v in table.items():
        ctx.say(f"{b} {phase}: median {fmt(median(v))} samples/s over {len(v)} rounds")
    if ctx.before:
        ctx.figure("after_over_before", ab_lines(ctx, "python", table))
    if s.memory and ctx.fits(40, "memory at two sizes"):
        small = data.synthetic(ctx, s.small_gb, seed=7)
        for name, path in (("small", small), ("big", big)):
            out = ctx.log_path(f"memory-{name}", ".json")
            run = ctx.run(f"memory-{name}", [
                ctx.python_exe, os.path.join(BENCH, "python_loader.py"), "--data", path,
                "--ringfeed", ctx.after.tool("ringfeed"), "--batch-size", s.batch, "--seconds", 8,
                "--repeats", 1, "--drop-caches", "--phases", "loader", "--json", out])
            if run.ok:
                mem = load_json(out)["results"]["loader"][0]
                ctx.figure(f"memory_{name}", {k: v for k, v in mem.items() if "bytes" in k})
                sizes = ", ".join(f"{k} {v / 2**20:.0f} MiB" for k, v in mem.items()
                                  if "bytes" in k and isinstance(v, (int, float)))
                ctx.say(f"loader memory, {name} ({os.path.getsize(path) / 1e9:.1f} GB): {sizes}")


@part("peer", budget=150, gpus=1, torch=True, about="PyTorch's DataLoader alone and training the "
      "same CNN on the same cold file (tools/bench/torch_peer.py)",
      settings={"gb": 16.0, "batch": 256, "seconds": 20.0})
def peer(ctx, s):
    big = data.synthetic(ctx, s.gb, seed=1)
    for phase in ("loader", "train"):
        out = ctx.log_path(f"torch-{phase}", ".json")
        r = ctx.run(f"torch-{phase}", [ctx.python_exe, os.path.join(BENCH, "torch_peer.py"),
                                       "--data", big, "--batch-size", s.batch, "--phase", phase,
                                       "--seconds", s.seconds, "--json", out], cold=True)
        if r.rc == 3:
            ctx.skip("torch_peer.py", r.tail(1))
            return
        if not r.ok:
            continue
        j = load_json(out)
        p = ctx.figure(phase, j[phase])
        ctx.figure(f"{phase}_peak_gpu_bytes", j.get("peak_gpu_bytes"))
        ctx.say(f"DataLoader {phase} (torch {j['torch_version']}, {j.get('start_method')} "
                f"workers): first batch after {p['first_batch_s']:.1f} s, "
                f"{p['steady_samples_per_s']:,.0f} samples/s after it, {p['samples_per_s']:,.0f} "
                f"over the {p['seconds']:.0f} s run")
        if "compute_only" in j:
            ctx.figure("compute_only", j["compute_only"])
            ctx.say(f"PyTorch compute alone: {j['compute_only']['samples_per_s']:,.0f} samples/s")


@part("handoff", budget=300, gpus=1, torch=True, about="the hand-off into PyTorch: the CNN fed "
      "by ringfeed.Loader against compute alone, with a torch.profiler summary, on 1 GPU (each "
      "build, `before_phases` for an older one; with two builds and `interleave`, one process a "
      "round, the builds alternating round by round, the profile after) and on 2 (DDP) where "
      "there are 2 (handoff_profile.py); next() and from_dlpack split (handoff_split.py)",
      settings={"gb": 3.0, "rounds": 3, "steps": 400, "warm": 100, "profile": 20,
                "io": "buffered", "phases": "alone,fed,fed_resident,take_only",
                "before_phases": "alone,fed,fed_resident", "pin": False, "split": True,
                "interleave": True})
def handoff(ctx, s):
    for b in ctx.builds:
        ctx.extension(b)
    path = data.synthetic(ctx, s.gb, seed=7)
    if s.io == "buffered":
        data.warm(path)
    traces = ctx.work_path("traces")

    def profile_run(name, b, procs, phases, rounds, profile):
        out = ctx.log_path(name, ".json")
        r = ctx.run(name, [
            *ctx.torchrun(procs), os.path.join(BENCH, "handoff_profile.py"), "--data", path,
            "--io", s.io, "--rounds", rounds, "--steps", s.steps, "--warm", s.warm,
            "--phases", phases, "--profile", profile, "--trace-dir", traces, "--json", out,
            *(["--pin"] if s.pin else [])], env=ctx.python_env(b))
        return r, (load_json(out) if r.ok and os.path.exists(out) else None)

    interleaved = s.interleave and ctx.before is not None
    if interleaved:
        handoff_interleaved(ctx, s, profile_run)
    runs = ([] if interleaved else [(b, 1) for b in ctx.builds]) + (
        [(ctx.after, 2)] if ctx.gpus >= 2 else [])
    for b, procs in runs:
        name = f"handoff-{b.name}-{procs}gpu"
        phases = s.before_phases if b is ctx.before else s.phases
        r, result = profile_run(name, b, procs, phases, s.rounds, s.profile)
        ctx.say(f"-- {b.name}, {procs} GPU(s), exit {r.rc}")
        say_profile(ctx, r.out, ("[round", "summary", "pinned"))
        if result is not None:
            ctx.figure(f"{b.name}-{procs}gpu", result.get("summary"))
    if s.split:
        r = ctx.run("handoff-split", [ctx.python_exe, os.path.join(BENCH, "handoff_split.py"),
                                      "--data", path])
        for line in r.out.splitlines()[-12:]:
            ctx.say(line)


def say_profile(ctx, out, keep=()):
    """handoff_profile.py's CUDA API sections of OUT, and its lines that start with KEEP."""
    api = False
    for line in out.splitlines():
        if line.startswith("== profile"):
            api = "CUDA API" in line
        if api or (keep and line.startswith(keep)):
            ctx.say(line)


def handoff_interleaved(ctx, s, profile_run):
    """The 1-GPU hand-off of two builds, one process a round, the builds alternating: each phase's
    samples/s by round, each round's phase / alone within its own process, and after / before of
    the medians; then one profile of AFTER (a machine whose speed drifts between two builds' runs
    slows them alike here, where back-to-back runs of several rounds each did not)."""
    table, over_alone = {}, {}
    for r, b in alternations(s.rounds, ctx.builds):
        phases = s.before_phases if b is ctx.before else s.phases
        run, result = profile_run(f"handoff-{b.name}-1gpu-r{r}", b, 1, phases, 1, 0)
        if result is None:
            ctx.say(f"round {r} {b.name}: exit {run.rc}: {run.tail(2)}")
            continue
        rounds = result.get("results", {})
        alone = (rounds.get("alone") or [{}])[0].get("samples_per_s")
        for phase, figures in rounds.items():
            rate = figures[0]["samples_per_s"]
            table.setdefault((phase, b.name), []).append(rate)
            line = f"round {r} {b.name} {phase}: {rate:,.0f} samples/s"
            if phase != "alone" and alone:
                over_alone.setdefault((phase, b.name), []).append(rate / alone)
                line += f" ({rate / alone:.3f} of alone)"
            ctx.say(line)
    for (phase, name), ratios in over_alone.items():
        ctx.say(f"{name} {phase} / alone by round: {', '.join(f'{x:.3f}' for x in ratios)}; "
                f"median {fmt(median(ratios), '.3f')}")
    ctx.figure("over_alone", {f"{p}:{n}": v for (p, n), v in over_alone.items()})
    ctx.figure("after_over_before", ab_lines(ctx, "handoff", table))
    if s.profile:
        r, _ = profile_run("handoff-after-profile", ctx.after, 1, s.phases, 1, s.profile)
        say_profile(ctx, r.out)


@part("loader-decode", budget=150, gpus=1, torch=True, about="ringfeed.Loader alone per kind of "
      "batch, builds interleaved (tools/bench/loader_decode_ab.py): from the page cache uint8, "
      "float32 NCHW, bf16 NHWC; cold, decoded JPEGs (jpeg_count of make_jpeg_set.py's, each "
      "build's own conversion) and packed token sequences (tokens ids, each build's own writer)",
      settings={"gb": 2.0, "rounds": 3, "seconds": 5.0, "jpeg_count": 0, "photos": "",
                "tokens": 0.0})
def loader_decode(ctx, s):
    for b in ctx.builds:
        ctx.extension(b)
    path = data.synthetic(ctx, s.gb, seed=7)
    data.warm(path)
    import json

    extra = {b.name: [] for b in ctx.builds}
    if s.jpeg_count:
        folder = data.jpeg_set(ctx, s.jpeg_count, s.photos)
        for b in ctx.builds:  # each build converts its own: an older one may not read a newer
            out = os.path.join(ctx.work, f"ab-jpeg-{b.name}.rfd")
            data.remove(out)
            r = ctx.run(f"convert-jpeg-{b.name}", [b.tool("ringfeed-convert"), "images", folder,
                                                   "-o", out, "-q"])
            if not r.ok:
                ctx.fail(f"{b.name}: ringfeed-convert images: {r.tail(2)}")
            extra[b.name] += ["--jpeg", out]
    if s.tokens:
        for b in ctx.builds:
            out = os.path.join(ctx.work, f"ab-tokens-{b.name}-{int(s.tokens)}.rfd")
            extra[b.name] += ["--tokens", out, "--make-tokens", int(s.tokens)]
    table, steady = {}, {}
    for r, b in alternations(s.rounds, ctx.builds):
        run = ctx.run(f"decode-{b.name}-{r}", [ctx.python_exe,
                                               os.path.join(BENCH, "loader_decode_ab.py"), path,
                                               "--seconds", s.seconds, *extra[b.name]],
                      env=ctx.python_env(b))
        if not run.ok:
            ctx.say(f"round {r} {b.name}: exit {run.rc}: {run.tail(3)}")
        for line in run.out.splitlines():
            if line.startswith("{"):
                d = json.loads(line)
                table.setdefault((d["kind"], b.name), []).append(d["samples_per_s"])
                steady.setdefault((d["kind"], b.name), []).append(d.get("steady_per_s"))
                unit = "tokens/s" if d["kind"].startswith("tokens") else "samples/s"
                ctx.say(f"round {r} {b.name} {d['kind']}: {d['samples_per_s']:,.0f} {unit}; "
                        f"first batch {d.get('first_batch_s', 0) * 1e3:.1f} ms an epoch, after "
                        f"it {d.get('steady_per_s', 0):,.0f}")
    ctx.figure("samples_per_s", {f"{k}:{b}": v for (k, b), v in table.items()})
    ctx.figure("steady_per_s", {f"{k}:{b}": v for (k, b), v in steady.items()})
    if ctx.before:
        ctx.figure("after_over_before", ab_lines(ctx, "loader", table))
        ctx.figure("steady_after_over_before", ab_lines(ctx, "loader, after the first batch",
                                                         steady))
