#!/usr/bin/env python3
"""tools/bench/run.py keeps working where there is no GPU: every part's plumbing on tiny data.

Runs the harness with --cpu over the build tree, twice named (--pkg and --before, so the parts that
compare builds interleave two), with every part, then checks what the GPU machine's call relies
on: the run exits 0; summary.json names every registered part with a status and, for what ran, the
commands it ran; no part failed; a part that needs a GPU says "no GPU"; summary.md and
logs.tar.gz are there and nothing else is left in OUT but timeline.png. Then the errors a caller
makes: an unknown part and a --set of an unknown setting, each refused with a message naming it.

  harness_cpu_test.py BUILD_DIR
"""

import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
RUN = os.path.join(HERE, "..", "..", "..", "tools", "bench", "run.py")


def fail(why):
    print(f"FAILED: {why}")
    sys.exit(1)


def main():
    build = os.path.abspath(sys.argv[1])
    with tempfile.TemporaryDirectory(prefix="bench-harness-test-") as tmp:
        out, work = os.path.join(tmp, "out"), os.path.join(tmp, "work")
        p = subprocess.run([sys.executable, RUN, "--cpu", "--pkg", build, "--before", build,
                            "--out", out, "--work", work, "--time", "300"],
                           capture_output=True, text=True)
        print(p.stdout[-6000:], p.stderr[-3000:])
        if p.returncode != 0:
            fail(f"run.py --cpu exited {p.returncode}")
        doc = json.load(open(os.path.join(out, "summary.json")))
        listed = subprocess.run([sys.executable, RUN, "--list"], capture_output=True,
                                text=True).stdout.splitlines()[1:]
        names = [x.split()[0] for x in listed if x and not x.startswith(" ")]
        if list(doc["parts"]) != names:
            fail(f"summary.json's parts {list(doc['parts'])} are not --list's {names}")
        for name, part in doc["parts"].items():
            if part["status"] not in ("ok", "skipped"):
                fail(f"{name}: {part['status']}: {part['reason']}")
            if part["status"] == "ok" and not part["commands"] and name != "wheel":
                fail(f"{name}: ran no command")
            if part["status"] == "skipped" and not part["reason"]:
                fail(f"{name}: skipped without a reason")
        gpu_only = [n for n, pt in doc["parts"].items() if pt["status"] == "skipped"
                    and "GPU" in pt["reason"]]
        for n in ("copies", "compute", "sanitizer"):
            if n not in gpu_only:
                fail(f"{n} needs a GPU and was not skipped for it ({doc['parts'][n]})")
        left = sorted(os.listdir(out))
        if left != ["logs.tar.gz", "summary.json", "summary.md", "timeline.png"] and \
                left != ["logs.tar.gz", "summary.json", "summary.md"]:
            fail(f"OUT holds {left}")
        if "## stream" not in open(os.path.join(out, "summary.md")).read():
            fail("summary.md has no stream section")
        for args, words in ((["--parts", "nosuch"], "no part nosuch"),
                            (["--set", "stream.nosuch=1"], "stream.nosuch: no such setting")):
            p = subprocess.run([sys.executable, RUN, "--cpu", "--pkg", build, "--out", out,
                                *args], capture_output=True, text=True)
            if p.returncode == 0 or words not in p.stderr:
                fail(f"{args}: exit {p.returncode}, {p.stderr.strip()!r} (wanted {words!r})")
    print("ok")


if __name__ == "__main__":
    main()
