"""What training reaches and what its options cost: Fashion-MNIST's accuracy per configuration
(and a repeat of one, the same seed: the same accuracy?), the speed of variants (augmented or not,
batch norm or not, page-cached or cold) builds interleaved, and a change that must alter nothing
(--before): the same curve, the same checkpoint bytes, an old checkpoint resumed exactly."""

import filecmp
import shlex

from .. import data
from ..measure import ab_lines, alternations, fmt, median, ratio, train
from ..registry import names, part
from .train import TINY_MODEL

SCHED = "--lr-schedule cosine --warmup-epochs 1 --label-smoothing 0.1"
CROP2 = "--augment crop:2,flip"
FINAL = f"{CROP2} {SCHED} --batch-norm --lr 0.05"  # the README's Fashion-MNIST command
ABLATION = ";".join([
    "baseline=", f"final={FINAL}", f"no-bn={CROP2} {SCHED} --lr 0.05",
    f"no-aug={SCHED} --batch-norm --lr 0.05", f"no-sched={CROP2} --batch-norm --lr 0.05",
    f"no-smooth={CROP2} --lr-schedule cosine --warmup-epochs 1 --batch-norm --lr 0.05",
    "plain-lr05=--lr 0.05", f"crop1=--augment crop:1,flip {SCHED} --batch-norm --lr 0.05"])


def tiny(ctx, flags):
    return (TINY_MODEL.split() if ctx.cpu else []) + shlex.split(flags)


@part("quality", budget=420, about="Fashion-MNIST: one `ringfeed train --test` per configuration "
      "(the README's command and each of its parts left out), REPEAT again with the same seed, "
      "each in every mode of MODES; final and best test accuracy",
      settings={"configs": ABLATION, "repeat": "final", "epochs": 30, "seed": 1, "batch": 128,
                "modes": "streaming", "fmnist": ""},
      tiny={"configs": f"final={FINAL}", "epochs": 2})
def quality(ctx, s):
    splits = data.fashion(ctx, s.fmnist)
    if not splits:
        return
    entries = [e.partition("=")[::2] for e in s.configs.split(";") if e.strip()]
    todo = list(entries) + [(f"{n}-repeat", f) for n, f in entries if n == s.repeat]
    modes = names(s.modes)
    if "managed" in modes and not ctx.gpus:
        ctx.skip("managed mode", "no GPU")
        modes = [m for m in modes if m != "managed"]
    accuracy = []
    for name, flags in todo:
        for mode in modes:
            label = name if mode == "streaming" else f"{name}@{mode}"
            if not ctx.fits(15, f"configuration {label}"):
                break
            seed = [] if "--seed" in flags.split() else ["--seed", s.seed]
            m = train(ctx, ctx.after, f"fm-{label}", [
                "--data", splits[0], "--test", splits[1], "--epochs", s.epochs, *seed,
                "--batch-size", s.batch, "--mode", mode, *tiny(ctx, flags)])
            if not (m and m.epochs):
                continue
            accuracy.append(curve(label, flags, m))
            a = accuracy[-1]
            ctx.say(f"{label:>18}: final test {pct(a['final_test_accuracy'])}, best "
                    f"{pct(a['best_test_accuracy'])} (epoch {a['best_epoch']}), final train "
                    f"{pct(a['final_train_accuracy'])}, {fmt(a['median_samples_per_s'])} "
                    f"samples/s, {len(m.epochs)} epochs")
    ctx.figure("accuracy", accuracy)
    same = []
    for a in accuracy:
        base, _, how = a["config"].partition("@")
        if base.endswith("-repeat") or how:
            o = next((x for x in accuracy if x["config"] == base.removesuffix("-repeat")), None)
            if o and o is not a:
                same.append(compare(o, a))
                c = same[-1]
                ctx.say(f"{a['config']} against {o['config']}: final {c['final_test_accuracy']}, "
                        f"{c['epochs_equal']}/{c['epochs_compared']} epochs' test accuracy equal, "
                        f"max train loss difference {c['max_train_loss_diff']:.3g}")
    ctx.figure("repeats", same)


def curve(label, flags, m):
    test = [e.get("test_accuracy") for e in m.epochs]
    best = max(range(len(test)), key=lambda i: test[i] or 0)
    keep = ("epoch", "train_accuracy", "test_accuracy", "train_loss", "test_loss", "lr",
            "samples_per_s", "seconds", "data_wait_share")
    return {"config": label, "flags": flags, "epochs": [{k: e[k] for k in keep if k in e}
                                                         for e in m.epochs],
            "final_test_accuracy": test[-1], "best_test_accuracy": test[best],
            "best_epoch": m.epochs[best]["epoch"],
            "final_train_accuracy": m.last.get("train_accuracy"),
            "median_samples_per_s": median(e["samples_per_s"] for e in m.epochs)}


