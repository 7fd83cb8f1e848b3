#!/usr/bin/env python3
"""The layering check: every project include in the source folders obeys the README's layout table.

The README's "## Layout" section holds a table whose rows read
    | `folder/` | may include | what it holds |
where "may include" lists the folders (comma-separated, "-" for none) whose headers files in that
folder may include besides its own. This script reads that table (so the README cannot drift from
what is checked) and every #include "x/..." of the project's C++ and CUDA files, and fails, naming
file, line and include, on one the table does not allow. A file belongs to the row of the longest
folder that holds it (tools/convert/ before tools/). Folders the table does not list (tests/) are
not checked.

It also checks that no two modules of the library's pipeline/ (a module: a header and its .cc, .cu
or .cuh of the same name) include each other, directly or through others: each cycle is named.

Usage: check_layers.py [REPO_ROOT]   (exit 0: clean; 1: violations, one line each; 2: no table)
"""
import os
import re
import sys

SOURCE_EXT = (".h", ".cc", ".cu", ".cuh")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def read_table(readme):
    """{folder: set of folders it may include} from the README's layout table."""
    rows, in_layout = {}, False
    with open(readme, encoding="utf-8") as f:
        for line in f:
            if line.startswith("## "):
                in_layout = line.strip().lower() == "## layout"
                continue
            m = re.match(r"^\|\s*`([a-z_/]+)/`[^|]*\|([^|]*)\|", line) if in_layout else None
            if m:
                allowed = {a.strip().strip("`").rstrip("/") for a in m.group(2).split(",")}
                rows[m.group(1)] = {a for a in allowed if a and a not in ("-", "—")}
    return rows


# The folders whose modules may not include each other in a cycle.
ACYCLIC = ("pipeline",)


def module_cycles(root):
    """The cycles (each a sorted list of modules, "pipeline/x/y") among the modules of ACYCLIC."""
    edges = {}
    for top in ACYCLIC:
        for dirpath, _, files in os.walk(os.path.join(root, top)):
            for name in files:
                if not name.endswith(SOURCE_EXT):
                    continue
                path = os.path.join(dirpath, name)
                module = os.path.splitext(os.path.relpath(path, root))[0]
                with open(path, encoding="utf-8", errors="replace") as f:
                    for line in f:
                        m = INCLUDE.match(line)
                        target = os.path.splitext(m.group(1))[0] if m else None
                        if target and target != module and target.split("/")[0] in ACYCLIC:
                            edges.setdefault(module, set()).add(target)
    # Tarjan's strongly connected components, iteratively.
    index, low, on, stack, cycles, counter = {}, {}, set(), [], [], [0]
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges.get(start, ()))))]
        index[start] = low[start] = counter[0]
        counter[0] += 1
        stack.append(start)
        on.add(start)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(edges.get(w, ())))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    cycles.append(sorted(comp))
    return cycles


def top_folders(root):
    return {d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d))}


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                           os.path.join(os.path.dirname(__file__), "..", ".."))
    rows = read_table(os.path.join(root, "README.md"))
    if not rows:
        print("check_layers: no layout table in README.md (## Layout)", file=sys.stderr)
        return 2
    tops = top_folders(root)
    bad = 0
    for folder in sorted(rows):
        base = os.path.join(root, folder)
        if not os.path.isdir(base):
            print(f"check_layers: README.md lists {folder}/, which does not exist")
            bad += 1
            continue
        for dirpath, _, files in os.walk(base):
            rel_dir = os.path.relpath(dirpath, root)
            # The row of the longest listed folder that holds this directory.
            owner = max((r for r in rows if rel_dir == r or rel_dir.startswith(r + "/")), key=len)
            if owner != folder:
                continue
            for name in sorted(files):
                if not name.endswith(SOURCE_EXT):
                    continue
                path = os.path.join(dirpath, name)
                with open(path, encoding="utf-8", errors="replace") as f:
                    for n, line in enumerate(f, 1):
                        m = INCLUDE.match(line)
                        if not m or "/" not in m.group(1):
                            continue
                        inc = m.group(1)
                        if inc.split("/")[0] not in tops:
                            continue  # not the project's (a system or third-party header)
                        target = max((r for r in rows if inc.startswith(r + "/")), key=len,
                                     default=inc.split("/")[0])
                        if target == folder or target in rows[folder] or \
                                any(target.startswith(a + "/") for a in rows[folder]):
                            continue
                        print(f"{os.path.relpath(path, root)}:{n}: includes \"{inc}\": {folder}/ "
                              f"may include only {', '.join(sorted(rows[folder])) or 'itself'} "
                              f"(README.md, Layout)")
                        bad += 1
    for cycle in module_cycles(root):
        print("check_layers: these modules include each other: " + ", ".join(cycle))
        bad += 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
