"""Reports of operator (L0) and training (L2) runs: the operator table, the roofline and its
measured roofs, the time-to-accuracy table and curves, and reports mixing them with
inference runs (issue 22, item 4).

Runs are recorded as the contract of issue 22 says (details, metrics, units), inserted as
SQL rows beside a stored lockfile, plus one real inference run for the mixed report."""

from __future__ import annotations

import dataclasses
import json
import re
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from pinbench import catalog as builtin
from pinbench import reports
from pinbench.db.models import Result, Run
from pinbench.evaluator.records.run_view import show_run
from pinbench.evaluator.run import run_lockfile
from pinbench.metric_names import fmt_sig
from pinbench.registry import service
from pinbench.registry.lockfile import Lockfile
from pinbench.registry.locking import store_lockfile
from pinbench.registry.request import parse_request
from pinbench.reports.data import Report
from pinbench.reports.hardware import system_label
from pinbench.reports.operators import describe, operator_table, roofline, roofs
from pinbench.reports.render import md_text
from pinbench.reports.training import training_curves, training_table
from pinbench.reports.view import build
from pinbench.workspace import Workspace
from tests.helpers import published_workspace

CONV = {
    "op": "conv2d",
    "params": {
        "n": 1,
        "c": 64,
        "h": 56,
        "w": 56,
        "out_channels": 64,
        "kernel_h": 3,
        "kernel_w": 3,
        "stride": 1,
        "padding": 1,
        "dilation": 1,
        "groups": 1,
        "layout": "NCHW",
    },
    "dtype": "float32",
    "direction": "forward",
    "seed": 0,
}
MATMUL = {
    "op": "matmul",
    "params": {"m": 512, "n": 512, "k": 512, "trans_a": False, "trans_b": False},
    "dtype": "float32",
    "direction": "forward",
    "seed": 0,
}
BMM = {
    "op": "batch_matmul",
    "params": {"b": 8, "m": 64, "n": 64, "k": 64},
    "dtype": "float32",
    "direction": "forward",
    "seed": 0,
}
RELU = {
    "op": "relu",
    "params": {"shape": [8, 1024]},
    "dtype": "float32",
    "direction": "forward",
    "seed": 0,
}


def _lockfile(ws: Workspace) -> Lockfile:
    # TODO(integrator): lock a training request once it can be locked; until then the training
    # rows carry the contract's details on an inference lockfile (the reports read the details).
    request = parse_request(
        {
            "model": f"{builtin.MODEL_NAME}@^1",
            "dataset": f"{builtin.DATASET_NAME}@1",
            "threads": 1,
        }
    )
    lock = service.lock_points(ws, request)[0][0]
    with ws.transaction() as session:
        store_lockfile(session, lock)
    return lock


def _operator_lock(ws: Workspace, spec: dict[str, Any], framework: str) -> Lockfile:
    """A real operator lockfile (model and dataset None) for ``spec`` on ``framework``."""
    request = {"operator": spec, "framework": f"{framework}@*", "threads": 1}
    return service.lock(ws, parse_request(request))[0]


def _insert(
    ws: Workspace,
    lock: Lockfile,
    *,
    host: dict[str, Any],
    details: dict[str, Any],
    metrics: dict[str, tuple[float, str]],
    error: str | None = None,
    system: str | None = None,
) -> str:
    run_id = str(uuid.uuid4())
    now = datetime.now(UTC)
    with ws.transaction() as session:
        session.add(
            Run(
                id=run_id,
                lockfile_digest=lock.digest.hex,
                status="failed" if error else "succeeded",
                runner="local",
                started_at=now,
                finished_at=now,
                host=host,
                error=error,
                details=details,
                system=system,
                results=[Result(metric=m, value=v, unit=u) for m, (v, u) in metrics.items()],
            )
        )
    return run_id


