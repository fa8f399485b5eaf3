"""An evaluation on an agent: the pinned bytes fetched by digest, checked, run, results packed.

This runs inside the agent's actor, on the agent's machine, with the agent's own blob store
(its cache folder: no shared filesystem). Every blob the lockfile pins that the cache lacks is
downloaded from the server's blob API with the token the server handed over, hashed as it
arrives and compared with the pin before it is kept: a server that sends other bytes fails
the run naming the file and both digests, and nothing of it is cached. Then every pinned
byte is checked once more (the cache's own verified state), the runner runs, and its results
are packed as the files an isolated evaluator writes (``worker.results``), which the
server validates exactly as it validates a local evaluator's.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pinbench.artifacts.digest import Digest
from pinbench.artifacts.store import BlobStore
from pinbench.config import Settings
from pinbench.errors import PinbenchError, UserError
from pinbench.registry.lockfile import LockedArtifact, LockedFile, Lockfile
from pinbench.worker.stop import RunStopped, Stop
from pinbench.workspace import Workspace

if TYPE_CHECKING:
    from pinbench.energy.price import Price
    from pinbench.evaluator.warm import WarmPool

Say = Callable[[str], None]


def handed(lock: Lockfile) -> list[tuple[LockedArtifact, LockedFile]]:
    """The pinned files an agent fetches and verifies: every artifact's but the dataset's
    ground truth of a run the server scores (``job.truth_paths``): the agent's machine runs the
    system under test, and the truth stays with the server."""
    from pinbench.worker.job import withheld_paths

    withheld = withheld_paths(lock)
    return [
        (art, f)
        for art in lock.body.artifacts
        for f in art.files
        if not (art.kind == "dataset" and f.path in withheld)
    ]


def fetch_pinned(store: BlobStore, lock: Lockfile, server: str, token: str, say: Say) -> int:
    """Download the pinned blobs ``store`` lacks from ``server``; return how many."""
    from pinbench.remote import Remote

    fetched = 0
    remote = Remote(server, token)
    try:
        for art, f in handed(lock):
            digest = Digest(f.sha256)
            if store.has(digest):
                continue
            label = f"{art.ref}:{f.path}"
            say(f"fetching {label} ({f.size:,} bytes) by digest")
            writer = store.writer()
            try:
                for chunk in remote.blob(digest.hex):
                    writer.write(chunk)
                staged = writer.finish(label=label, expected=digest, size=f.size)
            except BaseException:
                writer.abort()
                raise
            with store.locked():
                store.commit(staged)
            fetched += 1
    finally:
        remote.close()
    return fetched


class RanksFailed(UserError):
    """This agent's share of a spread training's ranks failed (``reason``: its error)."""

    def __init__(self, *, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def run_here(
    cache: Path,
    lock_bytes: bytes,
    *,
    server: str,
    token: str,
    runner: str,
    trace: str,
    allow_pickle: bool,
    allowed: tuple[str, ...],
    say: Say,
    allow_code: bool = False,
    stop: Stop | None = None,
    warm: WarmPool | None = None,
    price: Price | None = None,
    audit: bool = False,
    ranks: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Run a lockfile on this agent; the packed results: ``files`` (name → bytes, as
    ``write_results`` wrote them), ``environment``, ``host`` and ``fetched`` (blobs
    downloaded), ``runner`` (the one that ran: ``auto`` is decided here, among the server's
    ``allowed`` runners), ``word`` (this agent's word as the run's host: its audits,
    ``host_word``). A failure before the evaluation (a blob refused) raises (the actor answers
    it as data, ``pinbench.cluster.answer``). ``price``: the agent's declared price, recorded
    in the results' details (``cost``). ``audit``: MLPerf's audits for a run whose model would
    not have them (``run --audit``). ``ranks``: this agent's share of a training run's ranks
    spread over systems (``training.distributed.placement``), checked before any fetch."""
    import dataclasses

    from pinbench.cluster.host_word import pack, without_host_only
    from pinbench.evaluator.host import host_facts
    from pinbench.evaluator.runners import runner_named
    from pinbench.evaluator.server_runner import choose_server_runner
    from pinbench.training.distributed.placement import BadPlacement, parse, placed
    from pinbench.worker.job import Evidence
    from pinbench.worker.results import write_results

    lock = Lockfile.from_bytes(lock_bytes, source="the lockfile the server sent")
    placement = None if ranks is None else parse(ranks)
    distributed = lock.body.request.distributed
    if placement is not None and distributed is not None:
        placement.check(distributed)
    elif placement is not None:
        raise BadPlacement(reason="the lockfile trains no distributed run")
    ws = Workspace(Settings(home=cache, database_url=f"sqlite:///{cache / 'unused.db'}"))
    try:
        ws.store.create()
        fetched = fetch_pinned(ws.store, lock, server, token, say)
        say("verifying every pinned byte on this agent")
        for art, f in handed(lock):
            ws.store.verify(Digest(f.sha256), label=f"{art.ref}:{f.path}")
        chosen = choose_server_runner(runner, lock, allowed)  # ``auto``: this machine's answer
        evidence = Evidence()
        error = None
        try:
            execute = runner_named(chosen)
            with placed(placement):
                execute(
                    ws,
                    lock,
                    evidence,
                    say,
                    trace,
                    allow_pickle=allow_pickle,
                    allow_code=allow_code,
                    stop=stop,
                    warm=warm,
                    audit=audit,
                )
        except RunStopped:
            raise  # the server asked: it records the run as it ends there
        except PinbenchError as exc:
            error = str(exc)
        if error is not None and placement is not None and not placement.leads:
            raise RanksFailed(reason=error)  # the server's to say: no record of its own
        evidence.details.pop("cost", None)  # the evaluator's word is not the agent's price
        if price is not None:
            evidence.details["cost"] = price.to_json()
        with tempfile.TemporaryDirectory(prefix="pinbench-agent-") as out:
            folder = Path(out)
            # its figures only a host writes cross in its word (``pack``), not as a worker's
            written = dataclasses.replace(evidence, metrics=without_host_only(evidence.metrics))
            write_results(folder, lock.digest.hex, written, error, environment={})
            files = {p.name: p.read_bytes() for p in sorted(folder.iterdir())}
        return {
            "runner": chosen,
            "files": files,
            "environment": evidence.environment,
            "host": host_facts(evidence.frameworks),
            "fetched": fetched,
            "word": pack(evidence),
        }
    finally:
        ws.close()
