"""The model's files: MLModelScope's ``model`` section (and an output's ``features_url``) as
pinbench file entries with a remote source and the md5 kept as the legacy digest.

As rai-project/dlframework fetches them: a ``graph_path``/``weights_path`` that is a URL stands
alone, otherwise ``base_url`` and the path are joined with one ``/``; with ``is_archive: true``
``base_url`` is an archive and the paths name members in it (``ARCHIVE#path=MEMBER`` here); the
local file name is the path's last part. The format is told by the files' suffixes and the
framework (``FORMAT_RULES``).
"""

from __future__ import annotations

import dataclasses
import posixpath
import re
import urllib.parse
from dataclasses import dataclass
from typing import Any, Final

from pinbench.artifacts.sources.uri import HttpsUri, SourceUriError, parse_source
from pinbench.registry.mlmodelscope.reader import Reader


@dataclass(frozen=True, slots=True)
class FormatRule:
    """A model format told by the suffixes of ``graph_path`` and ``weights_path`` (None: that
    path is absent), under the given pinbench frameworks (None: any)."""

    format: str
    graph: str | None
    weights: str | None
    frameworks: frozenset[str] | None = None

    def matches(self, framework: str, graph: str | None, weights: str | None) -> bool:
        under = self.frameworks is None or framework in self.frameworks
        return under and (self.graph, self.weights) == (graph, weights)

    def __str__(self) -> str:
        files = " + ".join(s for s in (self.graph, self.weights) if s)
        under = f" under {'/'.join(sorted(self.frameworks))}" if self.frameworks else ""
        return f"{self.format} ({files}{under})"


FORMAT_RULES: Final = (
    FormatRule("tf-graphdef", ".pb", None, frozenset({"tensorflow"})),
    FormatRule("torchscript", ".pt", None, frozenset({"torch"})),
    FormatRule("torchscript", ".pth", None, frozenset({"torch"})),
    FormatRule("caffe", ".prototxt", ".caffemodel", frozenset({"caffe", "tensorrt"})),
    FormatRule("caffe2", ".pb", ".pb", frozenset({"caffe2"})),
    FormatRule("mxnet", ".json", ".params", frozenset({"mxnet"})),
    FormatRule("onnx", ".onnx", None),
    FormatRule("onnx", None, ".onnx"),
)
"""TorchScript: MLModelScope's PyTorch predictor loads ``.pt`` files with ``torch::jit::load``.
ONNX under any framework: Caffe2 and TensorRT run ONNX files too."""

IMPORTED_FORMATS: Final = frozenset({"tf-graphdef", "caffe", "caffe2", "mxnet"})
"""Formats pinbench knows only from MLModelScope: no predictor loads them."""
MODEL_KEYS: Final = frozenset(
    {"base_url", "graph_path", "weights_path", "graph_checksum", "weights_checksum", "is_archive"}
)
_ROLES: Final = ("graph", "weights")
_MD5 = re.compile(r"[0-9a-f]{32}")
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")


@dataclass(slots=True)
class Files:
    """The file entries gathered so far; two files may not share a path."""

    reader: Reader
    entries: list[dict[str, Any]] = dataclasses.field(default_factory=list)

    def add(self, field: str, path: str, source: str, md5: str | None) -> None:
        for other in self.entries:
            if other["path"] == path:
                self.reader.refuse(field, f"names a file {path!r}, as {other['source']} does")
        entry = {"path": path, "source": source}
        if md5 is not None:
            entry["md5"] = md5
        self.entries.append(entry)