def _op(
    ws: Workspace,
    host: dict[str, Any],
    spec: dict[str, Any],
    framework: str,
    *,
    median_ns: float,
    flops: int,
    nbytes: int,
    rel: float | None = 1e-6,
    valid: bool = True,
) -> str:
    """An operator run recorded as contract 22 says; ``valid=False`` is a failed run outside
    tolerance (no achieved_* metrics, no speed in details)."""
    reason = None if valid else f"max rel error {rel} > rtol 1e-4"
    flops_per_s, bytes_per_s = flops / (median_ns / 1e9), nbytes / (median_ns / 1e9)
    result = {
        "spec": spec,
        "framework": framework,
        "framework_version": "1.0",
        "threads": 1,
        "warmup": 10,
        "median_ns": median_ns,
        "p90_ns": median_ns * 1.1,
        "flops": flops,
        "bytes": nbytes,
        "intensity": flops / nbytes,
        "flops_per_s": flops_per_s if valid else None,
        "bytes_per_s": bytes_per_s if valid else None,
        "validation": {
            "max_abs_error": None if rel is None else rel * 3,
            "max_rel_error": rel,
            "valid": valid,
            "rtol": 1e-4,
            "atol": 1e-5,
            "reason": reason,
        },
        "inputs_digest": "ab" * 32,
    }
    metrics: dict[str, tuple[float, str]] = {
        "latency_p50_ns": (median_ns, "ns"),
        "latency_p90_ns": (median_ns * 1.1, "ns"),
        "queries_count": (100.0, "count"),
        "valid_bool": (1.0 if valid else 0.0, "bool"),
        "intensity_flop_per_byte": (flops / nbytes, "FLOP/B"),
    }
    if valid:
        metrics["achieved_flop_per_s"] = (flops_per_s, "FLOP/s")
        metrics["achieved_byte_per_s"] = (bytes_per_s, "B/s")
    if rel is not None:
        metrics["max_rel_error"] = (rel, "")
    error = None if valid else f"outside tolerance: {reason}"
    lock = _operator_lock(ws, spec, framework)
    return _insert(ws, lock, host=host, details={"operator": result}, metrics=metrics, error=error)


def _train(
    ws: Workspace,
    lock: Lockfile,
    host: dict[str, Any],
    framework: str,
    top1: list[float],
    target: float,
    *,
    tta_s: float | None,
) -> str:
    """A training run (contract 22): a run whose target was never reached is a failed run."""
    epochs = [
        {
            "epoch": e + 1,
            "train_loss": 2.0 / (e + 1),
            "train_s": 1.5,
            "samples_per_s": 1000.0 + e,
            "val_loss": 1.0 / (e + 1),
            "val_top1": t,
            "eval_s": 0.25,
        }
        for e, t in enumerate(top1)
    ]
    reached = next((e + 1 for e, t in enumerate(top1) if t >= target), None)
    training = {
        "framework": framework,
        "epochs": epochs,
        "target_top1": target,
        "reached_epoch": reached,
        "deterministic": True,
        "weights_sha256": ("0123456789ab" + framework).ljust(64, "f")[:64],
        "weights_format": "safetensors",
    }
    metrics = {
        "train_time_s": (1.5 * len(top1), "s"),
        "eval_time_s": (0.25 * len(top1), "s"),
        "throughput_sps": (1000.0 + (len(top1) - 1) / 2, "samples/s"),
        "final_top1": (top1[-1], ""),
        "best_top1": (max(top1), ""),
        "epochs_count": (float(len(top1)), "count"),
        "final_loss": (2.0 / len(top1), ""),
    }
    error = None
    if tta_s is not None:
        metrics["time_to_accuracy_s"] = (tta_s, "s")
    else:
        error = f"target top1 {target} not reached after {len(top1)} epochs (best {max(top1)})"
    return _insert(
        ws, lock, host=host, details={"training": training}, metrics=metrics, error=error
    )


