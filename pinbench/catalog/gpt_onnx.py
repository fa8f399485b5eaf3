"""``text/tiny-gpt-onnx``: the catalog's tiny GPT-2 exported to ONNX in pinbench's
decoder-with-past layout (``worker.generation.ort_generator``): one token a step, the KV
cache in and out, so ONNX Runtime generates the same greedy tokens as transformers.

The export traces one decode step (a token after a cache of 3 positions) with PyTorch's
TorchScript-based exporter; every step has the same graph (one query position), so the trace
holds for a cache of any length, an empty one included.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from pinbench.catalog.gpt import NAME, VERSION

ONNX_NAME = f"{NAME}-onnx"
FILES = ("config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json")
OPSET = 17


def _step(model: Any, layers: int) -> Any:
    import torch
    from transformers import DynamicCache

    class Step(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, input_ids: Any, *past: Any) -> tuple[Any, ...]:
            cache = DynamicCache()
            for i in range(layers):
                cache.update(past[2 * i], past[2 * i + 1], i)
            position = torch.arange(1).unsqueeze(0) + past[0].shape[2]
            out = self.model(
                input_ids=input_ids, past_key_values=cache, position_ids=position, use_cache=True
            )
            flat: list[Any] = []
            for layer in out.past_key_values.layers:
                flat += [layer.keys, layer.values]
            return (out.logits[:, -1, :], *flat)

    return Step()


def export(root: Path, weights: Path) -> list[Path]:
    """``root/tiny-gpt-onnx/``: ``model.onnx`` and the folder's config and tokenizer files, with
    the model manifest."""
    import warnings

    import torch

    from pinbench.catalog.files import SUPPORTED, dump, entry
    from pinbench.worker.predictors.transformers.loading import import_transformers

    AutoModelForCausalLM = import_transformers().AutoModelForCausalLM  # quiet, offline

    folder = root / "tiny-gpt-onnx"
    folder.mkdir(parents=True, exist_ok=True)
    for name in FILES:
        shutil.copyfile(weights / name, folder / name)
    model = AutoModelForCausalLM.from_pretrained(
        weights, local_files_only=True, attn_implementation="eager"
    ).eval()
    config = json.loads((weights / "config.json").read_text())
    layers, heads = config["n_layer"], config["n_head"]
    size = config["n_embd"] // heads
    inputs = ["input_ids"] + [f"past_{k}_{i}" for i in range(layers) for k in ("key", "value")]
    outputs = ["logits"] + [f"present_{k}_{i}" for i in range(layers) for k in ("key", "value")]
    dynamic = {n: {2: "past"} for n in inputs[1:]} | {n: {2: "total"} for n in outputs[1:]}
    example = (torch.tensor([[0]]), *[torch.zeros(1, heads, 3, size) for _ in inputs[1:]])
    with warnings.catch_warnings(), torch.inference_mode():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            _step(model, layers),
            example,
            str(folder / "model.onnx"),
            input_names=inputs,
            output_names=outputs,
            dynamic_axes=dynamic,
            opset_version=OPSET,
            dynamo=False,
        )
    files = ["model.onnx", *FILES]
    manifest = dump(
        root / "model-tiny-gpt-onnx.yaml",
        {
            "kind": "model",
            "name": ONNX_NAME,
            "version": VERSION,
            "description": f"{NAME}'s weights exported to ONNX (opset {OPSET}), one decode "
            "step with the KV cache in and out, with the folder's tokenizer and config",
            "license": "Apache-2.0",
            "format": "onnx",
            "framework": {"name": "onnxruntime", "range": SUPPORTED["onnxruntime"]},
            "files": [entry(root, folder / name) for name in files],
            "outputs": [{"name": "logits", "type": "generation"}],
        },
    )
    return [manifest]
