"""The built-in catalog as three stages that hand files to each other (the DVC pipeline's
first stages, ``dvc.yaml``): prepare (the data) -> train (the weights) -> export (the model
files in each framework's format, with their manifests). Each stage writes into its own
folder; the manifests and model files come out byte for byte as ``build`` writes them in one
folder, since ``build`` calls the same functions (and ``train`` itself). ``train`` runs in the
pinned numeric environment of ``numerics``, so the weights are the same on every x86-64
machine with AVX2.

    DATA/     digits-train/ (train split), digits-test/ + dataset manifest, resnet50/images.npy
    WEIGHTS/  digits-logreg-VERSION/{coef,intercept}.npy, digits-cnn.safetensors,
              resnet50.safetensors
    CATALOG/  framework manifests, model files and model manifests
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from pinbench.catalog import (
    cnn,
    digits,
    efficientnet,
    frameworks,
    gpt,
    llama,
    numerics,
    photos,
    resnet,
)
from pinbench.catalog.packaged import PACKAGED
from pinbench.catalog.packaged import write_datasets as packaged_datasets
from pinbench.catalog.parts import TRAINED, check_parts
from pinbench.catalog.torch_files import load_safetensors
from pinbench.errors import UserError
from pinbench.sdk.files import folder

CNN_WEIGHTS = "digits-cnn.safetensors"
RESNET_WEIGHTS = "resnet50.safetensors"
GPT_FOLDER = "tiny-gpt"
ENGINES = ("onnxruntime-genai", "ctranslate2", "openvino-genai", "llama-cpp-python")
"""The LLM engines the catalog converts ``text/tiny-llama`` for (``engines.CONVERTERS``)."""


class UnknownEngines(UserError, ValueError):
    """Engines named for the ``llama`` part that the catalog does not convert for."""

    def __init__(self, *, unknown: list[str]) -> None:
        super().__init__(f"unknown engines {unknown}; engines: {', '.join(ENGINES)}")
        self.unknown = unknown


def check_engines(engines: Iterable[str] | None) -> tuple[str, ...]:
    """The engines chosen for the ``llama`` part, in ``ENGINES``' order (None: every one); an
    unknown one is refused."""
    if engines is None:
        return ENGINES
    if isinstance(engines, str):
        raise TypeError(f"engines: a list of engine names, not the one string {engines!r}")
    chosen = set(engines)
    unknown = sorted(chosen - set(ENGINES))
    if unknown:
        raise UnknownEngines(unknown=unknown)
    return tuple(e for e in ENGINES if e in chosen)


class MissingStageInput(UserError):
    """A stage's input folder lacks what the stage before it writes."""

    def __init__(self, *, folder: Path, missing: list[str], stage: str) -> None:
        what = "does not exist" if not folder.is_dir() else f"lacks {', '.join(missing)}"
        super().__init__(f"{folder} {what}: run `pinbench catalog {stage}` into it first")
        self.folder = folder
        self.missing = missing
        self.stage = stage


def _require(folder: Path, files: Iterable[str], stage: str) -> None:
    missing = [f for f in files if not (folder / f).is_file()]
    if missing or not folder.is_dir():
        raise MissingStageInput(folder=folder, missing=missing, stage=stage)


def prepare(out: Path, parts: Iterable[str]) -> list[Path]:
    """The digits train split (for ``train``), the digits test split as a dataset and, with
    ``resnet50``, the synthetic images; return the dataset manifests."""
    chosen = check_parts(parts)
    folder(out, option="OUT_DIR", parents=True)
    x_train, x_test, y_train, y_test = digits.digits_split()
    digits.save_train(out, x_train, y_train)
    manifests = [digits.write_dataset(out, x_test, y_test)]
    if "cnn" in chosen:
        manifests.append(digits.write_train_dataset(out, x_train, y_train))
    if "resnet50" in chosen:
        manifests.append(resnet.write_dataset(out))
    if "efficientnet" in chosen:
        manifests.append(photos.write_imagenet(out))
    manifests += packaged_datasets(out, chosen)
    if chosen & {"gpt", "llama"}:  # llama trains on gpt's text and answers its prompts
        gpt.write_text(out)
        manifests.append(gpt.write_dataset(out, out))
    return manifests


