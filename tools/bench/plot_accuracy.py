#!/usr/bin/env python3
"""Draws and tabulates Fashion-MNIST's accuracy per configuration (issue 13's ablation).

Reads tools/bench/run.py's summary.json (its quality part), a quality.json of the campaign script
that part replaced (the results folders keep some), or `ringfeed train --metrics` JSONL files (each
file one configuration, named after the file), and writes
  - a PNG (-o): test accuracy (solid) and train accuracy (dashed) per epoch, one colour per
    configuration, in one figure; repeats of a configuration (REPEAT) are left out unless
    --with-repeats;
  - a markdown table (stdout, or --table FILE): configuration, flags, final and best test
    accuracy, final train accuracy, median samples/s; with quality.json also the repeat's
    comparison and the speed rounds (augmented / unaugmented epochs).
Usage: /usr/bin/python3 tools/bench/plot_accuracy.py OUT/quality.json -o accuracy.png [--table t.md]
           [--configs a,b,c]
       /usr/bin/python3 tools/bench/plot_accuracy.py a.jsonl b.jsonl -o accuracy.png
Needs matplotlib only for the PNG (Debian: python3-matplotlib); without -o it only tabulates.
"""
import argparse
import json
import os
import statistics
import sys


def from_jsonl(path):
    epochs = []
    for line in open(path):
        if line.strip():
            r = json.loads(line)
            if r.get("event") == "epoch":
                epochs.append(r)
    name = os.path.basename(path)
    name = name[: -len(".jsonl")] if name.endswith(".jsonl") else name
    test = [e.get("test_accuracy") for e in epochs]
    ok = [i for i, t in enumerate(test) if t is not None]
    best = max(ok, key=lambda i: test[i]) if ok else None
    return {
        "config": name, "flags": None, "repeat_of": None, "epochs": epochs,
        "final_test_accuracy": test[-1] if epochs else None,
        "final_train_accuracy": epochs[-1].get("train_accuracy") if epochs else None,
        "best_test_accuracy": test[best] if best is not None else None,
        "best_epoch": epochs[best]["epoch"] if best is not None else None,
        "median_samples_per_s":
            statistics.median(e["samples_per_s"] for e in epochs) if epochs else None,
    }


def load(paths):
    if len(paths) == 1 and paths[0].endswith(".json"):
        doc = json.load(open(paths[0]))
        if "parts" not in doc:
            return doc  # a quality.json
        q = doc["parts"].get("quality") or {}
        s = q.get("settings") or {}
        return {"accuracy": q.get("figures", {}).get("accuracy", []),
                "repeats": q.get("figures", {}).get("repeats", []), "machine": doc["machine"],
                "date": doc["machine"]["date"], "commit": doc["builds"]["after"]["commit"],
                "settings": {"EPOCHS": s.get("epochs"), "SEED": s.get("seed"),
                             "FM_BATCH": s.get("batch")}}
    return {"accuracy": [from_jsonl(p) for p in paths]}


def pct(x):
    return "–" if x is None else f"{100 * x:.2f}%"


def table(summary):
    lines = []
    s = summary.get("settings") or {}
    m = summary.get("machine") or {}
    if summary.get("date"):
        lines.append(f"{m.get('gpu') or 'no GPU'}, {m.get('cores')} cores, {summary['date']}; "
                     f"Fashion-MNIST, {s.get('EPOCHS')} epochs, seed {s.get('SEED')}, "
                     f"batch {s.get('FM_BATCH')}, commit {summary.get('commit')}")
        lines.append("")
    lines.append("| configuration | flags | final test accuracy | best test accuracy (epoch) "
                 "| final train accuracy | samples/s (median epoch) |")
    lines.append("|---|---|---:|---:|---:|---:|")
    for a in summary.get("accuracy", []):
        flags = a.get("flags")
        flags = "–" if flags is None else f"`{flags}`" if flags else "(defaults)"
        sps = a.get("median_samples_per_s")
        lines.append(f"| {a['config']} | {flags} | {pct(a.get('final_test_accuracy'))} | "
                     f"{pct(a.get('best_test_accuracy'))} ({a.get('best_epoch')}) | "
                     f"{pct(a.get('final_train_accuracy'))} | "
                     f"{'–' if sps is None else f'{sps:,.0f}'} |")
    for p in summary.get("repeats", []):
        f0, f1 = p["final_test_accuracy"]
        lines.append("")
        lines.append(f"Repeat of {p['config']} (same seed): final test accuracy {pct(f0)} and "
                     f"{pct(f1)} ({'equal' if p['final_equal'] else 'NOT equal'}); "
                     f"{p['epochs_equal']} of {p['epochs_compared']} epochs' test accuracy equal, "
                     f"largest difference {100 * p['max_test_accuracy_diff']:.2f} points.")
    speed = summary.get("speed") or {}
    if speed:
        aug = s.get("SPEED_AUGMENT")
        lines.append("")
        lines.append(f"| dataset | round | unaugmented samples/s | `--augment {aug}` samples/s "
                     "| ratio | waited for data (plain / aug) |")
        lines.append("|---|---:|---:|---:|---:|---|")
        for kind, sp in speed.items():
            what = (f"{sp.get('gb')} GB, page cache (--io buffered)" if kind == "hot"
                    else f"{sp.get('gb')} GB, cold (--io direct)")
            for r in sp["rounds"]:
                def f(v, key, fmt):
                    return "–" if not r.get(v) else format(r[v][key] or 0, fmt)
                ratio = f"{r['ratio']:.3f}" if "ratio" in r else "–"
                w = (f"{100 * (r['plain'] or {}).get('data_wait_share', 0):.1f}% / "
                     f"{100 * (r['aug'] or {}).get('data_wait_share', 0):.1f}%")
                lines.append(f"| {kind}: {what} | {r['round']} | {f('plain', 'samples_per_s', ',.0f')}"
                             f" | {f('aug', 'samples_per_s', ',.0f')} | {ratio} | {w} |")
            if sp.get("median_ratio") is not None:
                lines.append(f"| {kind}: median | | | | **{sp['median_ratio']:.3f}** | goal ≥ 0.95 |")
    return "\n".join(lines) + "\n"


