"""How the web UI answers: a page is a template; an error is a page with the CLI's message
and the API's status, never a stack trace; a caller without valid credentials gets the login
form, which sends them back to the page they asked for."""

from __future__ import annotations

from typing import Any

from litestar import Request, Response
from litestar.exceptions import HTTPException
from litestar.response import Template

from pinbench.accounts import AuthError
from pinbench.api.observe import DRAINING, note_refused
from pinbench.api.problems import Draining, http_detail, retry_after_s, status_of
from pinbench.errors import PinbenchError


def page(name: str, status_code: int = 200, **context: Any) -> Template:
    return Template(template_name=f"web/{name}.html.j2", context=context, status_code=status_code)


def on_error(request: Request[Any, Any, Any], exc: Exception) -> Response[Any]:
    """Errors on UI pages as a page: the message and status the API would give."""
    if isinstance(exc, PinbenchError):
        status, message = status_of(exc), str(exc)
        if isinstance(exc, Draining):  # expected while the server stops (api/observe.py)
            note_refused(request.scope.setdefault("state", {}), DRAINING)
    elif isinstance(exc, HTTPException):
        status, message = exc.status_code, http_detail(exc)[0]
    else:
        request.logger.exception("unexpected error on %s", request.url.path)
        status, message = 500, "the server failed unexpectedly; the error is in its log"
    if isinstance(exc, AuthError):  # no valid credentials: the login form, saying why
        back = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        follow = back if request.method == "GET" else ""
        return page("login", status, principal=None, error=message, next=safe_next(follow))
    shown = page("error", status, message=message, status=status, principal=None)
    wait = retry_after_s(exc) if isinstance(exc, PinbenchError) else None
    if wait is not None:  # as the API says it (problems.py): when to ask again
        shown.headers["Retry-After"] = str(wait)
    return shown


NEXT_MAX_LENGTH = 2000
"""The longest page address the login form returns to (``next``)."""


def safe_next(path: str | None) -> str:
    """Where the login form sends its caller back to: a page of this UI (``/ui/...``, with its
    query), never another site (``//host``, a scheme, a backslash); empty for anything else."""
    if not path or len(path) > NEXT_MAX_LENGTH or not path.startswith("/ui/"):
        return ""
    if path.startswith("/ui//") or "\\" in path or any(ord(c) < 0x21 for c in path):
        return ""
    return path
