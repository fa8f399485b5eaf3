"""The benchmark table takes its accuracy from the accuracy run's task: its exact metrics
(``accuracy.json``, whose bytes ``dvc.lock`` pins: the same keys as before tasks were a
registry) and its headline metric as the task shows it."""

from __future__ import annotations

from pinbench import catalog as builtin
from pinbench.benchmark.jobs import Job
from pinbench.benchmark.table import accuracy, cells, rows
from pinbench.evaluator.records.run_view import show_run
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


def test_an_invalid_figure_is_said_under_the_table_with_loadgens_reason() -> None:
    """Issue 72, item 6: the demo's headline table showed INVALID for both ResNet-50
    SingleStream figures with no word of why. Each INVALID figure gets a line under the table
    (the demo's and the Markdown one): whose, which scenario, and LoadGen's reason with the
    setting that governs it, as the run recorded it."""
    from pinbench.benchmark.table import invalid_notes, markdown

    reason = (
        "min_queries not met: LoadGen issued fewer queries than scenario.min_query_count "
        "(raise min_duration_ms)"
    )
    job = Job("vision/resnet50", "onnxruntime", "imagenet", "SingleStream")
    invalid = {
        "loadgen_valid_bool": 0.0,
        "latency_p50_ns": 42_800.0,
        "details": {"loadgen": {"invalid_reasons": [reason]}},
    }
    unexplained = {"loadgen_valid_bool": 0.0, "latency_p50_ns": 1.0}
    valid = Job("vision/digits", "onnxruntime", "digits", "SingleStream")
    table = rows(
        [
            (job, invalid),
            (Job("vision/cnn", "torch", "digits", "Offline"), unexplained),
            (valid, {"loadgen_valid_bool": 1.0, "latency_p50_ns": 2.0}),
        ]
    )
    assert invalid_notes(table) == [
        f"INVALID: onnxruntime vision/resnet50 SingleStream: {reason}",
        "INVALID: torch vision/cnn Offline: no reason logged",
    ]
    assert markdown(table).endswith(
        f"\n\n- INVALID: onnxruntime vision/resnet50 SingleStream: {reason}\n"
        "- INVALID: torch vision/cnn Offline: no reason logged\n"
    )
