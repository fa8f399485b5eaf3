"""The benchmark table takes its accuracy from the accuracy run's task: its exact metrics
(``accuracy.json``, whose bytes ``dvc.lock`` pins: the same keys as before tasks were a
registry) and its headline metric as the task shows it."""

from __future__ import annotations

from pinbench import catalog as builtin
from pinbench.benchmark.jobs import Job
from pinbench.benchmark.table import accuracy, cells, rows
from pinbench.evaluator.history import show_run
from pinbench.evaluator.run import run_lockfile
from pinbench.registry import service
from pinbench.registry.request import parse_request
from pinbench.workspace import Workspace


def test_accuracy_is_the_tasks_exact_metrics_and_its_headline(digits: Workspace) -> None:
    model, dataset = f"{builtin.MODEL_NAME}@1.1.0", f"{builtin.DATASET_NAME}@1"
    request = {"model": model, "dataset": dataset, "scenario": {"mode": "accuracy"}}
    lock = service.lock(digits, parse_request(request))[0]
    run = show_run(digits, run_lockfile(digits, lock, say=lambda text: None).id)
    job = Job(builtin.MODEL_NAME, "onnxruntime", builtin.DATASET_NAME, "accuracy", "1.1.0")
    table = rows([(job, run)])
    assert accuracy(table) == {
        "onnxruntime": {model: {"top1": run["top1"], "top5": run["top5"], "samples": 450}}
    }
    assert run["accuracy_samples_count"] == run["samples_count"] == 450
    assert cells(table[0])[2] == f"top-1 {run['top1']:.4f} (450 samples)"