def train(data: Path, out: Path, parts: Iterable[str]) -> list[Path]:
    """Train the chosen parts' models on ``data``'s train split, in the pinned numeric
    environment (a child process unless this one runs in it); return the weight files."""
    chosen = check_parts(parts) & TRAINED
    _require(data, [f"{digits.TRAIN_DIR}/{name}" for name in digits.SPLIT_FILES], "prepare")
    if not chosen:
        return []
    if not numerics.pinned():
        names = ",".join(sorted(chosen))
        numerics.run_pinned(["catalog", "train", str(data), str(out), "--parts", names])
        return [out / name for name in weight_files(chosen)]
    folder(out, option="OUT_DIR", parents=True)
    x_train, y_train = digits.load_train(data)
    written = []
    if "digits" in chosen:
        written += digits.save_weights(out, digits.train_versions(x_train, y_train))
    if "cnn" in chosen:
        cnn.save_weights(out / CNN_WEIGHTS, cnn.train(x_train, y_train))
        written.append(out / CNN_WEIGHTS)
    if "resnet50" in chosen:
        resnet.save_weights(out / RESNET_WEIGHTS, resnet.init_weights())
        written.append(out / RESNET_WEIGHTS)
    if "gpt" in chosen:
        _require(data, [f"{gpt.TEXT_DIR}/train.txt"], "prepare")
        gpt.train(data, out / GPT_FOLDER)
        written += [out / GPT_FOLDER / name for name in gpt.FOLDER_FILES]
    if "llama" in chosen:
        _require(data, [f"{gpt.TEXT_DIR}/train.txt"], "prepare")
        llama.train(data, out / llama.FOLDER)
        written += [out / llama.FOLDER / name for name in llama.FOLDER_FILES]
    return written


def weight_files(parts: Iterable[str]) -> list[str]:
    """What ``train`` writes for ``parts`` (relative to its folder)."""
    chosen = check_parts(parts)
    files = []
    if "digits" in chosen:
        files += [
            f"digits-logreg-{version}/{name}"
            for version, _ in digits.MODEL_VERSIONS
            for name in digits.WEIGHT_FILES
        ]
    if "cnn" in chosen:
        files.append(CNN_WEIGHTS)
    if "resnet50" in chosen:
        files.append(RESNET_WEIGHTS)
    if "gpt" in chosen:
        files += [f"{GPT_FOLDER}/{name}" for name in gpt.FOLDER_FILES]
    if "llama" in chosen:
        files += [f"{llama.FOLDER}/{name}" for name in llama.FOLDER_FILES]
    return files


def framework_names(parts: Iterable[str], engines: Iterable[str] | None = None) -> list[str]:
    """The framework artifacts the chosen parts' models need, in publishing order (the
    ``llama`` part's: those of ``engines``, every engine where None)."""
    chosen = check_parts(parts)
    names = ["onnxruntime"]
    if chosen & {"cnn", "resnet50", "efficientnet"}:
        names.append("torch")
    if "cnn" in chosen:
        names.append("tensorflow")
    if chosen & {"gpt", "llama"}:
        names.append("transformers")
    if "llama" in chosen:
        names += check_engines(engines)
    for part, module in PACKAGED.items():
        if part in chosen:
            names += [name for name in module.frameworks if name not in names]
    return names


def export(weights: Path, out: Path, parts: Iterable[str]) -> list[Path]:
    """The chosen parts' model files (ONNX, safetensors, Keras) from ``weights``, with their
    manifests and the framework artifacts they need; return the manifests."""
    chosen = check_parts(parts)
    _require(weights, weight_files(chosen), "train")
    folder(out, option="OUT_DIR", parents=True)
    manifests = [frameworks.write(out, name) for name in framework_names(chosen)]
    if "digits" in chosen:
        manifests += digits.export_logreg(out, digits.load_weights(weights))
    if "cnn" in chosen:
        manifests += cnn.export(out, load_safetensors(weights / CNN_WEIGHTS))
    if "resnet50" in chosen:
        manifests += resnet.export(out, load_safetensors(weights / RESNET_WEIGHTS))
    if "efficientnet" in chosen:
        manifests += efficientnet.export(out)
    for part, module in PACKAGED.items():
        if part in chosen:
            manifests += module.export(out)
    if "gpt" in chosen:
        from pinbench.catalog import gpt_onnx

        manifests += gpt.export(out, weights / GPT_FOLDER)
        manifests += gpt_onnx.export(out, weights / GPT_FOLDER)
    if "llama" in chosen:
        manifests += llama_export(out, weights / llama.FOLDER)
    return manifests


def llama_export(out: Path, weights: Path, engines: Iterable[str] | None = None) -> list[Path]:
    """``text/tiny-llama`` and its conversions into each of ``engines``' formats (every
    engine's where None: ``catalog.engines``)."""
    from pinbench.catalog import engines as converters

    chosen = check_engines(engines)
    return llama.export(out, weights) + converters.export(out, weights, chosen)
