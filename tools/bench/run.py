#!/usr/bin/env python3
"""ringfeed's benchmarks and GPU checks as one harness: one call unpacks the build once, prints the
machine once, and runs the named parts one after another, each within its own time budget and
all within --time, writing $OUT/summary.json, $OUT/summary.md and $OUT/logs.tar.gz.

    tools/bench/run.py --list                                   # the parts, budgets and needs
    tools/bench/run.py --pkg .carry/pkg.tar.xz --out "$OUT" --parts build,tests,stream
    tools/bench/run.py --pkg after.tar.xz --before before.tar.xz --parts stream,variants
    tools/bench/run.py --cpu --bin build --out /tmp/bench       # every part's plumbing, tiny

The build (--pkg): tools/bench/package_device.sh's archive, its unpacked pkg/ folder, or a CMake
build tree (default: .carry/pkg.tar.xz, else build/). --before names a second build: the parts
that compare builds (stream, compute, variants, ranks, python, pack, codecs-noregress, same, ...)
interleave the two round by round, the one that goes first alternating, and report after/before.

Every cold run drops the page cache first (as root; the summary says where it could not). Parts
that need what this machine lacks (a GPU, two, PyTorch, a second build) are skipped, saying why;
--cpu runs the rest on tiny data with no GPU, which is what ctest's bench_harness_runs_on_the_cpu
checks. A part that would not fit in what is left of --time is skipped, saying so.
`--set PART.NAME=VALUE` changes one of a part's settings (--list shows them).
"""

import argparse
import os
import shlex
import sys
import tempfile
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from harness import machine, parts, summary  # noqa: E402
from harness.build import Build  # noqa: E402
from harness.context import ROOT, Context, PartFailed, Record  # noqa: E402
from harness.registry import PARTS, Settings  # noqa: E402

MIN_PART_S = 20  # a part is started only with at least this long left of --time


def arguments():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog=__doc__.split("\n\n", 1)[1])
    p.add_argument("--pkg", "--bin", dest="pkg", help="the build to measure (see above)")
    p.add_argument("--before", help="a second build, measured against --pkg")
    p.add_argument("--out", default=os.environ.get("OUT") or "bench-out")
    p.add_argument("--work", help="where the datasets go (default /var/tmp/ringfeed-bench; "
                   "--cpu: a temporary folder)")
    p.add_argument("--parts", default="all", help="comma-separated part names, or all")
    p.add_argument("--time", type=float, default=540, help="seconds for the whole run")
    p.add_argument("--cpu", action="store_true", help="tiny data, no GPU: the plumbing")
    p.add_argument("--set", action="append", default=[], metavar="PART.NAME=VALUE")
    p.add_argument("--keep-logs", action="store_true", help="leave $OUT/logs/ unpacked")
    p.add_argument("--list", action="store_true", help="list the parts and exit")
    return p.parse_args()


def list_parts():
    print(f"{'part':16} {'budget':>6}  {'needs':14} what it runs")
    for p in PARTS.values():
        print(f"{p.name:16} {p.budget:5d}s  {p.needs():14} {p.about}")
        if p.settings:
            shown = (f"{k}={v!r}" if len(repr(v)) < 60 else f"{k}={repr(v)[:56]}...'"
                     for k, v in p.settings.items())
            print(" " * 25 + "settings: " + ", ".join(shown))


def default_build():
    for path in (os.path.join(ROOT, ".carry", "pkg.tar.xz"), os.path.join(ROOT, "build")):
        if os.path.exists(path):
            return path
    raise SystemExit("run.py: no build: pass --pkg (package_device.sh's archive or a build tree)")


def chosen(text):
    names = list(PARTS) if text == "all" else [n for n in text.split(",") if n]
    unknown = [n for n in names if n not in PARTS]
    if unknown:
        raise SystemExit(f"run.py: no part {', '.join(unknown)} (--list shows them)")
    return names


