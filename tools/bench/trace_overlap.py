#!/usr/bin/env python3
"""What else ran on the GPU beside a model, and what it cost the model: reads a torch.profiler
Chrome trace (examples/torch_resnet50.py --profile FILE, or tools/bench/run.py's resnet part with
--set resnet.profile=MODE, which runs this on it) and prints
  - the GPU time of every kernel and copy not on the model's stream (the stream with the most
    kernel time), by name: the loader's (nvJPEG's conversion kernels and copies, ringfeed's crop
    kernel, the pinned copies of the CPU share);
  - the model's kernels that overlapped them, grouped by which of them they overlapped, and the
    time those took beyond the same kernels' mean when nothing else ran ("extra");
  - the model stream's busy share of its span and its idle gaps.

    tools/bench/trace_overlap.py resnet-profile.json.gz
"""

import argparse
import collections
import gzip
import json


def kind(name: str) -> str:
    """A short name for a kernel or copy beside the model."""
    for key, short in (("ResampleCrops", "ringfeed crop kernel"), ("nvjpeg::", "nvJPEG kernel"),
                       ("Pageable", "copy from pageable memory"),
                       ("Pinned", "copy from pinned memory")):
        if key in name:
            return short
    return name[:40]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("trace", help="a Chrome trace (.json or .json.gz)")
    args = p.parse_args()
    opener = gzip.open if args.trace.endswith(".gz") else open
    with opener(args.trace, "rt") as f:
        events = json.load(f)["traceEvents"]
    gpu = [e for e in events if e.get("ph") == "X"
           and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    per_stream = collections.Counter()
    for e in gpu:
        if e["cat"] == "kernel":
            per_stream[e["args"].get("stream")] += e["dur"]
    model_stream = per_stream.most_common(1)[0][0]
    model = [e for e in gpu if e["args"].get("stream") == model_stream and e["cat"] == "kernel"]
    beside = sorted((e["ts"], e["ts"] + e["dur"], kind(e["name"])) for e in gpu
                    if e["args"].get("stream") != model_stream)

    totals = collections.defaultdict(lambda: [0, 0.0])
    for s, f, k in beside:
        totals[k][0] += 1
        totals[k][1] += f - s
    print(f"beside the model (stream {model_stream}), GPU time:")
    for k, (n, us) in sorted(totals.items(), key=lambda kv: -kv[1][1]):
        print(f"  {us / 1e3:9.2f} ms  {n:6d}x  {k}")

    alone = collections.defaultdict(list)
    overlapped = collections.defaultdict(lambda: collections.defaultdict(list))
    for e in model:
        a, b = e["ts"], e["ts"] + e["dur"]
        with_ = sorted({k for s, f, k in beside if s < b and f > a})
        name = e["name"][:80]
        if with_:
            overlapped[" + ".join(with_)][name].append(e["dur"])
        else:
            alone[name].append(e["dur"])
    print("the model's kernels that ran beside them (extra: beyond the same kernel's mean alone):")
    for key, by_name in sorted(overlapped.items()):
        n, extra = 0, 0.0
        for name, durs in by_name.items():
            if alone[name]:
                mean = sum(alone[name]) / len(alone[name])
                extra += sum(durs) - mean * len(durs)
                n += len(durs)
        print(f"  {n:6d} kernels, extra {extra / 1e3:8.2f} ms: beside {key}")

    spans = sorted((e["ts"], e["ts"] + e["dur"]) for e in model)
    span = spans[-1][1] - spans[0][0]
    busy = sum(f - s for s, f in spans)
    gaps = [spans[i + 1][0] - spans[i][1] for i in range(len(spans) - 1)]
    print(f"the model's stream: busy {busy / 1e3:.1f} of {span / 1e3:.1f} ms "
          f"({busy / span:.3f}); idle gaps over 50 us: {sum(1 for g in gaps if g > 50)}, "
          f"{sum(g for g in gaps if g > 50) / 1e3:.1f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
