"""The package as installed: `import ringfeed` pulls in no framework, its version is the project's,
and a wheel's console entry points (ringfeed, ringfeed-convert) run the programs it bundles with
the caller's arguments and exit status. The entry point tests run against an installed wheel
(tools/test_wheel.sh) and skip against the build tree, which has no entry points."""

import os
import re
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

import ringfeed
from conftest import installed_package
from ringfeed import _tools

ROOT = Path(__file__).resolve().parents[2]


def test_import_pulls_in_no_framework():
    # A fresh interpreter with this one's environment (ctest's PYTHONPATH, or the venv).
    done = subprocess.run(
        [sys.executable, "-c", "import sys, ringfeed; "
         "print(sorted(m for m in ('torch', 'numpy', 'jax', 'tensorflow') if m in sys.modules))"],
        capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_version_is_the_projects():
    cmake = (ROOT / "CMakeLists.txt").read_text()
    version = re.search(r"^project\(ringfeed VERSION ([0-9.]+)", cmake, re.M)[1]
    assert ringfeed.__version__ == version
    if installed_package() is not None:
        from importlib import metadata
        assert metadata.version("ringfeed") == version


def test_an_entry_point_without_its_program_says_so(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(_tools, "BIN", str(tmp_path))
    with pytest.raises(SystemExit) as e:
        _tools.ringfeed_convert()
    assert e.value.code == 127
    assert capsys.readouterr().err == (
        f"ringfeed-convert: this ringfeed package ({tmp_path.parent}) bundles no ringfeed-convert "
        f"program (only a wheel does: pip install .)\n")


@pytest.fixture(scope="module")
def scripts() -> Path:
    """The directory of the installed wheel's console scripts."""
    if installed_package() is None:
        pytest.skip("ringfeed is not an installed wheel here (the build tree has no entry points)")
    bindir = Path(sysconfig.get_path("scripts"))
    for name in ("ringfeed", "ringfeed-convert"):
        assert (bindir / name).is_file(), f"no console script {name} in {bindir}"
    return bindir


def run(*args, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([str(a) for a in args], capture_output=True, text=True, timeout=120,
                          **kwargs)


def test_the_wheel_bundles_both_programs(scripts):
    for name in ("ringfeed", "ringfeed-convert"):
        path = Path(_tools.program(name))
        assert path.parent == installed_package() / "bin"
        assert os.access(path, os.X_OK), path


def test_entry_points_pass_arguments_and_exit_status_through(scripts, tmp_path):
    done = run(scripts / "ringfeed", "--help")
    assert done.returncode == 0 and done.stdout.startswith("usage: ringfeed <command>"), done
    done = run(scripts / "ringfeed-convert", "--help")
    assert done.returncode == 0 and done.stdout.startswith("Usage: ringfeed-convert"), done
    done = run(scripts / "ringfeed", "bogus")
    assert done.returncode == 2
    assert done.stderr.startswith("ringfeed: unknown command 'bogus'\n")
    done = run(scripts / "ringfeed-convert", "bogus")
    assert done.returncode == 2
    assert done.stderr == \
        "ringfeed-convert: unknown command 'bogus' (try 'ringfeed-convert --help')\n"
    missing = tmp_path / "no such.rfd"
    done = run(scripts / "ringfeed", "read", missing)
    assert done.returncode == 1
    assert done.stderr.startswith(f"ringfeed: {missing}: no such dataset"), done.stderr


def test_entry_points_make_and_read_a_dataset(scripts, tmp_path):
    data = tmp_path / "a dir" / "synth.rfd"  # a space in an argument survives the hand-over
    data.parent.mkdir()
    done = run(scripts / "ringfeed-convert", "synthetic", "--samples", "500", "--shape", "3,8,8",
               "--classes", "10", "--seed", "3", "--chunk-size", "4KiB", "-o", data, "-q")
    assert done.returncode == 0, done.stderr
    done = run(scripts / "ringfeed", "read", data, "--io", "buffered")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"ringfeed read: {data}: "), done.stdout
    assert " GB/s " in done.stdout, done.stdout
    with ringfeed.Loader(str(data), 100, device="cpu", io="buffered", dtype="uint8") as loader:
        assert loader.dataset.samples == 500
        assert sum(len(s.indices) for s, _ in loader) == 500
