"""What an object store's failure says: its HTTP status, and whether it is an outage that a
run's blobs wait out or a refusal that fails the run (decisions 284, 285)."""

from __future__ import annotations

from typing import Any


def status(exc: Any) -> int | None:
    """The HTTP status of a botocore ``ClientError`` (None for other errors)."""
    response = getattr(exc, "response", None)
    if not isinstance(response, dict):
        return None
    code = response.get("ResponseMetadata", {}).get("HTTPStatusCode")
    return int(code) if code is not None else None


def outage(exc: BaseException | None) -> bool:
    """Whether ``exc`` (or what it wraps: s3transfer's upload error wraps the client's) says
    the store is away rather than refusing: no connection, a timeout or a connection cut
    short (botocore's ``ConnectionError``, ``HTTPClientError``), or an HTTP 5xx answer but
    ``NEVER_LATER``'s. The first answer in the chain decides: a 403 raised while handling a
    dropped connection is a refusal."""
    from botocore.exceptions import ConnectionError as Unreachable
    from botocore.exceptions import HTTPClientError

    seen = 0
    while exc is not None and seen < 8:  # a chain of causes, bounded
        code = status(exc)
        if code is not None:  # an answer says, whatever it was raised while handling
            return code >= 500 and code not in NEVER_LATER
        if isinstance(exc, (Unreachable, HTTPClientError)):
            return True
        exc, seen = exc.__cause__ or exc.__context__, seen + 1
    return False


NEVER_LATER = frozenset({501, 505})
"""5xx answers that are not an outage: the store does not implement what was asked (501) or
the protocol (505); asked again, it answers the same, so a run is failed naming it rather than
waiting until its process stops (decision 285)."""
