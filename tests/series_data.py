"""Synthetic series for the series, gate and alert tests: runs recorded directly in a registry
(lockfiles locked by it, metrics and raw latencies made here), no evaluation."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np

from pinbench.db.models import Result
from pinbench.db.models import Run as RunRow
from pinbench.evaluator.records.run_blobs import save_array
from pinbench.evaluator.records.run_filter import listing_columns
from pinbench.evaluator.run import unit_of
from pinbench.registry import service
from pinbench.registry.lockfile import Lockfile
from pinbench.registry.locking import store_lockfile
from pinbench.registry.request import parse_request
from pinbench.workspace import Workspace

T0 = datetime(2026, 1, 1, tzinfo=UTC)
LOGREG = "vision/digits-logreg"
SERIES = f"{LOGREG}:sklearn-digits-test:SingleStream:performance:b1:-"


def lock(ws: Workspace, version: str, **extra: Any) -> Lockfile:
    """The digits logreg at ``version`` on ONNX Runtime, SingleStream performance."""
    request = {
        "model": f"{LOGREG}@{version}",
        "framework": "onnxruntime@*",
        "dataset": "sklearn-digits-test@^1",
        **extra,
    }
    return service.lock_points(ws, parse_request(request))[0][0]


def record(
    ws: Workspace,
    locked: Lockfile,
    minute: int,
    latencies_ns: Sequence[float],
    *,
    system: str | None = None,
    trace: str = "none",
    status: str = "succeeded",
    extra: dict[str, float] | None = None,
) -> str:
    """A run of ``locked`` started at T0 + ``minute``: its raw latencies as a blob, their
    median as ``framework_latency_p50_ns``, throughput as its inverse; the id."""
    raw = np.asarray(latencies_ns, dtype=np.int64)
    digest = save_array(ws.store.put_bytes, raw).hex
    run_id = str(uuid.uuid4())
    metrics = {
        "framework_latency_p50_ns": float(np.median(raw)),
        "throughput_sps": 1e9 / float(np.mean(raw)),
        **(extra or {}),
    }
    with ws.transaction() as session:
        store_lockfile(session, locked)
        session.add(
            RunRow(
                id=run_id,
                lockfile_digest=locked.digest.hex,
                status=status,
                runner="local",
                started_at=T0 + timedelta(minutes=minute),
                finished_at=T0 + timedelta(minutes=minute, seconds=30),
                host={},
                system=system,
                trace_level=trace,
                latencies_sha256=digest,
                **listing_columns(locked),
            )
        )
        for metric, value in metrics.items():
            # each unit as a run records it (its name's suffix: ns, bool, ratio, samples/s)
            session.add(Result(run_id=run_id, metric=metric, value=value, unit=unit_of(metric)))
    return run_id


def latencies(rng: np.random.Generator, median_ns: float, n: int = 200) -> list[float]:
    """``n`` latencies around ``median_ns`` with 3 % noise (log-normal)."""
    return list(median_ns * np.exp(rng.normal(0.0, 0.03, n)))
