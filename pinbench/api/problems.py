"""Errors as RFC 9457 problem details (``application/problem+json``).

A pinbench error keeps the message the CLI prints; its class picks the HTTP status. Anything
unexpected is a 500 whose body names no internals (the traceback goes to the server's log).
A dependency that does not answer (the database, the object store) is a 503 with
``Retry-After``: the request may succeed once it is back. A store that refuses a write (a
full disk, an object store's refusal: ``StoreFull``, ``WriteRefused``) is a 507.
"""

from __future__ import annotations

import logging
from http import HTTPStatus
from typing import Any

import msgspec
from litestar import Request, Response
from litestar.exceptions import HTTPException, ValidationException

from pinbench.accounts import AccountNotFound, AuthError, Forbidden
from pinbench.api.observe import DRAINING, note_refused
from pinbench.api.sandbox_check import ServerCannotSandbox
from pinbench.artifacts.objects import ObjectStoreFailure
from pinbench.artifacts.store import BlobMissing, StoreFull
from pinbench.artifacts.store_errors import WriteRefused
from pinbench.cluster.systems import UnknownSystem
from pinbench.db.errors import Conflict, DatabaseUnavailable
from pinbench.errors import PinbenchError, UserError
from pinbench.evaluator.cancel import RunFinished
from pinbench.evaluator.policy import PickleRefused
from pinbench.evaluator.records.run_view import RunNotFound
from pinbench.evaluator.server_runner import RunnerRefused
from pinbench.processing.consent import CodeRefused
from pinbench.registry.catalog import NotFound
from pinbench.registry.publish import SameVersionConflict, VersionConflict
from pinbench.sdk.hosting import NotStored
from pinbench.series.series_errors import AlertNotFound, SeriesNotFound
from pinbench.studies.errors import StudyNotFound

log = logging.getLogger("pinbench.api")

PROBLEM_JSON = "application/problem+json"


class ApiNotFound(UserError):
    """Something asked for by the URL does not exist."""


class UploadTooLarge(UserError):
    def __init__(self, *, limit: int) -> None:
        super().__init__(f"upload larger than the server's limit of {limit} bytes")
        self.limit = limit


class QueueFull(UserError):
    def __init__(self, *, queued: int) -> None:
        super().__init__(f"the run queue is full ({queued} runs waiting): try again later")
        self.queued = queued


class TryLater(UserError):
    """Refused for now: the answer says when to ask again (``Retry-After``, in seconds)."""

    def __init__(self, message: str, *, retry_after_s: int) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class TooManyFailures(TryLater):
    """Too many failed authentications from one client address (429)."""

    def __init__(self, *, who: str, failures: int, window_s: int, retry_after_s: int) -> None:
        super().__init__(
            f"too many failed authentications from {who} ({failures} in {window_s} s): "
            f"try again in {retry_after_s} s",
            retry_after_s=retry_after_s,
        )
        self.who, self.failures, self.window_s = who, failures, window_s


class UserQueueFull(TryLater):
    """One user already has as many runs queued or running here as each user may (429)."""

    def __init__(self, *, user: str, cap: int, retry_after_s: int = 30) -> None:
        super().__init__(
            f"{user} already has {cap} runs queued or running on this server, the cap per user "
            "(serve --runs-per-user): wait for one to finish",
            retry_after_s=retry_after_s,
        )
        self.user, self.cap = user, cap


class StudiesBusy(TryLater):
    """This server runs as many studies on its agents as it may at once (429)."""

    def __init__(self, *, running: int, retry_after_s: int = 60) -> None:
        super().__init__(
            f"this server runs {running} studies now, as many as it runs at once: post it "
            "again when one has ended (study list shows them)",
            retry_after_s=retry_after_s,
        )
        self.running = running


class Draining(TryLater):
    """The server got SIGTERM: it finishes its running runs and takes no new one (503)."""

    def __init__(self, *, retry_after_s: int = 5) -> None:
        super().__init__(
            "this server is stopping (draining its running runs) and takes no new run: "
            "submit it to another server, or again once this one is back",
            retry_after_s=retry_after_s,
        )


