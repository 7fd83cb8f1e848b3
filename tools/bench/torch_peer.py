#!/usr/bin/env python3
"""The PyTorch peer of ringfeed's benchmarks: the standard DataLoader pipeline on the same .rfd file.

What it measures, on the same bytes ringfeed reads (numpy.memmap of the .rfd, no conversion):
  loader        DataLoader alone (batches moved to the GPU, nothing else): samples/s and time to
                the first batch. The clock starts when the iterator is created, so worker start-up
                counts; it stops after --seconds or --max-samples, whichever comes first.
  train         the same loader feeding ringfeed's default CNN (model/model.h): conv 32/64/128
                (3x3, pad 1, bias) + ReLU + 2x2 max-pool, then FC 256 + ReLU + FC classes; SGD
                (lr 0.01, momentum 0.9, weight decay 5e-4), cross-entropy, normalization on the GPU
                with the header's per-channel mean/std. The settings a fair competitor would pick:
                cudnn.benchmark, channels_last, bf16 autocast for the forward (no torch.compile:
                its compile time would land inside the measured run).
  compute_only  the same model stepping on one batch already on the GPU: if train is well below
                it, PyTorch was loader-bound.
How it differs from ringfeed: this is the idiomatic per-sample pattern, a map-style Dataset whose
__getitem__ copies one sample and its label out of the page cache in a worker process, collated
into a batch, pinned by the pin-memory thread and copied to the GPU; ringfeed instead reads whole
4 KiB-aligned chunks with O_DIRECT into registered buffers and decodes batches on the GPU.
Before any clock starts, CUDA is initialized and one DataLoader over in-memory random batches
runs, so PyTorch's own code pages are warm after a page-cache drop (as in any real job) while the
dataset stays cold. The memmap reads go through the page cache: drop it first for a cold figure (the train phase
runs after the loader phase, on the same seeded order, so it finds the file warm).

  torch_peer.py --data FILE.rfd [--batch-size 256] [--workers N] [--phase loader|train|both]
                [--seconds 20] [--max-samples N] [--json OUT.json] [--device cuda|cpu] [--seed 1]
  torch_peer.py --data FILE.rfd --self-check --check-images X.npy --check-labels Y.npy
Exit status: 0 ok, 1 bad input or self-check mismatch, 3 torch (or CUDA) unavailable.
Format parsing and indexing need only numpy; torch is imported when present (at module level, so
the Dataset class is a real torch Dataset that workers can unpickle under any start method).
"""
import argparse
import bisect
import json
import os
import resource
import struct
import sys
import time

import numpy as np

try:
    import torch
    _TORCH_ERROR = None
except Exception as e:  # noqa: BLE001 - any failure to import means "peer unavailable"
    torch, _TORCH_ERROR = None, e

MAGIC = b"RFEEDDS\x1a"
HEADER_BYTES, ALIGN, LABEL_ALIGN, ENTRY_BYTES, MAX_CHANNELS = 4096, 4096, 64, 48, 64
SAMPLE_DTYPES = {1: np.dtype("<u1"), 2: np.dtype("<f2"), 3: "bfloat16", 4: np.dtype("<f4")}
LABEL_DTYPES = {1: np.dtype("<u1"), 5: np.dtype("<u2"), 6: np.dtype("<i4")}
ENTRY = np.dtype([("index", "<u8"), ("first", "<u8"), ("offset", "<u8"), ("stored", "<u8"),
                  ("count", "<u4"), ("pad", "<u4"), ("checksum", "<u8")])


class FormatError(Exception):
    def __init__(self, path, offset, what):
        super().__init__(f"{path}: {what} (at offset {offset})")


def round_up(v, a):
    return (v + a - 1) // a * a


