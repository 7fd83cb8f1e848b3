"""The disk stage and what bounds it: `ringfeed read` against fio and dd, the host-to-device
copies, and the converter's rate."""

import os
import shutil
import subprocess

from .. import data
from ..context import BENCH
from ..measure import load_json
from ..registry import names, part


def fio(ctx):
    """fio: unpacked from .carry/fiopkg.tar.xz (tools/bench/carry.sh fio), else on PATH; ''."""
    return data.carried_tool(ctx, "fiopkg", "fio", shutil.which("fio") or "")


@part("read", budget=420, about="`ringfeed read` against fio (io_uring, O_DIRECT) and dd on one "
      "cold synthetic file, rotated rounds (tools/bench/read_vs_fio.py)",
      settings={"gb": 16.0, "rounds": 5, "configs": "", "variants": ""},
      tiny={"gb": data.TINY_GB, "rounds": 1, "configs": "4M:8"})
def read(ctx, s):
    big = data.synthetic(ctx, s.gb, seed=1)
    tool = fio(ctx)
    if tool:
        r = subprocess.run([tool, "--version"], capture_output=True, text=True)
        ctx.say(f"fio: {r.stdout.strip() or tool}")
    else:
        ctx.skip("fio", "not on PATH and no .carry/fiopkg.tar.xz (tools/bench/carry.sh fio)")
    out = os.path.join(ctx.logs, "read")
    os.makedirs(out, exist_ok=True)
    r = ctx.run("read_vs_fio", [ctx.python_exe, os.path.join(BENCH, "read_vs_fio.py"), big,
                                "--rounds", s.rounds, "--out", out, "--configs", s.configs,
                                "--variants", s.variants, "--fio", tool,
                                "--ringfeed", ctx.after.tool("ringfeed"),
                                *(["--warm"] if ctx.cpu else [])])
    table = r.out.split("\nfile: ", 1)
    for line in ("file: " + table[1]).splitlines() if len(table) > 1 else []:
        ctx.say(line)
    if not r.ok:
        ctx.fail(f"read_vs_fio.py: {r.tail(3)}")
    result = load_json(os.path.join(out, "read_vs_fio.json"))
    ctx.figure("configs", result.get("configs"))
    ctx.figure("dd_gb_per_s", result.get("dd", {}).get("gb_per_s"))
    ctx.figure("ratio_default_vs_fio_best", result.get("ratio_default_vs_fio_best"))
    ctx.figure("ratio_best_vs_best", result.get("ratio_best_vs_best"))


@part("copies", budget=90, gpus=1, about="host-to-device copies (ringfeed-bench-h2d): pinned and "
      "pageable, 4 MiB pieces on 2 streams as the pipeline copies, and 64 MiB on 1 as the peak")
def copies(ctx, s):
    for name, chunk, streams in (("pipeline", "4MiB", "2"), ("peak", "64MiB", "1")):
        out = ctx.log_path(f"h2d-{name}", ".json")
        r = ctx.run(f"h2d-{name}", [ctx.after.tool("ringfeed-bench-h2d"), "--chunk", chunk,
                                    "--streams", streams, "--json", out])
        if not r.ok:
            ctx.fail(f"ringfeed-bench-h2d: {r.why()}")
        for res in load_json(out)["results"]:
            key = f"h2d_{res['memory']}_{name}_gb_per_s"
            ctx.figure(key, res["gb_per_s_median"])
            ctx.say(f"{res['memory']} copies, {chunk} pieces on {streams} stream(s): "
                    f"{res['gb_per_s_median']:.1f} GB/s")


# -- the converter's rate ---------------------------------------------------------------------
KINDS = {  # kind: (files made by make_inputs, ringfeed-convert arguments before --compress)
    "raw": (["raw.bin"], lambda d: ["raw", "--records", f"{d}/raw.bin", "--shape", "3,32,32"]),
    "idx": (["idx-images.idx", "idx-labels.idx"],
            lambda d: ["idx", "--images", f"{d}/idx-images.idx", "--labels",
                       f"{d}/idx-labels.idx"]),
    "npy": (["x.npy", "y.npy"], lambda d: ["npy", "--images", f"{d}/x.npy", "--labels",
                                           f"{d}/y.npy"]),
    "pred-u8": (["images_train.bin", "labels_train.bin"],
                lambda d: ["predecessor", "--images", f"{d}/images_train.bin", "--labels",
                           f"{d}/labels_train.bin", "--shape", "3,32,32", "--dtype", "uint8"]),
    "pred-f32": (["images_train.bin", "labels_train.bin"],
                 lambda d: ["predecessor", "--images", f"{d}/images_train.bin", "--labels",
                            f"{d}/labels_train.bin", "--shape", "3,32,32", "--dtype",
                            "float32"]),
}


@part("convert", budget=300, about="ringfeed-convert's rate in GB/s of input, per input kind, "
      "codec and thread count, each conversion cold and fsynced (issue 27: >= 1 GB/s on 16 cores)",
      settings={"gb": 2.0, "kinds": "raw idx npy pred-u8 pred-f32", "codecs": "none lz4 zstd:1",
                "threads": "1 default"},
      tiny={"gb": data.TINY_GB, "kinds": "raw idx pred-u8", "codecs": "none lz4", "threads": "1"})