STATUS: tuple[tuple[type[PinbenchError], int], ...] = (
    (AuthError, 401),
    (Forbidden, 403),
    (PickleRefused, 403),
    (CodeRefused, 403),
    (RunnerRefused, 403),
    (NotFound, 404),
    (RunNotFound, 404),
    (AccountNotFound, 404),
    (ApiNotFound, 404),
    (NotStored, 404),
    (UnknownSystem, 404),
    (SeriesNotFound, 404),
    (AlertNotFound, 404),
    (StudyNotFound, 404),
    (BlobMissing, 404),
    (VersionConflict, 409),
    (SameVersionConflict, 409),
    (RunFinished, 409),
    (Conflict, 409),
    (UploadTooLarge, 413),
    (TooManyFailures, 429),
    (UserQueueFull, 429),
    (StudiesBusy, 429),
    (Draining, 503),
    (QueueFull, 503),
    (ServerCannotSandbox, 503),
    (StoreFull, 507),
    (WriteRefused, 507),
    (DatabaseUnavailable, 503),
    (ObjectStoreFailure, 503),
    (UserError, 400),
)
OUTAGES: tuple[type[PinbenchError], ...] = (DatabaseUnavailable, ObjectStoreFailure)
"""A dependency of the server's that failed: 503 with ``Retry-After: OUTAGE_RETRY_S``."""
OUTAGE_RETRY_S = 5


def status_of(exc: PinbenchError) -> int:
    for cls, status in STATUS:
        if isinstance(exc, cls):
            return status
    return 500


def retry_after_s(exc: PinbenchError) -> int | None:
    """When to ask again (``Retry-After``, seconds): a refusal's own time, ``OUTAGE_RETRY_S``
    for an outage; None when asking again would not help."""
    if isinstance(exc, TryLater):
        return exc.retry_after_s
    if isinstance(exc, WriteRefused):  # until its operator makes room: no time to name
        return None
    if isinstance(exc, OUTAGES):
        return OUTAGE_RETRY_S
    return None


def problem(
    status: int, detail: str, *, headers: dict[str, str] | None = None, **extra: Any
) -> Response[bytes]:
    body = {
        "type": "about:blank",
        "title": HTTPStatus(status).phrase,
        "status": status,
        "detail": detail,
        **extra,
    }
    return Response(
        msgspec.json.encode(body), status_code=status, media_type=PROBLEM_JSON, headers=headers
    )


def on_pinbench_error(request: Request[Any, Any, Any], exc: PinbenchError) -> Response[bytes]:
    status = status_of(exc)
    if isinstance(exc, Draining):  # expected while a server stops: not an error, not a 5xx
        note_refused(request.scope.setdefault("state", {}), DRAINING)
        log.info("%s %s refused: %s", request.method, request.url.path, exc)
    elif status >= 500:
        log.error("%s %s failed: %s", request.method, request.url.path, exc)
    headers = {"WWW-Authenticate": 'Bearer realm="pinbench"'} if status == 401 else None
    wait = retry_after_s(exc)
    if wait is not None:
        headers = {"Retry-After": str(wait)}
    return problem(status, str(exc), headers=headers, error=type(exc).__name__)


def on_http_error(request: Request[Any, Any, Any], exc: HTTPException) -> Response[bytes]:
    detail, extra = http_detail(exc)
    return problem(exc.status_code, detail, headers=exc.headers, **extra)


def http_detail(exc: HTTPException) -> tuple[str, dict[str, Any]]:
    """Litestar's error as one line (each invalid parameter named), plus its details."""
    extra: dict[str, Any] = {}
    if isinstance(exc, ValidationException) and exc.extra:
        extra["errors"] = exc.extra
    detail = exc.detail or HTTPStatus(exc.status_code).phrase
    if extra.get("errors"):
        detail = "; ".join(
            f"{e.get('key', '?')}: {e.get('message', '')}" if isinstance(e, dict) else str(e)
            for e in extra["errors"]
        )
        detail = f"invalid request: {detail}"
    return detail, extra


def on_unexpected(request: Request[Any, Any, Any], exc: Exception) -> Response[bytes]:
    log.exception("%s %s: unexpected error", request.method, request.url.path)
    return problem(500, f"internal error ({type(exc).__name__}); see the server's log")
