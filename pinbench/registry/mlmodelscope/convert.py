"""One MLModelScope manifest, converted: identity, framework, files, inputs, output, attributes.

The parts are checked in that order and the first that cannot be imported is refused.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any, Final

import yaml

from pinbench.registry.manifest import ModelManifest, parse_manifest
from pinbench.registry.manifest_parts import Scalar
from pinbench.registry.mlmodelscope.containers import FACT, containers
from pinbench.registry.mlmodelscope.files import IMPORTED_FORMATS, Files, model_files
from pinbench.registry.mlmodelscope.reader import MLModelScopeError, Note, Reader, kind_of
from pinbench.registry.mlmodelscope.signature import inputs, outputs
from pinbench.registry.mlmodelscope.versions import npm_range, semver_text
from pinbench.registry.names import check_name
from pinbench.registry.yamlsafe import YamlRefused, load_yaml, read_yaml_file

NAMESPACE: Final = "mlmodelscope"
FRAMEWORKS: Final = {
    "tensorflow": "tensorflow",
    "pytorch": "torch",
    "torch": "torch",
    "caffe": "caffe",
    "caffe2": "caffe2",
    "mxnet": "mxnet",
    "tensorrt": "tensorrt",
    "onnxruntime": "onnxruntime",
}
"""MLModelScope's framework name, lowercased → pinbench's."""
TOP_LEVEL: Final = frozenset(
    {"name", "framework", "version", "container", "description", "references", "license"}
    | {"inputs", "output", "model", "attributes", "hidden"}
)


@dataclass(frozen=True, slots=True)
class Imported:
    data: dict[str, Any]
    """The pinbench manifest as plain data (what is written)."""
    manifest: ModelManifest
    notes: tuple[Note, ...]

    def yaml(self, source: str) -> str:
        header = f"# imported by `pinbench import-mlmodelscope` from {source}\n"
        body = yaml.dump(self.data, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100)
        return header + body


class _Dumper(yaml.SafeDumper):
    """Block style, but lists of numbers on one line (``size: [224, 224]``)."""

    def represent_flat_numbers(self, data: list[Any]) -> yaml.SequenceNode:
        numbers = all(isinstance(x, int | float) for x in data)
        return self.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=numbers)


_Dumper.add_representer(list, _Dumper.represent_flat_numbers)


def import_file(path: Path) -> Imported:
    try:
        text = read_yaml_file(path)
    except (OSError, UnicodeDecodeError) as exc:
        raise MLModelScopeError(source=str(path), field="", reason=f"cannot read: {exc}") from None
    except YamlRefused as exc:
        raise MLModelScopeError(source=str(path), field="", reason=exc.reason) from None
    return import_text(text, source=str(path))


def import_text(text: str, *, source: str = "<mlmodelscope>") -> Imported:
    """Convert one MLModelScope model manifest; ``MLModelScopeError`` if it cannot be."""
    try:
        typed = load_yaml(text)
        raw = load_yaml(text, scalars_as_text=True)
    except YamlRefused as exc:
        raise MLModelScopeError(source=source, field="", reason=exc.reason) from None
    if not isinstance(typed, dict) or not isinstance(raw, dict):
        raise MLModelScopeError(source=source, field="", reason="expected a mapping at the top")
    reader = Reader(typed, raw, source)
    data = _convert(reader)
    manifest = parse_manifest(data, source=f"{source} (as imported)")
    assert isinstance(manifest, ModelManifest)
    return Imported(data=data, manifest=manifest, notes=tuple(reader.notes))


@dataclass(frozen=True, slots=True)
class _Framework:
    name: str
    """pinbench's: ``torch``."""
    mlmodelscope: str
    """MLModelScope's, lowercased: ``pytorch``."""
    range: str


def _convert(reader: Reader) -> dict[str, Any]:
    reader.check_keys(reader.typed, TOP_LEVEL, "")
    name = reader.required_text("name", "name", why="the model's name")
    version = _version(reader)
    framework = _framework(reader)
    files = Files(reader)
    model_format = model_files(reader, framework.name, files)
    _note_running(reader, framework, model_format)
    model_inputs = inputs(reader)
    model_outputs = outputs(reader, files, framework.name)
    data: dict[str, Any] = {
        "kind": "model",
        "name": _name(reader, framework, name),
        "version": version,
    }
    data |= _descriptive(reader)
    data["framework"] = {"name": framework.name, "range": framework.range}
    data["format"] = model_format
    data["files"] = files.entries
    if model_inputs:
        data["inputs"] = model_inputs
    if model_outputs:
        data["outputs"] = model_outputs
    data["attributes"] = _attributes(reader) | _facts(reader) | containers(reader)
    return data


