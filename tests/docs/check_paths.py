#!/usr/bin/env python3
"""Every repository path the README names exists: each file or folder of the repository that
README.md names in inline code (`pipeline/loader.h`, `docs/results/`, `tools/main-job.sh`) or in
its code blocks (the quick start's commands). Links and images are check_links.py's.

A word is taken for a repository path where its first part is a top-level entry of the
repository (a folder, as in `io/uring_queue.h`; or a top-level file, `pyproject.toml`), leaving
out what the build makes (`build/`, `build-wheel/`: the .gitignore's /build*/). A folder may be
written with or without its trailing slash; a word with * or ? must match at least one path. A
word naming no top-level entry (`train.rfd`, `site-packages/nvidia`) is not a repository path
and is not checked.

Usage: check_paths.py [REPO_ROOT] [PAGE...]   (pages relative to the root; default README.md)
       (exit 0: every path exists; 1: one line per missing path)
"""
import glob
import os
import re
import sys

WORD = re.compile(r"[\w.\-/*?]+")


def top_level(root):
    """The repository's top-level entries that a page may name: neither hidden nor built."""
    return {e for e in os.listdir(root) if not e.startswith(".") and not e.startswith("build")}


def spans(path):
    """(line number, text) of each piece of a Markdown file that may name paths: its inline code
    spans outside code blocks, and the lines of its code blocks (indented or fenced)."""
    fenced = False
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if line.lstrip().startswith("```"):
                fenced = not fenced
                continue
            if fenced or line.startswith("    ") or line.startswith("\t"):
                yield n, line
                continue
            for code in re.findall(r"`([^`]+)`", line):
                yield n, code


def named_paths(text, tops):
    """The words of `text` that name a repository path."""
    for word in WORD.findall(text):
        word = word.rstrip(".")  # a sentence's full stop, in a code block's comment
        first = word.split("/", 1)[0]
        if first not in tops:
            continue
        if "/" not in word and first == word and os.path.isdir(first):
            continue  # a folder's bare name is a word too (`--component python`): not checked
        yield word


def exists(root, word):
    if "*" in word or "?" in word:
        return bool(glob.glob(os.path.join(root, word)))
    return os.path.exists(os.path.join(root, word))


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                           os.path.join(os.path.dirname(__file__), "..", ".."))
    pages = sys.argv[2:] or ["README.md"]
    os.chdir(root)
    tops = top_level(root)
    bad = checked = 0
    for page in pages:
        for n, text in spans(os.path.join(root, page)):
            for word in named_paths(text, tops):
                checked += 1
                if not exists(root, word):
                    print(f"{page}:{n}: {word}: no such file or folder in the repository")
                    bad += 1
    print(f"check_paths: {checked} path(s) named in {len(pages)} page(s), {bad} missing")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
