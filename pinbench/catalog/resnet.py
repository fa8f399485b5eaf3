"""ResNet-50 at ImageNet scale with seeded random weights, for performance only: safetensors
weights (architecture ``resnet50``) and the same weights exported to ONNX, plus a synthetic
dataset of seeded random 224x224 RGB images without labels.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np

from pinbench.catalog.digits import OPSET, SEED
from pinbench.catalog.files import CLASSIFICATION, dump, entry, image_input

NAME = "vision/resnet50-random"
DATASET = "synthetic-imagenet-224"
VERSION = "1.0.0"
SAMPLES = 64
STEPS: list[dict[str, Any]] = [
    {"normalize": {"mean": [123.675, 116.28, 103.53], "std": [58.395, 57.12, 57.375]}},
    {"layout": {"to": "NCHW"}},
]


def model_name(framework: str) -> str:
    return f"{NAME}-{'onnx' if framework == 'onnxruntime' else 'torch'}"


def write(root: Path) -> list[Path]:
    import torch

    from pinbench.evaluator.predictors.torch.architectures import ResNet50

    folder = root / "resnet50"
    folder.mkdir(exist_ok=True)
    torch.manual_seed(SEED)
    model = ResNet50().eval()
    state = {k: v.contiguous() for k, v in model.state_dict().items()}
    from safetensors.torch import save_file

    save_file(state, str(folder / "resnet50.safetensors"), metadata={"architecture": "resnet50"})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            model,
            (torch.zeros(2, 3, 224, 224),),
            str(folder / "resnet50.onnx"),
            dynamo=False,
            input_names=["x"],
            output_names=["logits"],
            dynamic_axes={"x": {0: "N"}, "logits": {0: "N"}},
            opset_version=OPSET,
        )
    images = np.random.default_rng(SEED).integers(0, 256, (SAMPLES, 224, 224, 3), dtype=np.uint8)
    np.save(folder / "images.npy", images, allow_pickle=False)
    dataset = dump(
        root / "dataset-synthetic-imagenet-224.yaml",
        {
            "kind": "dataset",
            "name": DATASET,
            "version": VERSION,
            "description": f"{SAMPLES} seeded random 224x224 RGB images (seed {SEED}), no labels",
            "license": "CC0-1.0",
            "samples": SAMPLES,
            "data": {"format": "npy", "path": "images.npy"},
            "labels": {"format": "class-index-npy"},
            "files": [entry(root, folder / "images.npy")],
        },
    )
    manifests = [dataset]
    for framework, suffix, fmt, filename, supported in (
        ("onnxruntime", "onnx", "onnx", "resnet50.onnx", ">=1.17 <2"),
        ("torch", "torch", "safetensors", "resnet50.safetensors", ">=2.2 <3"),
    ):
        data: dict[str, Any] = {
            "kind": "model",
            "name": f"{NAME}-{suffix}",
            "version": VERSION,
            "description": f"ResNet-50 v1.5, seeded random weights (seed {SEED}), as {fmt}",
            "license": "BSD-3-Clause",
            "format": fmt,
            "framework": {"name": framework, "range": supported},
            "files": [entry(root, folder / filename)],
            "inputs": [image_input([3, 224, 224], STEPS)],
            "outputs": [CLASSIFICATION],
            "attributes": {"performance_only": True, "weights_seed": SEED},
        }
        if fmt == "safetensors":
            data["architecture"] = "resnet50"
        manifests.append(dump(root / f"model-resnet50-{suffix}.yaml", data))
    return manifests
