"""Training runs (Deep500's level 2, issue 22 item 3) end to end: a request's training section
locked with its validation split, trained in the pinned environment, recorded (curves, time to
accuracy, the final weights as a blob), rerun with a weights verdict; bad input refused with
nothing recorded."""

from __future__ import annotations

import io
import json
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from sqlalchemy import func, select

from pinbench.artifacts.canonical import canonical_json
from pinbench.artifacts.digest import Digest
from pinbench.db.models import Lockfile as LockfileRow
from pinbench.db.models import Run
from pinbench.errors import PinbenchError
from pinbench.evaluator.records.run_view import show_run
from pinbench.evaluator.run import latencies_of, run_lockfile
from pinbench.evaluator.runners.process import EvaluationFailed
from pinbench.evaluator.verdicts.rerun import rerun
from pinbench.registry import service
from pinbench.registry.lockfile import Lockfile
from pinbench.registry.request import parse_request
from pinbench.registry.verify import check_against_registry
from pinbench.workspace import Workspace
from tests.helpers import Cli, Home, in_process_cli, published_home

TORCH = "vision/digits-cnn-torch@^1"
KERAS = "vision/digits-cnn-keras@^1"
TRAINING = {"validation": "sklearn-digits-test@^1", "learning_rate": 0.01, "batch_size": 32}
"""Adam at 0.01 in batches of 32 reaches 0.9 on the digits test split in two or three epochs
in both frameworks."""


def quiet(_: str) -> None:
    pass


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory, cnn_catalog_dir: Path) -> Iterator[Home]:
    """A workspace with the CNN catalog (digits train and test splits, the CNN in PyTorch and
    Keras) published."""
    root = tmp_path_factory.mktemp("training-runs")
    with published_home(root, cnn_catalog_dir) as home:
        yield home


