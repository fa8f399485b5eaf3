"""Content named by its sha256 never changes: its ETag is the digest, caches may keep it
forever, and a client that already has it gets 304."""

from __future__ import annotations

from typing import Any

from litestar import Request, Response

from pinbench.artifacts.digest import Digest


def headers_for(digest: Digest) -> dict[str, str]:
    return {
        "ETag": f'"sha256:{digest.hex}"',
        "Cache-Control": "public, max-age=31536000, immutable",
    }


def not_modified(
    request: Request[Any, Any, Any], headers: dict[str, str]
) -> Response[bytes] | None:
    """The 304 answer when the request's If-None-Match names this content, else None."""
    if request.headers.get("if-none-match") == headers["ETag"]:
        return Response(b"", status_code=304, headers=headers)
    return None
