"""Operator runs (issue 22, L0) end to end through the CLI: `pinbench ops run` locks one
lockfile per framework and records one run each; bad input records nothing; a framework that
cannot run the operator, or whose output is outside tolerance, is a failed run with its reason;
`pinbench rerun` judges an operator run; an edited operator lockfile is refused."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import pytest
import yaml
from sqlalchemy import func, select

from pinbench.artifacts.canonical import canonical_json
from pinbench.db.models import Lockfile as LockfileRow
from pinbench.db.models import Run
from pinbench.evaluator.records.run_view import show_run
from pinbench.evaluator.run import latencies_of
from pinbench.registry import service
from pinbench.registry.lockfile import Lockfile
from pinbench.registry.request import parse_request
from pinbench.workspace import Workspace
from tests.helpers import Cli, Home, in_process_cli, published_home

MATMUL = ("matmul", "--shape", "m=32,n=32,k=32")
QUICK = ("--runner", "local", "--samples", "5", "--warmup", "2")
"""No --threads: TensorFlow's thread pools cannot change once initialised in this process
(such a run fails with that reason), and earlier tests of the session may have done so."""


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory, cnn_catalog_dir: Path) -> Iterator[Home]:
    """A workspace with the CNN catalog (onnxruntime, torch and tensorflow) published."""
    root = tmp_path_factory.mktemp("operator-runs")
    with published_home(root, cnn_catalog_dir) as home:
        yield home


@pytest.fixture
def cli(home: Home, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Cli:
    """``pinbench ARGS`` in-process against the module's workspace."""
    return in_process_cli(monkeypatch, capsys, home.home, home.db)


def _counts(ws: Workspace) -> tuple[int, int]:
    """(runs, lockfiles) recorded."""
    with ws.transaction() as session:
        runs = session.scalar(select(func.count()).select_from(Run))
        locks = session.scalar(select(func.count()).select_from(LockfileRow))
    return int(runs or 0), int(locks or 0)


def _json_runs(out: str) -> list[dict[str, Any]]:
    infos = json.loads(out)
    assert isinstance(infos, list)
    return infos


def _ops(cli: Cli, *args: str) -> tuple[int, list[dict[str, Any]], str]:
    """``pinbench ops run ARGS --json``: exit code, the runs it printed, stderr."""
    result = cli("ops", "run", *args, "--json")
    return result.code, _json_runs(result.out) if result.out.strip() else [], result.err


def _operator_lock(ws: Workspace, framework: str, **section: Any) -> Lockfile:
    operator = {"op": "matmul", "params": {"m": 16, "n": 16, "k": 16}, "samples": 5, **section}
    request = {"operator": operator, "framework": f"{framework}@*", "threads": 1}
    return service.lock(ws, parse_request(request))[0]


# ---------------------------------------------------------------- three frameworks


def test_ops_run_records_one_locked_run_per_framework(home: Home, cli: Cli) -> None:
    frameworks = ["onnxruntime", "torch", "tensorflow"]
    code, infos, _ = _ops(cli, *MATMUL, "--frameworks", ",".join(frameworks), *QUICK)
    assert code == 0, [(i["framework"], i["error"]) for i in infos]
    assert [i["status"] for i in infos] == ["succeeded"] * 3
    assert [i["framework"].split("@")[0] for i in infos] == frameworks
    assert len({i["lockfile"] for i in infos}) == 3  # a lockfile each
    inputs = set()
    for info in infos:
        recorded = show_run(home.ws, info["id"], nested=True)
        lock = recorded["lockfile_body"]
        assert lock["operator"]["op"] == "matmul"
        assert lock["operator"]["params"]["m"] == 32
        assert lock["model"] is None and lock["dataset"] is None
        assert lock["request"]["operator"] == lock["operator"]
        details = recorded["details"]["operator"]
        metrics = recorded["metrics"]
        inputs.add(details["inputs_digest"])
        assert details["flops"] == 2 * 32**3
        assert details["validation"]["valid"] is True
        assert metrics["valid_bool"] == 1.0
        assert metrics["queries_count"] == 5.0
        assert metrics["latency_p50_ns"] == details["median_ns"]
        assert metrics["achieved_flop_per_s"] == pytest.approx(
            details["flops"] / (details["median_ns"] / 1e9)
        )
        assert metrics["achieved_byte_per_s"] == pytest.approx(
            details["bytes"] / (details["median_ns"] / 1e9)
        )
        assert recorded["units"]["achieved_flop_per_s"] == "FLOP/s"
        assert recorded["units"]["achieved_byte_per_s"] == "B/s"
        assert "latencies_ns" not in details
        latencies = latencies_of(home.ws, recorded["latencies_sha256"])
        assert latencies.shape == (5,) and latencies.dtype == np.int64
        assert float(np.median(latencies)) == details["median_ns"]
    assert len(inputs) == 1  # the same seeded tensors on every framework


