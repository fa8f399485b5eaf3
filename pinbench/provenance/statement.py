"""The in-toto Statement v1 of a recorded run, with SLSA Provenance v1 as its predicate.

Subjects are the run's outputs by sha256, each a blob in the store: the raw latencies
(``latencies.npy``), the accuracy outputs (``outputs.npy``), the trace (``trace.json``), a
training run's final weights (``weights.FORMAT``), a graph optimization's optimized graph
(``optimized.onnx``), LoadGen's own logs (``mlperf_log_summary.txt``, ``mlperf_log_detail.txt``,
``mlperf_log_accuracy.json``) and ``results.json``, the run's record
(status, error, metrics, details, lockfile, runner) as canonical JSON, stored as a blob when
the statement is made. The predicate's ``buildDefinition`` holds the lockfile (digest and its
exact canonical text) and the request; ``runDetails`` the builder (this registry's host, and
the cluster system that ran it), start and finish, and the run's runner, environment digest
and host facts.
"""

from __future__ import annotations

import socket
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Final

from pinbench.artifacts.canonical import canonical_json

if TYPE_CHECKING:
    from collections.abc import Callable

    from pinbench.artifacts.digest import Digest
    from pinbench.db.run_row import RunRow as Run
    from pinbench.registry.lockfile import Lockfile
    from pinbench.workspace import Workspace

STATEMENT: Final = "https://in-toto.io/Statement/v1"
SLSA_PROVENANCE: Final = "https://slsa.dev/provenance/v1"
BUILD_TYPE: Final = "urn:pinbench:run:v1"
RESULTS: Final = "results.json"
GRAPH_SUBJECT: Final = "optimized.onnx"
"""A graph-optimization run's optimized graph (``transform.optimized_graph_sha256``)."""


SIGNED_COLUMNS: Final = (
    "started_at",
    "finished_at",
    "host",
    "model",
    "model_version",
    "framework",
    "framework_version",
    "submitted_by",
    "retry_of",
    "latencies_sha256",
    "trace_sha256",
)
"""The run's columns ``results.json`` signs besides its outcome (issue 84, item 4): what a
listing, a gate's window, a series, a study and ``runs show`` read of a run. An attestation
made before they were signed holds none of them (``records.differs`` compares what it holds)."""


def results_record(run: Run) -> dict[str, Any]:
    """What ``results.json`` holds: the run as recorded, each column a reader trusts."""
    return {
        "run": run.id,
        "lockfile": run.lockfile_digest,
        "status": run.status,
        "error": run.error,
        "runner": run.runner,
        "system": run.system,
        "metrics": {r.metric: r.value for r in sorted(run.results, key=lambda r: r.metric)},
        "units": {r.metric: r.unit for r in sorted(run.results, key=lambda r: r.metric)},
        "details": run.details or {},
        "environment_digest": run.environment_digest,
        "trace_level": run.trace_level,
        "started_at": _iso(run.started_at),
        "finished_at": _iso(run.finished_at),
        "host": run.host,
        "model": run.model,
        "model_version": run.model_version,
        "framework": run.framework,
        "framework_version": run.framework_version,
        "submitted_by": run.submitted_by,
        "retry_of": run.retry_of,
        "latencies_sha256": run.latencies_sha256,
        "trace_sha256": run.trace_sha256,
    }


def subjects_of(run: Run, results_sha256: str) -> list[dict[str, Any]]:
    from pinbench.transforms.result import GRAPH_SHA256  # NumPy with it: not for verify

    details = run.details or {}
    found: list[tuple[str, str | None]] = [
        ("latencies.npy", run.latencies_sha256),
        ("outputs.npy", details.get("outputs_sha256")),
        ("trace.json", run.trace_sha256),
    ]
    training = details.get("training")
    if isinstance(training, dict):
        found.append((f"weights.{training.get('weights_format')}", training.get("weights_sha256")))
    transform = details.get("transform")
    if isinstance(transform, dict):
        found.append((GRAPH_SUBJECT, transform.get(GRAPH_SHA256)))
    logs = details.get("loadgen_logs")
    if isinstance(logs, dict):
        from pinbench.worker.loadgen_files import LOGS

        found += [(name, logs.get(kind)) for kind, name in LOGS.items()]
    found.append((RESULTS, results_sha256))
    return [
        {"name": name, "digest": {"sha256": sha}} for name, sha in found if isinstance(sha, str)
    ]


def statement_for(
    ws: Workspace,
    run: Run,
    lock: Lockfile,
    *,
    after_the_fact: bool,
    put: Callable[[bytes], Digest] | None = None,
) -> bytes:
    """The statement's canonical JSON for ``run`` (a row, or a record not yet written) run from
    ``lock``; its ``results.json`` stored as a blob (through ``put``, else
    ``ws.store.put_bytes``). Reads no database."""
    from pinbench import __version__

    results = (put or ws.store.put_bytes)(canonical_json(results_record(run)))
    builder = f"pinbench://{socket.gethostname()}"
    if run.system:
        builder += f"/systems/{run.system}"
    statement = {
        "_type": STATEMENT,
        "subject": subjects_of(run, results.hex),
        "predicateType": SLSA_PROVENANCE,
        "predicate": {
            "buildDefinition": {
                "buildType": BUILD_TYPE,
                "externalParameters": {
                    "lockfile": {"sha256": run.lockfile_digest, "body": lock.canonical.decode()},
                    "request": lock.to_json()["request"],
                },
                "internalParameters": {
                    "attested": "after the fact" if after_the_fact else "when recorded",
                    "attestedOn": _iso(datetime.now(UTC)),
                },
                "resolvedDependencies": [
                    {
                        "uri": f"pinbench:{a.kind}/{a.name}@{a.version}",
                        "digest": {"sha256": a.manifest_digest},
                    }
                    for a in lock.body.artifacts
                ],
            },
            "runDetails": {
                "builder": {"id": builder, "version": {"pinbench": __version__}},
                "metadata": {
                    "invocationId": run.id,
                    "startedOn": _iso(run.started_at),
                    "finishedOn": _iso(run.finished_at),
                },
                "byproducts": [
                    {
                        "name": "run",
                        "annotations": {
                            "status": run.status,
                            "runner": run.runner,
                            "system": run.system,
                            "environmentDigest": run.environment_digest,
                            "host": run.host,
                        },
                    }
                ],
            },
        },
    }
    return canonical_json(statement)


def _iso(value: datetime | None) -> str | None:
    if value is None:
        return None
    value = value if value.tzinfo else value.replace(tzinfo=UTC)
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