@pytest.fixture
def cli(home: Home, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Cli:
    """``pinbench ARGS`` in-process against the module's workspace."""
    return in_process_cli(monkeypatch, capsys, home.home, home.db)


def _request(model: str, framework: str, **training: Any) -> dict[str, Any]:
    return {
        "model": model,
        "dataset": "sklearn-digits-train@^1",
        "framework": f"{framework}@*",
        "training": {**TRAINING, "epochs": 5, "target_top1": 0.9, **training},
    }


def _lock(ws: Workspace, model: str = TORCH, framework: str = "torch", **training: Any) -> Lockfile:
    return service.lock(ws, parse_request(_request(model, framework, **training)))[0]


def _counts(ws: Workspace) -> tuple[int, int]:
    """(runs, lockfiles) recorded."""
    with ws.transaction() as session:
        runs = session.scalar(select(func.count()).select_from(Run))
        locks = session.scalar(select(func.count()).select_from(LockfileRow))
    return int(runs or 0), int(locks or 0)


@pytest.fixture(scope="module")
def torch_run(home: Home) -> dict[str, Any]:
    """A deterministic PyTorch training run to 0.9 (local runner), as ``show_run`` gives it."""
    outcome = run_lockfile(home.ws, _lock(home.ws), runner="local", say=quiet)
    return show_run(home.ws, outcome.id, nested=True)


# ---------------------------------------------------------------- what a run records


def _check_recorded(ws: Workspace, info: dict[str, Any], framework: str) -> None:
    """The contract's training record (issue 22): curves, time to accuracy with evaluation
    excluded, one latency per epoch."""
    assert info["status"] == "succeeded", info["error"]
    metrics, training = info["metrics"], info["details"]["training"]
    assert training["framework"] == framework and training["deterministic"] is True
    epochs, reached = training["epochs"], training["reached_epoch"]
    assert training["target_top1"] == 0.9
    assert reached is not None and 1 <= reached <= len(epochs) <= 5
    assert epochs[reached - 1]["val_top1"] >= 0.9
    assert all(e["val_top1"] < 0.9 for e in epochs[: reached - 1])  # the first epoch reaching it
    assert len(epochs) == reached  # training stops there
    assert metrics["time_to_accuracy_s"] == pytest.approx(
        sum(e["train_s"] for e in epochs[:reached])
    )
    assert metrics["eval_time_s"] == pytest.approx(sum(e["eval_s"] for e in epochs))
    assert metrics["train_time_s"] == pytest.approx(sum(e["train_s"] for e in epochs))
    assert metrics["epochs_count"] == len(epochs)
    assert metrics["final_top1"] == epochs[-1]["val_top1"]
    assert metrics["final_loss"] == epochs[-1]["val_loss"]
    assert metrics["best_top1"] == max(e["val_top1"] for e in epochs)
    assert metrics["throughput_sps"] == pytest.approx(
        sum(e["samples_per_s"] for e in epochs) / len(epochs)
    )
    assert info["units"]["time_to_accuracy_s"] == "s"
    latencies = latencies_of(ws, info["latencies_sha256"])
    assert latencies.tolist() == [round(e["train_s"] * 1e9) for e in epochs]


def _weights(ws: Workspace, info: dict[str, Any]) -> bytes:
    """The run's final weights from the blob store, checked against the recorded digest."""
    digest = Digest.parse(info["details"]["training"]["weights_sha256"])
    data = ws.store.verify(digest, label="final weights", rehash=True).read_bytes()
    assert Digest.of_bytes(data) == digest
    return data


def test_a_torch_run_trains_to_target_and_records_curves_time_and_weights(
    home: Home, torch_run: dict[str, Any]
) -> None:
    from safetensors.numpy import load

    _check_recorded(home.ws, torch_run, "torch")
    data = _weights(home.ws, torch_run)
    assert torch_run["runner"] == "local"
    assert torch_run["details"]["training"]["weights_format"] == "safetensors"
    tensors = load(data)
    assert tensors and all(np.isfinite(t).all() for t in tensors.values())


@pytest.fixture(scope="module")
def keras_run(home: Home) -> dict[str, Any]:
    """A deterministic TensorFlow training run to 0.9. TensorFlow fixes its thread pools per
    process (and building the catalog ran it here): the venv runner's fresh worker."""
    lock = _lock(home.ws, KERAS, "tensorflow")
    outcome = run_lockfile(home.ws, lock, runner="venv", say=quiet)
    return show_run(home.ws, outcome.id, nested=True)


def test_a_tensorflow_run_in_a_fresh_worker_trains_to_target(
    home: Home, keras_run: dict[str, Any]
) -> None:
    _check_recorded(home.ws, keras_run, "tensorflow")
    assert keras_run["runner"] == "venv"
    assert keras_run["details"]["training"]["weights_format"] == "keras"


def test_a_tensorflow_run_stores_its_keras_weights(home: Home, keras_run: dict[str, Any]) -> None:
    data = _weights(home.ws, keras_run)
    with zipfile.ZipFile(io.BytesIO(data)) as archive:  # a .keras file is a zip
        names = set(archive.namelist())
        config = json.loads(archive.read("config.json"))
    assert "model.weights.h5" in names
    assert config["class_name"] in ("Sequential", "Functional")


# ---------------------------------------------------------------- rerun and determinism


def test_a_rerun_of_a_deterministic_run_has_identical_final_weights(
    home: Home, torch_run: dict[str, Any]
) -> None:
    verdict = rerun(home.ws, torch_run["id"], repeat=1, say=quiet)
    want = torch_run["details"]["training"]["weights_sha256"]
    again = show_run(home.ws, verdict.reruns[0]["id"], nested=True)
    assert again["details"]["training"]["weights_sha256"] == want
    assert f"final weights identical (sha256 {want[:12]}) in every rerun" in verdict.lines
    assert any(line.startswith("time to accuracy: original ") for line in verdict.lines)
    assert "final weights" not in verdict.lines[-1]  # not among what failed to reproduce


def test_a_non_deterministic_run_keeps_weights_out_of_the_verdict(home: Home) -> None:
    lock = _lock(home.ws, deterministic=False, epochs=2, target_top1=None)
    first = run_lockfile(home.ws, lock, runner="local", say=quiet)
    verdict = rerun(home.ws, first.id, repeat=1, say=quiet)
    weights = [line for line in verdict.lines if line.startswith("final weights")]
    assert len(weights) == 1
    assert weights[0].endswith("(not deterministic: not part of the verdict)")
    assert "final weights" not in verdict.lines[-1]
    info = show_run(home.ws, first.id, nested=True)
    assert info["details"]["training"]["deterministic"] is False
    assert "time_to_accuracy_s" not in info["metrics"]  # no target set


# ---------------------------------------------------------------- target not reached


def test_a_target_not_reached_is_a_failed_run_with_its_record(home: Home) -> None:
    lock = _lock(home.ws, target_top1=1.0, epochs=1)
    runs_before = _counts(home.ws)[0]
    # the worker's error, in its sandbox
    with pytest.raises(EvaluationFailed, match=r"target top1 1 not reached after 1 epochs"):
        run_lockfile(home.ws, lock, runner="local", say=quiet)
    assert _counts(home.ws)[0] == runs_before + 1
    with home.ws.transaction() as session:
        run_id = session.scalars(select(Run.id).order_by(Run.started_at.desc())).first()
    assert run_id is not None
    info = show_run(home.ws, run_id, nested=True)
    assert info["status"] == "failed"
    assert info["error"].startswith("target top1 1 not reached after 1 epochs (best ")
    assert "time_to_accuracy_s" not in info["metrics"]
    assert info["metrics"]["epochs_count"] == 1.0 and "final_top1" in info["metrics"]
    training = info["details"]["training"]
    assert training["reached_epoch"] is None and len(training["epochs"]) == 1
    assert home.ws.store.has(Digest.parse(training["weights_sha256"]))  # weights kept


# ---------------------------------------------------------------- bad input


def test_a_model_ranking_its_lowest_score_first_is_refused_before_training(
    home: Home, cnn_catalog_dir: Path
) -> None:
    """Cross-entropy trains the highest score to be the answer, and validation takes the
    highest: a declared ``argsort: {descending: false}`` would be trained and judged against."""
    from pinbench.registry.manifest import parse_manifest
    from pinbench.registry.publish import publish

    (path,) = [
        p
        for p in cnn_catalog_dir.glob("*.yaml")
        if yaml.safe_load(p.read_text())["name"] == TORCH.split("@")[0]
    ]
    data = yaml.safe_load(path.read_text())
    data["version"] = "1.99.0"
    for out in data["outputs"]:
        out["steps"] = [{"argsort": {"descending": False}}]
    publish(home.ws, parse_manifest(data), manifest_dir=cnn_catalog_dir, publisher="test")
    lock = _lock(home.ws, model=f"{TORCH.split('@')[0]}@1.99.0")
    runs_before = _counts(home.ws)[0]
    with pytest.raises(EvaluationFailed, match=r"declares `argsort: \{descending: false\}`"):
        run_lockfile(home.ws, lock, runner="local", say=quiet)  # the worker's InvalidModel
    assert _counts(home.ws)[0] == runs_before + 1  # recorded failed, nothing trained
    with home.ws.transaction() as session:
        run_id = session.scalars(select(Run.id).order_by(Run.started_at.desc())).first()
    assert run_id is not None
    info = show_run(home.ws, run_id, nested=True)
    assert info["status"] == "failed" and "argsort" in info["error"]
    assert not info["metrics"] and "training" not in (info["details"] or {})


def _request_file(tmp_path: Path, data: dict[str, Any]) -> Path:
    path = tmp_path / "request.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (  # the split trained on cannot also judge it
            {"training": {**TRAINING, "validation": "sklearn-digits-train@^1"}},
            "training.validation must be another dataset than the one trained on",
        ),
        ({"scenario": {"mode": "accuracy"}}, "a training request takes no scenario"),
        ({"batch_size": [1, 2]}, "a training request takes training.batch_size, not batch_size"),
        (  # the operator check comes first and names what a training request adds
            {"operator": {"op": "matmul", "params": {"m": 8, "n": 8, "k": 8}}},
            "an operator request takes no model or dataset",
        ),
        (  # momentum is an SGD setting
            {"training": {**TRAINING, "optimizer": "adam", "momentum": 0.9}},
            "momentum is an sgd setting; optimizer adam takes none",
        ),
        ({"training": {**TRAINING, "dropout": 0.5}}, "unknown field `dropout`"),  # unknown field
        (  # resolution fails: nothing publishes it
            {"training": {**TRAINING, "validation": "sklearn-digits-nowhere@^1"}},
            "dataset/sklearn-digits-nowhere:\n    needs ^1 (from the request)\n    published: none",
        ),
    ],
)
def test_lock_refuses_a_bad_training_request_and_records_nothing(
    home: Home, cli: Cli, tmp_path: Path, change: dict[str, Any], message: str
) -> None:
    data = {**_request(TORCH, "torch"), **change}
    before = _counts(home.ws)
    result = cli("lock", str(_request_file(tmp_path, data)), "-o", str(tmp_path / "out.lock"))
    assert result.code == 1, result.out
    assert message in result.err
    assert "Traceback" not in result.err
    assert not (tmp_path / "out.lock").exists()
    assert _counts(home.ws) == before


