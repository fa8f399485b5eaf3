"""Framework artifacts of the built-in catalog: the manifests of
``pinbench.environments.frameworks`` written as YAML files."""

from __future__ import annotations

from pathlib import Path

from pinbench.catalog.files import dump
from pinbench.environments.frameworks import (
    IMAGE_RANGE,
    VERSIONS,
    artifact_version,
    image_name,
    manifest_data,
)

__all__ = ["IMAGE_RANGE", "VERSIONS", "image_name", "manifest_data", "write"]


def write(root: Path, name: str) -> Path:
    """``name``'s catalog artifact; under a bumped version it names the release it installs."""
    version, release = artifact_version(name), VERSIONS[name]
    data = manifest_data(name, version, installs=release if version != release else None)
    return dump(root / f"framework-{name}.yaml", data)
