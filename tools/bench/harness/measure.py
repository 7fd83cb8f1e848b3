"""The measurements every part makes the same way: one `ringfeed train` and its --metrics, one
`ringfeed read` and its --json, the model alone (ringfeed-bench-compute), a test executable, and
the interleaved rounds and medians every comparison is read from."""

import json
import os
import statistics


class Metrics:
    """A `ringfeed train --metrics` file: its start, epoch and end events."""

    def __init__(self, path):
        self.events = [json.loads(x) for x in open(path) if x.startswith("{")]
        self.epochs = [e for e in self.events if e.get("event") == "epoch"]
        self.start = next((e for e in self.events if e.get("event") == "start"), {})
        self.end = next((e for e in self.events if e.get("event") == "end"), {})

    @property
    def last(self):
        return self.epochs[-1] if self.epochs else {}

    def rate(self, skip_first=False):
        """samples/s: the median epoch's, the first left out where SKIP_FIRST and there are more
        (a CUDA graph's capture and cuDNN's choices are in it)."""
        eps = self.epochs[1:] if skip_first and len(self.epochs) > 1 else self.epochs
        return statistics.median(e["samples_per_s"] for e in eps) if eps else None

    def line(self):
        e = self.last
        if not e:
            return "no epoch"
        words = [f"{e['samples_per_s']:,.0f} samples/s",
                 f"waited {100 * e.get('data_wait_share', 0):.1f}%"]
        if e.get("disk_gb_per_s") is not None:
            words.append(f"disk {e['disk_gb_per_s']:.2f} GB/s")
        if e.get("delivered_gb_per_s"):
            words.append(f"delivered {e['delivered_gb_per_s']:.2f} GB/s")
        if e.get("decode_busy_share"):
            words.append(f"decode busy {100 * e['decode_busy_share']:.0f}%")
        if e.get("rss_bytes") is not None:
            words.append(f"RSS {e['rss_bytes'] / 2**20:.0f} MiB")
        if e.get("gpu_bytes"):
            words.append(f"GPU {e['gpu_bytes'] / 2**20:.0f} MiB")
        if e.get("test_accuracy") is not None:
            words.append(f"test accuracy {100 * e['test_accuracy']:.2f}%")
        return ", ".join(words)


def train(ctx, build, name, args, *, ranks=0, cold=False, env=None, launch_env=()):
    """One `ringfeed train ARGS` (under mpirun with RANKS > 0); its Metrics, or None (said)."""
    metrics = ctx.log_path(name, ".jsonl")
    if os.path.exists(metrics):
        os.unlink(metrics)
    args = [str(a) for a in args]
    if "--device" not in args:
        args += ["--device", ctx.device]
    cmd = [build.tool("ringfeed"), "train", *args, "--metrics", metrics]
    if ranks:
        cmd = ctx.mpirun(ranks, extra_env=launch_env) + cmd
    r = ctx.run(name, cmd, cold=cold, env=env)
    if not r.ok or not os.path.exists(metrics):
        if r.ok:
            ctx.say(f"{name}: no metrics written")
        return None
    return Metrics(metrics)


def read(ctx, build, name, data, *flags, cold=True, env=None):
    """One `ringfeed read DATA FLAGS`; its first run's figures (--json), or None (said)."""
    out = ctx.log_path(name, ".json")
    r = ctx.run(name, [build.tool("ringfeed"), "read", data, *flags, "--json", out], cold=cold,
                env=env)
    if not r.ok:
        return None
    return json.load(open(out))["runs"][0]


def compute(ctx, build, name, batch, *flags, steps=400):
    """The model alone on batches already on the GPU: samples/s, or None (said)."""
    out = ctx.log_path(name, ".json")
    r = ctx.run(name, [build.tool("ringfeed-bench-compute"), "--batch", batch, *flags, "--steps",
                       steps, "--json", out])
    if not r.ok:
        return None
    return json.load(open(out))["results"][0]["samples_per_s"]


