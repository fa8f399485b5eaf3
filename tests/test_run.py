"""Running lockfiles: real measurements on the built-in digits catalog, and every bad input
recorded as a failed run (never a success)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from pinbench import catalog as builtin
from pinbench.artifacts.digest import Digest
from pinbench.errors import UserError
from pinbench.evaluator.records.run_list import list_runs
from pinbench.evaluator.records.run_view import RunNotFound, show_run
from pinbench.evaluator.run import run_lockfile
from pinbench.evaluator.runners import UnknownRunner
from pinbench.evaluator.runners.process import EvaluationFailed
from pinbench.evaluator.verdicts.parity import ParityError, parity
from pinbench.evaluator.verdicts.rerun import rerun
from pinbench.registry import service
from pinbench.registry.lockfile import Lockfile
from pinbench.registry.manifest import parse_manifest
from pinbench.registry.publish import publish
from pinbench.registry.request import parse_request
from pinbench.registry.verify import VerificationFailed
from pinbench.worker.datasets import DatasetError
from pinbench.worker.measure import FrameworkMismatch
from pinbench.worker.predictors.onnxruntime import OnnxRuntimePredictor
from pinbench.workspace import Workspace
from tests.helpers import Cli, digits_logreg, publish_digits_model, sha


def _lock(ws: Workspace, **request: Any) -> Lockfile:
    data = {"model": f"{builtin.MODEL_NAME}@1.1.0", "dataset": f"{builtin.DATASET_NAME}@1"}
    data.update(request)
    lock, _ = service.lock(ws, parse_request(data))
    return lock


def quiet(text: str) -> None:
    pass


def test_accuracy_matches_a_numpy_reference(digits: Workspace) -> None:
    """ONNX Runtime's top-1 on the test split equals the same weights applied in NumPy."""
    outcome = run_lockfile(digits, _lock(digits, scenario={"mode": "accuracy"}), say=quiet)
    assert outcome.status == "succeeded"
    _, x_test, _, y_test = builtin.digits_split()
    weights, bias = digits_logreg()
    logits = (x_test.reshape(len(x_test), -1).astype(np.float32) / 16.0) @ weights.T + bias
    reference = float(np.mean(np.argmax(logits, axis=1) == y_test))
    assert outcome.metrics["top1"] == pytest.approx(reference, abs=1 / len(y_test))
    assert outcome.metrics["accuracy_samples_count"] == len(y_test)
    assert outcome.metrics["top5"] >= outcome.metrics["top1"]


@pytest.mark.parametrize("scenario", ["SingleStream", "MultiStream", "Offline", "Server"])
def test_performance_scenarios_record_latencies(digits: Workspace, scenario: str) -> None:
    settings: dict[str, Any] = {"name": scenario, "min_duration_ms": 200, "min_query_count": 64}
    if scenario == "Server":
        settings["target_qps"] = 500
    outcome = run_lockfile(digits, _lock(digits, scenario=settings), say=quiet)
    info = show_run(digits, outcome.id)
    assert info["status"] == "succeeded"
    assert info["latency_p50_ns"] <= info["latency_p99_ns"] <= info["latency_p99_9_ns"]
    assert ("throughput_sps" in info) == (scenario != "MultiStream")  # LoadGen's (decision 275)
    assert info["framework_throughput_sps"] > 0 and info["queries_count"] > 0
    assert info["loadgen_valid_bool"] in (0.0, 1.0)
    assert info["details"]["loadgen"]["effective_scenario"] == scenario
    assert info["units"]["latency_p50_ns"] == "ns"
    raw = digits.store.verify(Digest(info["latencies_sha256"]), label="latencies")
    assert np.load(raw).size == info["framework_calls_count"]
    # the headline latencies are LoadGen's, as its summary of this run has them (per query in
    # MultiStream); the raw framework calls have their own names and LoadGen's percentile rule
    loadgen = info["details"]["loadgen"]
    per = "_per_query" if scenario == "MultiStream" else ""
    for tag, spelled in (("p50", "50.00"), ("p90", "90.00"), ("p99", "99.00"), ("p99_9", "99.90")):
        assert info[f"latency_{tag}_ns"] == loadgen[f"result_{spelled}_percentile{per}_latency_ns"]
    calls = sorted(np.load(digits.store.path(Digest(info["latencies_sha256"]))).tolist())
    for tag, fraction in (("p50", 0.5), ("p90", 0.9), ("p99", 0.99), ("p99_9", 0.999)):
        assert info[f"framework_latency_{tag}_ns"] == calls[int(len(calls) * fraction)]


