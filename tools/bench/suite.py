#!/usr/bin/env python3
"""ringfeed's benchmark suite: every stage against its physical limit, and against PyTorch's
DataLoader, in one run on a GPU machine.

  tools/bench/suite.py [--size 16GiB] [--quick] [--out bench-out] [--data-dir DIR] [--bin DIR]
                       [--batch 256] [--rounds 4] [--peer-seconds 20] [--no-peer] [--no-managed]

What one run does (every disk figure from a cold page cache: caches are dropped before each run
when the suite runs as root; the report says when they could not be):
  data     a synthetic CIFAR-shaped uint8 dataset of --size (reused when already there), a second
           one of --small-size for the memory comparison, and a float32 column-major file in the
           predecessor's layout (--small-size of floats) converted with ringfeed-convert, timed;
  limits   raw sequential reads of the file with dd (iflag=direct bs=4M) and fio (io_uring,
           O_DIRECT, 4 MiB x 8, when fio is on PATH); pinned and pageable host-to-device copies
           (ringfeed-bench-h2d: 1 GiB in 4 MiB pieces on 2 streams as the pipeline copies, and in
           64 MiB pieces on 1 stream as the peak); compute alone (ringfeed-bench-compute, data
           already on the GPU, as many steps as an epoch of the file has);
  ringfeed --rounds rounds of reader alone (ringfeed read), compute alone and a streaming epoch,
           interleaved so each ratio compares figures of one round; then a managed epoch (load
           time apart), the naive pread -> copy -> step loop (ringfeed-bench-naive), and the
           streaming and managed modes on the small dataset (memory at two sizes);
  peer     tools/bench/torch_peer.py (when torch is importable): DataLoader alone and training the
           same CNN, each from a cold cache;
  timeline a traced streaming epoch of the small dataset, drawn as a PNG (tools/bench/timeline.py).
Output in --out: results.json (every figure, the commands and the machine), table.md (the table
it prints), timeline.png, and the logs of every run. Exit status: 0, or 1 when a stage failed
(the others still run and are reported).
"""
import argparse
import json
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SAMPLE_BYTES = 3 * 32 * 32 + 1  # a stored CIFAR-shaped uint8 sample and its uint8 label
# As ringfeed's own --read-size and friends (core/units.h): K, M, G, T are powers of 1024.
UNITS = {"": 1, "b": 1, "k": 2**10, "kib": 2**10, "m": 2**20, "mib": 2**20, "g": 2**30,
         "gib": 2**30, "t": 2**40, "tib": 2**40, "kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12}


def parse_size(text):
    m = re.fullmatch(r"\s*([0-9.]+)\s*([a-z]*)\s*", text.lower())
    if not m or m.group(2) not in UNITS:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (e.g. 16GiB, 512MiB)")
    return int(float(m.group(1)) * UNITS[m.group(2)])


class Suite:
    def __init__(self, a):
        self.a = a
        self.out = os.path.abspath(a.out)
        self.logs = os.path.join(self.out, "logs")
        os.makedirs(self.logs, exist_ok=True)
        self.bin = a.bin
        self.r = {"machine": machine(), "settings": vars(a).copy(), "commands": [],
                  "cold_cache": True, "failures": []}

    # -- running things ----------------------------------------------------------------------
    def cold(self):
        subprocess.run(["sync"])
        try:
            with open("/proc/sys/vm/drop_caches", "w") as f:
                f.write("3\n")
        except OSError:
            self.r["cold_cache"] = False  # reported: the figures may come from the page cache

    def run(self, name, cmd, cold=False, timeout=900):
        """Runs cmd, its output logged to logs/NAME.log; returns (exit status, output)."""
        if cold:
            self.cold()
        self.r["commands"].append(" ".join(shlex.quote(c) for c in cmd))
        read0 = disk_read_bytes()
        t0 = time.monotonic()
        try:
            p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               timeout=timeout)
            rc, text = p.returncode, p.stdout
        except subprocess.TimeoutExpired as e:
            rc, text = 124, (e.stdout or b"").decode(errors="replace") + "\n(timed out)\n"
        except OSError as e:
            rc, text = 127, f"{cmd[0]}: {e}\n"
        with open(os.path.join(self.logs, name + ".log"), "w") as f:
            f.write(text)
        read = disk_read_bytes() - read0
        self.r.setdefault("disk_read_bytes", {})[name] = read
        print(f"  {name}: exit {rc} in {time.monotonic() - t0:.1f} s, {read / 1e9:.2f} GB read "
              "from disk", flush=True)
        return rc, text

    def fail(self, stage, why):
        self.r["failures"].append(f"{stage}: {why}")
        print(f"  {stage} FAILED: {why}", flush=True)

    def tool(self, name):
        return os.path.join(self.bin, name)

    def log_json(self, name):
        return os.path.join(self.logs, name + ".json")

    # -- stages ------------------------------------------------------------------------------
    def make_data(self):
        a, d = self.a, self.a.data_dir
        os.makedirs(d, exist_ok=True)
        self.big = self.synthetic("big", a.size // SAMPLE_BYTES, seed=1)
        self.small = self.synthetic("small", a.small_size // SAMPLE_BYTES, seed=2)
        # The predecessor's layout: float32, feature-major. Made by exporting a uint8 dataset of
        # as many samples as --small-size holds in float32, then converted back, timed.
        n = a.small_size // (4 * (SAMPLE_BYTES - 1))
        base = self.synthetic("pred-source", n, seed=3)
        prefix = os.path.join(d, f"pred-{n}")
        if not os.path.exists(prefix + "_labels.bin"):
            rc, text = self.run("pred-export", [self.tool("ringfeed-convert"), "export", base,
                                                "--format", "predecessor", "-o", prefix])
            if rc != 0:
                return self.fail("predecessor export", last_line(text))
        out = os.path.join(d, "pred-converted.rfd")
        t0 = time.monotonic()
        rc, text = self.run("pred-convert", [
            self.tool("ringfeed-convert"), "predecessor", "--images", prefix + "_images.bin",
            "--labels", prefix + "_labels.bin", "--shape", "3,32,32", "--dtype", "uint8",
            "--scale", "1", "-o", out], cold=True)
        secs = time.monotonic() - t0
        if rc != 0:
            return self.fail("predecessor conversion", last_line(text))
        in_bytes = os.path.getsize(prefix + "_images.bin") + os.path.getsize(prefix + "_labels.bin")
        self.r["conversion"] = {"input": "predecessor float32 column-major", "samples": n,
                                "input_bytes": in_bytes, "output_bytes": os.path.getsize(out),
                                "seconds": secs, "input_gb_per_s": in_bytes / secs / 1e9}
        os.unlink(out)

    def synthetic(self, name, samples, seed):
        path = os.path.join(self.a.data_dir, f"synthetic-{samples}-seed{seed}.rfd")
        made_in = None
        if os.path.exists(path):
            print(f"  {name}: reusing {path}")
        else:
            t0 = time.monotonic()
            rc, text = self.run(f"make-{name}", [
                self.tool("ringfeed-convert"), "synthetic", "--samples", str(samples), "--shape",
                "3,32,32", "--classes", "10", "--seed", str(seed), "-o", path, "-q"])
            if rc != 0:
                raise SystemExit(f"suite: cannot make {path}: {last_line(text)}")
            made_in = time.monotonic() - t0
        self.r.setdefault("datasets", {})[name] = {
            "path": path, "samples": samples, "bytes": os.path.getsize(path), "made_in_s": made_in}
        return path

    def limits(self):
        big, lim = self.big, self.r.setdefault("limits", {})
        rc, text = self.run("dd", ["dd", f"if={big}", "of=/dev/null", "iflag=direct", "bs=4M"],
                            cold=True)
        m = re.search(r"(\d+) bytes .* copied, ([0-9.]+) s", text)
        if rc == 0 and m:
            lim["dd_gb_per_s"] = int(m.group(1)) / float(m.group(2)) / 1e9
        else:
            self.fail("dd", last_line(text))
        if shutil.which("fio"):
            rc, text = self.run("fio", [
                "fio", "--name=seq", f"--filename={big}", "--rw=read", "--bs=4M", "--iodepth=8",
                "--ioengine=io_uring", "--direct=1", "--output-format=json"], cold=True)
            try:
                bw = json.loads(text[text.index("{"):])["jobs"][0]["read"]["bw_bytes"]
                lim["fio_gb_per_s"] = bw / 1e9
            except (ValueError, KeyError, IndexError):
                self.fail("fio", last_line(text))
        else:
            lim["fio_gb_per_s"] = None
            print("  fio: not on PATH, skipped")
        for name, chunk, streams in (("pipeline", "4MiB", "2"), ("peak", "64MiB", "1")):
            rc, text = self.run(f"h2d-{name}", [
                self.tool("ringfeed-bench-h2d"), "--chunk", chunk, "--streams", streams,
                "--json", self.log_json(f"h2d-{name}")])
            if rc != 0:
                self.fail(f"h2d {name}", last_line(text))
                continue
            for res in load(self.log_json(f"h2d-{name}"))["results"]:
                lim[f"h2d_{res['memory']}_{name}_gb_per_s"] = res["gb_per_s_median"]

    def train(self, name, data, *flags, batch=None, cold=True):
        """One epoch of `ringfeed train`; its metrics lines by event, or None."""
        metrics = os.path.join(self.logs, name + ".jsonl")
        rc, text = self.run(name, [self.tool("ringfeed"), "train", "--data", data, "--epochs", "1",
                                   "--batch-size", str(batch or self.a.batch), "--metrics",
                                   metrics, *flags], cold=cold)
        if rc != 0:
            return self.fail(name, last_line(text))
        lines = [json.loads(line) for line in open(metrics)]
        return {e["event"]: e for e in lines}

    def rounds(self):
        a, out = self.a, self.r.setdefault("rounds", [])
        samples = self.r["datasets"]["big"]["samples"]
        # Compute alone runs half an epoch's steps: long enough for sustained clocks (a burst
        # of 400 steps ran 1% faster than 16,000 on the H100), and it varies by well under 1%.
        steps = max(100, samples // a.batch // 2)
        for i in range(1, a.rounds + 1):
            print(f"round {i} of {a.rounds}", flush=True)
            row = {}
            # The reader alone twice: in stored order (against raw disk tools, which read
            # sequentially) and in the chunk order the epoch reads (what the epoch is bound by).
            for order, key in (("stored", "reader"), ("train", "reader_train_order")):
                name = f"read-{i}" if order == "stored" else f"read-{order}-{i}"
                rc, text = self.run(name, [self.tool("ringfeed"), "read", self.big, "--order",
                                           order, "--json", self.log_json(name)], cold=True)
                if rc == 0:
                    run = load(self.log_json(name))["runs"][0]
                    row[f"{key}_gb_per_s"] = run["gb_per_s"]
                    row[f"{key}_samples_per_s"] = samples / run["seconds"]
                else:
                    self.fail(f"reader ({order} order) round {i}", last_line(text))
            rc, text = self.run(f"compute-{i}", [
                self.tool("ringfeed-bench-compute"), "--batch", str(a.batch), "--bf16", "on",
                "--graph", "on", "--steps", str(steps), "--json", self.log_json(f"compute-{i}")])
            if rc == 0:
                row["compute_samples_per_s"] = load(
                    self.log_json(f"compute-{i}"))["results"][0]["samples_per_s"]
            else:
                self.fail(f"compute round {i}", last_line(text))
            m = self.train(f"stream-{i}", self.big)
            if m:
                ep = m["epoch"]
                row.update(streaming_samples_per_s=ep["samples_per_s"],
                           streaming_seconds=ep["seconds"], waited_share=ep["data_wait_share"],
                           reader_held_share=ep.get("reader_held_share"),
                           disk_gb_per_s=ep["disk_gb_per_s"], gpu_bytes=ep["gpu_bytes"],
                           peak_rss_bytes=m["end"]["peak_rss_bytes"],
                           first_batch_ms=m["end"]["first_batch_ms"])
            reader = row.get("reader_train_order_samples_per_s")
            if reader and {"compute_samples_per_s", "streaming_samples_per_s"} <= set(row):
                bound = min(reader, row["compute_samples_per_s"])
                row["streaming_over_bound"] = row["streaming_samples_per_s"] / bound
                row["bound_by"] = "disk" if reader < row["compute_samples_per_s"] else "compute"
                if "reader_samples_per_s" in row:
                    row["streaming_over_stored_order_bound"] = row["streaming_samples_per_s"] / min(
                        row["reader_samples_per_s"], row["compute_samples_per_s"])
            out.append(row)
        # Compute-bound: a smaller batch makes compute slower than the disk, so the disk's
        # run-to-run swings (10% and more) stay out of the ratio.
        cb = a.compute_bound_batch
        for i in range(1, a.compute_bound_rounds + 1 if cb else 1):
            print(f"compute-bound round {i} of {a.compute_bound_rounds}, batch {cb}", flush=True)
            row = {"batch": cb}
            rc, text = self.run(f"compute-b{cb}-{i}", [
                self.tool("ringfeed-bench-compute"), "--batch", str(cb), "--bf16", "on",
                "--graph", "on", "--steps", str(max(100, samples // cb // 2)), "--json",
                self.log_json(f"compute-b{cb}-{i}")])
            if rc != 0:
                self.fail(f"compute-bound compute {i}", last_line(text))
                continue
            row["compute_samples_per_s"] = load(
                self.log_json(f"compute-b{cb}-{i}"))["results"][0]["samples_per_s"]
            m = self.train(f"stream-b{cb}-{i}", self.big, batch=cb)
            if m:
                ep = m["epoch"]
                row.update(streaming_samples_per_s=ep["samples_per_s"],
                           waited_share=ep["data_wait_share"], disk_gb_per_s=ep["disk_gb_per_s"],
                           first_batch_ms=m["end"]["first_batch_ms"],
                           streaming_over_compute=ep["samples_per_s"] / row["compute_samples_per_s"])
            self.r.setdefault("compute_bound_rounds", []).append(row)

    def modes(self):
        res = self.r.setdefault("modes", {})
        for size, data in (("big", self.big), ("small", self.small)):
            runs = [("streaming", [])] if size == "small" else []
            if not self.a.no_managed:
                runs.append(("managed", ["--mode", "managed"]))
            for mode, flags in runs:
                m = self.train(f"{mode}-{size}", data, *flags)
                if m:
                    res[f"{mode}_{size}"] = {
                        "setup_seconds": m["start"]["setup_seconds"],
                        "epoch_samples_per_s": m["epoch"]["samples_per_s"],
                        "epoch_seconds": m["epoch"]["seconds"],
                        "gpu_bytes": m["epoch"]["gpu_bytes"],
                        "peak_rss_bytes": m["end"]["peak_rss_bytes"],
                        "first_batch_ms": m["end"]["first_batch_ms"]}
        rc, text = self.run("naive", [self.tool("ringfeed-bench-naive"), "--data", self.big,
                                      "--batch-size", str(self.a.batch), "--seconds",
                                      str(self.a.peer_seconds), "--json", self.log_json("naive")],
                            cold=True)
        if rc == 0:
            res["naive"] = load(self.log_json("naive"))
        else:
            self.fail("naive", last_line(text))

    def peer(self):
        if self.a.no_peer:
            return
        res = self.r.setdefault("peer", {})
        for phase in ("loader", "train"):
            rc, text = self.run(f"torch-{phase}", [
                sys.executable, os.path.join(HERE, "torch_peer.py"), "--data", self.big,
                "--batch-size", str(self.a.batch), "--phase", phase, "--seconds",
                str(self.a.peer_seconds), "--json", self.log_json(f"torch-{phase}")], cold=True)
            if rc == 3:
                res["unavailable"] = last_line(text)
                print(f"  peer unavailable: {last_line(text)}")
                return
            if rc != 0:
                self.fail(f"torch {phase}", last_line(text))
                continue
            j = load(self.log_json(f"torch-{phase}"))
            res[phase] = j[phase]
            res["torch_version"] = j["torch_version"]
            res["start_method"] = j.get("start_method")
            res[f"{phase}_peak_gpu_bytes"] = j["peak_gpu_bytes"]
            res[f"{phase}_peak_rss_bytes"] = j["peak_rss_bytes"]
            if "compute_only" in j:
                res["compute_only"] = j["compute_only"]

    def timeline(self):
        trace = os.path.join(self.out, "trace.json")
        m = self.train("traced", self.small, "--trace", trace)
        if m:
            sys.path.insert(0, HERE)
            import timeline
            rc = timeline.render(trace, os.path.join(self.out, "timeline.png"), window_ms=25.0,
                                 title=f"ringfeed streaming on {self.r['machine']['gpu']}, batch "
                                 f"{self.a.batch}: 25 ms mid-epoch (cold file)")
            if rc != 0:
                self.fail("timeline", "matplotlib unavailable or no spans")

    # -- report ------------------------------------------------------------------------------
    def report(self):
        rows = table(self.r)
        text = "\n".join(["| figure | value | against | ratio | target |",
                          "|---|---:|---|---:|---|"] +
                         [f"| {a} | {b} | {c} | {d} | {e} |" for a, b, c, d, e in rows])
        m = self.r["machine"]
        head = (f"{m['gpu']}, {m['cores']} cores, {m['date']}; {gib(self.a.size)} dataset, batch "
                f"{self.a.batch}, {self.a.rounds} round(s); page cache "
                f"{'dropped before every disk run' if self.r['cold_cache'] else 'NOT dropped (not root)'}")
        with open(os.path.join(self.out, "table.md"), "w") as f:
            f.write(head + "\n\n" + text + "\n")
        tmp = os.path.join(self.out, "results.json.tmp")
        with open(tmp, "w") as f:
            json.dump(self.r, f, indent=2)
            f.write("\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, os.path.join(self.out, "results.json"))
        print("\n" + head + "\n\n" + text)
        if self.r["failures"]:
            print("\nfailed: " + "; ".join(self.r["failures"]))


def table(r):
    """(figure, value, against, ratio, target) rows from the results."""
    rows, lim, rounds = [], r.get("limits", {}), r.get("rounds", [])
    med = lambda key: median([x[key] for x in rounds if key in x])  # noqa: E731
    disk = max([v for v in (lim.get("dd_gb_per_s"), lim.get("fio_gb_per_s")) if v] or [None])
    if lim.get("dd_gb_per_s"):
        rows.append(("raw disk, dd iflag=direct bs=4M", gbs(lim["dd_gb_per_s"]), "", "", ""))
    if lim.get("fio_gb_per_s"):
        rows.append(("raw disk, fio io_uring 4M x 8", gbs(lim["fio_gb_per_s"]), "", "", ""))
    reader = med("reader_gb_per_s")
    rows.append(("ringfeed reader, stored order (median of rounds)", gbs(reader), "best raw disk",
                 ratio(reader, disk), ">= 0.95"))
    shuffled = med("reader_train_order_gb_per_s")
    rows.append(("ringfeed reader, a training epoch's chunk order (median)", gbs(shuffled),
                 "stored order", ratio(shuffled, reader), ""))
    peak = lim.get("h2d_pinned_peak_gb_per_s")
    rows.append(("pinned peak copy, 64 MiB pieces", gbs(peak), "", "", ""))
    rows.append(("pipeline copies: pinned, 4 MiB x 2 streams", gbs(lim.get(
        "h2d_pinned_pipeline_gb_per_s")), "pinned peak",
        ratio(lim.get("h2d_pinned_pipeline_gb_per_s"), peak), ""))
    rows.append(("pageable copies, 4 MiB x 2 streams", gbs(lim.get(
        "h2d_pageable_pipeline_gb_per_s")), "pinned peak",
        ratio(lim.get("h2d_pageable_pipeline_gb_per_s"), peak), ""))
    rows.append(("compute alone (median)", sps(med("compute_samples_per_s")), "", "", ""))
    rows.append(("reader alone, training's order (median)",
                 sps(med("reader_train_order_samples_per_s")), "", "", ""))
    for i, x in enumerate(rounds, 1):
        if "streaming_over_bound" in x:
            held = x.get("reader_held_share")
            held = f", reader held back {100 * held:.1f}%" if held is not None else ""
            rows.append((f"streaming epoch, round {i} ({x['bound_by']}-bound; waited "
                         f"{100 * x['waited_share']:.1f}%{held}, first batch "
                         f"{x['first_batch_ms']:.0f} ms; disk {x['disk_gb_per_s']:.2f} GB/s)",
                         sps(x["streaming_samples_per_s"]),
                         "min(reader in training's order, compute), same round",
                         f"{x['streaming_over_bound']:.3f}", ">= 0.95"))
    stream = med("streaming_samples_per_s")
    bound = min(med("reader_train_order_samples_per_s") or 0, med("compute_samples_per_s") or 0)
    if len(rounds) > 1 and stream and bound:
        rows.append(("streaming epoch, median of rounds", sps(stream),
                     "min(median reader, median compute)", ratio(stream, bound), ">= 0.95"))
    reader_sps = med("reader_train_order_samples_per_s")
    for i, x in enumerate(r.get("compute_bound_rounds", []), 1):
        if "streaming_over_compute" in x:
            # Compute-bound only where the disk (the reader's median) outran the model clearly.
            bound = ("compute-bound" if reader_sps and reader_sps > 1.1 * x["compute_samples_per_s"]
                     else f"NOT clearly compute-bound: reader {reader_sps or 0:,.0f}")
            rows.append((f"streaming epoch at batch {x['batch']}, {bound}, round {i} (waited "
                         f"{100 * x['waited_share']:.1f}%, disk {x['disk_gb_per_s']:.2f} GB/s)",
                         sps(x["streaming_samples_per_s"]),
                         f"compute alone at batch {x['batch']}: "
                         f"{x['compute_samples_per_s']:,.0f}", f"{x['streaming_over_compute']:.3f}",
                         ">= 0.95; waited < 5%"))
    modes, peer = r.get("modes", {}), r.get("peer", {})
    if "managed_big" in modes:
        m = modes["managed_big"]
        rows.append((f"managed epoch (after a {m['setup_seconds']:.1f} s load)",
                     sps(m["epoch_samples_per_s"]), "streaming epoch",
                     ratio(m["epoch_samples_per_s"], stream), "reported"))
        first = median([x["streaming_seconds"] for x in rounds if "streaming_seconds" in x])
        rows.append(("managed: load + first epoch, seconds",
                     f"{m['setup_seconds'] + m['epoch_seconds']:.1f} s", "streaming epoch",
                     ratio(first, m["setup_seconds"] + m["epoch_seconds"]), "reported"))
    if "naive" in modes:
        n = modes["naive"]
        rows.append((f"naive pread -> copy -> step (read {100 * n['read_s'] / n['seconds']:.0f}%, "
                     f"step {100 * n['step_s'] / n['seconds']:.0f}%)", sps(n["samples_per_s"]),
                     "streaming epoch", ratio(n["samples_per_s"], stream), "reported"))
    for phase, what in (("loader", f"PyTorch DataLoader alone ({peer.get('torch_version', '')}, "
                                   f"{peer.get('start_method', '?')} workers)"),
                        ("train", "PyTorch training, same CNN")):
        if phase in peer:
            p = peer[phase]
            rows.append((f"{what}: after its first batch (which took {p['first_batch_s']:.1f} s)",
                         sps(p["steady_samples_per_s"]), "", "", ""))
            read = r.get("disk_read_bytes", {}).get(f"torch-{phase}")
            rows.append((f"{what}: whole {p['seconds']:.0f} s run" +
                         (f" ({read / 1e9:.1f} GB read from disk)" if read else ""),
                         sps(p["samples_per_s"]), "", "", ""))
    if "train" in peer:
        rows.append(("ringfeed streaming / PyTorch training after its first batch", "", "",
                     ratio(stream, peer["train"]["steady_samples_per_s"]), ">= 6"))
    if "compute_only" in peer:
        rows.append(("PyTorch compute alone, same CNN", sps(peer["compute_only"]["samples_per_s"]),
                     "", "", ""))
    if "unavailable" in peer:
        rows.append(("PyTorch peer", "not run: " + peer["unavailable"], "", "", ""))
    big = rounds[0] if rounds else {}
    if "streaming_small" in modes and "gpu_bytes" in big:
        s = modes["streaming_small"]
        rows.append(("streaming memory: GPU / peak host RSS, small dataset",
                     f"{mib(s['gpu_bytes'])} / {mib(s['peak_rss_bytes'])}", "", "", ""))
        rows.append(("streaming memory: GPU / peak host RSS, big dataset",
                     f"{mib(big['gpu_bytes'])} / {mib(big['peak_rss_bytes'])}", "small dataset",
                     ratio(big["gpu_bytes"], s["gpu_bytes"]), "1.00 (constant)"))
    for size in ("small", "big"):
        if f"managed_{size}" in modes:
            m = modes[f"managed_{size}"]
            rows.append((f"managed memory: GPU / peak host RSS, {size} dataset",
                         f"{mib(m['gpu_bytes'])} / {mib(m['peak_rss_bytes'])}", "", "", ""))
    for phase in ("loader", "train"):
        if peer.get(f"{phase}_peak_gpu_bytes") is not None:
            rows.append((f"PyTorch {phase}: GPU reserved / main-process peak RSS",
                         f"{mib(peer[f'{phase}_peak_gpu_bytes'])} / "
                         f"{mib(peer[f'{phase}_peak_rss_bytes'])}", "", "", ""))
    c = r.get("conversion")
    if c:
        rows.append((f"convert {gib(c['input_bytes'])} of predecessor float32 to uint8 .rfd",
                     f"{c['seconds']:.1f} s", "", f"{c['input_gb_per_s']:.2f} GB/s in", ""))
    return rows


def disk_read_bytes():
    """Bytes read from all whole block devices so far (/proc/diskstats; partitions left out so
    nothing counts twice), to see how much each run really read."""
    try:
        disks = set(os.listdir("/sys/block"))
        total = 0
        with open("/proc/diskstats") as f:
            for line in f:
                parts = line.split()
                if len(parts) > 5 and parts[2] in disks:
                    total += int(parts[5]) * 512  # sectors read, always 512-byte units
        return total
    except OSError:
        return 0


def machine():
    def sh(cmd):
        try:
            return subprocess.run(cmd, shell=True, stdout=subprocess.PIPE, text=True,
                                  stderr=subprocess.DEVNULL).stdout.strip()
        except OSError:
            return ""
    return {"gpu": sh("nvidia-smi --query-gpu=name --format=csv,noheader | head -1") or "no GPU",
            "driver": sh("nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1"),
            "cores": os.cpu_count(), "kernel": os.uname().release,
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}


def load(path):
    with open(path) as f:
        return json.load(f)


def last_line(text):
    lines = [x for x in text.strip().splitlines() if x.strip()]
    return lines[-1] if lines else "(no output)"


def median(values):
    return statistics.median(values) if values else None


def ratio(a, b):
    return f"{a / b:.3f}" if a and b else ""


def gbs(v):
    return f"{v:.2f} GB/s" if v else "n/a"


def sps(v):
    return f"{v:,.0f} samples/s" if v else "n/a"


def mib(v):
    return f"{v / 2**20:,.0f} MiB" if v is not None else "n/a"


def gib(v):
    return f"{v / 2**30:.1f} GiB"


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog=__doc__.split("\n\n", 1)[1])
    p.add_argument("--size", type=parse_size, default=parse_size("16GiB"),
                   help="the main dataset's size (default 16GiB)")
    p.add_argument("--small-size", type=parse_size, default=parse_size("2GiB"),
                   help="the second dataset's, and the predecessor file's (default 2GiB)")
    p.add_argument("--quick", action="store_true",
                   help="2GiB and 256MiB, 1 round, 5 s peer runs: for iterating")
    p.add_argument("--out", default="bench-out")
    p.add_argument("--data-dir", default="/var/tmp/ringfeed-bench")
    p.add_argument("--bin", help="where ringfeed's programs are (default: build-static/bin or "
                   "build/bin in the source tree)")
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--rounds", type=int, default=4,
                   help="rounds of reader, compute and streaming epoch (default 4)")
    p.add_argument("--compute-bound-batch", type=int, default=128,
                   help="the batch of the compute-bound streaming rounds (0: none)")
    p.add_argument("--compute-bound-rounds", type=int, default=2)
    p.add_argument("--peer-seconds", type=float, default=20.0,
                   help="how long each PyTorch run and the naive loop run")
    p.add_argument("--no-peer", action="store_true")
    p.add_argument("--stages", help="only these stages (comma-separated: limits, rounds, modes, "
                   "peer, timeline); the data is always made")
    p.add_argument("--no-managed", action="store_true")
    a = p.parse_args()
    if a.quick:
        a.size, a.small_size, a.rounds, a.peer_seconds = 2 * 2**30, 2**28, 1, 5.0
        a.compute_bound_rounds = 1
    if a.bin is None:
        a.bin = next((d for d in (os.path.join(ROOT, "build-static", "bin"),
                                  os.path.join(ROOT, "build", "bin"))
                      if os.path.exists(os.path.join(d, "ringfeed"))), None)
        if a.bin is None:
            p.error("no ringfeed build found: pass --bin DIR")
    t0 = time.monotonic()
    s = Suite(a)
    print(f"ringfeed bench suite: {s.r['machine']['gpu']}, {gib(a.size)} dataset in "
          f"{a.data_dir}, results in {s.out}", flush=True)
    for stage in (s.make_data, s.limits, s.rounds, s.modes, s.peer, s.timeline):
        if a.stages and stage.__name__ not in a.stages.split(",") + ["make_data"]:
            continue
        print(f"== {stage.__name__}", flush=True)
        try:
            stage()
        except (OSError, ValueError, KeyError) as e:
            s.fail(stage.__name__, repr(e))
    s.r["suite_seconds"] = time.monotonic() - t0
    s.report()
    print(f"\nsuite: {s.r['suite_seconds']:.0f} s; {s.out}/results.json, table.md, timeline.png")
    return 1 if s.r["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