@dataclass
class Runs:
    ws: Workspace
    conv: dict[str, str]
    """framework -> conv2d run; tensorflow's is invalid (outside tolerance)."""
    matmul: dict[str, str]
    bmm: str
    relu: str
    train: dict[str, str]
    """torch reached its target at epoch 2; tensorflow never did."""
    inference: str
    """A real SingleStream run of the digits logreg."""
    local: str
    """The system every run here ran on: this machine (the inference run's host)."""


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory, cnn_catalog_dir: Path) -> Iterator[Runs]:
    root = tmp_path_factory.mktemp("levels")
    ws = published_workspace(root, cnn_catalog_dir)  # onnxruntime, torch and tensorflow
    request = {
        "model": f"{builtin.MODEL_NAME}@^1",
        "dataset": f"{builtin.DATASET_NAME}@1",
        "threads": 1,
        "scenario": {"min_duration_ms": 100, "min_query_count": 20},
    }
    inference = run_lockfile(
        ws, service.lock_points(ws, parse_request(request))[0][0], say=lambda _: None
    ).id
    info = show_run(ws, inference)
    host = info["host"]
    lock = _lockfile(ws)
    conv_flops, conv_bytes = 2 * 64 * 56 * 56 * 64 * 9, 4 * (64 * 56 * 56 * 2 + 64 * 64 * 9)
    conv = {
        "torch": _op(ws, host, CONV, "torch", median_ns=2.5e6, flops=conv_flops, nbytes=conv_bytes),
        "onnxruntime": _op(
            ws,
            host,
            CONV,
            "onnxruntime",
            median_ns=3.0e6,
            flops=conv_flops,
            nbytes=conv_bytes,
        ),
        "tensorflow": _op(
            ws,
            host,
            CONV,
            "tensorflow",
            median_ns=1.0e6,
            flops=conv_flops,
            nbytes=conv_bytes,
            rel=0.5,
            valid=False,
        ),
    }
    mm_flops, mm_bytes = 2 * 512**3, 4 * 3 * 512 * 512
    matmul = {
        "torch": _op(ws, host, MATMUL, "torch", median_ns=4.0e6, flops=mm_flops, nbytes=mm_bytes),
        "onnxruntime": _op(
            ws, host, MATMUL, "onnxruntime", median_ns=2.0e6, flops=mm_flops, nbytes=mm_bytes
        ),
    }
    bmm = _op(ws, host, BMM, "torch", median_ns=5e4, flops=2 * 8 * 64**3, nbytes=4 * 3 * 8 * 64**2)
    relu = _op(ws, host, RELU, "torch", median_ns=2e3, flops=8 * 1024, nbytes=4 * 2 * 8 * 1024)
    train = {
        "torch": _train(ws, lock, host, "torch", [0.8, 0.96, 0.97], 0.95, tta_s=3.25),
        "tensorflow": _train(ws, lock, host, "tensorflow", [0.7, 0.9, 0.93], 0.95, tta_s=None),
    }
    yield Runs(ws, conv, matmul, bmm, relu, train, inference, system_label(info))
    ws.close()


def _ops(r: Runs) -> list[str]:
    return [*r.conv.values(), *r.matmul.values(), r.bmm, r.relu]


def _specs(page: str) -> dict[str, dict[str, Any]]:
    found = re.findall(
        r'<script type="application/json" class="chart-spec" data-chart="(\w+)">(.*?)</script>',
        page,
        re.S,
    )
    return {key: json.loads(text) for key, text in found}


def test_operator_table_rows_and_framework_columns(runs: Runs) -> None:
    table = operator_table(reports.gather(runs.ws, _ops(runs)))
    assert table is not None and not table.show_system
    assert table.frameworks == ["torch", "onnxruntime", "tensorflow"]
    specs = [row.spec for row in table.rows]
    assert specs == [describe(s) for s in (CONV, MATMUL, BMM, RELU)]
    assert specs[0] == (
        "conv2d n=1 c=64 h=56 w=56 k=64 r=3 s=3 stride=1 pad=1 dil=1 groups=1 layout=NCHW "
        "float32 forward"
    )
    assert specs[3] == "relu shape=8x1024 float32 forward"
    torch, ort, tf = table.rows[0].cells
    assert torch is not None and ort is not None and tf is not None
    assert (torch.median, torch.valid, torch.mark) == ("2.5 ms", True, "✓")
    conv_flops = 2 * 64 * 56 * 56 * 64 * 9
    assert torch.gflops == fmt_sig(conv_flops / 2.5e-3 / 1e9)
    assert ort.median == "3 ms"
    assert table.rows[3].cells[0] is not None and table.rows[3].cells[0].median == "2 µs"
    # Frameworks that did not run a spec leave their cells empty.
    assert table.rows[2].cells[1:] == [None, None]


