"""Builders for test artifacts: files on disk and manifests that describe them."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml


@dataclass
class CliResult:
    code: int
    out: str
    err: str


Cli = Callable[..., CliResult]


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def write_files(root: Path, files: dict[str, bytes]) -> list[dict[str, Any]]:
    """Write files under root; return manifest file entries for them."""
    entries = []
    for rel, data in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        entries.append({"path": rel, "sha256": sha(data), "size": len(data)})
    return entries


def model_manifest(
    name: str,
    version: str,
    files: list[dict[str, Any]],
    framework: str = "onnxruntime",
    framework_range: str = ">=1.17 <2",
) -> dict[str, Any]:
    return {
        "kind": "model",
        "name": name,
        "version": version,
        "format": "onnx",
        "framework": {"name": framework, "range": framework_range},
        "files": files,
    }


def framework_manifest(
    name: str, version: str, image: dict[str, str] | None = None
) -> dict[str, Any]:
    env: dict[str, Any] = {"platform": {"arch": "amd64", "device": "cpu"}}
    if image:
        env["image"] = image
    else:
        env["requirements"] = [{"name": name, "version": version, "hashes": ["sha256:" + "a" * 64]}]
    return {"kind": "framework", "name": name, "version": version, "environments": [env]}


def dataset_manifest(name: str, version: str, files: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "kind": "dataset",
        "name": name,
        "version": version,
        "files": files,
        "labels": {"format": "class-index-npy", "path": files[-1]["path"]},
    }


def dump(path: Path, data: dict[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path