class RfdDataset(torch.utils.data.Dataset if torch else object):
    """Map-style dataset over a single-file .rfd: (C x H x W sample, int label) per index."""

    def __init__(self, path, as_tensor=False):
        self.path, self.as_tensor = path, as_tensor
        size = os.path.getsize(path)
        with open(path, "rb") as f:
            head = f.read(HEADER_BYTES)
            if len(head) < HEADER_BYTES:
                raise FormatError(path, len(head), f"file is {len(head)} bytes, shorter than the "
                                  f"{HEADER_BYTES}-byte header (truncated?)")
            if head[:8] != MAGIC:
                raise FormatError(path, 0, "not a ringfeed dataset (wrong magic)")
            version, header_bytes = struct.unpack_from("<II", head, 8)
            if version != 1:
                raise FormatError(path, 8, f"unknown format version {version} (this reads 1)")
            if header_bytes != HEADER_BYTES:
                raise FormatError(path, 12, f"unexpected header size {header_bytes}")
            (shard_index, shard_count, sdt, ldt, self.channels, self.height, self.width,
             self.classes) = struct.unpack_from("<8I", head, 24)
            self.total_samples, total_chunks, chunk_samples, shard_chunks = \
                struct.unpack_from("<QQII", head, 56)
            shard_samples, index_offset, file_size = struct.unpack_from("<QQQ", head, 80)
            if shard_count != 1:
                raise FormatError(path, 28, f"shard {shard_index} of {shard_count}: only "
                                  "single-file datasets are supported")
            if sdt not in SAMPLE_DTYPES:
                raise FormatError(path, 32, f"unknown sample dtype {sdt}")
            if ldt not in LABEL_DTYPES:
                raise FormatError(path, 36, f"unknown label dtype {ldt}")
            if not (0 < self.channels <= MAX_CHANNELS and self.height and self.width):
                raise FormatError(path, 40, f"bad sample shape {self.channels}x{self.height}x"
                                  f"{self.width}")
            if file_size != size:
                raise FormatError(path, min(size, file_size), f"file is {size} bytes, header says "
                                  f"{file_size}" + (" (truncated?)" if size < file_size else ""))
            if shard_samples != self.total_samples or shard_chunks != total_chunks:
                raise FormatError(path, 56, "header sample/chunk counts are inconsistent")
            c = self.channels
            self.mean = np.frombuffer(head, "<f4", c, 128).astype(np.float64)
            self.std = np.frombuffer(head, "<f4", c, 128 + 4 * MAX_CHANNELS).astype(np.float64)
            f.seek(index_offset)
            raw = f.read(shard_chunks * ENTRY_BYTES)
        if len(raw) < shard_chunks * ENTRY_BYTES:
            raise FormatError(path, index_offset, "chunk index is truncated")
        self.sample_dtype, self.label_dtype = SAMPLE_DTYPES[sdt], LABEL_DTYPES[ldt]
        itemsize = 2 if sdt == 3 else self.sample_dtype.itemsize
        self.sample_bytes = c * self.height * self.width * itemsize
        self.label_bytes = self.label_dtype.itemsize
        entries = np.frombuffer(raw, ENTRY)
        self.first, self.offsets, self.labels_at = [], [], []
        expect = 0
        for i, e in enumerate(entries):
            n, off = int(e["count"]), int(e["offset"])
            labels_off = round_up(n * self.sample_bytes, LABEL_ALIGN)
            stored = round_up(labels_off + n * self.label_bytes, ALIGN)
            at = index_offset + i * ENTRY_BYTES
            if int(e["first"]) != expect or n == 0:
                raise FormatError(path, at, f"bad chunk index entry {i}: first sample "
                                  f"{int(e['first'])}, {n} samples, expected first {expect}")
            if off % ALIGN or off < HEADER_BYTES or int(e["stored"]) != stored \
                    or off + stored > index_offset:
                raise FormatError(path, at, f"bad chunk index entry {i}: chunk at {off}, "
                                  f"{int(e['stored'])} bytes")
            self.first.append(expect)
            self.offsets.append(off)
            self.labels_at.append(off + labels_off)
            expect += n
        if expect != self.total_samples:
            raise FormatError(path, index_offset, f"chunk index holds {expect} samples, header "
                              f"says {self.total_samples}")
        self._mm, self._pid = None, None

    def __getstate__(self):  # never ship an open mapping to a worker
        return {**self.__dict__, "_mm": None, "_pid": None}

    def __len__(self):
        return self.total_samples

    def sample(self, i):
        if self._pid != os.getpid():  # opened lazily, once per process (so once per worker)
            self._mm, self._pid = np.memmap(self.path, np.uint8, mode="r"), os.getpid()
        if not 0 <= i < self.total_samples:
            raise IndexError(i)
        k = bisect.bisect_right(self.first, i) - 1
        j = i - self.first[k]
        start = self.offsets[k] + j * self.sample_bytes
        raw = self._mm[start:start + self.sample_bytes]
        if isinstance(self.sample_dtype, str):  # bfloat16 (numpy has none): widen to float32 exactly
            x = (raw.view("<u2").astype(np.uint32) << 16).view(np.float32)
        else:
            x = np.array(raw.view(self.sample_dtype))  # copy out of the page cache
        lab = self.labels_at[k] + j * self.label_bytes
        y = int(self._mm[lab:lab + self.label_bytes].view(self.label_dtype)[0])
        return x.reshape(self.channels, self.height, self.width), y

    def __getitem__(self, i):
        x, y = self.sample(i)
        return (torch.from_numpy(x), y) if self.as_tensor else (x, y)


