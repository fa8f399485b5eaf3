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


def test_the_demos_table_names_loadgens_figures_and_marks_an_invalid_run() -> None:
    """Issue 64, items 6 and 9: the demo's ResNet-50 SingleStream runs were LoadGen-INVALID
    (16 queries where 64 are needed) and the table printed their p50/p99 unmarked and unnamed.
    Each column says whose figure it is; an INVALID run's figures carry the mark."""
    from pinbench.benchmark.table import HEADER

    def run(scenario: str, valid: float, **metrics: float) -> tuple[Job, dict[str, object]]:
        job = Job("vision/resnet50", "onnxruntime", "imagenet", scenario)
        return job, {"loadgen_valid_bool": valid, **metrics}

    table = rows(
        [
            run("SingleStream", 0.0, latency_p50_ns=42_800.0, latency_p99_ns=1_250_000.0),
            run("Offline", 1.0, throughput_sps=11_934.5),
        ]
    )
    assert HEADER[3:] == ("SingleStream p50 (LoadGen)", "p99 (LoadGen)", "Offline (LoadGen)")
    assert cells(table[0])[3:] == ("42.8 µs INVALID", "1.25 ms INVALID", "11,934 samples/s")
