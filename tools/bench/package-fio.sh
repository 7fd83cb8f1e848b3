#!/usr/bin/env bash
# Packs Debian's fio and the shared libraries it needs (all but glibc's and the C++ runtime)
# into one tarball, so the benchmarks can run fio on a GPU machine that has no fio and no
# package registry. Usage: tools/bench/package-fio.sh OUT.tar.xz
# On the other machine: tar xJf OUT.tar.xz && LD_LIBRARY_PATH=fiopkg/lib fiopkg/fio ...
set -euo pipefail
out=$(realpath -m "$1")
command -v fio >/dev/null || { echo "package-fio: fio is not installed (apt-get install fio)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/fiopkg/lib"
cp "$(command -v fio)" "$tmp/fiopkg/"
ldd "$(command -v fio)" | awk '/=>/ {print $3}' |
  grep -vE '/(libc|libm|libstdc\+\+|libgcc_s|libresolv|libpthread|libdl|ld-linux[^/]*)\.so' |
  xargs -I{} cp -L {} "$tmp/fiopkg/lib/"
tar -C "$tmp" -cJf "$out" fiopkg
echo "package-fio: wrote $out ($(du -h "$out" | cut -f1))"
