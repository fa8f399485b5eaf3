"""The Host names the server answers to: a request whose ``Host`` header names another is
refused before any handler runs (DNS rebinding: a page on ``evil.example`` whose name is made
to resolve to 127.0.0.1 reaches a loopback server, but with ``Host: evil.example``).

Names are compared without their port, case-insensitively. ``*.example.org`` allows every
subdomain of example.org (not example.org itself); ``*`` allows any name (a proxy in front
checks it instead). Litestar's own ``AllowedHostsConfig`` compares the whole header, port
included, and answers without naming the refused host; hence this small check.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

from litestar.datastructures import Headers
from litestar.middleware import AbstractMiddleware
from litestar.types import ASGIApp, Receive, Scope, Send

from pinbench.errors import UserError

ENV = "PINBENCH_ALLOWED_HOSTS"
"""Comma-separated names added to those given with ``pinbench serve --allowed-host``."""
LOOPBACK = ("localhost", "127.0.0.1", "::1")
WILDCARD_BINDS = frozenset({"", "0.0.0.0", "::", "[::]"})


class HostNotAllowed(UserError):
    def __init__(self, *, host: str) -> None:
        super().__init__(
            f"this server does not answer to the Host {host!r}: its operator names the hosts "
            f"it answers to with `pinbench serve --allowed-host NAME` (or {ENV})"
        )
        self.host = host


class BadHostPattern(UserError):
    def __init__(self, *, pattern: str, reason: str) -> None:
        super().__init__(f"invalid allowed host {pattern!r}: {reason}")
        self.pattern = pattern
        self.reason = reason


def hostname(text: str) -> str | None:
    """The name in a Host header or pattern (no port, no brackets, lowercase, no trailing
    dot); None when it is no host at all."""
    text = text.strip()
    if text.count(":") > 1 and not text.startswith("["):
        text = f"[{text}]"  # an IPv6 address as an operator may write it
    try:
        parts = urlsplit(f"//{text}")
        parts.port  # noqa: B018 (raises ValueError on a bad port)
    except ValueError:  # a bad port or bracket
        return None
    if parts.path or parts.query or parts.fragment or parts.username is not None:
        return None
    name = parts.hostname
    if not name or not name.rstrip("."):
        return None
    return name.rstrip(".")


def _pattern(text: str) -> str:
    if text.strip() == "*":
        return "*"
    wild = text.strip().startswith("*.")
    name = hostname(text.strip().removeprefix("*."))
    if name is None or "*" in name or "/" in text:
        raise BadHostPattern(pattern=text, reason="expected a host name, an address, or *.DOMAIN")
    return f"*.{name}" if wild else name


@dataclass(frozen=True, slots=True)
class AllowedHosts:
    """Host names (normalised patterns) a server answers to."""

    patterns: tuple[str, ...]

    @classmethod
    def of(cls, texts: Iterable[str]) -> AllowedHosts:
        """From names as an operator writes them (``bench.example.org``, ``[::1]``,
        ``*.example.org``, ``*``); BadHostPattern on anything else."""
        return cls(tuple(dict.fromkeys(_pattern(t) for t in texts if t.strip())))

    def allows(self, host_header: str) -> bool:
        name = hostname(host_header)
        if name is None:
            return False
        for p in self.patterns:
            if p == "*" or p == name or (p.startswith("*.") and name.endswith(p[1:])):
                return True
        return False


def for_serve(bind: str, extra: Iterable[str] = ()) -> tuple[str, ...]:
    """What ``pinbench serve --host BIND`` answers to: the loopback names, the bound address,
    on a wildcard bind this machine's own names too, then ``extra`` (``--allowed-host``) and
    ``PINBENCH_ALLOWED_HOSTS``. BadHostPattern names a bad one."""
    names = [*LOOPBACK]
    if bind.strip() in WILDCARD_BINDS:
        names += [socket.gethostname(), socket.getfqdn()]
    else:
        names.append(bind)
    names += [*extra, *os.environ.get(ENV, "").split(",")]
    return AllowedHosts.of(names).patterns


class HostCheck(AbstractMiddleware):
    """Refuses (HTTP 400, naming the host) a request whose Host is not allowed."""

    def __init__(self, app: ASGIApp, allowed: AllowedHosts) -> None:
        super().__init__(app)
        self.allowed = allowed

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        host = Headers.from_scope(scope).get("host", "")
        if not self.allowed.allows(host):
            raise HostNotAllowed(host=host)
        await self.app(scope, receive, send)
