"""Manifests: what is accepted, and for each bad input the field named in the error."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from pinbench.registry.dataset_manifest import DatasetManifest, ImageManifest
from pinbench.registry.manifest import (
    FrameworkManifest,
    ModelManifest,
    json_schemas,
    load_manifest_text,
    manifest_digest,
    parse_manifest,
)
from pinbench.registry.manifest_parts import ManifestError

SHA = "ab" * 32
MODEL: dict[str, Any] = {
    "kind": "model",
    "name": "vision/lenet-digits",
    "version": "1.0.0",
    "format": "onnx",
    "framework": {"name": "onnxruntime", "range": ">=1.17 <2"},
    "files": [{"path": "lenet.onnx", "sha256": SHA, "size": 10}],
    "inputs": [
        {
            "name": "x",
            "type": "image",
            "shape": [1, 8, 8],
            "steps": [
                {"decode": {"color_mode": "grayscale"}},
                {"resize": {"size": [8, 8], "method": "bilinear", "keep_aspect_ratio": False}},
                {"crop": {"size": [8, 8]}},
                {"normalize": {"mean": [0.0], "std": [16.0]}},
                {"layout": {"to": "NCHW"}},
                {"dtype": {"to": "float32"}},
            ],
        }
    ],
    "outputs": [
        {
            "name": "logits",
            "type": "classification",
            "steps": [{"softmax": {}}, {"topk": {"k": 5}}],
            "labels": {"path": "lenet.onnx", "sha256": SHA},
        }
    ],
    "attributes": {"top1": 0.972, "training_dataset": "dataset/sklearn-digits@1.0.0"},
}
FRAMEWORK: dict[str, Any] = {
    "kind": "framework",
    "name": "onnxruntime",
    "version": "1.31.0",
    "environments": [
        {
            "platform": {"arch": "amd64", "device": "cpu"},
            "image": {"name": "pinbench/onnxruntime", "range": "1.31.0"},
            "requirements": [
                {"name": "onnxruntime", "version": "1.31.0", "hashes": ["sha256:" + SHA]}
            ],
        }
    ],
}
DATASET: dict[str, Any] = {
    "kind": "dataset",
    "name": "sklearn-digits",
    "version": "1.0.0",
    "files": [{"path": "x.npy", "sha256": SHA}, {"path": "y.npy", "sha256": SHA}],
    "labels": {"format": "class-index-npy", "path": "y.npy"},
}
IMAGE: dict[str, Any] = {
    "kind": "image",
    "name": "pinbench/onnxruntime",
    "version": "1.31.0",
    "digest": "sha256:" + SHA,
}


@pytest.mark.parametrize(
    ("data", "cls"),
    [
        (MODEL, ModelManifest),
        (FRAMEWORK, FrameworkManifest),
        (DATASET, DatasetManifest),
        (IMAGE, ImageManifest),
    ],
)
def test_valid_manifests_parse(data: dict[str, Any], cls: type) -> None:
    assert isinstance(parse_manifest(data), cls)


def _with(base: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """A copy of base with the value at a dotted path replaced (``_del`` deletes)."""
    data = copy.deepcopy(base)
    keys: list[Any] = [int(k) if k.isdigit() else k for k in path.split(".")]
    node = data
    for k in keys[:-1]:
        node = node[k]
    if value == "_del":
        del node[keys[-1]]
    else:
        node[keys[-1]] = value
    return data


BAD = [
    # (case, data, what the message must contain)
    ("unknown top-level field", _with(MODEL, "colour", "red"), "unknown field `colour`"),
    ("unknown field in a file", _with(MODEL, "files.0.md5", "x"), "$.files[0]"),
    ("missing kind", _with(MODEL, "kind", "_del"), "$.kind"),
    ("unknown kind", _with(MODEL, "kind", "widget"), "widget"),
    ("version not semver", _with(MODEL, "version", "1.0"), "1.0"),
    ("version as a YAML float", _with(MODEL, "version", 1.0), "quote versions"),
    ("range does not parse", _with(MODEL, "framework.range", ">=1.x.y.z"), "$.framework"),
    ("sha256 not hex", _with(MODEL, "files.0.sha256", "xyz"), "sha256 of 'lenet.onnx'"),
    ("path escapes with ..", _with(MODEL, "files.0.path", "../x"), "'../x'"),
    ("absolute path", _with(MODEL, "files.0.path", "/etc/passwd"), "'/etc/passwd'"),
    ("path not normalised", _with(MODEL, "files.0.path", "a//b"), "normalised"),
    ("empty file list", _with(MODEL, "files", []), "at least one file"),
    ("duplicate file", _with(MODEL, "files", [MODEL["files"][0]] * 2), "listed twice"),
    ("bad name", _with(MODEL, "name", "Vision/LeNet"), "invalid name"),
    ("unknown format", _with(MODEL, "format", "pickle"), "$.format"),
    (
        "step with two ops",
        _with(MODEL, "inputs.0.steps.0", {"decode": {}, "crop": {"size": [1, 1]}}),
        "exactly one of",
    ),
    ("resize method unknown", _with(MODEL, "inputs.0.steps.1.resize.method", "magic"), "method"),
    ("normalize std and scale", _with(MODEL, "inputs.0.steps.3.normalize.scale", 2.0), "not both"),
    ("labels not a file", _with(MODEL, "outputs.0.labels.path", "labels.txt"), "labels file"),
    ("topk k zero", _with(MODEL, "outputs.0.steps.1.topk.k", 0), "topk.k must be between 1 and"),
    # inputs and outputs are keyed by their name as text: "0" and 0 shared one array
    ("inputs '0' and 0", _with(MODEL, "inputs", [{"name": "0"}, {"name": 0}]), "both '0'"),
    ("input named twice", _with(MODEL, "inputs", [{"name": "x"}] * 2), "inputs[1] ('x')"),
    ("outputs '1' and 1", _with(MODEL, "outputs", [{"name": 1}, {"name": "1"}]), "both '1'"),
    ("framework without environment", _with(FRAMEWORK, "environments", []), "at least one"),
    ("environment with nothing", _with(FRAMEWORK, "environments.0", {}), "needs an image"),
    (
        "requirement without hash",
        _with(FRAMEWORK, "environments.0.requirements.0.hashes", []),
        "at least one sha256",
    ),
    ("dataset without files", _with(DATASET, "files", []), "at least one file"),
    ("dataset labels not a file", _with(DATASET, "labels.path", "z.npy"), "labels file"),
    ("image digest malformed", _with(IMAGE, "digest", "sha256:abc"), "digest"),
    ("top level is a list", [MODEL], "mapping"),
]


@pytest.mark.parametrize(("case", "data", "needle"), BAD, ids=[b[0] for b in BAD])
def test_bad_manifest_is_refused_naming_the_problem(case: str, data: Any, needle: str) -> None:
    with pytest.raises(ManifestError) as info:
        parse_manifest(data, source="m.yaml")
    assert needle in str(info.value), f"{case}: {info.value}"
    assert "m.yaml" in str(info.value)


def test_malformed_yaml_is_refused() -> None:
    with pytest.raises(ManifestError, match="malformed YAML"):
        load_manifest_text("kind: model\nname: [unclosed\n", source="m.yaml")


def test_digest_ignores_yaml_spelling() -> None:
    """Same content written differently (order, defaults spelled out) has one digest."""
    explicit = _with(MODEL, "description", "")
    reordered = dict(reversed(list(MODEL.items())))
    digests = {manifest_digest(parse_manifest(d)) for d in (MODEL, explicit, reordered)}
    assert len(digests) == 1
    assert manifest_digest(parse_manifest(_with(MODEL, "description", "x"))) not in digests


def test_json_schema_for_each_kind() -> None:
    schemas = json_schemas()
    assert set(schemas) == {"model", "framework", "dataset", "image"}
    assert all("$defs" in s or "properties" in s for s in schemas.values())
