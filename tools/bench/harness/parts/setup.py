"""The build and its tests: the Python extension, the C++ test executables, the pytest suite, and
the wheel as `pip install .` builds it on the GPU machine."""

import glob
import os
import shlex
import shutil
import subprocess

from ..context import ROOT
from ..measure import gtest, pytest
from ..registry import names, part


@part("build", budget=150, about="the package's contents, ldd, and the Python extension of each "
      "build compiled for this python3 (import ringfeed)")
def build(ctx, s):
    for b in ctx.builds:
        tools = sorted(os.listdir(b.bin))
        ctx.say(f"{b.describe()}: bin/ {' '.join(tools)}; {len(b.test_executables())} test "
                "executables")
        missing = subprocess.run(["ldd", b.tool("ringfeed")], capture_output=True,
                                 text=True).stdout
        missing = [x.split()[0] for x in missing.splitlines() if "not found" in x]
        ctx.say(f"ldd ringfeed: {'missing ' + ' '.join(missing) if missing else 'nothing missing'}")
        site = ctx.extension(b)
        r = ctx.run(f"import-{b.name}", [ctx.python_exe, "-c", "import ringfeed; "
                                         "print(ringfeed.__version__, ringfeed.__file__)"],
                    env=ctx.python_env(b))
        if not r.ok:
            ctx.fail(f"import ringfeed ({b.name}): {r.tail(3)}")
        ctx.say(f"import ringfeed ({b.name}, {site}): {r.tail(1)}")


@part("tests", budget=300, about="the build's C++ test executables (GPU tests run where a GPU "
      "is), each under a timeout",
      settings={"tests": "", "filter": "", "timeout": 240},
      tiny={"tests": "core_units_test", "timeout": 20})
def tests(ctx, s):
    b = ctx.after
    chosen = names(s.tests) or b.test_executables()
    if not chosen:
        ctx.skip("tests", f"no test executables in {b.tests}")
        return
    env = dict(ctx.env)
    if s.filter:
        env["GTEST_FILTER"] = s.filter
    elif "RINGFEED_FASHION_MNIST" not in env:
        env["GTEST_FILTER"] = "-FashionMnist.*"  # its dataset is Debian's (carry.sh fmnist)
    failed = []
    for t in chosen:
        path = os.path.join(b.tests, t)
        if not os.path.exists(path):
            ctx.say(f"{t}: not in {b.tests}")
            failed.append(t)
            continue
        if not ctx.fits(20, f"test {t}"):
            break
        if not gtest(ctx, path, timeout=s.timeout, env=env):
            failed.append(t)
    ctx.figure("failed", failed)
    ctx.say(f"tests: {'all passed' if not failed else 'FAILED: ' + ' '.join(failed)}")
    if failed:
        ctx.fail(f"{len(failed)} test executables failed")


@part("pytest", budget=300, about="python/tests (GPU cases where a GPU is) against the build's "
      "extension (FILES: e.g. python/tests/test_examples_resnet.py, ResNet-50's example)",
      settings={"files": "python/tests", "args": ""},
      tiny={"files": "python/tests/test_package.py"})
def pytest_part(ctx, s):
    ctx.extension()
    targets = [os.path.join(ROOT, f) for f in names(s.files)]
    if not pytest(ctx, "pytest", targets, args=shlex.split(s.args)):
        ctx.fail("pytest failed")


@part("wheel", budget=540, about="`pip wheel .` of this tree with CUDA against the package's "
      "static libraries (deps/), installed in a fresh venv: ldd, import, entry points, "
      "python/tests", settings={"cuda": "on", "build": True, "pytest_args": ""},
      tiny={"cuda": "off", "build": False})