def test_ops_list_names_every_operator(cli: Cli) -> None:
    result = cli("ops", "list", "--json")
    assert result.code == 0
    ops = {row["op"]: row for row in json.loads(result.out)}
    for op in ("conv2d", "matmul", "batch_matmul", "relu", "gelu", "max_pool2d", "avg_pool2d"):
        assert op in ops
    for op in ("batch_norm", "softmax", "layer_norm"):
        assert op in ops
    required = {p["name"] for p in ops["matmul"]["params"] if p["required"]}
    assert required == {"m", "n", "k"}


def test_one_resnet50_conv_row(home: Home, cli: Cli) -> None:
    """A row of `ops sweep resnet50` (the one with the smallest input), run through
    `ops run conv2d`: the whole sweep is too long for a test."""
    from pinbench.operators.resnet50 import resnet50_conv_specs

    rows: list[dict[str, Any]] = [
        msgspec.to_builtins(spec.params) for _, spec, _ in resnet50_conv_specs(batch=1)
    ]
    params = min(rows, key=lambda p: p["h"] * p["w"] * p["c"])
    shape = ",".join(f"{k}={v}" for k, v in params.items())
    code, (info,), err = _ops(cli, "conv2d", "--shape", shape, "--frameworks", "torch", *QUICK)
    assert code == 0, err
    recorded = show_run(home.ws, info["id"], nested=True)
    assert recorded["lockfile_body"]["operator"]["params"] == params
    assert recorded["metrics"]["valid_bool"] == 1.0


# ---------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("nosuch", "--shape", "m=1", "--frameworks", "torch"), "unknown operator 'nosuch'"),
        (("matmul", "--shape", "m=1,zz=2", "--frameworks", "torch"), "unknown parameter 'zz'"),
        (("matmul", "--shape", "m32", "--frameworks", "torch"), "'m32' is not NAME=VALUE"),
        (  # a 5x5 kernel over a 3x3 input
            (
                "conv2d",
                "--shape",
                "n=1,c=1,h=3,w=3,out_channels=1,kernel_h=5,kernel_w=5",
                "--frameworks",
                "torch",
            ),
            "kernel_h = 5 is not allowed",
        ),
        ((*MATMUL, "--dtype", "int8", "--frameworks", "torch"), "dtype = 'int8'"),
        ((*MATMUL, "--samples", "0", "--frameworks", "torch"), "samples must be between 1 and"),
        ((*MATMUL, "--frameworks", "mxnet"), "framework/mxnet"),  # not published
        ((*MATMUL, "--frameworks", "torch,torch"), "names a framework twice"),
        ((*MATMUL, "--direction", "sideways", "--frameworks", "torch"), "direction"),
    ],
)
def test_bad_input_is_refused_and_records_nothing(
    home: Home, cli: Cli, args: tuple[str, ...], message: str
) -> None:
    before = _counts(home.ws)
    result = cli("ops", "run", *args, "--runner", "local")
    assert result.code == 1
    assert message in result.err
    assert _counts(home.ws) == before


def _request_file(tmp_path: Path, data: dict[str, Any]) -> Path:
    path = tmp_path / "request.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


OPERATOR = {"op": "matmul", "params": {"m": 8, "n": 8, "k": 8}}


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"model": "vision/digits-cnn-torch@^1"}, "an operator request takes no model"),
        ({"dataset": "sklearn-digits-test@1"}, "an operator request takes no dataset"),
        ({"scenario": {"mode": "accuracy"}}, "an operator request takes no scenario"),
        ({"batch_size": [1, 2]}, "an operator request takes no batch_size"),
        ({"framework": None}, "an operator request names the framework"),
        ({"operator": {**OPERATOR, "samples": 0}}, "samples must be between 1 and"),
    ],
)
def test_lock_refuses_an_operator_request_with_model_fields(
    home: Home, cli: Cli, tmp_path: Path, extra: dict[str, Any], message: str
) -> None:
    data = {"operator": OPERATOR, "framework": "torch@*", **extra}
    data = {k: v for k, v in data.items() if v is not None}
    before = _counts(home.ws)
    result = cli("lock", str(_request_file(tmp_path, data)), "-o", str(tmp_path / "out.lock"))
    assert result.code == 1
    assert "request.yaml" in result.err and message in result.err
    assert not (tmp_path / "out.lock").exists()
    assert _counts(home.ws) == before


# ---------------------------------------------------------------- failed runs


def test_a_dtype_the_framework_cannot_run_is_a_failed_run(home: Home, cli: Cli) -> None:
    runs, _ = _counts(home.ws)
    code, (info,), err = _ops(
        cli, *MATMUL, "--dtype", "bfloat16", "--frameworks", "onnxruntime", *QUICK
    )
    assert code == 1 and "1 of 1 runs did not succeed" in err
    assert info["status"] == "failed"
    assert "onnxruntime cannot run matmul" in info["error"] and "bfloat16" in info["error"]
    assert _counts(home.ws)[0] == runs + 1


