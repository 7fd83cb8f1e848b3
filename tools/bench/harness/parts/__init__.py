"""The parts, registered in the order `--parts all` runs them (harness/registry.py): the build and
its tests, the disk, training, quality, the Python loader, ranks, compressed chunks, images,
tokens, the sanitizer, remote datasets. A new part is one function with @part in one of these files."""

from . import setup, disk, train, quality, loader, ranks, codecs, images, tokens  # noqa: F401
from . import sanitizer, remote  # noqa: F401
