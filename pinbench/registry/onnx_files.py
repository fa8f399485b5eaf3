"""An ONNX model's file as publishing and the run both check it, with one function, so that
publish refuses what the run would refuse.

The model is exactly one file ending in ``.onnx``; its bytes are a well-formed ``ModelProto``
(``pinbench.artifacts.onnx_proto``) with a graph that takes at least one input and gives at
least one output (a 0-byte or empty-graph file is not a model). Every tensor that keeps its
data outside the file names a *location* that is a relative, normalised path, resolved from
the model file's folder (as ONNX Runtime resolves it) to another file the manifest lists; not
the model file itself, and never ONNX Runtime's in-memory marker ``*/_ORT_MEM_ADDR_/*`` (whose
offset ONNX Runtime reads as a memory address). Only the model's structure is read; nothing
in it is executed.
"""

from __future__ import annotations

import posixpath
from collections.abc import Collection
from pathlib import Path

from pinbench.artifacts.onnx_proto import NotProtobuf, read_onnx
from pinbench.errors import UserError
from pinbench.registry.manifest_parts import check_relative_path

SUFFIX = ".onnx"
SHOWN = 10
"""How many of the artifact's files an error lists (an artifact may have thousands)."""


class OnnxRefused(UserError):
    """An ONNX model file pinbench will not load: names the file (its artifact path) and why."""

    def __init__(self, *, path: str, reason: str) -> None:
        super().__init__(f"ONNX model {path!r}: {reason}")
        self.path = path
        self.reason = reason


class ExternalDataOutside(OnnxRefused):
    """A tensor of the model keeps its data somewhere that is not another file of its own
    artifact beside it."""

    def __init__(self, *, path: str, tensor: str, location: str, problem: str) -> None:
        super().__init__(
            path=path, reason=f"tensor {tensor!r} keeps its data in {location!r}, which {problem}"
        )
        self.tensor = tensor
        self.location = location
        self.problem = problem


def model_file(paths: Collection[str]) -> str:
    """The one artifact path ending in ``.onnx`` (what the predictor loads)."""
    found = sorted(p for p in paths if p.endswith(SUFFIX))
    if len(found) != 1:
        shown = found[:SHOWN] or sorted(paths)[:SHOWN]
        raise OnnxRefused(
            path=found[1] if len(found) > 1 else "(none)",
            reason=f"format onnx loads exactly one file ending in {SUFFIX}; the artifact has "
            f"{len(found)} ({', '.join(shown) or 'no files'}): list one model per artifact",
        )
    return found[0]


def check_onnx(name: str, path: Path, listed: Collection[str]) -> list[str]:
    """Check model ``name`` (its artifact path; its bytes at ``path``) among the artifact's
    ``listed`` paths; return the artifact paths of the files it keeps external data in, or
    raise ``OnnxRefused`` (``ExternalDataOutside`` for a location)."""
    try:
        facts = read_onnx(path)
    except NotProtobuf as exc:
        raise OnnxRefused(path=name, reason=f"not an ONNX model ({exc})") from None
    except OSError as exc:
        raise OnnxRefused(path=name, reason=f"cannot be read ({exc.strerror})") from None
    if not facts.graphs:
        empty = "is empty (0 bytes)" if path.stat().st_size == 0 else "holds no graph"
        raise OnnxRefused(path=name, reason=f"{empty}: it is not a model; export it again")
    sides = (("inputs", facts.inputs), ("outputs", facts.outputs))
    missing = [side for side, got in sides if not got]
    if missing:
        raise OnnxRefused(
            path=name,
            reason=f"its graph has no {' and no '.join(missing)}: a model takes at least one "
            "input (not an initializer) and gives at least one output",
        )
    listed = set(listed)
    sidecars: dict[str, None] = {}
    for tensor, location in facts.locations:
        problem = _problem(name, location, listed)
        if problem is not None:
            raise ExternalDataOutside(path=name, tensor=tensor, location=location, problem=problem)
        sidecars.setdefault(_target(name, location))
    return list(sidecars)


def _target(name: str, location: str) -> str:
    return posixpath.normpath(posixpath.join(posixpath.dirname(name), location))


def _problem(name: str, location: str, listed: set[str]) -> str | None:
    """What is wrong with ``location`` for model ``name``, or None."""
    if not location or location.startswith("/") or posixpath.isabs(location):
        return "is not a relative path (external data must sit beside the model)"
    if "*" in location:
        return (
            "is no file name ('*' is refused: ONNX Runtime reads the location "
            "'*/_ORT_MEM_ADDR_/*' as a memory address)"
        )
    if any(ord(c) < 0x20 or c == "\x7f" for c in location):
        return "is no file name (it holds a control character)"
    target = _target(name, location)
    try:
        check_relative_path(target)
    except ValueError:
        return "climbs out of the artifact"
    parts = location.split("/")
    if ".." in parts or "\\" in location or posixpath.normpath(location) != location:
        return "is not a normalised path inside the artifact"
    if target == name:
        return "is the model file itself (external data is another file beside the model)"
    if target not in listed:
        others = sorted(listed - {name})
        shown = ", ".join(others[:SHOWN])
        if len(others) > SHOWN:
            shown += f" and {len(others) - SHOWN} more"
        return (
            f"is not a file of the artifact (its other files: {shown or 'none'}): "
            f"list {target!r} under files"
        )
    return None