def plot(summary, out, with_repeats, title):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker
    from matplotlib.lines import Line2D

    runs = [a for a in summary.get("accuracy", [])
            if a.get("epochs") and (with_repeats or not a.get("repeat_of"))]
    fig, ax = plt.subplots(figsize=(9, 5.5), dpi=120)
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    low, high, last = 1.0, 0.0, 1
    for i, a in enumerate(runs):
        c = colours[i % len(colours)]
        ep = [e["epoch"] for e in a["epochs"]]
        test = [e.get("test_accuracy") for e in a["epochs"]]
        train = [e.get("train_accuracy") for e in a["epochs"]]
        label = a["config"]
        if a.get("final_test_accuracy") is not None:
            label += f" (final {pct(a['final_test_accuracy'])}, best {pct(a['best_test_accuracy'])})"
        if any(t is not None for t in test):
            ax.plot(ep, [None if t is None else 100 * t for t in test], "-", color=c, lw=1.6,
                    label=label)
        ax.plot(ep, [100 * t for t in train], "--", color=c, lw=1.0, alpha=0.8,
                label=None if any(t is not None for t in test) else label)
        rest = [v for v in test[1:] + train[1:] if v is not None] or [v for v in test + train
                                                                      if v is not None]
        low = min([low] + rest)
        high = max([high] + [v for v in test + train if v is not None])
        last = max([last] + ep)
    ax.set_ylim(max(0, 100 * low - 1), min(100, 100 * high + 1))
    ax.set_xlim(1, last)
    ax.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
    ax.set_xlabel("epoch")
    ax.set_ylabel("accuracy (%)")
    ax.grid(alpha=0.3)
    handles, _ = ax.get_legend_handles_labels()
    handles += [Line2D([], [], color="none", label=""),
                Line2D([], [], color="k", ls="-", label="test accuracy"),
                Line2D([], [], color="k", ls="--", label="train accuracy")]
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8,
              title="configuration (test accuracy)")
    s = summary.get("settings") or {}
    m = summary.get("machine") or {}
    if title is None:
        title = "Fashion-MNIST, default model"
        if s.get("SEED"):
            title += f", seed {s['SEED']}"
        if m.get("gpu"):
            title += f" — {m['gpu'].split(',')[0]}"
        if summary.get("date"):
            title += f", {summary['date'][:10]}"
    ax.set_title(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(out, bbox_inches="tight")
    print(f"wrote {out}", file=sys.stderr)


def main():
    # The whole docstring, as written: its first line alone stopped mid-sentence.
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("inputs", nargs="+", help="quality.json, or --metrics JSONL files")
    ap.add_argument("-o", "--output", help="the PNG to write")
    ap.add_argument("--table", help="write the markdown table here instead of stdout")
    ap.add_argument("--with-repeats", action="store_true", help="also draw the repeated runs")
    ap.add_argument("--title", help="the figure's title (default: 'Fashion-MNIST, default "
                    "model' with the seed, GPU and date)")
    ap.add_argument("--configs", help="comma-separated configurations to draw, in this order "
                    "(default: all); the table keeps every one")
    args = ap.parse_args()
    summary = load(args.inputs)
    t = table(summary)
    if args.table:
        open(args.table, "w").write(t)
    else:
        sys.stdout.write(t)
    if args.output:
        if args.configs:
            runs = {a["config"]: a for a in summary.get("accuracy", [])}
            names = args.configs.split(",")
            missing = [n for n in names if n not in runs]
            if missing:
                sys.exit(f"no configuration {', '.join(missing)} in {args.inputs[0]}")
            summary = dict(summary, accuracy=[runs[n] for n in names])
        plot(summary, args.output, args.with_repeats, args.title)


if __name__ == "__main__":
    main()
