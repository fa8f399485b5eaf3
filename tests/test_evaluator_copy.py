"""The evaluator copy sandboxed workers share (``runners.evaluator_copy``): one per process and
scratch folder, the worker's side byte for byte, made again if it has gone, read-only to the
worker (``test_code_boundary``'s tampering run fails on it), removed at exit or reclaimed once
its process is dead (``test_server_faults``)."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

from pinbench.artifacts.scratch import reclaim, remove_tree
from pinbench.evaluator.runners.evaluator_copy import shared_evaluator
from pinbench.worker.source import PACKAGE, evaluator_digest, evaluator_files


def _digest(copy: Path) -> str:
    """``evaluator_digest``'s sum over the copy's files."""
    h = hashlib.sha256()
    for path in evaluator_files():
        rel = path.relative_to(PACKAGE).as_posix()
        h.update(rel.encode() + b"\0" + hashlib.sha256((copy / rel).read_bytes()).digest())
    return h.hexdigest()


def test_one_copy_a_process_holding_the_workers_side_and_made_again_when_gone(
    tmp_path: Path,
) -> None:
    tmp = tmp_path / "tmp"
    first = shared_evaluator(tmp)
    assert shared_evaluator(tmp) == first
    assert _digest(first / "pinbench") == evaluator_digest()
    entries = [p.name for p in tmp.iterdir()]
    assert len(entries) == 1 and entries[0].startswith("evaluator-")
    remove_tree(first.parent)
    again = shared_evaluator(tmp)
    assert _digest(again / "pinbench") == evaluator_digest()
    assert reclaim(tmp).removed == []  # this process is alive: its copy is kept


def test_a_process_that_exits_leaves_no_copy(tmp_path: Path) -> None:
    tmp = tmp_path / "tmp"
    code = (
        "import sys; from pathlib import Path\n"
        "from pinbench.evaluator.runners.evaluator_copy import shared_evaluator\n"
        "print(shared_evaluator(Path(sys.argv[1])))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(tmp)], capture_output=True, text=True, check=True
    )
    assert Path(done.stdout.strip()).is_relative_to(tmp)
    assert [p.name for p in tmp.iterdir() if p.name != "owners"] == []


def test_the_copy_links_the_packages_files_where_the_filesystem_allows(tmp_path: Path) -> None:
    import os

    copy = shared_evaluator(tmp_path / "tmp") / "pinbench"
    same_device = os.stat(tmp_path).st_dev == os.stat(PACKAGE).st_dev
    linked = os.stat(copy / "__init__.py").st_ino == os.stat(PACKAGE / "__init__.py").st_ino
    assert linked == same_device
