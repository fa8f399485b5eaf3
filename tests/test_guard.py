"""What the host watches around a worker that runs code (``runners.guard``): each kind of
change is found and named, the run's own folder is left out, and what changed is removed as
its tree says (issue 63)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from pinbench.evaluator.runners.guard import CodeChangedFiles, Watched, watched


def _tree(root: Path) -> None:
    (root / "own").mkdir(parents=True)
    (root / "kept.npy").write_bytes(b"a")
    (root / "sub").mkdir()
    (root / "sub" / "deep.py").write_text("x = 1\n")


def _append(path: Path) -> None:
    with path.open("a") as f:
        f.write("# changed\n")


def _same_bytes_again(path: Path) -> None:
    """Rewritten with its own bytes and its old times put back: only ctime tells."""
    st = path.stat()
    path.write_bytes(path.read_bytes())
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


# (why, the change, the path named)
CHANGES: list[tuple[str, Callable[[Path], object], str]] = [
    ("a file made", lambda r: (r / "planted.npy").write_bytes(b"b"), "planted.npy"),
    ("a file appended to", lambda r: _append(r / "sub" / "deep.py"), "sub/deep.py"),
    ("the same bytes with the old times", lambda r: _same_bytes_again(r / "kept.npy"), "kept.npy"),
    ("a file removed", lambda r: (r / "kept.npy").unlink(), "kept.npy"),
    ("a link made", lambda r: (r / "link").symlink_to(r / "kept.npy"), "link"),
]


@pytest.mark.parametrize(("change", "named"), [pytest.param(c, n, id=w) for w, c, n in CHANGES])
def test_each_change_fails_naming_its_path_and_is_removed(
    tmp_path: Path, change: Callable[[Path], object], named: str
) -> None:
    _tree(tmp_path)
    tree = Watched("the inputs cached for other runs", tmp_path, "files", tmp_path / "own")
    with pytest.raises(CodeChangedFiles) as raised, watched([tree]):
        change(tmp_path)
    assert raised.value.paths == [named]
    assert not (tmp_path / named).is_symlink() and not (tmp_path / named).exists()


def test_the_runs_own_folder_and_an_untouched_tree_pass(tmp_path: Path) -> None:
    _tree(tmp_path)
    tree = Watched("the inputs cached for other runs", tmp_path, "files", tmp_path / "own")
    with watched([tree]):
        (tmp_path / "own" / "mine.npy").write_bytes(b"c")
        (tmp_path / "kept.npy").read_bytes()


def test_a_changed_environment_is_removed_whole(tmp_path: Path) -> None:
    env = tmp_path / "env"
    _tree(env)
    with (
        pytest.raises(CodeChangedFiles, match="the next run builds it again"),
        watched([Watched("its environment env", env, "tree")]),
    ):
        _append(env / "sub" / "deep.py")
    assert not env.exists()


def test_a_root_swapped_for_a_link_is_named_and_nothing_is_removed_through_it(
    tmp_path: Path,
) -> None:
    root, elsewhere = tmp_path / "cache", tmp_path / "elsewhere"
    _tree(root)
    _tree(elsewhere)
    with (
        pytest.raises(CodeChangedFiles, match="is now a link"),
        watched([Watched("the inputs cached for other runs", root, "files")]),
    ):
        os.rename(root, tmp_path / "moved")
        root.symlink_to(elsewhere)
    assert (elsewhere / "kept.npy").exists() and (elsewhere / "sub" / "deep.py").exists()


def test_a_change_left_in_place_refuses_later_runs_until_it_is_undone(tmp_path: Path) -> None:
    """pinbench's own package is not repaired by the host: the change is noted, and every
    later run is refused naming it, until the file is reinstalled (its state is then new)."""
    from pinbench.evaluator.runners.guard import ChangedByCode, check_marked

    package, mark = tmp_path / "pinbench", tmp_path / "home" / "mark.json"
    _tree(package)
    with (
        pytest.raises(CodeChangedFiles, match="Reinstall"),
        watched([Watched("pinbench's own package", package, "none", mark=mark)]),
    ):
        _append(package / "sub" / "deep.py")
    assert (package / "sub" / "deep.py").read_text().endswith("# changed\n")  # left for you
    with pytest.raises(ChangedByCode, match=r"sub/deep\.py, still as it left them"):
        check_marked(mark)
    (package / "sub" / "deep.py").write_text("x = 1\n")  # reinstalled
    check_marked(mark)
    assert not mark.exists()
    check_marked(mark)  # no mark: nothing to hold a run to
