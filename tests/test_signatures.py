"""Inputs and outputs by name, checked against the model's own signature at ``open``; outputs
chosen by name (accuracy from the output the manifest marks ``classification``); ONNX external
data laid out beside the model, confined to the artifact's listed files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from sqlalchemy import select

from pinbench import catalog as builtin
from pinbench.artifacts.onnx_proto import external_locations
from pinbench.db.models import Artifact
from pinbench.evaluator.records.run_list import list_runs
from pinbench.evaluator.run import run_lockfile
from pinbench.evaluator.runners.process import EvaluationFailed
from pinbench.registry import service
from pinbench.registry.formats import FormatMismatch
from pinbench.registry.lockfile import Lockfile
from pinbench.registry.manifest import ModelManifest, load_manifest
from pinbench.registry.request import parse_request
from pinbench.worker.predictors import predictor_class
from pinbench.worker.predictors.config import ModelFiles, PredictorOptions
from pinbench.worker.predictors.onnxruntime.predictor import ExternalDataRefused
from pinbench.workspace import Workspace
from tests.helpers import digits_logreg, publish_digits_model, write_files

Array = np.ndarray[Any, Any]
X = {"name": "x", "element_type": "float32", "shape": [1, 8, 8], "steps": []}
LOGITS = {"name": "logits", "type": "classification"}
STEPS = [{"normalize": {"mean": [0.0], "std": [16.0]}}, {"layout": {"to": "NCHW"}}]


def quiet(text: str) -> None:
    pass


def _weights() -> tuple[Array, Array]:
    return digits_logreg()


def _test_logits(weights: Array, bias: Array) -> tuple[Array, Array]:
    _, x_test, _, y_test = builtin.digits_split()
    return (x_test.reshape(len(x_test), -1).astype(np.float32) / 16.0) @ weights.T + bias, y_test


def _onnx(outputs: dict[str, tuple[Array, Array]]) -> Any:
    """``x (N, 1, 8, 8) -> Flatten -> one Gemm per named output``."""
    from onnx import TensorProto, helper, numpy_helper

    nodes = [helper.make_node("Flatten", ["x"], ["flat"], axis=1)]
    inits, infos = [], []
    for name, (w, b) in outputs.items():
        nodes.append(helper.make_node("Gemm", ["flat", f"W_{name}", f"b_{name}"], [name], transB=1))
        inits += [numpy_helper.from_array(w, f"W_{name}"), numpy_helper.from_array(b, f"b_{name}")]
        infos.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, ["N", w.shape[0]]))
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 1, 8, 8])],
        infos,
        initializer=inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def _onnx_bytes(model: Any) -> bytes:
    return bytes(model.SerializeToString())


def _publish(
    ws: Workspace, root: Path, version: str, files: dict[str, bytes], **fields: Any
) -> str:
    """``publish_digits_model`` with the digits model's input and ``LOGITS`` unless ``fields``
    say otherwise."""
    defaults: dict[str, Any] = {"inputs": [{**X, "steps": STEPS}], "outputs": [LOGITS]}
    return publish_digits_model(ws, root, version, files, **(defaults | fields))


def _lock(ws: Workspace, model: str, **request: Any) -> Lockfile:
    data = {"model": model, "dataset": f"{builtin.DATASET_NAME}@1", **request}
    return service.lock(ws, parse_request(data))[0]


def _only_failed(ws: Workspace) -> dict[str, Any]:
    runs = list_runs(ws)
    assert [r["status"] for r in runs] == ["failed"], runs
    return runs[0]


# (reason, manifest fields, what the error must name: the declared side, the model's side)
MISMATCHES = [
    (
        "wrong input name",
        {"inputs": [{**X, "name": "no_such_input"}]},
        ["input 'no_such_input'", "'x' (float32, shape ['N', 1, 8, 8])"],
    ),
    (
        "wrong output name",
        {"outputs": [{**LOGITS, "name": "no_such_output"}]},
        ["output 'no_such_output'", "1 outputs ['logits'"],
    ),
    (
        "wrong element type",
        {"inputs": [{**X, "element_type": "float64"}]},
        ["element type float64", "element type float32 for 'x'"],
    ),
    (
        "wrong static dim",
        {"inputs": [{**X, "shape": [1, 8, 9]}]},
        ["shape [1, 8, 9] after the batch axis", "shape ['N', 1, 8, 8] for 'x'"],
    ),
    (
        "wrong rank (batch axis included by mistake)",
        {"inputs": [{**X, "shape": [1, 1, 8, 8]}]},
        ["(rank 5)", "(rank 4)"],
    ),
    (
        "extra declared output",
        {"outputs": [LOGITS, {"name": "probabilities"}]},
        ["output 'probabilities'", "1 outputs ['logits'"],
    ),
    (
        "input index out of range",
        {"inputs": [{**X, "name": 1}]},
        ["input #1", "1 inputs ['x'"],
    ),
    (
        "the same output declared twice (by name and by index)",
        {"outputs": [LOGITS, {"name": 0}]},
        ["output #0", "'logits' twice"],
    ),
]


@pytest.mark.parametrize(
    ("fields", "needles"), [m[1:] for m in MISMATCHES], ids=[m[0] for m in MISMATCHES]
)
def test_a_declaration_that_does_not_fit_the_model_fails_the_run_naming_both_sides(
    digits: Workspace, tmp_path: Path, catalog_dir: Path, fields: dict[str, Any], needles: list[str]
) -> None:
    data = (catalog_dir / "digits-logreg-1.1.0" / "digits-logreg.onnx").read_bytes()
    model = _publish(digits, tmp_path, "5.0.0", {"m.onnx": data}, **fields)
    for mode in ("accuracy", "performance"):
        with pytest.raises(EvaluationFailed) as caught:
            run_lockfile(digits, _lock(digits, model, scenario={"mode": mode}), say=quiet)
        for needle in needles:
            assert needle in str(caught.value)
    assert all(r["status"] == "failed" for r in list_runs(digits))
    recorded = list_runs(digits)[0]
    assert all(needle in recorded["error"] for needle in needles)
    assert "top1" not in recorded and "latency_p50_ns" not in recorded


def test_a_second_input_the_model_lacks_is_refused_before_anything_runs(
    digits: Workspace, tmp_path: Path, catalog_dir: Path
) -> None:
    data = (catalog_dir / "digits-logreg-1.1.0" / "digits-logreg.onnx").read_bytes()
    model = _publish(digits, tmp_path, "5.1.0", {"m.onnx": data}, inputs=[X, {**X, "name": "mask"}])
    with pytest.raises(EvaluationFailed, match=r"input 'mask': the manifest declares input"):
        run_lockfile(digits, _lock(digits, model), say=quiet)
    assert "the model has 1 inputs ['x'" in _only_failed(digits)["error"]


def test_accuracy_needs_an_output_marked_classification(
    digits: Workspace, tmp_path: Path, catalog_dir: Path
) -> None:
    data = (catalog_dir / "digits-logreg-1.1.0" / "digits-logreg.onnx").read_bytes()
    model = _publish(digits, tmp_path, "5.2.0", {"m.onnx": data}, outputs=[{"name": "logits"}])
    with pytest.raises(EvaluationFailed, match=r"declares logits \(tensor\)"):
        run_lockfile(digits, _lock(digits, model, scenario={"mode": "accuracy"}), say=quiet)
    _only_failed(digits)


def test_accuracy_comes_from_the_output_marked_classification_not_the_first(
    digits: Workspace, tmp_path: Path
) -> None:
    """Two outputs; the declared classification output is the second: its top-1 equals a
    NumPy reference of it, and differs from what the first output would have given."""
    weights, bias = _weights()
    rng = np.random.default_rng(0)
    decoy = (rng.normal(size=(10, 64)).astype(np.float32), np.zeros(10, np.float32))
    model = _onnx({"decoy": decoy, "scores": (weights, bias)})
    ref = _publish(
        digits,
        tmp_path,
        "6.0.0",
        {"two.onnx": _onnx_bytes(model)},
        outputs=[{"name": "decoy"}, {"name": "scores", "type": "classification"}],
    )
    outcome = run_lockfile(digits, _lock(digits, ref, scenario={"mode": "accuracy"}), say=quiet)
    logits, y = _test_logits(weights, bias)
    decoy_logits, _ = _test_logits(*decoy)
    assert outcome.metrics["top1"] == float(np.mean(logits.argmax(1) == y))
    assert outcome.metrics["top1"] != float(np.mean(decoy_logits.argmax(1) == y))
    assert "top1_decoy" not in outcome.metrics


def test_several_classification_outputs_each_get_a_metric_named_after_it(
    digits: Workspace, tmp_path: Path
) -> None:
    weights, bias = _weights()
    half = (weights * 0.5, bias * 0.5)
    model = _onnx({"full": (weights, bias), "Half/Scores:0": half})
    ref = _publish(
        digits,
        tmp_path,
        "6.1.0",
        {"two.onnx": _onnx_bytes(model)},
        outputs=[{**LOGITS, "name": "Half/Scores:0"}, {**LOGITS, "name": "full"}],
    )
    outcome = run_lockfile(digits, _lock(digits, ref, scenario={"mode": "accuracy"}), say=quiet)
    for name, (w, b) in (("half_scores_0", half), ("full", (weights, bias))):
        logits, y = _test_logits(w, b)
        assert outcome.metrics[f"top1_{name}"] == float(np.mean(logits.argmax(1) == y))
        assert f"top5_{name}" in outcome.metrics
    assert "top1" not in outcome.metrics


# ---------------------------------------------------------------- ONNX external data


def _external(folder: Path, location: str = "model.onnx.data") -> dict[str, bytes]:
    """The digits logistic regression saved as ``model.onnx`` + its external data file, then
    (to forge a location) the location rewritten in the graph."""
    import onnx

    folder.mkdir(parents=True, exist_ok=True)
    model = _onnx({"logits": _weights()})
    onnx.save_model(
        model,
        str(folder / "model.onnx"),
        save_as_external_data=True,
        all_tensors_to_one_file=True,
        location="model.onnx.data",
        size_threshold=0,
    )
    files = {n: (folder / n).read_bytes() for n in ("model.onnx", "model.onnx.data")}
    if location != "model.onnx.data":
        model = onnx.load_model(str(folder / "model.onnx"), load_external_data=False)
        for tensor in model.graph.initializer:
            for entry in tensor.external_data:
                if entry.key == "location":
                    entry.value = location
        files["model.onnx"] = model.SerializeToString()
    return files


def test_the_reader_finds_the_locations_onnx_finds(tmp_path: Path) -> None:
    """Initializers and node-attribute tensors (a Constant), against onnx's own helper."""
    import onnx
    from onnx import helper, numpy_helper
    from onnx.external_data_helper import _get_all_tensors, uses_external_data

    model = _onnx({"logits": _weights()})
    const = numpy_helper.from_array(np.ones(64, np.float32), "c")
    model.graph.node.insert(0, helper.make_node("Constant", [], ["unused"], value=const))
    onnx.save_model(
        model,
        str(tmp_path / "m.onnx"),
        save_as_external_data=True,
        all_tensors_to_one_file=False,
        size_threshold=0,
        convert_attribute=True,
    )
    loaded = onnx.load_model(str(tmp_path / "m.onnx"), load_external_data=False)
    theirs = [
        (t.name, next(e.value for e in t.external_data if e.key == "location"))
        for t in _get_all_tensors(loaded)
        if uses_external_data(t)
    ]
    assert len(theirs) == 3
    assert sorted(external_locations(tmp_path / "m.onnx")) == sorted(theirs)


