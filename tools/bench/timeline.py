#!/usr/bin/env python3
"""Draws a window of a `ringfeed train --trace` file as a PNG timeline: one row per track (read,
copy, compute), overlapping spans of a track (several reads or copies in flight) stacked in lanes,
so the overlap of the pipeline's stages can be seen at a glance.

  timeline.py TRACE.json OUT.png [--start-ms T] [--window-ms W] [--title TEXT]

Without --start-ms the window is centred on the run's middle (start-up and the end excluded).
Needs matplotlib (Debian: python3-matplotlib); exits 3 when it is not importable.
"""
import argparse
import json
import sys

COLORS = {"read": "#4c72b0", "copy": "#55a868", "train step": "#c44e52", "wait for data": "#8c8c8c"}


def load_spans(path):
    """(track name -> [(start_ms, end_ms, span name)]) from a Chrome trace file."""
    with open(path) as f:
        events = json.load(f)["traceEvents"]
    names = {e["tid"]: e["args"]["name"] for e in events if e.get("ph") == "M"}
    tracks = {}
    for e in events:
        if e.get("ph") == "X":
            start = e["ts"] / 1e3
            tracks.setdefault(names.get(e["tid"], str(e["tid"])), []).append(
                (start, start + e["dur"] / 1e3, e["name"]))
    return tracks


def lanes(spans):
    """Assigns each span the lowest lane free at its start: [(lane, span)]. Spans that touch
    (one ends as the next starts, to within a microsecond of rounding) share a lane."""
    ends, out = [], []
    for s in sorted(spans):
        lane = next((i for i, end in enumerate(ends) if end <= s[0] + 1e-3), len(ends))
        if lane == len(ends):
            ends.append(s[1])
        else:
            ends[lane] = s[1]
        out.append((lane, s))
    return out


def render(trace, png, start_ms=None, window_ms=20.0, title=None):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:
        print(f"timeline: matplotlib is not importable ({e})", file=sys.stderr)
        return 3
    tracks = load_spans(trace)
    if not tracks:
        print(f"timeline: {trace}: no spans", file=sys.stderr)
        return 1
    first = min(s[0] for spans in tracks.values() for s in spans)
    last = max(s[1] for spans in tracks.values() for s in spans)
    if start_ms is None:
        start_ms = max(first, (first + last - window_ms) / 2)
    end_ms = start_ms + window_ms
    order = [t for t in ("read", "copy", "compute") if t in tracks] + sorted(
        t for t in tracks if t not in ("read", "copy", "compute"))
    fig, ax = plt.subplots(figsize=(14, 1.2 + 0.9 * len(order)))
    y, ticks, seen = 0.0, [], set()
    for track in order:
        placed = lanes(s for s in tracks[track] if s[1] > start_ms and s[0] < end_ms)
        n = max([lane for lane, _ in placed], default=0) + 1
        height = 0.8 / n
        for lane, (s, e, name) in placed:
            label = None if name in seen else name
            seen.add(name)
            ax.broken_barh([(s - start_ms, e - s)], (y + lane * height, height * 0.9),
                           facecolors=COLORS.get(name, "#dd8452"), edgecolor="white",
                           linewidth=0.6, label=label)
        ticks.append((y + 0.4, f"{track} ({n} in flight)" if n > 1 else track))
        y += 1.0
    ax.set_yticks([t[0] for t in ticks], [t[1] for t in ticks])
    ax.set_xlim(0, window_ms)
    ax.set_ylim(y, -0.1)  # first track on top; collections do not autoscale the axes
    ax.set_xlabel(f"ms from {start_ms:.1f} ms into the run")
    ax.legend(loc="upper right", ncol=4, fontsize="small")
    ax.set_title(title or f"ringfeed streaming: {window_ms:g} ms of {trace}")
    fig.tight_layout()
    fig.savefig(png, dpi=110)
    print(f"timeline: wrote {png} ({window_ms:g} ms from {start_ms:.1f} ms)")
    return 0


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("trace")
    p.add_argument("png")
    p.add_argument("--start-ms", type=float)
    p.add_argument("--window-ms", type=float, default=20.0)
    p.add_argument("--title")
    a = p.parse_args()
    try:
        return render(a.trace, a.png, a.start_ms, a.window_ms, a.title)
    except (OSError, ValueError, KeyError) as e:
        print(f"timeline: {a.trace}: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
