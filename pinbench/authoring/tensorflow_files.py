"""TensorFlow models' signatures read from their files, never by loading the model.

Loading runs code: ``tf.saved_model.load`` runs a SavedModel's initializers (an asset
initializer, a resource's ``_initialize``, a TF1 ``main_op``: any op, ``WriteFile`` or
``PyFunc`` included) and Keras builds every layer. Here a SavedModel's ``saved_model.pb`` is
parsed as the protocol buffer it is (``SavedModel`` -> ``MetaGraphDef`` -> ``SignatureDef``),
a ``.keras`` file's ``config.json`` and a Keras 2 HDF5 file's ``model_config`` attribute as
JSON (``pinbench.artifacts.keras``, ``keras_h5``), and a TensorFlow Lite file's FlatBuffer as
the tables it is (``pinbench.artifacts.tflite``); nothing in any of them is executed. Only the
run loads the model, in the confinement its runner gives.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pinbench.artifacts.keras import KerasConfigError, keras_signature, read_keras_signature
from pinbench.artifacts.keras_h5 import read_h5_config
from pinbench.artifacts.tflite import TfliteError, TfliteTensor, read_tflite_signature, refusal
from pinbench.authoring.errors import NotAModel
from pinbench.authoring.signatures import Signature, Tensor, require
from pinbench.quiet import quiet_native_stderr

SERVING = "serving_default"
SERVE_TAG = "serve"


def read_keras(path: Path) -> Signature:
    """A functional or Sequential Keras model's inputs (names, element types, shapes) and
    outputs (named after the layers that make them, as Keras' ``output_names``), from its
    config alone."""
    try:
        signature = read_keras_signature(path)
    except KerasConfigError as exc:
        raise NotAModel(
            path=str(path), reason=f"not a Keras model pinbench reads ({exc})"
        ) from None
    inputs = [Tensor(i.name, i.dtype, i.shape) for i in signature.inputs]
    return Signature("keras", inputs, [Tensor(name=name) for name in signature.outputs])


def read_keras_h5(path: Path) -> Signature:
    """A Keras 2 HDF5 model's signature, from its ``model_config`` attribute (h5py reads it;
    the model is not built): what ``read_keras`` reads from a ``.keras`` file's config."""
    require("h5py", "tensorflow", "a Keras HDF5 model")
    try:
        signature = keras_signature(read_h5_config(path))
    except KerasConfigError as exc:
        raise NotAModel(
            path=str(path), reason=f"not a Keras HDF5 model pinbench reads ({exc})"
        ) from None
    inputs = [Tensor(i.name, i.dtype, i.shape) for i in signature.inputs]
    return Signature("keras-h5", inputs, [Tensor(name=name) for name in signature.outputs])


def read_tflite(path: Path) -> Signature:
    """A TensorFlow Lite model's first subgraph: inputs and outputs by their tensors' names,
    element types and shapes; a quantized one as the float32 it is fed or read as, with the
    file's scale and zero point to declare (a per-channel one is refused, as the run refuses
    it: ``predictors.tensorflow.tflite``)."""
    try:
        signature = read_tflite_signature(path)
    except TfliteError as exc:
        raise NotAModel(path=str(path), reason=refusal(exc)) from None
    for side, tensors in (("input", signature.inputs), ("output", signature.outputs)):
        for t in tensors:
            _refuse_per_channel(path, side, t)
    doing = {
        "input": "the float32 values its steps make are quantized",
        "output": "its values are dequantized to float32",
    }
    notes = [
        f"{side} {t.name!r} is quantized ({t.dtype}): its `quantization` is written as the "
        f"file has it, with which {doing[side]}"
        for side, tensors in (("input", signature.inputs), ("output", signature.outputs))
        for t in tensors
        if t.quantization is not None
    ]
    if signature.variables:
        notes.append(
            f"the model holds {signature.variables} variables (a streaming model's state): "
            "each call starts from their initial values"
        )
    return Signature(
        "tflite",
        [_lite_tensor(t) for t in signature.inputs],
        [_lite_tensor(t) for t in signature.outputs],
        notes=notes,
    )


def _lite_tensor(t: TfliteTensor) -> Tensor:
    q = t.quantization
    if q is None:
        return Tensor(t.name, t.dtype, t.shape)
    return Tensor(t.name, "float32", t.shape, (q.scale, q.zero_point))


def _refuse_per_channel(path: Path, side: str, t: TfliteTensor) -> None:
    if t.per_channel:
        raise NotAModel(
            path=str(path),
            reason=f"its {side} {t.name!r} is quantized per channel ({t.dtype}): pinbench "
            "quantizes and dequantizes with one scale and zero point",
        )


def _saved_model_pb2() -> Any:
    """TensorFlow's ``SavedModel`` message class (importing TensorFlow, quietly)."""
    with quiet_native_stderr():
        require("tensorflow", "tensorflow", "a TensorFlow model")
        from tensorflow.core.protobuf import saved_model_pb2

    return saved_model_pb2


def read_savedmodel(folder: Path) -> Signature:
    """The ``serving_default`` signature of the meta graph tagged ``serve`` (the one
    ``tf.saved_model.load`` and TensorFlow Serving use): inputs by name with their element
    types and shapes, outputs by name, both sorted (as the TensorFlow predictor lists them)."""
    saved_model_pb2 = _saved_model_pb2()
    from google.protobuf.message import DecodeError

    pb = folder / "saved_model.pb"
    message = saved_model_pb2.SavedModel()
    try:
        message.ParseFromString(pb.read_bytes())
    except (DecodeError, RecursionError, ValueError) as exc:
        raise NotAModel(path=str(pb), reason=f"not a SavedModel protocol buffer ({exc})") from None
    except OSError as exc:
        raise NotAModel(path=str(pb), reason=f"cannot read: {exc.strerror}") from None
    graphs = list(message.meta_graphs)
    tagged = [g for g in graphs if SERVE_TAG in g.meta_info_def.tags]
    if len(tagged) > 1 or not (tagged or len(graphs) == 1):
        raise NotAModel(
            path=str(folder),
            reason=f"the SavedModel has {len(graphs)} meta graphs, {len(tagged)} tagged "
            f"{SERVE_TAG!r}: pinbench reads the one tagged {SERVE_TAG!r}",
        )
    graph = (tagged or graphs)[0]
    if SERVING not in graph.signature_def:
        raise NotAModel(
            path=str(folder),
            reason=f"the SavedModel has no {SERVING} signature (export it with "
            f"signatures={{'{SERVING}': ...}}); it has {sorted(graph.signature_def) or 'none'}",
        )
    signature = graph.signature_def[SERVING]
    inputs = [_tensor(folder, name, signature.inputs[name]) for name in sorted(signature.inputs)]
    outputs = [Tensor(name=name) for name in sorted(signature.outputs)]
    return Signature("savedmodel", inputs, outputs)


def _tensor(folder: Path, name: str, info: Any) -> Tensor:
    """One ``TensorInfo``: its element type by TensorFlow's name for it (``float32``), its
    shape with ``None`` for an unknown dimension (``-1``), or no shape for an unknown rank."""
    import tensorflow as tf

    try:
        element = tf.dtypes.as_dtype(info.dtype).name
    except TypeError:
        raise NotAModel(
            path=str(folder), reason=f"input {name!r} has element type {info.dtype}, unknown"
        ) from None
    shape = None
    if info.HasField("tensor_shape") and not info.tensor_shape.unknown_rank:
        shape = tuple(d.size if d.size >= 0 else None for d in info.tensor_shape.dim)
    return Tensor(name=name, element_type=element, shape=shape)
