"""ringfeed's PEP 517 build backend (pyproject.toml: `pip install .`, `pip wheel .`).

The standard library only, and nothing for pip to fetch where the machine has what the CMake
build needs (CMake >= 3.24, pybind11 >= 2.10: tools/install-deps.sh installs Debian's), so the
same `pip install .` works offline, with or without build isolation. Where CMake or pybind11 is
missing it asks pip for them (get_requires_for_build_wheel), as it asks for tomli on a Python
older than 3.11.

A wheel is the project's own CMake build (Release, -DRINGFEED_STATIC_DEPS=ON: liburing,
xxhash, zlib, zstd, lz4, OpenBLAS and the CUDA runtime linked statically), of the target
ringfeed_wheel alone (the extension, ringfeed and ringfeed-convert, the MPI plugin where MPI is
found), installed as the component `wheel` lays it out (python/CMakeLists.txt) and packed with
the metadata of pyproject.toml's [project] and the version of the top CMakeLists.txt.

Settings, as `--config-settings=NAME=VALUE` (pip) or in the environment:

  cuda       RINGFEED_CUDA            auto (the default: CUDA where nvcc is found), on, off (the
                                      CPU alone)
  build-dir  RINGFEED_WHEEL_BUILD_DIR the CMake build directory, kept between builds (default:
                                      build-wheel/<python>-cuda-<setting> in the source tree, a
                                      temporary one where the tree is read-only)
  cmake-args CMAKE_ARGS               more arguments for CMake's configure step (both are used)

CMAKE_BUILD_PARALLEL_LEVEL sets the build's jobs (default: every core);
CMAKE_CXX_COMPILER_LAUNCHER=ccache and the like reach CMake as they always do. A CMake option
given once stays in the kept build directory's cache, as CMake's options do.

Hooks: build_wheel, build_sdist, prepare_metadata_for_build_wheel and the get_requires_* pair.
No editable install: the package is assembled in the build tree, so an edit needs a build anyway
(the CMake way, PYTHONPATH=build/python, serves that).
"""

import base64
import hashlib
import importlib.util
import io
import os
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import tempfile
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NAME = "ringfeed"
GENERATOR = "ringfeed_build"


def _say(msg):
    print(f"{GENERATOR}: {msg}", file=sys.stderr, flush=True)


# --- Metadata ---------------------------------------------------------------------------------


def _toml():
    try:
        import tomllib  # Python 3.11
        return tomllib
    except ImportError:
        import tomli  # what get_requires_* asks pip for on older Pythons
        return tomli


def version():
    """The project's version: the top CMakeLists.txt's project(ringfeed VERSION ...)."""
    text = (ROOT / "CMakeLists.txt").read_text()
    m = re.search(r"^project\(\s*ringfeed\s+VERSION\s+([0-9]+(?:\.[0-9]+)*)", text, re.M)
    if not m:
        raise RuntimeError(f"{ROOT / 'CMakeLists.txt'}: no `project(ringfeed VERSION x.y.z ...)`")
    return m[1]


# The [project] keys this backend writes into the metadata; any other is refused rather than
# silently dropped.
_KNOWN = {"name", "description", "readme", "license", "requires-python", "dependencies",
          "optional-dependencies", "scripts", "classifiers", "keywords", "urls", "dynamic"}


def _project():
    with open(ROOT / "pyproject.toml", "rb") as f:
        project = _toml().load(f)["project"]
    unknown = sorted(set(project) - _KNOWN)
    if unknown:
        raise RuntimeError(f"pyproject.toml: [project] keys this backend does not write: {unknown}")
    if project.get("name") != NAME or project.get("dynamic") != ["version"]:
        raise RuntimeError('pyproject.toml: [project] needs name = "ringfeed" and dynamic = '
                           '["version"] (the version is the top CMakeLists.txt\'s)')
    return project


def _dist_info():
    return f"{NAME}-{version()}.dist-info"


def metadata():
    """The METADATA (core metadata 2.1) of pyproject.toml's [project]."""
    p = _project()
    lines = ["Metadata-Version: 2.1", f"Name: {NAME}", f"Version: {version()}"]
    if "description" in p:
        lines.append(f"Summary: {p['description']}")
    if "keywords" in p:
        lines.append(f"Keywords: {','.join(p['keywords'])}")
    lic = p.get("license")
    if isinstance(lic, dict) and "text" in lic:
        lines.append(f"License: {lic['text']}")
    elif isinstance(lic, str):
        lines.append(f"License: {lic}")
    for c in p.get("classifiers", []):
        lines.append(f"Classifier: {c}")
    for label, url in p.get("urls", {}).items():
        lines.append(f"Project-URL: {label}, {url}")
    if "requires-python" in p:
        lines.append(f"Requires-Python: {p['requires-python']}")
    for d in p.get("dependencies", []):
        lines.append(f"Requires-Dist: {d}")
    for extra, deps in p.get("optional-dependencies", {}).items():
        lines.append(f"Provides-Extra: {extra}")
        for d in deps:
            lines.append(f'Requires-Dist: {d}; extra == "{extra}"')
    body = ""
    readme = p.get("readme")
    if readme:
        path = readme if isinstance(readme, str) else readme["file"]
        kind = "text/markdown" if path.endswith(".md") else "text/plain"
        lines.append(f"Description-Content-Type: {kind}")
        body = (ROOT / path).read_text(encoding="utf-8")
    return "\n".join(lines) + "\n\n" + body


