"""Decoded JPEG records: the ImageFolder of photographs and its dataset, the image tests, nvJPEG's
and the CPU path's decode against torchvision's and PIL's (images_gpu_bench.py, jpeg_cpu_bench.py),
and torchvision's ResNet-50 fed by ringfeed.Loader against compute alone and the DataLoader
(examples/torch_resnet50.py)."""

import glob
import json
import os
import shlex
import subprocess

from .. import data
from ..context import BENCH, ROOT
from ..measure import fmt, gtest, median
from ..registry import names, part


def image_data(ctx, s):
    """(folder, dataset, small folder, small dataset) of COUNT JPEGs and the first COUNT/8."""
    folder = data.jpeg_set(ctx, s.count, s.photos)
    small = data.jpeg_subset(folder, max(1, s.count // 8))
    return (folder, data.convert_images(ctx, folder, f"images-{s.count}"), small,
            data.convert_images(ctx, small, f"images-{s.count}-small"))


IMAGES = {"count": 32000, "photos": ""}
IMAGES_TINY = {"count": 24}


@part("images-tests", budget=240, about="the build's image and JPEG test executables (the GPU "
      "cases where a GPU is), and the nvJPEG declarations checked against this machine's nvjpeg.h",
      settings={"tests": "", "timeout": 120}, tiny={"tests": "core_units_test"})
def images_tests(ctx, s):
    b = ctx.after
    chosen = names(s.tests) or [t for t in b.test_executables()
                                if "image" in t.lower() or "jpeg" in t.lower()]
    for t in chosen:
        if ctx.fits(20, f"test {t}"):
            gtest(ctx, os.path.join(b.tests, t), timeout=s.timeout)
    headers = glob.glob("/usr/local/cuda*/targets/x86_64-linux/include/nvjpeg.h") + glob.glob(
        "/usr/local/cuda*/include/nvjpeg.h")
    if not headers:
        ctx.skip("nvjpeg_abi_check", "no nvjpeg.h on this machine")
        return
    r = ctx.run("nvjpeg_abi_check", ["g++", "-std=c++20", "-fsyntax-only", f"-I{b.src}",
                                     f"-I{os.path.dirname(headers[0])}",
                                     os.path.join(ROOT, "tests/pipeline/nvjpeg_abi_check.cc")])
    ctx.say("nvjpeg_abi_check: " + (f"cuda/nvjpeg_library.h matches {headers[0]}" if r.ok
                                    else "FAILED"))
    if not r.ok:
        ctx.fail(f"nvjpeg_abi_check against {headers[0]}: {r.tail(5)}")


def nvjpeg(ctx):
    """What the machine has of nvJPEG; sets RINGFEED_NVJPEG where libnvjpeg.so.13 does not load by
    name but a file of that name is found (the NVIDIA wheels beside PyTorch, CUDA's lib64)."""
    probe = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                         "probe_nvjpeg.py")
    r = ctx.run("nvjpeg-probe", [ctx.python_exe, probe])
    found = {}
    for line in r.out.splitlines():
        if line.startswith("{"):
            found = json.loads(line)
    ctx.say(f"nvJPEG here: {' '.join(found.get('files', [])) or 'none found'}; dlopen by name: "
            f"{' '.join(found.get('loads', [])) or 'none'}; the loader's image_decoder: "
            f"{found.get('image_decoder', '?')}")
    if found.get("path") and "RINGFEED_NVJPEG" not in ctx.env:
        ctx.env["RINGFEED_NVJPEG"] = found["path"]
        ctx.say(f"RINGFEED_NVJPEG={found['path']} (libnvjpeg.so.13 is not found by name here)")


@part("images-bench", budget=420, gpus=1, torch=True, about="images_gpu_bench.py: ringfeed's "
      "nvJPEG loader cold and warm, its CPU decode on every core, torchvision's GPU decode alone "
      "and with RandomResizedCrop, PIL in a DataLoader, interleaved rounds; the loader's memory "
      "on the small and the full dataset",
      settings=dict(IMAGES, rounds=3, args=""), tiny=IMAGES_TINY)
def images_bench(ctx, s):
    ctx.extension()
    nvjpeg(ctx)
    folder, full, _, small = image_data(ctx, s)
    sink = os.path.join(ctx.log_path("images_bench", ".jsonl"))
    budget = max(30, ctx.left() - 30)
    cmd = [ctx.python_exe, os.path.join(BENCH, "images_gpu_bench.py"), folder, "--data", full,
           "--datasets", f"{small},{full}", "--rounds", s.rounds, "--drop-caches", "--budget",
           int(budget), "--json", sink, *shlex.split(s.args)]
    r = ctx.run("images_bench", cmd)
    say_bench(ctx, r.out)
    if r.rc > 128 and r.rc != 124 and ctx.fits(60, "the bench without nvJPEG"):
        ctx.say(f"images_gpu_bench.py died of signal {r.rc - 128}: again without the nvJPEG "
                "contestants (the baselines)")
        r = ctx.run("images_bench_baselines", [
            *cmd[:3], "--data", full, "--rounds", s.rounds, "--contestants",
            "ringfeed-cpu,tv-decode,tv-crop,pil-dataloader", "--drop-caches", "--budget",
            int(max(30, ctx.left() - 30)), "--json", sink, *shlex.split(s.args)])
        say_bench(ctx, r.out)
    ctx.figure("runs", [json.loads(x) for x in open(sink)] if os.path.exists(sink) else [])
    if not r.ok:
        ctx.fail(f"images_gpu_bench.py: {r.why()}")


@part("codecs-bench", budget=420, gpus=1, torch=True, about="images_gpu_bench.py on a web "
      "crawl's mix of codecs (make_jpeg_set.py --mix web: progressive and CMYK JPEGs, PNGs and "
      "WebPs among baseline JPEGs, converted as they are), then on sets of one codec each "
      "(baseline JPEG, progressive JPEG, PNG, WebP): ringfeed's loader on the GPU and on the CPU "
      "threads against PIL in a DataLoader over the same files, interleaved rounds; the web "
      "mix's CPU rate against the one its codecs' shares and single-codec rates predict",
      settings=dict(IMAGES, count=16000, single=4000, mixes="web none progressive png webp",
                    rounds=3, args=""), tiny=dict(IMAGES_TINY, single=24))
def codecs_bench(ctx, s):
    ctx.extension()
    nvjpeg(ctx)
    failed, medians, folders = [], {}, {}
    for mix in names(s.mixes):
        count = s.count if mix == "web" else s.single
        if not ctx.fits(60, f"the {mix} set"):
            break
        folder = data.jpeg_set(ctx, count, s.photos, mix=mix)
        converted = data.convert_images(ctx, folder, f"images-{count}-{mix}")
        sink = ctx.log_path(f"codecs_bench_{mix}", ".jsonl")
        ctx.say(f"# the {mix} set: {count} images")
        r = ctx.run(f"codecs_bench_{mix}", [
            ctx.python_exe, os.path.join(BENCH, "images_gpu_bench.py"), folder, "--data",
            converted, "--rounds", s.rounds, "--contestants",
            "ringfeed-gpu,ringfeed-cpu,pil-dataloader", "--drop-caches", "--budget",
            int(max(30, min(120, ctx.left() - 30))), "--json", sink, *shlex.split(s.args)])
        say_bench(ctx, r.out)
        runs = [json.loads(x) for x in open(sink)] if os.path.exists(sink) else []
        ctx.figure(f"runs_{mix}", runs)
        folders[mix] = folder
        medians[mix] = next((x["medians"] for x in runs if x.get("part") == "summary"), {})
        if not r.ok:
            failed.append(f"{mix}: {r.why()}")
    if "web" in folders:
        predicted_mix(ctx, codec_shares(folders["web"]), medians)
    if failed:
        ctx.fail("images_gpu_bench.py: " + "; ".join(failed))


def codec_shares(folder):
    """What make_jpeg_set.py's FOLDER holds, as shares of its images: 'none' (baseline JPEGs, the
    CMYK ones among them: no set of their own), 'progressive' (a JPEG whose first frame marker is
    SOF2), 'png' and 'webp' (by extension)."""
    counts = {}
    for root, _, files in os.walk(folder):
        for name in files:
            ext = os.path.splitext(name)[1].lower()
            kind = {".png": "png", ".webp": "webp"}.get(ext)
            if kind is None and ext in (".jpg", ".jpeg"):
                with open(os.path.join(root, name), "rb") as f:
                    head = f.read(1 << 16)
                sof = [head.find(m) for m in (b"\xff\xc0", b"\xff\xc1", b"\xff\xc2")]
                first = min((i, k) for k, i in enumerate(sof) if i >= 0) if max(sof) >= 0 else None
                kind = "progressive" if first and first[1] == 2 else "none"
            if kind:
                counts[kind] = counts.get(kind, 0) + 1
    total = sum(counts.values())
    return {k: v / total for k, v in counts.items()} if total else {}


def predicted_mix(ctx, shares, medians):
    """The web mix's rate on the CPU threads against the one its shares predict from the sets of
    one codec (each image costs 1 / its codec's rate: the rate is the harmonic mix), whole epoch
    and after the first batch."""
    ctx.say("# the web mix against its codecs: " + ", ".join(
        f"{k} {v:.1%}" for k, v in sorted(shares.items(), key=lambda kv: -kv[1])))
    figures = {}
    for label in ("ringfeed-cpu", "ringfeed-cpu (after the first batch)"):
        rates = {k: medians.get(k, {}).get(label) for k in shares}
        measured = medians.get("web", {}).get(label)
        if not measured or not all(rates.values()):
            ctx.say(f"{label}: no prediction (a set is missing: "
                    f"{', '.join(k for k, v in rates.items() if not v) or 'web'})")
            continue
        predicted = 1.0 / sum(shares[k] / rates[k] for k in shares)
        figures[label] = {"measured": measured, "predicted": round(predicted, 1),
                          "ratio": round(measured / predicted, 3)}
        ctx.say(f"{label}: web mix {measured:,.0f} images/s against {predicted:,.0f} predicted "
                f"({', '.join(f'{k} {rates[k]:,.0f}' for k in shares)}): "
                f"{measured / predicted:.3f}")
    ctx.figure("web_mix_over_predicted", figures)


def say_bench(ctx, out):
    keep, on = [], False
    for line in out.splitlines():
        on = on or line.startswith(("memory:", "summary:"))
        if (on and not line.startswith("{")) or line.startswith("# "):
            keep.append(line)
    for line in keep:
        ctx.say(line)


@part("jpeg-cpu", budget=240, about="the CPU JPEG path per core against libjpeg-turbo's own "
      "decode and PIL's decode + crop (tools/bench/jpeg_cpu_bench.py), and ringfeed's decode "
      "alone (ringfeed-bench-jpeg)", settings=dict(IMAGES, count=2000, rounds=5),
      tiny=dict(IMAGES_TINY, rounds=1))
def jpeg_cpu(ctx, s):
    ctx.extension()
    folder = data.jpeg_set(ctx, s.count, s.photos)
    full = data.convert_images(ctx, folder, f"images-{s.count}")
    r = ctx.run("jpeg_cpu_bench", [ctx.python_exe, os.path.join(BENCH, "jpeg_cpu_bench.py"),
                                   folder, "--data", full, "--rounds", s.rounds])
    for line in r.out.splitlines()[-16:]:
        ctx.say(line)
    if not r.ok:
        ctx.fail(f"jpeg_cpu_bench.py: {r.why()}")
    if ctx.after.has("ringfeed-bench-jpeg"):
        r = ctx.run("bench-jpeg", [ctx.after.tool("ringfeed-bench-jpeg"), folder, "--rounds",
                                   s.rounds])
        for line in r.out.splitlines()[-6:]:
            ctx.say(line)


@part("resnet", budget=420, gpus=1, torch=True, about="torchvision's ResNet-50 (bf16, "
      "channels_last) fed by ringfeed.Loader, alone (one batch on the GPU) and fed by the "
      "DataLoader (the folder in the page cache), rounds alternating; fed / alone",
      settings=dict(IMAGES, steps=100, warm=20, batch=256, arch="resnet50", rounds=2, nprocs=1,
                    modes="fed alone dataloader", flags="", fed_flags="", profile=""))
def resnet(ctx, s):
    ctx.extension()
    nvjpeg(ctx)
    folder, full, _, _ = image_data(ctx, s)
    subprocess.run(f"find {shlex.quote(folder)} -name '*.jpg' -print0 | xargs -0 -P "
                   f"{os.cpu_count()} -n 256 cat >/dev/null", shell=True)
    modes = names(s.modes)
    sink = ctx.log_path("resnet", ".jsonl")
    per_run = 60  # seconds a run may take until the first has shown what one takes
    runs = []
    for r in range(1, s.rounds + 1):
        for m in (modes if r % 2 else modes[::-1]):
            if not ctx.fits(per_run, f"{m} round {r}"):
                break
            d = resnet_run(ctx, s, m, r, folder, full, sink)
            per_run = max(per_run, d.pop("_seconds", 0) + 10)
            if "samples_per_s" in d:
                runs.append(d)
    if s.profile and ctx.fits(per_run + 20, f"{s.profile} profiled"):
        trace = os.path.join(ctx.logs, "resnet", "resnet-profile.json")
        resnet_run(ctx, s, s.profile, "profiled", folder, full, sink, ["--profile", trace])
        if os.path.exists(trace):
            r = ctx.run("trace_overlap", [ctx.python_exe, os.path.join(BENCH, "trace_overlap.py"),
                                          trace])
            for line in r.out.splitlines()[:40]:
                ctx.say(line)
    ctx.figure("runs", runs)
    by = {}
    for d in runs:
        by.setdefault(d["label"], []).append(d["samples_per_s"])
    med = {k: median(v) for k, v in by.items()}
    ctx.figure("median_samples_per_s", med)
    for k, v in by.items():
        ctx.say(f"  {k:14s} {fmt(med[k], '9.1f')}  {v}")
    for a, b in [(k, "alone") for k in by if k != "alone"] + [("fed", "dataloader")]:
        if a in med and b in med:
            per = [round(x["samples_per_s"] / y["samples_per_s"], 3) for x in runs for y in runs
                   if x["label"] == a and y["label"] == b and x["round"] == y["round"]]
            ctx.figure(f"{a}/{b}", med[a] / med[b])
            ctx.say(f"  {a} / {b}: {med[a] / med[b]:.3f} (per round {per})")


def resnet_run(ctx, s, mode, rnd, folder, full, sink, extra=()):
    """One run of MODE: fed, fed:FLAG,FLAG (fed with those flags), fed-nvjpeg, fed-cpu, alone,
    dataloader, each optionally NAME=VALUE,...@MODE (with that environment)."""
    label, env = mode, dict(ctx.env)
    if "@" in mode:
        assigns, mode = mode.split("@", 1)
        env.update(a.split("=", 1) for a in assigns.split(","))
    fed = ["--data", full, *shlex.split(s.fed_flags)]
    src = {"fed": fed, "fed-nvjpeg": fed + ["--image-decoder", "nvjpeg"],
           "fed-cpu": fed + ["--image-decoder", "cpu"], "alone": fed + ["--compute-alone"],
           "dataloader": ["--dataloader", folder]}
    if mode.startswith("fed:"):
        src[mode] = fed + mode[4:].split(",")
    if mode not in src:
        ctx.say(f"modes: unknown {mode}")
        return {}
    cmd = [*ctx.torchrun(s.nprocs), os.path.join(ROOT, "examples", "torch_resnet50.py"),
           *src[mode], "--arch", s.arch, "--batch", s.batch, "--steps", s.steps, "--warm", s.warm,
           *shlex.split(s.flags), *extra]
    r = ctx.run(f"resnet-{label.replace(':', '_').replace(',', '_')}-r{rnd}", cmd, env=env)
    line = next((x for x in r.out.splitlines() if x.startswith("{")), None)
    if not line:
        ctx.say(f"round {rnd} {label}: exit {r.rc} in {r.seconds:.0f} s: no figure")
        return {"_seconds": r.seconds}
    d = json.loads(line)
    d.update(label=label, round=rnd, command=" ".join(shlex.quote(str(c)) for c in cmd))
    with open(sink, "a") as f:
        f.write(json.dumps(d) + "\n")
    ranks = "; ".join(f"rank {i}: " + ", ".join(f"{k} {v}" for k, v in t["sums_ms"].items())
                      for i, t in enumerate(d.get("ranks") or []) if t)
    ctx.say(f"round {rnd} {label}: {d['samples_per_s']} samples/s, taking batches "
            f"{d.get('take_ms_per_step')} ms a step, {d.get('stats')}; summed ms: {ranks}")
    d["_seconds"] = r.seconds
    return d


@part("clip", budget=420, gpus=1, torch=True, about="examples/torch_clip.py (a CLIP-style model: "
      "torchvision's ResNet as its image encoder, bf16) on its demo image-caption pairs, fed by "
      "ringfeed.Loader (samples of two fields: the image decoded, the caption's ids) against "
      "the same steps on one fixed batch (compute alone), rounds alternating; fed / alone",
      settings={"samples": 8000, "side": 224, "encoder": "resnet18", "batch": 256,
                "tokenizer": "bytes", "size": 224, "steps": 120, "warm": 20, "rounds": 2,
                "modes": "fed alone", "flags": ""},
      tiny={"samples": 128, "side": 0, "encoder": "small", "batch": 32, "size": 32, "steps": 6,
            "warm": 1, "rounds": 1})
def clip(ctx, s):
    ctx.extension()
    work = ctx.work_path("clip")
    base = [ctx.python_exe, os.path.join(ROOT, "examples", "torch_clip.py"), "--work", work,
            "--demo-samples", s.samples, "--demo-side", s.side, "--encoder", s.encoder,
            "--tokenizer", s.tokenizer,
            "--batch-size", s.batch, "--image-size", s.size, "--epochs", 100, "--steps",
            s.steps + s.warm, "--warm", s.warm, "--print-every", 0, "--json",
            *(["--device", "cpu", "--threads", 2] if ctx.cpu else ["--device", "cuda"]),
            *shlex.split(s.flags)]
    # The demo set is written once, by the first run (its seconds are not a round's).
    r = ctx.run("clip-write", base + ["--steps", 1, "--warm", 0])
    if not r.ok:
        ctx.fail(f"torch_clip.py: {r.tail(3)}")
    rates = {}
    extra = {"fed": [], "alone": ["--fixed-batch"], "fed-cpu": ["--image-decoder", "cpu"],
             "fed-nvjpeg": ["--image-decoder", "nvjpeg"]}
    modes = [m for m in names(s.modes) if m in extra]
    for rnd in range(1, s.rounds + 1):
        for mode in (modes if rnd % 2 else modes[::-1]):
            if not ctx.fits(60, f"clip {mode} round {rnd}"):
                break
            cmd = base + extra[mode]
            r = ctx.run(f"clip-{mode}-r{rnd}", cmd)
            line = next((x for x in r.out.splitlines() if x.startswith("{")), None)
            if not line:
                ctx.say(f"round {rnd} {mode}: exit {r.rc}: no figure; {r.tail(2)}")
                continue
            d = json.loads(line)
            rates.setdefault(mode, []).append(d["samples_per_s"])
            ctx.say(f"round {rnd} {mode}: {d['samples_per_s']} samples/s; loader "
                    f"{ {k: round(v, 3) for k, v in d['stats'].items() if 'share' in k} }")
    med = {k: median(v) for k, v in rates.items()}
    ctx.figure("samples_per_s", rates)
    for k in med:
        if k != "alone" and "alone" in med:
            ctx.figure(f"{k}/alone", med[k] / med["alone"])
            ctx.say(f"  {k} / alone: {med[k] / med['alone']:.3f} ({k} {rates[k]}, alone "
                    f"{rates['alone']})")
