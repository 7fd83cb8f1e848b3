#!/usr/bin/env python3
"""Issue 25's GPU goals for decoded JPEG records, in one process, in interleaved rounds.

Every contestant makes 224x224 training batches of the same JPEGs (tools/bench/make_jpeg_set.py's
ImageFolder FOLDER, and its dataset --data, `ringfeed-convert images FOLDER`), batch --batch
(256), on one GPU, one epoch a run; images/s of wall time, from the start of the run (the loader
opened, the DataLoader's workers started) to torch.cuda.synchronize() after the last batch:

  ringfeed-gpu       ringfeed.Loader(data, 256, image_size=224, device='cuda', dtype='bfloat16',
                     layout='NHWC', image_decoder='nvjpeg'), COLD: the page cache dropped first
                     (--drop-caches, as root; the loader's default io='direct' reads the disk
                     anyway); each batch taken by torch.from_dlpack
  ringfeed-gpu-hw    the same with image_cpu_share=0: every record nvJPEG takes on nvJPEG, the
                     CPU threads idle (ringfeed-gpu's default shares each batch with them)
  ringfeed-gpu-warm  the same with io='buffered', the dataset's files read into the page cache
                     first (untimed)
  ringfeed-cpu       the same as ringfeed-gpu (cold) with image_decoder='cpu' and image_threads =
                     --image-threads (every core): the CPU decode path's all-core rate, its
                     batches on the GPU
  tv-decode          torchvision.io.decode_jpeg(list of 256, device='cuda') of the files, read
                     once into memory beforehand (torchvision.io.read_file): nvJPEG's batched
                     decode to full-size RGB, nothing else
  tv-crop            the same, then per GPU image torchvision.transforms.v2's
                     RandomResizedCrop(224, antialias=True) and RandomHorizontalFlip, the batch
                     stacked and normalized (ImageNet's mean and std) to bfloat16 channels_last:
                     ringfeed-gpu's output, the torchvision way
  pil-dataloader     torchvision.datasets.ImageFolder(FOLDER) with RandomResizedCrop(224),
                     RandomHorizontalFlip, ToTensor and Normalize, DataLoader(batch 256,
                     shuffle, num_workers=--workers, pin_memory=True), each batch to the GPU
                     (non_blocking) as bfloat16 channels_last; the files IN THE PAGE CACHE (read
                     just before, untimed: its disk reads are not counted against it)

Each round runs every contestant once, in that order, so a GPU or disk that drifts slows them
alike; the summary gives each one's median round. A ringfeed run opens a fresh loader (its
start-up is in its time, as it is in an epoch of training) and closes it after. The tv-*
contestants' first round, which holds torchvision's nvJPEG and CUDA start-up, is reported on its
own (first_round) and left out of their medians where there are later rounds.

Memory (ringfeed allocates natively, so torch.cuda.max_memory_allocated does not see it): every
ringfeed run records the GPU memory the loader took (cudaMemGetInfo's free memory before the
loader opened minus the least free memory seen during the epoch, through torch.cuda.mem_get_info)
and the process's resident set (VmRSS) after the epoch. --datasets A.rfd,B.rfd (two sizes of the
same images) first runs one ringfeed-gpu epoch (cold) of each, smallest first, each in a fresh
process of this script (--memory-child), so that nothing else held in this one (the files of
tv-*, the other loaders' threads) blurs them: GPU memory taken, VmRSS before the loader (torch
and its CUDA context) and after the epoch, and VmHWM, the process's peak; equal figures for both
sizes are "flat in the dataset's size".

A decoder that raises (image_decoder='nvjpeg' unknown to the build, or failing) is reported as
an `"error"` line and the other contestants go on; where the build does not know image_decoder
at all, ringfeed-cpu runs without it (the CPU decode is then the only one) and says so.
--budget S stops starting rounds once another round would pass S seconds, and the summary covers
the rounds run. Each measurement is one JSON line on stdout (and appended to --json).

  images_gpu_bench.py FOLDER --data F.rfd [--datasets SMALL.rfd,F.rfd] [--rounds 3]
      [--contestants ringfeed-gpu,ringfeed-gpu-warm,ringfeed-cpu,tv-decode,tv-crop,pil-dataloader]
      [--drop-caches] [--batch 256] [--size 224] [--workers N] [--image-threads N]
      [--budget S] [--json OUT.jsonl]
"""

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import time
import traceback

