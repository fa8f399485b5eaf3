"""The errors of the CLI's client for a remote ``pinbench serve`` (``pinbench.remote``): a 4xx
a user error with the server's message, a 5xx or an unreachable server a system failure."""

from __future__ import annotations

from pinbench.errors import SystemFailure, UserError


class RemoteRefused(UserError):
    """The server refused the request (4xx): its message, status and error name."""

    def __init__(self, *, status: int, detail: str, error: str | None) -> None:
        super().__init__(detail)
        self.status = status
        self.error = error


class RemoteFailed(SystemFailure):
    error: str | None = None
    """The server's name for the failure (its problem answer's ``error``), when it said one."""


class RemoteGaveUp(RemoteFailed):
    """A request retried through the server's absence until its time was spent: the request,
    how many tries over how long, and the last failure."""

    def __init__(self, *, url: str, request: str, tries: int, seconds: float, last: str) -> None:
        super().__init__(
            f"gave up on the pinbench server at {url} after {tries} tries over {seconds:.0f} s "
            f"({request}): {last}"
        )
        self.url = url
        self.request = request
        self.tries = tries
        self.seconds = seconds
        self.last = last


class StoppedWaiting(RemoteFailed):
    """A client waiting for run ``run`` could not learn its outcome: the server (or its
    database: ``database``) was away longer than the client waits (``PINBENCH_RETRY_S``).
    The run goes on there: it is looked up later (decision 190)."""

    def __init__(self, *, url: str, run: str, status: str | None, why: str, database: bool):
        seen = f"last seen {status}" if status else "not seen yet"
        what, later = (
            ("the server's database is unavailable", "a server records the run once it is back")
            if database
            else ("the server is away", "the run goes on if the server does")
        )
        super().__init__(
            f"stopped waiting for run {run} ({seen}): {what} ({why}); {later}. Check it "
            f"later with `pinbench runs show {run}` (PINBENCH_URL={url})"
        )
        self.url, self.run, self.status, self.database = url, run, status, database
