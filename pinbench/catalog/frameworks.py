"""Framework artifacts of the built-in catalog: the manifests of
``pinbench.environments.frameworks`` written as YAML files."""

from __future__ import annotations

from pathlib import Path

from pinbench.catalog.files import dump
from pinbench.environments.frameworks import IMAGE_RANGE, VERSIONS, image_name, manifest_data

__all__ = ["IMAGE_RANGE", "VERSIONS", "image_name", "manifest_data", "write"]


def write(root: Path, name: str) -> Path:
    return dump(root / f"framework-{name}.yaml", manifest_data(name, VERSIONS[name]))