def test_outside_tolerance_is_a_failed_run_reported_invalid(
    home: Home, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """torch's output perturbed by 1% after timing: the run keeps its timings and errors, has
    no achieved rates, and is failed with the reason."""
    from pinbench.operators.frameworks import torch as torch_ops

    fetch = torch_ops.fetch

    def perturbed(spec: Any, result: Any) -> Any:
        return tuple(a * 1.01 for a in fetch(spec, result))

    monkeypatch.setattr(torch_ops, "fetch", perturbed)
    code, (info,), err = _ops(cli, *MATMUL, "--frameworks", "torch", *QUICK)
    assert code == 1, err
    assert info["status"] == "failed"
    assert "torch is outside tolerance on matmul" in info["error"]
    recorded = show_run(home.ws, info["id"], nested=True)
    metrics, details = recorded["metrics"], recorded["details"]["operator"]
    assert metrics["valid_bool"] == 0.0
    assert "achieved_flop_per_s" not in metrics and "achieved_byte_per_s" not in metrics
    assert metrics["max_rel_error"] == pytest.approx(0.01, rel=1e-3)
    assert "latency_p50_ns" in metrics
    assert details["flops_per_s"] is None and details["bytes_per_s"] is None
    assert details["validation"]["valid"] is False and details["validation"]["reason"]


# ---------------------------------------------------------------- rerun, lockfiles, trace


def test_rerun_of_an_operator_run_states_a_latency_verdict(home: Home, cli: Cli) -> None:
    code, (info,), err = _ops(cli, *MATMUL, "--frameworks", "onnxruntime", *QUICK)
    assert code == 0, err
    result = cli("rerun", info["id"], "--repeat", "2", "--json")
    assert result.code in (0, 1, 4), result.err  # reproduced, not, inconclusive: all verdicts
    verdict = json.loads(result.out)
    text = "\n".join(verdict["verdict"])
    assert "inputs verified identical" in text
    assert "latency" in text and "original's framework-call median" in text
    assert verdict["outcome"] in ("reproduced", "not reproduced", "inconclusive")
    assert len(verdict["reruns"]) == 2


def test_an_operator_lockfile_round_trips(home: Home) -> None:
    lock = _operator_lock(home.ws, "torch")
    again = Lockfile.from_bytes(lock.canonical)
    assert again.canonical == lock.canonical and again.digest == lock.digest
    assert again.body == lock.body
    assert again.body.operator is not None and again.body.model is None


def test_an_edited_operator_section_is_refused_by_run(home: Home, cli: Cli, tmp_path: Path) -> None:
    lock = _operator_lock(home.ws, "torch")
    data = json.loads(lock.canonical)
    data["operator"]["params"]["m"] = 17  # the request still says 16
    edited = Lockfile.from_bytes(canonical_json(data))  # re-canonicalised
    assert edited.digest != lock.digest
    path = tmp_path / "edited.lock"
    edited.write(path)
    before = _counts(home.ws)
    result = cli("run", str(path), "--runner", "local")
    assert result.code == 1
    assert "does not match what this registry's manifests yield" in result.err
    assert "$.operator.params.m: lockfile has 17, registry has 16" in result.err
    assert _counts(home.ws) == before


def test_a_model_lockfile_has_no_operator_key(home: Home) -> None:
    """The operator section is left out of a model run's lockfile (so its digest is as before
    operators existed; the sweep-id golden in test_placement pins the request's bytes)."""
    request = {"model": "vision/digits-logreg@^1", "dataset": "sklearn-digits-test@^1"}
    lock = service.lock(home.ws, parse_request(request))[0]
    data = json.loads(lock.canonical)
    assert "operator" not in data and "operator" not in data["request"]
    assert data["model"] is not None and data["dataset"] is not None
    assert Lockfile.from_bytes(lock.canonical).digest == lock.digest


def test_trace_framework_is_refused_on_an_operator_lockfile(
    home: Home, cli: Cli, tmp_path: Path
) -> None:
    path = tmp_path / "op.lock"
    _operator_lock(home.ws, "torch").write(path)
    before = _counts(home.ws)
    result = cli("run", str(path), "--runner", "local", "--trace", "framework")
    assert result.code == 1
    assert "not traced" in result.err and "leave --trace out" in result.err
    assert _counts(home.ws) == before


def test_the_venv_runner_runs_an_operator(home: Home, cli: Cli) -> None:
    args = (*MATMUL, "--frameworks", "onnxruntime", "--samples", "5", "--warmup", "2")
    code, (info,), err = _ops(cli, *args, "--runner", "venv")
    assert code == 0, err
    recorded = show_run(home.ws, info["id"], nested=True)
    assert recorded["runner"] == "venv"
    assert recorded["metrics"]["valid_bool"] == 1.0
    assert recorded["lockfile_body"]["environment"]["framework"] == "onnxruntime"
