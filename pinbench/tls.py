"""One TLS verification context per process for pinbench's HTTP clients."""

from __future__ import annotations

import functools
import ssl
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import httpx


@functools.cache
def client_context() -> ssl.SSLContext:
    """httpx's default context (certifi's CA bundle, or ``SSL_CERT_FILE``/``SSL_CERT_DIR`` as
    httpx reads them), made once: an ``httpx.Client`` made without one reads and parses the
    whole CA bundle again, 30 ms of CPU for every client (issue 49). A context is safe to
    share between clients and threads; the certificates it trusts are the same."""
    import httpx

    return httpx.create_ssl_context()


def http_client(base_url: str, headers: dict[str, str], timeout: float) -> httpx.Client:
    """An ``httpx.Client`` that verifies with ``client_context()``."""
    import httpx

    return httpx.Client(
        base_url=base_url, headers=headers, timeout=timeout, verify=client_context()
    )
