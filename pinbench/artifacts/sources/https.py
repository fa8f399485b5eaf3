"""HTTP(S) downloads, streamed into a sink and hashed on the fly, resumed with ``Range`` after
an interruption (within a fetch, and across fetches from the partial file kept in the store's
temp area). ``If-Range`` with the first response's ETag makes a changed file start over."""

from __future__ import annotations

import hashlib
import http.client
import re
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pinbench.artifacts.digest import CHUNK_SIZE
from pinbench.artifacts.sources.errors import DownloadInterrupted, SourceError, SourceUnavailable
from pinbench.artifacts.sources.sink import Sink

ATTEMPTS = 4
TIMEOUT_S = 30.0
BACKOFF_S = 0.2
USER_AGENT = "pinbench"


def part_path(tmp: Path, url: str) -> Path:
    """Where the bytes of ``url`` accumulate until the download completes."""
    return tmp / f"download-{hashlib.sha256(url.encode()).hexdigest()[:32]}.part"


@dataclass
class _Attempt:
    total: int | None = None
    etag: str | None = None


class _Interrupted(Exception):
    pass


def download(
    url: str,
    sink: Sink,
    *,
    attempts: int = ATTEMPTS,
    timeout: float = TIMEOUT_S,
    say: Callable[[str], None] | None = None,
) -> None:
    """Fill ``sink`` with the bytes at ``url``, continuing from what it already holds."""
    etag_file = sink.path.with_suffix(".etag")
    state = _Attempt(etag=etag_file.read_text() if etag_file.is_file() else None)
    reason = ""
    for attempt in range(1, attempts + 1):
        if attempt > 1:
            if say is not None:
                say(f"resuming {url} at byte {sink.size} (attempt {attempt} of {attempts})")
            time.sleep(BACKOFF_S * (attempt - 1))
        try:
            _one_attempt(url, sink, state, timeout)
        except (_Interrupted, OSError, http.client.HTTPException) as exc:
            reason = str(exc) or type(exc).__name__
            if state.etag:
                etag_file.write_text(state.etag)
            continue
        etag_file.unlink(missing_ok=True)
        return
    raise DownloadInterrupted(
        source=url,
        received=sink.size,
        total=state.total,
        attempts=attempts,
        reason=reason,
        part=sink.path,
    )


def _one_attempt(url: str, sink: Sink, state: _Attempt, timeout: float) -> None:
    headers = {"User-Agent": USER_AGENT, "Accept-Encoding": "identity"}
    if sink.size:
        headers["Range"] = f"bytes={sink.size}-"
        if state.etag:
            headers["If-Range"] = state.etag
    request = urllib.request.Request(url, headers=headers)
    try:
        response = urllib.request.urlopen(request, timeout=timeout)
    except urllib.error.HTTPError as exc:
        if exc.code == 416 and sink.size:  # what we hold is not a prefix of the file: restart
            sink.restart()
            raise _Interrupted("the server refused the range; starting over") from None
        if exc.code >= 500:
            raise _Interrupted(f"HTTP {exc.code} {exc.reason}") from None
        raise SourceError(source=url, reason=f"HTTP {exc.code} {exc.reason}") from None
    except ValueError as exc:
        raise SourceError(source=url, reason=str(exc)) from None
    with response:
        _start(response, sink, state)
        while chunk := response.read(CHUNK_SIZE):
            sink.write(chunk)
    if state.total is not None and sink.size != state.total:
        raise _Interrupted(f"connection closed at byte {sink.size}")


def _start(response: http.client.HTTPResponse, sink: Sink, state: _Attempt) -> None:
    """Check what the server answered to our range and where the body starts."""
    length = response.headers.get("Content-Length")
    etag = response.headers.get("ETag")
    if response.status == 206:
        start, total = _content_range(response.headers.get("Content-Range", ""))
        if start != sink.size:
            raise SourceUnavailable(
                source=response.url,
                reason=f"asked for bytes from {sink.size}, the server sent from {start}",
            )
        state.total = total
    else:
        if sink.size:
            sink.restart()  # the server ignored the range (or the file changed): from the start
        state.total = _byte_count(length, response.url) if length is not None else None
    if etag and not etag.startswith("W/"):
        state.etag = etag


_BYTES = r"[0-9]{1,20}"
"""A byte count or offset as a header writes it: ASCII digits, below 10**20 (``int`` alone
would take ``1_000``, other scripts' digits and 4,300-digit numbers)."""


def _byte_count(value: str, source: str) -> int:
    """A ``Content-Length`` value, or ``SourceUnavailable`` naming what the server sent."""
    if not re.fullmatch(_BYTES, value.strip()):
        raise SourceUnavailable(
            source=source, reason=f"the server sent Content-Length {value[:40]!r}, not a byte count"
        )
    return int(value)


def _content_range(value: str) -> tuple[int, int | None]:
    """``bytes START-END/TOTAL`` → (START, TOTAL)."""
    found = re.fullmatch(rf"bytes ({_BYTES})-{_BYTES}/({_BYTES}|\*)", value.strip())
    if found is None:
        raise _Interrupted(f"unreadable Content-Range {value[:80]!r}")
    start, total = found.groups()
    return int(start), None if total == "*" else int(total)