import torch

import ringfeed

CONTESTANTS = ("ringfeed-gpu", "ringfeed-gpu-hw", "ringfeed-gpu-warm", "ringfeed-cpu", "tv-decode", "tv-crop",
               "pil-dataloader")
MEAN = (0.485, 0.456, 0.406)  # ImageNet's, as torchvision's examples normalize
STD = (0.229, 0.224, 0.225)


# --- the machine ----------------------------------------------------------------------------------


def proc_status(field):
    """A /proc/self/status figure in MB (VmRSS, VmHWM)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    return float("nan")


def gpu_free_mb():
    return torch.cuda.mem_get_info()[0] / 2**20


def gpu_used_mb():
    free, total = torch.cuda.mem_get_info()
    return (total - free) / 2**20


class PageCache:
    """Drops the page cache (root only; says so once where it cannot) and reads files into it."""

    def __init__(self, enabled):
        self.enabled = enabled
        self.warned = False

    def drop(self):
        """True where the cache was dropped."""
        if not self.enabled:
            return False
        try:
            os.sync()
            with open("/proc/sys/vm/drop_caches", "w") as f:
                f.write("3\n")
            return True
        except OSError as e:
            if not self.warned:
                print(f"# --drop-caches: cannot drop the page cache ({e}); the 'cold' runs are "
                      f"not cold", flush=True)
                self.warned = True
            return False

    @staticmethod
    def warm(paths, threads=16):
        """Reads every file of `paths` (into the page cache); returns (bytes, seconds)."""
        from concurrent.futures import ThreadPoolExecutor

        def read(p):
            n = 0
            with open(p, "rb", buffering=0) as f:
                while True:
                    b = f.read(16 << 20)
                    if not b:
                        return n
                    n += len(b)

        t0 = time.perf_counter()
        with ThreadPoolExecutor(threads) as pool:
            total = sum(pool.map(read, paths, chunksize=64))
        return total, time.perf_counter() - t0


def jpeg_paths(folder):
    paths = []
    for d, _, names in os.walk(folder):
        paths += [os.path.join(d, n) for n in names
                  if n.lower().endswith((".jpg", ".jpeg", ".png", ".webp"))]
    return sorted(paths)


# --- ringfeed ------------------------------------------------------------------------------------


class DecoderUnknown(Exception):
    """The build's Loader has no image_decoder option."""


def open_loader(data, args, decoder, **options):
    """ringfeed.Loader of decoded images on the GPU with image_decoder=`decoder`; where the build
    has no such option: DecoderUnknown for 'nvjpeg', the loader without it for 'cpu' (its only
    decoder then), with a note."""
    kw = dict(image_size=args.size, device="cuda", dtype="bfloat16", layout="NHWC", **options)
    try:
        return ringfeed.Loader(data, args.batch, image_decoder=decoder, **kw), ""
    except TypeError as e:
        if "image_decoder" not in str(e):
            raise
        if decoder != "cpu":
            raise DecoderUnknown(f"this build's Loader has no image_decoder option ({e})") from e
        return ringfeed.Loader(data, args.batch, **kw), "no image_decoder option: the CPU decode"


