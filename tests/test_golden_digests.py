"""Lockfile digests do not move when the code around them does (decision 124).

A lockfile's digest is its id, and a rerun finds its original by it: so a refactor of how
tasks, labels or steps are read must leave the bytes of every existing manifest and lockfile
alone. These manifests cover each task and each section a task reads; their manifest digests
and the digest of a lockfile locking each model with each dataset were computed with the code
of commit 8795859 (before tasks became a plug-in axis) and are recorded here.
"""

from __future__ import annotations

from typing import Any

import pytest

from pinbench.registry.lockfile import SCHEMA_VERSION, LockBody, Lockfile
from pinbench.registry.locking import _locked_dataset, _locked_model
from pinbench.registry.manifest import manifest_digest, parse_manifest
from pinbench.registry.names import ArtifactRef, Kind
from pinbench.registry.request import Request, Scenario, SystemRequest
from pinbench.registry.versions import parse_version

SHA = "ab" * 32


def _files(*paths: str) -> list[dict[str, Any]]:
    return [{"path": p, "sha256": SHA, "size": 10} for p in paths]


def _model(name: str, inputs: list[dict[str, Any]], outputs: list[dict[str, Any]]) -> Any:
    return {
        "kind": "model",
        "name": name,
        "version": "1.0.0",
        "framework": {"name": "onnxruntime", "range": "^1"},
        "format": "onnx",
        "files": _files("model.onnx", "labels.txt"),
        "inputs": inputs,
        "outputs": outputs,
    }


IMAGE_IN = {
    "name": "images",
    "type": "image",
    "shape": [1, 3, 64, 64],
    "steps": [
        {"decode": {"color_mode": "rgb"}},
        {"resize": {"size": [64, 64], "method": "bilinear"}},
        {"normalize": {"mean": [127.5, 127.5, 127.5], "std": [64.0, 64.0, 64.0]}},
        {"layout": {"to": "NCHW"}},
    ],
}
MODELS = {
    "classifier": _model(
        "vision/classifier",
        [IMAGE_IN],
        [{"name": "logits", "type": "classification", "steps": [{"softmax": {}}]}],
    ),
    "embedder": _model(
        "text/embedder",
        [{"name": "input_ids", "type": "text", "element_type": "int64", "shape": [1, 16]}],
        [
            {
                "name": "last_hidden_state",
                "type": "embedding",
                "steps": [{"pool": {"mode": "cls"}}, {"l2_normalize": {}}],
            }
        ],
    ),
    "detector": _model(
        "vision/detector",
        [IMAGE_IN],
        [
            {
                "name": "output0",
                "type": "detection",
                "labels": {"path": "labels.txt"},
                "detection": {
                    "layout": "yolov8",
                    "score_threshold": 0.25,
                    "nms": {"iou": 0.5, "max_detections": 50},
                },
            }
        ],
    ),
    "segmenter": _model(
        "vision/segmenter",
        [IMAGE_IN],
        [
            {
                "name": "out",
                "type": "segmentation",
                "segmentation": {"form": "logits", "layout": "NCHW"},
            }
        ],
    ),
}


FILES = ("images/a/1.png", "images/b/2.png", "labels.json", "names.txt", "x.txt")


def _dataset(
    name: str,
    task: str | None,
    labels: dict[str, Any],
    data: dict[str, Any],
    files: tuple[str, ...] = FILES,
) -> Any:
    doc = {
        "kind": "dataset",
        "name": name,
        "version": "2.1.0",
        "files": _files(*files),
        "labels": labels,
        "data": data,
    }
    return doc if task is None else doc | {"task": task}


IMAGES = {"format": "images", "path": "images"}
DATASETS = {
    "imagefolder": _dataset(
        "data/folders", None, {"format": "imagefolder", "names": "names.txt"}, IMAGES
    ),
    "other": _dataset("data/other", "other", {"format": "imagefolder"}, IMAGES),
    "pairs": _dataset(
        "data/pairs",
        "sentence-similarity",
        {"format": "similarity-pairs", "path": "x.txt"},
        {"format": "text-lines", "path": "names.txt"},
    ),
    "coco": _dataset(
        "data/coco", "detection", {"format": "coco-json", "path": "labels.json"}, IMAGES
    ),
    "masks": _dataset(
        "data/masks",
        "segmentation",
        {"format": "masks", "path": "masks", "classes": 3, "ignore_index": 255},
        {"format": "images", "path": "images"},
        ("images/1.png", "images/2.jpg", "masks/1.png", "masks/2.png"),
    ),
}
PAIRS = {
    "classifier": "imagefolder",
    "embedder": "pairs",
    "detector": "coco",
    "segmenter": "masks",
}

