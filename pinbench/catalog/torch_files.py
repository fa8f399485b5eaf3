"""Writing PyTorch models the catalog's way: safetensors weights, and ONNX with the
TorchScript-based exporter (byte-identical output build after build; decision 21)."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

from pinbench.catalog.digits import OPSET


def save_safetensors(path: Path, state: dict[str, Any], architecture: str) -> None:
    from safetensors.torch import save_file

    save_file(state, str(path), metadata={"architecture": architecture})


def export_onnx(model: Any, example_shape: tuple[int, ...], path: Path) -> None:
    """``x -> logits`` with a dynamic batch axis; ``example_shape`` has a batch of 2 (PyTorch
    specialises a batch of 1)."""
    import torch

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            model,
            (torch.zeros(*example_shape),),
            str(path),
            dynamo=False,
            input_names=["x"],
            output_names=["logits"],
            dynamic_axes={"x": {0: "N"}, "logits": {0: "N"}},
            opset_version=OPSET,
        )


def load_safetensors(path: Path) -> dict[str, Any]:
    """The state dict ``save_safetensors`` wrote."""
    from safetensors.torch import load_file

    return dict(load_file(str(path)))
