"""The verified-state cache is a shortcut: when its SQLite file cannot be opened or written (a
full disk, an I/O error), files are hashed instead, with one warning, never a failure; the
cache is tried again after ``RETRY_S`` and works once the file can be used."""

from __future__ import annotations

import hashlib
import logging
from pathlib import Path

import pytest

from pinbench.artifacts import verified
from pinbench.artifacts.verified import VerifiedCache


def test_an_unusable_cache_file_costs_hashing_not_the_command_and_is_tried_again(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    data = tmp_path / "data.bin"
    data.write_bytes(b"pinbench" * 1000)
    expected = hashlib.sha256(data.read_bytes()).hexdigest()
    db = tmp_path / "cache" / "verified.db"
    db.mkdir(parents=True)  # SQLite cannot open a folder: every use of the cache fails
    cache = VerifiedCache(db, tmp_path / "keys" / "verified-cache.key")
    with caplog.at_level(logging.WARNING, logger="pinbench.artifacts.verified"):
        for _ in range(3):
            digest, size, hashed = cache.digest(data)
            assert (digest.hex, size, hashed) == (expected, 8000, True)  # hashed every time
    warnings = [r for r in caplog.records if "is not used" in r.getMessage()]
    assert len(warnings) == 1 and "hashed again" in warnings[0].getMessage()

    db.rmdir()  # the cause goes away; within RETRY_S the cache is still skipped
    assert cache.digest(data)[2] is True and not db.exists()
    cache._retry_at -= verified.RETRY_S  # RETRY_S has passed
    assert cache.digest(data)[2] is True  # hashed, and now recorded
    assert cache.digest(data)[2] is False, "the cache vouches for the unchanged file again"
    cache.close()
