"""The console entry points `ringfeed` and `ringfeed-convert` of a wheel (pyproject.toml's
[project.scripts]): each runs the program of that name bundled in the package (ringfeed/bin/),
in place of this Python process (exec), with the same arguments, so its exit status, signals and
output are the program's own. The programs find what sits beside them there (the MPI plugin) as
they do in a build tree.

A package installed by CMake (`cmake --install build --component python`) bundles no programs:
there the build's own bin/ holds them, and these entry points are not installed.
"""

import os
import sys

BIN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin")


def program(name: str) -> str:
    """The path of the bundled program `name` (which may be absent: see run)."""
    return os.path.join(BIN, name)


def run(name: str) -> None:
    """Replaces this process with the bundled program `name`, given this process's arguments; exit
    status 127 (as a shell's for a missing command) where the package bundles no such program."""
    path = program(name)
    if not os.access(path, os.X_OK):
        sys.stderr.write(f"{name}: this ringfeed package ({os.path.dirname(BIN)}) bundles no "
                         f"{name} program (only a wheel does: pip install .)\n")
        sys.exit(127)
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(path, [sys.argv[0]] + sys.argv[1:])


def ringfeed() -> None:
    run("ringfeed")


def ringfeed_convert() -> None:
    run("ringfeed-convert")