def test_trace_framework_is_refused_on_a_training_lockfile(
    home: Home, cli: Cli, tmp_path: Path
) -> None:
    path = tmp_path / "train.lock"
    _lock(home.ws).write(path)
    before = _counts(home.ws)
    result = cli("run", str(path), "--runner", "local", "--trace", "framework")
    assert result.code == 1
    assert "training runs are not traced" in result.err
    assert _counts(home.ws)[0] == before[0]


# ---------------------------------------------------------------- the lockfile


def test_a_training_lockfile_pins_both_splits_and_round_trips(home: Home) -> None:
    lock = _lock(home.ws)
    body = lock.body
    assert body.dataset is not None and body.validation is not None
    assert body.dataset.name == "sklearn-digits-train"
    assert body.validation.name == "sklearn-digits-test"
    datasets = sorted(a.name for a in body.artifacts if a.kind == "dataset")
    assert datasets == ["sklearn-digits-test", "sklearn-digits-train"]
    assert body.training is not None and body.training.target_top1 == 0.9
    check_against_registry(home.ws, lock)
    again = Lockfile.from_bytes(lock.canonical)
    assert again.canonical == lock.canonical and again.body == body


def test_a_lockfile_with_another_validation_version_is_refused(
    home: Home, cli: Cli, tmp_path: Path
) -> None:
    lock = _lock(home.ws)
    data = json.loads(lock.canonical)
    assert data["validation"]["version"] == "1.0.0"
    data["validation"]["version"] = "1.0.1"  # still what the request's range allows
    edited = Lockfile.from_bytes(canonical_json(data))  # re-canonicalised
    assert edited.digest != lock.digest
    with pytest.raises(PinbenchError):
        check_against_registry(home.ws, edited)
    path = tmp_path / "edited.lock"
    edited.write(path)
    before = _counts(home.ws)
    result = cli("run", str(path), "--runner", "local")
    assert result.code == 1
    assert "does not match what this registry's manifests yield" in result.err
    assert '$.validation.version: lockfile has "1.0.1", registry has "1.0.0"' in result.err
    assert _counts(home.ws) == before


def test_a_model_lockfile_has_no_training_keys(home: Home) -> None:
    """Left out when unset, so a model run's lockfile digest is as before training existed
    (the sweep-id golden in test_placement pins the request's bytes)."""
    request = {"model": TORCH, "dataset": "sklearn-digits-test@^1", "framework": "torch@*"}
    lock = service.lock(home.ws, parse_request(request))[0]
    data = json.loads(lock.canonical)
    assert "training" not in data and "validation" not in data
    assert "training" not in data["request"]
    assert Lockfile.from_bytes(lock.canonical).digest == lock.digest
