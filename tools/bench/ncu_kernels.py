#!/usr/bin/env python3
"""Where a training step's GPU time goes, kernel by kernel, from Nsight Compute.

Runs ringfeed-bench-compute under ncu (only the timed steps: the bench brackets them with
cudaProfilerStart/Stop), reads each launch's gpu__time_duration, and prints per kernel name: the
launches per step, microseconds per step, and the share of the step. ncu serializes kernels, so
the sum is the step's kernel time without overlap or launch gaps; compare it with the bench's own
ms/step to see the launch overhead.

  tools/bench/ncu_kernels.py BENCH_BINARY [bench flags...]    (give it --batch N --steps S)
"""
import csv
import io
import subprocess
import sys
from collections import defaultdict


def main():
    bench = sys.argv[1:]
    steps = int(bench[bench.index("--steps") + 1])
    cmd = ["ncu", "--clock-control", "none", "--profile-from-start", "off", "--metrics",
           "gpu__time_duration.sum", "--csv"] + bench
    out = subprocess.run(cmd, capture_output=True, text=True)
    text = out.stdout
    start = text.find('"ID"')
    if out.returncode != 0 or start < 0:
        print(out.stdout[-3000:], out.stderr[-3000:])
        sys.exit(1)
    total = defaultdict(float)
    count = defaultdict(int)
    for row in csv.DictReader(io.StringIO(text[start:])):
        if row.get("Metric Name") != "gpu__time_duration.sum":
            continue
        value = float(row["Metric Value"].replace(",", ""))
        scale = {"nsecond": 1e-3, "usecond": 1.0, "msecond": 1e3}.get(row["Metric Unit"], 1.0)
        name = row["Kernel Name"][:90]
        total[name] += value * scale
        count[name] += 1
    step_us = sum(total.values()) / steps
    print(f"kernel time per step: {step_us:.1f} us over {sum(count.values()) / steps:.0f} "
          f"launches ({' '.join(bench[1:])})")
    for name, us in sorted(total.items(), key=lambda kv: -kv[1]):
        print(f"{us / steps:9.1f} us {100 * us / steps / step_us:5.1f}% "
              f"{count[name] / steps:4.1f}x  {name}")


if __name__ == "__main__":
    main()
