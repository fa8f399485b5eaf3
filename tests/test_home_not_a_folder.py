"""A ``PINBENCH_HOME`` that is not a folder is refused by every command that opens the home,
in one line naming it, before anything is made (issue 72, item 3: ``init`` ended in a
``FileExistsError`` traceback, ``restore`` in a ``NotADirectoryError`` one, and ``list``
blamed the database's schema)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import in_process_cli

COMMANDS = [
    ("init", ["init"]),
    ("list", ["list"]),
    ("runs list", ["runs", "list"]),
    ("restore", ["restore", "BACKUP"]),
    ("backup", ["backup", "OUT"]),
    ("fsck", ["fsck"]),
    ("db upgrade", ["db", "upgrade"]),
]
WHERE = [
    ("a file", "", "is not a folder"),
    ("a path under a file", "/home", "is under"),
]


@pytest.mark.parametrize(("where", "below", "said"), WHERE, ids=[w for w, _, _ in WHERE])
@pytest.mark.parametrize(("name", "args"), COMMANDS, ids=[n for n, _ in COMMANDS])
def test_a_home_that_is_not_a_folder_is_refused_in_one_line(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    name: str,
    args: list[str],
    where: str,
    below: str,
    said: str,
) -> None:
    blocker = tmp_path / "home-file"
    blocker.write_text("not a home\n")
    (tmp_path / "backup").mkdir()
    cli = in_process_cli(monkeypatch, capsys, Path(f"{blocker}{below}"))
    given = [str(tmp_path / "backup") if a == "BACKUP" else a for a in args]
    given = [str(tmp_path / "out") if a == "OUT" else a for a in given]
    done = cli(*given)
    assert done.code == 1, (name, done.err)
    assert done.err.startswith("error: PINBENCH_HOME ") and said in done.err, done.err
    assert len(done.err.strip().splitlines()) == 1 and "Traceback" not in done.err
    assert blocker.read_text() == "not a home\n"  # nothing made or changed
    assert sorted(p.name for p in tmp_path.iterdir()) == ["backup", "home-file"]
