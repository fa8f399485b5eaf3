"""pinbench's HTTP clients share one verifying TLS context per process (pinbench.tls)."""

from __future__ import annotations

import ssl

from pinbench.remote import Remote
from pinbench.tls import client_context


def test_clients_share_one_context_that_still_verifies_certificates_and_names() -> None:
    first, second = Remote("https://a.example"), Remote("http://b.example", "t")
    try:
        contexts = {
            id(r.client._transport._pool._ssl_context)  # type: ignore[attr-defined]
            for r in (first, second)
        }
        assert contexts == {id(client_context())}
        ctx = client_context()
        assert ctx.verify_mode == ssl.CERT_REQUIRED and ctx.check_hostname
        assert ctx.cert_store_stats()["x509_ca"] > 0  # the CA bundle is loaded
    finally:
        first.client.close()
        second.client.close()
