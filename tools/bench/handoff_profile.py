#!/usr/bin/env python3
"""Where the hand-off from ringfeed.Loader into a PyTorch model costs time (issue 28 item 5).

The model is ringfeed's default CNN in PyTorch (torch_peer.py's, bf16 autocast, channels_last,
SGD with momentum), fed `Loader(data, B, dtype="bfloat16", layout="NHWC", device="cuda")` as the
README shows. Phases, interleaved round by round (--rounds), each --steps timed steps after
--warm untimed ones, timed between two torch.cuda.synchronize() calls:
  alone          the model stepping on one batch already on the GPU (compute alone)
  fed            the model stepping on the loader's batches
  fed_resident   the loader's batches taken (next() and torch.from_dlpack) each step, but the
                 model steps on the resident batch: the loader's host and GPU work beside the
                 model, without the data dependency
  take_only      the loader's batches taken, no model: the loader alone, and the host time of
                 next() + from_dlpack per batch with nothing else on the host
A phase may name how it takes a batch after an @ (fed@capsule, take_only@next):
  @dlpack        torch.from_dlpack of the samples and of the labels, the README's way (the default)
  @capsule       the current stream read once, the samples' __dlpack__(stream=...) its one wait,
                 the labels' __dlpack__(stream=-1), each capsule imported by torch
  @next          the ringfeed Tensors only, no torch tensor (fed_resident, take_only)
  @torch         a second loader's, tensors="torch": torch tensors made by the binding (next()
                 is the whole take)
Host time: each step's next() + from_dlpack (and its pieces: the previous batch's release, next(),
the samples' and the labels' tensors), and each step's model call (the Python that queues
its kernels), by time.perf_counter_ns: medians and 99th percentiles. A model whose host time per
step is near its GPU time is launch-bound, and any host work per batch then costs the same time.
--profile N: torch.profiler over N steps of alone and of fed in the last round; the top entries
by self CPU time and by CUDA time are printed, with the CUDA API calls a step by thread (the
training thread's beside the loader's), and the traces written to --trace-dir.

Under torchrun with 2 or more processes the model is DistributedDataParallel (NCCL) and the
loader splits the epochs over the ranks (from torch.distributed).

  handoff_profile.py --data F.rfd [--batch-size 256] [--rounds 3] [--steps 400] [--warm 100]
                     [--io buffered] [--profile 30] [--trace-dir DIR] [--json OUT]
"""
import argparse
import json
import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_peer  # noqa: E402

import ringfeed  # noqa: E402


def pct(values, q):
    if not values:
        return None
    v = sorted(values)
    return v[min(len(v) - 1, int(q * len(v)))]