def convert(ctx, s):
    d = os.path.join(ctx.work, "convert-inputs")
    kinds = names(s.kinds)
    unknown = [k for k in kinds if k not in KINDS]
    if unknown:
        ctx.fail(f"no input kind {' '.join(unknown)} ({' '.join(KINDS)})")
    make_inputs(d, int(s.gb * 1e9), kinds)
    out = os.path.join(ctx.work, "convert-out.rfd")
    rows = []
    ctx.say("| input | codec | threads | input GB | seconds | GB/s of input |")
    ctx.say("| --- | --- | --- | ---: | ---: | ---: |")
    for kind in kinds:
        files, args = KINDS[kind]
        size = sum(os.path.getsize(os.path.join(d, f)) for f in files)
        for codec in names(s.codecs):
            for threads in names(s.threads):
                if not ctx.fits(10, f"convert {kind} {codec} threads {threads}"):
                    return
                if os.path.exists(out):
                    os.unlink(out)
                extra = [] if threads == "default" else ["--threads", threads]
                r = ctx.run(f"convert-{kind}-{codec}-{threads}", [
                    ctx.after.tool("ringfeed-convert"), *args(d), "--compress", codec, *extra,
                    "-o", out, "-q"], cold=True)
                if not r.ok:
                    ctx.say(f"| {kind} | {codec} | {threads} | FAILED: {r.why()} |")
                    continue
                rows.append({"kind": kind, "codec": codec, "threads": threads, "bytes": size,
                             "seconds": r.seconds, "gb_per_s": size / r.seconds / 1e9})
                ctx.say(f"| {kind} | {codec} | {threads} | {size / 1e9:.2f} | {r.seconds:.2f} | "
                        f"{size / r.seconds / 1e9:.2f} |")
    ctx.figure("conversions", rows)
    if os.path.exists(out):
        os.unlink(out)


def make_inputs(out, size, kinds):
    """The converter's inputs, about SIZE bytes of samples each: 3x32x32 images of ten classes
    (a smooth template each plus noise, so that lz4 and zstd find something, as in real images).
    raw: uint8 records, the label first; idx: uint8 N,3,32,32 and labels; npy: float32 in [0, 1]
    and labels; pred-*: float32 feature-major (feature f of sample s at f * N + s), int32 labels."""
    import numpy as np

    os.makedirs(out, exist_ok=True)
    stamp = os.path.join(out, f".made-{size}-" + "-".join(sorted(kinds)))
    if os.path.exists(stamp):
        return
    C, H, W = 3, 32, 32
    F = C * H * W
    rng = np.random.default_rng(27)
    yy, xx = np.meshgrid(np.arange(H), np.arange(W), indexing="ij")
    templates = np.empty((10, F), np.uint8)
    for k in range(10):
        planes = [96 + 64 * np.sin((xx * (k + 1) + yy * (c + 2)) / 9.0 + c) for c in range(C)]
        templates[k] = np.clip(np.stack(planes), 0, 255).astype(np.uint8).reshape(-1)

    def samples(bytes_each):
        n = max(1, size // bytes_each)
        return n, rng.integers(0, 10, n, dtype=np.uint8)

    def blocks(n, labels, block=8192):
        for s0 in range(0, n, block):
            s1 = min(n, s0 + block)
            noise = rng.integers(0, 32, (s1 - s0, F), dtype=np.uint8)
            yield s0, s1, templates[labels[s0:s1]] + noise  # at most 160 + 31: no wrap

    def idx_header(code, dims):
        return bytes([0, 0, code, len(dims)]) + b"".join(d.to_bytes(4, "big") for d in dims)

    if "raw" in kinds:
        n, labels = samples(F)
        with open(os.path.join(out, "raw.bin"), "wb") as f:
            for s0, s1, x in blocks(n, labels):
                rec = np.empty((s1 - s0, F + 1), np.uint8)
                rec[:, 0], rec[:, 1:] = labels[s0:s1], x
                rec.tofile(f)
    if "idx" in kinds:
        n, labels = samples(F)
        with open(os.path.join(out, "idx-images.idx"), "wb") as f:
            f.write(idx_header(0x08, [n, C, H, W]))
            for _, _, x in blocks(n, labels):
                x.tofile(f)
        with open(os.path.join(out, "idx-labels.idx"), "wb") as f:
            f.write(idx_header(0x08, [n]))
            labels.tofile(f)
    if "npy" in kinds:
        n, labels = samples(4 * F)
        x_out = np.lib.format.open_memmap(os.path.join(out, "x.npy"), "w+", np.float32,
                                          (n, C, H, W))
        for s0, s1, x in blocks(n, labels):
            x_out[s0:s1] = (x.astype(np.float32) / 255).reshape(-1, C, H, W)
        x_out.flush()
        del x_out
        np.save(os.path.join(out, "y.npy"), labels)
    if {"pred-u8", "pred-f32"} & set(kinds):
        n, labels = samples(4 * F)  # the uint8 matrix in memory: a quarter of SIZE
        m = np.empty((n, F), np.uint8)
        for s0, s1, x in blocks(n, labels):
            m[s0:s1] = x
        with open(os.path.join(out, "images_train.bin"), "wb") as f:
            for f0 in range(0, F, 64):
                (m[:, f0:f0 + 64].T.astype(np.float32) / 255).tofile(f)
        labels.astype(np.int32).tofile(os.path.join(out, "labels_train.bin"))
    open(stamp, "w").close()

