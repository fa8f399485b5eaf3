"""What ``pinbench show`` prints of a manifest besides its files: a model's inputs and outputs
(each step with its parameters, in order; an output's task section), a dataset's samples,
labels and task. Read from the manifest as stored (plain data), so a field added to the
schema later is printed too, by its name, never dropped.
"""

from __future__ import annotations

import json
from typing import Any

INDENT = "  "
_INPUT_HEAD = ("name", "type", "element_type", "shape", "steps")
_OUTPUT_HEAD = ("name", "type", "steps")
NONE_DECLARED = "none declared (the model's own, as it has them)"


def manifest_lines(manifest: dict[str, Any]) -> list[str]:
    """The lines ``show`` prints for ``manifest``'s kind (none for a kind with nothing more
    than its files to show)."""
    kind = manifest.get("kind")
    if kind == "model":
        return _model(manifest)
    if kind == "dataset":
        return _dataset(manifest)
    return []


def _model(manifest: dict[str, Any]) -> list[str]:
    lines = [f"format {manifest.get('format')}"]
    framework = manifest.get("framework") or {}
    lines.append(f"framework {framework.get('name')} {framework.get('range', '*')}")
    inputs = manifest.get("inputs") or []
    lines.append("inputs" if inputs else f"inputs: {NONE_DECLARED}")
    for spec in inputs:
        shape = spec.get("shape")
        head = [
            spec.get("name"),
            spec.get("type", "tensor"),
            spec.get("element_type", "float32"),
            f"shape {_value(shape)}" if shape else "shape as the model has it",
        ]
        lines.append(INDENT + "  ".join(str(h) for h in head))
        lines += _rest(spec, _INPUT_HEAD, 2)
        lines += _steps(spec.get("steps") or [], 2)
    outputs = manifest.get("outputs") or []
    lines.append("outputs" if outputs else f"outputs: {NONE_DECLARED}")
    for spec in outputs:
        lines.append(f"{INDENT}{spec.get('name')}  {spec.get('type', 'tensor')}")
        lines += _steps(spec.get("steps") or [], 2)
        lines += _rest(spec, _OUTPUT_HEAD, 2)
    return lines


def _dataset(manifest: dict[str, Any]) -> list[str]:
    lines = [f"task {manifest['task']}"] if manifest.get("task") else []
    data = manifest.get("data")
    samples = manifest.get("samples")
    count = f" ({samples} samples)" if samples is not None else ""
    if data is not None:
        lines.append(f"data {data.get('format', 'npy')} {data.get('path')}{count}")
    elif count:
        lines.append(f"data{count}")
    labels = dict(manifest.get("labels") or {})
    fmt = labels.pop("format", None)
    shown = _params(labels)
    lines.append(f"labels {fmt}" + (f"  {shown}" if shown else ""))
    index = manifest.get("file_index")
    if index:
        lines.append(f"file index {index.get('path')} (sha256 {index.get('sha256')})")
    return lines


def _steps(steps: list[Any], depth: int) -> list[str]:
    """One line per step, numbered in the order they run: its name and its parameters."""
    pad = INDENT * depth
    lines = []
    for i, step in enumerate(steps, 1):
        if isinstance(step, dict) and len(step) == 1:
            ((name, params),) = step.items()
            shown = _params(params) if isinstance(params, dict) else _value(params)
            lines.append(f"{pad}{i}. {name}" + (f"  {shown}" if shown else ""))
        else:
            lines.append(f"{pad}{i}. {_value(step)}")
    return lines


def _rest(spec: dict[str, Any], shown: tuple[str, ...], depth: int) -> list[str]:
    """The fields of an input or output not already on its line: sections (``labels``,
    ``detection``, ``segmentation``, ...) and any other, each on a line of its own."""
    pad = INDENT * depth
    lines = []
    for key, value in spec.items():
        if key in shown or value is None:
            continue
        text = _params(value) if isinstance(value, dict) else _value(value)
        lines.append(f"{pad}{key}  {text}")
    return lines


def _params(params: dict[str, Any]) -> str:
    """``key=value`` for each parameter that is set (a stored manifest holds unset ones as
    null)."""
    return " ".join(f"{k}={_value(v)}" for k, v in params.items() if v is not None)


def _value(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))