def _name(reader: Reader, framework: _Framework, name: str) -> str:
    """``mlmodelscope/FRAMEWORK-NAME``, lowercased, runs of other characters as one '-':
    MLModelScope's identity is the framework and the name (``pytorch/torchvision_resnet_50``),
    so one name under two frameworks stays two models."""
    slug = re.sub(r"[^a-z0-9.]+", "-", f"{framework.mlmodelscope}-{name}".lower()).strip("-.")
    try:
        return check_name(f"{NAMESPACE}/{slug}")
    except ValueError as exc:
        reader.refuse("name", f"makes no valid pinbench name: {exc}")


def _version(reader: Reader) -> str:
    why = (
        "pinbench versions are exact (MAJOR.MINOR.PATCH); MLModelScope reads a missing version "
        "as 'latest', which cannot be pinned"
    )
    text = reader.required_text("version", "version", why=why)
    try:
        return semver_text(text)
    except ValueError as exc:
        reader.refuse("version", f"{text!r} is not read as a version: {exc}")


def _framework(reader: Reader) -> _Framework:
    spec = reader.mapping(reader.typed.get("framework"), "framework")
    if not spec:
        reader.refuse("framework", "is required: the framework's name and version constraint")
    reader.check_keys(spec, ("name", "version"), "framework.")
    name = reader.required_text("framework.name", "framework", "name", why="which framework")
    text = reader.required_text(
        "framework.version", "framework", "version", why="the framework version constraint"
    )
    pinbench_name = FRAMEWORKS.get(name.lower())
    if pinbench_name is None:
        known = ", ".join(FRAMEWORKS)
        reader.refuse("framework.name", f"{name!r} is not a framework pinbench maps ({known})")
    try:
        rng = npm_range(text)
    except ValueError as exc:
        reader.refuse("framework.version", f"{text!r} has no npm range: {exc}")
    if rng != text:
        reader.note("framework.version", f"{text} means {rng} to MLModelScope (Masterminds/semver)")
    return _Framework(pinbench_name, name.lower(), rng)


def _note_running(reader: Reader, framework: _Framework, model_format: str) -> None:
    """Say when the imported model is described but cannot run here as it is."""
    if model_format in IMPORTED_FORMATS:
        reader.note("format", f"{model_format}: published and locked, but no predictor loads it")
    elif model_format == "onnx" and framework.name != "onnxruntime":
        reader.note(
            "framework.name",
            f"an ONNX model under {framework.name}: to run it with ONNX Runtime, change the "
            "framework to onnxruntime with a range of its versions (this one does not carry over)",
        )


def _descriptive(reader: Reader) -> dict[str, Any]:
    """``description``, ``license`` and ``references``, as written."""
    out: dict[str, Any] = {}
    for key in ("description", "license"):
        text = reader.text(key, key)
        if text is not None:
            out[key] = text
    items = reader.sequence(reader.typed.get("references"), "references")
    found = [reader.text(f"references[{i}]", "references", i) for i in range(len(items))]
    references = [r for r in found if r is not None]
    return out | ({"references": references} if references else {})


def _attributes(reader: Reader) -> dict[str, Scalar]:
    """MLModelScope's attributes, as they are; empty ones are left out."""
    kept: dict[str, Scalar] = {}
    for key, value in reader.mapping(reader.typed.get("attributes"), "attributes").items():
        field = f"attributes.{key}"
        if key.startswith(FACT):
            reader.refuse(field, f"uses the prefix {FACT!r}, kept for the importer's own facts")
        if value is None:
            reader.note(field, "is empty: left out")
            continue
        if isinstance(value, date):
            value = value.isoformat()
        if not isinstance(value, str | int | float | bool):
            reader.refuse(field, f"is a {kind_of(value)}: pinbench attributes are scalars")
        kept[key] = value
    return kept


def _facts(reader: Reader) -> dict[str, Scalar]:
    """MLModelScope's own words for what was translated, and its ``hidden`` flag."""
    facts: dict[str, Scalar] = {}
    for field in ("name", "version", "framework.name", "framework.version"):
        text = reader.text(field, *field.split("."))
        if text is not None:
            facts[f"{FACT}{field}"] = text
    if "hidden" in reader.typed:
        facts[f"{FACT}hidden"] = reader.flag(reader.typed["hidden"], "hidden")
    return facts
