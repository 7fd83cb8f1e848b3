#!/usr/bin/env bash
# Packs what tools/bench/run.py needs on a GPU machine from a static build (cmake
# -DRINGFEED_STATIC_DEPS=ON) into one archive to carry there: bin/ (ringfeed, the MPI plugin,
# ringfeed-convert, the ringfeed-bench-* programs and ringfeed-link-proxy the build has), tests/
# (the named test executables), lib/ (the position-independent static libraries the Python extension is built from
# there, with Debian's liburing, xxhash, zlib and expat archives; not Debian's libjpeg.a, which is
# not position-independent: the JPEG decode's sources (decode/*.cc) go in src/ and are compiled
# there against the machine's own libjpeg-turbo), include/dlpack and include/Random123 (header-only, from
# Debian's librandom123-dev: core/augment.h's generator), and the source the Python extension is
# compiled from there (src/: python/src, python/ringfeed, every project header and the top
# CMakeLists.txt, whose version the extension reports, of the tree the build came from, SRC_TREE,
# default this checkout), so a package of another commit builds its own. COMMIT names that tree's
# commit (git describe --dirty): run.py's summary records it. deps/ is a CMake prefix holding the
# rest of what the project's own CMake build (`pip wheel .`, RINGFEED_STATIC_DEPS) needs and a GPU
# machine lacks (run.py's wheel part: CMAKE_PREFIX_PATH="PKG/deps;PKG"): the static libraries of
# zstd, lz4, libjpeg and TurboJPEG, libpng and libwebp, expat, OpenBLAS with the compiler's
# libgfortran and libquadmath, every header those and the archives of lib/ include (the ones
# Debian ships beside them, found by the preprocessor: the machine's own headers of other versions
# are not used) and nlohmann-json's headers and CMake package.
# Usage: [SRC_TREE=DIR] tools/bench/package_device.sh BUILD_DIR OUT.tar.xz [TEST...]
set -euo pipefail
build=$(realpath "$1")
archive=$(realpath -m "$2")
mkdir -p "$(dirname "$archive")"
shift 2
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
pkg=$stage/pkg
mkdir -p "$pkg/bin" "$pkg/tests" "$pkg/lib" "$pkg/include/dlpack"
cp "$build/bin/ringfeed" "$build/bin/ringfeed-convert" "$pkg/bin/"
for b in ringfeed-bench-compute ringfeed-bench-h2d ringfeed-bench-naive ringfeed-bench-whole-shard \
         ringfeed-bench-jpeg ringfeed-bench-pack ringfeed-link-proxy; do
  [ -f "$build/bin/$b" ] && cp "$build/bin/$b" "$pkg/bin/"
done
[ -f "$build/bin/libringfeed_mpi.so" ] && cp "$build/bin/libringfeed_mpi.so" "$pkg/bin/"
for t in "$@"; do cp "$build/tests/$t" "$pkg/tests/"; done
# The libraries the extension links (those a build of this commit has).
for l in python/librf_dlpack_export pipeline/librf_loader pipeline/librf_cuda_pipeline \
         pipeline/librf_pipeline decode/librf_cuda_decode decode/librf_image decode/librf_jpeg \
         decode/librf_decode \
         cuda/librf_cuda \
         io/librf_io io/remote/librf_remote options/librf_options core/librf_core; do
  [ -f "$build/$l.a" ] && cp "$build/$l.a" "$pkg/lib/"
done
# expat: S3 listings (io/remote; its objects take no absolute relocations, so they link into the
# extension).
# libwebp: the WebP decode (decode/webp_image.h; position-independent too). libpng is loaded at
# run time (decode/png_library.h).
for l in liburing libxxhash libz libexpat libwebp; do
  cp "/usr/lib/x86_64-linux-gnu/$l.a" "$pkg/lib/"
done
cp /usr/include/dlpack/dlpack.h "$pkg/include/dlpack/"
cp -r /usr/include/Random123 "$pkg/include/"

# deps/: the static build's third-party libraries, as the configure step of this build found them
# (Debian's; OpenBLAS's archive through its alternatives link), and their headers.
deps=$pkg/deps
mkdir -p "$deps/lib" "$deps/include" "$deps/share/cmake"
for l in zstd lz4 jpeg turbojpeg png16 webp expat openblas; do
  cp -L "/usr/lib/x86_64-linux-gnu/lib$l.a" "$deps/lib/"
done
for l in libgfortran.a libquadmath.a; do cp "$(g++ -print-file-name=$l)" "$deps/lib/"; done
# The headers: what the preprocessor opens for the project's third-party includes, less what the C
# library, the kernel's headers and the compiler bring (packages every machine that builds has).
# Debian's multiarch and OpenBLAS directories are flattened into include/, as one -I finds them.
hdr=$stage/deps.cc
printf '#include <%s>\n' nlohmann/json.hpp cblas.h cstdio turbojpeg.h \
  jpeglib.h jerror.h png.h webp/decode.h webp/encode.h liburing.h lz4.h xxhash.h zlib.h zstd.h \
  curl/curl.h expat.h >"$hdr"
g++ -std=c++20 -I/usr/include/x86_64-linux-gnu/openblas-pthread -M "$hdr" | tr ' \\' '\n\n' |
  grep '^/usr/include/' | sort -u >"$stage/headers"
# shellcheck disable=SC2046
dpkg -S $(xargs realpath <"$stage/headers") 2>/dev/null |
  grep -Ev '^(libc6-dev|linux-libc-dev|libstdc\+\+-[0-9]+-dev|libgcc-[0-9]+-dev)[:,]' |
  sed 's/^.*: //' | sort -u >"$stage/carried"
while read -r h; do
  grep -qx "$(realpath "$h")" "$stage/carried" || continue
  rel=${h#/usr/include/}
  rel=${rel#x86_64-linux-gnu/}
  rel=${rel#openblas-pthread/}
  mkdir -p "$deps/include/$(dirname "$rel")"
  cp -L "$h" "$deps/include/$rel"
done <"$stage/headers"
cp -r /usr/share/cmake/nlohmann_json "$deps/share/cmake/"
src_tree=$(realpath "${SRC_TREE:-$(dirname "$0")/../..}")
git -C "$src_tree" describe --always --dirty --abbrev=10 >"$pkg/COMMIT" 2>/dev/null ||
  echo unknown >"$pkg/COMMIT"
(cd "$src_tree" &&
  { git ls-files -- '*.h' '*.cuh' python/src python/ringfeed CMakeLists.txt 'decode/*.cc' \
      2>/dev/null ||
  find . -path ./build\* -prune -o \( -name '*.h' -o -name '*.cuh' \) -print; } |
  tar -cf - -T -) | tar -C "$pkg" --one-top-level=src -xf -
tar -C "$stage" -cJf "$archive" pkg
ls -l "$archive"
