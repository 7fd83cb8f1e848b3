#!/usr/bin/env bash
# Puts into .carry/ (ignored by git) what tools/bench/run.py reads on a GPU machine that reaches
# nothing outside it, from this machine's Debian packages:
#   fmnist  Fashion-MNIST's four IDX .gz files (dataset-fashion-mnist): .carry/fmnist, 30 MB
#   photos  the photographs make_jpeg_set.py crops (its PHOTOS list, python3-skimage's sample
#           data): .carry/photos, about 4 MB
#   fio     fio and the shared libraries it needs but glibc's and the C++ runtime's:
#           .carry/fiopkg.tar.xz (run.py's read part unpacks it)
#   net     nginx, curl and libcurl.so.4 with the shared libraries they need but glibc's and the
#           C++ runtime's: .carry/netpkg.tar.xz, about 6 MB (the remote parts unpack it: the
#           server, the download it is measured against, and the library ringfeed loads)
#   tokens  real text as SentencePiece ids (tools/bench/make_token_corpus.py: linux-doc-6.1 and
#           python3-sentencepiece), stored as .carry/tokens/tokens.rfd (rows of 2048, zstd:9, by
#           CONVERT, default build/bin/ringfeed-convert); kept where it is already there
# then lists what is in .carry/ with its size: the device tool carries 64 MiB a call in all.
# Usage: tools/bench/carry.sh [fmnist] [photos] [fio] [net] [tokens]   (default: fmnist photos fio)
set -euo pipefail
cd "$(dirname "$0")/../.."
dest=.carry
mkdir -p "$dest"
what=("$@")
[ ${#what[@]} -gt 0 ] || what=(fmnist photos fio)

carry_fmnist() {
  local src=/usr/share/datasets/fashion-mnist f
  mkdir -p "$dest/fmnist"
  for f in train-images-idx3-ubyte.gz train-labels-idx1-ubyte.gz t10k-images-idx3-ubyte.gz \
           t10k-labels-idx1-ubyte.gz; do
    [ -f "$src/$f" ] || { echo "no $src/$f (apt-get install dataset-fashion-mnist)" >&2; return 1; }
    cp "$src/$f" "$dest/fmnist/"
  done
}

carry_photos() {
  local src=/usr/lib/python3/dist-packages/skimage/data f copied=0
  local -a list
  # The list itself, from the script (one place to change it).
  mapfile -t list < <(/usr/bin/python3 -c 'import ast, sys
tree = ast.parse(open(sys.argv[1]).read())
for n in tree.body:
    if isinstance(n, ast.Assign) and any(getattr(t, "id", "") == "PHOTOS" for t in n.targets):
        print("\n".join(ast.literal_eval(n.value)))' tools/bench/make_jpeg_set.py)
  mkdir -p "$dest/photos"
  for f in "${list[@]}"; do
    if [ -f "$src/$f" ]; then cp "$src/$f" "$dest/photos/" && copied=$((copied + 1))
    else echo "no $src/$f (apt-get install python3-skimage)" >&2; fi
  done
  [ "$copied" -gt 0 ]
}

# carry_tools NAME FILE...: FILEs (programs, libraries) and the shared libraries they need but
# glibc's and the C++ runtime's, as .carry/NAME.tar.xz holding NAME/ (FILEs) and NAME/lib/.
carry_tools() {
  local name=$1 tmp f
  shift
  tmp=$(mktemp -d)
  mkdir -p "$tmp/$name/lib"
  for f in "$@"; do
    [ -e "$f" ] || { echo "no $f" >&2; rm -rf "$tmp"; return 1; }
    cp -L "$f" "$tmp/$name/"
    ldd "$f" | awk '/=>/ {print $3}' |
      grep -vE '/(libc|libm|libstdc\+\+|libgcc_s|libresolv|libpthread|libdl|ld-linux[^/]*)\.so' |
      xargs -r -I{} cp -L {} "$tmp/$name/lib/"
  done
  tar -C "$tmp" -cJf "$dest/$name.tar.xz" "$name"
  rm -rf "$tmp"
}

carry_fio() {
  local bin
  bin=$(type -P fio) || { echo "fio is not installed (apt-get install fio)" >&2; return 1; }
  carry_tools fiopkg "$bin"
}

carry_net() {
  carry_tools netpkg /usr/sbin/nginx /usr/bin/curl /usr/lib/x86_64-linux-gnu/libcurl.so.4 ||
    { echo "(apt-get install nginx curl libcurl4)" >&2; return 1; }
}

carry_tokens() {
  local convert=${CONVERT:-build/bin/ringfeed-convert}
  [ -f "$dest/tokens/tokens.rfd" ] && return 0
  [ -f "$dest/tokens/tokens.u16" ] || /usr/bin/python3 tools/bench/make_token_corpus.py "$dest/tokens"
  local n
  n=$(($(stat -c %s "$dest/tokens/tokens.u16") / 4096 * 4096))  # whole rows of 2048 ids
  head -c "$n" "$dest/tokens/tokens.u16" >"$dest/tokens/rows.u16"
  "$convert" raw --records "$dest/tokens/rows.u16" --shape 2048 --dtype uint16 --label none \
    --compress zstd:9 -q -o "$dest/tokens/tokens.rfd"
  rm -f "$dest/tokens/rows.u16" "$dest/tokens/tokens.u16"
}

for w in "${what[@]}"; do
  case $w in
    fmnist | photos | fio | net | tokens) "carry_$w" ;;
    *) echo "carry.sh: no $w (fmnist photos fio net tokens)" >&2; exit 2 ;;
  esac
done
du -sh "$dest"/* | sed 's|^|carry: |'
echo "carry: $(du -sh "$dest" | cut -f1) in all (the device tool carries 64 MiB a call)"
