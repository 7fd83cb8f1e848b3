#!/usr/bin/env python3
"""The documentation's links resolve: every relative link and image in README.md, docs/*.md and
the results folders' pages (docs/results/*/*.md) names a file or folder of the repository, and a link's #anchor names a heading of the Markdown
file it points to (GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens).
Links to other sites (http:, https:, mailto:) are not followed. Code (indented four spaces, or
fenced) is skipped.

Usage: check_links.py [REPO_ROOT]   (exit 0: every link resolves; 1: one line per broken link)
"""
import glob
import os
import re
import sys

LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")


def prose_lines(path):
    """(line number, text) of the file's lines outside code blocks, inline code blanked."""
    fenced = False
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if line.lstrip().startswith("```"):
                fenced = not fenced
                continue
            if fenced or line.startswith("    ") or line.startswith("\t"):
                continue
            yield n, re.sub(r"`[^`]*`", "``", line)


def anchor(heading):
    """GitHub's anchor of a heading's text."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def headings(path):
    """The anchors of a Markdown file's headings (as written: `--x` keeps its hyphens)."""
    found, seen, fenced = set(), {}, False
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.lstrip().startswith("```"):
                fenced = not fenced
                continue
            m = None if fenced else re.match(r"^(#{1,6})\s+(.*?)\s*#*\s*$", line)
            if not m:
                continue
            base = anchor(m.group(2))
            k = seen.get(base, 0)
            seen[base] = k + 1
            found.add(base if k == 0 else f"{base}-{k}")
    return found


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                           os.path.join(os.path.dirname(__file__), "..", ".."))
    pages = [os.path.join(root, "README.md")]
    pages += sorted(glob.glob(os.path.join(root, "docs", "*.md")))
    pages += sorted(glob.glob(os.path.join(root, "docs", "results", "*", "*.md")))
    bad = 0
    for page in pages:
        for n, line in prose_lines(page):
            for target in LINK.findall(line):
                if re.match(r"^[a-z][a-z0-9+.-]*:", target):
                    continue  # another site
                path, _, frag = target.partition("#")
                dest = os.path.normpath(os.path.join(os.path.dirname(page), path)) if path else page
                where = f"{os.path.relpath(page, root)}:{n}: {target}"
                if not os.path.exists(dest):
                    print(f"{where}: no such file or folder")
                    bad += 1
                elif not os.path.realpath(dest).startswith(root + os.sep):
                    print(f"{where}: outside the repository")
                    bad += 1
                elif frag and dest.endswith(".md") and frag not in headings(dest):
                    print(f"{where}: {os.path.relpath(dest, root)} has no heading #{frag}")
                    bad += 1
    print(f"check_links: {len(pages)} pages, {bad} broken link(s)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