def test_second_run_uses_the_preprocessed_cache(digits: Workspace) -> None:
    lock = _lock(digits, scenario={"min_duration_ms": 0, "min_query_count": 10})
    first = show_run(digits, run_lockfile(digits, lock, say=quiet).id)
    second = show_run(digits, run_lockfile(digits, lock, say=quiet).id)
    assert (
        first["details"]["preprocess_cache_hit"],
        second["details"]["preprocess_cache_hit"],
    ) == (
        False,
        True,
    )


def _failed_run(ws: Workspace) -> dict[str, Any]:
    runs = list_runs(ws)
    assert runs and runs[0]["status"] == "failed", runs
    return runs[0]


def test_tampered_blob_fails_before_anything_is_measured(digits: Workspace) -> None:
    lock = _lock(digits)
    model = lock.body.artifacts[0]
    blob = digits.store.path(Digest(model.files[0].sha256))
    blob.chmod(0o644)
    blob.write_bytes(b"tampered")
    with pytest.raises(VerificationFailed, match="checksum mismatch"):
        run_lockfile(digits, lock, say=quiet)
    failed = _failed_run(digits)
    assert "checksum mismatch" in failed["error"]
    assert "latency_p50_ns" not in failed


def test_framework_version_mismatch_names_a_runner(
    digits: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(OnnxRuntimePredictor, "framework_version", classmethod(lambda cls: "9.9.9"))
    with pytest.raises(FrameworkMismatch, match="--runner venv"):  # in this process, patched
        run_lockfile(digits, _lock(digits), say=quiet, sandbox="none")
    assert "9.9.9" in _failed_run(digits)["error"]


def _publish_model(ws: Workspace, root: Path, version: str, data: bytes) -> None:
    """``data`` as ``m.onnx``, one float input ``x`` with no steps."""
    inputs = [{"name": "x", "element_type": "float32", "steps": []}]
    publish_digits_model(ws, root, version, {"m.onnx": data}, inputs=inputs)


def test_model_that_fails_to_load(digits: Workspace, tmp_path: Path) -> None:
    """A well-formed graph (publishing reads it) of an operator ONNX Runtime does not have."""
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 1, 8, 8])
    node = helper.make_node("NoSuchOperator", ["x"], ["y"])
    graph = helper.make_graph([node], "g", [x], [helper.make_tensor_value_info("y", 1, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    _publish_model(digits, tmp_path / "bad", "3.0.0", model.SerializeToString())
    with pytest.raises(EvaluationFailed, match=r"cannot load model m\.onnx"):
        run_lockfile(digits, _lock(digits, model=f"{builtin.MODEL_NAME}@3.0.0"), say=quiet)
    assert "cannot load model" in _failed_run(digits)["error"]


def test_input_of_the_wrong_shape(digits: Workspace, tmp_path: Path, catalog_dir: Path) -> None:
    onnx_bytes = (catalog_dir / "digits-logreg-1.1.0" / "digits-logreg.onnx").read_bytes()
    # No layout step: the model gets (N, 8, 8, 1) where it expects (N, 1, 8, 8).
    _publish_model(digits, tmp_path / "nhwc", "3.1.0", onnx_bytes)
    with pytest.raises(EvaluationFailed, match=r"expects float32 \['N', 1, 8, 8\]"):
        run_lockfile(digits, _lock(digits, model=f"{builtin.MODEL_NAME}@3.1.0"), say=quiet)
    assert _failed_run(digits)["status"] == "failed"


def test_accuracy_run_on_a_dataset_without_labels(digits: Workspace, tmp_path: Path) -> None:
    images = np.zeros((4, 8, 8), dtype=np.uint8)
    root = tmp_path / "nolabels"
    root.mkdir()
    np.save(root / "x.npy", images)
    data = (root / "x.npy").read_bytes()
    manifest = {
        "kind": "dataset",
        "name": "unlabelled",
        "version": "1.0.0",
        "files": [{"path": "x.npy", "sha256": sha(data)}],
        "data": {"path": "x.npy"},
        "labels": {"format": "class-index-npy"},
    }
    publish(digits, parse_manifest(manifest), manifest_dir=root, publisher="test")
    lock = _lock(digits, dataset="unlabelled@1", scenario={"mode": "accuracy"})
    with pytest.raises(DatasetError, match="needs labels"):
        run_lockfile(digits, lock, say=quiet)
    assert "needs labels" in _failed_run(digits)["error"]


@pytest.mark.parametrize(
    ("scenario", "needle"),
    [
        ({"name": "Server"}, "needs target_qps"),
        ({"percentile": 120}, "percentile must be between 0 (exclusive) and 100 (exclusive)"),
        ({"min_query_count": 0}, "min_query_count must be between 1 and 10000000, got 0"),
        ({"name": "Sometimes"}, "$.scenario.name"),
    ],
)
def test_scenario_settings_out_of_range(scenario: dict[str, Any], needle: str) -> None:
    with pytest.raises(UserError) as info:
        parse_request({"model": "m@1", "dataset": "d@1", "scenario": scenario})
    assert needle in str(info.value)


def test_unknown_runner_and_unknown_run(digits: Workspace) -> None:
    with pytest.raises(UnknownRunner, match="runners: auto, local, venv, docker"):
        run_lockfile(digits, _lock(digits), runner="ray", say=quiet)
    with pytest.raises(RunNotFound):
        show_run(digits, "nope")


def test_cli_run_and_runs_list_contract(cli: Cli, tmp_path: Path, catalog_dir: Path) -> None:
    assert cli("init").code == 0
    for path in sorted(catalog_dir.glob("*.yaml")):
        assert cli("publish", str(path)).code == 0
    request = tmp_path / "r.yaml"
    request.write_text(
        yaml.safe_dump(
            {
                "model": f"{builtin.MODEL_NAME}@^1",
                "dataset": f"{builtin.DATASET_NAME}@1",
                "scenario": {"mode": "accuracy"},
            }
        )
    )
    assert cli("lock", str(request), "-o", str(tmp_path / "a.lock")).code == 0
    ran = cli("run", str(tmp_path / "a.lock"), "--json")
    assert ran.code == 0, ran.err
    runs = json.loads(cli("runs", "list", "--json").out)
    assert len(runs) == 1
    for field in ("id", "status", "runner", "framework", "model", "top1"):
        assert field in runs[0]
    assert runs[0]["framework"] == f"onnxruntime@{builtin.ONNXRUNTIME_VERSION}"
    assert runs[0]["model"].startswith(builtin.MODEL_NAME + "@")
    shown = cli("runs", "show", runs[0]["id"][:8])
    assert shown.code == 0 and "top-1" in shown.out  # the task's label for top1
    traced = cli("run", str(tmp_path / "a.lock"), "--trace", "model")
    assert traced.code == 0 and "traced at level model" in traced.out
    assert cli("run", str(tmp_path / "a.lock"), "--trace", "bogus").code == 1
    assert len(json.loads(cli("runs", "list", "--json").out)) == 2


def test_rerun_of_an_accuracy_run_runs_once_and_reproduces(digits: Workspace) -> None:
    lock = _lock(digits, scenario={"mode": "accuracy"})
    first = run_lockfile(digits, lock, say=quiet)
    verdict = rerun(digits, first.id[:8], repeat=3, say=quiet)
    assert len(verdict.reruns) == 1  # deterministic: once is enough
    assert verdict.reruns[0]["lockfile"] == verdict.original["lockfile"]
    assert verdict.lines == [
        f"inputs verified identical (lockfile sha256 {lock.digest.hex})",
        verdict.lines[1],
        "reproduced",
    ]
    assert verdict.lines[1].startswith("accuracy identical (top-1 0.9")


def test_rerun_of_a_performance_run_judges_latency_over_repeats(digits: Workspace) -> None:
    lock = _lock(digits, scenario={"min_duration_ms": 50, "min_query_count": 50})
    first = run_lockfile(digits, lock, say=quiet)
    verdict = rerun(digits, first.id, repeat=2, say=quiet)
    assert [r["lockfile"] for r in verdict.reruns] == [lock.digest.hex] * 2
    assert len({r["id"] for r in verdict.reruns} | {first.id}) == 3  # each one recorded
    latency = verdict.lines[1]
    assert "2 reruns' 99% interval" in latency
    assert re.search(r"Mann-Whitney p (= \d|< 1e-300)", latency)  # a bound where it underflows
    assert verdict.lines[-1] in (
        "reproduced",
        "not reproduced: latency",
        "inconclusive (inputs and accuracy reproduced)",
    )
    assert verdict.reproduced == (verdict.lines[-1] == "reproduced")
    assert verdict.outcome == verdict.lines[-1].split(":")[0].split(" (")[0]


def test_a_rerun_says_when_it_compared_a_run_timed_on_a_busy_machine(digits: Workspace) -> None:
    """Issue 64, item 7: a flag is not a verdict; the latencies are still compared, and the
    verdict names the run that was timed beside other work."""
    from sqlalchemy import update
    from sqlalchemy.orm import Session

    from pinbench.db.models import Result

    lock = _lock(digits, scenario={"min_duration_ms": 50, "min_query_count": 50})
    first = run_lockfile(digits, lock, say=quiet)
    with Session(digits.engine) as session, session.begin():  # as a busy machine records it
        flagged = session.execute(
            update(Result)
            .where(Result.run_id == first.id, Result.metric == "contended_bool")
            .values(value=1.0)
        )
        assert flagged.rowcount == 1  # type: ignore[attr-defined]
    verdict = rerun(digits, first.id, repeat=1, say=quiet)
    assert re.search(r"Mann-Whitney p (= \d|< 1e-300)", verdict.lines[1])  # compared all the same
    notes = [line for line in verdict.lines if line.startswith("note: ")]
    assert len(notes) == 1 and first.id[:8] in notes[0]
    assert "timed while other work took the machine" in notes[0]


def test_rerun_repeat_must_be_positive(digits: Workspace) -> None:
    first = run_lockfile(digits, _lock(digits, scenario={"mode": "accuracy"}), say=quiet)
    with pytest.raises(UserError, match="repeat must be >= 1"):
        rerun(digits, first.id, repeat=0, say=quiet)


def test_rerun_after_tampering_fails_verification(digits: Workspace) -> None:
    lock = _lock(digits)
    first = run_lockfile(digits, lock, say=quiet)
    blob = digits.store.path(Digest(lock.body.artifacts[0].files[0].sha256))
    blob.chmod(0o644)
    blob.write_bytes(b"x")
    with pytest.raises(VerificationFailed):
        rerun(digits, first.id, say=quiet)


def test_cli_compare_names_what_differs(cli: Cli, tmp_path: Path, catalog_dir: Path) -> None:
    cli("init")
    for path in sorted(catalog_dir.glob("*.yaml")):
        cli("publish", str(path))
    ids = []
    for name in ("SingleStream", "Offline"):
        request = tmp_path / f"{name}.yaml"
        request.write_text(
            yaml.safe_dump(
                {
                    "model": f"{builtin.MODEL_NAME}@^1",
                    "dataset": f"{builtin.DATASET_NAME}@1",
                    "scenario": {"name": name, "min_duration_ms": 100, "min_query_count": 32},
                }
            )
        )
        cli("lock", str(request), "-o", str(tmp_path / f"{name}.lock"))
        ids.append(json.loads(cli("run", str(tmp_path / f"{name}.lock"), "--json").out)["id"])
    compared = cli("runs", "compare", *ids, "--json")
    assert compared.code == 0, compared.err
    assert json.loads(compared.out)["differs"] == ["scenario"]
    assert "differs between the runs: scenario" in cli("runs", "compare", *ids).out
    assert cli("runs", "compare", ids[0]).code == 1
    reran = cli("rerun", ids[0])
    outcome = reran.out.strip().splitlines()[-1]
    expected = {"reproduced": 0, "not reproduced: latency": 1}.get(outcome, 4)
    assert reran.code == expected, reran.err  # the exit code says the verdict
    assert "inputs verified identical" in reran.out


def test_parity_compares_what_classification_scores_sample_by_sample(digits: Workspace) -> None:
    """Classification parity is each sample's top-1 class (and how far the scores moved):
    the same model with another thread count agrees, another version of it does not."""
    from rich.console import Console

    from pinbench.tables import parity_table

    acc = {"mode": "accuracy"}
    a = run_lockfile(digits, _lock(digits, scenario=acc), say=quiet)
    same = run_lockfile(digits, _lock(digits, scenario=acc, threads=1), say=quiet)
    other = run_lockfile(
        digits, _lock(digits, model=f"{builtin.MODEL_NAME}@1.0.0", scenario=acc), say=quiet
    )
    ref, twin, different = parity(digits, a.id, [same.id, other.id])
    assert (ref.figure("max_abs_diff"), ref.figure("top1_agree")) == (0.0, 450) and ref.agrees
    assert twin.figure("max_abs_diff") < 1e-6 and twin.figure("top1_agree") == 450
    assert twin.agrees and twin.task == "classification"
    assert different.figure("max_abs_diff") > 0.01 and different.figure("max_rel_diff") > 0.01
    assert different.figure("top1_agree") < different.figure("samples") and not different.agrees
    assert different.to_json()["figures"]["top1_agree"] == different.figure("top1_agree")
    out = Console(record=True, width=200)
    out.print(parity_table([ref, twin, different]))
    text = out.export_text()
    assert "same top-1" in text and "agrees: every sample's top-1 class the same" in text


def test_parity_needs_accuracy_runs(digits: Workspace) -> None:
    acc = run_lockfile(digits, _lock(digits, scenario={"mode": "accuracy"}), say=quiet)
    perf = run_lockfile(digits, _lock(digits, scenario={"min_duration_ms": 10}), say=quiet)
    with pytest.raises(ParityError, match="only a succeeded accuracy run records its outputs"):
        parity(digits, acc.id, [perf.id])


def test_a_batch_size_sweep_locks_one_grouped_lockfile_per_point(digits: Workspace) -> None:
    request = parse_request(
        {
            "model": f"{builtin.MODEL_NAME}@1.1.0",
            "dataset": f"{builtin.DATASET_NAME}@1",
            "scenario": {"name": "Offline", "min_duration_ms": 20},
            "batch_size": [1, 4, 16],
        }
    )
    points = service.lock_points(digits, request)
    locks = [lock for lock, created in points]
    assert [lock.body.batch_size for lock in locks] == [1, 4, 16]
    assert len({lock.digest for lock in locks}) == 3
    assert len({lock.body.sweep for lock in locks}) == 1 and locks[0].body.sweep is not None
    for lock in locks:
        outcome = run_lockfile(digits, lock, say=quiet)
        info = show_run(digits, outcome.id)
        assert info["batch_size"] == lock.body.batch_size and info["sweep"] == locks[0].body.sweep
    with pytest.raises(UserError, match="sweep"):
        service.lock(digits, request)


def test_cli_lock_writes_a_file_per_sweep_point(
    cli: Cli, tmp_path: Path, catalog_dir: Path
) -> None:
    cli("init")
    for path in sorted(catalog_dir.glob("*.yaml")):
        cli("publish", str(path))
    request = tmp_path / "sweep.yaml"
    request.write_text(
        yaml.safe_dump(
            {
                "model": f"{builtin.MODEL_NAME}@^1",
                "dataset": f"{builtin.DATASET_NAME}@1",
                "batch_size": [2, 8],
            }
        )
    )
    result = cli("lock", str(request), "-o", str(tmp_path / "sweep.lock"), "--json")
    assert result.code == 0, result.err
    written = json.loads(result.out)
    assert [Path(p["path"]).name for p in written["points"]] == ["sweep.bs2.lock", "sweep.bs8.lock"]
    assert Lockfile.read(tmp_path / "sweep.bs8.lock").body.sweep == written["sweep"]


@pytest.mark.parametrize(
    ("scenario", "expected"),
    [
        ({"name": "SingleStream", "preset": "mlperf"}, (600_000, 1024, 90.0)),
        ({"name": "Server", "preset": "mlperf", "target_qps": 10}, (600_000, 270_336, 99.0)),
        ({"name": "Offline", "preset": "mlperf"}, (600_000, 1, 90.0)),
        ({"name": "SingleStream", "preset": "mlperf", "min_duration_ms": 5}, (5, 1024, 90.0)),
        ({"name": "SingleStream"}, (1000, 100, 90.0)),
    ],
)
def test_the_mlperf_preset_fills_what_the_request_leaves_out(
    scenario: dict[str, Any], expected: tuple[int, int, float]
) -> None:
    request = parse_request({"model": "m@1", "dataset": "d@1", "scenario": scenario})
    s = request.scenario
    assert (s.min_duration_ms, s.min_query_count, s.percentile) == expected


@pytest.mark.parametrize(
    ("data", "needle"),
    [
        ({"scenario": {"preset": "fast"}}, "preset"),
        ({"batch_size": []}, "batch_size"),
        ({"batch_size": [1, 1]}, "at most once"),
        ({"batch_size": [0, 2]}, "batch_size"),
        ({"threads": 0}, "threads"),
    ],
)
def test_bad_sweep_preset_and_thread_settings_are_named(data: dict[str, Any], needle: str) -> None:
    with pytest.raises(UserError, match=needle):
        parse_request({"model": "m@1", "dataset": "d@1", **data})


@pytest.mark.parametrize("band", ["1e-9", "9"])
def test_rerun_exit_code_says_the_outcome(
    cli: Cli, tmp_path: Path, catalog_dir: Path, band: str
) -> None:
    """0 reproduced, 1 not reproduced, 4 inconclusive: a band of nothing makes any two reruns
    disagree (inconclusive unless latency changed); a band of 900% never does."""
    cli("init")
    for path in sorted(catalog_dir.glob("*.yaml")):
        assert cli("publish", str(path)).code == 0
    request = tmp_path / "r.yaml"
    request.write_text(
        f"model: {builtin.MODEL_NAME}@1.0.0\ndataset: {builtin.DATASET_NAME}@1\n"
        "scenario: {min_duration_ms: 50, min_query_count: 50}\n"
    )
    assert cli("lock", str(request), "-o", str(tmp_path / "r.lock")).code == 0
    assert cli("run", str(tmp_path / "r.lock"), "--runner", "local").code == 0
    (first,) = json.loads(cli("runs", "list", "--json").out)
    done = cli("rerun", first["id"], "--repeat", "2", "--band", band, "--json")
    outcome = json.loads(done.out)["outcome"]
    assert done.code == {"reproduced": 0, "not reproduced": 1, "inconclusive": 4}[outcome]
    if band == "9":
        assert outcome != "inconclusive"
    else:
        assert outcome != "reproduced"
