"""``pinbench serve``'s reverse-proxy options: which of a proxy's forwarded headers the server
believes (``api/server.behind_proxy`` drops the others; decisions 150 and 202)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])


def proxy_options(command: F) -> F:
    """``--trust-forwarded-proto`` and ``--trust-forwarded-for`` (each off by default)."""
    for option in (_FOR, _PROTO):  # applied inside out: --help lists proto first
        command = option(command)
    return command


_PROTO = click.option(
    "--trust-forwarded-proto",
    "trust_forwarded_proto",
    is_flag=True,
    default=False,
    envvar="PINBENCH_TRUST_FORWARDED_PROTO",
    show_envvar=True,
    help=(
        "Behind a TLS-terminating reverse proxy (at an address in FORWARDED_ALLOW_IPS, "
        "default loopback): take the scheme from its X-Forwarded-Proto (the UI's origin "
        "check, its login cookie's Secure flag). Off: the header is ignored."
    ),
)
_FOR = click.option(
    "--trust-forwarded-for",
    "trust_forwarded_for",
    is_flag=True,
    default=False,
    envvar="PINBENCH_TRUST_FORWARDED_FOR",
    show_envvar=True,
    help=(
        "Behind a reverse proxy (at an address in FORWARDED_ALLOW_IPS, default loopback) "
        "that sets X-Forwarded-For: take the client's address from it (failed "
        "authentications are limited per address). Off: the header is ignored and the "
        "address is the connection's."
    ),
)
