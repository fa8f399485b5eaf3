"""A JSON request body that names one key twice is refused (400), naming the key: JSON parsers,
msgspec's included, keep the last value, so ``{"max_change": 0.05, "max_change": 5}`` would be
read as the second without a word.

Only the bodies a handler decodes as data are read here (its ``data`` parameter), whatever
their content type (Litestar decodes a ``text/plain`` body as JSON too), and only under the
body limit the handler itself has (the server's 1 MiB, or its own): a route without a limit
(a publish's streamed upload) is never read here, and neither is a body before the request's
own limit says it may be. The parse runs in a worker thread; a body that is not JSON is left to
the handler's own decoding, which refuses it; one nested past Python's parser is refused (no
request pinbench reads nests so: msgspec's own decoding would fail there too)."""

from __future__ import annotations

import json
from typing import Any

import anyio.to_thread
from litestar import Request
from litestar.exceptions import ClientException

METHODS = frozenset({"POST", "PUT", "PATCH"})
CHECKED_BYTES = 1024 * 1024
"""A handler whose body limit is above this (or unset) is not checked here."""


class _Duplicate(Exception):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _Duplicate(key)
        out[key] = value
    return out


class TooDeep(Exception):
    """The body nests deeper than Python's parser goes: no request pinbench reads does."""


def duplicate_key(body: bytes) -> str | None:
    """The first key a JSON object of ``body`` gives twice; None when none does, or when the
    body is not JSON; ``TooDeep`` when it nests too deep to read."""
    try:
        json.loads(body, object_pairs_hook=_pairs)
    except _Duplicate as exc:
        return exc.key
    except RecursionError:
        raise TooDeep from None
    except ValueError:
        return None
    return None


async def refuse_duplicate_keys(request: Request[Any, Any, Any]) -> None:
    """Litestar's ``before_request``: a data body with a key given twice in one object is a
    400 naming it; anything else is left to the handler."""
    if request.method not in METHODS:
        return
    handler = request.route_handler
    if handler.parsed_data_field is None:  # no body decoded as data
        return
    limit = handler.resolve_request_max_body_size()
    if limit is None or limit > CHECKED_BYTES:
        return
    body = await request.body()  # within the handler's own limit (413 past it)
    try:
        key = await anyio.to_thread.run_sync(duplicate_key, body)
    except TooDeep:
        raise ClientException("the request's JSON nests too deep to read") from None
    if key is not None:
        shown = key if len(key) <= 100 else key[:100] + "..."
        raise ClientException(
            f"the request's JSON gives the key {shown!r} twice in one object: give it once"
        )
