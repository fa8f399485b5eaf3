"""ResNet-50 at ImageNet scale with seeded random weights, for performance only: safetensors
weights (architecture ``resnet50``) and the same weights exported to ONNX, plus a synthetic
dataset of seeded random 224x224 RGB images without labels.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from pinbench.catalog.digits import SEED
from pinbench.catalog.files import dump, entry, model_manifest
from pinbench.catalog.torch_files import export_onnx, save_safetensors

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


def init_weights() -> dict[str, Any]:
    """The seeded random state dict (its "training")."""
    import torch

    from pinbench.worker.predictors.torch.architectures import ResNet50

    torch.manual_seed(SEED)
    return {k: v.contiguous() for k, v in ResNet50().eval().state_dict().items()}


def save_weights(path: Path, state: dict[str, Any]) -> None:
    save_safetensors(path, state, "resnet50")


def write_dataset(root: Path) -> Path:
    """The synthetic images under ``root/resnet50/`` and their dataset manifest."""
    folder = root / "resnet50"
    folder.mkdir(exist_ok=True)
    images = np.random.default_rng(SEED).integers(0, 256, (SAMPLES, 224, 224, 3), dtype=np.uint8)
    np.save(folder / "images.npy", images, allow_pickle=False)
    return dump(
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


def export(root: Path, state: dict[str, Any]) -> list[Path]:
    """``state`` as safetensors and ONNX under ``root/resnet50/`` with their manifests."""
    from pinbench.worker.predictors.torch.architectures import ResNet50

    folder = root / "resnet50"
    folder.mkdir(exist_ok=True)
    model = ResNet50().eval()
    model.load_state_dict(state)
    save_weights(folder / "resnet50.safetensors", state)
    export_onnx(model, (2, 3, 224, 224), folder / "resnet50.onnx")
    return [
        model_manifest(
            root,
            f"model-resnet50-{suffix}.yaml",
            name=f"{NAME}-{suffix}",
            version=VERSION,
            description=f"ResNet-50 v1.5, seeded random weights (seed {SEED}), as {fmt}",
            fmt=fmt,
            framework=framework,
            file=folder / filename,
            input_shape=[3, 224, 224],
            steps=STEPS,
            attributes={"performance_only": True, "weights_seed": SEED},
            architecture="resnet50" if fmt == "safetensors" else None,
        )
        for framework, suffix, fmt, filename in (
            ("onnxruntime", "onnx", "onnx", "resnet50.onnx"),
            ("torch", "torch", "safetensors", "resnet50.safetensors"),
        )
    ]
