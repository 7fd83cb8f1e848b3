#!/usr/bin/env python3
"""What this machine has of nvJPEG, as the images parts need to know it: the libnvjpeg files
found (CUDA's lib64, the NVIDIA wheels beside PyTorch, ldconfig's cache), which names load with
dlopen, the file to name in RINGFEED_NVJPEG where libnvjpeg.so.13 does not load by name, and
whether the built ringfeed.Loader has the image_decoder option. Prints one JSON line."""

import ctypes
import glob
import inspect
import json
import os
import site
import subprocess

found = set(glob.glob("/usr/local/cuda*/lib64/libnvjpeg.so*"))
for d in site.getsitepackages():
    found.update(glob.glob(d + "/nvidia/**/libnvjpeg.so*", recursive=True))
try:
    cache = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True).stdout
except OSError:
    cache = ""
found.update(w for w in cache.split() if "libnvjpeg.so" in w and w.startswith("/"))
loads = []
for name in ("libnvjpeg.so.13", "libnvjpeg.so.12", "libnvjpeg.so"):
    try:
        ctypes.CDLL(name)
        loads.append(name)
    except OSError:
        pass
path = ""
if "libnvjpeg.so.13" not in loads:
    path = next((f for f in sorted(found, key=len)
                 if os.path.basename(f).startswith("libnvjpeg.so.13")), "")
try:
    import ringfeed

    p = inspect.signature(ringfeed.Loader).parameters
    decoder = (repr(p["image_decoder"].default) + " by default" if "image_decoder" in p
               else "NOT in this build")
except ImportError as e:
    decoder = f"no ringfeed ({e})"
print(json.dumps({"files": sorted(found), "loads": loads, "path": path,
                  "image_decoder": decoder}))
