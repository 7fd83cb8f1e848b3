"""A build to measure: tools/bench/package_device.sh's archive, its unpacked pkg/ folder, or a CMake
build tree (build/: bin/, tests/, python/ringfeed), and its Python extension.

On the GPU machine the extension is compiled from the package (Build.build_extension): the
package carries the position-independent static libraries of the build and the sources of its
commit (src/), and the machine has python3 with pybind11, g++ and CUDA; the JPEG decode's sources
are compiled there against the machine's own libjpeg-turbo (Debian's libjpeg.a is not
position-independent) and the codecs link the machine's shared libzstd and liblz4. A build tree
has its extension already (CMake builds it into build/python/ringfeed).
"""

import glob
import os
import shutil
import subprocess
import sysconfig

from .context import ROOT

JPEG_SOURCES = ("jpeg_errors", "jpeg_image", "image_spec", "image_resample")  # decode/*.cc


class Build:
    def __init__(self, name, root, kind):
        self.name, self.root, self.kind = name, root, kind  # kind: package or tree
        self.bin = os.path.join(root, "bin")
        self.tests = os.path.join(root, "tests")
        self.site = os.path.join(root, "python") if kind == "tree" else None
        src = os.path.join(root, "src")
        self.src = src if kind == "package" and os.path.isdir(os.path.join(src, "python")) else ROOT
        self.commit = read_commit(root, kind)

    @classmethod
    def open(cls, name, path, work):
        """PATH: an archive (.tar.xz, unpacked into WORK/pkg-NAME), a pkg/ folder, a build tree."""
        path = os.path.abspath(path)
        if os.path.isfile(path):
            dest = os.path.join(work, f"pkg-{name}")
            shutil.rmtree(dest, ignore_errors=True)
            os.makedirs(dest)
            subprocess.run(["tar", "-C", dest, "-xf", path], check=True)
            path = os.path.join(dest, "pkg")
        if not os.path.exists(os.path.join(path, "bin", "ringfeed")):
            raise SystemExit(f"run.py: no bin/ringfeed in {path} (a package_device.sh archive, "
                             "its pkg/ folder or a build tree)")
        kind = "package" if os.path.isdir(os.path.join(path, "lib")) else "tree"
        return cls(name, path, kind)

    def tool(self, name):
        return os.path.join(self.bin, name)

    def has(self, name):
        return os.path.exists(self.tool(name))

    def test_executables(self):
        return sorted(os.path.basename(t) for t in glob.glob(os.path.join(self.tests, "*"))
                      if os.path.isfile(t) and os.access(t, os.X_OK))

    def describe(self):
        return f"{self.name}: {self.kind} {self.root} (commit {self.commit})"

    # -- the Python extension ----------------------------------------------------------------
    def build_extension(self, ctx):
        """Compiles ringfeed._ringfeed for this python3 into WORK/site-NAME; returns the site.
        A build tree's is already built; a failure ends the part (ctx.fail)."""
        if self.kind == "tree":
            if not glob.glob(os.path.join(self.site, "ringfeed", "_ringfeed*.so")):
                ctx.fail(f"{self.site}/ringfeed has no extension (build target ringfeed_python)")
            return self.site
        site = os.path.join(ctx.work, f"site-{self.name}")
        pkgdir = os.path.join(site, "ringfeed")
        os.makedirs(pkgdir, exist_ok=True)
        src, lib = self.src, os.path.join(self.root, "lib")
        for pattern in ("*.py", "*.pyi", "py.typed"):
            for f in glob.glob(os.path.join(src, "python", "ringfeed", pattern)):
                shutil.copy(f, pkgdir)
        libs = [f for f in sorted(glob.glob(os.path.join(lib, "lib*.a")))
                if not f.endswith("/librf_jpeg.a")]
        extra = []
        if os.path.exists(os.path.join(lib, "librf_jpeg.a")):
            objs = os.path.join(ctx.work, f"jpeg-{self.name}")
            os.makedirs(objs, exist_ok=True)
            made = []
            # Of today's list, those the package's library holds (an older one lacks some).
            held = subprocess.run(["ar", "t", os.path.join(lib, "librf_jpeg.a")],
                                  capture_output=True, text=True).stdout.split()
            for f in JPEG_SOURCES:
                if held and f + ".cc.o" not in held:
                    continue
                cc = os.path.join(src, "decode", f + ".cc")
                if not os.path.exists(cc):
                    ctx.fail(f"the extension: the package has no decode/{f}.cc (its src/)")
                o = os.path.join(objs, f + ".o")
                r = ctx.run(f"extension-{self.name}-{f}", [
                    "g++", "-O2", "-std=c++20", "-fPIC", "-ffp-contract=off",
                    "-fvisibility=hidden", f"-I{src}", f"-I{self.root}/include", "-c", cc, "-o", o])
                if not r.ok:
                    ctx.fail(f"the extension: decode/{f}.cc: {r.tail(5)}")
                made.append(o)
            jpeg = os.path.join(objs, "librf_jpeg.a")
            subprocess.run(["ar", "rcs", jpeg, *made], check=True)
            libs.append(jpeg)
            extra.append("-ljpeg")
        if os.path.exists(os.path.join(src, "io", "codec.h")):
            extra += ["-l:libzstd.so.1", "-l:liblz4.so.1"]  # format 2's codecs
        version = project_version(os.path.join(src, "CMakeLists.txt"))
        # pybind11's own include flags where pip's module is there (the GPU machines), else
        # Python's headers (Debian's pybind11-dev puts pybind11's in /usr/include).
        includes = subprocess.run([ctx.python_exe, "-m", "pybind11", "--includes"],
                                  capture_output=True, text=True).stdout.split() or [
            "-I" + sysconfig.get_paths()["include"]]
        # The binding's own sources (the DLPack export is a library of lib/): every .cc of the
        # package's tree's python/src.
        sources = sorted(glob.glob(os.path.join(src, "python", "src", "*.cc")))
        sources = [f for f in sources if not f.endswith("dlpack_export.cc")]
        # The headers the package's libraries were built with (nlohmann-json's: a state's JSON
        # crosses from the extension into the library, so another version's ABI tag would not
        # link) before the machine's own.
        deps_include = [f"-I{d}" for d in [os.path.join(self.root, "deps", "include")]
                        if os.path.isdir(d)]
        suffix = sysconfig.get_config_var("EXT_SUFFIX")
        cmd = ["g++", "-O2", "-std=c++20", "-shared", "-fPIC", "-fvisibility=hidden",
               "-DRINGFEED_HAVE_CUDA=1", f'-DRINGFEED_VERSION="{version}"', f"-I{src}",
               f"-I{self.root}/include", *deps_include, "-I/usr/local/cuda/include", *includes,
               *sources,
               "-o", os.path.join(pkgdir, "_ringfeed" + suffix), "-Wl,--start-group", *libs,
               "-Wl,--end-group", *extra, "-L/usr/local/cuda/lib64", "-lcudart_static",
               "-lpthread", "-ldl", "-lrt", "-Wl,--exclude-libs,ALL"]
        r = ctx.run(f"extension-{self.name}", cmd)
        if not r.ok:
            ctx.fail(f"the extension of {self.name}: {r.tail(8)}")
        self.site = site
        return site


def read_commit(root, kind):
    """The commit the build was made from: pkg/COMMIT (package_device.sh writes it), or a build
    tree's git. A package without COMMIT (an older package_device.sh's) is "unknown": this
    checkout's commit is not the package's."""
    f = os.path.join(root, "COMMIT")
    if os.path.exists(f):
        return open(f).read().strip() or "unknown"
    if kind == "package":
        return "unknown (the package has no COMMIT)"
    return git_commit(root) or "unknown"


def git_commit(tree):
    try:
        p = subprocess.run(["git", "-C", tree, "describe", "--always", "--dirty", "--abbrev=10"],
                           capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return p.stdout.strip() if p.returncode == 0 else None


def project_version(cmakelists):
    try:
        for line in open(cmakelists):
            if line.startswith("project(ringfeed VERSION "):
                return line.split()[2].rstrip(")")
    except OSError:
        pass
    return "unknown"
