"""A model's own signature, read from its file with the format's library: input names,
element types and shapes (with the batch axis, ``None`` where dynamic or unknown), outputs,
and the files the model needs beside it.

What each format tells is what its predictor checks at run time
(``pinbench.evaluator.predictors``): ONNX and Keras/SavedModel everything, ``torch.export``
names, element types and shapes, TorchScript only ``forward``'s argument names and the
output count. Libraries are imported here, in the reader that needs them; a missing one is
``MissingExtra`` naming the pip extra.
"""

from __future__ import annotations

import importlib
import posixpath
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from pinbench.authoring.errors import MissingExtra, MissingSidecar, NotAModel
from pinbench.quiet import quiet_native_stderr

Dim = int | None


@dataclass(frozen=True, slots=True)
class Tensor:
    """One input or output as the model describes it: ``None`` where it cannot tell."""

    name: str | int
    element_type: str | None = None
    shape: tuple[Dim, ...] | None = None


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
    exists (resolved from that folder, as ONNX Runtime does)."""
    onnx = require("onnx", "catalog", "an ONNX model")
    try:
        model = onnx.load(str(path), load_external_data=False)
    except Exception as exc:  # protobuf's DecodeError and onnx's own
        raise NotAModel(path=str(path), reason=f"not an ONNX model ({exc})") from None
    graph = model.graph
    initializers = {t.name for t in graph.initializer}
    inputs = [_onnx_tensor(onnx, v) for v in graph.input if v.name not in initializers]
    outputs = [Tensor(name=v.name) for v in graph.output]
    return Signature("onnx", inputs, outputs, needs=_sidecars(onnx, model, path))


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


def _tensors(onnx: Any, graph: Any) -> Iterator[Any]:
    """Every tensor that can hold data: initializers, sparse ones, node attributes and the
    graphs nested in them (If/Loop bodies)."""
    yield from graph.initializer
    for sparse in graph.sparse_initializer:
        yield sparse.values
        yield sparse.indices
    for node in graph.node:
        yield from _node_tensors(onnx, node)


def _node_tensors(onnx: Any, node: Any) -> Iterator[Any]:
    for attr in node.attribute:
        if attr.HasField("t"):
            yield attr.t
        yield from attr.tensors
        if attr.HasField("g"):
            yield from _tensors(onnx, attr.g)
        for sub in attr.graphs:
            yield from _tensors(onnx, sub)


def _sidecars(onnx: Any, model: Any, path: Path) -> list[Path]:
    external = onnx.TensorProto.EXTERNAL
    tensors = list(_tensors(onnx, model.graph))
    for function in model.functions:
        for node in function.node:
            tensors.extend(_node_tensors(onnx, node))
    found: dict[Path, None] = {}
    for tensor in tensors:
        if tensor.data_location != external:
            continue
        entries = {e.key: e.value for e in tensor.external_data}
        location = entries.get("location", "")
        found.setdefault(_sidecar(path, tensor.name, location))
    return list(found)


def _sidecar(model: Path, tensor: str, location: str) -> Path:
    def refuse(problem: str) -> MissingSidecar:
        return MissingSidecar(model=str(model), tensor=tensor, location=location, problem=problem)

    if not location or location.startswith("/") or "\\" in location:
        raise refuse("is not a relative path (external data must sit beside the model)")
    if posixpath.normpath(location) != location or ".." in location.split("/"):
        raise refuse("is not a normalised path inside the model's folder (no '..')")
    target = model.parent / location
    if not target.is_file():
        raise refuse(f"does not exist beside the model (looked for {target})")
    return target


# ---------------------------------------------------------------- PyTorch


def _torch() -> Any:
    return require("torch", "torch", "a PyTorch model")


def read_torchscript(path: Path) -> Signature:
    """``forward``'s arguments without a default (names only: TorchScript records neither
    element types nor shapes) and the number of values it returns."""
    torch = _torch()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            script = torch.jit.load(str(path), map_location="cpu")
    except Exception as exc:  # torch raises many types for a bad archive
        reason = f"{type(exc).__name__}: {exc}".splitlines()[0]
        raise NotAModel(path=str(path), reason=f"not a TorchScript archive ({reason})") from None
    schema = script.forward.schema
    inputs = [Tensor(name=a.name) for a in schema.arguments[1:] if not a.has_default_value()]
    returned = schema.returns[0].type if schema.returns else None
    count = len(returned.elements()) if isinstance(returned, torch._C.TupleType) else 1
    return Signature(
        "torchscript",
        inputs,
        [Tensor(name=i) for i in range(count)],
        notes=["PyTorch outputs have no names: they are declared by index, in order"],
    )


def read_torch_export(path: Path) -> Signature:
    """The graph signature's user inputs (names, element types, shapes from the fake tensors,
    symbolic dims dynamic) and outputs, loaded the way the torch predictor loads it: tensors
    only, never unpickling."""
    _torch()
    from pinbench.evaluator.predictors.base import ModelLoadError
    from pinbench.evaluator.predictors.torch.predictor import (
        _export_inputs,
        _export_outputs,
        _no_unpickling,
    )

    try:
        with _no_unpickling(str(path)):
            import torch

            program = torch.export.load(str(path))
    except ModelLoadError as exc:
        raise NotAModel(path=str(path), reason=exc.reason) from None
    except Exception as exc:  # torch raises many types for a bad archive
        reason = f"{type(exc).__name__}: {exc}".splitlines()[0]
        raise NotAModel(path=str(path), reason=f"not a torch.export archive ({reason})") from None
    inputs = [Tensor(p.name, p.dtype, p.shape) for p in _export_inputs(program)]
    user = list(program.graph_signature.user_outputs)
    outputs = [Tensor(name=str(n)) for n in user[: _export_outputs(program)]]
    return Signature("torch-export", inputs, outputs)


# ---------------------------------------------------------------- TensorFlow


def _tf_tensor(tf: Any, name: Any, dtype: Any, shape: Any) -> Tensor:
    dims = None
    if shape is not None and getattr(shape, "rank", 0) is not None:
        dims = tuple(d if isinstance(d, int) else None for d in list(shape))
    return Tensor(name=str(name), element_type=tf.as_dtype(dtype).name, shape=dims)


def _tensorflow() -> Any:
    """TensorFlow, imported with what its native code writes to stderr silenced."""
    with quiet_native_stderr():
        return require("tensorflow", "tensorflow", "a TensorFlow model")


def read_keras(path: Path) -> Signature:
    """A Keras model's ``inputs`` and ``output_names`` (loaded in safe mode: no lambdas)."""
    tf = _tensorflow()
    import keras

    try:
        with quiet_native_stderr():
            loaded = keras.saving.load_model(str(path), compile=False, safe_mode=True)
        outs = list(zip(loaded.output_names, loaded.outputs, strict=True))
    except Exception as exc:  # Keras raises many types for a bad file
        reason = f"{type(exc).__name__}: {exc}".splitlines()[0]
        raise NotAModel(path=str(path), reason=f"not a Keras model ({reason})") from None
    inputs = [_tf_tensor(tf, t.name, t.dtype, t.shape) for t in loaded.inputs]
    outputs = [Tensor(name=str(n)) for n, _ in outs]
    return Signature("keras", inputs, outputs)


def read_savedmodel(folder: Path) -> Signature:
    """The ``serving_default`` signature: inputs and outputs by name (outputs sorted, as the
    TensorFlow predictor lists them)."""
    tf = _tensorflow()
    try:
        with quiet_native_stderr():
            loaded = tf.saved_model.load(str(folder))
    except Exception as exc:  # TF raises many types for a bad folder
        reason = f"{type(exc).__name__}: {exc}".splitlines()[0]
        raise NotAModel(path=str(folder), reason=f"not a SavedModel ({reason})") from None
    signature = loaded.signatures.get("serving_default")
    if signature is None:
        raise NotAModel(
            path=str(folder),
            reason="the SavedModel has no serving_default signature (export it with "
            "signatures={'serving_default': ...})",
        )
    specs = signature.structured_input_signature[1]
    inputs = [_tf_tensor(tf, n, t.dtype, t.shape) for n, t in specs.items()]
    outputs = [Tensor(name=str(n)) for n in sorted(signature.structured_outputs)]
    return Signature("savedmodel", inputs, outputs)
