"""What a run's evidence holds beyond numbers, stored as blobs as the run is recorded: raw
arrays (latencies, accuracy outputs, token times, post-processing times), a training run's
final weights and LoadGen's own logs; each digest is the one computed here, whatever an
evaluator claimed. Each key they write is one of ``artifacts.blob_keys.RUN_BLOBS``, the list
``fsck``, ``gc --blobs`` and ``backup`` read: a blob stored for a run under a new key is added
there.

Each is written through ``put`` (``evaluator.blob_wait.waiting_put``: a blob-store outage is
waited out, decision 284), never straight into the store."""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from pinbench.artifacts.digest import Digest
from pinbench.registry.lockfile import Lockfile
from pinbench.transforms.result import GRAPH_SHA256, LEGACY_GRAPH_SHA256
from pinbench.worker.job import Evidence

if TYPE_CHECKING:
    from pinbench.workspace import Workspace

Put = Callable[[bytes], Digest]
"""Stores bytes as a blob; their digest."""


def save_evidence(put: Put, evidence: Evidence, lock: Lockfile) -> tuple[Digest, Digest | None]:
    """A finished run's blobs: its raw latencies (their digest returned), its trace (its
    digest, or None: the trace's bytes stay in ``evidence`` for its summary), its accuracy
    outputs, and what ``save_weights``, ``save_tokens``, ``save_postprocess``,
    ``store_graph`` and ``save_logs`` keep; each digest computed here."""
    assert evidence.latencies is not None
    latencies = save_array(put, evidence.latencies)
    trace = put(evidence.trace) if evidence.trace is not None else None
    evidence.details.pop("outputs_sha256", None)  # the host's digest, or none
    if evidence.outputs is not None:
        evidence.details["outputs_sha256"] = save_array(put, evidence.outputs).hex
    save_weights(put, evidence, lock)
    save_tokens(put, evidence)
    save_postprocess(put, evidence)
    store_graph(put, evidence)
    save_logs(put, evidence)
    return latencies, trace


def save_logs(put: Put, evidence: Evidence) -> None:
    """LoadGen's own logs (``Evidence.logs``) as blobs, ``details.loadgen_logs``: each log's
    digest by its name (``loadgen_files.LOGS``), computed here."""
    logs, evidence.logs = evidence.logs, None
    evidence.details.pop("loadgen_logs", None)
    if logs:
        evidence.details["loadgen_logs"] = {
            kind: put(data).hex for kind, data in sorted(logs.items())
        }


def save_weights(put: Put, evidence: Evidence, lock: Lockfile) -> None:
    """A training run's final weights as a blob; the digest recorded is the one computed here,
    whatever the evaluator claimed, and only for a lockfile that trains."""
    training = evidence.details.get("training")
    weights, evidence.weights = evidence.weights, None
    if not isinstance(training, dict):
        return
    training.pop("weights_sha256", None)
    if weights is not None and lock.body.training is not None:
        training["weights_sha256"] = put(weights).hex


def save_tokens(put: Put, evidence: Evidence) -> None:
    """A text-generation run's raw token times (``Evidence.tokens``) as a blob, its digest
    computed here."""
    generation = evidence.details.get("generation")
    tokens, evidence.tokens = evidence.tokens, None
    if isinstance(generation, dict):
        generation.pop("tokens_sha256", None)
        if tokens is not None:
            generation["tokens_sha256"] = save_array(put, tokens).hex


def save_postprocess(put: Put, evidence: Evidence) -> None:
    """A model's ``postprocess`` code's raw times as a blob, its digest computed here."""
    times, evidence.postprocess = evidence.postprocess, None
    if times is not None:
        evidence.details["postprocess_latencies_sha256"] = save_array(put, times).hex


def save_array(put: Put, array: npt.NDArray[np.generic]) -> Digest:
    buf = io.BytesIO()
    np.save(buf, array, allow_pickle=False)
    return put(buf.getvalue())


def store_graph(put: Put, evidence: Evidence) -> None:
    """Host side: a graph-optimization run's optimized ONNX graph (``evidence.graph``) as a
    blob, its digest computed here as ``details["transform"]["optimized_graph_sha256"]``
    (decision 180); no other graph digest is kept (the evaluator's word is not the host's)."""
    transform = evidence.details.get("transform")
    graph, evidence.graph = evidence.graph, None
    if isinstance(transform, dict):
        transform.pop(LEGACY_GRAPH_SHA256, None)
        transform.pop(GRAPH_SHA256, None)
        if graph is not None:
            transform[GRAPH_SHA256] = put(graph).hex


def array_of(ws: Workspace, digest: str, label: str) -> npt.NDArray[Any]:
    """A recorded array blob (raw latencies, accuracy outputs), verified before it is read."""
    path = ws.store.verify(Digest(digest), label=f"{label} {digest[:12]}")
    out: npt.NDArray[Any] = np.load(path, allow_pickle=False)
    return out


def latencies_of(ws: Workspace, digest: str) -> npt.NDArray[np.int64]:
    return array_of(ws, digest, "latencies")
