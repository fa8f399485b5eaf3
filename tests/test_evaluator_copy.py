"""What a sandboxed worker imports pinbench from (``runners.evaluator_copy``): the worker's
side of the host's package bound read-only unit by unit, nothing else of pinbench, nothing
copied, nothing of the package's files changed (``test_code_boundary``'s tampering run fails
on the read-only file)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pinbench.evaluator.runners.evaluator_copy import side_binds
from pinbench.evaluator.runners.sandbox import Confinement, wrap
from pinbench.worker.source import PACKAGE, evaluator_files

LISTS = """
import json, os
import pinbench.worker.main  # the worker's entry imports
root = os.path.join(os.environ["PYTHONPATH"], "pinbench")
found = [
    os.path.relpath(os.path.join(d, f), root)
    for d, _, files in os.walk(root) for f in files if f.endswith((".py", ".typed"))
]
try:
    open(os.path.join(root, "worker", "main.py"), "a").close()
    wrote = "yes"
except OSError as exc:
    wrote = exc.strerror
print(json.dumps({"files": sorted(found), "wrote": wrote}))
"""


def _inode(path: Path) -> tuple[int, ...]:
    """What ``guard`` would read as a change of the package's file (reading moves atime only)."""
    st = os.stat(path)
    return st.st_ino, st.st_nlink, st.st_size, st.st_mtime_ns, st.st_ctime_ns


def test_a_sandbox_sees_the_workers_side_read_only_and_nothing_else(tmp_path: Path) -> None:
    stats = {p: _inode(p) for p in evaluator_files()}
    confine = Confinement(tmp_path / "run")
    confine.root.mkdir()
    confine.prepare()
    evaluator = confine.root / "worker" / "evaluator"
    made = side_binds(evaluator)
    assert made is not None  # this checkout's side folders hold Python alone
    binds = [(host, confine.inside(entry)) for host, entry in made]
    argv, env = wrap(
        confine,
        sys.executable,
        [sys.executable, "-s", "-c", LISTS],
        hidden=[],
        pythonpath=confine.inside(evaluator),
        cwd=confine.inside(confine.root),
        binds=binds,
    )
    done = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    side = sorted(p.relative_to(PACKAGE).as_posix() for p in evaluator_files())
    assert seen["files"] == side  # the runners, the scorer, the CLI, the server: not there
    assert seen["wrote"] == "Read-only file system"
    assert {p: _inode(p) for p in evaluator_files()} == stats  # no link count or time moved


def test_a_side_folder_holding_more_than_python_is_copied_not_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An attacker's review: a bound folder shows all it holds (a developer's stray file in an
    editable checkout, a link out of it), and a package under the home would not be checked
    against what a sandbox hides. Such a worker gets a copy of the side's files instead."""
    import shutil

    from pinbench.worker import source

    package = tmp_path / "site" / "pinbench"
    shutil.copytree(PACKAGE, package, ignore=shutil.ignore_patterns("*.so"))
    monkeypatch.setattr(source, "PACKAGE", package)
    assert side_binds(tmp_path / "clean") is not None
    assert side_binds(tmp_path / "hidden", [tmp_path / "site"]) is None
    (package / "worker" / "notes.txt").write_text("a developer's")
    assert side_binds(tmp_path / "stray") is None
    assert not (tmp_path / "stray").exists()  # nothing made
    (package / "worker" / "notes.txt").unlink()
    (package / "worker" / "link.py").symlink_to("/etc/passwd")
    assert side_binds(tmp_path / "linked") is None
