"""A model's own signature, read from its file as data, never by loading (running) the model:
input names, element types and shapes (with the batch axis, ``None`` where dynamic or
unknown), outputs, and the files the model needs beside it.

What each format tells is what its predictor checks at run time
(``pinbench.worker.predictors``): ONNX and Keras/SavedModel everything, ``torch.export``
names, element types and shapes, TorchScript only ``forward``'s argument names and the
output count. ONNX is read here (its protobuf); TensorFlow's formats in
``authoring.tensorflow_files`` (the SavedModel protobuf, a ``.keras`` file's config), PyTorch's
in ``authoring.torch_archives`` (the archives' members, PyTorch not imported). Libraries are
imported in the reader that needs them; a missing one is ``MissingExtra`` naming the pip extra.
"""

from __future__ import annotations

import importlib
import posixpath
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from pinbench.artifacts.onnx_proto import NotProtobuf, external_locations
from pinbench.authoring.errors import MissingExtra, MissingSidecar, NotAModel

Dim = int | None


@dataclass(frozen=True, slots=True)
class Tensor:
    """One input or output as the model describes it: ``None`` where it cannot tell."""

    name: str | int
    element_type: str | None = None
    shape: tuple[Dim, ...] | None = None
    quantization: tuple[float, int] | None = None
    """A quantized TensorFlow Lite tensor's (scale, zero point): declared as the file has it."""


@dataclass(frozen=True, slots=True)
class Signature:
    format: str
    inputs: list[Tensor]
    outputs: list[Tensor]
    needs: list[Path] = field(default_factory=list)
    """Files the model reads beside it (ONNX external data), in the order it names them."""
    notes: list[str] = field(default_factory=list)
    """What the model does not tell and the author should check."""


def require(module: str, extra: str, what: str) -> ModuleType:
    try:
        return importlib.import_module(module)
    except ImportError:
        raise MissingExtra(module=module, extra=extra, what=what) from None


# ---------------------------------------------------------------- ONNX


def read_onnx(path: Path) -> Signature:
    """Inputs (graph inputs that are not initializers) and outputs with their element types
    and shapes; the external-data files, each a relative path inside the model's folder that
    exists (resolved from that folder, as ONNX Runtime resolves it). A 0-byte file, a model
    without a graph, and a graph without inputs or outputs are not models (publish refuses
    them too: ``pinbench.registry.onnx_files``)."""
    onnx = require("onnx", "catalog", "an ONNX model")
    try:
        model = onnx.load(str(path), load_external_data=False)
    except Exception as exc:  # protobuf's DecodeError and onnx's own
        raise NotAModel(path=str(path), reason=f"not an ONNX model ({exc})") from None
    if not model.HasField("graph"):
        empty = "is empty (0 bytes)" if path.stat().st_size == 0 else "holds no graph"
        raise NotAModel(path=str(path), reason=f"{empty}: it is not a model; export it again")
    graph = model.graph
    initializers = {t.name for t in graph.initializer}
    initializers |= {s.values.name for s in graph.sparse_initializer}
    inputs = [_onnx_tensor(onnx, v) for v in graph.input if v.name not in initializers]
    outputs = [Tensor(name=v.name) for v in graph.output]
    missing = [side for side, got in (("inputs", inputs), ("outputs", outputs)) if not got]
    if missing:
        raise NotAModel(
            path=str(path),
            reason=f"its graph has no {' and no '.join(missing)}: a model takes at least one "
            "input (not an initializer) and gives at least one output",
        )
    return Signature("onnx", inputs, outputs, needs=_sidecars(path))


def _onnx_tensor(onnx: Any, value: Any) -> Tensor:
    kind = value.type.tensor_type
    element = None
    if kind.elem_type:
        try:
            element = str(onnx.helper.tensor_dtype_to_np_dtype(kind.elem_type).name)
        except (KeyError, TypeError, ValueError):
            element = str(onnx.TensorProto.DataType.Name(kind.elem_type)).lower()
    shape = None
    if kind.HasField("shape"):
        shape = tuple(d.dim_value if d.HasField("dim_value") else None for d in kind.shape.dim)
    return Tensor(name=value.name, element_type=element, shape=shape)


def _sidecars(path: Path) -> list[Path]:
    """The files the model keeps tensor data in, found by the reader publish and the run use
    (``pinbench.artifacts.onnx_proto``: every place ONNX can hold a tensor)."""
    try:
        locations = external_locations(path)
    except NotProtobuf as exc:
        raise NotAModel(path=str(path), reason=f"not an ONNX model ({exc})") from None
    found: dict[Path, None] = {}
    for tensor, location in locations:
        found.setdefault(_sidecar(path, tensor, location))
    return list(found)


def _sidecar(model: Path, tensor: str, location: str) -> Path:
    def refuse(problem: str) -> MissingSidecar:
        return MissingSidecar(model=str(model), tensor=tensor, location=location, problem=problem)

    if not location or location.startswith("/") or "\\" in location:
        raise refuse("is not a relative path (external data must sit beside the model)")
    if "*" in location or any(ord(c) < 0x20 or c == "\x7f" for c in location):
        raise refuse("is no file name (no '*' or control characters)")
    if posixpath.normpath(location) != location or ".." in location.split("/"):
        raise refuse("is not a normalised path inside the model's folder (no '..')")
    target = model.parent / location
    if target == model:
        raise refuse("is the model file itself (external data is another file beside the model)")
    if not target.is_file():
        raise refuse(f"does not exist beside the model (looked for {target})")
    return target