def ringfeed_epoch(data, args, decoder, cache, cold, **options):
    """One epoch of a fresh loader: images/s, first batch, process CPU, GPU memory taken, RSS."""
    torch.cuda.synchronize()
    torch.cuda.empty_cache()  # torch's cached blocks out of the free-memory figures
    dropped = cache.drop() if cold else False
    if not cold:
        paths = ringfeed.dataset_info(data).paths
        PageCache.warm(paths)
    free_before = gpu_free_mb()
    least_free = free_before
    c0, t0 = time.process_time(), time.perf_counter()
    loader, note = open_loader(data, args, decoder, **options)
    images, batches, first, first_images = 0, 0, None, 0
    try:
        for x, y in loader:
            xt, _ = torch.from_dlpack(x), torch.from_dlpack(y)  # the stream waits, no copy
            images += xt.shape[0]
            batches += 1
            if first is None:
                torch.cuda.synchronize()
                first = time.perf_counter() - t0
                first_images = images
            if batches % 8 == 1:
                least_free = min(least_free, gpu_free_mb())
        torch.cuda.synchronize()
        secs, cpu = time.perf_counter() - t0, time.process_time() - c0
        least_free = min(least_free, gpu_free_mb())
        stats = loader.stats()
        described = repr(loader)
        rss = proc_status("VmRSS")
    finally:
        loader.close()
    # After the first batch: the steady rate, without the open and the first batch's latency.
    steady = ((images - first_images) / (secs - first)
              if first is not None and secs > first and images > first_images else None)
    out = {"images": images, "seconds": secs, "cpu_seconds": cpu, "first_batch_s": first,
           "steady_images_per_s": round(steady, 1) if steady else None,
           "cold": bool(dropped) if cold else False, "io": options.get("io", "direct"),
           "gpu_taken_mb": round(free_before - least_free, 1), "rss_mb": round(rss, 1),
           "image_threads": stats.get("image_threads"),
           "image_busy_share": stats.get("image_busy_share"),
           "wait_share": stats.get("wait_share"), "disk_gbps": stats.get("disk_gbps"),
           "records_skipped": stats.get("records_skipped"), "loader": described}
    if note:
        out["note"] = note
    return out


# --- torchvision ---------------------------------------------------------------------------------


class TorchvisionGpu:
    """The files in memory (torchvision.io.read_file, once) and torchvision's GPU decode of them,
    alone or with the crop, flip and normalization of a training batch."""

    def __init__(self, paths, args):
        import torchvision
        from torchvision.io import ImageReadMode, decode_jpeg, read_file
        self.torchvision = torchvision
        self.decode_jpeg, self.mode = decode_jpeg, ImageReadMode.RGB
        t0 = time.perf_counter()
        PageCache.warm(paths)  # on 16 threads, then read_file's single thread from the cache
        self.files = [read_file(p) for p in paths]
        self.read_seconds = time.perf_counter() - t0
        self.bytes = sum(f.numel() for f in self.files)
        self.batch = args.batch
        try:
            from torchvision.transforms import v2
            self.transform = v2.Compose([v2.RandomResizedCrop(args.size, antialias=True),
                                         v2.RandomHorizontalFlip()])
            self.transform_name = "transforms.v2"
        except ImportError:  # torchvision before 0.15
            import torchvision.transforms as T
            self.transform = T.Compose([T.RandomResizedCrop(args.size, antialias=True),
                                        T.RandomHorizontalFlip()])
            self.transform_name = "transforms"
        self.mean = torch.tensor(MEAN, device="cuda").view(1, 3, 1, 1) * 255
        self.std = torch.tensor(STD, device="cuda").view(1, 3, 1, 1) * 255

    def run(self, crop):
        torch.cuda.synchronize()
        c0, t0 = time.process_time(), time.perf_counter()
        images = 0
        for i in range(0, len(self.files), self.batch):
            decoded = self.decode_jpeg(self.files[i:i + self.batch], mode=self.mode,
                                       device="cuda")
            if crop:
                b = torch.stack([self.transform(img) for img in decoded])
                b = ((b.float() - self.mean) / self.std).to(torch.bfloat16)
                b = b.contiguous(memory_format=torch.channels_last)
            images += len(decoded)
        torch.cuda.synchronize()
        return {"images": images, "seconds": time.perf_counter() - t0,
                "cpu_seconds": time.process_time() - c0}


