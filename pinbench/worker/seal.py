"""The host's input caches are keyed (issue 71, item 5): beside each cached array the host
writes its sha256 and an HMAC-SHA256 of (its name, that sha256) under the key the
verified-state cache uses (``HOME/keys/verified-cache.key``, ``artifacts.verified``), and reads
an entry only when both check. Someone who can edit the cache but not read the key cannot
roll an entry and rewrite its digest (the issue's 0.0867 top-1): the entry is computed again.
A worker, which never holds the key, checks the sha256 alone in the copy it was handed.
"""

from __future__ import annotations

import hashlib
import hmac
from pathlib import Path

DOMAIN = b"pinbench inputs cache\0"
"""What sets these MACs apart from the verified-state cache's, under the same key."""


class Seal:
    def __init__(self, key: bytes) -> None:
        self._key = key

    def mac(self, name: str, sha256: str) -> str:
        message = DOMAIN + f"{name}\0{sha256}".encode()
        return hmac.new(self._key, message, hashlib.sha256).hexdigest()

    def sidecar(self, name: str, sha256: str) -> str:
        """The text beside entry ``name``: its sha256, then its MAC."""
        return f"{sha256} {self.mac(name, sha256)}"

    def digest_of(self, name: str, text: str) -> str | None:
        """The sha256 a sidecar's ``text`` vouches for, when its MAC checks; else none."""
        parts = text.split()
        if len(parts) != 2 or not hmac.compare_digest(parts[1], self.mac(name, parts[0])):
            return None
        return parts[0]


def host_seal(key_path: Path) -> Seal | None:
    """The seal of this home's caches (its key made on first use); none where the key cannot be
    trusted (``verified.read_key``): then no cache is read or written."""
    from pinbench.artifacts.verified import ensure_key, read_key

    ensure_key(key_path)
    key = read_key(key_path)
    return Seal(key) if key is not None else None