def compare(a, b):
    pairs = list(zip(a["epochs"], b["epochs"]))
    return {"config": a["config"], "against": b["config"],
            "final_test_accuracy": [a["final_test_accuracy"], b["final_test_accuracy"]],
            "final_equal": a["final_test_accuracy"] == b["final_test_accuracy"],
            "epochs_equal": sum(x.get("test_accuracy") == y.get("test_accuracy")
                                for x, y in pairs),
            "epochs_compared": len(pairs),
            "max_test_accuracy_diff": max(abs((x.get("test_accuracy") or 0)
                                              - (y.get("test_accuracy") or 0)) for x, y in pairs),
            "max_train_loss_diff": max(abs(x["train_loss"] - y["train_loss"]) for x, y in pairs)}


def pct(x):
    return "-" if x is None else f"{100 * x:.2f}%"


@part("variants", budget=420, about="training variants side by side, builds interleaved: "
      "page-cached (compute-bound) and cold epochs with and without augmentation, Fashion-MNIST "
      "with and without --batch-norm; aug/plain, bn/plain and after/before",
      settings={"variants": "hot-plain hot-aug cold-plain cold-aug fm-plain fm-bn", "rounds": 2,
                "batch": 256, "hot_gb": 2.0, "hot_epochs": 3, "cold_gb": 8.0, "fm_epochs": 4,
                "fm_batch": 128, "augment": "crop:4,flip,erase:0.5", "flags": "", "fmnist": ""},
      tiny={"variants": "hot-plain hot-aug", "rounds": 1, "batch": 64, "hot_gb": data.TINY_GB,
            "hot_epochs": 2, "cold_gb": data.TINY_GB, "fm_epochs": 2})
def variants(ctx, s):
    chosen = names(s.variants)
    hot = data.synthetic(ctx, s.hot_gb, seed=2) if any(v.startswith("hot") for v in chosen) \
        else None
    cold = data.synthetic(ctx, s.cold_gb, seed=1) if any(v.startswith("cold") for v in chosen) \
        else None
    fm = data.fashion(ctx, s.fmnist) if any(v.startswith("fm") for v in chosen) else None
    aug = ["--augment", s.augment]
    args = {"hot-plain": ["--data", hot, "--io", "buffered", "--epochs", s.hot_epochs,
                          "--batch-size", s.batch],
            "cold-plain": ["--data", cold, "--epochs", 1, "--batch-size", s.batch],
            "fm-plain": ["--data", fm and fm[0], "--epochs", s.fm_epochs, "--batch-size",
                         s.fm_batch]}
    args.update({"hot-aug": args["hot-plain"] + aug, "cold-aug": args["cold-plain"] + aug,
                 "fm-bn": args["fm-plain"] + ["--batch-norm"]})
    unknown = [v for v in chosen if v not in args]
    if unknown:
        ctx.fail(f"no variant {' '.join(unknown)} ({' '.join(args)})")
    if fm is None:
        chosen = [v for v in chosen if not v.startswith("fm")]
    table = {}
    for r, (v, b) in alternations(s.rounds, [(v, b) for v in chosen for b in ctx.builds]):
        if v.startswith("hot"):
            data.warm(hot)
        m = train(ctx, b, f"{v}-{b.name}-{r}", [*args[v], "--seed", r, *tiny(ctx, s.flags)],
                  cold=v.startswith("cold"))
        x = m.rate(skip_first=True) if m else None  # the first holds the graph's capture
        table.setdefault((v, b.name), []).append(x)
        ctx.say(f"round {r} {v} {b.name}: {fmt(x)} samples/s"
                + (f" ({m.line()})" if m and m.epochs else ""))
    ctx.figure("samples_per_s", {f"{v}:{b}": x for (v, b), x in table.items()})
    for b in ctx.builds:
        for x, y in (("hot-aug", "hot-plain"), ("cold-aug", "cold-plain"), ("fm-bn", "fm-plain")):
            if (x, b.name) in table and (y, b.name) in table:
                per = [ratio(p, q) for p, q in zip(table[x, b.name], table[y, b.name])]
                med = ratio(median(table[x, b.name]), median(table[y, b.name]))
                ctx.figure(f"{x}/{y}:{b.name}", med)
                ctx.say(f"{b.name}: {x}/{y} {fmt(med, '.3f')} (rounds "
                        f"{', '.join(fmt(p, '.3f') for p in per)})")
    if ctx.before:
        ctx.figure("after_over_before", ab_lines(ctx, "variant", table))


