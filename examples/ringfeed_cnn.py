"""ringfeed's default CNN in PyTorch, and how a ringfeed.Loader batch becomes its input.

The model is the one `ringfeed train` trains (model/model.h): blocks of 3x3 convolution
(padding 1) + bias + ReLU + 2x2 max-pool (32, 64, 128 channels), then fully connected 256 ->
ReLU -> fully connected to the classes; He-uniform weights, zero biases. torch_train.py,
torch_ddp.py and the benchmarks' PyTorch peer (tools/bench/torch_peer.py) share this definition.

The input. On a GPU the loader decodes each batch on the GPU into bfloat16, normalized with the
dataset header's per-channel mean and std, channels last (NHWC); the model takes the NCHW view of
that memory, x.permute(0, 3, 1, 2), whose strides are channels_last's: no copy, and cuDNN's
channels-last bf16 kernels under autocast. On the CPU the loader gives float32 NCHW, normalized.

build_model needs torch only (the benchmarks' peer runs where ringfeed may not be importable);
the rest takes ringfeed's objects.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Dict, Sequence, Tuple

import torch
from torch import nn

if TYPE_CHECKING:
    import ringfeed

CONV = (32, 64, 128)
HIDDEN = 256


def build_model(channels: int, height: int, width: int, classes: int,
                conv: Sequence[int] = CONV, hidden: int = HIDDEN) -> nn.Sequential:
    """ringfeed's default model for C x H x W images of `classes` classes, initialized from
    torch's current RNG. ValueError where the images are too small for the pooling blocks."""
    layers, cin, h, w = [], channels, height, width
    for cout in conv:
        layers += [nn.Conv2d(cin, cout, 3, padding=1), nn.ReLU(inplace=True), nn.MaxPool2d(2, 2)]
        cin, h, w = cout, h // 2, w // 2
    if h < 1 or w < 1:
        raise ValueError(f"{height}x{width} samples are too small for {len(conv)} pooling blocks")
    layers += [nn.Flatten(), nn.Linear(cin * h * w, hidden), nn.ReLU(inplace=True),
               nn.Linear(hidden, classes)]
    model = nn.Sequential(*layers)
    for m in model.modules():
        if isinstance(m, (nn.Conv2d, nn.Linear)):
            nn.init.kaiming_uniform_(m.weight, nonlinearity="relu")  # +-sqrt(6 / fan_in)
            nn.init.zeros_(m.bias)
    return model


def dataset_info(path: str) -> ringfeed.DatasetInfo:
    """A dataset's header, read without a loader."""
    import ringfeed

    return ringfeed.dataset_info(path)


def image_shape(info: ringfeed.DatasetInfo) -> Tuple[int, int, int]:
    """(C, H, W) of an image dataset: a 3-dim sample shape is C,H,W, a 2-dim one H,W of one
    channel. ValueError for anything the CNN cannot train (token rows, ids, no labels)."""
    if info.dtype not in ("uint8", "float16", "bfloat16", "float32"):
        raise ValueError(f"{info.paths[0]}: {info.dtype} samples are ids, not images")
    if info.classes < 2:
        raise ValueError(f"{info.paths[0]}: {info.classes} classes; the CNN needs labels of 2 or "
                         f"more classes")
    if len(info.shape) == 3:
        return info.shape
    if len(info.shape) == 2:
        return (1,) + info.shape
    raise ValueError(f"{info.paths[0]}: samples of shape {info.shape} are not images "
                     f"(C,H,W or H,W)")


def loader_options(info: ringfeed.DatasetInfo, cuda: bool) -> Dict[str, object]:
    """What to ask the training loader for. layout NHWC needs a C,H,W sample shape (the loader
    refuses it for H,W); for one channel NCHW is the same bytes, so channels_last either way."""
    if cuda:
        layout = "NHWC" if len(info.shape) == 3 else "NCHW"
        return dict(device="cuda", dtype="bfloat16", layout=layout, normalize=True)
    return dict(device="cpu", dtype="float32", layout="NCHW", normalize=True)


def model_input(samples: ringfeed.Tensor, layout: str, chw: Tuple[int, int, int]) -> torch.Tensor:
    """The batch as the model's N,C,H,W input, without a copy: torch.from_dlpack views the
    loader's buffer (on the GPU, torch's current stream waits for the batch; the host does not)."""
    x = torch.from_dlpack(samples)
    if layout == "NHWC":
        return x.permute(0, 3, 1, 2)  # N,C,H,W sizes over N,H,W,C memory: channels_last strides
    return x.view(x.shape[0], *chw)  # H,W samples get their one channel


@torch.no_grad()
def evaluate(model: nn.Module, loader: ringfeed.Loader, chw: Tuple[int, int, int],
             cuda: bool) -> Tuple[int, int]:
    """(correct, count) over one epoch of `loader` (float32, NCHW, normalized as the training
    set: the test loader is opened with the training set's mean= and std=)."""
    model.eval()
    correct, count = None, 0
    for samples, labels in loader:
        x = model_input(samples, "NCHW", chw)
        y = torch.from_dlpack(labels)
        with torch.autocast(device_type=x.device.type, dtype=torch.bfloat16, enabled=cuda):
            right = (model(x).argmax(1) == y).sum()
        correct = right if correct is None else correct + right
        count += y.numel()
    model.train()
    return int(correct) if correct is not None else 0, count
