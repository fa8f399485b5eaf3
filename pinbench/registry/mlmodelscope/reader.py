"""Reading an MLModelScope manifest field by field: the refusal error, the notes, and values
checked at the edge with the field's path (``inputs[0].parameters.mean``) in every message."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, NoReturn

from pinbench.errors import UserError


class MLModelScopeError(UserError):
    """An MLModelScope manifest that cannot be imported: the field (a path such as
    ``inputs[0].parameters.mean``, empty for the whole document) and the reason."""

    def __init__(self, *, source: str, field: str, reason: str) -> None:
        where = f"`{field}` " if field else ""
        super().__init__(f"cannot import MLModelScope manifest {source}: {where}{reason}")
        self.source = source
        self.field = field
        self.reason = reason


@dataclass(frozen=True, slots=True)
class Note:
    """Something the importer decided that the reader should know, on one field."""

    field: str
    message: str

    def __str__(self) -> str:
        return f"{self.field}: {self.message}"


@dataclass(slots=True)
class Reader:
    """One manifest, read twice: ``typed`` with YAML's types, ``raw`` with every scalar as its
    text. Names, versions, paths, URLs and digests come from ``raw`` (``version: 1.10`` must not
    become 1.1, an all-digit md5 must not become a number); numbers, booleans and layer indices
    from ``typed``."""

    typed: dict[str, Any]
    raw: dict[str, Any]
    source: str
    notes: list[Note] = dataclasses.field(default_factory=list)

    def refuse(self, field: str, reason: str) -> NoReturn:
        raise MLModelScopeError(source=self.source, field=field, reason=reason)

    def note(self, field: str, message: str) -> None:
        self.notes.append(Note(field, message))

    def raw_at(self, *path: str | int) -> object:
        node: object = self.raw
        for step in path:
            if isinstance(node, dict) and isinstance(step, str):
                node = node.get(step)
            elif isinstance(node, list) and isinstance(step, int) and step < len(node):
                node = node[step]
            else:
                return None
        return node

    def text(self, field: str, *path: str | int, required: str = "") -> str | None:
        """The text of the scalar at ``path`` (None when absent or empty); ``required`` says why
        it must be there."""
        value = self.raw_at(*path)
        if isinstance(value, str) and value.strip():
            return value.strip()
        if value is not None and value != "":
            self.refuse(field, f"must be text, got a {kind_of(value)}")
        if required:
            self.refuse(field, f"is required: {required}")
        return None

    def required_text(self, field: str, *path: str | int, why: str) -> str:
        text = self.text(field, *path, required=why)
        assert text is not None
        return text

    def mapping(self, value: object, field: str) -> dict[str, Any]:
        if value is None:
            return {}
        if not isinstance(value, dict):
            self.refuse(field, f"must be a mapping, got a {kind_of(value)}")
        return {str(k): v for k, v in value.items()}

    def sequence(self, value: object, field: str) -> list[Any]:
        if value is None:
            return []
        if not isinstance(value, list):
            self.refuse(field, f"must be a list, got a {kind_of(value)}")
        return value

    def flag(self, value: object, field: str) -> bool:
        if value is None:
            return False
        if not isinstance(value, bool):
            self.refuse(field, f"must be true or false, got {value!r}")
        return value

    def check_keys(self, mapping: dict[str, Any], known: Iterable[str], prefix: str) -> None:
        allowed = sorted(known)
        for key in mapping:
            if key not in allowed:
                self.refuse(
                    prefix + key,
                    f"is not a field pinbench imports (known here: {', '.join(allowed)})",
                )


def kind_of(value: object) -> str:
    if isinstance(value, dict):
        return "mapping"
    if isinstance(value, list):
        return "list"
    return "text" if isinstance(value, str) else type(value).__name__
