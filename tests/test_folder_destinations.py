"""A folder a command makes for its output (decision 289's ``folder``, with ``parents`` for
the catalog's and the benchmark's stages, the catalog's build, an agent's cache and a backup)
is made or refused in one line naming why, nothing made: a dangling link as the folder ended
in a ``FileExistsError`` traceback (``backup``, ``catalog prepare``), a path under a regular
file in a ``NotADirectoryError`` one (``catalog evaluate``: after copying its registry)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from pinbench.sdk.files import DestinationRefused, folder
from tests.helpers import Cli, in_process_cli


def _cases(root: Path) -> list[tuple[str, Path, str]]:
    """(case, the folder asked for, what the refusal says), made under ``root``."""
    plain = root / "notes.txt"
    plain.write_bytes(b"kept")
    dangling = root / "gone"
    dangling.symlink_to(root / "nowhere")
    return [
        ("a link to nothing", dangling, "which does not exist"),
        ("under a regular file", plain / "out", "it cannot be made (Not a directory)"),
        ("a regular file", plain, "not a folder"),
    ]


def _unchanged(root: Path) -> None:
    assert sorted(p.name for p in root.iterdir()) == ["gone", "home", "notes.txt"]
    assert (root / "notes.txt").read_bytes() == b"kept" and not (root / "nowhere").exists()


COMMANDS: list[tuple[str, Callable[[Path, Path], list[str]]]] = [
    ("backup", lambda dest, home: ["backup", str(dest)]),
    ("catalog prepare", lambda dest, home: ["catalog", "prepare", str(dest), "--parts", "digits"]),
    # its input (a registry: the home) checked first, then its output folder
    ("catalog evaluate", lambda dest, home: ["catalog", "evaluate", str(home), str(dest)]),
]


@pytest.mark.parametrize(("command", "argv"), COMMANDS, ids=[c for c, _ in COMMANDS])
def test_a_command_refuses_a_folder_it_cannot_make_in_one_line(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    command: str,
    argv: Callable[[Path, Path], list[str]],
) -> None:
    cli: Cli = in_process_cli(monkeypatch, capsys, tmp_path / "home")
    assert cli("init").code == 0
    for case, dest, why in _cases(tmp_path):
        done = cli(*argv(dest, tmp_path / "home"))
        assert done.code == 1, (command, case, done.out, done.err)
        assert why in done.err and "Traceback" not in done.err, (command, case, done.err)
        assert done.err.strip().count("\n") == 0, (command, case, done.err)
        _unchanged(tmp_path)


def test_the_folder_function_with_parents(tmp_path: Path) -> None:
    (tmp_path / "home").mkdir()
    for _case, dest, why in _cases(tmp_path):
        with pytest.raises(DestinationRefused, match=why.replace("(", r"\(").replace(")", r"\)")):
            folder(dest, option="OUT_DIR", parents=True)
        _unchanged(tmp_path)
    deep = tmp_path / "a" / "b" / "c"
    assert folder(deep, option="OUT_DIR", parents=True) == deep and deep.is_dir()
    assert folder(deep, option="OUT_DIR", parents=True) == deep  # an existing folder: kept
