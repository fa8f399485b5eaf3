"""A sentence-similarity run checks, on the first answer and before anything is timed, that
its embedding output after its steps is one vector per sample ``(N, D)`` (decision 115): an
output left as token states fails the run naming the output and both shapes, in every mode,
with nothing measured."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from pinbench import catalog as builtin
from pinbench.catalog import minilm
from pinbench.evaluator.history import list_runs
from pinbench.evaluator.pairs import SimilarityError
from pinbench.evaluator.run import run_lockfile
from pinbench.registry import service
from pinbench.registry.manifest import load_manifest
from pinbench.registry.publish import publish
from pinbench.registry.request import parse_request
from tests.helpers import published_workspace


def quiet(text: str) -> None:
    pass


@pytest.fixture(scope="module")
def text_catalog(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("catalog-minilm")
    builtin.build(root, ["minilm"])
    return root


def _without_pool(root: Path, tmp_path: Path) -> Path:
    """The catalog's model at 1.0.9 with only the l2_normalize step: token states stay
    ``(N, tokens, D)``."""
    data = yaml.safe_load((root / "model-minilm.yaml").read_text())
    data["version"] = "1.0.9"
    data["outputs"][0]["steps"] = [{"l2_normalize": {}}]
    folder = tmp_path / "variant"
    shutil.copytree(root / "minilm", folder / "minilm")
    for entry in data["files"]:
        entry["path"] = f"minilm/{entry['path']}"
        entry.pop("source", None)
    for spec in data["inputs"]:
        for step in spec["steps"]:
            step["tokenize"]["tokenizer"] = "minilm/tokenizer.json"
    manifest = folder / "m.yaml"
    manifest.write_text(yaml.safe_dump(data))
    return manifest


def test_token_states_are_refused_as_embeddings_before_timing(
    tmp_path: Path, text_catalog: Path
) -> None:
    ws = published_workspace(tmp_path, text_catalog)
    try:
        path = _without_pool(text_catalog, tmp_path)
        publish(ws, load_manifest(path), manifest_dir=path.parent, publisher="test")
        for mode in ("accuracy", "performance"):
            request: dict[str, Any] = {
                "model": f"{minilm.NAME}@1.0.9",
                "dataset": f"{minilm.DATASET}@1",
                "scenario": {"mode": mode},
            }
            with pytest.raises(SimilarityError) as caught:
                run_lockfile(ws, service.lock(ws, parse_request(request))[0], say=quiet)
            assert "embedding output 'last_hidden_state' of shape [1, " in str(caught.value)
            assert "want one vector per sample of the batch of 1, (N, D)" in str(caught.value)
        runs = list_runs(ws)
        assert [r["status"] for r in runs] == ["failed", "failed"]
        assert all("latency_p50_ns" not in r and "spearman" not in r for r in runs)
    finally:
        ws.close()
