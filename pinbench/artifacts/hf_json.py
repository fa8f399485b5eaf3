"""A Hugging Face folder's JSON files read as data, and the error that refuses a folder (shared
by ``hf_folder`` and ``hf_encdec``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pinbench.errors import UserError

MAX_CONFIG_BYTES = 4 * 1024 * 1024


class HfFolderRefused(UserError):
    """A Hugging Face folder pinbench will not load: which file, and why."""

    def __init__(self, *, path: str, reason: str) -> None:
        super().__init__(f"Hugging Face folder, {path}: {reason}")
        self.path = path
        self.reason = reason


def read_json(path: Path, label: str) -> Any:
    from pinbench.artifacts.jsonsafe import JsonRefused, load_json

    try:
        size = path.stat().st_size
        if size > MAX_CONFIG_BYTES:
            raise HfFolderRefused(
                path=label, reason=f"{size} bytes: at most {MAX_CONFIG_BYTES} for a JSON file"
            )
        return load_json(path.read_bytes())
    except JsonRefused as exc:
        raise HfFolderRefused(path=label, reason=str(exc)) from None
    except OSError as exc:
        raise HfFolderRefused(path=label, reason=f"cannot read: {exc.strerror}") from None
