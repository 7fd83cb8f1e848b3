"""Data parallelism on the GPUs of one machine: the ranks' tests under mpirun, `ringfeed train` as
one process and as ranks (warm and cold, NVLink and sockets), the gradient buckets, PyTorch DDP fed
by ringfeed.Loader against DataLoader + DistributedSampler, and a checkpoint of two CPU ranks
resumed on the GPU."""

import collections
import os
import shutil

from .. import data
from ..context import BENCH, ROOT
from ..measure import ab_lines, alternations, fmt, gtest, pytest, train
from ..registry import names, part
from .train import TINY_MODEL

SOCKETS = {"NCCL_P2P_DISABLE": "1", "NCCL_SHM_DISABLE": "1"}  # as between machines


def tiny(ctx):
    return TINY_MODEL.split() if ctx.cpu else []


def plugin(ctx):
    if "RINGFEED_MPI_PLUGIN" not in ctx.env:
        ctx.skip("mpirun", f"no libringfeed_mpi.so in {ctx.after.bin}")
        return False
    return True


@part("ranks", budget=480, about="tests/parallel_ranks_test alone and under mpirun -np R (R up "
      "to the GPUs), the mpirun end-to-end tests (2+ GPUs), and `ringfeed train` alone, "
      "mpirun -np 1 and -np G, page-cached and cold, over sockets too; builds interleaved",
      settings={"gb": 3.0, "epochs": 2, "batch": 256, "rounds": 2, "e2e": True,
                "runs": "alone mpi1 mpiG sockets alone-cold mpiG-cold"},
      tiny={"gb": data.TINY_GB, "epochs": 1, "batch": 64, "rounds": 1, "e2e": False,
            "runs": "alone mpiG"})
def ranks(ctx, s):
    if not plugin(ctx):
        return
    world = max(ctx.gpus, 2 if ctx.cpu else 1)
    test = os.path.join(ctx.after.tests, "parallel_ranks_test")
    if os.path.exists(test):
        gtest(ctx, test, "parallel_ranks_test")
        for n in range(1, world + 1):
            gtest(ctx, test, f"parallel_ranks_test_mpi{n}", launch=ctx.mpirun(n))
    else:
        ctx.skip("parallel_ranks_test", f"not in {ctx.after.tests}")
    if s.e2e and ctx.gpus >= 2:
        env = dict(ctx.env, RINGFEED_TEST_DEVICE="cuda", RINGFEED_TEST_GPUS=str(ctx.gpus),
                   MPIEXEC=shutil.which("mpirun") or "mpirun")
        pytest(ctx, "e2e", [os.path.join(ROOT, "tests", "parallel", "train")], env=env,
               args=["--ignore", os.path.join(ROOT, "tests/parallel/train/"
                                                    "test_accuracy_fashion.py")], timeout=400)
    elif s.e2e:
        ctx.skip("the end-to-end mpirun tests", "fewer than 2 GPUs")
    path = data.synthetic(ctx, s.gb, seed=7)
    common = ["--data", path, "--epochs", s.epochs, "--batch-size", s.batch, *tiny(ctx)]
    kinds = {"alone": ("alone", 0, "warm", {}), "mpi1": ("mpi1", 1, "warm", {}),
             "mpiG": (f"mpi{world}", world, "warm", {}),
             "sockets": (f"mpi{world}-sockets", world, "warm", SOCKETS),
             "alone-cold": ("alone-cold", 0, "cold", {}),
             "mpiG-cold": (f"mpi{world}-cold", world, "cold", {})}
    unknown = [k for k in names(s.runs) if k not in kinds]
    if unknown:
        ctx.fail(f"runs: no {' '.join(unknown)} ({' '.join(kinds)})")
    runs = [kinds[k] for k in names(s.runs) if k != "sockets" or world >= 2]
    table = {}
    for r, (b, (label, n, cache, extra)) in alternations(
            s.rounds, [(b, x) for x in runs for b in ctx.builds]):
        if cache == "warm":
            data.warm(path)
        flags = common + (["--io", "buffered"] if cache == "warm" else [])
        m = train(ctx, b, f"{label}-{b.name}-{r}", flags, ranks=n, cold=cache == "cold",
                  env=dict(ctx.env, **extra), launch_env=tuple(extra))
        x = m.last.get("samples_per_s") if m and m.epochs else None
        table.setdefault((label, b.name), []).append(x)
        ctx.say(f"round {r} {label} {b.name}: {m.line() if m else 'failed'}")
    ctx.figure("samples_per_s", {f"{k}:{b}": v for (k, b), v in table.items()})
    for b in ctx.builds:
        one = table.get(("alone", b.name), [])
        many = table.get((f"mpi{world}", b.name), [])
        if world > 1 and one and many and all(one) and all(many):
            ctx.say(f"{b.name}: {world} ranks / one process, page-cached: "
                    + ", ".join(f"{m / o:.2f}x" for m, o in zip(many, one)))
    if ctx.before:
        ctx.figure("after_over_before", ab_lines(ctx, "ranks", table))