def _entry_points():
    scripts = _project().get("scripts", {})
    if not scripts:
        return None
    return "[console_scripts]\n" + "".join(f"{k} = {v}\n" for k, v in scripts.items())


def _dist_info_files():
    """{name in the .dist-info directory: bytes}, WHEEL and RECORD aside: the metadata, the entry
    points and the project's LICENSE."""
    files = {"METADATA": metadata().encode(), "LICENSE": (ROOT / "LICENSE").read_bytes()}
    ep = _entry_points()
    if ep:
        files["entry_points.txt"] = ep.encode()
    return files


# --- Settings ---------------------------------------------------------------------------------


def _setting(config_settings, name, env):
    value = (config_settings or {}).get(name)
    if value is None:
        value = os.environ.get(env)
    return value


def _cuda(config_settings):
    value = (_setting(config_settings, "cuda", "RINGFEED_CUDA") or "auto").strip().upper()
    if value not in ("AUTO", "ON", "OFF"):
        raise ValueError(f"cuda (RINGFEED_CUDA) must be auto, on or off, not {value.lower()!r}")
    return value


def _python_tag():
    if sys.implementation.name != "cpython":
        raise RuntimeError(f"ringfeed's wheel is built for CPython, not {sys.implementation.name}")
    return f"cp{sys.version_info[0]}{sys.version_info[1]}"


def wheel_tag():
    """{python}-{abi}-{platform}: the extension is this interpreter's."""
    py = _python_tag()
    platform = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    return f"{py}-{py}{getattr(sys, 'abiflags', '')}-{platform}"


def _build_dir(config_settings, cuda):
    given = _setting(config_settings, "build-dir", "RINGFEED_WHEEL_BUILD_DIR")
    if given:
        return Path(given).resolve()
    if os.access(ROOT, os.W_OK):
        return ROOT / "build-wheel" / f"{_python_tag()}-cuda-{cuda.lower()}"
    return Path(tempfile.mkdtemp(prefix="ringfeed-wheel-build-"))


def _cmake_args(config_settings):
    args = shlex.split(os.environ.get("CMAKE_ARGS", ""))
    given = (config_settings or {}).get("cmake-args") or []
    for a in [given] if isinstance(given, str) else given:
        args += shlex.split(a)
    return args


# --- Requirements -----------------------------------------------------------------------------


def _cmake_version(cmake):
    try:
        out = subprocess.run([cmake, "--version"], capture_output=True, text=True).stdout
    except OSError:
        return None
    m = re.search(r"version (\d+)\.(\d+)", out)
    return (int(m[1]), int(m[2])) if m else None


def _has_pybind11():
    if importlib.util.find_spec("pybind11") is not None:
        return True
    prefixes = os.environ.get("CMAKE_PREFIX_PATH", "").split(os.pathsep)
    prefixes += [sys.prefix, sys.base_prefix, "/usr", "/usr/local"]
    for p in filter(None, prefixes):
        for pattern in ("lib*/cmake/pybind11/pybind11Config.cmake",
                        "lib/*/cmake/pybind11/pybind11Config.cmake",
                        "share/cmake/pybind11/pybind11Config.cmake"):
            if any(Path(p).glob(pattern)):
                return True
    return False


def _toml_requires():
    has = importlib.util.find_spec("tomllib") or importlib.util.find_spec("tomli")
    return [] if has else ["tomli>=1.1"]


def get_requires_for_build_wheel(config_settings=None):
    requires = _toml_requires()
    cmake = shutil.which("cmake")
    if not cmake or (_cmake_version(cmake) or (0, 0)) < (3, 24):
        requires.append("cmake>=3.24")
    if not _has_pybind11():
        requires.append("pybind11>=2.10")
    return requires


def get_requires_for_build_sdist(config_settings=None):
    return _toml_requires()


# --- The build --------------------------------------------------------------------------------


def _run(cmd):
    _say("$ " + " ".join(shlex.quote(str(c)) for c in cmd))
    subprocess.run([str(c) for c in cmd], check=True)


def _cmake_build(config_settings, staging):
    """Configures and builds ringfeed_wheel, then installs the component `wheel` into staging."""
    cuda = _cuda(config_settings)
    build = _build_dir(config_settings, cuda)
    cmake = shutil.which("cmake")
    if not cmake:
        raise RuntimeError("cmake is not on PATH (CMake >= 3.24: apt install cmake, or pip's)")
    _run([cmake, "-S", ROOT, "-B", build, "-DCMAKE_BUILD_TYPE=Release",
          "-DRINGFEED_STATIC_DEPS=ON", "-DRINGFEED_TESTS=OFF", "-DRINGFEED_PYTHON=ON",
          f"-DRINGFEED_CUDA={cuda}", f"-DPython3_EXECUTABLE={sys.executable}",
          *_cmake_args(config_settings)])
    jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL") or str(os.cpu_count() or 1)
    _run([cmake, "--build", build, "--target", "ringfeed_wheel", "--parallel", jobs])
    _run([cmake, "--install", build, "--component", "wheel", "--prefix", staging, "--strip"])


