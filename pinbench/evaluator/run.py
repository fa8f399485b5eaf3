"""Running a lockfile: verify every pinned byte, check the environment, measure, record.

A run record is written whole, in one transaction, when the run ends: succeeded, failed (with
its reason) or interrupted. Nothing is measured before every byte is verified.
"""

from __future__ import annotations

import io
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from pinbench.artifacts.digest import Digest
from pinbench.db.models import Result
from pinbench.db.models import Run as RunRow
from pinbench.errors import PinbenchError, UserError
from pinbench.evaluator.datasets import DatasetError, load_samples
from pinbench.evaluator.host import host_facts
from pinbench.evaluator.pipeline import pipeline_digest, preprocess
from pinbench.evaluator.predictors import predictor_class
from pinbench.evaluator.predictors.base import Predictor
from pinbench.evaluator.predictors.config import ModelFiles, PredictorOptions
from pinbench.evaluator.scenarios import Measurement, run_scenario
from pinbench.registry.lockfile import Lockfile, store_lockfile
from pinbench.registry.manifest import Input
from pinbench.registry.names import Kind
from pinbench.registry.verify import verify_lockfile
from pinbench.workspace import Workspace

RUNNERS = ("local",)
Say = Callable[[str], None]


class FrameworkMismatch(UserError):
    def __init__(self, *, framework: str, pinned: str, seen: str) -> None:
        super().__init__(
            f"this environment has {framework} {seen}, the lockfile pins {framework} {pinned}: "
            f"install exactly {framework}=={pinned} here, or use a runner that provides it "
            "(--runner venv | docker)"
        )
        self.framework = framework
        self.pinned = pinned
        self.seen = seen


class RunnerUnavailable(UserError):
    def __init__(self, *, runner: str) -> None:
        super().__init__(f"runner {runner!r} is not available yet; available: {', '.join(RUNNERS)}")
        self.runner = runner


@dataclass
class RunOutcome:
    id: str
    status: str
    metrics: dict[str, float] = field(default_factory=dict)
    error: str | None = None


@dataclass
class _Attempt:
    """What a run has gathered so far; recorded whole when it ends, however it ends."""

    lock: Lockfile
    runner: str
    id: str = field(default_factory=lambda: str(uuid.uuid4()))
    started: datetime = field(default_factory=lambda: datetime.now(UTC))
    status: str = "failed"
    error: str | None = None
    frameworks: dict[str, str] = field(default_factory=dict)
    details: dict[str, Any] = field(default_factory=dict)
    metrics: dict[str, float] = field(default_factory=dict)
    latencies: Digest | None = None


def run_lockfile(
    ws: Workspace, lock: Lockfile, *, runner: str = "local", say: Say = print
) -> RunOutcome:
    """Run ``lock`` and record the run, whatever its outcome; raise if it did not succeed."""
    if runner not in RUNNERS:
        raise RunnerUnavailable(runner=runner)
    with ws.transaction() as session:
        store_lockfile(session, lock)
    attempt = _Attempt(lock, runner)
    try:
        say("verifying every pinned byte")
        verify_lockfile(ws, lock)
        attempt.metrics, latencies = _measure(ws, lock, attempt.frameworks, attempt.details, say)
        attempt.latencies = _save_array(ws, latencies)
        attempt.status = "succeeded"
    except KeyboardInterrupt:
        attempt.status, attempt.error = "interrupted", "interrupted (SIGINT)"
        raise
    except PinbenchError as exc:
        attempt.error = str(exc)
        raise
    except BaseException as exc:
        attempt.error = f"{type(exc).__name__}: {exc}"
        raise
    finally:
        _record(ws, attempt)
    return RunOutcome(attempt.id, attempt.status, attempt.metrics)


def _measure(
    ws: Workspace,
    lock: Lockfile,
    frameworks: dict[str, str],
    details: dict[str, Any],
    say: Say,
) -> tuple[dict[str, float], npt.NDArray[np.int64]]:
    body = lock.body
    env = body.environment
    if env is None:
        raise UserError("the lockfile pins no framework environment for its platform")
    cls = predictor_class(env.framework)
    seen = cls.framework_version()
    frameworks[env.framework] = seen
    if public_version(seen) != env.version:
        raise FrameworkMismatch(framework=env.framework, pinned=env.version, seen=seen)

    model_art, data_art = lock.artifact(Kind.MODEL), lock.artifact(Kind.DATASET)
    assert model_art is not None and data_art is not None
    model_paths = {f.path: ws.store.path(Digest(f.sha256)) for f in model_art.files}
    data_paths = {f.path: ws.store.path(Digest(f.sha256)) for f in data_art.files}
    if not body.model.inputs:
        raise UserError(f"model {model_art.ref} declares no inputs")
    spec = body.model.inputs[0]
    samples = load_samples(body.dataset, data_art, data_paths)
    scenario = body.scenario
    if scenario.mode == "accuracy" and samples.labels is None:
        raise DatasetError(
            dataset=f"{body.dataset.name}@{body.dataset.version}",
            reason="an accuracy run needs labels and this dataset has none",
        )
    say("preprocessing (outside any timed region)")
    inputs, cached = _inputs(ws, body.dataset.manifest_digest, spec, samples.data)
    details.update(
        pipeline_digest=pipeline_digest(spec).hex,
        preprocess_cache_hit=cached,
        batch_size=body.batch_size,
        threads=body.threads,
        scenario=scenario.name,
        mode=scenario.mode,
    )
    predictor: Predictor = cls()
    options = PredictorOptions(batch_size=body.batch_size, threads=body.threads)
    predictor.open(
        ModelFiles(model_paths, body.model.format, body.model.architecture, body.model.trusted),
        options,
    )
    try:
        first = inputs[: body.batch_size]
        predictor.check_input(first)
        expected = _warm_up(predictor, first, options.warmup)
        say(f"running {scenario.name} ({scenario.mode}) with {env.framework} {seen}")
        measurement = run_scenario(
            predictor.predict,
            inputs,
            scenario,
            batch_size=body.batch_size,
            expected_latency_ns=expected,
            log_dir=ws.settings.home / "tmp" / "loadgen",
        )
    finally:
        predictor.close()
    metrics = measurement.summary()
    details["loadgen"] = measurement.loadgen
    if scenario.mode == "accuracy":
        assert samples.labels is not None
        indexes, outputs = _outputs(measurement)
        metrics.update(_accuracy(outputs, samples.labels[indexes]))
        details["outputs_sha256"] = _save_array(ws, outputs).hex
    return metrics, measurement.latencies_ns


