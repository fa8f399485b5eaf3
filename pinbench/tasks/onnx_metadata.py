"""One entry of an ONNX model's metadata (``metadata_props``), read without running the model:
a model's class names or a CTC alphabet kept in its file."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path


class MetadataProblem(Exception):
    """The entry could not be read: ``source`` names it, ``reason`` says why (plain data: the
    caller raises its own error with them)."""

    def __init__(self, source: str, reason: str) -> None:
        super().__init__(source, reason)
        self.source = source
        self.reason = reason


def one_value(
    key: str, model_files: Mapping[str, Path], *, max_bytes: int, holds: str
) -> tuple[str, str]:
    """``(where, value)`` of the model file's one metadata entry ``key``, at most
    ``max_bytes``; ``holds``: what the entry is read for, said when it is given twice."""
    from pinbench.artifacts.onnx_proto import MetadataTooLarge, NotProtobuf, metadata_props
    from pinbench.registry.onnx_files import OnnxRefused, model_file

    source = f"ONNX metadata {key!r}"
    try:
        name = model_file(list(model_files))
        source += f" of {name}"
        found = metadata_props(model_files[name], wanted=key, max_bytes=max_bytes)
    except OnnxRefused as exc:
        raise MetadataProblem(source, exc.reason) from None
    except (NotProtobuf, MetadataTooLarge) as exc:
        raise MetadataProblem(source, str(exc)) from None
    values = [value for k, value in found if k == key]
    if len(values) != 1:
        keys = sorted({k for k, _ in found})
        reason = (
            f"the key is given {len(values)} times (which one {holds} is ambiguous)"
            if values
            else f"the model has no such key (its metadata keys: {', '.join(keys) or 'none'})"
        )
        raise MetadataProblem(source, reason)
    assert values[0] is not None
    return source, values[0]
