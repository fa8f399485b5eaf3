"""Security headers on every response the server sends (UI pages, the REST API, the docs page,
static files, errors): no MIME sniffing, never framed, and a Content-Security-Policy under
which only the server's own scripts and styles run.

The UI's pages, the Vega plots and the Swagger UI page hold no inline script or style, so the
policy needs neither ``'unsafe-inline'`` nor ``'unsafe-eval'`` (Vega evaluates its expressions
with its interpreter: ``ast: true`` in ``static/charts.js``). A response that sets its own
policy keeps it (the HTML report: its inline scripts are allowed by their hashes).
"""

from __future__ import annotations

from litestar.datastructures import MutableScopeHeaders
from litestar.types import Message, Scope

CSP = "; ".join(
    [
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' data:",
        "font-src 'self'",
        "connect-src 'self'",
        "form-action 'self'",
        "base-uri 'none'",
        "frame-ancestors 'none'",
    ]
)
HEADERS = {
    "content-security-policy": CSP,
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",
    "referrer-policy": "same-origin",
}


async def add_security_headers(message: Message, scope: Scope) -> None:
    """Litestar ``before_send`` hook: the headers above, where the response has not set them."""
    if message["type"] != "http.response.start":
        return
    headers = MutableScopeHeaders.from_message(message)
    for name, value in HEADERS.items():
        if name not in headers:
            headers[name] = value
