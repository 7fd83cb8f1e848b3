"""ringfeed: batches of datasets far larger than memory, read from NVMe at the speed of the disk.

    import torch, ringfeed

    loader = ringfeed.Loader("train.rfd", batch_size=256, dtype="bfloat16")
    for epoch in range(epochs):
        for samples, labels in loader:           # one epoch, this rank's part of it
            x = torch.from_dlpack(samples)       # no copy: the loader's own buffer
            y = torch.from_dlpack(labels)        # int64
            ...
        torch.save({"loader": loader.state_dict(), ...}, "ckpt.pt")

A thin face over the C++ library's loader (pipeline/loader.h): see help(ringfeed.Loader) for the
options and the epoch protocol, help(ringfeed.Tensor) for a batch, and ringfeed.DataError /
ringfeed.UsageError for the errors. Datasets are made by `ringfeed-convert`, or from any Python
loop by ringfeed.DatasetWriter.
"""

from ._ringfeed import DataError, Tensor, UsageError, __version__, cuda_available
from .loader import BadRecordsSkipped, DatasetInfo, Loader, dataset_info
from .sequences import Sequences
from .writer import DatasetWriter

__all__ = ["BadRecordsSkipped", "DataError", "DatasetInfo", "DatasetWriter", "Loader", "Sequences", "Tensor", "UsageError",
           "cuda_available", "dataset_info"]
