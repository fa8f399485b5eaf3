"""Blobs by sha256: verified before they are served; ETag is the digest; HTTP Range. With the
blobs in object storage, a 307 to a presigned GET URL of the bucket: the server is not in the
data path, and the client checks the sha256 of what it receives (decision 151)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from litestar import Controller, Request, Response, get
from litestar.response import Stream

from pinbench.accounts import Principal
from pinbench.api.immutable import headers_for, not_modified
from pinbench.sdk.hosting import Hosting
from pinbench.sdk.values import Digest

CHUNK = 1024 * 1024
_RANGE = re.compile(r"bytes=([0-9]*)-([0-9]*)")
PAST_ANY_SIZE = 10**19
"""A number of more digits than this has is larger than any file: read as this, never given
to ``int`` (which refuses past 4300 digits)."""


def _number(digits: str) -> int:
    return int(digits) if len(digits) < 20 else PAST_ANY_SIZE


def byte_range(header: str, size: int) -> tuple[int, int] | None:
    """The (start, end inclusive) of a single ``Range: bytes=`` header; None when it cannot
    be satisfied. Several ranges are answered with the whole body (RFC 9110 allows it)."""
    match = _RANGE.fullmatch(header.strip())
    if match is None:
        return (0, size - 1) if size else None
    first, last = match.groups()
    if not first and not last:
        return None
    if not first:
        n = _number(last)
        return (max(size - n, 0), size - 1) if n and size else None
    start = _number(first)
    end = min(_number(last), size - 1) if last else size - 1
    if start >= size or (last and _number(last) < start):
        return None
    return (start, end)


def _read(path: Path, start: int, length: int) -> Iterator[bytes]:
    with path.open("rb") as f:
        f.seek(start)
        while length > 0:
            data = f.read(min(CHUNK, length))
            if not data:
                return
            length -= len(data)
            yield data


class BlobController(Controller):
    path = "/api/v1/blobs"
    tags = ["blobs"]  # noqa: RUF012

    @get(
        "/{digest:str}",
        sync_to_thread=True,
        summary="A blob's bytes, checked against its sha256 first",
        media_type="application/octet-stream",
    )
    def download(
        self, hosted: Hosting, principal: Principal, digest: str, request: Request[Any, Any, Any]
    ) -> Response[Any]:
        principal.require("read")
        d = Digest(digest)
        url = hosted.blob_url(d.hex)
        if url is not None:  # blobs in object storage: fetched from there, checked by the client
            return Response(b"", status_code=307, headers={"Location": url})
        path = hosted.blob(d.hex)
        size = path.stat().st_size
        headers = headers_for(d) | {"Accept-Ranges": "bytes"}
        unchanged = not_modified(request, headers)
        if unchanged is not None:
            return unchanged
        header = request.headers.get("range")
        if header is None or "," in header:
            headers["Content-Length"] = str(size)
            return Stream(_read(path, 0, size), headers=headers)
        span = byte_range(header, size)
        if span is None:
            headers["Content-Range"] = f"bytes */{size}"
            return Response(b"", status_code=416, headers=headers)
        start, end = span
        headers["Content-Range"] = f"bytes {start}-{end}/{size}"
        headers["Content-Length"] = str(end - start + 1)
        return Stream(_read(path, start, end - start + 1), status_code=206, headers=headers)
