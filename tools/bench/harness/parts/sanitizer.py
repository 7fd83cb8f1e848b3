"""The GPU code under NVIDIA's compute-sanitizer (issue 15): memcheck (out-of-bounds and misaligned
accesses, leaks), racecheck (shared-memory hazards), synccheck (barrier misuse) and initcheck
(reads of device memory never written), over CUDA test executables and over a few steps of
`ringfeed train` in each GPU mode."""

import concurrent.futures
import os
import re
import shutil
import subprocess
import time

from .. import data
from ..registry import names, part

FINDING = re.compile(r"^========= (Invalid|Program hit|Race|Barrier|Uninitialized|Leaked|Error)")


def jobs(ctx, s, small):
    """(tool, name, shard or None, command) for every tool and program."""
    out = []
    for tool in names(s.tools):
        for spec in names(s.tests):  # TEST@K: K GoogleTest shards (the tools slow kernels 10-100x)
            t, _, k = spec.partition("@")
            k = int(k or 1)
            for i in range(k):
                out.append((tool, t if k == 1 else f"{t}.{i}", (i, k) if k > 1 else None,
                            [os.path.join(ctx.after.tests, t)]))
        if not s.train:
            continue
        steps = 3 if tool == "racecheck" else 12
        base = [ctx.after.tool("ringfeed"), "train", "--data", small, "--batch-size", "128",
                "--max-steps", str(steps), "--epochs", "1"]
        more = ["--augment", "crop:4,flip,erase:0.5", "--optimizer", "adamw", "--label-smoothing",
                "0.1", "--lr-schedule", "cosine"]
        for name, extra in (("train-graph", ["--cuda-graph", "on"]),
                            ("train-eager", ["--cuda-graph", "off"]),
                            ("train-bf16", ["--precision", "bf16"]),
                            ("train-managed", ["--mode", "managed"]),
                            ("train-augment", more), ("train-augment-bf16", more + [
                                "--precision", "bf16"])):
            if not s.train_jobs or re.search(s.train_jobs, name):
                out.append((tool, name, None, base + extra))
    return out


@part("sanitizer", budget=540, gpus=1, about="compute-sanitizer's memcheck, racecheck, synccheck "
      "and initcheck over the CUDA tests named (TEST@K: in K shards) and a few steps of `ringfeed "
      "train` in each GPU mode, PAR at once; one line a run, the first findings of each log",
      settings={"tests": "", "tools": "memcheck racecheck synccheck initcheck", "train": True,
                "train_jobs": "", "par": 4, "limit": 300})
def sanitizer(ctx, s):
    cs = shutil.which("compute-sanitizer") or "/usr/local/cuda/bin/compute-sanitizer"
    if not os.access(cs, os.X_OK):
        ctx.fail("no compute-sanitizer on this machine")
    version = subprocess.run([cs, "--version"], capture_output=True, text=True).stdout
    ctx.say(version.strip().splitlines()[-1] if version.strip() else cs)
    small = data.synthetic(ctx, 0, seed=7, samples=8192)
    todo = jobs(ctx, s, small)
    extra = {"memcheck": ["--leak-check", "full"], "racecheck": ["--racecheck-report", "all"]}

    def one(job):
        tool, name, shard, cmd = job
        env = dict(ctx.env)
        if shard:
            env.update(GTEST_SHARD_INDEX=str(shard[0]), GTEST_TOTAL_SHARDS=str(shard[1]))
        log = ctx.log_path(f"{tool}-{name}")
        t0 = time.monotonic()
        # API errors are not reported: each is returned to its caller, which checks it, and the
        # tests provoke some on purpose (a device that does not exist), as NCCL does probing.
        with open(log, "w") as f:
            try:
                rc = subprocess.run([cs, "--tool", tool, *extra.get(tool, []),
                                     "--report-api-errors", "no", "--error-exitcode", "97",
                                     "--print-limit", "20", *cmd], stdout=f,
                                    stderr=subprocess.STDOUT, env=env,
                                    timeout=min(s.limit, max(5, ctx.left()))).returncode
            except subprocess.TimeoutExpired:
                rc = 124
        text = open(log, errors="replace").read()
        summary = (re.findall(r"(?:ERROR|RACECHECK) SUMMARY: .*", text) or ["no summary"])[-1]
        # A shard whose tests make no CUDA call: the tool exits 255 with nothing to check.
        if (rc == 255 and "terminated before first instrumented API call" in text
                and "[  PASSED  ]" in text and "[  FAILED  ]" not in text):
            rc, summary = 0, "no CUDA call to check"
        verdict = {0: "ok", 124: "TIMEOUT", 97: "ERRORS"}.get(rc, f"FAILED (exit {rc})")
        return f"{tool:10} {name:40} {verdict:18} {time.monotonic() - t0:4.0f} s  {summary}"

    for job in todo:
        ctx.rec.commands.append({"cmd": " ".join([cs, "--tool", job[0], *job[3]])})
    with concurrent.futures.ThreadPoolExecutor(s.par) as pool:
        lines = list(pool.map(one, todo))
    for line in lines:
        ctx.say(line)
    bad = [x for x in lines if " ok " not in x]
    ctx.figure("runs", lines)
    ctx.say("-- findings (the first of each log that has one)")
    for tool, name, _, _ in todo:
        text = open(ctx.log_path(f"{tool}-{name}"), errors="replace").read().splitlines()
        at = [i for i, x in enumerate(text) if FINDING.match(x)]
        if at:
            ctx.say(f"-- {tool}-{name}")
            for x in text[at[0]:at[0] + 7]:
                ctx.say(x)
    if bad:
        ctx.fail(f"{len(bad)} of {len(lines)} runs reported errors or did not finish")