class PilDataLoader:
    """torchvision's ImageFolder and the classic ImageNet training transforms in a DataLoader."""

    def __init__(self, folder, args):
        import torchvision.datasets as datasets
        import torchvision.transforms as T
        self.dataset = datasets.ImageFolder(folder, T.Compose([
            T.RandomResizedCrop(args.size), T.RandomHorizontalFlip(), T.ToTensor(),
            T.Normalize(MEAN, STD)]))
        self.args = args

    def run(self):
        paths = [p for p, _ in self.dataset.samples]
        warm_bytes, warm_s = PageCache.warm(paths)
        loader = torch.utils.data.DataLoader(self.dataset, batch_size=self.args.batch,
                                             shuffle=True, num_workers=self.args.workers,
                                             pin_memory=True)
        torch.cuda.synchronize()
        c0, t0 = time.process_time(), time.perf_counter()
        images, first = 0, None
        for x, y in loader:
            x = x.to("cuda", non_blocking=True).to(torch.bfloat16)
            x = x.contiguous(memory_format=torch.channels_last)
            y = y.to("cuda", non_blocking=True)
            images += x.shape[0]
            if first is None:
                torch.cuda.synchronize()
                first = time.perf_counter() - t0
        torch.cuda.synchronize()
        return {"images": images, "seconds": time.perf_counter() - t0,
                "cpu_seconds": time.process_time() - c0, "first_batch_s": first,
                "workers": self.args.workers, "page_cache_warmed_s": round(warm_s, 3),
                "page_cache_warmed_bytes": warm_bytes}


# --- the run -------------------------------------------------------------------------------------


def emit(record, sink):
    for k in ("seconds", "cpu_seconds", "first_batch_s"):
        if isinstance(record.get(k), float):
            record[k] = round(record[k], 4)
    if record.get("images") and record.get("seconds"):
        record["images_per_s"] = round(record["images"] / record["seconds"], 1)
        if record.get("cpu_seconds"):
            record["images_per_cpu_s"] = round(record["images"] / record["cpu_seconds"], 1)
    line = json.dumps(record)
    print(line, flush=True)
    if sink is not None:
        sink.write(line + "\n")
        sink.flush()


def error_line(e):
    """The exception's type and first line, and where it came from (the innermost frame)."""
    tb = traceback.extract_tb(e.__traceback__)
    where = f" ({os.path.basename(tb[-1].filename)}:{tb[-1].lineno})" if tb else ""
    first = str(e).strip().splitlines()[0] if str(e).strip() else ""
    return f"{type(e).__name__}: {first}{where}"


def memory_child(args):
    """--memory-child DATASET: one ringfeed-gpu epoch (the nvJPEG decoder; the CPU's where it
    raises) in this fresh process; prints one JSON line."""
    torch.ones(1, device="cuda").sum().item()
    info = ringfeed.dataset_info(args.memory_child)
    rec = {"part": "memory", "dataset": args.memory_child, "samples": info.samples,
           "stored_gb": round(info.stored_bytes / 1e9, 3),
           "gpu_free_before_mb": round(gpu_free_mb(), 1),
           "rss_before_mb": round(proc_status("VmRSS"), 1)}
    for decoder in ("nvjpeg", "cpu"):
        try:
            rec.update(ringfeed_epoch(args.memory_child, args, decoder,
                                      PageCache(args.drop_caches), cold=True), decoder=decoder)
            break
        except Exception as e:  # noqa: BLE001 -- report it, try the next decoder
            rec[f"error_{decoder}"] = error_line(e)
    rec["gpu_free_after_close_mb"] = round(gpu_free_mb(), 1)
    rec["vmhwm_mb"] = round(proc_status("VmHWM"), 1)
    emit(rec, None)


