"""Texts at their own length, as the field feeds them (issue 86, item 1): a ``tokenize`` step
with ``padding: longest`` feeds each text as it tokenizes, and a batch of several padded at the
end to its longest (the tokenizer's pad id, attention mask 0); `manifest model` writes a text
classifier so, and its run equals transformers' text-classification pipeline on each text alone
and on one batch of all of them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.helpers import dump, sha
from tests.test_hf_folders import SENTENCES, _bert_folder


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Path]:
    import pinbench
    from pinbench.authoring.model import model_manifest
    from pinbench.catalog import frameworks

    root = tmp_path_factory.mktemp("texts")
    folder = _bert_folder(root / "bert")
    data = model_manifest([folder], base=root).data
    data["name"], data["version"] = "text/bert", "1.0.0"
    registry = pinbench.Registry(root / "home")
    registry.init()
    registry.publish(frameworks.write(root, "transformers"))
    registry.publish(dump(root / "bert.yaml", data))
    (root / "sentences.txt").write_text("".join(s + "\n" for s in SENTENCES))
    (root / "labels.txt").write_text("".join(f"{i % 3}\n" for i in range(len(SENTENCES))))
    files = [
        {"path": n, "sha256": sha((root / n).read_bytes())} for n in ("sentences.txt", "labels.txt")
    ]
    registry.publish(dump(root / "texts.yaml", {
        "kind": "dataset", "name": "texts", "version": "1.0.0", "task": "classification",
        "data": {"format": "text-lines", "path": "sentences.txt"},
        "labels": {"format": "class-index-txt", "path": "labels.txt", "classes": 3},
        "files": files,
    }))  # fmt: skip
    return registry, folder


def test_a_text_classifier_is_written_to_take_each_text_at_its_own_length(
    home: tuple[Any, Path],
) -> None:
    from pinbench.authoring.model import model_manifest

    _, folder = home
    inputs = model_manifest([folder], base=folder.parent).data["inputs"]
    assert {i["name"] for i in inputs} == {"input_ids", "token_type_ids", "attention_mask"}
    for spec in inputs:
        assert "shape" not in spec and spec["steps"][0]["tokenize"]["padding"] == "longest"


@pytest.mark.parametrize("batch_size", [1, len(SENTENCES)])
def test_a_text_classifier_answers_as_the_text_classification_pipeline(
    home: tuple[Any, Path], tmp_path: Path, batch_size: int
) -> None:
    """Batch 1: each text alone (no padding at all); one batch of all six: padded to the
    longest with the mask, as the pipeline's collate pads them."""
    from transformers import pipeline

    registry, folder = home
    lock = registry.lock(
        {"model": "text/bert@1", "dataset": "texts@1", "batch_size": batch_size,
         "scenario": {"mode": "accuracy", "name": "Offline"}}
    )[0]  # fmt: skip
    run = lock.run(runner="local")
    assert run.status == "succeeded", run.info.get("error")
    run.export_outputs(tmp_path / "o.npy")
    logits = np.load(tmp_path / "o.npy", allow_pickle=False).astype(np.float64)
    pipe: Any = pipeline(
        "text-classification", model=str(folder), tokenizer=str(folder), device="cpu"
    )
    got = pipe(SENTENCES, top_k=None, batch_size=batch_size, function_to_apply="none")
    labels = pipe.model.config.id2label
    theirs = np.array([[{d["label"]: d["score"] for d in one}[labels[c]] for c in range(3)]
                       for one in got])  # fmt: skip
    np.testing.assert_allclose(logits, theirs, rtol=0, atol=1e-5)


def test_pooling_texts_of_their_own_lengths_is_refused_until_it_is_built(tmp_path: Path) -> None:
    from pinbench.registry.manifest import parse_manifest
    from pinbench.registry.manifest_parts import ManifestError
    from tests.helpers import write_files

    step = {"tokenize": {"tokenizer": "t.json", "max_length": 8, "padding": "longest"}}
    document = {
        "kind": "model", "name": "t/m", "version": "1.0.0", "format": "onnx",
        "framework": {"name": "onnxruntime", "range": "^1"},
        "files": write_files(tmp_path, {"m.onnx": b"-", "t.json": b"{}"}),
        "inputs": [{"name": "ids", "type": "text", "element_type": "int64", "steps": [step]}],
        "outputs": [{"name": "h", "type": "embedding",
                     "steps": [{"pool": {"mode": "mean", "mask": "ids"}}]}],
    }  # fmt: skip
    with pytest.raises(ManifestError, match="pooling answers of different lengths is not built"):
        parse_manifest(document)
