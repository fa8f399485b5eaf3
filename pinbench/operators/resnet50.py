"""The distinct conv2d shapes of ResNet-50 at batch 1, for ``pinbench ops sweep``.

Where they come from: ResNet-50 v1.5 (He et al. 2015, "Deep Residual Learning", table 1,
with the stride on the 3x3 convolution as in torchvision and MLPerf), as built by
``pinbench.worker.predictors.torch.architectures.ResNet50`` at a 224x224 input. Each
stage's first bottleneck has a 1x1 projection shortcut ("ds"). Convolutions with equal
shapes are listed once with ``count`` (how many of the network's 53 convolutions have that
shape); ``tests/test_operators.py`` re-derives the table from the architecture.
"""

from __future__ import annotations

from typing import Final

from pinbench.specs.operators.spec import OperatorSpec

# (name, c, h=w, out_channels, kernel, stride, padding, count)
RESNET50_CONVS: Final[tuple[tuple[str, int, int, int, int, int, int, int], ...]] = (
    ("conv1", 3, 224, 64, 7, 2, 3, 1),
    ("layer1.0.conv1", 64, 56, 64, 1, 1, 0, 1),
    ("layer1.conv2", 64, 56, 64, 3, 1, 1, 3),
    ("layer1.conv3+ds", 64, 56, 256, 1, 1, 0, 4),
    ("layer1.conv1", 256, 56, 64, 1, 1, 0, 2),
    ("layer2.0.conv1", 256, 56, 128, 1, 1, 0, 1),
    ("layer2.0.conv2", 128, 56, 128, 3, 2, 1, 1),
    ("layer2.conv3", 128, 28, 512, 1, 1, 0, 4),
    ("layer2.0.ds", 256, 56, 512, 1, 2, 0, 1),
    ("layer2.conv1", 512, 28, 128, 1, 1, 0, 3),
    ("layer2.conv2", 128, 28, 128, 3, 1, 1, 3),
    ("layer3.0.conv1", 512, 28, 256, 1, 1, 0, 1),
    ("layer3.0.conv2", 256, 28, 256, 3, 2, 1, 1),
    ("layer3.conv3", 256, 14, 1024, 1, 1, 0, 6),
    ("layer3.0.ds", 512, 28, 1024, 1, 2, 0, 1),
    ("layer3.conv1", 1024, 14, 256, 1, 1, 0, 5),
    ("layer3.conv2", 256, 14, 256, 3, 1, 1, 5),
    ("layer4.0.conv1", 1024, 14, 512, 1, 1, 0, 1),
    ("layer4.0.conv2", 512, 14, 512, 3, 2, 1, 1),
    ("layer4.conv3", 512, 7, 2048, 1, 1, 0, 3),
    ("layer4.0.ds", 1024, 14, 2048, 1, 2, 0, 1),
    ("layer4.conv1", 2048, 7, 512, 1, 1, 0, 2),
    ("layer4.conv2", 512, 7, 512, 3, 1, 1, 2),
)


def resnet50_conv_specs(
    *,
    batch: int = 1,
    dtype: str = "float32",
    direction: str = "forward",
    layout: str = "NCHW",
    seed: int = 0,
) -> list[tuple[str, OperatorSpec, int]]:
    """``(name, spec, count)`` for each distinct convolution, in network order."""
    return [
        (
            name,
            OperatorSpec(
                op="conv2d",
                params={
                    "n": batch,
                    "c": c,
                    "h": size,
                    "w": size,
                    "out_channels": k,
                    "kernel_h": kernel,
                    "kernel_w": kernel,
                    "stride": stride,
                    "padding": padding,
                    "layout": layout,
                },
                dtype=dtype,
                direction=direction,
                seed=seed,
            ),
            count,
        )
        for name, c, size, k, kernel, stride, padding, count in RESNET50_CONVS
    ]
