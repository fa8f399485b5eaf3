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


TOKENIZER_CONFIG = "tokenizer_config.json"


def word_delimiter(files: dict[str, Path]) -> tuple[str, str] | None:
    """``(path, token)``: the word delimiter a CTC tokenizer's ``tokenizer_config.json`` among
    ``files`` names (``word_delimiter_token``: a string, or transformers' ``AddedToken``
    object), or None where no such file names one (a folder has one config at most)."""
    configs = sorted(
        p for p in files if p == TOKENIZER_CONFIG or p.endswith("/" + TOKENIZER_CONFIG)
    )
    for label in configs:
        doc = read_json(files[label], label)
        token = doc.get("word_delimiter_token") if isinstance(doc, dict) else None
        if isinstance(token, dict):
            token = token.get("content")
        if isinstance(token, str) and token:
            return label, token
    return None