def _record_hash(data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"sha256={digest}"


def _zip_time():
    epoch = int(os.environ.get("SOURCE_DATE_EPOCH", "315532800"))  # 1980-01-01: zip's earliest
    return time.gmtime(max(epoch, 315532800))[:6]


def _pack_wheel(wheel_directory, staging):
    """The wheel of staging/ringfeed and the .dist-info; returns its file name."""
    name = f"{NAME}-{version()}-{wheel_tag()}.whl"
    dist_info = _dist_info()
    entries = []  # (archive name, bytes, mode)
    for path in sorted(Path(staging, NAME).rglob("*")):
        if path.is_file():
            entries.append((path.relative_to(staging).as_posix(), path.read_bytes(),
                            path.stat().st_mode & 0o777))
    if not any(n.startswith(f"{NAME}/_ringfeed") for n, _, _ in entries):
        raise RuntimeError(f"the build installed no extension into {staging}/{NAME}")
    wheel = (f"Wheel-Version: 1.0\nGenerator: {GENERATOR} {version()}\nRoot-Is-Purelib: false\n"
             f"Tag: {wheel_tag()}\n")
    for fname, data in sorted(_dist_info_files().items()) + [("WHEEL", wheel.encode())]:
        entries.append((f"{dist_info}/{fname}", data, 0o644))
    record = io.StringIO()
    for arcname, data, _ in entries:
        record.write(f"{arcname},{_record_hash(data)},{len(data)}\n")
    record.write(f"{dist_info}/RECORD,,\n")
    entries.append((f"{dist_info}/RECORD", record.getvalue().encode(), 0o644))

    out = Path(wheel_directory, name)
    tmp = out.with_suffix(".whl.tmp")
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as z:
        for arcname, data, mode in entries:
            info = zipfile.ZipInfo(arcname, _zip_time())
            info.external_attr = (0o100000 | mode) << 16  # a regular file, its permissions
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, data)
    os.replace(tmp, out)
    return name


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    with tempfile.TemporaryDirectory(prefix="ringfeed-wheel-") as staging:
        _cmake_build(config_settings, staging)
        name = _pack_wheel(wheel_directory, staging)
    _say(f"built {name}")
    return name


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    dist_info = Path(metadata_directory, _dist_info())
    dist_info.mkdir(parents=True, exist_ok=True)
    for fname, data in _dist_info_files().items():
        (dist_info / fname).write_bytes(data)
    return dist_info.name


# --- The source distribution ------------------------------------------------------------------


def _git_files():
    """git's files of the tree (tracked, and untracked ones it does not ignore) where the tree is
    a checkout's top; None elsewhere (an unpacked sdist, even inside another repository)."""
    try:
        top = subprocess.run(["git", "-C", ROOT, "rev-parse", "--show-toplevel"],
                             capture_output=True, text=True, check=True).stdout.strip()
        if Path(top).resolve() != ROOT:
            return None
        out = subprocess.run(["git", "-C", ROOT, "ls-files", "-z", "--cached", "--others",
                              "--exclude-standard"], capture_output=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    return [n for n in out.decode().split("\0") if n]


def _source_files():
    """The tree's files: git's in a checkout, else every file but build directories' (an
    unpacked sdist)."""
    names = _git_files()
    if names is None:
        names = []
        for dirpath, dirnames, filenames in os.walk(ROOT):
            rel = Path(dirpath).relative_to(ROOT)
            dirnames[:] = [d for d in dirnames if not (
                d in (".git", "__pycache__") or (rel == Path(".") and d.startswith("build")))]
            names += [(rel / f).as_posix() for f in filenames]
    return sorted(n for n in names if n != "PKG-INFO" and (ROOT / n).is_file())


def build_sdist(sdist_directory, config_settings=None):
    base = f"{NAME}-{version()}"
    name = f"{base}.tar.gz"
    mtime = int(os.environ.get("SOURCE_DATE_EPOCH", "0")) or int(time.time())

    def add(tar, arcname, data, mode):
        info = tarfile.TarInfo(f"{base}/{arcname}")
        info.size, info.mode, info.mtime = len(data), mode, mtime
        tar.addfile(info, io.BytesIO(data))

    out = Path(sdist_directory, name)
    with tarfile.open(out, "w:gz", format=tarfile.PAX_FORMAT) as tar:
        for n in _source_files():
            path = ROOT / n
            add(tar, n, path.read_bytes(), 0o755 if os.access(path, os.X_OK) else 0o644)
        add(tar, "PKG-INFO", metadata().encode(), 0o644)
    _say(f"built {name}")
    return name
