"""Only the host names blobs (issue 63 item 6, DESIGN 15): which keys of a run's ``details``
refer to stored blobs is the host's list (``artifacts.blob_keys.RUN_BLOBS``), read by ``fsck``,
``gc --blobs`` and ``backup`` alike (``db.upkeep.referenced``). A digest the details hold of
bytes never stored (inline processing code, a chain stage's inline code) or a key a worker's
``result.json`` planted names no blob: after a run of inline code the home passes ``fsck`` and
backs up."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from pinbench.artifacts.blob_keys import RUN_BLOBS
from pinbench.artifacts.digest import Digest
from pinbench.db.backup import backup
from pinbench.db.upkeep import check, referenced
from pinbench.evaluator.records.run_blobs import (
    save_logs,
    save_postprocess,
    save_tokens,
    save_weights,
    store_graph,
)
from pinbench.evaluator.records.run_view import show_run
from pinbench.evaluator.run import run_lockfile
from pinbench.worker.job import Evidence
from pinbench.worker.results import read_results, write_results
from pinbench.workspace import Workspace
from tests.test_processing_code import CODE, _lock, _publish, _raw_dataset

A, B, C = "a1" * 32, "b2" * 32, "c3" * 32


def _nowhere(_: object) -> Path:
    return Path("/nonexistent/envelope")


def _referenced(details: object) -> dict[str, str]:
    """What ``fsck``, ``gc --blobs`` and ``backup`` take a run holding ``details`` to
    reference (its latencies and trace columns left empty)."""
    return referenced([], [("r1", None, None, details)], [], _nowhere)


def _code(where: str, digest: str) -> dict[str, Any]:
    """A code's record as ``processing.loading.Loaded.record`` writes it."""
    return {"code": where, "sha256": digest, "libraries": {"numpy": "2.0.0"}}


# (reason, a run's details): none of their digests is a blob
NOT_BLOBS = [
    (
        "inline preprocess and postprocess code (details.processing, processing.runs): the "
        "digest of source text held in the lockfile, never stored",
        {
            "processing": {
                "preprocess": _code("<inline>:prepare", A),
                "postprocess": _code("<inline>:finish", B),
                "python": "3.11.2",
            }
        },
    ),
    (
        "a chain stage's inline code and join (details.chain, chains.evaluate._record)",
        {
            "chain": {
                "stages": [
                    {
                        "name": "embed",
                        "model": "audio/embed@1.0.0",
                        "manifest_digest": "sha256:" + C,
                        "files": {"embed.onnx": C},
                        "wires": {},
                        "code": _code("<inline>:windows", A),
                        "join": _code("<inline>:join", B),
                    }
                ],
                "python": "3.11.2",
                "end_to_end": "latency_*",
            }
        },
    ),
    ("a key a worker's result.json planted at the top", {"evil_sha256": A}),
    ("a planted key nested in the details", {"scenario": {"evil_sha256": A}}),
    ("a planted key in a list", {"runs": [{"evil_sha256": A}]}),
    ("a planted key beside a host's key", {"training": {"checkpoint_sha256": A}}),
    ("a host's key at another place", {"weights_sha256": A, "training": {"outputs_sha256": B}}),
    (
        "the graph digest runs recorded before decision 180 (the graph was never kept)",
        {"transform": {"transform": "graph_optimization=all", "graph_sha256": A}},
    ),
    ("a host's key whose value is no sha256 (kept as recorded)", {"outputs_sha256": "x" * 64}),
    ("a host's key in upper case hex (no digest this store names)", {"outputs_sha256": A.upper()}),
    ("a host's key holding no string", {"outputs_sha256": None, "training": {"weights_sha256": 1}}),
    ("a host's parent that is no object", {"training": A, "generation": [A]}),
    ("no details at all (a run recorded before details)", None),
]


@pytest.mark.parametrize("details", [d for _, d in NOT_BLOBS], ids=[r for r, _ in NOT_BLOBS])
def test_digests_the_host_did_not_store_are_no_blob_references(details: object) -> None:
    assert _referenced(details) == {}


# (the host's blob: where run_blobs / run / transformrun put it, its path in the details)
BLOBS = [
    ("an accuracy run's outputs (evaluator.run)", ("outputs_sha256",)),
    ("postprocess code's times (run_blobs.save_postprocess)", ("postprocess_latencies_sha256",)),
    ("a training run's final weights (run_blobs.save_weights)", ("training", "weights_sha256")),
    ("a generation run's token times (run_blobs.save_tokens)", ("generation", "tokens_sha256")),
    (
        "a graph optimization's optimized graph (run_blobs.store_graph, decision 180)",
        ("transform", "optimized_graph_sha256"),
    ),
    ("LoadGen's summary log (run_blobs.save_logs)", ("loadgen_logs", "summary")),
    ("LoadGen's detail log (run_blobs.save_logs)", ("loadgen_logs", "detail")),
    ("LoadGen's accuracy log (run_blobs.save_logs)", ("loadgen_logs", "accuracy")),
]