def checkpoint_match(a, b):
    """(whether checkpoint files A and B hold the same run, how): their bytes identical; or, of
    two format versions (model/checkpoint.h's: the u32 after the 8-byte magic), every byte the
    same from the end of the header on, to the 8-byte checksum that ends each file (the newer
    header records more: version 6 a run's node_ranks), the tensors and the order's state being
    the files' tail."""
    x, y = open(a, "rb").read(), open(b, "rb").read()
    if x == y:
        return True, "identical"
    va, vb = (int.from_bytes(z[8:12], "little") if len(z) >= 12 else None for z in (x, y))
    if va == vb or min(len(x), len(y)) < 1024 + 8:
        return False, f"DIFFER (format version {va} both)"
    x, y = x[:-8], y[:-8]
    n = 0
    while n < min(len(x), len(y)) and x[-1 - n] == y[-1 - n]:
        n += 1
    same = n >= min(len(x), len(y)) - 1024  # within the first KiB: the header
    return same, (f"format versions {va} and {vb}: the last {n:,} bytes before the checksum "
                  f"{'identical' if same else 'alone identical'} (of {len(x):,} and {len(y):,}; "
                  f"the headers differ)")


@part("same", budget=540, before=True, about="a change that must alter nothing: the README's "
      "Fashion-MNIST command with each build (every epoch's loss and accuracy, and the final "
      "checkpoint's bytes, equal: past the header where the format versions differ), and "
      "BEFORE's checkpoint at step STOP resumed by AFTER (its final checkpoint AFTER's)",
      settings={"epochs": 30, "flags": FINAL, "stop": 7000, "fmnist": ""},
      tiny={"epochs": 1, "stop": 3})
def same(ctx, s):
    splits = data.fashion(ctx, s.fmnist)
    if not splits:
        return
    common = ["--data", splits[0], "--test", splits[1], "--epochs", s.epochs, *tiny(ctx, s.flags)]
    ck = {n: ctx.work_path(n + ".ckpt") for n in ("q-before", "q-after", "r-part")}
    runs = {}
    for b in ctx.builds:
        runs[b.name] = train(ctx, b, f"q-{b.name}", [*common, "--seed", 1, "--checkpoint",
                                                      ck[f"q-{b.name}"]])
    if not all(runs.values()):
        ctx.fail("a build's run failed")
    key = [[(e["epoch"], e["train_loss"], e.get("test_accuracy")) for e in runs[n].epochs]
           for n in ("before", "after")]
    equal = ctx.figure("curves_equal", key[0] == key[1])
    ctx.say(f"quality: {'every one of' if equal else 'DIFFERENT in'} {len(key[0])} epochs "
            f"(train loss, test accuracy); final test accuracy {pct(key[1][-1][2])}")
    same_bytes, how = checkpoint_match(ck["q-before"], ck["q-after"])
    ctx.figure("checkpoints_equal", same_bytes)
    ctx.say(f"quality: final checkpoints {how}")
    part = train(ctx, ctx.before, "r-part", [*common, "--seed", 1, "--max-steps", s.stop,
                                             "--checkpoint", ck["r-part"]])
    if part is None:
        ctx.fail("BEFORE's run to step STOP")
    resumed = ctx.work_path("r-resumed.ckpt")
    with open(ck["r-part"], "rb") as f, open(resumed, "wb") as g:
        g.write(f.read())
    if not train(ctx, ctx.after, "r-resumed", [*common, "--resume", resumed, "--checkpoint",
                                               resumed]):
        ctx.fail("AFTER's resume")
    # AFTER writes its own format: its final checkpoint is compared with AFTER's uninterrupted
    # run's (which the line above compared with BEFORE's).
    exact = ctx.figure("resume_exact", filecmp.cmp(ck["q-after"], resumed, False))
    ctx.say(f"resume: BEFORE's checkpoint at step {s.stop}, resumed by AFTER: final checkpoint "
            f"{'identical to' if exact else 'DIFFERENT from'} AFTER's uninterrupted run")
    if not (equal and same_bytes and exact):
        ctx.fail("the builds differ")
