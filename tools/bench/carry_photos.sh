#!/usr/bin/env bash
# Copies the photographs tools/bench/make_jpeg_set.py makes its JPEG set from (its PHOTOS list,
# scikit-image's sample data from Debian's python3-skimage, or DIR) into DEST (default
# .carry/photos, ignored by git), for GPU machines without scikit-image:
# tools/bench/device_images_check.sh runs make_jpeg_set.py --data .carry/photos there. About 4 MB.
# Usage: tools/bench/carry_photos.sh [DIR [DEST]]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=${1:-/usr/lib/python3/dist-packages/skimage/data}
dest=${2:-.carry/photos}
# The list itself, from the script (one place to change it).
mapfile -t photos < <(/usr/bin/python3 - "$here/make_jpeg_set.py" <<'PY'
import ast, sys
tree = ast.parse(open(sys.argv[1]).read())
for node in tree.body:
    if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "PHOTOS" for t in node.targets):
        print("\n".join(ast.literal_eval(node.value)))
PY
)
[ "${#photos[@]}" -gt 0 ] || { echo "no PHOTOS list in $here/make_jpeg_set.py" >&2; exit 1; }
mkdir -p "$dest"
missing=0
for f in "${photos[@]}"; do
  if [ -f "$src/$f" ]; then
    cp "$src/$f" "$dest/"
  else
    echo "no $src/$f (apt-get install python3-skimage)" >&2
    missing=$((missing + 1))
  fi
done
[ "$missing" = "${#photos[@]}" ] && exit 1
echo "${#photos[@]} photographs listed, $((${#photos[@]} - missing)) copied to $dest ($(du -sh "$dest" | cut -f1))"
