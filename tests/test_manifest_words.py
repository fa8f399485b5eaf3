"""Checks and words: a declared md5 is checked, enum errors list what is allowed, the YAML
number hint only where a version or range got a number, declared values the evaluator would
ignore are refused at publish, and top-k only where a model has k classes."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from sqlalchemy import func, select

from pinbench.artifacts.sources.errors import Md5Mismatch
from pinbench.db.models import Artifact
from pinbench.registry.lockfile import Lockfile, LockfileError
from pinbench.registry.manifest import parse_manifest
from pinbench.registry.manifest_parts import ManifestError
from pinbench.registry.publish import publish
from pinbench.registry.request import RequestError, parse_request
from pinbench.registry.supported import Unsupported
from pinbench.tasks.classification.scores import classification_metrics
from pinbench.workspace import Workspace
from tests.helpers import Cli, dataset_manifest, dump, model_manifest, write_files
from tests.test_manifest import DATASET, FRAMEWORK, MODEL, _with


def _counts(ws: Workspace) -> tuple[int, int]:
    with ws.transaction() as s:
        rows = s.scalar(select(func.count()).select_from(Artifact)) or 0
    return rows, len(list(ws.store.iter_digests()))


def test_a_declared_md5_of_a_local_file_is_checked_at_publish(
    ws: Workspace, tmp_path: Path
) -> None:
    files = write_files(tmp_path, {"x.npy": b"bytes"})
    right = hashlib.md5(b"bytes").hexdigest()
    wrong = hashlib.md5(b"other").hexdigest()
    with pytest.raises(Md5Mismatch) as info:
        publish(
            ws,
            parse_manifest(dataset_manifest("digits", "1.0.0", [{**files[0], "md5": wrong}])),
            manifest_dir=tmp_path,
        )
    assert wrong in str(info.value) and right in str(info.value) and "x.npy" in str(info.value)
    assert _counts(ws) == (0, 0), "nothing recorded, nothing staged left"
    done = publish(
        ws,
        parse_manifest(dataset_manifest("digits", "1.0.0", [{**files[0], "md5": right}])),
        manifest_dir=tmp_path,
    )
    assert done.created and _counts(ws) == (1, 1)


def test_a_wrong_md5_is_refused_through_the_cli(cli: Cli, tmp_path: Path) -> None:
    assert cli("init").code == 0
    files = write_files(tmp_path / "m", {"m.onnx": b"model"})
    files[0]["md5"] = "0" * 32
    path = dump(tmp_path / "m" / "m.yaml", model_manifest("vision/m", "1.0.0", files))
    refused = cli("publish", str(path))
    assert refused.code == 1
    assert "0" * 32 in refused.err and hashlib.md5(b"model").hexdigest() in refused.err
    assert cli("list", "--json").out.strip() == "[]"


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (  # a top-level Literal
            _with(MODEL, "format", "pt"),
            "must be one of caffe, caffe2, ctranslate2, gguf, hf-folder, keras, keras-h5, mxnet, "
            "onnx, openvino, ort-genai, safetensors, savedmodel, tf-graphdef, tflite, "
            "torch-export, torch-pickle, torch-state-dict, torchscript; got 'pt' - at `$.format`",
        ),
        (  # a Literal inside a list of structs
            _with(MODEL, "inputs.0.type", "video"),
            "must be one of image, tensor, text; got 'video' - at `$.inputs[0].type`",
        ),
        (  # a Literal inside an optional struct inside a list
            _with(MODEL, "inputs.0.steps.0", {"layout": {"to": "NCWH"}}),
            "must be one of CHW, HWC, NCHW, NHWC; got 'NCWH' - at `$.inputs[0].steps[0].layout.to`",
        ),
        (  # an alias of Literal (ElementType)
            _with(MODEL, "inputs.0.element_type", "float8"),
            "got 'float8' - at `$.inputs[0].element_type`",
        ),
        (  # a nested struct with a default factory
            _with(FRAMEWORK, "environments.0.platform.device", "tpu"),
            "must be one of cpu, cuda, rocm; got 'tpu' - at `$.environments[0].platform.device`",
        ),
        (
            _with(DATASET, "labels.format", "xml"),
            # the formats are the tasks' (``pinbench.tasks``): every one any task reads
            "`labels.format` must be one of class-index-csv, class-index-jsonl, "
            "class-index-npy, class-index-txt, coco-json, imagefolder, iob2-tags, masks, ",
        ),
    ],
)
def test_enum_errors_list_the_allowed_values(data: dict[str, Any], expected: str) -> None:
    with pytest.raises(ManifestError) as info:
        parse_manifest(data)
    assert expected in str(info.value)
    assert "Invalid enum value" not in str(info.value)


def test_request_and_lockfile_enum_errors_list_the_allowed_values() -> None:
    with pytest.raises(RequestError) as info:
        parse_request({"model": "m@1", "dataset": "d@1", "scenario": {"mode": "fast"}})
    assert "must be one of accuracy, performance; got 'fast' - at `$.scenario.mode`" in str(
        info.value
    )
    with pytest.raises(LockfileError) as lock_info:
        Lockfile.from_bytes(
            b'{"artifacts":[{"files":[],"kind":"thing","manifest_digest":"x","name":"n",'
            b'"version":"1.0.0"}],"schema_version":2}'
        )
    assert "must be one of dataset, framework, image, model; got 'thing'" in str(lock_info.value)


HINT = "quote versions and ranges"


@pytest.mark.parametrize(
    ("data", "hinted"),
    [
        (_with(MODEL, "version", 1.0), True),  # the artifact's version
        (_with(MODEL, "framework.range", 1.17), True),  # a constraint's range
        (_with(FRAMEWORK, "environments.0.requirements.0.version", 1.31), True),  # a pin
        (_with(FRAMEWORK, "environments.0.image.range", 1), True),  # an image's range
        (_with(MODEL, "files.0.size", 1.5), False),  # a size is a number: no hint
        (_with(MODEL, "name", 1.0), False),  # a name is not a version
        (_with(MODEL, "inputs.0.shape.0", 1.5), False),  # a dimension
        (_with(MODEL, "description", 2), False),  # free text
        (_with(MODEL, "license", 1.0), False),
    ],
)
def test_the_number_hint_only_on_versions_and_ranges(data: dict[str, Any], hinted: bool) -> None:
    with pytest.raises(ManifestError) as info:
        parse_manifest(data)
    assert (HINT in str(info.value)) is hinted, str(info.value)


@pytest.mark.parametrize(
    ("data", "field", "value", "at"),
    [
        (_with(DATASET, "task", "other"), "task", "other", "$.task"),
    ],
)
def test_declared_values_nothing_acts_on_are_refused_at_publish(
    ws: Workspace, tmp_path: Path, data: dict[str, Any], field: str, value: str, at: str
) -> None:
    manifest = parse_manifest(data)  # still a valid manifest: import-mlmodelscope reads them
    with pytest.raises(Unsupported) as info:
        publish(ws, manifest, manifest_dir=tmp_path)
    assert f"{field} {value!r} is not supported yet: supported: " in str(info.value)
    assert at in str(info.value)
    assert _counts(ws) == (0, 0)


@pytest.mark.parametrize(
    ("classes", "keys"),
    [
        (2, {"top1", "accuracy_samples_count"}),  # top-5 of 2 classes would always be 1.0
        (4, {"top1", "accuracy_samples_count"}),
        (5, {"top1", "top5", "accuracy_samples_count"}),  # the smallest with a top-5
        (10, {"top1", "top5", "accuracy_samples_count"}),  # the digits catalog
    ],
)
def test_top5_only_for_models_with_five_classes(classes: int, keys: set[str]) -> None:
    rng = np.random.default_rng(0)
    outputs = rng.random((20, classes)).astype(np.float32)
    truth = rng.integers(0, classes, 20)
    metrics = classification_metrics(outputs, truth)
    assert set(metrics) == keys
    assert metrics["top1"] == np.mean(np.argmax(outputs, axis=1) == truth)
