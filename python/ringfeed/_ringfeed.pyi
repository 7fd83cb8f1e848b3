# Type stubs of the extension ringfeed._ringfeed (python/src/module.cc).
from typing import Any, Dict, List, Optional, Sequence, Tuple

class DataError(ValueError):
    """A dataset's bytes are bad; the message names the file, the chunk and the byte offset."""

    path: Optional[str]
    chunk: Optional[int]
    offset: Optional[int]

class UsageError(ValueError):
    """Options that cannot be run."""

class Tensor:
    """One batch's samples or labels, in the loader's buffer (no copy)."""

    @property
    def shape(self) -> Tuple[int, ...]: ...
    @property
    def dtype(self) -> str: ...
    @property
    def device(self) -> str: ...
    @property
    def data_ptr(self) -> int: ...
    @property
    def nbytes(self) -> int: ...
    @property
    def epoch(self) -> int: ...
    @property
    def position(self) -> int: ...
    @property
    def indices(self) -> List[int]: ...
    def __dlpack__(
        self,
        *,
        stream: Optional[int] = None,
        max_version: Optional[Tuple[int, int]] = None,
        dl_device: Optional[Tuple[int, int]] = None,
        copy: Optional[bool] = None,
    ) -> Any: ...
    def __dlpack_device__(self) -> Tuple[int, int]: ...
    def numpy(self) -> Any: ...

class SampleLayout:
    NCHW: "SampleLayout"
    NHWC: "SampleLayout"

class _Dataset:
    def __init__(self, path: str) -> None: ...
    samples: int
    shape: List[int]
    dtype: str
    is_image: bool
    label_dtype: str
    classes: int
    channels: int
    mean: List[float]
    std: List[float]
    id: int
    chunks: int
    total_bytes: int
    shard_paths: List[str]

class _Loader:
    def __init__(
        self,
        dataset: _Dataset,
        *,
        batch_size: int,
        device: str,
        gpu: int,
        dtype: str,
        layout: SampleLayout,
        normalize: bool,
        mean: Sequence[float],
        std: Sequence[float],
        augment: str,
        shuffle: str,
        shuffle_window: int,
        seed: int,
        drop_last: bool,
        rank: int,
        world_size: int,
        mode: str,
        io: str,
        queue_depth: int,
        read_size: str,
        ring_slots: int,
        copy_streams: int,
        verify: bool,
        output_buffers: int,
        managed_prefetch: int,
        managed_advise: bool,
        managed_oversubscribe: bool,
    ) -> None: ...
    def start_epoch(self, epoch: int, position: int) -> None: ...
    def next(self) -> Optional[Tuple[Tensor, Tensor]]: ...
    def close(self) -> None: ...
    def epoch_samples(self) -> int: ...
    def batches_per_epoch(self) -> int: ...
    def gpu_device(self) -> int: ...
    def sample_shape(self) -> List[int]: ...
    def describe(self) -> str: ...
    def stats(self) -> Dict[str, Any]: ...

def cuda_available() -> bool: ...
def dtype_name(name: str) -> Optional[str]: ...
def shard_base(path: str) -> str: ...
def shard_path(base: str, index: int, count: int) -> str: ...
