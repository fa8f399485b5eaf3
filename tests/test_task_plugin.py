"""A task is a plug-in (decision 124): a ``Task`` subclass and one line in the registry, and
the evaluator, the manifest checks, the rerun verdict and the lists take it as they take the
built-in ones. The example here is the whole of a new task: regression, a number per sample
scored by its mean absolute error, labels in an ``.npy`` file of one value per sample.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pinbench.errors import UserError
from pinbench.evaluator.records.run_list import list_runs
from pinbench.evaluator.records.run_view import show_run
from pinbench.evaluator.run import run_lockfile
from pinbench.evaluator.verdicts.verdict import accuracy_verdict
from pinbench.registry import service
from pinbench.registry.manifest import parse_manifest
from pinbench.registry.manifest_parts import ManifestError
from pinbench.registry.publish import publish
from pinbench.registry.request import parse_request
from pinbench.tasks import registry
from pinbench.tasks.base import Answer, Array, Context, Metric, Scored, Scorer, Task, TruthSource
from pinbench.tasks.shapes import every_sample, stacked
from tests.helpers import published_workspace, write_files

# ---------------------------------------------------------------- the example task


class Regression(Task):
    name = "regression"
    title = "regression"
    label_formats = ("value-npy",)
    metrics = (
        Metric("mae", "MAE", unit="value", higher_is_better=False, headline=True),
        Metric("max_error", "max error", unit="value", higher_is_better=False),
    )

    def read_truth(self, source: TruthSource) -> dict[str, Any]:
        path = source.dataset.labels.path
        assert path is not None
        values = np.load(source.paths[path], allow_pickle=False).astype(np.float64)
        if values.shape != (source.count,):
            from pinbench.worker.lines import LabelProblem

            raise LabelProblem(path=path, reason=f"want {source.count} values, got {values.shape}")
        return {"truth": values}

    def prepare(self, context: Context) -> Scorer | None:
        outputs = [str(o.name) for o in context.model.outputs if o.type == "tensor"]
        if len(outputs) != 1:
            raise UserError(f"a regression run needs one tensor output, got {outputs}")
        return ValueScorer(outputs[0], context)


class ValueScorer(Scorer):
    def __init__(self, output: str, context: Context) -> None:
        self.outputs = [output]
        self.context = context

    def check(self, answer: Answer, arrays: dict[str, Array], batch: int) -> None:
        if np.shape(answer[self.outputs[0]]) not in ((batch,), (batch, 1)):
            raise UserError(f"want one value per sample, got {np.shape(answer[self.outputs[0]])}")

    def score(self, answers: dict[int, Answer], arrays: dict[str, Array]) -> Scored:
        samples = self.context.samples
        every_sample("regression", answers, len(samples))
        _, out = stacked(answers, self.outputs)
        values = out[self.outputs[0]].reshape(-1).astype(np.float64)
        error = np.abs(values - samples.truth)
        metrics = {"mae": float(error.mean()), "max_error": float(error.max())}
        return Scored(metrics, values, self.outputs[0])


@pytest.fixture
def with_regression(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The one line a new task adds to ``registry.TASKS`` (here from this test module)."""
    monkeypatch.setitem(registry.TASKS, "regression", f"{__name__}:Regression")
    registry.task.cache_clear()
    yield
    registry.task.cache_clear()


# ---------------------------------------------------------------- a model and a dataset


