"""TensorFlow Lite and Keras 2 HDF5 models checked at publish as their run checks them
(decision 280), read as data (``artifacts.tflite``, ``artifacts.keras_h5``), nothing run.

``tflite``: the artifact has one ``.tflite`` file, a FlatBuffer whose first subgraph has every
declared input and output (by name or index), and each quantized tensor among them declares
the file's scale and zero point (``quantization_of``, which the predictor calls too); a
declared quantization on a float tensor, a per-channel quantized tensor, or resource variables
no ``CALL_ONCE`` initialises are refused. ``keras-h5``: one ``.h5``/``.hdf5`` file whose
``model_config`` attribute gives a functional or Sequential model without a ``Lambda``, with
every declared output among its outputs. A model with ``postprocess`` code declares the code's
outputs, not the model's: they are not looked for in the file (every output of the model goes
to the code by its own name).
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from pathlib import Path

from pinbench.artifacts.tflite import TfliteError, TfliteTensor, read_tflite_signature, refusal
from pinbench.registry.manifest import ModelManifest
from pinbench.registry.manifest_parts import FileEntry
from pinbench.registry.ports import Input, Output, Quantization
from pinbench.registry.sourcing import FileProblem

TFLITE = (".tflite",)
H5 = (".h5", ".hdf5")


class QuantizationRefused(ValueError):
    """A quantized tensor and the manifest's ``quantization`` disagree (the message says how
    and what to declare; a plain ``ValueError`` of one string: it pickles)."""


def quantization_of(t: TfliteTensor, spec: Input | Output | None, side: str) -> Quantization | None:
    """The declared quantization ``t`` is fed or read through, checked against the file."""
    declared = spec.quantization if spec is not None else None
    if t.per_channel:
        raise QuantizationRefused(
            f"{side} {t.name!r} is quantized per channel: pinbench quantizes inputs and "
            "dequantizes outputs with one scale and zero point"
        )
    if t.quantization is None:
        if declared is not None:
            raise QuantizationRefused(
                f"{side} {t.name!r} declares a quantization, but the file's tensor is "
                f"{t.dtype}, not quantized: remove it"
            )
        return None
    file = Quantization(scale=t.quantization.scale, zero_point=t.quantization.zero_point)
    wanted = f"quantization: {{scale: {file.scale!r}, zero_point: {file.zero_point}}}"
    if declared is None:
        raise QuantizationRefused(
            f"{side} {t.name!r} is quantized ({t.dtype}, scale {file.scale!r}, zero point "
            f"{file.zero_point}): declare `{wanted}` on it to have pinbench apply them"
        )
    same = _float32(declared.scale) == _float32(file.scale)
    if not same or declared.zero_point != file.zero_point:
        raise QuantizationRefused(
            f"{side} {t.name!r}: the manifest declares scale {declared.scale!r}, zero point "
            f"{declared.zero_point}; the file has `{wanted}`"
        )
    return file


def _float32(x: float) -> float:
    """``x`` rounded to the float32 a .tflite file stores a scale as."""
    value: float = struct.unpack("<f", struct.pack("<f", x))[0]
    return value


def declared_for(
    specs: Sequence[Input | Output], t: TfliteTensor, index: int
) -> Input | Output | None:
    """The declared input or output bound to the file's tensor ``t`` (its name or index)."""
    return next((s for s in specs if s.name == t.name or s.name == index), None)


def check_lite_files(manifest: ModelManifest, where: Callable[[FileEntry], Path]) -> None:
    """Refuse a ``tflite`` or ``keras-h5`` manifest its run would refuse (module docstring)."""
    if manifest.format not in ("tflite", "keras-h5"):
        return
    suffixes = TFLITE if manifest.format == "tflite" else H5
    found = [f for f in manifest.files if f.path.endswith(suffixes)]
    if len(found) != 1:
        raise FileProblem(
            path=found[1].path if found else manifest.files[0].path,
            reason=f"format {manifest.format} loads exactly one file ending in "
            f"{' or '.join(suffixes)}; the manifest has {len(found)}",
        )
    entry = found[0]
    if manifest.format == "tflite":
        _check_tflite(manifest, entry.path, where(entry))
    else:
        _check_h5(manifest, entry.path, where(entry))


def _check_tflite(manifest: ModelManifest, name: str, path: Path) -> None:
    try:
        signature = read_tflite_signature(path)
    except TfliteError as exc:
        raise FileProblem(path=name, reason=refusal(exc)) from None
    sides: tuple[tuple[str, Sequence[Input | Output], list[TfliteTensor]], ...] = (
        ("input", manifest.inputs, signature.inputs),
        ("output", _model_outputs(manifest), signature.outputs),
    )
    for side, specs, tensors in sides:
        names = [t.name for t in tensors]
        for spec in specs:
            index = spec.name if isinstance(spec.name, int) else None
            if spec.name not in names and not (index is not None and 0 <= index < len(names)):
                raise FileProblem(
                    path=name, reason=f"the model has no {side} {spec.name!r}; it has {names}"
                )
        read_all = side == "input" or not specs
        for k, t in enumerate(tensors):
            bound = declared_for(specs, t, k)
            if bound is None and not read_all:
                continue  # an output left unread
            try:
                quantization_of(t, bound, side)
            except QuantizationRefused as exc:
                raise FileProblem(path=name, reason=str(exc)) from None
    if signature.resources and not signature.init_subgraphs:
        raise FileProblem(
            path=name,
            reason=f"it holds {signature.resources} resource variables that no CALL_ONCE "
            "initialises: pinbench cannot start each sample from their initial values",
        )


def _check_h5(manifest: ModelManifest, name: str, path: Path) -> None:
    """Read where h5py is installed (the ``tensorflow`` extra): a server without it publishes
    on the file's HDF5 signature alone (``artifacts.model_formats``), its run checks the rest."""
    from pinbench.artifacts.keras import KerasConfigError, keras_signature
    from pinbench.artifacts.keras_h5 import read_h5_config

    try:
        signature = keras_signature(read_h5_config(path))
    except KerasConfigError as exc:
        raise FileProblem(
            path=name, reason=f"not a Keras HDF5 model pinbench runs: {exc}"
        ) from None
    except ImportError:
        return
    outputs = signature.outputs
    for spec in _model_outputs(manifest):
        named = isinstance(spec.name, str) and spec.name in outputs
        if not named and not (isinstance(spec.name, int) and 0 <= spec.name < len(outputs)):
            raise FileProblem(
                path=name, reason=f"the model has no output {spec.name!r}; it has {outputs}"
            )


def _model_outputs(manifest: ModelManifest) -> Sequence[Output]:
    """The outputs a manifest declares of the model itself: none where ``postprocess`` code
    reads them (every output of the model, by its own name), whose outputs the manifest
    declares instead (docs/processing.md; issue 73, item 2)."""
    return () if manifest.postprocess is not None else manifest.outputs