@pytest.mark.parametrize("runner", ["local", "venv"])
def test_a_model_with_external_data_runs_from_its_laid_out_files(
    digits: Workspace, tmp_path: Path, runner: str
) -> None:
    files = _external(tmp_path / "build")
    assert b"model.onnx.data" in files["model.onnx"] and len(files["model.onnx"]) < 1000
    ref = _publish(digits, tmp_path / "pub", "7.0.0", {f"m/{k}": v for k, v in files.items()})
    lock = _lock(digits, ref, scenario={"mode": "accuracy"})
    outcome = run_lockfile(digits, lock, runner=runner, say=quiet)
    logits, y = _test_logits(*_weights())
    assert outcome.status == "succeeded"
    assert outcome.metrics["top1"] == float(np.mean(logits.argmax(1) == y))


# (reason, location written in the graph, artifact path -> file built, what the error says)
REFUSED = [
    (
        "sidecar not listed in the manifest",
        "model.onnx.data",
        {"m/model.onnx": "model.onnx"},
        "is not a file of the artifact",
    ),
    ("absolute location", "/etc/passwd", {"m/model.onnx": "model.onnx"}, "not a relative path"),
    (
        "climbs out of the artifact",
        "../../model.onnx.data",
        {"m/model.onnx": "model.onnx"},
        "climbs out of the artifact",
    ),
    (
        "climbs out of the model's folder, even to a listed file",
        "../model.onnx.data",
        {"m/model.onnx": "model.onnx", "model.onnx.data": "model.onnx.data"},
        "not a normalised path",
    ),
]