def self_check(ds, images_path, labels_path):
    import pickle
    try:
        images, labels = np.load(images_path, mmap_mode="r"), np.load(labels_path, mmap_mode="r")
    except (OSError, ValueError) as e:
        sys.exit(f"self-check: cannot load the exported .npy files: {e}")
    if len(images) != len(ds) or len(labels) != len(ds):
        sys.exit(f"self-check: {len(ds)} samples in the dataset, {len(images)} images and "
                 f"{len(labels)} labels exported")
    copy = pickle.loads(pickle.dumps(ds))  # what a spawned worker would get
    for i in range(len(ds)):
        x, y = (copy if i % 2 else ds)[i]
        want = np.asarray(images[i]).reshape(-1)
        if x.size != want.size or not np.array_equal(x.reshape(-1).astype(np.float64),
                                                     want.astype(np.float64)):
            sys.exit(f"self-check: sample {i} differs from {images_path}")
        if y != int(labels[i]):
            sys.exit(f"self-check: label {i} is {y}, {labels_path} says {int(labels[i])}")
    print(f"self-check: all {len(ds):,} samples and labels of {ds.path} match the export "
          f"({ds.channels}x{ds.height}x{ds.width} {ds.sample_dtype}, {len(ds.first)} chunks)")


def build_model(ds):
    """ringfeed's default model (model/model.h), with its He-uniform init and zero biases: the
    examples' definition (examples/ringfeed_cnn.py), for this Dataset's shape."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir,
                                    os.pardir, "examples"))
    import ringfeed_cnn
    try:
        return ringfeed_cnn.build_model(ds.channels, ds.height, ds.width, ds.classes)
    except ValueError as e:
        sys.exit(f"torch_peer: {e}")


def warm_up_workers(ds, args, dev):
    """Runs the same DataLoader machinery (fork, workers, collate, pinning) over a few batches of
    in-memory random samples, outside any clock. The suite drops the page cache before each run
    for the dataset's sake; this brings PyTorch's own code pages back, as they are in any real
    job, without reading the dataset."""
    shape = (args.batch_size * max(1, args.workers) * 2, ds.channels, ds.height, ds.width)
    fake = torch.utils.data.TensorDataset(torch.randint(0, 256, shape, dtype=torch.uint8),
                                          torch.randint(0, ds.classes, (shape[0],)))
    dl = torch.utils.data.DataLoader(fake, batch_size=args.batch_size, shuffle=True,
                                     num_workers=args.workers, pin_memory=dev.type == "cuda",
                                     drop_last=True)
    for x, y in dl:
        x.to(dev, non_blocking=True), y.to(dev, non_blocking=True)
    if dev.type == "cuda":
        torch.cuda.synchronize()


def run_loader(ds, args, dev, step):
    """Feeds step(x, y) from a fresh DataLoader until --seconds or --max-samples."""
    gen = torch.Generator()
    gen.manual_seed(args.seed)
    dl = torch.utils.data.DataLoader(ds, batch_size=args.batch_size, shuffle=True,
                                     num_workers=args.workers, pin_memory=dev.type == "cuda",
                                     persistent_workers=False, drop_last=True, generator=gen)
    samples, first = 0, None
    t0 = time.perf_counter()
    it = iter(dl)
    while samples < args.max_samples and time.perf_counter() - t0 < args.seconds:
        try:
            x, y = next(it)
        except StopIteration:  # next epoch: new workers, as with persistent_workers=False
            it = iter(dl)
            continue
        if first is None:
            first = time.perf_counter() - t0
        step(x.to(dev, non_blocking=True), y.to(dev, non_blocking=True))
        samples += x.shape[0]
    if dev.type == "cuda":
        torch.cuda.synchronize()
    secs = time.perf_counter() - t0
    del it  # shuts the workers down (after the clock stopped)
    # Steady: from the first batch on, so worker start-up (seconds under forkserver or spawn)
    # is left out; the figure most favourable to PyTorch.
    after = samples - args.batch_size
    return {"samples": samples, "seconds": round(secs, 4),
            "samples_per_s": round(samples / secs, 1), "first_batch_s": round(first, 4),
            "steady_samples_per_s": round(after / (secs - first), 1) if secs > first else None}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", required=True, help="the .rfd dataset (single file)")
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--workers", type=int, default=os.cpu_count())
    p.add_argument("--phase", choices=["loader", "train", "both"], default="both")
    p.add_argument("--seconds", type=float, default=20.0)
    p.add_argument("--max-samples", type=int, default=sys.maxsize)
    p.add_argument("--json", help="write the results here")
    p.add_argument("--device", choices=["cuda", "cpu"], help="default: cuda if available")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--self-check", action="store_true",
                   help="compare the Dataset with --check-images/--check-labels (.npy), no torch")
    p.add_argument("--check-images")
    p.add_argument("--check-labels")
    args = p.parse_args()
    if args.seconds <= 0 or args.batch_size < 1 or args.workers < 0 or args.max_samples < 1:
        p.error("--seconds, --batch-size and --max-samples must be positive, --workers >= 0")

    if torch is None and not args.self_check:
        print(f"torch_peer: torch is not importable ({_TORCH_ERROR!r})", file=sys.stderr)
        sys.exit(3)
    try:
        ds = RfdDataset(args.data, as_tensor=not args.self_check)
    except FormatError as e:
        sys.exit(f"torch_peer: {e}")
    except OSError as e:
        sys.exit(f"torch_peer: {args.data}: {e.strerror or e}")
    if args.self_check:
        if not (args.check_images and args.check_labels):
            p.error("--self-check needs --check-images and --check-labels")
        return self_check(ds, args.check_images, args.check_labels)

    dev_name = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    if dev_name == "cuda" and not torch.cuda.is_available():
        print("torch_peer: torch is importable but CUDA is not available", file=sys.stderr)
        sys.exit(3)
    if len(ds) < args.batch_size:
        sys.exit(f"torch_peer: {args.data}: {len(ds)} samples, fewer than one batch")
    dev = torch.device(dev_name)
    cuda = dev.type == "cuda"
    torch.manual_seed(args.seed)
    torch.backends.cudnn.benchmark = True
    out = {"torch_version": torch.__version__, "python": sys.version.split()[0],
           "start_method": torch.multiprocessing.get_start_method(), "data": args.data,
           "device_name": torch.cuda.get_device_name(dev) if cuda else "cpu",
           "workers": args.workers, "batch_size": args.batch_size}
    where = f"{args.workers} workers, batch {args.batch_size}"

    if cuda:  # the CUDA context is made before any clock starts, as ringfeed's is
        torch.zeros(1, device=dev)
        torch.cuda.synchronize()
    warm_up_workers(ds, args, dev)

    if args.phase in ("loader", "both"):
        r = out["loader"] = run_loader(ds, args, dev, lambda x, y: None)
        print(f"torch loader: {r['samples_per_s']:,.0f} samples/s ({r['samples']:,} samples in "
              f"{r['seconds']:.2f} s, first batch after {r['first_batch_s']:.2f} s, then "
              f"{r['steady_samples_per_s'] or 0:,.0f} samples/s; {where})")

    if args.phase in ("train", "both"):
        model = build_model(ds).to(dev, memory_format=torch.channels_last)
        opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, weight_decay=5e-4)
        mean = torch.tensor(ds.mean, dtype=torch.float32, device=dev).view(1, -1, 1, 1)
        std = torch.tensor(np.where(ds.std == 0, 1.0, ds.std), dtype=torch.float32,
                           device=dev).view(1, -1, 1, 1)
        last = {}

        def step(x, y):
            x = (x.contiguous(memory_format=torch.channels_last).float() - mean) / std
            with torch.autocast(dev.type, dtype=torch.bfloat16, enabled=cuda):
                loss = torch.nn.functional.cross_entropy(model(x), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            last["loss"] = loss.detach()

        # Warm-up outside the clock, as ringfeed's backend warms up at creation: lazy kernel
        # loading and cudnn.benchmark's autotuning take seconds on the first steps. The weights
        # and optimizer are put back after it, so the timed run starts from the initial model.
        saved = {k: v.clone() for k, v in model.state_dict().items()}
        xw = torch.randint(0, 256, (args.batch_size, ds.channels, ds.height, ds.width),
                           dtype=torch.uint8, device=dev)
        yw = torch.randint(0, ds.classes, (args.batch_size,), device=dev)
        for _ in range(20):
            step(xw, yw)
        if cuda:
            torch.cuda.synchronize()
        model.load_state_dict(saved)
        opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, weight_decay=5e-4)

        r = out["train"] = run_loader(ds, args, dev, step)
        r["final_loss"] = round(float(last["loss"]), 5)
        print(f"torch train: {r['samples_per_s']:,.0f} samples/s ({r['samples']:,} samples in "
              f"{r['seconds']:.2f} s, first batch after {r['first_batch_s']:.2f} s, then "
              f"{r['steady_samples_per_s'] or 0:,.0f} samples/s, final loss "
              f"{r['final_loss']:.4f}; {where})")

        # Compute only: one batch already on the device, no loader.
        x0, y0 = next(iter(torch.utils.data.DataLoader(ds, batch_size=args.batch_size)))
        x0, y0 = x0.to(dev), y0.to(dev)
        sync = torch.cuda.synchronize if cuda else (lambda: None)
        for _ in range(10):  # warm-up (cudnn autotuning already ran in the train phase)
            step(x0, y0)
        sync()
        duration, steps = min(5.0, args.seconds / 4), 0
        t0 = time.perf_counter()
        while True:
            for _ in range(10):
                step(x0, y0)
            steps += 10
            sync()  # the clock is read only after the queued steps have run
            secs = time.perf_counter() - t0
            if secs >= duration:
                break
        rate = steps * args.batch_size / secs
        out["compute_only"] = {"samples_per_s": round(rate, 1)}
        steady = r["steady_samples_per_s"] or r["samples_per_s"]
        bound = "loader-bound" if steady < 0.9 * rate else "compute-bound"
        print(f"torch compute-only: {rate:,.0f} samples/s -> train ran at {steady / rate:.0%} of "
              f"it after its first batch ({bound})")

    out["peak_gpu_bytes"] = torch.cuda.max_memory_reserved(dev) if cuda else None
    with open("/proc/self/status") as f:
        hwm = [line.split() for line in f if line.startswith("VmHWM:")]
    out["peak_rss_bytes"] = int(hwm[0][1]) * 1024 if hwm else None
    # Workers are gone by now; RUSAGE_CHILDREN gives the largest one's peak, not a sum (summing
    # would count the shared, file-backed pages of the memmap once per worker).
    out["peak_worker_rss_bytes"] = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
    out["peak_rss_note"] = ("peak_rss_bytes: main process VmHWM; peak_worker_rss_bytes: the "
                            "largest single worker's peak, memmapped dataset pages included")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=2)
            f.write("\n")


if __name__ == "__main__":
    main()
