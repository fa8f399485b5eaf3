"""Runs placed on cluster systems through a server (``Lockfile.run_on``): one run per system,
each followed to its end, with the retries the server made of a run whose system was lost."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pinbench.errors import UserError

if TYPE_CHECKING:
    from pinbench.remote import Remote
    from pinbench.sdk.registry import Say
    from pinbench.sdk.runs import Lockfile

RETRY_WAIT_S = 30.0
"""How long to look for the server's retry of a lost run before giving up on it."""
LOST = "lost during the run"


def run_on(
    lock: Lockfile,
    systems: Sequence[str],
    *,
    runner: str,
    trace: str,
    retries: int,
    say: Say,
) -> list[list[dict[str, Any]]]:
    """Queue the lockfile on ``systems`` (``["all"]``: every live system meeting it) and
    follow each run, and its retries, to its end: one chain of run records per system."""
    on = list(systems)
    if "all" in on and on != ["all"]:
        raise UserError("--on all stands alone: every live system meeting the lockfile")
    if not lock.registry.remote:
        raise UserError(
            "--on runs through a server started with --cluster: set PINBENCH_URL "
            "(and PINBENCH_TOKEN)"
        )
    remote = lock.registry.server()
    queued = remote.submit_on(lock.body, runner, trace, on, retries=retries)
    for run in queued:
        say(f"queued run {run['id']} on system {run.get('system') or '?'}")
    return [_follow(remote, run["id"], retries, say) for run in queued]


def _follow(remote: Remote, run_id: str, retries: int, say: Say) -> list[dict[str, Any]]:
    """A run and the retries the server made of it (its system lost), each to its end."""
    import time

    chain = [remote.wait(run_id, say)]
    while retries > 0 and chain[-1]["status"] == "failed" and LOST in (chain[-1]["error"] or ""):
        deadline = time.monotonic() + RETRY_WAIT_S
        found = None
        while found is None and time.monotonic() < deadline:
            found = next(
                (r for r in remote.runs(200) if r.get("retry_of") == chain[-1]["id"]), None
            )
            if found is None:
                time.sleep(0.5)
        if found is None:
            break
        say(f"run {chain[-1]['id'][:8]} retried as {found['id']} on system {found['system']}")
        chain.append(remote.wait(found["id"], say))
        retries -= 1
    return chain
