"""Writing catalog manifests and their file entries."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from pinbench.artifacts.digest import hash_file


def entry(root: Path, path: Path) -> dict[str, Any]:
    """A manifest ``files`` entry for ``path`` (sourced relative to ``root``)."""
    digest, size = hash_file(path)
    rel = path.relative_to(root).as_posix()
    return {"path": path.name, "sha256": digest.hex, "size": size, "source": f"file:{rel}"}


def dump(path: Path, data: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def image_input(shape: list[int], steps: list[dict[str, Any]]) -> dict[str, Any]:
    return {"name": "x", "type": "image", "element_type": "float32", "shape": shape, "steps": steps}


CLASSIFICATION = {
    "name": "logits",
    "type": "classification",
    "steps": [{"softmax": {}}, {"topk": {"k": 5}}],
}