def _at(path: tuple[str, ...], value: object) -> dict[str, Any]:
    *parents, key = path
    details: dict[str, Any] = {key: value}
    for parent in reversed(parents):
        details = {parent: details}
    return details


@pytest.mark.parametrize("path", [p for _, p in BLOBS], ids=[r for r, _ in BLOBS])
def test_each_blob_the_host_stores_for_a_run_is_referenced(path: tuple[str, ...]) -> None:
    details = _at(path, A)
    details.setdefault("processing", {"preprocess": _code("<inline>:prepare", B)})
    assert _referenced(details) == {A: f"run r1 {'.'.join(path)}"}


def test_the_host_s_list_is_these_blobs_and_no_other() -> None:
    """A new blob stored for a run is listed on purpose (and given a case above)."""
    assert sorted(RUN_BLOBS) == sorted(p for _, p in BLOBS)


def _digests(value: object, path: tuple[str, ...] = ()) -> set[tuple[str, ...]]:
    """The paths of a details' values that look like a sha256."""
    if isinstance(value, dict):
        return {p for k, v in value.items() for p in _digests(v, (*path, str(k)))}
    return {path} if isinstance(value, str) and len(value) == 64 else set()


def test_every_key_the_host_writes_for_a_stored_blob_is_listed(ws: Workspace) -> None:
    """The writers of ``run_blobs`` and ``transformrun`` store each blob under a listed key,
    and only there (the outputs' key, written by ``evaluator.run``, is walked end to end
    below)."""
    evidence = Evidence(
        details={"training": {}, "generation": {}, "transform": {}},
        weights=b"final weights",
        tokens=np.array([[1, 2, 3]], dtype=np.int64),
        postprocess=np.array([4, 5, 6], dtype=np.int64),
        graph=b"an optimized graph",
        logs={"summary": b"Result is : VALID", "detail": b":::MLLOG {}", "accuracy": b"[]"},
    )
    trains: Any = SimpleNamespace(body=SimpleNamespace(training=object()))
    put = ws.store.put_bytes
    save_weights(put, evidence, trains)
    save_tokens(put, evidence)
    save_postprocess(put, evidence)
    store_graph(put, evidence)
    save_logs(put, evidence)
    written = _digests(evidence.details)
    assert written == set(RUN_BLOBS) - {("outputs_sha256",)}
    labels = _referenced(evidence.details)
    assert sorted(labels.values()) == sorted(f"run r1 {'.'.join(p)}" for p in written)
    assert all(ws.store.has(Digest(d)) for d in labels)


def test_a_worker_claims_no_listed_key_and_plants_no_blob(tmp_path: Path) -> None:
    """What a worker's ``result.json`` writes at a listed path goes (the host records its own
    digest of the bytes it stored); a key of its own stays in the details, as data, and names
    no blob."""
    planted: dict[str, Any] = {"evil_sha256": A, "scenario": {"evil_sha256": A}}
    for path in RUN_BLOBS:
        *parents, key = path
        inner = planted
        for parent in parents:
            inner = inner.setdefault(parent, {})
        inner[key] = B
    planted["transform"]["graph_sha256"] = C  # an evaluator from before decision 180
    evidence = Evidence(latencies=np.array([10], dtype=np.int64), details=planted)
    write_results(tmp_path, "ab" * 32, evidence, None, {"python": "3.11.2"})
    _, got = read_results(tmp_path, "ab" * 32)
    assert got.details == {
        "evil_sha256": A,
        "scenario": {"evil_sha256": A},
        "training": {},
        "generation": {},
        "transform": {},
    }
    assert _referenced(got.details) == {}


def test_a_home_after_a_run_of_inline_code_passes_fsck_and_backs_up(
    digits: Workspace, catalog_dir: Path, tmp_path: Path
) -> None:
    """The issue's home: one run of a model whose ``preprocess`` and ``postprocess`` are inline
    code (no code file among its files): ``fsck`` finds no missing blob, ``backup`` takes the
    home."""
    ws = digits
    _raw_dataset(ws, tmp_path / "raw")
    inline = CODE + "\n# inline: no file of the artifact holds these bytes\n"
    model = _publish(
        ws,
        tmp_path / "models",
        catalog_dir,
        "7.0.0",
        preprocess={"code": inline, "function": "prepare"},
        postprocess={"code": inline, "function": "finish"},
    )
    outcome = run_lockfile(ws, _lock(ws, model), say=lambda _: None, allow_code=True)
    assert outcome.status == "succeeded"
    details = show_run(ws, outcome.id)["details"]
    assert not ws.store.has(Digest(details["processing"]["preprocess"]["sha256"]))  # no blob
    assert [(p.kind, p.detail) for p in check(ws).problems] == []
    backup(ws, tmp_path / "backup")
    manifest = json.loads((tmp_path / "backup" / "manifest.json").read_text())
    taken = {b["sha256"] for b in manifest["blobs"]}
    assert {details["outputs_sha256"], details["postprocess_latencies_sha256"]} <= taken
