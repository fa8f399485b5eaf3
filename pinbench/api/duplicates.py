"""A JSON request body that names one key twice is refused (400), naming the key: JSON parsers,
msgspec's included, keep the last value, so ``{"max_change": 0.05, "max_change": 5}`` would be
read as the second without a word. Bodies are at most the server's 1 MiB, read once (Litestar
keeps them for the handler)."""

from __future__ import annotations

import json
from typing import Any

from litestar import Request
from litestar.exceptions import ClientException

METHODS = frozenset({"POST", "PUT", "PATCH"})


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


async def refuse_duplicate_keys(request: Request[Any, Any, Any]) -> None:
    """Litestar's ``before_request``: a JSON body with a key given twice in one object is a
    400 naming it; any other body (not JSON, not decodable) is left to the handler."""
    if request.method not in METHODS:
        return
    if request.headers.get("content-type", "").split(";")[0].strip() != "application/json":
        return
    body = await request.body()
    try:
        json.loads(body, object_pairs_hook=_pairs)
    except _Duplicate as exc:
        shown = exc.key if len(exc.key) <= 100 else exc.key[:100] + "..."
        raise ClientException(
            f"the request's JSON gives the key {shown!r} twice in one object: give it once"
        ) from None
    except ValueError:
        return  # not JSON: the handler's decoding says so
