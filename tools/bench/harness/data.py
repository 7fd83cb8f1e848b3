"""The datasets the parts measure on, made once a run (or kept from an earlier call of a warm
machine) under the work folder: synthetic CIFAR-shaped files, Fashion-MNIST, real pixels laid out
as 3x32x32, real token ids replicated to a size, the ImageFolder of JPEGs and its subsets.

What is carried from here to the GPU machine (it reaches nothing else) is found under .carry/
(tools/bench/carry.sh puts it there): fmnist/ (the four IDX .gz files), photos/ (the photographs
make_jpeg_set.py crops), tokens/ (make_token_corpus.py's ids, as tokens.u16 or tokens.rfd),
fiopkg.tar.xz (fio and its libraries), netpkg.tar.xz (nginx, curl and libcurl.so.4 with their
libraries: carried_tool unpacks a package of tools). Where a carried input is missing, Debian's copy is used
(this machine's), else the part that needs it is skipped.
"""

import ctypes
import glob
import os
import shutil
import tarfile

from .context import BENCH, ROOT

SAMPLE_BYTES = 3 * 32 * 32 + 1  # a stored CIFAR-shaped uint8 sample and its label
CARRY = os.path.join(ROOT, ".carry")


def unpacked(ctx, pkg):
    """The folder .carry/PKG.tar.xz (tools/bench/carry.sh) is unpacked in under the work folder
    (once a run), holding PKG/ and PKG/lib/; None where it was not carried."""
    archive = os.path.join(CARRY, pkg + ".tar.xz")
    if not os.path.exists(archive):
        return None
    dest = os.path.join(ctx.work, "carried")
    if not os.path.exists(os.path.join(dest, pkg)):
        with tarfile.open(archive) as t:
            t.extractall(dest)
    return dest


def carried_tool(ctx, pkg, program, system=""):
    """PROGRAM of the carried PKG, as a wrapper that execs it with the package's libraries (a
    signal to the wrapper reaches the program); else SYSTEM where it is executable (this
    machine's copy); else ''."""
    dest = unpacked(ctx, pkg)
    if dest and os.path.exists(os.path.join(dest, pkg, program)):
        wrapper = os.path.join(dest, f"{pkg}-{program}.sh")
        with open(wrapper, "w") as f:
            f.write(f'#!/bin/sh\nLD_LIBRARY_PATH={dest}/{pkg}/lib exec {dest}/{pkg}/{program} '
                    '"$@"\n')
        os.chmod(wrapper, 0o755)
        return wrapper
    return system if system and os.access(system, os.X_OK) else ""


def libcurl_env(ctx):
    """What ringfeed's processes need to load libcurl (io/remote/curl_library.h): nothing where
    the machine has libcurl.so.4, else the carried one (netpkg) through RINGFEED_LIBCURL with its
    libraries on LD_LIBRARY_PATH; None where neither is."""
    try:
        ctypes.CDLL("libcurl.so.4")
        return {}
    except OSError:
        pass
    dest = unpacked(ctx, "netpkg")
    if dest is None:
        return None
    lib = os.path.join(dest, "netpkg", "lib")
    return {"RINGFEED_LIBCURL": os.path.join(lib, "libcurl.so.4"),
            "LD_LIBRARY_PATH": os.pathsep.join(
                x for x in (lib, os.environ.get("LD_LIBRARY_PATH", "")) if x)}


FMNIST_FILES = ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz",
                "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz")


TINY_GB = 0.0015  # --cpu's datasets: about 500 samples, a few batches


def samples_in(gb):
    return max(64, int(gb * 1e9 / SAMPLE_BYTES))


def synthetic(ctx, gb, seed=7, *, samples=None, shape="3,32,32", extra=()):
    """A synthetic dataset of GB gigabytes (CIFAR-shaped uint8, ten classes), made by the after
    build's converter and kept for the run; its path."""
    n = samples or samples_in(gb)
    tag = "-".join([f"synthetic-{n}-seed{seed}", shape.replace(",", "x"), *extra]).replace(
        " ", "").replace("--", "")
    path = os.path.join(ctx.work, tag + ".rfd")
    if os.path.exists(path + ".complete"):
        return path
    r = ctx.run(f"make-{os.path.basename(tag)}", [
        ctx.after.tool("ringfeed-convert"), "synthetic", "--samples", n, "--shape", shape,
        "--classes", 10, "--seed", seed, *extra, "-q", "-o", path])
    if not r.ok:
        ctx.fail(f"cannot make {path}: {r.tail(2)}")
    open(path + ".complete", "w").close()
    files = [path] if os.path.exists(path) else glob.glob(path[:-4] + "-*-of-*.rfd")  # shards
    size = sum(os.path.getsize(f) for f in files)
    ctx.say(f"dataset {os.path.basename(path)}: {n:,} samples, {size / 1e9:.2f} GB"
            f"{f' in {len(files)} shards' if len(files) > 1 else ''}, made in {r.seconds:.1f} s")
    return path


