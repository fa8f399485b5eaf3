"""Long ``IN (...)`` lists in pieces: SQLite binds at most 32,766 parameters in one statement
and PostgreSQL's protocol 65,535, so a list of ids as long as a table is queried a chunk at
a time."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TypeVar

T = TypeVar("T")
IN_CHUNK = 10_000
"""Values per ``IN (...)``: well within both engines' bound-parameter limits."""


def chunked(values: Sequence[T], size: int = IN_CHUNK) -> Iterator[Sequence[T]]:
    """``values`` in consecutive slices of at most ``size``."""
    for start in range(0, len(values), size):
        yield values[start : start + size]
