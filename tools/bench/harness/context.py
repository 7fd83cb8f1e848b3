"""One run of the driver: where things go, how a command runs, the clock, what a part records.

Everything the device scripts each restated lives here once: the output folder and its logs
($OUT/logs/PART/NAME.log, packed into $OUT/logs.tar.gz at the end: the device tool returns at most
eight files), the page cache dropped before a cold run, the environment every program gets
(NVLink multicast off, Open MPI allowed to run as root, the built extension on PYTHONPATH), the
launchers (mpirun, torchrun) and the time budget. A part records lines (its summary, as printed)
and figures (numbers for summary.json); every command it runs is recorded as it can be run again.

Not thread-safe: one part runs at a time, and a part's commands run one after another unless the
part runs them itself (the sanitizer's jobs).
"""

import json
import os
import shlex
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
BENCH = os.path.dirname(HERE)  # tools/bench
ROOT = os.path.dirname(os.path.dirname(BENCH))  # the source tree


class Record:
    """What one part did: its status, its lines, figures and commands (summary.json's entry)."""

    def __init__(self, name, about, budget):
        self.name, self.about, self.budget = name, about, budget
        self.status, self.reason, self.seconds = "ok", "", 0.0
        self.lines, self.figures, self.commands, self.settings = [], {}, [], {}

    def as_dict(self):
        return {k: getattr(self, k) for k in ("about", "status", "reason", "seconds", "budget",
                                               "settings", "figures", "lines", "commands")}


class Ran:
    """A finished command: its exit status, output, seconds and log."""

    def __init__(self, rc, out, seconds, log):
        self.rc, self.out, self.seconds, self.log = rc, out, seconds, log

    @property
    def ok(self):
        return self.rc == 0

    def tail(self, n=3):
        lines = [x for x in self.out.splitlines() if x.strip()]
        return "\n".join(lines[-n:]) or "(no output)"

    def why(self):
        if self.rc == 124:
            return "timed out"
        return f"exit {self.rc}: " + (self.tail(1) if self.out.strip() else "(no output)")


class PartFailed(Exception):
    """Raised by a part (ctx.fail) where it cannot go on: the driver records it and goes on."""


