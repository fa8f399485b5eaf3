"""Forms act only when posted from this server's own pages: a POST to the UI must carry an
``Origin`` header equal to the server's own origin (the request's scheme, as uvicorn sets it
from ``X-Forwarded-Proto`` behind a trusted proxy, and its Host, already checked against the
allowed hosts). ``Origin: null`` (a sandboxed frame, a file or data: page) and a missing Origin
are refused too: browsers send Origin with every POST, and scripts use the REST API."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from litestar import Request

from pinbench.accounts import Forbidden

DEFAULT_PORTS = {"http": 80, "https": 443}


class CrossOriginForm(Forbidden):
    def __init__(self, *, origin: str | None, own: str) -> None:
        if origin is None:
            why = "a form posted without an Origin header may not act on this server"
        elif origin == "null":
            why = "a form from an opaque origin (Origin: null) may not act on this server"
        else:
            why = f"a form from {origin} may not act on this server"
        super().__init__(f"{why} (its own origin is {own}; scripts use the REST API)")
        self.origin = origin
        self.own = own


def _key(origin: str) -> tuple[str, str, int] | None:
    """(scheme, host, port) of a serialised origin; None if it is not one."""
    try:
        parts = urlsplit(origin)
        port = parts.port
    except ValueError:
        return None
    if parts.scheme not in DEFAULT_PORTS or not parts.hostname or parts.path or parts.query:
        return None
    if parts.username is not None or parts.fragment:
        return None
    return parts.scheme, parts.hostname, port or DEFAULT_PORTS[parts.scheme]


def own_origin(request: Request[Any, Any, Any]) -> str:
    return f"{request.url.scheme}://{request.headers.get('host', '')}"


def require_same_origin(request: Request[Any, Any, Any]) -> None:
    """CrossOriginForm unless the request's Origin is the server's own origin."""
    origin = request.headers.get("origin")
    own = own_origin(request)
    if origin is None or origin == "null" or _key(origin) is None or _key(origin) != _key(own):
        raise CrossOriginForm(origin=origin, own=own)
