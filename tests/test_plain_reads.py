"""Plain SQL reads (``Workspace.reads``): the CLI's list, show and resolve read the embedded
SQLite file with the standard library's driver, and must answer exactly what the SQLAlchemy
path answers, refuse what it refuses, and never create or change the database."""

from __future__ import annotations

from pathlib import Path

import pytest

from pinbench.config import Settings
from pinbench.db import migrate
from pinbench.db.errors import DatabaseUnavailable
from pinbench.db.plain import sqlite_file
from pinbench.db.schema import HEAD_REVISION, SchemaNotCurrent
from pinbench.registry import catalog
from pinbench.registry.manifest import parse_manifest
from pinbench.registry.names import ArtifactRef, Kind, Spec
from pinbench.registry.publish import publish
from pinbench.workspace import Workspace
from tests.helpers import Cli, dataset_manifest, write_files


@pytest.mark.parametrize(
    ("url", "path"),
    [
        ("sqlite:////abs/home/pinbench.db", "/abs/home/pinbench.db"),
        ("sqlite:///relative.db", "relative.db"),
        ("sqlite://", None),
        ("sqlite:///:memory:", None),
        ("sqlite:///x.db?mode=ro&uri=true", None),  # options: SQLAlchemy reads them
        ("sqlite:///a%20b.db", None),  # escapes: SQLAlchemy decodes them
        ("sqlite+pysqlite:///x.db", None),
        ("postgresql+psycopg://u@127.0.0.1:5432/db", None),
    ],
)
def test_only_a_plain_sqlite_file_url_is_read_without_sqlalchemy(
    url: str, path: str | None
) -> None:
    assert sqlite_file(url) == (None if path is None else Path(path))


def _publish(ws: Workspace, root: Path, version: str, *, name: str = "digits") -> None:
    folder = root / f"{name}-{version}"
    files = write_files(folder, {"x.npy": b"x" + version.encode(), "y.npy": b"labels"})
    manifest = parse_manifest(dataset_manifest(name, version, files))
    publish(ws, manifest, manifest_dir=folder, publisher="alice")


def _answers(ws: Workspace) -> tuple[object, ...]:
    ref = ArtifactRef.parse("dataset/digits@1.1.0")
    return (
        [s.to_json() for s in catalog.list_artifacts(ws)],
        [s.to_json() for s in catalog.list_artifacts(ws, Kind.DATASET, "digits")],
        catalog.show(ws, ref),
        [str(r) for r in catalog.resolve_specs(ws, [Spec.parse("dataset/digits@^1")]).refs],
    )


def test_sqlite3_and_sqlalchemy_give_the_same_answers(ws_any: Workspace, tmp_path: Path) -> None:
    for version in ("1.0.0", "1.1.0", "1.2.0"):
        _publish(ws_any, tmp_path, version)
    _publish(ws_any, tmp_path, "2.0.0", name="other")
    catalog.yank(ws_any, ArtifactRef.parse("dataset/digits@1.2.0"), "bad labels")
    through_engine = _answers(ws_any)  # ws_any holds an engine: its pool is used
    fresh = Workspace(ws_any.settings)  # a CLI process: SQLite through sqlite3
    try:
        assert _answers(fresh) == through_engine
        on_sqlite = ws_any.settings.database_url.startswith("sqlite")
        assert ("engine" in fresh.__dict__) is not on_sqlite  # no engine: sqlite3 read it
    finally:
        fresh.close()
    listed, digits, shown, resolved = through_engine
    assert isinstance(listed, list) and len(listed) == 4
    assert isinstance(digits, list) and [d["yanked"] for d in digits] == [False, False, True]
    assert isinstance(shown, dict) and shown["published_at"].endswith("+00:00")
    assert [f["path"] for f in shown["files"]] == ["x.npy", "y.npy"]
    assert shown["manifest"]["name"] == "digits"
    assert resolved == ["dataset/digits@1.1.0"]  # 1.2.0 is yanked


def test_a_version_not_published_is_not_found(ws: Workspace) -> None:
    fresh = Workspace(ws.settings)
    with pytest.raises(catalog.NotFound, match=r"dataset/nope@1\.0\.0 is not published"):
        catalog.show(fresh, ArtifactRef.parse("dataset/nope@1.0.0"))
    fresh.close()


def test_reading_a_home_without_a_database_creates_nothing(cli: Cli, tmp_path: Path) -> None:
    home = tmp_path / "home"
    for args in (["list"], ["show", "dataset/digits@1.0.0"], ["resolve", "dataset/digits@^1"]):
        result = cli(*args)
        assert result.code != 0
        assert "no pinbench schema: run `pinbench init`" in result.err
        assert "Traceback" not in result.err
    assert not (home / "pinbench.db").exists()


def test_a_database_on_an_older_revision_is_refused(ws: Workspace) -> None:
    migrate.downgrade(ws.engine, "0006")
    fresh = Workspace(ws.settings)
    with pytest.raises(
        SchemaNotCurrent, match=f"revision 0006, this pinbench needs {HEAD_REVISION}"
    ):
        catalog.list_artifacts(fresh)
    fresh.close()


def test_a_file_that_is_not_a_database_is_a_clear_error(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "pinbench.db").write_bytes(b"not a database at all" * 100)
    ws = Workspace(Settings(home=home, database_url=f"sqlite:///{home / 'pinbench.db'}"))
    with pytest.raises(DatabaseUnavailable, match=r"cannot open database .*pinbench\.db"):
        catalog.list_artifacts(ws)
    ws.close()
    assert (home / "pinbench.db").read_bytes() == b"not a database at all" * 100


def test_reads_never_write(ws: Workspace, tmp_path: Path) -> None:
    """The connection is query-only: a statement that would write is refused by SQLite."""
    _publish(ws, tmp_path, "1.0.0")
    fresh = Workspace(ws.settings)
    with fresh.reads() as rows, pytest.raises(DatabaseUnavailable, match="readonly"):
        rows("DELETE FROM artifacts", {})
    fresh.close()
    assert [s.version for s in catalog.list_artifacts(ws)] == ["1.0.0"]


def test_a_timestamp_is_written_in_one_form_by_either_sqlite_path(ws: Workspace) -> None:
    """SQLite keeps a timestamp as text, compared and ordered as text: a plain write through
    ``sqlite3`` and one through a workspace holding an engine (the server's) store the form
    SQLAlchemy's ORM stores (``2026-11-28 21:27:00.000000``, UTC), never the raw driver's
    ``+00:00`` suffix; read back, each is the moment written."""
    from datetime import UTC, datetime, timedelta, timezone

    from pinbench.db.plain import when

    moments = [
        datetime(2026, 11, 28, 21, 27, tzinfo=UTC),
        datetime(2026, 11, 28, 22, 27, 0, 5, tzinfo=timezone(timedelta(hours=1))),
    ]
    for n, moment in enumerate(moments):
        if n:
            ws.engine  # noqa: B018 - from now on the workspace writes through its engine
        with ws.writes() as rows:
            rows(
                "INSERT INTO users (name, is_admin, created_at) VALUES (:name, :no, :at)",
                {"name": f"u{n}", "no": False, "at": moment},
            )
    with ws.reads() as rows:
        stored = [str(r[0]) for r in rows("SELECT created_at FROM users ORDER BY name", {})]
    assert stored == ["2026-11-28 21:27:00.000000", "2026-11-28 21:27:00.000005"]
    assert [when(s) for s in stored] == moments
