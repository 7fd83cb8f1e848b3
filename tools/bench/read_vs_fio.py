#!/usr/bin/env python3
"""Disk-stage benchmark: `ringfeed read` against fio's io_uring engine on the same file.

Every run starts from a cold page cache (drop_caches; needs root, otherwise the table says the
runs were warm). fio and ringfeed runs are interleaved and repeated, so drift on a shared
machine hits both alike. fio is run over a small sweep of block sizes and queue depths and its
best configuration is the reference; ringfeed runs with the given flags (its defaults unless
--ringfeed-args says otherwise).

  tools/bench/read_vs_fio.py DATASET.rfd [--repeats 3] [--out DIR]

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

# (block size, queue depth) pairs tried for both tools before the interleaved comparison.
SWEEP = [("1M", 16), ("4M", 8), ("1M", 32), ("256k", 64)]


def drop_caches():
    try:
        subprocess.run(["sync"], check=True)
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
        return True
    except OSError:
        return False


def run_fio(fio, path, bs, qd, fixedbufs):
    cmd = [fio, "--name=seqread", f"--filename={path}", "--ioengine=io_uring", "--direct=1",
           "--rw=read", f"--bs={bs}", f"--iodepth={qd}", "--output-format=json"]
    if fixedbufs:
        cmd += ["--fixedbufs", "--registerfiles"]
    t0 = time.monotonic()
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    wall = time.monotonic() - t0
    job = json.loads(out[out.index("{"):])["jobs"][0]["read"]
    # fio's own figure (bytes over its I/O runtime) is the reference; the rate over the whole
    # process's wall time is kept beside it, since ringfeed's figure includes its start-up.
    return {"gb_per_s": job["bw_bytes"] / 1e9, "bytes": job["io_bytes"],
            "wall_gb_per_s": job["io_bytes"] / wall / 1e9, "cmd": " ".join(cmd)}


def run_dd(path):
    cmd = ["dd", f"if={path}", "of=/dev/null", "iflag=direct", "bs=4M"]
    t0 = time.monotonic()
    subprocess.run(cmd, check=True, capture_output=True)
    wall = time.monotonic() - t0
    return {"gb_per_s": os.path.getsize(path) / wall / 1e9, "cmd": " ".join(cmd)}


def run_ringfeed(binary, path, extra, tmp):
    jpath = os.path.join(tmp, "ringfeed-read.json")
    cmd = [binary, "read", path, "--json", jpath] + extra
    subprocess.run(cmd, check=True, capture_output=True, text=True)
    with open(jpath) as f:
        r = json.load(f)["runs"][0]
    return {"gb_per_s": r["gb_per_s"], "bytes": r["bytes"], "backend": r["backend"],
            "cmd": " ".join(cmd)}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dataset")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", default=".")
    ap.add_argument("--fio", default=os.environ.get("FIO", "fio"))
    ap.add_argument("--ringfeed", default=os.path.join(os.environ.get("RINGFEED_BIN", "build/bin"), "ringfeed"))
    ap.add_argument("--ringfeed-args", default="", help="extra flags for ringfeed read")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    extra = shlex.split(a.ringfeed_args)
    size = os.path.getsize(a.dataset)
    cold = True

    # 1. Both tools over the same sweep, once each: fio's best configuration is the reference,
    #    and ringfeed's figures show how its own flags matter on this disk.
    sweep, rf_sweep = [], []
    for bs, qd in SWEEP:
        for fixed in (False, True):
            cold &= drop_caches()
            r = run_fio(a.fio, a.dataset, bs, qd, fixed)
            r.update(bs=bs, iodepth=qd, fixedbufs=fixed)
            sweep.append(r)
            print(f"sweep bs={bs:>5} qd={qd:>3}: fio (fixedbufs={int(fixed)}) {r['gb_per_s']:.3f} GB/s", flush=True)
        cold &= drop_caches()
        size_arg = bs.replace("M", "MiB").replace("k", "KiB")
        rr = run_ringfeed(a.ringfeed, a.dataset, ["--read-size", size_arg, "--queue-depth", str(qd)], a.out)
        rr.update(bs=bs, iodepth=qd)
        rf_sweep.append(rr)
        print(f"sweep bs={bs:>5} qd={qd:>3}: ringfeed read {rr['gb_per_s']:.3f} GB/s", flush=True)
    best = max(sweep, key=lambda r: r["gb_per_s"])
    cold &= drop_caches()
    dd = run_dd(a.dataset)
    print(f"dd iflag=direct bs=4M: {dd['gb_per_s']:.3f} GB/s", flush=True)

    # 2. fio best and ringfeed, interleaved and repeated; the order alternates (fio first, then
    #    ringfeed first) so neither always runs on a disk the other has just warmed or tired.
    fio_runs, rf_runs = [], []
    for i in range(a.repeats):
        def fio_once():
            nonlocal cold
            cold &= drop_caches()
            fio_runs.append(run_fio(a.fio, a.dataset, best["bs"], best["iodepth"], best["fixedbufs"]))

        def rf_once():
            nonlocal cold
            cold &= drop_caches()
            rf_runs.append(run_ringfeed(a.ringfeed, a.dataset, extra, a.out))

        for step in ((fio_once, rf_once) if i % 2 == 0 else (rf_once, fio_once)):
            step()
        print(f"repeat {i + 1}: fio {fio_runs[-1]['gb_per_s']:.3f} GB/s, ringfeed read "
              f"{rf_runs[-1]['gb_per_s']:.3f} GB/s", flush=True)

    fio_med = statistics.median(r["gb_per_s"] for r in fio_runs)
    rf_med = statistics.median(r["gb_per_s"] for r in rf_runs)
    result = {
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "dataset": a.dataset, "file_bytes": size, "cold_cache": cold,
        "dd": dd, "fio_sweep": sweep, "ringfeed_sweep": rf_sweep, "fio_best": {k: best[k] for k in ("bs", "iodepth", "fixedbufs", "cmd")},
        "fio_runs": fio_runs, "ringfeed_runs": rf_runs,
        "fio_median_gb_per_s": fio_med, "ringfeed_median_gb_per_s": rf_med,
        "ratio": rf_med / fio_med,
    }
    with open(os.path.join(a.out, "read_vs_fio.json"), "w") as f:
        json.dump(result, f, indent=2)
    print()
    print(f"file: {a.dataset} ({size / 1e9:.2f} GB), page cache: {'cold (dropped before every run)' if cold else 'NOT dropped (not root?)'}")
    print(f"fio best config: bs={best['bs']} iodepth={best['iodepth']} fixedbufs={best['fixedbufs']}")
    print(f"{'':24}{'median GB/s':>12}  runs")
    print(f"{'fio (io_uring, direct)':24}{fio_med:12.3f}  " + " ".join(f"{r['gb_per_s']:.3f}" for r in fio_runs))
    print(f"{'ringfeed read':24}{rf_med:12.3f}  " + " ".join(f"{r['gb_per_s']:.3f}" for r in rf_runs))
    print(f"ringfeed / fio = {rf_med / fio_med:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
