"""One model in three frameworks: a small CNN trained on the digits train split in PyTorch
(fixed seed, one thread, deterministic algorithms, the kernels pinned by ``numerics``), its
weights written as safetensors, exported to ONNX, and copied into the equivalent Keras model.
The three artifacts name the same weights digest in their attributes, which is what
cross-framework parity groups by.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from pinbench.artifacts.digest import hash_file
from pinbench.artifacts.keras_archive import normalise_keras
from pinbench.catalog.digits import DIGITS_STEPS, SEED
from pinbench.catalog.files import model_manifest
from pinbench.catalog.torch_files import export_onnx, save_safetensors

NAME = "vision/digits-cnn"
VERSION = "1.0.0"
EPOCHS = 30
BATCH = 64
# (framework, model-name suffix, format, file name)
ARTIFACTS = [
    ("onnxruntime", "onnx", "onnx", "digits-cnn.onnx"),
    ("torch", "torch", "safetensors", "digits-cnn.safetensors"),
    ("tensorflow", "keras", "keras", "digits-cnn.keras"),
]


def model_name(framework: str) -> str:
    return next(f"{NAME}-{suffix}" for fw, suffix, *_ in ARTIFACTS if fw == framework)


def train(x: npt.NDArray[Any], y: npt.NDArray[Any]) -> dict[str, Any]:
    """The trained state dict (tensors) of ``digits-cnn`` on inputs ``x / 16`` as NCHW."""
    import torch

    from pinbench.worker.predictors.torch.architectures import digits_cnn

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    try:
        torch.manual_seed(SEED)
        model = digits_cnn()
        inputs = torch.from_numpy((x.astype(np.float32) / 16.0)[:, None, :, :])
        labels = torch.from_numpy(y)
        optimiser = torch.optim.Adam(model.parameters(), lr=3e-3)
        order = torch.Generator().manual_seed(SEED)
        for _ in range(EPOCHS):
            for idx in torch.randperm(len(inputs), generator=order).split(BATCH):  # type: ignore[no-untyped-call]
                optimiser.zero_grad()
                loss = torch.nn.functional.cross_entropy(model(inputs[idx]), labels[idx])
                loss.backward()  # type: ignore[no-untyped-call]
                optimiser.step()
        model.eval()
        return {k: v.detach().clone().contiguous() for k, v in model.state_dict().items()}
    finally:
        torch.use_deterministic_algorithms(False)
        torch.set_num_threads(threads)


def write_onnx(path: Path, state: dict[str, Any]) -> None:
    from pinbench.worker.predictors.torch.architectures import digits_cnn

    model = digits_cnn().eval()
    model.load_state_dict(state)
    export_onnx(model, (2, 1, 8, 8), path)


def write_keras(path: Path, state: dict[str, Any]) -> None:
    """The same weights in the Keras twin, saved as ``.keras`` with fixed zip timestamps."""
    from pinbench.worker.predictors.tensorflow.architectures import digits_cnn_keras

    model = digits_cnn_keras()
    w = {k: v.numpy() for k, v in state.items()}
    model.get_layer("conv1").set_weights([w["0.weight"].transpose(2, 3, 1, 0), w["0.bias"]])
    model.get_layer("conv2").set_weights([w["3.weight"].transpose(2, 3, 1, 0), w["3.bias"]])
    model.get_layer("logits").set_weights([w["7.weight"].T, w["7.bias"]])
    raw = path.with_suffix(".tmp.keras")
    model.save(raw)
    normalise_keras(raw, path)
    raw.unlink()


def save_weights(path: Path, state: dict[str, Any]) -> None:
    """The trained weights as safetensors (the train stage's output, and the torch artifact)."""
    save_safetensors(path, state, "digits-cnn")


def export(root: Path, state: dict[str, Any]) -> list[Path]:
    """Write the three model artifacts of ``state`` under ``root/digits-cnn/`` and their
    manifests."""
    folder = root / "digits-cnn"
    folder.mkdir(exist_ok=True)
    save_weights(folder / "digits-cnn.safetensors", state)
    write_onnx(folder / "digits-cnn.onnx", state)
    write_keras(folder / "digits-cnn.keras", state)
    weights = hash_file(folder / "digits-cnn.safetensors")[0].hex
    return [
        model_manifest(
            root,
            f"model-digits-cnn-{suffix}.yaml",
            name=f"{NAME}-{suffix}",
            version=VERSION,
            description=f"digits CNN (2 conv, 1 linear) trained in PyTorch, as {fmt}",
            fmt=fmt,
            framework=framework,
            file=folder / filename,
            input_shape=[1, 8, 8],
            steps=DIGITS_STEPS,
            attributes={
                "weights_sha256": weights,
                "training": f"sklearn digits train split, seed {SEED}, {EPOCHS} epochs, Adam",
            },
            architecture="digits-cnn" if fmt == "safetensors" else None,
        )
        for framework, suffix, fmt, filename in ARTIFACTS
    ]
