"""A command that fetches from a package mirror (``debootstrap``), run again when it failed for
a reason that goes away by itself.

A mirror being synced lists packages it does not hold yet ("Couldn't find these debs"), a
download or a name lookup fails for a moment: the same command succeeds a minute later. Only
such failures, named in ``TRANSIENT`` by what the command prints, are tried again, at most
``tries`` times in all, after a wait that grows as the HTTP client's does (``retrying``: full
jitter over a doubling ceiling); each retry is said (on stderr, through ``say``) with its
cause. Anything else (no root, an unknown suite, a bad signature, a full disk, a failing
chroot) fails at once: trying again would fail the same way.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pinbench.retrying import Retrying, dice

TRANSIENT: tuple[tuple[str, str], ...] = (
    ("Couldn't find these debs", "the mirror lacked packages its index lists (a sync)"),
    ("Couldn't download package", "a package download failed"),
    ("Failed getting release file", "the mirror's Release file could not be fetched"),
    ("Failed getting release signature file", "the Release signature could not be fetched"),
    ("Temporary failure resolving", "the mirror's name did not resolve for a moment"),
    ("Hash Sum mismatch", "a file changed on the mirror while it was fetched (a sync)"),
    ("Connection timed out", "a connection to the mirror timed out"),
    ("Connection reset by peer", "the mirror dropped the connection"),
    ("503 Service Unavailable", "the mirror answered 503"),
    ("502 Bad Gateway", "the mirror's proxy answered 502"),
    ("504 Gateway Timeout", "the mirror's proxy answered 504"),
)
"""(what the command prints, the cause said) for each failure that is tried again."""

TRIES = 4
BACKOFF = Retrying(total_s=600.0, first_s=15.0, cap_s=120.0)
"""Waits before the 2nd, 3rd and 4th try: up to 15, 30 and 60 s."""


@dataclass(frozen=True)
class Outcome:
    """The last try's process, how many tries were made, and the transient cause of its
    failure (None: it succeeded, or failed for a reason not tried again)."""

    process: subprocess.CompletedProcess[str]
    tries: int
    transient: str | None


def transient(output: str) -> str | None:
    """The cause of a failure that is tried again, read from what the command printed."""
    for printed, cause in TRANSIENT:
        if printed in output:
            return cause
    return None


def run_retried(
    command: Callable[[int], Sequence[str]],
    *,
    what: str,
    say: Callable[[str], None],
    tries: int = TRIES,
    backoff: Retrying = BACKOFF,
    sleep: Callable[[float], None] = time.sleep,
    env: dict[str, str] | None = None,
) -> Outcome:
    """Run ``command(try)`` (1-based: a fresh target per try) until it succeeds, fails for a
    reason not in ``TRANSIENT``, or has been tried ``tries`` times. ``env``: its environment
    (None: this process's)."""
    if tries < 1:
        raise ValueError(f"tries must be at least 1, got {tries}")
    attempt = 1
    while True:
        proc = subprocess.run(
            list(command(attempt)), capture_output=True, text=True, check=False, env=env
        )
        cause = None if proc.returncode == 0 else transient(proc.stdout + proc.stderr)
        if cause is None or attempt == tries:
            return Outcome(proc, attempt, cause)
        wait = backoff.delay(attempt, None, dice)
        say(f"{what} failed: {cause}; trying again in {wait:.0f} s (try {attempt + 1} of {tries})")
        sleep(wait)
        attempt += 1