def overrides(sets):
    out = {}
    for s in sets:
        key, eq, value = s.partition("=")
        name, dot, setting = key.partition(".")
        if not (eq and dot) or name not in PARTS:
            raise SystemExit(f"run.py: --set {s}: not PART.NAME=VALUE of a part")
        out.setdefault(name, {})[setting] = value
    return out


def why_not(p, ctx):
    if p.gpus > ctx.gpus:
        return "no GPU" if not ctx.gpus else f"needs {p.gpus} GPUs, {ctx.gpus} here"
    if p.torch and not ctx.torch_version:
        return "no PyTorch"
    if p.before and not ctx.before:
        return "needs a second build (--before)"
    if ctx.deadline - time.monotonic() < MIN_PART_S:
        return f"{ctx.deadline - time.monotonic():.0f} s of --time left"
    return None


def run_part(ctx, p, settings):
    rec = Record(p.name, p.about, p.budget)
    rec.settings = settings.as_dict()
    ctx.rec = rec
    print(f"== {p.name}: {p.about}", flush=True)
    reason = why_not(p, ctx)
    if reason:
        rec.status, rec.reason = "skipped", reason
        print(f"  skipped: {reason}", flush=True)
        return rec
    t0 = time.monotonic()
    ctx.part_deadline = min(ctx.deadline, t0 + p.budget)
    try:
        p.run(ctx, settings)
    except PartFailed as e:
        rec.status, rec.reason = "failed", str(e).splitlines()[0] if str(e) else "failed"
        ctx.say(f"FAILED: {e}")
    except Exception:  # a bug in a part must not cost the parts after it
        rec.status, rec.reason = "failed", "error in the harness (logs/run/errors.log)"
        with open(os.path.join(ctx.logs, "errors.log"), "a") as f:
            f.write(f"== {p.name}\n{traceback.format_exc()}\n")
        ctx.say("FAILED: " + traceback.format_exc().strip().splitlines()[-1])
    rec.seconds = round(time.monotonic() - t0, 1)
    print(f"  {p.name}: {rec.status} in {rec.seconds:.0f} s", flush=True)
    return rec


def main():
    a = arguments()
    if a.list:
        list_parts()
        return 0
    names, sets = chosen(a.parts), overrides(a.set)
    settings = {n: Settings(PARTS[n], a.cpu, sets.get(n, {})) for n in names}  # errors first
    out = os.path.abspath(a.out)
    os.makedirs(out, exist_ok=True)
    work = os.path.abspath(a.work or (tempfile.mkdtemp(prefix="ringfeed-bench-cpu-")
                                      if a.cpu else "/var/tmp/ringfeed-bench"))
    os.makedirs(work, exist_ok=True)
    builds = ([Build.open("before", a.before, work)] if a.before else []) + [
        Build.open("after", a.pkg or default_build(), work)]
    found = [] if a.cpu else machine.gpus()
    ctx = Context(out, work, builds, cpu=a.cpu, gpus=len(found), torch_version="", total_s=a.time)
    ctx.torch_version, torch_cuda = machine.torch_version(ctx.env)
    banner = machine.banner(work, found, ctx.torch_version)
    for line in machine.banner_lines(banner) + [b.describe() for b in builds]:
        print(line, flush=True)
    if found and ctx.torch_version and not torch_cuda:
        print("torch sees no GPU: the torch parts run on the CPU or fail", flush=True)
    records = [run_part(ctx, PARTS[n], settings[n]) for n in names]
    summary.write(ctx, banner, "tools/bench/run.py " + shlex.join(sys.argv[1:]), records)
    logs = None if a.keep_logs else summary.pack_logs(ctx)
    print(f"\n{'part':16} {'status':8} {'s':>5}  reason")
    for r in records:
        print(f"{r.name:16} {r.status:8} {r.seconds:5.0f}  {r.reason}")
    print(f"\nsummary: {out}/summary.md, summary.json" + (f"; logs: {logs}" if logs else ""))
    return 1 if any(r.status == "failed" for r in records) else 0


if __name__ == "__main__":
    sys.exit(main())
