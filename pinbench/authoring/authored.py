"""What authoring a manifest gives: its data and the notes for its author (``Authored``), and
the artifact name a model file suggests."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True, slots=True)
class Authored:
    """A manifest's data (valid) and what the author should still check."""

    data: dict[str, Any]
    notes: list[str]
    beside: dict[Path, bytes] = field(default_factory=dict)
    """Files to write with the manifest (a dataset's file index), by where they go."""
    comments: dict[str, str] = field(default_factory=dict)
    """A comment for a top-level field, written beside it in the YAML (``trusted: false  #
    what true means``)."""


def default_name(model: Path) -> str:
    """The model file's stem (a SavedModel's folder name) as an artifact name."""
    stem = model.name if model.is_dir() else model.stem
    name = re.sub(r"[^a-z0-9._-]+", "-", stem.lower()).lstrip("._-")
    return name or "model"