def print_runtime_calls(trace, phase, steps):
    """The CUDA runtime and driver calls of a profiled phase, per thread: calls and host time a
    step, the largest first (the training thread's beside the loader's worker's)."""
    with open(trace) as f:
        events = json.load(f).get("traceEvents", [])
    per = {}
    for e in events:
        if e.get("cat") not in ("cuda_runtime", "cuda_driver") or "dur" not in e:
            continue
        k = (e.get("tid"), e.get("name"))
        n, d = per.get(k, (0, 0.0))
        per[k] = (n + 1, d + float(e["dur"]))
    print(f"== profile {phase}: CUDA API calls a step, by thread", flush=True)
    for (tid, name), (n, d) in sorted(per.items(), key=lambda kv: -kv[1][1])[:16]:
        print(f"  tid {tid!s:>8} {name:40s} {n / steps:7.2f} calls {d / steps:9.2f} us",
              flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", required=True)
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--steps", type=int, default=400)
    p.add_argument("--warm", type=int, default=100)
    p.add_argument("--io", default="")
    p.add_argument("--phases", default="alone,fed,fed_resident,take_only")
    p.add_argument("--profile", type=int, default=0)
    p.add_argument("--trace-dir", default="")
    p.add_argument("--json", default="")
    p.add_argument("--pin", action="store_true",
                   help="the loader's threads on cores other than the training thread's and "
                        "its SMT sibling, the training thread on one core of its own")
    args = p.parse_args()

    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    local = int(os.environ.get("LOCAL_RANK", "0"))
    torch.cuda.set_device(local)
    dev = torch.device("cuda", local)
    if world > 1:
        torch.distributed.init_process_group("nccl", device_id=dev)
    torch.backends.cudnn.benchmark = True
    ds = torch_peer.RfdDataset(args.data, as_tensor=True)
    net = torch_peer.build_model(ds).to(dev, memory_format=torch.channels_last)
    model = net
    if world > 1:
        model = torch.nn.parallel.DistributedDataParallel(net, device_ids=[local])
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, weight_decay=5e-4)

    def step(x, y):  # x: (N, H, W, C) bf16, normalized by the loader
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = torch.nn.functional.cross_entropy(model(x.permute(0, 3, 1, 2)), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    kw = {"io": args.io} if args.io else {}
    main_cpus = None
    if args.pin:
        cpus = sorted(os.sched_getaffinity(0))
        mine = cpus[2 * (local + 1)]
        sib = open(f"/sys/devices/system/cpu/cpu{mine}/topology/thread_siblings_list").read()
        main_cpus = {mine}
        avoid = set()
        for part in sib.strip().split(","):
            lo, _, hi = part.partition("-")
            avoid.update(range(int(lo), int(hi or lo) + 1))
        os.sched_setaffinity(0, set(cpus) - avoid)  # the loader's threads inherit this

    def open_loader(tensors):
        return ringfeed.Loader(args.data, args.batch_size, device="cuda", dtype="bfloat16",
                               layout="NHWC", normalize=True, drop_last=True, **kw,
                               **({"tensors": tensors} if tensors != "ringfeed" else {}))

    # tensors="torch" (the @torch phases): a loader of its own; the other stays idle meanwhile,
    # its buffers full
    loaders = {t: open_loader(t) for t in ["ringfeed"] + [
        "torch" for p in args.phases.split(",") if p.endswith("@torch")][:1]}
    loader = loaders["ringfeed"]
    batches = {}
    if main_cpus is not None:
        # the loader's threads start with its first batch: take it before pinning this thread
        for each in loaders.values():
            next(iter(each))
        os.sched_setaffinity(0, main_cpus)
        if rank == 0:
            print(f"pinned: training thread on {sorted(main_cpus)}", flush=True)

    def thread_cpu():
        out = {}
        for tid in os.listdir("/proc/self/task"):
            try:
                f = open(f"/proc/self/task/{tid}/stat").read().rsplit(")", 1)[1].split()
                name = open(f"/proc/self/task/{tid}/comm").read().strip()
                out[f"{name}:{tid}"] = (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")
            except OSError:
                pass
        return out

    def raw_stream():
        # the current stream's cudaStream_t as the array API numbers it (1: the legacy default)
        get = getattr(torch._C, "_cuda_getCurrentRawStream", None)
        ptr = get(local) if get is not None else torch.cuda.current_stream(dev).cuda_stream
        return ptr or 1

    held = []  # the batch handed out last: its torch tensors (or ringfeed Tensors), until the next

    def take(mode, pieces=None):
        """One batch, as `mode` takes it: dlpack (torch.from_dlpack of each, the README's way),
        capsule (the current stream read once, one wait for the batch, each capsule imported),
        next (the ringfeed Tensors only, no torch tensor), torch (tensors="torch"'s loader).
        pieces: the host time of each step."""
        tensors = "torch" if mode == "torch" else "ringfeed"
        t0 = time.perf_counter_ns()
        held.clear()  # the previous batch goes back (its DLPack deleters)
        t1 = time.perf_counter_ns()
        while True:
            try:
                x, y = next(batches[tensors])
                break
            except (StopIteration, KeyError):
                batches[tensors] = iter(loaders[tensors])
        t2 = time.perf_counter_ns()
        if mode in ("next", "torch"):
            out = (x, y)
        elif mode == "dlpack":
            tx = torch.from_dlpack(x)
            t3 = time.perf_counter_ns()
            out = (tx, torch.from_dlpack(y))
        elif mode == "capsule":
            ptr = raw_stream()
            tx = torch.utils.dlpack.from_dlpack(x.__dlpack__(stream=ptr))
            t3 = time.perf_counter_ns()
            out = (tx, torch.utils.dlpack.from_dlpack(y.__dlpack__(stream=-1)))
        else:
            raise SystemExit(f"handoff_profile.py: no take mode {mode!r}")
        t4 = time.perf_counter_ns()
        held.append(out)
        if pieces is not None:
            pieces["release"].append(t1 - t0)
            pieces["next"].append(t2 - t1)
            if mode not in ("next", "torch"):
                pieces["samples"].append(t3 - t2)
                pieces["labels"].append(t4 - t3)
        return out

    x0, y0 = take("dlpack")
    x0, y0 = x0.clone(), y0.clone()  # the resident batch, the model's own memory
    held.clear()
    for _ in range(30):  # cudnn autotuning, lazy loading, DDP's first buckets
        step(x0, y0)
    torch.cuda.synchronize()

    def run(phase, n, host_take, host_step, prof=None, pieces=None):
        base, _, mode = phase.partition("@")
        mode = mode or "dlpack"
        for i in range(n):
            t0 = time.perf_counter_ns()
            if base != "alone":
                x = y = None  # the previous batch's last holder is `held`: take releases it
                x, y = take(mode, pieces)
            t1 = time.perf_counter_ns()
            if base == "fed":
                step(x, y)
            elif base in ("alone", "fed_resident"):
                step(x0, y0)
            t2 = time.perf_counter_ns()
            if host_take is not None:
                host_take.append(t1 - t0)
                host_step.append(t2 - t1)
            if prof is not None:
                prof.step()
        x = y = None
        held.clear()

    results = {ph: [] for ph in args.phases.split(",")}
    for r in range(args.rounds):
        for phase in results:
            run(phase, args.warm, None, None)
            torch.cuda.synchronize()
            if world > 1:
                torch.distributed.barrier()
            host_take, host_step = [], []
            pieces = {k: [] for k in ("release", "next", "samples", "labels")}
            cpu0 = thread_cpu()
            t0 = time.perf_counter()
            run(phase, args.steps, host_take, host_step, pieces=pieces)
            torch.cuda.synchronize()
            secs = time.perf_counter() - t0
            cpu1 = thread_cpu()
            busy = {k: round((cpu1[k] - cpu0.get(k, 0)) / secs, 3) for k in cpu1
                    if cpu1[k] - cpu0.get(k, 0) > 0.02 * secs}
            res = {"samples_per_s": round(args.steps * args.batch_size * world / secs, 1),
                   "ms_per_step": round(secs / args.steps * 1e3, 4)}
            if phase != "alone":
                res["take_us_median"] = round(statistics.median(host_take) / 1e3, 2)
                res["take_us_p99"] = round(pct(host_take, 0.99) / 1e3, 2)
                res["take_pieces_us_median"] = {k: round(statistics.median(v) / 1e3, 2)
                                                for k, v in pieces.items() if v}
            if not phase.startswith("take_only"):
                res["step_host_us_median"] = round(statistics.median(host_step) / 1e3, 1)
                res["step_host_us_p99"] = round(pct(host_step, 0.99) / 1e3, 1)
            res["thread_cpu_share"] = busy
            results[phase].append(res)
            if rank == 0:
                print(f"[round {r}] {phase} (world {world}): {json.dumps(res)}", flush=True)
    stats = loader.stats()
    summary = {}
    if "alone" in results:
        for phase, rounds in results.items():
            if phase == "alone" or phase.startswith("take_only"):
                continue
            ratios = [round(f["samples_per_s"] / a["samples_per_s"], 4)
                      for f, a in zip(rounds, results["alone"])]
            key = phase.replace("@", "_") + "_over_alone"
            summary[key] = ratios
            summary[key + "_median"] = round(statistics.median(ratios), 4)
            # the ratio of the sums: each phase's total steps over its total time
            summary[key + "_pooled"] = round(
                sum(a["ms_per_step"] for a in results["alone"]) /
                sum(f["ms_per_step"] for f in rounds), 4)
    summary["wait_share"] = stats.get("wait_share")
    if rank == 0:
        print("summary:", json.dumps(summary), flush=True)

    if args.profile:
        from torch.profiler import ProfilerActivity, profile, schedule
        for phase in [p for p in results if not p.startswith("take_only")]:
            sched = schedule(wait=2, warmup=3, active=args.profile, repeat=1)
            with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
                         schedule=sched) as prof:
                run(phase, args.profile + 6, None, None, prof)
                torch.cuda.synchronize()
            if rank == 0:
                ka = prof.key_averages()
                print(f"== profile {phase}: by self CPU time", flush=True)
                print(ka.table(sort_by="self_cpu_time_total", row_limit=18), flush=True)
                print(f"== profile {phase}: by CUDA time", flush=True)
                print(ka.table(sort_by="self_device_time_total", row_limit=12), flush=True)
            trace = os.path.join(args.trace_dir or "/tmp",
                                 f"{phase.replace('@', '_')}-w{world}-r{rank}.json")
            os.makedirs(os.path.dirname(trace), exist_ok=True)
            prof.export_chrome_trace(trace)
            if rank == 0:
                print_runtime_calls(trace, phase, args.profile)
    if args.json and rank == 0:
        with open(args.json, "w") as f:
            json.dump({"args": vars(args), "world": world,
                       "device": torch.cuda.get_device_name(dev), "torch": torch.__version__,
                       "results": results, "summary": summary, "stats": stats}, f, indent=2)
    for each in loaders.values():
        each.close()
    if world > 1:
        torch.distributed.destroy_process_group()


if __name__ == "__main__":
    main()
