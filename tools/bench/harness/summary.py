"""What a run leaves in $OUT: summary.json (the machine, the builds and their commits, the command
line, and every part's status, settings, figures, lines and commands), summary.md (the same, short,
for a results folder's README to quote), and logs.tar.gz (every command's output; raw logs never
go into the source tree)."""

import json
import os
import shutil
import tarfile

from .machine import banner_lines


def write(ctx, banner, argv, records):
    doc = {"machine": banner, "command": argv, "cpu_mode": ctx.cpu,
           "builds": {b.name: {"path": b.root, "kind": b.kind, "commit": b.commit}
                      for b in ctx.builds},
           "seconds": round(sum(r.seconds for r in records), 1),
           "parts": {r.name: r.as_dict() for r in records}}
    ctx.write_json("summary.json", doc)
    with open(os.path.join(ctx.out, "summary.md"), "w") as f:
        f.write(markdown(doc))


def markdown(doc):
    lines = ["# ringfeed bench run", ""]
    lines += [f"- {x}" for x in banner_lines(doc["machine"])]
    lines += [f"- build {name}: {b['kind']} {b['path']}, commit {b['commit']}"
              for name, b in doc["builds"].items()]
    lines += [f"- command: `{doc['command']}`", "",
              "| part | status | seconds | budget |", "| --- | --- | ---: | ---: |"]
    for name, p in doc["parts"].items():
        status = p["status"] + (f": {p['reason']}" if p["reason"] else "")
        lines.append(f"| {name} | {status} | {p['seconds']:.0f} | {p['budget']} |")
    for name, p in doc["parts"].items():
        if not p["lines"]:
            continue
        lines += ["", f"## {name}: {p['about']}", "", "```"] + p["lines"] + ["```"]
    return "\n".join(lines) + "\n"


def pack_logs(ctx):
    """$OUT/logs/ into $OUT/logs.tar.gz (the folder removed): one file back, not hundreds."""
    if not os.path.isdir(ctx.logs) or not os.listdir(ctx.logs):
        shutil.rmtree(ctx.logs, ignore_errors=True)
        return None
    path = os.path.join(ctx.out, "logs.tar.gz")
    with tarfile.open(path, "w:gz") as t:
        t.add(ctx.logs, arcname="logs")
    shutil.rmtree(ctx.logs)
    if os.path.getsize(path) > 15 * 2**20:
        print(f"logs.tar.gz is {os.path.getsize(path) / 2**20:.0f} MiB: the device tool returns "
              "at most 16 MiB a file (summary.md and summary.json still come back)")
    return path


def load(path):
    with open(path) as f:
        return json.load(f)
