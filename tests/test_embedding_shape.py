"""A sentence-similarity run checks, on the first answer and before anything is timed, that
its embedding output after its steps is one vector per sample ``(N, D)`` (decision 115): an
output left as token states fails the run naming the output and both shapes, in every mode,
with nothing measured."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pinbench.catalog import minilm
from pinbench.evaluator.records.run_list import list_runs
from pinbench.evaluator.run import run_lockfile
from pinbench.evaluator.runners.process import EvaluationFailed
from pinbench.registry import service
from pinbench.registry.manifest import load_manifest
from pinbench.registry.publish import publish
from pinbench.registry.request import parse_request
from tests.helpers import minilm_variant, published_workspace


def quiet(text: str) -> None:
    pass


def _without_pool(data: dict[str, Any]) -> None:
    """Only the l2_normalize step: token states stay ``(N, tokens, D)``."""
    data["outputs"][0]["steps"] = [{"l2_normalize": {}}]


def test_token_states_are_refused_as_embeddings_before_timing(
    tmp_path: Path, text_catalog: Path
) -> None:
    ws = published_workspace(tmp_path, text_catalog)
    try:
        path = minilm_variant(text_catalog, tmp_path, "1.0.9", _without_pool)
        publish(ws, load_manifest(path), manifest_dir=path.parent, publisher="test")
        for mode in ("accuracy", "performance"):
            request: dict[str, Any] = {
                "model": f"{minilm.NAME}@1.0.9",
                "dataset": f"{minilm.DATASET}@1",
                "scenario": {"mode": mode},
            }
            with pytest.raises(EvaluationFailed) as caught:
                run_lockfile(ws, service.lock(ws, parse_request(request))[0], say=quiet)
            assert "embedding output 'last_hidden_state' of shape [1, " in str(caught.value)
            assert "want one vector per sample of the batch of 1, (N, D)" in str(caught.value)
        runs = list_runs(ws)
        assert [r["status"] for r in runs] == ["failed", "failed"]
        assert all("latency_p50_ns" not in r and "spearman" not in r for r in runs)
    finally:
        ws.close()