def _sum_model(root: Path) -> dict[str, Any]:
    """An ONNX model summing each sample's 4 values: ``(N, 2, 2, 1) -> (N,)``."""
    from onnx import TensorProto, helper

    axes = helper.make_tensor("axes", TensorProto.INT64, [3], [1, 2, 3])
    graph = helper.make_graph(
        [helper.make_node("ReduceSum", ["x", "axes"], ["y"], keepdims=0)],
        "sum",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 2, 2, 1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N"])],
        [axes],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    files = write_files(root, {"sum.onnx": model.SerializeToString()})
    return {
        "kind": "model",
        "name": "example/sum",
        "version": "1.0.0",
        "format": "onnx",
        "framework": {"name": "onnxruntime", "range": "^1"},
        "files": files,
        "inputs": [{"name": "x", "shape": [2, 2, 1]}],
        "outputs": [{"name": "y"}],
    }


def _values_dataset(root: Path, x: Array, y: Array) -> dict[str, Any]:
    import io

    def npy(a: Array) -> bytes:
        buf = io.BytesIO()
        np.save(buf, a)
        return buf.getvalue()

    files = write_files(root, {"x.npy": npy(x), "y.npy": npy(y)})
    return {
        "kind": "dataset",
        "name": "example/values",
        "version": "1.0.0",
        "task": "regression",
        "files": files,
        "data": {"format": "npy", "path": "x.npy"},
        "labels": {"format": "value-npy", "path": "y.npy"},
    }


def quiet(text: str) -> None:
    pass


def test_a_task_added_by_one_registry_line_is_run_scored_and_verdicted(
    tmp_path: Path, catalog_dir: Path, with_regression: None
) -> None:
    rng = np.random.default_rng(3)
    x = rng.normal(size=(12, 2, 2, 1)).astype(np.float32)
    y = rng.normal(size=12).astype(np.float32) + x.sum(axis=(1, 2, 3))  # off by noise
    ws = published_workspace(tmp_path, catalog_dir)
    try:
        for doc in (_sum_model(tmp_path / "m"), _values_dataset(tmp_path / "d", x, y)):
            root = tmp_path / ("m" if doc["kind"] == "model" else "d")
            publish(ws, parse_manifest(doc), manifest_dir=root, publisher="test")
        request = {
            "model": "example/sum@1",
            "dataset": "example/values@1",
            "scenario": {"mode": "accuracy"},
        }
        # in this process (--sandbox none): the task is this module's, registered here alone
        run_lockfile(ws, service.lock(ws, parse_request(request))[0], say=quiet, sandbox="none")
        run = show_run(ws, list_runs(ws)[0]["id"])
        assert run["status"] == "succeeded"
        # the reference: the model's sums in float32, as onnxruntime computes them
        import onnxruntime as ort

        session = ort.InferenceSession(str(tmp_path / "m" / "sum.onnx"))
        sums = session.run(None, {"x": x})[0].reshape(-1).astype(np.float64)
        error = np.abs(sums - y.astype(np.float64))
        assert run["mae"] == pytest.approx(float(error.mean()), rel=1e-12)
        assert run["max_error"] == pytest.approx(float(error.max()), rel=1e-12)
        # the rerun verdict and the lists know it through the registry
        assert accuracy_verdict(run, dict(run), "regression") == (
            f"accuracy identical (MAE {run['mae']:.4f})"
        )
        found = registry.headline(run, "regression")
        assert found is not None and found[1].label == "MAE"
    finally:
        ws.close()


def test_a_label_format_no_task_reads_and_a_task_of_another_format_are_refused(
    tmp_path: Path, with_regression: None
) -> None:
    x = np.zeros((2, 2, 2, 1), dtype=np.float32)
    doc = _values_dataset(tmp_path, x, np.zeros(2, dtype=np.float32))
    with pytest.raises(ManifestError, match=r"must be one of .*value-npy.*; got 'values-npy'"):
        parse_manifest({**doc, "labels": {"format": "values-npy", "path": "y.npy"}})
    with pytest.raises(ManifestError, match="labels of format value-npy go with task regression"):
        parse_manifest({**doc, "task": "classification"})
    with pytest.raises(ManifestError, match="unknown task 'regresion'"):
        parse_manifest({**doc, "task": "regresion"})


def test_without_its_registry_line_the_task_is_unknown(tmp_path: Path) -> None:
    doc = _values_dataset(tmp_path, np.zeros((2, 2, 2, 1), np.float32), np.zeros(2, np.float32))
    with pytest.raises(ManifestError, match="unknown task 'regression'; known: classification"):
        parse_manifest(doc)


def test_every_registered_task_loads_and_declares_distinct_label_formats() -> None:
    owners: dict[str, str] = {}
    for task in registry.tasks():
        assert (task.name in registry.TASKS and task.metrics) or task.name == "other"
        for fmt in task.label_formats:
            if task.name != "other":  # `other` reads classification's labels, as it always did
                assert fmt not in owners, f"{fmt} read by {owners.get(fmt)} and {task.name}"
                owners[fmt] = task.name
        for metric in task.metrics:
            assert metric.name.replace("_", "").isalnum() and metric.name.islower()


def test_the_docs_task_table_lists_every_published_task_its_formats_and_metrics() -> None:
    text = (Path(__file__).parent.parent / "docs" / "tasks.md").read_text()
    for task in registry.tasks():
        if not task.publishable:
            continue
        row = next((r for r in text.splitlines() if r.startswith(f"| `{task.name}` |")), None)
        assert row is not None, f"docs/tasks.md's task table has no row for {task.name}"
        formats, metrics = row.split("|")[2:4]
        assert [f.strip(" `") for f in formats.split(",")] == list(task.label_formats)
        headline = [m.name for m in task.metrics if m.headline]
        assert [m.strip(" `") for m in metrics.split(",")][:1] == headline[:1]


def test_an_unknown_task_of_any_length_is_named_in_at_most_64_characters() -> None:
    """A hand-edited lockfile's task has no manifest bound: its error echoes a bounded part."""
    with pytest.raises(registry.UnknownTask) as caught:
        registry.task("x" * 100_000)
    assert len(str(caught.value)) < 400 and "(100000 characters)" in str(caught.value)


def test_every_built_in_task_declares_its_metrics_as_data() -> None:
    """Issue 83, item 7: what names a run's metrics reads each task's ``declared`` module
    (``tasks.metrics``), never the task: the two agree, task by task, in the registry's order."""
    from pinbench.tasks import metrics

    assert list(metrics.DECLARED) == list(registry.TASKS)
    for name in registry.TASKS:
        assert metrics.declared(name) == registry.task(name).metrics, name


def test_every_built_in_task_declares_its_datasets_as_data() -> None:
    """Issue 83, item 7: what checks a dataset's labels against its task (a manifest, each
    stored lockfile read) reads each task's ``declared`` module (``tasks.datasets``), never the
    task: the two agree, task by task, in the registry's order."""
    from pinbench.tasks import datasets

    assert list(datasets.DECLARED) == list(registry.TASKS)
    for name in registry.TASKS:
        chosen, declared = registry.task(name), datasets.declared(name)
        assert declared is not None and chosen.datasets == declared, name
        assert (chosen.label_formats, chosen.by_file_name) == (
            declared.formats,
            declared.by_file_name,
        ), name
        assert (chosen.generates, chosen.publishable) == (
            declared.generates,
            declared.publishable,
        ), name
        assert set(declared.refuses) <= set(datasets.LABEL_FIELDS), name


# Checks a dataset of each built-in task (its first label format) as a stored lockfile's is
# checked, then prints the modules that took.
CHECKING = """
import json, sys
from pinbench.registry.checks import checks
from pinbench.registry.dataset_manifest import LabelFormat
from pinbench.tasks import datasets
for name in datasets.DECLARED:
    declared = datasets.declared(name)
    fmt = declared.formats[0]
    path = None if "path" in declared.refuses or fmt == "imagefolder" else "labels"
    image = fmt == "reference-image-npy"  # its references' value range is needed
    labels = LabelFormat(format=fmt, path=path, classes=2 if fmt == "masks" else None,
                         data_range=1.0 if image else None)
    checks().check_labels(name, labels, per_file=True)
    checks().generates(name)
print(json.dumps(sorted(sys.modules)))
"""


def test_checking_a_dataset_of_every_task_imports_no_task_nor_numpy() -> None:
    """Issue 83, item 7: a stored lockfile's dataset is checked against its task whenever the
    lockfile is read (``runs list`` reads one of each kind): from the declarations, importing
    no task's code and no NumPy (before, each check imported its task, and most tasks NumPy)."""
    import json
    import subprocess
    import sys

    proc = subprocess.run(
        [sys.executable, "-c", CHECKING], capture_output=True, text=True, check=True
    )
    modules = set(json.loads(proc.stdout))
    code = sorted(
        m
        for m in modules
        if m.startswith("pinbench.tasks.") and m.count(".") > 2 and not m.endswith(".declared")
    )
    assert code == ["pinbench.tasks.detection.stats"]  # the names of detection's statistics
    assert not {"numpy", "scipy"} & modules