def gtest(ctx, path, name=None, *, timeout=None, env=None, launch=()):
    """One test executable; says a line: ok with its counts, or FAILED with the failures."""
    name = name or os.path.basename(path)
    r = ctx.run(name, [*launch, path, "--gtest_brief=1", "--gtest_color=no"], timeout=timeout,
                env=env, quiet=True)
    ran = [x for x in r.out.splitlines() if " ran." in x and "test suite" in x]
    skipped = sum(1 for x in r.out.splitlines() if x.startswith("[  SKIPPED"))
    if r.ok:
        ctx.say(f"{name}: ok in {r.seconds:.0f} s, {ran[-1].split('] ')[-1] if ran else ''} "
                f"{skipped} skipped lines")
    else:
        ctx.say(f"{name}: FAILED ({r.why()})")
        failures = [x for x in r.out.splitlines() if "Failure" in x or x.startswith("[  FAILED")]
        for x in failures[:10]:
            ctx.say(f"    {x}")
    return r.ok


def rotations(rounds, variants):
    """(round, variant) for ROUNDS rounds of every variant, the order rotating a step each round
    so that drift (the disk's, the machine's) falls on every variant alike."""
    variants = list(variants)
    for r in range(1, rounds + 1):
        k = (r - 1) % len(variants) if variants else 0
        for v in variants[k:] + variants[:k]:
            yield r, v


def alternations(rounds, variants):
    """(round, variant), every other round in reverse order (two builds: before first, then after
    first)."""
    variants = list(variants)
    for r in range(1, rounds + 1):
        for v in (variants if r % 2 else variants[::-1]):
            yield r, v


def load_json(path):
    with open(path) as f:
        return json.load(f)


def median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def ratio(a, b):
    return a / b if a and b else None


def fmt(value, spec=",.0f"):
    return "-" if value is None else format(value, spec)


def ab_lines(ctx, what, table, spec=",.0f"):
    """For an A/B: TABLE maps (variant, build name) to each round's figures; says one line a
    variant with before's and after's rounds and the ratio of the medians; returns the ratios."""
    ratios = {}
    for variant in dict.fromkeys(v for v, _ in table):
        b, a = table.get((variant, "before"), []), table.get((variant, "after"), [])
        if not any(x is not None for x in a + b):
            continue
        r = ratio(median(a), median(b))
        ratios[variant] = r
        ctx.say(f"{what} {variant}: before {' / '.join(fmt(x, spec) for x in b)}, after "
                f"{' / '.join(fmt(x, spec) for x in a)}; median after/before {fmt(r, '.3f')}")
    return ratios


def pytest(ctx, name, targets, *, env=None, args=(), cwd=None, timeout=None, python=None):
    """python -m pytest TARGETS, its JUnit XML read back; says one line of counts and the failed
    tests; returns True where it passed."""
    import xml.etree.ElementTree as ET

    xml = ctx.log_path(name, ".xml")
    r = ctx.run(name, [python or ctx.python_exe, "-m", "pytest", "-q", "-rs", "-p",
                       "no:cacheprovider", f"--junitxml={xml}", *args, *targets], env=env,
                cwd=cwd, timeout=timeout, quiet=True)
    counts = "no JUnit XML"
    if os.path.exists(xml):
        try:
            s = ET.parse(xml).getroot()
            s = s if s.tag == "testsuite" else s.find("testsuite")
            n, f, e, k = (int(s.get(a, 0)) for a in ("tests", "failures", "errors", "skipped"))
            counts = f"{n - f - e - k} passed, {f} failed, {e} errors, {k} skipped"
        except ET.ParseError:
            pass
    ctx.say(f"{name}: pytest exit {r.rc}{' (timed out)' if r.rc == 124 else ''} in "
            f"{r.seconds:.0f} s: {counts}")
    for x in [x for x in r.out.splitlines() if x.startswith(("FAILED ", "ERROR "))][:20]:
        ctx.say(f"    {x}")
    return r.rc in (0, 5)  # 5: nothing ran (every test skipped where it was collected)