def public_version(version: str) -> str:
    """``2.13.0+cpu`` -> ``2.13.0``: a PEP 440 local label names a build, not a release."""
    return version.split("+", 1)[0]


def _outputs(m: Measurement) -> tuple[list[int], npt.NDArray[np.generic]]:
    """The sample indexes answered, in order, and the model's outputs for them (stacked once,
    for accuracy and for cross-framework parity)."""
    indexes = sorted(m.outputs)
    return indexes, np.stack([np.asarray(m.outputs[i]) for i in indexes])


def _inputs(
    ws: Workspace, dataset_digest: str, spec: Input, data: npt.NDArray[np.generic]
) -> tuple[npt.NDArray[np.generic], bool]:
    """Preprocessed inputs, cached on disk by (dataset digest, pipeline digest)."""
    cache = ws.settings.home / "cache" / "inputs"
    path = cache / f"{dataset_digest[:32]}-{pipeline_digest(spec).hex[:32]}.npy"
    if path.exists():
        try:
            cached: npt.NDArray[np.generic] = np.load(path, allow_pickle=False)
            return cached, True
        except (ValueError, OSError):
            path.unlink(missing_ok=True)
    inputs = preprocess(data, spec)
    cache.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp.npy")
    np.save(tmp, inputs, allow_pickle=False)
    tmp.replace(path)
    return inputs, False


WARMUP_MIN_NS = 500_000_000
"""Warm up for at least half a second: a cold core (frequency, caches) made the first run in
a process up to 1.6x slower than the next ones on the digits model."""
WARMUP_MAX_CALLS = 100_000


def _warm_up(predictor: Predictor, batch: npt.NDArray[np.generic], count: int) -> int:
    """Untimed predictions (at least ``count`` and half a second); return the median time of
    the last ``count`` as LoadGen's expected latency."""
    times: list[int] = []
    start = time.perf_counter_ns()
    while len(times) < max(1, count) or (
        time.perf_counter_ns() - start < WARMUP_MIN_NS and len(times) < WARMUP_MAX_CALLS
    ):
        t0 = time.perf_counter_ns()
        predictor.predict(batch)
        times.append(time.perf_counter_ns() - t0)
    return int(np.median(times[-max(1, count) :]))


def _accuracy(outputs: npt.NDArray[np.generic], truth: npt.NDArray[np.int64]) -> dict[str, float]:
    scores = outputs.reshape(len(outputs), -1).astype(np.float64)
    order = np.argsort(-scores, axis=1, kind="stable")
    top1 = float(np.mean(order[:, 0] == truth))
    top5 = float(np.mean(np.any(order[:, :5] == truth[:, None], axis=1)))
    return {"top1": top1, "top5": top5, "accuracy_samples_count": float(len(truth))}


def _save_array(ws: Workspace, array: npt.NDArray[np.generic]) -> Digest:
    buf = io.BytesIO()
    np.save(buf, array, allow_pickle=False)
    return ws.store.put_bytes(buf.getvalue())


UNITS = {"_ns": "ns", "_sps": "samples/s", "_count": "count", "_bool": "bool"}


def unit_of(metric: str) -> str:
    for suffix, unit in UNITS.items():
        if metric.endswith(suffix):
            return unit
    return "ratio"


def _record(ws: Workspace, attempt: _Attempt) -> None:
    with ws.transaction() as session:
        session.add(
            RunRow(
                id=attempt.id,
                lockfile_digest=attempt.lock.digest.hex,
                status=attempt.status,
                runner=attempt.runner,
                started_at=attempt.started,
                finished_at=datetime.now(UTC),
                host=host_facts(attempt.frameworks),
                error=attempt.error,
                details=attempt.details,
                latencies_sha256=attempt.latencies.hex if attempt.latencies else None,
                results=[
                    Result(metric=k, value=v, unit=unit_of(k))
                    for k, v in sorted(attempt.metrics.items())
                ],
            )
        )


def array_of(ws: Workspace, digest: str, label: str) -> npt.NDArray[Any]:
    """A recorded array blob (raw latencies, accuracy outputs), verified before it is read."""
    path: Path = ws.store.verify(Digest(digest), label=f"{label} {digest[:12]}")
    out: npt.NDArray[Any] = np.load(path, allow_pickle=False)
    return out


def latencies_of(ws: Workspace, digest: str) -> npt.NDArray[np.int64]:
    return array_of(ws, digest, "latencies")