@pytest.mark.parametrize(
    ("location", "layout", "needle"), [r[1:] for r in REFUSED], ids=[r[0] for r in REFUSED]
)
def test_external_data_outside_the_artifact_is_refused_naming_the_file(
    tmp_path: Path, location: str, layout: dict[str, str], needle: str
) -> None:
    built = _external(tmp_path / "build", location)
    write_files(tmp_path / "blobs", built)
    files = {path: tmp_path / "blobs" / name for path, name in layout.items()}
    predictor = predictor_class("onnxruntime")()
    with pytest.raises(ExternalDataRefused, match=needle) as caught:
        predictor.open(ModelFiles(files, "onnx"), PredictorOptions())
    assert caught.value.location == location and repr(location) in str(caught.value)


def test_a_missing_sidecar_is_refused_at_publish(digits: Workspace, tmp_path: Path) -> None:
    """Publishing makes the run's check (tests/test_onnx_confinement.py has the run's side)."""
    files = _external(tmp_path / "build")
    del files["model.onnx.data"]
    with pytest.raises(FormatMismatch, match=r"'model\.onnx\.data'.*not a file of the artifact"):
        _publish(digits, tmp_path / "pub", "7.1.0", files)
    with digits.transaction() as session:
        assert session.scalar(select(Artifact).where(Artifact.version == "7.1.0")) is None


# ---------------------------------------------------------------- the catalog's declarations


def test_every_catalog_model_declaration_fits_its_model(cnn_catalog_dir: Path) -> None:
    """The built-in digits and CNN catalogs (ONNX, safetensors, Keras) pass the checks."""
    opened = []
    for path in sorted(cnn_catalog_dir.glob("model-*.yaml")):
        manifest = load_manifest(path)
        assert isinstance(manifest, ModelManifest)
        files = {
            f.path: cnn_catalog_dir / (f.source or "").removeprefix("file:") for f in manifest.files
        }
        model = ModelFiles(
            files,
            manifest.format,
            manifest.architecture,
            inputs=tuple(manifest.inputs),
            outputs=tuple(manifest.outputs),
        )
        predictor = predictor_class(manifest.framework.name)()
        predictor.open(model, PredictorOptions())
        out = predictor.first_predict(np.zeros((2, 1, 8, 8), np.float32))
        assert list(out) == [str(o.name) for o in manifest.outputs]
        predictor.close()
        opened.append(manifest.format)
    assert {"onnx", "safetensors", "keras"} <= set(opened)
