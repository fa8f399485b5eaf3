"""Recording what is named by its content is idempotent under concurrency: many writers that
record the same new thing at once all succeed, all get the same answer, and exactly one of
them is told it was new (decision 286).

Over HTTP: clients that lock the same new request at once, on a two-worker server on
PostgreSQL (a lost race once answered ``409 duplicate key value violates unique constraint
"lockfiles_pkey"``). In process, one table walks every insert of the kind, on SQLite and
PostgreSQL: a barrier starts the writers together, round after round, each round on a key no
round used before.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest
from sqlalchemy import delete, func, select

from pinbench.workspace import Workspace
from tests.apiserver import api_server

T = TypeVar("T")
CLIENTS = 16
ROUNDS = 6


def _request(seed: int) -> dict[str, Any]:
    """A request no earlier round locked: its seed is part of the lockfile."""
    return {
        "model": "vision/digits-logreg@^1",
        "framework": "onnxruntime@*",
        "dataset": "sklearn-digits-test@^1",
        "scenario": {"name": "SingleStream", "mode": "accuracy", "seed": seed},
    }


def _together(calls: list[Callable[[], T]]) -> list[T | Exception]:
    """Each call in a thread of its own, all released at once; each one's result or error."""
    barrier = threading.Barrier(len(calls))

    def one(call: Callable[[], T]) -> T | Exception:
        barrier.wait()
        try:
            return call()
        except Exception as exc:  # the assertion names it
            return exc

    with ThreadPoolExecutor(len(calls)) as pool:
        return list(pool.map(one, calls))


def test_concurrent_first_locks_over_http_all_get_one_lockfile(
    tmp_path: Path, pg_server: str, catalog_dir: Path
) -> None:
    from tests.conftest import _fresh_pg_database

    url = _fresh_pg_database(pg_server)
    with api_server(tmp_path / "home", url, "--workers", "2", catalog_dir=catalog_dir) as srv:
        clients = [srv.client("owner") for _ in range(CLIENTS)]
        try:
            for seed in range(1, ROUNDS + 1):
                body = _request(seed)
                sent = _together([partial(c.post, "/api/v1/lockfiles", json=body) for c in clients])
                answers = [a for a in sent if isinstance(a, httpx.Response)]
                assert len(answers) == CLIENTS, sent
                statuses = [a.status_code for a in answers]
                assert statuses == [201] * CLIENTS, [
                    a.text for a in answers if a.status_code != 201
                ]
                points = [a.json()["points"][0] for a in answers]
                assert len({p["digest"] for p in points}) == 1, points
                assert sum(p["new"] for p in points) == 1, points
        finally:
            for c in clients:
                c.close()


WRITERS = 8
TABLE_ROUNDS = 4

Writer = Callable[[], tuple[str, bool | None]]
"""One writer's call: (what it was answered, whether it was told it recorded something new;
None where the call does not say)."""


def _lockfile(ws: Workspace, tmp: Path, rnd: int) -> Writer:
    from pinbench.registry import service
    from pinbench.registry.request import parse_request

    request = parse_request(_request(rnd), source="(test)")

    def write() -> tuple[str, bool | None]:
        lock, new = service.lock(ws, request)
        return lock.digest.hex, new

    return write


def _signing_key(ws: Workspace, tmp: Path, rnd: int) -> Writer:
    from pinbench.db.models import SigningKey
    from pinbench.provenance.keys import key_path, signing_key

    key_path(ws).unlink(missing_ok=True)  # a registry that never had a key
    with ws.transaction() as session:
        session.execute(delete(SigningKey))

    def write() -> tuple[str, bool | None]:
        from cryptography.hazmat.primitives import serialization

        public = (
            signing_key(ws)
            .public_key()
            .public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
        )
        return public.hex(), None

    return write


def _artifact(ws: Workspace, tmp: Path, rnd: int) -> Writer:
    from pinbench.registry.manifest import load_manifest
    from pinbench.registry.publish import publish
    from tests.test_api import model_manifest

    folder = tmp / f"artifact-{rnd}"
    folder.mkdir()
    path = model_manifest(folder, f"1.0.{rnd}", f"weights {rnd}".encode(), "vision/same")

    def write() -> tuple[str, bool | None]:
        done = publish(ws, load_manifest(path), manifest_dir=folder)
        return done.manifest_digest.hex, done.created

    return write


def _alert(ws: Workspace, tmp: Path, rnd: int) -> Writer:
    from pinbench.series.alerts import raise_alert

    def write() -> tuple[str, bool | None]:
        row = raise_alert(
            ws, series="s", metric="top1", kind="regression", run_id=f"r{rnd}", detail={}
        )
        return str(row["id"]), None

    return write


def _study(ws: Workspace, tmp: Path, rnd: int) -> Writer:
    from pinbench.studies.cells import cells
    from pinbench.studies.spec import parse_study
    from pinbench.studies.store import open_study
    from tests.test_study import study_data

    study = parse_study(study_data(f"study-{rnd}"), source="test")

    def write() -> tuple[str, bool | None]:
        return str(open_study(ws, study, "test", cells(study))), None

    return write


def _count(table: str) -> Callable[[Workspace], int]:
    def count(ws: Workspace) -> int:
        from pinbench.db.models import Base

        with ws.transaction() as session:
            return int(
                session.scalar(select(func.count()).select_from(Base.metadata.tables[table])) or 0
            )

    return count


CASES: list[tuple[str, Callable[[Workspace, Path, int], Writer], str, bool, str]] = [
    # (case, writer, table, rows grow by one a round, why it is of the kind)
    ("lockfile", _lockfile, "lockfiles", True,
     "keyed by its sha256: lock, run, queue and PUT /lockfiles record it (insert-if-absent)"),
    ("signing key", _signing_key, "signing_keys", False,
     "keyed by its key's digest: every process of a fresh registry makes it on first use"),
    ("artifact", _artifact, "artifacts", True,
     "keyed by KIND/NAME@VERSION: the same manifest published at once is one no-op each"),
    ("alert", _alert, "alerts", True,
     "keyed by its finding: a gate run at once on one candidate records one alert"),
    ("study", _study, "studies", True,
     "keyed by its name: one new study run at once from two shells is recorded once"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("case", "writer", "table", "grows", "why"), CASES, ids=[c[0] for c in CASES]
)
def test_concurrent_first_inserts_of_the_same_content_all_succeed(
    ws_any: Workspace,
    tmp_path: Path,
    catalog_dir: Path,
    case: str,
    writer: Callable[[Workspace, Path, int], Writer],
    table: str,
    grows: bool,
    why: str,
) -> None:
    if case == "lockfile":  # what the requests resolve to
        from pinbench.registry.manifest import load_manifest
        from pinbench.registry.publish import publish

        for path in sorted(catalog_dir.glob("*.yaml")):
            publish(ws_any, load_manifest(path), manifest_dir=catalog_dir)
    count = _count(table)
    before = count(ws_any)
    for rnd in range(1, TABLE_ROUNDS + 1):
        write = writer(ws_any, tmp_path, rnd)
        answered = _together([write] * WRITERS)
        failed = [a for a in answered if isinstance(a, Exception)]
        assert failed == [], f"{case} ({why}): {failed[0]!r}"
        answers = [a for a in answered if not isinstance(a, Exception)]
        assert len({answer for answer, _ in answers}) == 1, (case, answers)
        told = [new for _, new in answers if new is not None]
        assert told == [] or sorted(told) == [False] * (WRITERS - 1) + [True], (case, told)
        assert count(ws_any) == (before + rnd if grows else 1), case
