"""Where a Hugging Face folder keeps its processor's settings, read as data (issue 73, item 5).

transformers up to 4, and 5 for a feature extractor or image processor saved alone, writes
them to ``preprocessor_config.json``; transformers 5 saves a processor (an extractor beside a
tokenizer: ``Wav2Vec2Processor``) as ``processor_config.json``, the extractor's settings under
its ``feature_extractor`` (or ``image_processor``) key. Either is read the same way here; a
folder that holds both is read only where they agree, since which one transformers loads
depends on its version."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pinbench.artifacts.hf_json import HfFolderRefused, read_json

PREPROCESSOR = "preprocessor_config.json"
PROCESSOR = "processor_config.json"
NESTED = ("feature_extractor", "image_processor")
"""The keys of ``processor_config.json`` that hold an extractor's settings."""


def settings(path: Path, label: str) -> dict[str, Any]:
    """The extractor's settings in the file ``label`` (its bytes at ``path``): the whole
    object of a ``preprocessor_config.json``, the one ``NESTED`` object of a
    ``processor_config.json``."""
    doc = read_json(path, label)
    if not isinstance(doc, dict):
        raise HfFolderRefused(path=label, reason="not a JSON object")
    if label.rsplit("/", 1)[-1] != PROCESSOR:
        return doc
    held = [key for key in NESTED if key in doc]
    if len(held) != 1 or not isinstance(doc[held[0]], dict):
        raise HfFolderRefused(
            path=label,
            reason=f"a processor's settings are one object under {' or '.join(NESTED)}; "
            f"found {', '.join(held) or 'neither'}",
        )
    inner: dict[str, Any] = doc[held[0]]
    return inner


def processor_file(files: Mapping[str, Path], inside: Mapping[str, str]) -> str | None:
    """The artifact path of the file a folder's processor settings are read from (``inside``:
    the folder's own names to artifact paths), or None where it has neither."""
    older, newer = inside.get(PREPROCESSOR), inside.get(PROCESSOR)
    if older is None or newer is None:
        return older or newer
    if settings(files[newer], newer) != settings(files[older], older):
        raise HfFolderRefused(
            path=newer,
            reason=f"both {PREPROCESSOR} and {PROCESSOR} give the processor's settings, and "
            "they differ (which one transformers reads depends on its version): keep one",
        )
    return older