def memory_part(args, sink):
    """One ringfeed-gpu epoch of each --datasets dataset, smallest first, each in a process of
    its own (this script, --memory-child): what one loader takes, whatever ran before it."""
    paths = [p for p in args.datasets.split(",") if p]
    sized = sorted(paths, key=lambda p: ringfeed.dataset_info(p).stored_bytes)
    rows = []
    for path in sized:
        cmd = [sys.executable, os.path.abspath(__file__), "--memory-child", path, "--batch",
               str(args.batch), "--size", str(args.size)] + (
                   ["--drop-caches"] if args.drop_caches else [])
        done = subprocess.run(cmd, capture_output=True, text=True)
        lines = [x for x in done.stdout.splitlines() if x.startswith("{")]
        if done.returncode != 0 or not lines:
            tail = (done.stdout + done.stderr).strip().splitlines()[-3:]
            rec = {"part": "memory", "dataset": path,
                   "error": f"exit {done.returncode}: {' | '.join(tail)}"}
        else:
            rec = json.loads(lines[-1])
        rec["command"] = " ".join(shlex.quote(a) for a in cmd)
        emit(rec, sink)
        rows.append(rec)
    print("\nmemory: one ringfeed epoch of each dataset, each in a fresh process (GPU taken: "
          "free memory before the loader opened less the least during its epoch; VmRSS after "
          "it, and before it with torch and its CUDA context alone)", flush=True)
    print(f"  {'dataset':32s} {'samples':>8s} {'GB':>7s} {'decoder':>8s} {'GPU taken MB':>13s} "
          f"{'VmRSS MB':>9s} {'before':>7s} {'VmHWM MB':>9s}")
    nan = float("nan")
    for r in rows:
        print(f"  {os.path.basename(r['dataset']):32s} {r.get('samples', 0):8d} "
              f"{r.get('stored_gb', nan):7.3f} {r.get('decoder', 'FAILED'):>8s} "
              f"{r.get('gpu_taken_mb', nan):13.1f} {r.get('rss_mb', nan):9.1f} "
              f"{r.get('rss_before_mb', nan):7.1f} {r.get('vmhwm_mb', nan):9.1f}  "
              f"{r.get('error', '')}")
    if len(rows) >= 2 and all("gpu_taken_mb" in r for r in rows):
        a, b = rows[0], rows[-1]
        print(f"  {b['stored_gb'] / max(a['stored_gb'], 1e-9):.1f}x the data: GPU memory taken "
              f"{b['gpu_taken_mb'] - a['gpu_taken_mb']:+.1f} MB, VmRSS after the epoch "
              f"{b['rss_mb'] - a['rss_mb']:+.1f} MB, VmHWM {b['vmhwm_mb'] - a['vmhwm_mb']:+.1f} MB",
              flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("folder", nargs="?", help="the ImageFolder of JPEGs (make_jpeg_set.py's)")
    p.add_argument("--data", help="its dataset (ringfeed-convert images FOLDER)")
    p.add_argument("--datasets", default="", help="A.rfd,B.rfd: the memory part's datasets")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--contestants", default=",".join(CONTESTANTS))
    p.add_argument("--shares", default="", help="0.1,0.3: more contestants, ringfeed-gpu with "
                   "image_cpu_share=0.1 (ringfeed-gpu-share0.1), ...")
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--size", type=int, default=224)
    p.add_argument("--workers", type=int, default=os.cpu_count(),
                   help="the DataLoader's workers (default: every core)")
    p.add_argument("--image-threads", type=int, default=os.cpu_count(),
                   help="ringfeed-cpu's image_threads (default: every core)")
    p.add_argument("--drop-caches", action="store_true", help="cold runs: drop the page cache "
                   "before each (root)")
    p.add_argument("--budget", type=float, default=0, help="seconds: start no round that would "
                   "end past it (0: no limit)")
    p.add_argument("--json", default="", help="append every JSON line to this file too")
    p.add_argument("--memory-child", default="", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.memory_child:
        return memory_child(args)
    if not args.folder or not args.data:
        p.error("give FOLDER and --data")
    chosen = [c for c in args.contestants.split(",") if c]
    unknown = set(chosen) - set(CONTESTANTS)
    if unknown:
        p.error(f"--contestants: unknown {sorted(unknown)}; known: {', '.join(CONTESTANTS)}")
    if not torch.cuda.is_available():
        sys.exit("images_gpu_bench: no CUDA GPU for torch")

    start = time.perf_counter()
    sink = open(args.json, "a") if args.json else None
    command = " ".join(shlex.quote(a) for a in [sys.executable] + sys.argv)
    torch.ones(1, device="cuda").sum().item()  # the CUDA context, before any measurement
    info = ringfeed.dataset_info(args.data)
    paths = jpeg_paths(args.folder)
    if info.samples != len(paths):
        sys.exit(f"images_gpu_bench: {args.data} holds {info.samples} records, {args.folder} "
                 f"{len(paths)} JPEGs")
    try:
        import torchvision
        tv_version = torchvision.__version__
    except ImportError:
        tv_version = None
    header = {"part": "header", "command": command, "gpu": torch.cuda.get_device_name(),
              "cores": os.cpu_count(), "torch": torch.__version__, "torchvision": tv_version,
              "ringfeed": getattr(ringfeed, "__version__", "?"), "images": len(paths),
              "dataset": args.data, "stored_gb": round(info.stored_bytes / 1e9, 3),
              "kb_per_image": round(info.stored_bytes / len(paths) / 1e3, 1),
              "batch": args.batch, "size": args.size, "rounds": args.rounds,
              "contestants": chosen, "root": os.geteuid() == 0, "date": time.strftime(
                  "%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    emit(header, sink)
    cache = PageCache(args.drop_caches)
    if args.datasets:
        memory_part(args, sink)

    runners = {}
    ringfeed_options = {
        "ringfeed-gpu": ("nvjpeg", True, {}),
        "ringfeed-gpu-hw": ("nvjpeg", True, {"image_cpu_share": 0.0}),
        "ringfeed-gpu-warm": ("nvjpeg", False, {"io": "buffered"}),
        "ringfeed-cpu": ("cpu", True, {"image_threads": args.image_threads}),
    }
    for share in [x for x in args.shares.split(",") if x]:
        name = f"ringfeed-gpu-share{share}"
        ringfeed_options[name] = ("nvjpeg", True, {"image_cpu_share": float(share)})
        chosen.append(name)
    for name, (decoder, cold, options) in ringfeed_options.items():
        runners[name] = (lambda d=decoder, c=cold, o=options:
                         ringfeed_epoch(args.data, args, d, cache, c, **o))
    if tv_version is None:
        for name in ("tv-decode", "tv-crop", "pil-dataloader"):
            runners[name] = None
    else:
        if "tv-decode" in chosen or "tv-crop" in chosen:
            try:
                tv = TorchvisionGpu(paths, args)
                print(f"# tv-*: {len(paths)} files read into memory in {tv.read_seconds:.1f} s "
                      f"({tv.bytes / 1e9:.2f} GB); crop by torchvision.{tv.transform_name}",
                      flush=True)
                runners["tv-decode"] = lambda: tv.run(False)
                runners["tv-crop"] = lambda: tv.run(True)
            except Exception as e:  # noqa: BLE001
                print(f"# tv-*: {error_line(e)}", flush=True)
                runners["tv-decode"] = runners["tv-crop"] = None
        if "pil-dataloader" in chosen:
            try:
                pil = PilDataLoader(args.folder, args)
                runners["pil-dataloader"] = pil.run
            except Exception as e:  # noqa: BLE001
                print(f"# pil-dataloader: {error_line(e)}", flush=True)
                runners["pil-dataloader"] = None

    results = {c: [] for c in chosen}
    errors = {c: [] for c in chosen}
    round_seconds = []
    for r in range(args.rounds):
        if args.budget and round_seconds and (time.perf_counter() - start + max(round_seconds)
                                              > args.budget):
            print(f"# --budget {args.budget:g} s: stopped after {r} rounds "
                  f"({time.perf_counter() - start:.0f} s)", flush=True)
            break
        r0 = time.perf_counter()
        for name in chosen:
            rec = {"part": "round", "contestant": name, "round": r + 1}
            runner = runners.get(name)
            if runner is None:
                rec["error"] = "not run: torchvision is missing or failed to set up"
                emit(rec, sink)
                errors[name].append(rec["error"])
                continue
            try:
                rec.update(runner())
                results[name].append(rec)
            except Exception as e:  # noqa: BLE001 -- e.g. image_decoder='nvjpeg' failing
                rec["error"] = error_line(e)
                errors[name].append(rec["error"])
            emit(rec, sink)
        round_seconds.append(time.perf_counter() - r0)

    summarize(chosen, results, errors, round_seconds, command, sink)
    if sink is not None:
        sink.close()


def summarize(chosen, results, errors, round_seconds, command, sink):
    print(f"\nsummary: {len(round_seconds)} rounds ({', '.join(f'{s:.0f}' for s in round_seconds)}"
          f" s); median round's images/s of wall time, images per process CPU-second; tv-*: "
          f"the first round on its own\n  command: {command}")
    print(f"  {'contestant':22s} {'runs':>4s} {'images/s':>9s} {'min':>9s} {'max':>9s} "
          f"{'/CPU-s':>8s} {'first':>9s} {'GPU MB':>7s} {'RSS MB':>7s}  notes")
    medians = {}
    for name in chosen:
        runs = results[name]
        first = None
        if name.startswith("tv-") and len(runs) > 1:
            first, runs = runs[0], runs[1:]
        if not runs:
            print(f"  {name:18s} {0:4d}  no figure: {errors[name][0] if errors[name] else '-'}")
            continue
        rates = [x["images_per_s"] for x in runs]
        cpu = statistics.median(x.get("images_per_cpu_s", 0) for x in runs)
        med = statistics.median(rates)
        medians[name] = round(med, 1)
        gpu = max((x.get("gpu_taken_mb", 0) for x in runs), default=0)
        rss = max((x.get("rss_mb", 0) for x in runs), default=0)
        notes = []
        if name.startswith("ringfeed"):
            notes.append("cold" if all(x.get("cold") for x in runs) else
                         "warm (page cache)" if name.endswith("warm") else "page cache not dropped")
            notes.append(f"threads {runs[-1].get('image_threads')}, busy "
                         f"{statistics.median(x.get('image_busy_share') or 0 for x in runs):.2f}")
            steady = [x["steady_images_per_s"] for x in runs if x.get("steady_images_per_s")]
            if steady:
                medians[name + " (after the first batch)"] = round(statistics.median(steady), 1)
                notes.append(f"after the first batch {statistics.median(steady):.0f}/s, first "
                             f"batch {statistics.median(x['first_batch_s'] for x in runs):.3f} s")
            if runs[-1].get("note"):
                notes.append(runs[-1]["note"])
        if name == "pil-dataloader":
            notes.append(f"{runs[-1]['workers']} workers, files in the page cache")
        if errors[name]:
            notes.append(f"{len(errors[name])} failed: {errors[name][0]}")
        print(f"  {name:22s} {len(runs):4d} {med:9.0f} {min(rates):9.0f} {max(rates):9.0f} "
              f"{cpu:8.0f} {first['images_per_s'] if first else float('nan'):9.0f} "
              f"{gpu if name.startswith('ringfeed') else float('nan'):7.0f} "
              f"{rss if name.startswith('ringfeed') else float('nan'):7.0f}  {'; '.join(notes)}")
    for name in chosen:
        runs = results[name]
        if name.startswith("ringfeed") and runs and runs[-1].get("loader"):
            # The decoder's part of the loader's description: its threads and host times.
            text = runs[-1]["loader"]
            found = [i for i in (text.find("jpeg decode by"), text.find("image decode on"))
                     if i >= 0]
            at = min(found) if found else -1
            print(f"  {name}: {text[at:] if at >= 0 else text}")
    ratios = {}
    for a, b in (("ringfeed-gpu (after the first batch)", "tv-decode"),
                 ("ringfeed-gpu", "tv-crop"), ("ringfeed-gpu", "pil-dataloader"),
                 ("ringfeed-gpu", "ringfeed-cpu"), ("ringfeed-gpu", "tv-decode"),
                 ("ringfeed-cpu", "pil-dataloader"), ("ringfeed-gpu-warm", "ringfeed-gpu"),
                 ("ringfeed-gpu", "ringfeed-gpu-hw"),
                 ("ringfeed-gpu (after the first batch)", "ringfeed-gpu-hw (after the first batch)")):
        if a in medians and b in medians:
            ratios[f"{a} / {b}"] = round(medians[a] / medians[b], 3)
    for k, v in ratios.items():
        print(f"  {k}: {v}")
    emit({"part": "summary", "medians": medians, "ratios": ratios,
          "errors": {k: v for k, v in errors.items() if v}, "round_seconds": round_seconds},
         sink)


if __name__ == "__main__":
    import faulthandler
    faulthandler.enable()  # a crash in native code prints where it happened
    main()
