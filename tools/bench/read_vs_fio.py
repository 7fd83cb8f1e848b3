#!/usr/bin/env python3
"""Disk-stage benchmark: `ringfeed read` against fio's io_uring engine on the same file.

Each configuration (read size, queue depth) is run by both tools; every run starts from a cold
page cache (drop_caches; needs root, otherwise the output says the runs were warm). The runs go
in rounds: each round runs every (tool, configuration) once, in an order rotated from round to
round, so drift on a shared machine hits all of them alike. Reported: the median per tool and
configuration, the ratio ringfeed / fio per configuration, and the ratio of each tool's best
median. dd (iflag=direct, bs=4M) runs once as a third, independent figure.

  tools/bench/read_vs_fio.py DATASET.rfd [--rounds 5] [--out DIR]

Prints a table and writes DIR/read_vs_fio.json.
"""
import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import time

# (read size, queue depth): ringfeed's default (whole 4 MiB chunks, depth 8) first.
CONFIGS = [("4M", 8), ("1M", 16), ("256k", 64)]
# ringfeed variants run at every configuration: name -> extra flags. (Unregistered buffers,
# --register-buffers off, were measured too: no faster on the H200 machine, 2026-11-22.)
VARIANTS = {"ringfeed": []}
# More variants, for diagnosis (--variants NAME,...): name -> (extra flags, extra environment).
DIAGNOSTIC_VARIANTS = {
    "ringfeed-noreg": (["--register-buffers", "off"], {}),
    "ringfeed-nodefer": ([], {"RINGFEED_URING_DEFER_TASKRUN": "0"}),
    "ringfeed-unpinned": (["--pinned", "off"], {}),
    "ringfeed-noverify": (["--no-verify"], {}),
    "ringfeed-64slots": (["--ring-slots", "64"], {}),
}


WARM = False  # --warm: the page cache is left alone (a shared machine's; the runs are warm)


def drop_caches():
    if WARM:
        return False
    try:
        subprocess.run(["sync"], check=True)
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
        return True
    except OSError:
        return False


def run_fio(fio, path, bs, qd):
    cmd = [fio, "--name=seqread", f"--filename={path}", "--ioengine=io_uring", "--direct=1",
           "--rw=read", f"--bs={bs}", f"--iodepth={qd}", "--output-format=json"]
    t0 = time.monotonic()
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    wall = time.monotonic() - t0
    job = json.loads(out[out.index("{"):])["jobs"][0]["read"]
    # fio's own figure (bytes over its I/O runtime) is the reference; the rate over the whole
    # process's wall time is kept beside it, since ringfeed's figure includes its start-up.
    return {"gb_per_s": job["bw_bytes"] / 1e9, "bytes": job["io_bytes"],
            "wall_gb_per_s": job["io_bytes"] / wall / 1e9, "cmd": " ".join(cmd)}


def run_ringfeed(binary, path, bs, qd, extra, tmp, env=None):
    jpath = os.path.join(tmp, "ringfeed-read.json")
    size = bs.replace("M", "MiB").replace("k", "KiB")
    cmd = [binary, "read", path, "--read-size", size, "--queue-depth", str(qd), "--json", jpath]
    subprocess.run(cmd + extra, check=True, capture_output=True, text=True,
                   env=dict(os.environ, **(env or {})))
    with open(jpath) as f:
        r = json.load(f)["runs"][0]
    return {"gb_per_s": r["gb_per_s"], "bytes": r["bytes"], "backend": r["backend"],
            "cmd": " ".join(cmd + extra)}


