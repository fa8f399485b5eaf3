"""Keyset paging for the REST API's listings (issue 83): one mechanism for every listing that
would otherwise answer all it holds at once.

A page holds at most ``limit`` items (``DEFAULT_LIMIT`` unless given, ``MAX_LIMIT`` at most),
in the listing's own order; the next page is asked with ``after`` = the key of this page's last
item (as ``GET /api/v1/runs`` pages by a run's id). A page shorter than ``limit`` is the last.
A key that does not parse is refused (400, naming ``after``), never taken as the start.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Annotated, Any, Final, TypeVar

from litestar.params import Parameter

from pinbench.errors import InvalidValue, PinbenchError

T = TypeVar("T")
DEFAULT_LIMIT: Final = 100
"""A page's items when ``limit`` is not given."""
MAX_LIMIT: Final = 1000
"""The most items one page holds."""
MAX_AFTER: Final = 512
"""The longest ``after`` a request may carry (a key of the longest name and version)."""

Limit = Annotated[
    int,
    Parameter(
        ge=1,
        le=MAX_LIMIT,
        description=f"The most items of the page ({DEFAULT_LIMIT} unless given).",
    ),
]
After = Annotated[
    str | None,
    Parameter(
        max_length=MAX_AFTER,
        description="The next page: the items listed after this key (the previous page's last "
        "item's key).",
    ),
]


class InvalidCursor(InvalidValue):
    what = "after"


def page(
    items: Iterable[T],
    *,
    key: Callable[[T], Any],
    cursor: Callable[[str], Any],
    limit: int,
    after: str | None,
) -> list[T]:
    """Up to ``limit`` of ``items`` (in order of ``key``, ascending) past ``after``: the key
    ``cursor`` reads from that text (``InvalidCursor`` when it does not parse)."""
    start = None if after is None else _parsed(cursor, after)
    out: list[T] = []
    for item in items:
        if start is not None and not key(item) > start:
            continue
        out.append(item)
        if len(out) == limit:
            break
    return out


def _parsed(cursor: Callable[[str], Any], after: str) -> Any:
    try:
        return cursor(after)
    except (PinbenchError, ValueError) as exc:
        raise InvalidCursor(text=after, reason=f"not a key this listing gives ({exc})") from None
