"""A home with history: one recorded run of every kind ``pinbench demo`` makes (an inference run
of each task, performance and accuracy, a generating run's token latencies, a traced run, an
operator run, a training run and a distributed one), written straight into the registry from
one inference lockfile (no evaluation), for what reading commands load (``test_cli_imports``)
and cost (``bench/bench_cli_work.py``).

Each task's run is the lockfile's dataset given that task (a label format the task reads) and
recorded with every metric the task declares, so that naming each of them is exercised.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from pinbench import typed
from pinbench.config import Settings
from pinbench.db.models import Result
from pinbench.db.models import Run as RunRow
from pinbench.evaluator.records.run_filter import listing_columns
from pinbench.evaluator.run import unit_of
from pinbench.registry import service
from pinbench.registry.lockfile import LockBody, Lockfile
from pinbench.registry.locking import store_lockfile
from pinbench.registry.manifest import load_manifest
from pinbench.registry.publish import publish
from pinbench.registry.request import parse_request
from pinbench.tasks.registry import TASKS, task
from pinbench.workspace import Workspace
from tests.helpers import (
    dataset_manifest,
    dump,
    framework_manifest,
    model_manifest,
    tiny_onnx,
    write_files,
)

T0 = datetime(2026, 2, 1, tzinfo=UTC)
LOADGEN = {
    "latency_p50_ns": 41_000.0,
    "latency_p90_ns": 52_000.0,
    "latency_p99_ns": 80_000.0,
    "framework_latency_p50_ns": 35_000.0,
    "framework_latency_p90_ns": 40_000.0,
    "throughput_sps": 21_000.0,
    "framework_throughput_sps": 26_000.0,
    "queries_count": 1_000.0,
    "loadgen_valid_bool": 1.0,
    "peak_rss_bytes": 2.0e8,
    "machine_others_cpu_ratio": 0.02,
}
"""A performance run's figures, as LoadGen and the host record them."""
TOKENS = {
    "ttft_p50_ns": 2.1e6,
    "tpot_p50_ns": 4.0e5,
    "throughput_tps": 2_400.0,
    "framework_throughput_tps": 2_600.0,
    "tokens_count": 512.0,
    "tokens_per_sample_mean_count": 8.0,
}
"""A generating run's token figures (MLPerf's TTFT and TPOT)."""
OPERATOR = {
    "operator": {"op": "matmul", "params": {"m": 16, "n": 16, "k": 16}, "samples": 5},
    "framework": "onnxruntime@*",
    "threads": 1,
}


def _lock(data: dict[str, Any]) -> Lockfile:
    return Lockfile(typed.convert(data, LockBody))


def task_lock(base: Lockfile, name: str) -> Lockfile:
    """``base`` (an inference lockfile) in accuracy mode on its dataset given task ``name``."""
    chosen = task(name)
    data = json.loads(base.canonical)
    fmt = chosen.label_formats[0]
    labels: dict[str, Any] = {"format": fmt, "path": "labels.txt"}
    dataset = data["dataset"]
    if fmt in chosen.by_file_name:
        dataset["data"] = {"format": "files", "path": "."}
    if fmt == "masks":
        labels["classes"] = 2
        dataset["data"] = {"format": "images", "path": "."}
    if fmt == "reference-image-npy":  # the references' value range is needed
        labels["data_range"] = 1.0
    if fmt == "prompt-references":  # each prompt's reference, in the prompts file
        labels = {"format": fmt}
        dataset["data"] = {"format": "prompts-jsonl", "path": "prompts.jsonl"}
    if chosen.generates:
        data["request"]["generation"] = {"max_new_tokens": 8}
    dataset.update(task=name, labels=labels)
    for scenario in (data["scenario"], data["request"]["scenario"]):
        scenario["mode"] = "accuracy"
    return _lock(data)


def training_lock(base: Lockfile, *, distributed: bool) -> Lockfile:
    """``base`` as a training run on torch (a distributed one over two workers)."""
    data = json.loads(base.canonical)
    training = {"validation": "bench/validation@^1", "epochs": 1, "target_top1": 0.5}
    data["training"] = training
    data["request"]["training"] = training
    data["validation"] = {**data["dataset"], "name": "bench/validation"}
    data["environment"]["framework"] = "torch"
    data["request"]["framework"] = "torch@*"
    if distributed:
        data["request"]["distributed"] = {"scheme": "allreduce", "workers": 2}
    return _lock(data)


def task_metrics(name: str) -> dict[str, float]:
    """Every metric task ``name`` declares (a per-output one for an output ``logits``)."""
    found: dict[str, float] = {}
    for m in task(name).metrics:
        key = f"{m.name}_logits" if m.per_output else m.name
        found[key] = 100.0 if m.unit == "count" else 0.75
    return found