def wheel(ctx, s):
    b = ctx.after
    deps = os.path.join(b.root, "deps")
    if b.kind != "package" or not os.path.isdir(os.path.join(deps, "lib")):
        ctx.skip("wheel", f"{b.root} has no deps/ (package_device.sh's archive carries it)")
        return
    ctx.say(f"deps/lib: {' '.join(sorted(os.listdir(os.path.join(deps, 'lib'))))}")
    work = os.path.join(ctx.work, "wheel")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    env = dict(ctx.env, PIP_NO_INDEX="1", CMAKE_BUILD_PARALLEL_LEVEL=str(os.cpu_count()),
               CMAKE_ARGS=f"-DCMAKE_PREFIX_PATH={deps};{b.root}",
               RINGFEED_WHEEL_BUILD_DIR=os.path.join(work, "build"))
    env.pop("PYTHONPATH", None)
    if shutil.which("ninja"):
        env["CMAKE_GENERATOR"] = "Ninja"
    cmd = [ctx.python_exe, "-m", "pip", "wheel", ROOT, "-v", "--no-build-isolation", "--no-deps",
           "--no-cache-dir", f"--config-settings=cuda={s.cuda}", "-w", os.path.join(work, "dist")]
    if not s.build:
        ctx.skip("pip wheel", "--cpu compiles no wheel (tools/test_wheel.sh is the CPU wheel's "
                 "test); it would run: " + shlex.join(cmd))
        return
    r = ctx.run("pip-wheel", cmd, env=env)
    if not r.ok:
        ctx.fail(f"pip wheel: {r.tail(10)}")
    whl = glob.glob(os.path.join(work, "dist", "ringfeed-*.whl"))[0]
    ctx.say(f"built {os.path.basename(whl)} ({os.path.getsize(whl) / 2**20:.1f} MiB) in "
            f"{r.seconds:.0f} s")
    venv = os.path.join(work, "venv")
    vpy = os.path.join(venv, "bin", "python")
    r = ctx.run("venv", [ctx.python_exe, "-m", "venv", "--system-site-packages", venv], env=env)
    pip = [vpy, "-m", "pip"]
    if not r.ok:  # a Python without ensurepip: the venv without pip, installed by ours
        shutil.rmtree(venv, ignore_errors=True)
        if not ctx.run("venv-nopip", [ctx.python_exe, "-m", "venv", "--system-site-packages",
                                      "--without-pip", venv], env=env).ok:
            ctx.fail("python -m venv")
        pip = [ctx.python_exe, "-m", "pip", "--python", vpy]
    parent_site(ctx, venv, vpy, env)
    if not ctx.run("pip-install", [*pip, "install", "--no-index", "--no-deps", "--no-cache-dir",
                                   whl], env=env).ok:
        ctx.fail("pip install of the wheel")
    check_installed(ctx, venv, vpy, env)
    env.update(RINGFEED_TEST_WHEEL="1", RINGFEED_CONVERT=os.path.join(venv, "bin",
                                                                      "ringfeed-convert"),
               HYPOTHESIS_STORAGE_DIRECTORY=os.path.join(work, ".hypothesis"))
    env["PATH"] = os.path.join(venv, "bin") + os.pathsep + env.get("PATH", "")
    ok = pytest(ctx, "pytest-wheel", [os.path.join(ROOT, "python", "tests")], env=env,
                args=shlex.split(s.pytest_args), cwd=work, python=vpy)
    if not ok:
        ctx.fail("python/tests against the installed wheel")


def parent_site(ctx, venv, vpy, env):
    """A venv made by a venv's python sees the base interpreter's site folder, not that venv's
    (the GPU machines' python3 is /opt/torch/.venv's): a .pth file names the latter."""
    p = subprocess.run([ctx.python_exe, "-c", "import sys, sysconfig\nif sys.prefix != "
                        "sys.base_prefix:\n print('\\n'.join(dict.fromkeys(sysconfig.get_paths()"
                        "[k] for k in ('purelib', 'platlib'))))"], capture_output=True, text=True)
    if not p.stdout.strip():
        return
    vsite = subprocess.run([vpy, "-c", "import sysconfig; print(sysconfig.get_paths()"
                            "['purelib'])"], capture_output=True, text=True).stdout.strip()
    with open(os.path.join(vsite, "_ringfeed_check_parent_venv.pth"), "w") as f:
        f.write(p.stdout)
    ctx.say(f"{ctx.python_exe} is a venv: a .pth in the new one names {' '.join(p.stdout.split())}")


ALLOWED = ("linux-vdso.so.1", "/lib64/ld-linux-x86-64.so.2", "libc.so", "libm.so",
           "libstdc++.so", "libgcc_s.so", "libpthread.so", "libdl.so", "librt.so", "libcuda.so",
           "libcudart.so")


def check_installed(ctx, venv, vpy, env):
    """The installed extension links nothing beyond glibc, libstdc++, libgcc_s, libcuda and
    libcudart; `import ringfeed` imports no torch; the entry points answer --help."""
    r = ctx.run("find-extension", [vpy, "-c", "import importlib.util as u; print(u.find_spec("
                                   "'ringfeed._ringfeed').origin)"], env=env, cwd=ctx.work)
    if not r.ok:
        ctx.fail(f"no ringfeed._ringfeed in {venv}")
    ext = r.tail(1)
    needed = [x.split()[0] for x in subprocess.run(["ldd", ext], capture_output=True,
                                                   text=True).stdout.splitlines() if x.strip()]
    extra = [n for n in needed if not any(n.startswith(a) for a in ALLOWED)]
    ctx.say(f"ldd {os.path.relpath(ext, venv)}: {' '.join(needed)}")
    if extra:
        ctx.fail(f"the extension needs more than glibc, libstdc++, libcuda and libcudart: "
                 f"{' '.join(extra)}")
    r = ctx.run("import", [vpy, "-c", "import ringfeed, sys; assert 'torch' not in sys.modules; "
                           "print(ringfeed.__version__, ringfeed.__file__)"], env=env,
                cwd=ctx.work)
    if not r.ok or not r.tail(1).split()[-1].startswith(venv):
        ctx.fail(f"import ringfeed from the venv: {r.tail(2)}")
    ctx.say(f"import ringfeed (torch not imported): {r.tail(1)}")
    for prog in ("ringfeed", "ringfeed-convert"):
        r = ctx.run(f"{prog}-help", [os.path.join(venv, "bin", prog), "--help"], env=env)
        if not r.ok:
            ctx.fail(f"{prog} --help: {r.tail(3)}")
        ctx.say(f"{prog} --help: ok ({r.out.splitlines()[0] if r.out else ''})")
