"""tensors="torch" (ringfeed.Loader): a batch's arrays handed out as torch tensors viewing the
loader's memory, imported by the binding (python/src/loaders.cc: one stream wait a batch, then
torch's import of each array's DLPack capsule), so a PyTorch loop's thread does not run
torch.from_dlpack's Python for each array. PyTorch is imported only when asked for."""

from __future__ import annotations

from typing import Any, Optional

from ._ringfeed import UsageError


def import_torch() -> Any:
    try:
        import torch
    except ImportError as e:
        raise UsageError(f"tensors: 'torch' needs PyTorch, which does not import here ({e})") \
            from None
    return torch


class TorchImport:
    """tensors="torch": torch's DLPack import of a capsule, and the current stream of the
    loader's GPU read each batch as torch's raw cudaStream_t (0: the legacy default stream),
    through torch's C entry points where it has them (its public functions otherwise)."""

    def __init__(self, torch: Any, gpu: int) -> None:
        self.import_capsule = getattr(torch._C, "_from_dlpack", None) or \
            torch.utils.dlpack.from_dlpack
        self._gpu = gpu
        raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
        if gpu < 0:
            self._raw = None
        elif raw is not None:
            self._raw = raw
        else:
            self._raw = lambda d: torch.cuda.current_stream(d).cuda_stream

    def stream(self) -> Optional[int]:
        return None if self._raw is None else self._raw(self._gpu)
