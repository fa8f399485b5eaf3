"""Keyset paging for the REST API's listings (issue 83): one mechanism for every listing that
would otherwise answer all it holds at once.

A page holds at most ``limit`` items (``DEFAULT_LIMIT`` unless given, ``MAX_LIMIT`` at most),
in the listing's own order; the next page is asked with ``after`` = the key of this page's last
item (as ``GET /api/v1/runs`` pages by a run's id). A page shorter than ``limit`` is the last.
A key that does not parse is refused (400, naming ``after``), never taken as the start.

Where the listing's SQL orders by the key (the artifacts: ``registry.catalog.version_page``),
the limit and the keyset condition are in the query and ``parsed`` reads ``after``; a listing
read whole by its own module (tokens, users, keys, series, alerts, studies, systems) is cut by
``page_listed`` past the item ``after`` names by its unique key, as a run's id names a run.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Annotated, Final, TypeVar

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


def described(items: str, key: str) -> str:
    """A paged listing's description in the OpenAPI document: its ``items`` and their ``key``."""
    return (
        f"A page of at most `limit` {items} ({DEFAULT_LIMIT} unless given, {MAX_LIMIT} at "
        f"most). The next page: `after` = the last one's `{key}` (keyset paging); a page "
        "shorter than `limit` is the last. An `after` naming none is refused with 400."
    )


class InvalidCursor(InvalidValue):
    what = "after"


def page_listed(
    items: Sequence[T], *, id_of: Callable[[T], str], limit: int, after: str | None
) -> list[T]:
    """Up to ``limit`` of ``items`` (a whole listing, in its order) past the one whose
    ``id_of`` is ``after`` (``InvalidCursor`` when no item is)."""
    if after is None:
        return list(items[:limit])
    for i, item in enumerate(items):
        if id_of(item) == after:
            return list(items[i + 1 : i + 1 + limit])
    raise InvalidCursor(text=after, reason="no item of this listing has this key")


def parsed(cursor: Callable[[str], T], after: str | None) -> T | None:
    """``after`` as ``cursor`` reads it (None: the first page; ``InvalidCursor`` when it does
    not parse)."""
    return None if after is None else _parsed(cursor, after)


def _parsed(cursor: Callable[[str], T], after: str) -> T:
    try:
        return cursor(after)
    except (PinbenchError, ValueError) as exc:
        raise InvalidCursor(text=after, reason=f"not a key this listing gives ({exc})") from None