@part("buckets", budget=360, gpus=2, about="gradient buckets: `ringfeed train` compute-bound "
      "(page-cached) as one process against 2 ranks with --reduce-buckets 1, auto and 5, at "
      "batch 256 and 128 a rank, and over sockets; each run's last epoch",
      settings={"gb": 3.0, "epochs": 2, "rounds": 3, "buckets": "1 auto 5", "batches": "256 128",
                "ctas": ""})
def buckets(ctx, s):
    if not plugin(ctx):
        return
    path = data.synthetic(ctx, s.gb, seed=7)
    data.warm(path)
    table = {}

    def one(label, ranks, batch, k, extra=None):
        m = train(ctx, ctx.after, label, ["--data", path, "--epochs", s.epochs, "--io",
                                          "buffered", "--batch-size", batch,
                                          "--reduce-buckets", k],
                  ranks=ranks, env=dict(ctx.env, **(extra or {})), launch_env=tuple(extra or {}))
        x = m.last.get("samples_per_s") if m and m.epochs else None
        table.setdefault(label.rsplit("-r", 1)[0], []).append(x)
        ctx.say(f"{label}: {fmt(x)} samples/s")

    for r in range(1, s.rounds + 1):
        for batch in names(s.batches):
            one(f"alone-b{batch}-r{r}", 0, batch, 1)
            for k in names(s.buckets):
                one(f"mpi2-b{batch}-buckets{k}-r{r}", 2, batch, k)
            for c in names(s.ctas):  # fewer CTAs a collective leave SMs to the backward pass
                one(f"mpi2-b{batch}-bucketsauto-ctas{c}-r{r}", 2, batch, "auto",
                    {"NCCL_MAX_CTAS": c})
        if r <= 2:
            one(f"sockets-b256-buckets1-r{r}", 2, 256, 1, SOCKETS)
            one(f"sockets-b256-bucketsauto-r{r}", 2, 256, "auto", SOCKETS)
    ctx.figure("samples_per_s", table)
    for label, xs in table.items():
        alone = table.get(f"alone-b{label.split('-b')[1].split('-')[0]}") if "-b" in label \
            else None
        if label.startswith("mpi2") and alone and all(alone) and all(xs):
            ctx.say(f"{label}: " + ", ".join(f"{x / a:.2f}x" for x, a in zip(xs, alone))
                    + " of one process, round by round")


@part("ddp", budget=480, gpus=2, torch=True, about="PyTorch DDP on 2 GPUs fed by ringfeed.Loader "
      "and by DataLoader + DistributedSampler, ringfeed.Loader on 1 GPU, `mpirun -np 2 ringfeed "
      "train`, cold, interleaved rounds; compute and the all-reduce alone (NVLink, sockets)",
      settings={"gb": 3.08, "rounds": 2, "torch1_steps": 1500})
def ddp(ctx, s):
    ctx.extension()
    path = data.synthetic(ctx, s.gb, seed=7)
    sink = os.path.join(ctx.out, "ddp.jsonl")

    def bench(label, n, phase, *extra, cold=True, env=None):
        r = ctx.run(label, [*ctx.torchrun(n), os.path.join(BENCH, "ddp_bench.py"), "--data",
                            path, "--phase", phase, "--label", label, "--json",
                            ctx.log_path(label, ".jsonl"), *extra], cold=cold, timeout=300,
                    env=env)
        line = next((x for x in reversed(r.out.splitlines()) if x.startswith("{")), "no figure")
        ctx.say(f"{label} (exit {r.rc}): {line}")
        if line.startswith("{"):
            with open(sink, "a") as f:
                f.write(line + "\n")

    for r in range(1, s.rounds + 1):
        bench(f"torch-2gpu-cold-{r}", 2, "torch")
        bench(f"ringfeed-2gpu-cold-{r}", 2, "ringfeed")
        bench(f"ringfeed-1gpu-cold-{r}", 1, "ringfeed")
        if plugin(ctx):
            m = train(ctx, ctx.after, f"ringfeed-train-2gpu-cold-{r}", [
                "--data", path, "--epochs", 1, "--batch-size", 256], ranks=2, cold=True)
            ctx.say(f"ringfeed train, 2 ranks, cold, round {r}: {m.line() if m else 'failed'}")
    bench("torch-1gpu-cold", 1, "torch", "--max-steps", s.torch1_steps)
    bench("compute-1gpu", 1, "compute", "--steps", 400, cold=False)
    bench("compute-2gpu", 2, "compute", "--steps", 400, cold=False)
    bench("allreduce-nvlink", 2, "allreduce", "--steps", 500, cold=False)
    bench("allreduce-sockets", 2, "allreduce", "--steps", 500, cold=False,
          env=dict(ctx.env, **SOCKETS))