def warm(path):
    """Reads PATH once, so that it is in the page cache (runs with --io buffered)."""
    with open(path, "rb") as f:
        while f.read(16 << 20):
            pass


def remove(path):
    for p in (path, path + ".complete"):
        if os.path.exists(p):
            os.unlink(p)


def fmnist_dir(ctx, setting=""):
    for d in filter(None, (setting, os.path.join(CARRY, "fmnist"),
                           "/usr/share/datasets/fashion-mnist")):
        if all(os.path.exists(os.path.join(d, f)) for f in FMNIST_FILES):
            return d
    return None


def fmnist(ctx, setting=""):
    """Fashion-MNIST's train and test splits as .rfd files, or None (said) where no IDX files are
    here (tools/bench/carry.sh fmnist carries Debian's)."""
    d = fmnist_dir(ctx, setting)
    if not d:
        ctx.skip("Fashion-MNIST", "no IDX files (.carry/fmnist: tools/bench/carry.sh fmnist)")
        return None
    out = []
    for split, prefix in (("train", "train"), ("test", "t10k")):
        path = os.path.join(ctx.work, f"fm-{split}.rfd")
        if not os.path.exists(path + ".complete"):
            r = ctx.run(f"make-fm-{split}", [
                ctx.after.tool("ringfeed-convert"), "idx", "--images",
                os.path.join(d, f"{prefix}-images-idx3-ubyte.gz"), "--labels",
                os.path.join(d, f"{prefix}-labels-idx1-ubyte.gz"), "-q", "-o", path])
            if not r.ok:
                ctx.fail(f"Fashion-MNIST {split}: {r.tail(2)}")
            open(path + ".complete", "w").close()
        out.append(path)
    return tuple(out)


def fashion(ctx, setting=""):
    """(train, test) of Fashion-MNIST; with --cpu two small synthetic 1x28x28 files in its place
    (its 60,000-sample epochs are minutes on a CPU; the plumbing is the same)."""
    if ctx.cpu:
        return (synthetic(ctx, 0, seed=11, samples=640, shape="1,28,28"),
                synthetic(ctx, 0, seed=12, samples=200, shape="1,28,28"))
    return fmnist(ctx, setting)


def photos_dir(setting=""):
    for d in filter(None, (setting, os.path.join(CARRY, "photos"),
                           "/usr/lib/python3/dist-packages/skimage/data")):
        if os.path.exists(os.path.join(d, "astronaut.png")):
            return d
    return None


def jpeg_set(ctx, count, photos="", workers=0, mix="none"):
    """make_jpeg_set.py's ImageFolder of COUNT JPEGs (kept between calls of a warm machine); mix
    "web": with progressive and CMYK JPEGs, PNGs and WebPs among them."""
    folder = os.path.join(ctx.work, f"jpegs-{count}" + ("" if mix == "none" else f"-{mix}"))
    done = os.path.join(folder, ".complete")
    if os.path.exists(done) and open(done).read().strip() == str(count):
        ctx.say(f"{folder}: {count} JPEGs made by an earlier call on this machine")
        return folder
    d = photos_dir(photos)
    if not d:
        ctx.fail("no photographs (.carry/photos: tools/bench/carry.sh photos)")
    shutil.rmtree(folder, ignore_errors=True)
    r = ctx.run("make_jpeg_set", [ctx.python_exe, os.path.join(BENCH, "make_jpeg_set.py"), "-o",
                                  folder, "--count", count, "--workers",
                                  workers or os.cpu_count(), "--data", d, "--mix", mix])
    if not r.ok:
        ctx.fail(f"make_jpeg_set.py: {r.tail(3)}")
    with open(done, "w") as f:
        f.write(f"{count}\n")
    ctx.say(f"{r.tail(1)}; made in {r.seconds:.1f} s, {count / max(r.seconds, 1e-9):,.0f} images/s")
    return folder


