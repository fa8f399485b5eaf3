"""What an isolated evaluator hands back is validated before anything is recorded, and the
evaluator checks the bytes it is handed (no container needed for these)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import msgspec
import numpy as np
import numpy.typing as npt
import pytest

from pinbench.environments import (
    environment_digest,
    parse_lock,
    requirements_for,
    requirements_text,
)
from pinbench.evaluator.runners.process import collect
from pinbench.evaluator.runners.store_files import store_paths
from pinbench.registry import service
from pinbench.registry.lockfile import LockedEnvironment
from pinbench.registry.manifest import Requirement
from pinbench.registry.manifest_parts import Platform
from pinbench.registry.names import Kind
from pinbench.registry.request import parse_request
from pinbench.worker import main as worker
from pinbench.worker.job import Evidence
from pinbench.worker.results import (
    LATENCIES,
    RESULT,
    TRACE,
    InvalidResults,
    JobFile,
    read_results,
    write_results,
)
from pinbench.workspace import Workspace

LOCK = "ab" * 32
ENV = {"python": "3.11.2", "platform": "linux", "executable": "/x", "evaluator": "cd" * 32}


def _good(out: Path) -> None:
    evidence = Evidence(metrics={"top1": 0.5}, latencies=np.array([10, 20], dtype=np.int64))
    write_results(out, LOCK, evidence, None, ENV)


def _edit(change: Callable[[dict[str, object]], None]) -> Callable[[Path], None]:
    def apply(out: Path) -> None:
        _good(out)
        data = json.loads((out / RESULT).read_text())
        change(data)
        (out / RESULT).write_text(json.dumps(data))

    return apply


def _replace(old: str, new: str) -> Callable[[Path], None]:
    def apply(out: Path) -> None:
        _good(out)
        text = (out / RESULT).read_text()
        assert old in text
        (out / RESULT).write_text(text.replace(old, new))

    return apply


def _write(text: str) -> Callable[[Path], None]:
    def apply(out: Path) -> None:
        (out / RESULT).write_text(text)

    return apply


def _latencies(array: npt.NDArray[Any]) -> Callable[[Path], None]:
    def apply(out: Path) -> None:
        _good(out)
        np.save(out / LATENCIES, array)

    return apply


def _trace(content: bytes | None) -> Callable[[Path], None]:
    """A result that says it has a trace, with ``content`` as trace.json (None: no file)."""

    def apply(out: Path) -> None:
        _good(out)
        data = json.loads((out / RESULT).read_text())
        data["trace"] = True
        (out / RESULT).write_text(json.dumps(data))
        if content is not None:
            (out / TRACE).write_bytes(content)

    return apply


def _symlink(out: Path) -> None:
    _good(out)
    (out / LATENCIES).unlink()
    (out / LATENCIES).symlink_to("/etc/hostname")


BAD: list[tuple[str, Callable[[Path], None], str]] = [
    ("nothing written", lambda out: None, "no result.json"),
    ("not JSON", _write("{"), "not JSON"),
    ("unknown field", _edit(lambda d: d.update(extra=1)), "unknown field"),
    ("another lockfile", _edit(lambda d: d.update(lockfile="ef" * 32)), "is for lockfile efefef"),
    ("NaN metric", _edit(lambda d: d.update(metrics={"top1": float("nan")})), "not JSON"),
    ("infinite metric", _replace('"top1":0.5', '"top1":1e999'), "out of range"),
    ("metric name", _edit(lambda d: d.update(metrics={"Top 1": 1.0})), "not [a-z0-9_]"),
    ("no latencies", _edit(lambda d: d.update(latencies=False)), "must return its latencies"),
    ("float latencies", _latencies(np.array([1.5])), "1-D int64"),
    ("negative latencies", _latencies(np.array([-1], dtype=np.int64)), "negative"),
    ("latencies link", _symlink, "not a plain file"),
    ("pickled latencies", _latencies(np.array([object()], dtype=object)), "readable .npy"),
    ("trace missing", _trace(None), "trace.json is missing"),
    ("trace not JSON", _trace(b"{"), "trace.json is not a Chrome trace"),
    ("trace without events", _trace(b'{"pinbench": {}}'), "traceEvents"),
    ("trace events not a list", _trace(b'{"traceEvents": 1, "pinbench": {}}'), "traceEvents"),
]


@pytest.mark.parametrize(("case", "make", "needle"), BAD, ids=[b[0] for b in BAD])
def test_bad_results_are_refused(
    tmp_path: Path, case: str, make: Callable[[Path], None], needle: str
) -> None:
    make(tmp_path)
    with pytest.raises(InvalidResults, match="refused") as info:
        read_results(tmp_path, LOCK)
    assert needle in str(info.value), case


def test_good_results_round_trip(tmp_path: Path) -> None:
    _good(tmp_path)
    result, evidence = read_results(tmp_path, LOCK)
    assert result.status == "succeeded" and result.environment == ENV
    assert evidence.metrics == {"top1": 0.5}
    assert evidence.latencies is not None and evidence.latencies.tolist() == [10, 20]
    assert evidence.trace is None


def test_digests_a_worker_claims_for_host_stored_outputs_are_dropped(tmp_path: Path) -> None:
    """The host records the outputs' and final weights' digests from bytes it read: a worker
    naming some other blob (another model's weights) gets nothing recorded."""
    forged = {"training": {"weights_sha256": "bb" * 32, "weights_format": "safetensors"}}
    evidence = Evidence(
        latencies=np.array([10], dtype=np.int64),
        details={**forged, "outputs_sha256": "cc" * 32, "scenario": "x"},
    )
    write_results(tmp_path, LOCK, evidence, None, ENV)
    _, got = read_results(tmp_path, LOCK)
    assert got.details == {"training": {"weights_format": "safetensors"}, "scenario": "x"}


def test_an_optimized_graph_comes_back_whole_and_its_claimed_digests_are_dropped(
    tmp_path: Path,
) -> None:
    """A graph-optimization run's graph travels as the final weights do (decision 180): the
    bytes come back, and any graph digest the worker wrote (an evaluator from before, or a
    forged one) goes: the host records the digest of what it stores."""
    graph = b"\x08\x07an onnx model's bytes"
    transform = {"transform": "graph_optimization=all", "graph_sha256": "bb" * 32}
    evidence = Evidence(
        latencies=np.array([10], dtype=np.int64),
        details={"transform": {**transform, "optimized_graph_sha256": "cc" * 32}},
        graph=graph,
    )
    write_results(tmp_path, LOCK, evidence, None, ENV)
    result, got = read_results(tmp_path, LOCK)
    assert result.graph and got.graph == graph
    assert got.details == {"transform": {"transform": "graph_optimization=all"}}
    collected = Evidence()  # as the venv and docker runners take it
    lock: Any = SimpleNamespace(digest=SimpleNamespace(hex=LOCK))
    collect("venv", tmp_path, lock, collected, status=0, tail=[])
    assert collected.graph == graph


def test_a_trace_round_trips_byte_for_byte(tmp_path: Path) -> None:
    trace = b'{"traceEvents":[{"ph":"X","name":"predict","ts":0.5,"dur":1.0}],"pinbench":{}}'
    evidence = Evidence(latencies=np.array([10], dtype=np.int64), trace=trace)
    write_results(tmp_path, LOCK, evidence, None, ENV)
    result, got = read_results(tmp_path, LOCK)
    assert result.trace and got.trace == trace


def test_oversized_result_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import pinbench.worker.results as results

    _good(tmp_path)
    monkeypatch.setattr(results, "MAX_RESULT_BYTES", 10)
    with pytest.raises(InvalidResults, match="over the 10-byte cap"):
        read_results(tmp_path, LOCK)


def test_worker_refuses_tampered_inputs(tmp_path: Path, digits: Workspace) -> None:
    """The evaluator re-checks every file it is handed against the lockfile."""
    request = {"model": "vision/digits-logreg@1", "dataset": "sklearn-digits-test@1"}
    lock, _ = service.lock(digits, parse_request(request))
    files = {
        kind.value: {p: str(v) for p, v in store_paths(digits, lock, kind).items()}
        for kind in (Kind.MODEL, Kind.DATASET)
    }
    tampered = tmp_path / "tampered.onnx"
    first = next(iter(files["model"]))
    tampered.write_bytes(Path(files["model"][first]).read_bytes() + b"\0")
    job = JobFile(
        lockfile=lock.canonical.decode(),
        model={**files["model"], first: str(tampered)},
        dataset=files["dataset"],
    )
    (tmp_path / "job.json").write_bytes(msgspec.json.encode(job))
    out = tmp_path / "out"
    out.mkdir()
    assert worker.main([str(tmp_path / "job.json"), str(out)]) == 1
    result = json.loads((out / RESULT).read_text())
    assert result["status"] == "failed"
    assert "failed verification" in result["error"] and first in result["error"]


def test_worker_rejects_an_unreadable_job(tmp_path: Path) -> None:
    (tmp_path / "job.json").write_text("{}")
    assert worker.main([str(tmp_path / "job.json"), str(tmp_path)]) == 2
    assert not (tmp_path / RESULT).exists()


@pytest.mark.parametrize("framework", ["onnxruntime", "torch", "tensorflow"])
def test_requirements_locks_pin_one_wheel_each(framework: str) -> None:
    requirements = requirements_for(framework)
    names = [r.name for r in requirements]
    assert len(names) == len(set(names))
    assert all(len(r.hashes) == 1 and r.hashes[0].startswith("sha256:") for r in requirements)
    assert {"numpy", "msgspec", "mlcommons-loadgen"} <= set(names)
    assert parse_lock(requirements_text(requirements)) == sorted(requirements, key=lambda r: r.name)


def test_environment_digest_names_the_pinned_set() -> None:
    reqs = requirements_for("onnxruntime")

    def env(requirements: list[Requirement], python: str = "3.11") -> LockedEnvironment:
        return LockedEnvironment(
            framework="onnxruntime",
            version="1.31.0",
            platform=Platform(),
            image=None,
            requirements=requirements,
            python=python,
        )

    assert environment_digest(env(reqs)) == environment_digest(env(list(reversed(reqs))))
    assert environment_digest(env(reqs)) != environment_digest(env(reqs[1:]))
    assert environment_digest(env(reqs)) != environment_digest(env(reqs, python="3.12"))


def test_a_job_names_its_trace_level_only_when_tracing() -> None:
    """An image built before tracing existed still reads every untraced job."""
    plain = JobFile(lockfile="x", model={}, dataset={})
    traced = JobFile(lockfile="x", model={}, dataset={}, trace="full")
    assert "trace" not in json.loads(msgspec.json.encode(plain))
    assert json.loads(msgspec.json.encode(traced))["trace"] == "full"
