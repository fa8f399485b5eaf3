"""Every metric a run recorded is shown: ``pinbench run`` and ``runs show`` print each with its
task's label (a metric no task declares by its key), and ``runs list`` names each run's kind
(an operator or training run is no "SingleStream performance") and its task's headline metric
(mIoU for segmentation, top-1 for classification...)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from pinbench.evaluator.records.run_view import show_run
from pinbench.evaluator.run import queue_run, run_lockfile
from pinbench.registry import service
from pinbench.registry.manifest import load_manifest
from pinbench.registry.publish import publish
from pinbench.registry.request import parse_request
from pinbench.run_metrics import headline, kind_label, metric_rows
from tests.helpers import Cli, Home, in_process_cli, published_home, run_digits
from tests.test_segmentation import dataset_yaml, expected_metrics, model_yaml, red

TRAINING = {
    "model": "vision/digits-cnn-torch@^1",
    "dataset": "sklearn-digits-train@^1",
    "framework": "torch@*",
    "training": {"validation": "sklearn-digits-test@^1", "epochs": 1, "target_top1": 0.5},
}
OPERATOR = {
    "operator": {"op": "matmul", "params": {"m": 16, "n": 16, "k": 16}, "samples": 5},
    "framework": "onnxruntime@*",
    "threads": 1,
}


@dataclass
class Runs:
    home: Home
    root: Path
    classification: str
    operator: str
    training: str


def _quiet(_: str) -> None:
    pass


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory, cnn_catalog_dir: Path) -> Iterator[Runs]:
    """The digits catalog and CNNs, a segmentation dataset and model published; an accuracy
    run of the digits logistic regression, an operator run, and a training run queued (as a
    server's queue holds it)."""
    root = tmp_path_factory.mktemp("metrics-shown")
    with published_home(root, cnn_catalog_dir) as home:
        ws = home.ws
        for path in (
            dataset_yaml(root),
            model_yaml(root, "logits-letterbox", "logits", {"letterbox": {"size": [48, 48]}}),
        ):
            publish(ws, load_manifest(path), manifest_dir=root, publisher="test")
        classification = run_digits(ws)
        operator = run_lockfile(ws, service.lock(ws, parse_request(OPERATOR))[0], say=_quiet).id
        training = "0badc0de-0000-4000-8000-000000000001"
        queue_run(ws, service.lock(ws, parse_request(TRAINING))[0], runner="local", run_id=training)
        yield Runs(home, root, classification, operator, training)


@pytest.fixture
def cli(runs: Runs, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Cli:
    return in_process_cli(monkeypatch, capsys, runs.home.home, runs.home.db)


def _segmentation_run(cli: Cli, root: Path) -> tuple[str, str]:
    """``pinbench run`` of the segmentation model's accuracy run: its id and what it printed."""
    request = root / "segmentation.yaml"
    request.write_text(
        yaml.safe_dump(
            {
                "model": "test/logits-letterbox@1",
                "dataset": "test/shapes@1",
                "scenario": {"mode": "accuracy"},
            }
        )
    )
    lock = root / "segmentation.lock"
    assert cli("lock", str(request), "-o", str(lock)).code == 0
    ran = cli("run", str(lock), "--runner", "local")
    assert ran.code == 0, ran.err
    newest = json.loads(cli("runs", "list", "--json").out)[0]
    return str(newest["id"]), ran.out


def _row(text: str, label: str) -> str:
    """The value on the line of ``text`` whose first cell is ``label``."""
    for line in text.splitlines():
        cells = [c for c in line.strip().split("  ") if c]
        if cells and cells[0].strip() == label:
            return cells[1].strip()
    raise AssertionError(f"no row {label!r} in:\n{text}")


def test_run_runs_show_and_runs_list_show_the_tasks_metrics(cli: Cli, runs: Runs) -> None:
    segmentation, printed = _segmentation_run(cli, runs.root)
    miou, pixel_accuracy = expected_metrics(red)  # computed with NumPy from the masks
    shown = cli("runs", "show", segmentation[:8])
    assert shown.code == 0, shown.err
    for text in (printed, shown.out):  # `pinbench run` prints what `runs show` does
        assert _row(text, "mIoU") == f"{miou:.4f}"
        assert _row(text, "pixel accuracy") == f"{pixel_accuracy:.4f}"
        assert _row(text, "samples scored") == "3"
    assert "miou" not in shown.out  # its label, not its key
    # a metric no task declares is printed in words with its key beside, in its unit
    assert _row(shown.out, "samples answered (samples_count)") == "3"  # words, key beside
    assert _row(shown.out, "framework calls") == "3"  # a count named by whose it is

    listed = cli("runs", "list")
    assert listed.code == 0, listed.err
    header, *rows = listed.out.splitlines()
    assert "accuracy" in header
    lines = {line.split()[0]: line for line in rows}
    top1 = show_run(runs.home.ws, runs.classification)["top1"]
    assert "SingleStream accuracy" in lines[runs.classification[:8]]
    assert f"top-1 {top1:.4f}" in lines[runs.classification[:8]]
    assert f"mIoU {miou:.4f}" in lines[segmentation[:8]]
    for run, kind in ((runs.operator, "operator"), (runs.training, "training")):
        assert f"  {kind}" in lines[run[:8]]  # its own column (the line may end with it)
        assert "SingleStream" not in lines[run[:8]]  # what they were listed as
    as_json = {r["id"]: r for r in json.loads(cli("runs", "list", "--json").out)}
    kinds = [as_json[r]["kind"] for r in (runs.operator, runs.training, segmentation)]
    assert kinds == ["operator", "training", "inference"]
    assert as_json[segmentation]["task"] == "segmentation"


def test_runs_show_prints_the_per_sample_rows_its_task_recorded(cli: Cli, runs: Runs) -> None:
    recorded = show_run(runs.home.ws, runs.classification)["details"]["samples"]
    shown = cli("runs", "show", runs.classification)
    assert shown.code == 0, shown.err
    lines = shown.out.splitlines()
    start = lines.index(f"first 10 predictions (of {len(recorded)} recorded)")
    assert lines[start + 1].split() == ["sample", "truth", "top1", "score"]
    for line, row in zip(lines[start + 2 : start + 12], recorded[:10], strict=True):
        cells = line.split()
        assert cells[:3] == [str(row["sample"]), str(row["truth"]), str(row["top1"])]
        assert (cells[-1] == "x") is (not row["right"])  # a wrong prediction is marked


@pytest.mark.parametrize(
    ("run", "rows", "headline_text"),
    [
        (  # detection: COCO's names, as its task labels them
            {"task": "detection", "metrics": {"map": 0.5, "map50": 0.75, "detections_count": 12}},
            [("mAP", "0.5000"), ("mAP@.5", "0.7500"), ("detections", "12")],
            "mAP 0.5000",
        ),
        (  # a statistic left out as undefined: in its place, with its reason (decision 165)
            {
                "task": "detection",
                "metrics": {"map": 0.5, "recall": 0.25},
                "details": {"undefined_metrics": {"map_small": "no small object"}},
            },
            [("mAP", "0.5000"), ("mAP small", "undefined: no small object"), ("AR@100", "0.2500")],
            "mAP 0.5000",
        ),
        (  # several classification outputs: each metric says its output
            {"task": "classification", "metrics": {"top1_probs": 0.25, "top5_probs": 1.0}},
            [("top-1 (top1_probs)", "0.2500"), ("top-5 (top5_probs)", "1.0000")],
            "",  # no plain top1: no headline
        ),
        (  # a key no task declares: its key and its recorded unit
            {"task": None, "units": {"warmup_s": "s"}, "warmup_s": 1.5},
            [("warmup_s", "1.5 s")],
            "",
        ),
        (  # a task this pinbench does not know: keys as they are
            {"task": "someday", "metrics": {"wobble": 0.125}},
            [("wobble", "0.125")],
            "",
        ),
    ],
)
def test_metric_rows(run: dict[str, Any], rows: list[tuple[str, str]], headline_text: str) -> None:
    assert metric_rows(run) == rows
    assert headline(run) == headline_text


def test_report_metrics_follow_the_task_and_say_undefined() -> None:
    """Reports and the web UI's run page (``reports.view``): a task's metrics in the order it
    declares them, labelled beside their keys; a run's cell for a metric it left out as
    undefined says so, one whose run has no such metric is empty."""
    from pinbench.reports.data import Report, RunData
    from pinbench.reports.view import metric_table

    def run(metrics: dict[str, float], undefined: dict[str, str]) -> RunData:
        units = dict.fromkeys(metrics, "ratio") | {"latency_p50_ns": "ns"}
        info = {
            "task": "detection",
            "metrics": metrics | {"latency_p50_ns": 2e6},
            "units": units,
            "details": {"undefined_metrics": undefined},
        }
        return RunData(info, None)

    both = [
        run({"map": 0.5, "map_small": 0.25, "recall": 0.75}, {}),
        run({"map": 0.5, "recall": 0.5}, {"map_small": "no small object"}),
        run({"top1": 0.5}, {}),
    ]
    rows = metric_table(Report(both, "now"))
    assert [(r.metric, r.values) for r in rows] == [
        ("mAP (map)", ["0.5", "0.5", ""]),
        ("mAP small (map_small)", ["0.25", "undefined", ""]),
        ("AR@100 (recall)", ["0.75", "0.5", ""]),
        ("p50 latency, LoadGen (latency_p50_ns)", ["2.00", "2.00", "2.00"]),  # in ms
        ("top-1 (top1)", ["", "", "0.5"]),  # a metric named by the task that declares it
    ]


@pytest.mark.parametrize(
    ("run", "label"),
    [
        (
            {"kind": "inference", "scenario": "Offline", "mode": "performance"},
            "Offline performance",
        ),
        ({"kind": "training", "scenario": "SingleStream", "mode": "performance"}, "training"),
        (
            {"kind": "training", "distributed": {"scheme": "ddp", "workers": 4}},
            "training (ddp, 4 workers)",
        ),
        (
            {
                "kind": "training",
                "distributed": {"scheme": "mavg", "workers": 1, "average_every": 8},
            },
            "training (mavg every 8 steps, 1 worker)",
        ),
        ({"kind": "operator", "scenario": "SingleStream", "mode": "performance"}, "operator"),
    ],
)
def test_kind_label(run: dict[str, Any], label: str) -> None:
    assert kind_label(run) == label


@pytest.mark.parametrize(
    "details",
    [
        {"loadgen": "x"},
        {"loadgen": [1]},
        {"loadgen": {"invalid_reasons": "one"}},
        {"machine": {"load_1m": "ab"}},
        {"machine": {"load_1m": [None, "x"]}},
        {"machine": {"load_1m": 5}},
        {"machine": "x"},
    ],
)
def test_a_runs_figures_survive_details_of_the_wrong_shape(details: dict[str, object]) -> None:
    """An attacker's review of issue 64: a worker writes a run's details; a LoadGen log or
    machine readings of another shape must not break `runs show` or the web UI's run page."""
    from pinbench.run_figures import figures

    shown = figures({"contended_bool": 1.0, "machine_others_cpu_ratio": 0.3, "details": details})
    assert shown.busy.startswith("other processes took 30%")
    assert all(isinstance(r, str) for r in shown.invalid)