def jpeg_subset(folder, n):
    """The first N images of make_jpeg_set.py's FOLDER (image i depends on the seed and i alone,
    so they are what --count N makes), hard-linked into a folder beside it."""
    dst = f"{folder}-first{n}"
    if os.path.isdir(dst):
        return dst
    for c in sorted(os.listdir(folder)):
        if not os.path.isdir(os.path.join(folder, c)):
            continue
        os.makedirs(os.path.join(dst, c), exist_ok=True)
        for f in os.listdir(os.path.join(folder, c)):
            if int(f.rsplit("_", 1)[1].split(".")[0]) < n:
                try:
                    os.link(os.path.join(folder, c, f), os.path.join(dst, c, f))
                except OSError:
                    shutil.copy(os.path.join(folder, c, f), os.path.join(dst, c, f))
    return dst


def convert_images(ctx, folder, name):
    path = os.path.join(ctx.work, name + ".rfd")
    if os.path.exists(path):
        os.unlink(path)
    r = ctx.run(f"convert-{name}", [ctx.after.tool("ringfeed-convert"), "images", folder, "-o",
                                    path])
    if not r.ok:
        ctx.fail(f"ringfeed-convert images {folder}: {r.tail(3)}")
    wrote = next((x for x in r.out.splitlines() if x.startswith("wrote")), r.tail(1))
    ctx.say(f"{wrote} [{r.seconds:.0f} s]")
    return path


def token_ids(ctx, setting=""):
    """The real text's uint16 ids (make_token_corpus.py's tokens.u16, or its tokens.rfd exported
    back to raw ids), or None (said)."""
    d = setting or os.path.join(CARRY, "tokens")
    if os.path.exists(os.path.join(d, "tokens.u16")):
        return os.path.join(d, "tokens.u16")
    rfd = os.path.join(d, "tokens.rfd")
    if not os.path.exists(rfd):
        return None
    out = os.path.join(ctx.work, "tok-src")
    if not os.path.exists(out + ".records"):
        r = ctx.run("tokens-export", [ctx.after.tool("ringfeed-convert"), "export", rfd,
                                      "--format", "raw", "-o", out, "-q"])
        if not r.ok:
            ctx.fail(f"exporting {rfd}: {r.tail(2)}")
    return out + ".records"


def token_source(ctx, setting=""):
    """tokens.rfd (the corpus tokens_bench.py replicates), or a small one made here from
    synthetic documents where none was carried (--cpu: the plumbing, not the text)."""
    d = setting or os.path.join(CARRY, "tokens")
    if os.path.exists(os.path.join(d, "tokens.rfd")):
        return os.path.join(d, "tokens.rfd")
    if not ctx.cpu:
        return None
    import numpy as np

    rng = np.random.default_rng(24)
    docs = [rng.integers(3, 32000, int(rng.integers(10, 2000)), dtype=np.uint16)
            for _ in range(400)]
    ids = np.concatenate([np.append(x, np.uint16(2)) for x in docs])  # each ended by id 2
    ids = ids[: ids.size // 2048 * 2048]  # whole rows of 2048
    raw = os.path.join(ctx.work, "tokens-cpu.u16")
    ids.tofile(raw)
    return replicate_to_rfd(ctx, raw, os.path.join(ctx.work, "tokens-cpu.rfd"))


def replicate_to_rfd(ctx, raw, path):
    r = ctx.run("tokens-rfd", [ctx.after.tool("ringfeed-convert"), "raw", "--records", raw,
                               "--shape", 2048, "--dtype", "uint16", "--label", "none", "-q", "-o",
                               path])
    if not r.ok:
        ctx.fail(f"tokens.rfd: {r.tail(2)}")
    return path


def replicate(src, dst, gb, row=2048):
    """Writes SRC's uint16 ids again and again into DST until it holds GB gigabytes, a whole
    number of rows of ROW ids; returns (ids written, distinct ids)."""
    import numpy as np

    ids = np.fromfile(src, dtype="<u2")
    want = max(row, int(gb * 1e9) // (2 * row) * row)
    with open(dst, "wb") as f:
        done = 0
        while done < want:
            k = min(ids.size, want - done)
            f.write(ids[:k].tobytes())
            done += k
    return done, ids.size