def test_an_invalid_operator_run_shows_no_speed(runs: Runs) -> None:
    report = reports.gather(runs.ws, list(runs.conv.values()))
    table = operator_table(report)
    assert table is not None
    tf = table.rows[0].cells[2]
    assert tf is not None and tf.run_id == runs.conv["tensorflow"]
    assert (tf.valid, tf.mark, tf.median, tf.gflops) == (False, "✗", "", "")
    assert tf.max_rel_error == "0.5" and "> rtol" in tf.reason
    # Nor on the roofline: the invalid run is the fastest of the three, yet absent.
    chart = roofline(report)
    assert chart.spec is not None
    points = chart.spec["layer"][-1]["data"]["values"]
    assert sorted(p["framework"] for p in points) == ["onnxruntime", "torch"]
    text = reports.render(report, "md")[1].decode()
    row = next(line for line in text.splitlines() if line.startswith("| conv2d"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[-4:] == ["", "", "0.5", md_text(f"✗ {tf.reason}")]  # tensorflow's group


def test_roofs_are_the_best_valid_matmul_and_bandwidth(runs: Runs) -> None:
    report = reports.gather(runs.ws, _ops(runs))
    found, missing = roofs(report)
    assert missing == [] and list(found) == [runs.local]
    roof = found[runs.local]
    recorded = [r.info["details"]["operator"] for r in report.runs]
    valid = [d for d in recorded if d["validation"]["valid"]]
    matmuls = [d["flops_per_s"] for d in valid if d["spec"]["op"] in ("matmul", "batch_matmul")]
    assert roof.peak_flop_per_s == max(matmuls)
    assert roof.peak_flop_per_s == 2 * 512**3 / 2.0e-3  # onnxruntime's matmul
    assert roof.bandwidth_byte_per_s == max(d["bytes_per_s"] for d in valid)
    assert "onnxruntime" in roof.peak_from and runs.matmul["onnxruntime"][:8] in roof.peak_from
    chart = roofline(report)
    assert chart.spec is not None and chart.caption is not None
    peak = fmt_sig(roof.peak_flop_per_s / 1e9)
    assert chart.caption.startswith(f"peak {peak} GFLOP/s from matmul")
    line = chart.spec["layer"][0]["data"]["values"]
    assert max(p["gflops"] for p in line) == pytest.approx(roof.peak_flop_per_s / 1e9)
    for p in line:  # y = bandwidth * x, capped by the peak
        expected = min(roof.peak_flop_per_s, roof.bandwidth_byte_per_s * p["intensity"])
        assert p["gflops"] == pytest.approx(expected / 1e9)
    assert any(p["intensity"] == pytest.approx(roof.ridge) for p in line)
    axes = chart.spec["layer"][1]["encoding"]
    assert axes["x"]["scale"]["type"] == axes["y"]["scale"]["type"] == "log"


def test_no_matmul_no_roof_and_the_caption_says_so(runs: Runs) -> None:
    chart = roofline(reports.gather(runs.ws, [*runs.conv.values(), runs.relu]))
    assert chart.spec is not None and chart.caption is not None
    assert "no roof" in chart.caption and "matmul" in chart.caption
    assert len(chart.spec["layer"]) == 1  # the points, no roof line
    none = roofline(reports.gather(runs.ws, [runs.conv["tensorflow"]]))
    assert none.spec is None and none.reason is not None and "no valid operator" in none.reason


def test_roofs_per_system(runs: Runs) -> None:
    """Runs on two systems: each system's roof comes from its own runs."""
    report = reports.gather(runs.ws, _ops(runs))
    moved = [
        dataclasses.replace(r, info={**r.info, "system": "gpu1"})
        if r.id == runs.matmul["torch"]
        else r
        for r in report.runs
    ]
    found, missing = roofs(Report(moved, report.created_at))
    assert found["gpu1"].peak_flop_per_s == 2 * 512**3 / 4.0e-3
    assert found[runs.local].peak_flop_per_s == 2 * 512**3 / 2.0e-3
    assert missing == []
    table = operator_table(Report(moved, report.created_at))
    assert table is not None and table.show_system
    assert {row.system for row in table.rows} == {"gpu1", runs.local}


def test_training_table_and_not_reached(runs: Runs) -> None:
    report = reports.gather(runs.ws, list(runs.train.values()))
    torch, tf = training_table(report)
    assert (torch.framework, torch.run_id) == ("torch", runs.train["torch"])
    assert (torch.target, torch.reached, torch.time_to_accuracy_s) == ("0.95", "2", "3.25")
    assert (torch.eval_s, torch.samples_per_s, torch.final_top1) == ("0.75", "1,001", "0.9700")
    assert torch.weights == "0123456789ab"
    assert tf.reached == tf.time_to_accuracy_s == "not reached after 3 epochs"
    assert tf.final_top1 == "0.9300"
    text = reports.render(report, "md")[1].decode()
    assert "## Training: time to accuracy" in text
    assert f"| tensorflow | {runs.train['tensorflow'][:8]} | 0.95 | not reached after 3" in text


def test_training_curves_one_line_per_run(runs: Runs) -> None:
    chart = training_curves(reports.gather(runs.ws, list(runs.train.values())))
    assert chart.spec is not None
    rows = chart.spec["data"]["values"]
    label = f"torch {runs.train['torch'][:8]}"
    top1 = [r["value"] for r in rows if r["run"] == label and r["measure"] == "val_top1"]
    assert top1 == [0.8, 0.96, 0.97]
    loss = [r["value"] for r in rows if r["run"] == label and r["measure"] == "train_loss"]
    assert loss == pytest.approx([2.0, 1.0, 2.0 / 3])
    assert len({r["run"] for r in rows}) == 2


def test_a_mixed_report_renders_html_and_markdown(runs: Runs) -> None:
    ids = [runs.inference, *_ops(runs), *runs.train.values()]
    report = reports.gather(runs.ws, ids)
    page = reports.render(report, "html")[1].decode()
    for section in ("runs", "metrics", "operators", "training", "plots"):
        assert f'id="{section}"' in page
    assert sorted(_specs(page)) == ["cdf", "histogram", "roofline", "training"]
    assert "not reached after 3 epochs" in page
    assert "peak " in page and " GFLOP/s from matmul" in page  # the caption
    text = reports.render(report, "md")[1].decode()
    for heading in ("## Operators", "## Training: time to accuracy", "## Metrics"):
        assert heading in text
    assert "Roofline: achieved GFLOP/s vs arithmetic intensity: peak" in text


def test_an_inference_report_has_no_operator_or_training_sections(runs: Runs) -> None:
    report = reports.gather(runs.ws, [runs.inference])
    view = build(report)
    assert view.operators is None and view.training == []
    assert {c.key for c in view.charts} == {"cdf", "histogram", "sweep", "accuracy"}
    page = reports.render(report, "html")[1].decode()
    assert 'id="operators"' not in page and 'id="training"' not in page
    assert "## Operators" not in reports.render(report, "md")[1].decode()


def test_operator_runs_without_model_or_dataset_render(runs: Runs) -> None:
    """An operator run's summary has no model, dataset (contract 22): every section copes."""
    report = reports.gather(runs.ws, [runs.inference, *_ops(runs)])
    recorded = [r.info for r in report.runs if r.id != runs.inference]
    assert all(i["model"] is None and i["dataset"] is None for i in recorded)  # real lockfiles
    bare = [
        dataclasses.replace(r, info={**r.info, "model": None, "dataset": None})
        if r.id != runs.inference
        else r
        for r in report.runs
    ]
    bare_report = Report(bare, report.created_at)
    assert bare[1].label == f"{runs.conv['torch'][:8]} conv2d torch"
    page = reports.render(bare_report, "html")[1].decode()
    assert 'id="operators"' in page
    text = reports.render(bare_report, "md")[1].decode()
    assert "## Operators" in text
