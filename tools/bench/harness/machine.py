"""The machine banner, printed once a run and kept in summary.json: GPUs, cores, memory, kernel, the
disk under the work folder, Python, PyTorch, the compilers, the date."""

import os
import platform
import shutil
import subprocess
import sys
import time


def sh(cmd, timeout=60):
    try:
        p = subprocess.run(cmd, shell=True, capture_output=True, text=True, timeout=timeout)
        return p.stdout.strip() if p.returncode == 0 else ""
    except (OSError, subprocess.TimeoutExpired):
        return ""


def gpus():
    """[(name, memory, driver)] from nvidia-smi; [] without one."""
    if not shutil.which("nvidia-smi"):
        return []
    rows = sh("nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader")
    return [tuple(x.strip() for x in r.split(",")) for r in rows.splitlines() if r.strip()]


def torch_version(env):
    """PyTorch's and torchvision's versions as the measuring programs see them ('' without)."""
    try:
        p = subprocess.run([sys.executable, "-c", "import torch\ntry:\n import torchvision as tv\n"
                            " v = ', torchvision ' + tv.__version__\nexcept ImportError:\n v = ''\n"
                            "print(torch.__version__ + v, torch.cuda.is_available())"],
                           capture_output=True, text=True, env=env, timeout=120)
    except (OSError, subprocess.TimeoutExpired):
        return "", False
    if p.returncode != 0:
        return "", False
    version, _, cuda = p.stdout.strip().rpartition(" ")
    return version, cuda == "True"


def banner(work, found_gpus, torch):
    mem = sh("awk '/MemTotal/ { printf \"%.0f GiB\", $2 / 1048576 }' /proc/meminfo")
    disk = sh(f"df -h --output=avail,fstype {work} | tail -1")
    gpu = found_gpus[0] if found_gpus else None
    return {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "gpu": f"{gpu[0]} ({gpu[1]}) x{len(found_gpus)}, driver {gpu[2]}" if gpu else "no GPU",
        "cores": os.cpu_count(), "memory": mem, "kernel": platform.release(),
        "work": f"{work}: {' '.join(disk.split()) or '?'} free",
        "python": f"{sys.executable} {platform.python_version()}",
        "torch": torch or "no torch",
        "compilers": ", ".join(filter(None, (sh("g++ --version | head -1"),
                                             sh("nvcc --version | tail -2 | head -1"),
                                             sh("cmake --version | head -1")))),
    }


def banner_lines(b):
    return [f"machine: {b['gpu']}, {b['cores']} cores, {b['memory']}, kernel {b['kernel']}",
            f"date: {b['date']}; {b['work']}",
            f"python: {b['python']}; torch: {b['torch']}", f"compilers: {b['compilers']}"]