def model_files(reader: Reader, framework: str, files: Files) -> str:
    """Add the model's graph and weights files; return the model's format."""
    model = reader.mapping(reader.typed.get("model"), "model")
    if not model:
        reader.refuse("model", "is required: where the model's files are")
    reader.check_keys(model, MODEL_KEYS, "model.")
    archive = reader.flag(model.get("is_archive"), "model.is_archive")
    base = reader.text("model.base_url", "model", "base_url")
    if archive and base is None:
        reader.refuse("model.base_url", "is required when model.is_archive is true")
    paths = {role: reader.text(f"model.{role}_path", "model", f"{role}_path") for role in _ROLES}
    if paths["graph"] is None and paths["weights"] is None:
        reader.refuse("model.graph_path", "is required (or model.weights_path): the model file")
    model_format = _format(reader, framework, paths["graph"], paths["weights"])
    for role, path in paths.items():
        if path is None:
            continue
        source, name = _model_source(reader, f"model.{role}_path", path, base, archive)
        md5 = _md5(reader, f"model.{role}_checksum", ("model", f"{role}_checksum"), name)
        if md5 is not None and archive:
            reader.note(
                f"model.{role}_checksum",
                f"taken as the md5 of the archive member {path} (MLModelScope checks no "
                "checksum inside an archive)",
            )
        files.add(f"model.{role}_path", name, source, md5)
    return model_format


def labels_file(reader: Reader, files: Files) -> str | None:
    """Add the output's ``features_url`` file (the class labels); return its path."""
    field = "output.parameters.features_url"
    url = reader.text(field, "output", "parameters", "features_url")
    if url is None:
        return None
    _remote(reader, field, url)
    name = _file_name(reader, field, url)
    checksum = ("output", "parameters", "features_checksum")
    files.add(field, name, url, _md5(reader, "output.parameters.features_checksum", checksum, name))
    return name


def _format(reader: Reader, framework: str, graph: str | None, weights: str | None) -> str:
    suffixes = (_suffix(graph), _suffix(weights))
    for rule in FORMAT_RULES:
        if rule.matches(framework, *suffixes):
            return rule.format
    given = " + ".join(f"{s} {role}" for s, role in zip(suffixes, _ROLES, strict=True) if s)
    reader.refuse(
        "model.graph_path" if graph is not None else "model.weights_path",
        f"names a {given}, which is no pinbench format under {framework} (pinbench imports "
        f"{', '.join(map(str, FORMAT_RULES))})",
    )


def _model_source(
    reader: Reader, field: str, path: str, base: str | None, archive: bool
) -> tuple[str, str]:
    """(source URI, file name) of a graph or weights path, as MLModelScope fetches it."""
    if archive:
        assert base is not None
        member = posixpath.normpath(path)
        if _URL.match(path) or member.startswith(("/", "../")) or member == "..":
            reader.refuse(field, f"{path!r} must name a file inside the archive model.base_url")
        _remote(reader, "model.base_url", base)
        return str(HttpsUri(base, member)), posixpath.basename(member)
    if _URL.match(path):
        _remote(reader, field, path)
        return path, _file_name(reader, field, path)
    if base is None:
        reader.refuse(field, f"{path!r} is not a URL and model.base_url is empty")
    url = base.rstrip("/") + "/" + path
    _remote(reader, "model.base_url", url)
    return url, _file_name(reader, field, url)


def _remote(reader: Reader, field: str, url: str) -> None:
    if not url.startswith(("https://", "http://")):
        reader.refuse(field, f"must be an http(s) URL, got {url!r}")
    try:
        parse_source(url)
    except SourceUriError as exc:
        reader.refuse(field, f"is not a usable URL ({exc.reason}): {url}")


def _file_name(reader: Reader, field: str, url: str) -> str:
    name = posixpath.basename(urllib.parse.urlsplit(url).path)
    if not name:
        reader.refuse(field, f"{url!r} names no file (it ends in '/')")
    return name


def _md5(reader: Reader, field: str, path: tuple[str, ...], file_name: str) -> str | None:
    text = reader.text(field, *path)
    if text is None:
        reader.note(
            field,
            f"is empty: {file_name} has no digest to check when it is first fetched; "
            "publishing pins the sha256 of the bytes it gets then",
        )
        return None
    if not _MD5.fullmatch(text.lower()):
        reader.refuse(field, f"{text!r} is not an md5 digest (32 hex digits)")
    return text.lower()


def _suffix(path: str | None) -> str | None:
    if path is None:
        return None
    return posixpath.splitext(urllib.parse.urlsplit(path).path)[1].lower()