GOLDEN = {  # from commit 8795859: `python tests/test_golden_digests.py` there
    "classifier": "6f7d56c0f7d0cd22565ffaa15282c731b2817a96dc82b2dba12e4134ca7cb1ae",
    "coco": "083f691b86d2987335985bc53fd36abc9e43aa7f91f37d45504c26485588d5d3",
    "detector": "9c32cdbdcb51af5696f3b42f14e9382f7d2e6b6ac01a524a5b1108cf89d6e53f",
    "embedder": "32e3000ce358a7812321ccc30b6b179ffdbc54fbe9ba57cb61d0f6042e561b54",
    "imagefolder": "353fdc2d03882d157e5d79383beabf7545e344684d2d91154f4ea1e212465171",
    "lock classifier folders": "c65066fbe58e3607c5afd36c566d7f2b2aa44d7a52937e9b090dfd24d97da323",
    "lock classifier other": "15fcbe6ab02daa9f56e56a46f7c0011ea408ee23fc727b8d888404d7b57041e9",
    "lock detector coco": "e19fd435e7d097709c2f68f26841546820ebc760a22178b1e91bf56bd2e2c8db",
    "lock embedder pairs": "accf13696f9266a512e0f4f597e5d7903a9c0c9459a69c5fd45fcfef3fe5c518",
    "lock segmenter masks": "08922f96659ac850bdfad5940d6581437144bba3b053aea48acf9f2d65613127",
    "masks": "ceb49bb40801d83ded13248ff281245cf73b940c4d00a7022bdd8466e447fb51",
    "other": "7e68361fc6160aee408da571a690fb5ef0ba521fb2e875240495aacda8b7c271",
    "pairs": "c6cfc937ac65331c159a82a42c2ecd0aeae6beca0101441c00eb300401338cea",
    "segmenter": "fa262ce0f46a15793e5df782adc7869fde9cde635a2ccf812efa57c89b280f2b",
}


def digests() -> dict[str, str]:
    found: dict[str, str] = {}
    manifests = {}
    for key, doc in {**MODELS, **DATASETS}.items():
        manifest = parse_manifest(doc, source=key)
        manifests[key] = manifest
        found[key] = manifest_digest(manifest).hex
    for model, dataset in [*PAIRS.items(), ("classifier", "other")]:
        m, d = manifests[model], manifests[dataset]
        mref = ArtifactRef(Kind.MODEL, m.name, parse_version(m.version))
        dref = ArtifactRef(Kind.DATASET, d.name, parse_version(d.version))

        class _Pinned:
            manifest_digest = found[dataset]

        body = LockBody(
            schema_version=SCHEMA_VERSION,
            request=Request(
                model=f"{m.name}@1.0.0",
                dataset=f"{d.name}@2.1.0",
                scenario=Scenario(name="SingleStream", mode="accuracy"),
            ),
            artifacts=[],
            environment=None,
            model=_locked_model(mref, m),
            dataset=_locked_dataset(dref, d, {dref: _Pinned()}),  # type: ignore[dict-item]
            scenario=Scenario(name="SingleStream", mode="accuracy"),
            batch_size=1,
            threads=1,
            sweep=None,
            system=SystemRequest(),
        )
        short = "folders" if dataset == "imagefolder" else dataset
        found[f"lock {model} {short}"] = Lockfile(body).digest.hex
    return found


@pytest.mark.parametrize("key", sorted(GOLDEN))
def test_digest_is_what_it_was(key: str) -> None:
    assert digests()[key] == GOLDEN[key]


if __name__ == "__main__":  # prints the table (run with the old code to fill GOLDEN)
    for k, v in sorted(digests().items()):
        print(f'    "{k}": "{v}",')