def run_dd(path):
    cmd = ["dd", f"if={path}", "of=/dev/null", "iflag=direct", "bs=4M"]
    t0 = time.monotonic()
    subprocess.run(cmd, check=True, capture_output=True)
    return {"gb_per_s": os.path.getsize(path) / (time.monotonic() - t0) / 1e9, "cmd": " ".join(cmd)}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dataset")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--out", default=".")
    ap.add_argument("--fio", default=os.environ.get("FIO", "fio"), help="fio ('': ringfeed alone)")
    ap.add_argument("--ringfeed", default=os.path.join(os.environ.get("RINGFEED_BIN", "build/bin"), "ringfeed"))
    ap.add_argument("--ringfeed-args", default="", help="extra flags for every ringfeed read")
    ap.add_argument("--configs", default="", help="read-size:depth pairs, e.g. 1M:16,4M:8")
    ap.add_argument("--warm", action="store_true",
                    help="never drop the page cache (a shared machine): every run is warm")
    ap.add_argument("--variants", default="", help="diagnostic ringfeed variants to add: " +
                    ",".join(DIAGNOSTIC_VARIANTS))
    a = ap.parse_args()
    global WARM
    WARM = a.warm
    os.makedirs(a.out, exist_ok=True)
    extra = shlex.split(a.ringfeed_args)
    configs = [(c.split(":")[0], int(c.split(":")[1])) for c in a.configs.split(",") if c] or CONFIGS
    variants = {k: (v, {}) for k, v in VARIANTS.items()}
    for name in filter(None, a.variants.split(",")):
        variants[name] = DIAGNOSTIC_VARIANTS[name]
    size = os.path.getsize(a.dataset)
    cold = True

    tools = ("fio", *variants) if a.fio else tuple(variants)  # --fio '': ringfeed alone
    jobs = [(tool, bs, qd) for bs, qd in configs for tool in tools]
    runs = {j: [] for j in jobs}
    for rnd in range(a.rounds):
        k = rnd % len(jobs)
        for tool, bs, qd in jobs[k:] + jobs[:k]:
            cold &= drop_caches()
            if tool == "fio":
                r = run_fio(a.fio, a.dataset, bs, qd)
            else:
                flags, env = variants[tool]
                r = run_ringfeed(a.ringfeed, a.dataset, bs, qd, flags + extra, a.out, env)
            runs[(tool, bs, qd)].append(r)
            print(f"round {rnd + 1}: {tool:14} bs={bs:>4} qd={qd:>2}: {r['gb_per_s']:.3f} GB/s", flush=True)
    cold &= drop_caches()
    dd = run_dd(a.dataset)

    def med(tool, bs, qd):
        rs = runs.get((tool, bs, qd))
        return statistics.median(r["gb_per_s"] for r in rs) if rs else None

    table = []
    for bs, qd in configs:
        f, r = med("fio", bs, qd), med("ringfeed", bs, qd)
        row = {"bs": bs, "iodepth": qd, "fio_median": f, "ringfeed_median": r,
               "ratio": r / f if f else None,
               "fio_runs": [x["gb_per_s"] for x in runs.get(("fio", bs, qd), [])]}
        for v in variants:
            row[f"{v}_median"] = med(v, bs, qd)
            row[f"{v}_runs"] = [x["gb_per_s"] for x in runs[(v, bs, qd)]]
        table.append(row)
    fio_best = max(table, key=lambda t: t["fio_median"] or 0)
    rf_best = max(table, key=lambda t: t["ringfeed_median"])
    rf_default = table[0]
    fio_top = fio_best["fio_median"]
    result = {
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "dataset": a.dataset, "file_bytes": size,
        "cold_cache": cold, "rounds": a.rounds, "dd": dd, "configs": table,
        "runs": {f"{t}:{b}:{q}": v for (t, b, q), v in runs.items()},
        "ratio_default_vs_fio_best": rf_default["ringfeed_median"] / fio_top if fio_top else None,
        "ratio_best_vs_best": rf_best["ringfeed_median"] / fio_top if fio_top else None,
    }
    with open(os.path.join(a.out, "read_vs_fio.json"), "w") as f:
        json.dump(result, f, indent=2)

    print()
    print(f"file: {a.dataset} ({size / 1e9:.2f} GB); page cache: "
          f"{'cold (dropped before every run)' if cold else 'NOT dropped (not root?)'}; {a.rounds} rounds")
    print(f"{'read size':>9} {'depth':>5} {'fio':>7} " + " ".join(f"{v:>16}" for v in variants) +
          "  ratio  (median GB/s; ratio = ringfeed / fio)")
    num = lambda x, w: f"{x:{w}.3f}" if x is not None else f"{'-':>{w}}"  # noqa: E731
    for t in table:
        print(f"{t['bs']:>9} {t['iodepth']:>5} {num(t['fio_median'], 7)} " +
              " ".join(f"{t[v + '_median']:16.3f}" for v in variants) + f"  {num(t['ratio'], 5)}")
    print(f"dd iflag=direct bs=4M (once): {dd['gb_per_s']:.3f} GB/s")
    if not a.fio:
        print("fio: not run (--fio '')")
        return 0
    print(f"ringfeed default (4MiB, depth 8) / fio best ({fio_best['bs']}, {fio_best['iodepth']}) = "
          f"{result['ratio_default_vs_fio_best']:.3f}")
    print(f"ringfeed best / fio best = {result['ratio_best_vs_best']:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