@part("resume", budget=150, about="a checkpoint of 2 CPU ranks taken mid-epoch, resumed by one "
      "process on the GPU in streaming and in managed mode: the same order in both, every sample "
      "the ranks had left trained once; per-rank memory at two dataset sizes",
      settings={"samples": 20011, "stop": 150, "memory_gb": "2 17.5"},
      tiny={"samples": 1001, "stop": 10, "memory_gb": str(data.TINY_GB)})
def resume(ctx, s):
    if not plugin(ctx):
        return
    small = ["--conv", "4,8", "--hidden", 16, "--batch-size", 32, "--epochs", 2, "--seed", 4]
    path = data.synthetic(ctx, 0, seed=3, samples=s.samples, shape="3,16,16",
                          extra=("--chunk-size", "64KiB"))
    ck, first = ctx.work_path("ck.ckpt"), ctx.log_path("first", ".order")
    if not train(ctx, ctx.after, "two-cpu-ranks", ["--data", path, "--device", "cpu", *small,
                                                   "--max-steps", s.stop, "--checkpoint", ck,
                                                   "--dump-order", first], ranks=2):
        ctx.fail("the two CPU ranks' run")
    modes = ["streaming", "managed"] if ctx.gpus else ["streaming"]
    if not ctx.gpus:
        ctx.skip("the managed mode's resume", "no GPU")
    orders = {}
    for mode in modes:
        out = ctx.log_path(f"resumed-{mode}", ".order")
        if train(ctx, ctx.after, f"resumed-{mode}", ["--data", path, "--mode", mode, *small,
                                                      "--resume", ck, "--dump-order", out]):
            orders[mode] = epochs_of(out)
    if "streaming" not in orders:
        ctx.fail("the resumed run")
    done = [epochs_of(f"{first}.rank{r}")[1][:s.stop * 32] for r in range(2)]
    trained = collections.Counter(x for part in done for x in part)
    rest = collections.Counter(orders["streaming"][1])
    left = [i for i in range(s.samples) if trained[i] == 0]
    once = all(rest[i] == 1 for i in left)
    ctx.figure("resume", {"left": len(left), "resumed_epoch": len(orders["streaming"][1]),
                          "each_once": once, "modes_equal": len(set(map(str, orders.values())))
                          == 1})
    if "managed" in orders:
        ctx.say(f"managed order == streaming order: {orders['managed'] == orders['streaming']}")
    ctx.say(f"left by the 2 ranks: {len(left)}; the resumed epoch trains "
            f"{len(orders['streaming'][1])}, each of them {'exactly once' if once else 'NOT once'}"
            f", {sum(1 for x in rest if trained[x])} already trained (padding); the next epoch "
            f"covers {len(set(orders['streaming'].get(2, [])))} of {s.samples}")
    ctx.say("-- per-rank memory against dataset size (mpirun -np 1, streaming, one epoch, cold)")
    for gb in map(float, names(s.memory_gb)):
        p = data.synthetic(ctx, gb, seed=7)
        m = train(ctx, ctx.after, f"memory-{gb}", ["--data", p, "--epochs", 1, "--batch-size",
                                                   256, *tiny(ctx)], ranks=1, cold=True)
        if m and m.epochs:
            ctx.figure(f"memory_{gb}gb", {"gpu_bytes": m.last.get("gpu_bytes"),
                                          "rss_bytes": m.last.get("rss_bytes"),
                                          "peak_rss_bytes": m.end.get("peak_rss_bytes")})
            peak = m.end.get("peak_rss_bytes", 0) / 2**20
            ctx.say(f"{gb} GB: {m.line()}, peak RSS {peak:.0f} MiB")
        data.remove(p)


def epochs_of(path):
    """A --dump-order file: {epoch: [sample, ...]}."""
    out, cur = {}, None
    for line in open(path):
        if line.startswith("#"):
            cur = int(line.split()[-1])
            out[cur] = []
        elif line.strip():
            out[cur].append(int(line))
    return out