class Context:
    def __init__(self, out, work, builds, *, cpu, gpus, torch_version, total_s):
        self.out, self.work = out, work
        self.logs = os.path.join(out, "logs")
        self.builds = builds  # [after] or [before, after]: what A/B parts interleave
        self.after = builds[-1]
        self.before = builds[0] if len(builds) > 1 else None
        self.cpu = cpu  # tiny data, no GPU
        self.gpus = gpus
        self.torch_version = torch_version
        self.device = "cuda" if gpus else "cpu"
        self.start = time.monotonic()
        self.total_s = total_s
        self.deadline = self.start + total_s
        self.part_deadline = self.deadline
        self.rec = None
        self.cold_failed = False
        self.python_exe = sys.executable  # the measuring programs' (the device's python3)
        os.makedirs(self.logs, exist_ok=True)
        os.makedirs(work, exist_ok=True)
        self.env = self._environment()

    # -- the environment ---------------------------------------------------------------------
    def _environment(self):
        env = dict(os.environ)
        # NVLink multicast off (the device README: it can take a shared host's GPUs out).
        env.update(NCCL_NVLS_ENABLE="0", TORCH_SYMM_MEM_DISABLE_MULTICAST="1",
                   NVSHMEM_DISABLE_NVLS="1", OMPI_ALLOW_RUN_AS_ROOT="1",
                   OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", PYTHONUNBUFFERED="1",
                   XLA_PYTHON_CLIENT_PREALLOCATE="false", PYTHONDONTWRITEBYTECODE="1")
        site = self.after.site
        if site:
            env["PYTHONPATH"] = site + (os.pathsep + env["PYTHONPATH"]
                                        if env.get("PYTHONPATH") else "")
        env["RINGFEED_BIN"] = self.after.bin
        env["RINGFEED_CONVERT"] = self.after.tool("ringfeed-convert")
        plugin = self.after.tool("libringfeed_mpi.so")
        if os.path.exists(plugin):
            env["RINGFEED_MPI_PLUGIN"] = plugin
        from . import data  # (data imports this module: here, not at the top)

        photos, fm = data.photos_dir(), data.fmnist_dir(self)
        if photos:
            env["RINGFEED_PHOTOS"] = photos  # the image tests make their JPEGs from these
        if fm:
            env["RINGFEED_FASHION_MNIST"] = fm
        nccl = nccl_library_dir() if self.gpus else None
        if nccl:
            env["LD_LIBRARY_PATH"] = nccl + (os.pathsep + env["LD_LIBRARY_PATH"]
                                             if env.get("LD_LIBRARY_PATH") else "")
        return env

    def extension(self, build=None):
        """BUILD's Python extension (the after build's by default), compiled on first need; the
        after build's goes on the PYTHONPATH every program gets."""
        build = build or self.after
        if not build.site or (build.kind == "package" and not os.path.isdir(build.site)):
            build.build_extension(self)
            if build is self.after:
                self.env["PYTHONPATH"] = os.pathsep.join(
                    [build.site] + [p for p in self.env.get("PYTHONPATH", "").split(os.pathsep)
                                    if p])
        return build.site

    def python_env(self, build):
        """The environment with BUILD's extension on PYTHONPATH (another build's, for an A/B)."""
        env = dict(self.env)
        rest = [p for p in env.get("PYTHONPATH", "").split(os.pathsep)
                if p and p not in {b.site for b in self.builds}]
        env["PYTHONPATH"] = os.pathsep.join(([build.site] if build.site else []) + rest)
        return env

    # -- the clock ---------------------------------------------------------------------------
    def left(self):
        """Seconds left to the current part (its budget, within the run's)."""
        return self.part_deadline - time.monotonic()

    def fits(self, seconds, what):
        """True where SECONDS are left to the part; else says WHAT is skipped."""
        if self.left() >= seconds:
            return True
        self.say(f"-- {what}: skipped, {self.left():.0f} s of the part's budget left, it needs "
                 f"about {seconds:.0f} s")
        return False

    # -- recording ---------------------------------------------------------------------------
    def say(self, *text):
        line = " ".join(str(t) for t in text)
        print(f"  {line}", flush=True)
        if self.rec:
            self.rec.lines.append(line)

    def figure(self, key, value):
        self.rec.figures[key] = value
        return value

    def skip(self, what, why):
        """A piece of a part that cannot run here (the part goes on)."""
        self.say(f"{what}: skipped: {why}")

    def fail(self, why):
        raise PartFailed(why)

    def work_path(self, name):
        """A file of the current part's that is not a log (a checkpoint, a trace): under the
        work folder, so that logs.tar.gz stays under the 16 MiB a returned file may have."""
        d = os.path.join(self.work, "files", self.rec.name if self.rec else "run")
        os.makedirs(d, exist_ok=True)
        return os.path.join(d, name)

    def log_path(self, name, suffix=".log"):
        d = os.path.join(self.logs, self.rec.name if self.rec else "run")
        os.makedirs(d, exist_ok=True)
        return os.path.join(d, name.replace("/", "_") + suffix)

    # -- running -----------------------------------------------------------------------------
    def cold(self):
        """Drops the page cache (root only); says once per run where it could not. Never with
        --cpu: that machine is a shared one (a development box, CI), whose page cache serves
        others; nor where it cannot (not root), which saves the sync too."""
        try:
            if self.cpu or not os.access("/proc/sys/vm/drop_caches", os.W_OK):
                raise PermissionError
            subprocess.run(["sync"])
            with open("/proc/sys/vm/drop_caches", "w") as f:
                f.write("3\n")
            return True
        except OSError:
            if not self.cold_failed:
                self.say("(page cache NOT dropped: " + ("--cpu" if self.cpu else "not root")
                         + "; cold figures are warm)")
            self.cold_failed = True
            return False

    def run(self, name, cmd, *, timeout=None, env=None, cold=False, cwd=None, quiet=False):
        """Runs CMD (a list), its output in logs/PART/NAME.log; returns a Ran. The timeout is what
        is left of the part's budget unless TIMEOUT is less; the whole process group is killed
        at it (mpirun's and torchrun's children too), and rc is 124."""
        cmd = [str(c) for c in cmd]
        if cold:
            self.cold()
        limit = max(5.0, self.left())
        if timeout:
            limit = min(limit, timeout)
        log = self.log_path(name)
        t0 = time.monotonic()
        with open(log, "w") as f:
            f.write(f"$ {quote(cmd)}\n")
            f.flush()
            try:
                p = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, env=env or self.env,
                                     cwd=cwd or ROOT, start_new_session=True)
            except OSError as e:
                f.write(f"{cmd[0]}: {e}\n")
                return Ran(127, f"{cmd[0]}: {e}", 0.0, log)
            try:
                rc = p.wait(timeout=limit)
            except subprocess.TimeoutExpired:
                kill_group(p)
                rc = 124
                f.write(f"\n(timed out after {limit:.0f} s)\n")
        seconds = time.monotonic() - t0
        self.rec.commands.append({"cmd": quote(cmd), "rc": rc, "seconds": round(seconds, 2),
                                  "log": os.path.relpath(log, self.logs)})
        with open(log, errors="replace") as f:
            out = f.read().partition("\n")[2]  # less the "$ command" line
        if not quiet and rc != 0:
            self.say(f"{name}: {'timed out' if rc == 124 else f'exit {rc}'} after {seconds:.0f} s"
                     f" ({os.path.relpath(log, self.out)})")
        return Ran(rc, out, seconds, log)

    def mpirun(self, ranks, *, extra_env=()):
        """mpirun's words for RANKS processes of one machine, passing the environment the ranks
        need (the MPI plugin, NCCL's settings, the library path where NCCL was found)."""
        words = ["mpirun", "--oversubscribe", "--bind-to", "none", "-np", str(ranks)]
        for v in ("RINGFEED_MPI_PLUGIN", "NCCL_NVLS_ENABLE", "TORCH_SYMM_MEM_DISABLE_MULTICAST",
                  "NVSHMEM_DISABLE_NVLS", "LD_LIBRARY_PATH", "PYTHONPATH", *extra_env):
            if v in self.env or v in extra_env:
                words += ["-x", v]
        return words

    def torchrun(self, procs):
        """The words that start PROCS processes of a Python program (one a GPU); one needs none."""
        if procs <= 1:
            return [sys.executable]
        return [sys.executable, "-m", "torch.distributed.run", "--standalone",
                f"--nproc_per_node={procs}"]

    def write_json(self, name, value):
        path = os.path.join(self.out, name)
        with open(path + ".tmp", "w") as f:
            json.dump(value, f, indent=1)
            f.write("\n")
        os.replace(path + ".tmp", path)
        return path


def quote(cmd):
    return " ".join(shlex.quote(c) for c in cmd)


def kill_group(p):
    try:
        os.killpg(p.pid, signal.SIGTERM)
        p.wait(timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except OSError:
            pass
        p.wait()


def nccl_library_dir():
    """Where NCCL is when the loader does not find it by name: the wheel beside PyTorch."""
    try:
        cache = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True).stdout
    except OSError:
        cache = ""
    if "libnccl.so.2" in cache:
        return None
    try:
        p = subprocess.run([sys.executable, "-c", "import nvidia.nccl, os; "
                            "print(os.path.join(list(nvidia.nccl.__path__)[0], 'lib'))"],
                           capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    d = p.stdout.strip()
    return d if p.returncode == 0 and os.path.isdir(d) else None