def record_run(
    ws: Workspace,
    locked: Lockfile,
    minute: int,
    metrics: dict[str, float],
    *,
    trace: str = "none",
    details: dict[str, Any] | None = None,
) -> str:
    """A succeeded run of ``locked`` started at ``T0`` + ``minute`` with ``metrics``; its id."""
    run_id = str(uuid.uuid4())
    with ws.transaction() as session:
        store_lockfile(session, locked)
        session.add(
            RunRow(
                id=run_id,
                lockfile_digest=locked.digest.hex,
                status="succeeded",
                runner="local",
                started_at=T0 + timedelta(minutes=minute),
                finished_at=T0 + timedelta(minutes=minute, seconds=30),
                host={},
                details=details,
                trace_level=trace,
                **listing_columns(locked),
            )
        )
        for metric, value in metrics.items():
            session.add(Result(run_id=run_id, metric=metric, value=value, unit=unit_of(metric)))
    return run_id


def record_every_kind(ws: Workspace, base: Lockfile) -> dict[str, str]:
    """One run of each kind, from ``base`` (an inference lockfile whose framework,
    onnxruntime, is published in ``ws``): the run ids by kind (``performance``, ``traced``,
    ``operator``, ``training``, ``distributed``, ``generating``, and each task's name)."""
    runs = {
        "performance": record_run(ws, base, 0, LOADGEN),
        "traced": record_run(ws, base, 1, LOADGEN, trace="full"),
    }
    for i, name in enumerate(TASKS, start=2):
        metrics = task_metrics(name)
        details = None
        if name == "classification":  # one metric left out as undefined, with its reason
            left_out = next(iter(metrics))
            del metrics[left_out]
            details = {"undefined_metrics": {left_out: "no sample was scored"}}
        runs[name] = record_run(ws, task_lock(base, name), i, metrics, details=details)
    generating = task_lock(base, "text-generation")
    runs["generating"] = record_run(ws, generating, 20, {**LOADGEN, **TOKENS})
    operator = service.lock(ws, parse_request(OPERATOR))[0]
    runs["operator"] = record_run(ws, operator, 21, {"latency_p50_ns": 9_000.0, "valid_bool": 1.0})
    trained = {"throughput_sps": 900.0, "time_to_accuracy_s": 4.2, "top1": 0.8}
    runs["training"] = record_run(ws, training_lock(base, distributed=False), 22, trained)
    runs["distributed"] = record_run(ws, training_lock(base, distributed=True), 23, trained)
    return runs


SERIES = "bench/model:bench/data:SingleStream:performance:b1:-"
"""The performance runs' series, with a threshold on ``framework_latency_p50_ns``."""
EARLIER = 4
"""Performance runs recorded before the others, with raw latencies: what ``gate`` judges the
``performance`` run against."""


@dataclass(frozen=True)
class History:
    home: Path
    database_url: str
    runs: dict[str, str]
    """Run ids by kind (``record_every_kind``)."""
    lockfile: Path
    request: Path


def history_home(root: Path) -> History:
    """A home (SQLite) with a framework, a model (a tiny ONNX graph) and a dataset published,
    one request locked, ``EARLIER`` performance runs of it, one run of every kind
    (``record_every_kind``) and a threshold on the performance series."""
    import numpy as np

    from pinbench.registry.request_file import load_request
    from pinbench.sdk.registry import Registry
    from tests.series_data import latencies
    from tests.series_data import record as record_with_latencies

    home = root / "home"
    url = f"sqlite:///{home / 'pinbench.db'}"
    model = write_files(root / "model", {"model.onnx": tiny_onnx(b"history")})
    data = write_files(root / "data", {"x.npy": b"samples", "y.npy": b"labels"})
    manifests = [
        dump(root / "framework.yaml", framework_manifest("onnxruntime", "1.17.3")),
        dump(root / "model" / "model.yaml", model_manifest("bench/model", "1.0.0", model)),
        dump(root / "data" / "dataset.yaml", dataset_manifest("bench/data", "1.0.0", data)),
    ]
    request = dump(
        root / "request.yaml",
        {
            "model": "bench/model@^1",
            "framework": "onnxruntime@>=1.17 <2",
            "dataset": "bench/data@^1",
            "system": {"arch": "amd64", "device": "cpu"},
        },
    )
    ws = Workspace(Settings(home=home, database_url=url))
    try:
        ws.init()
        for path in manifests:
            publish(ws, load_manifest(path), manifest_dir=path.parent, publisher="test")
        base, _ = service.lock(ws, load_request(request))
        lockfile = root / "history.lock"
        base.write(lockfile)
        rng = np.random.default_rng(83)
        for minute in range(EARLIER):
            record_with_latencies(ws, base, minute, latencies(rng, 40_000))
        runs = record_every_kind(ws, base)
    finally:
        ws.close()
    with Registry(home, database_url=url) as registry:
        registry.series().set_threshold(SERIES, "framework_latency_p50_ns", test="t")
    return History(home, url, runs, lockfile, request)
