"""``make test`` runs the suite on pytest-xdist's workers with ``--dist loadgroup``: a test in
an ``xdist_group``, or one that uses a module-scoped fixture (``tests/sharing.py``), runs on
the worker that holds its group. Grouping fails silently when it breaks (pytest 9.2 made
xdist 3.8's group suffix a no-op: pytest-xdist issue 1386), so this runs a small suite on two
workers with this suite's own collection hook and checks where each test ran."""

from __future__ import annotations

import os
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CONFTEST = """
from tests.conftest import pytest_collection_modifyitems  # noqa: F401  (the suite's own hook)
"""

PYTEST = [sys.executable, "-m", "pytest", "-n", "2", "--dist", "loadgroup", "-q"]
PYTEST += ["-p", "no:cacheprovider"]

SUITE = """
import os
import time
from pathlib import Path

import pytest


def record(kind, i):
    out = Path(os.environ["GROUPS_OUT"])
    (out / f"{kind}-{i}").write_text(os.environ["PYTEST_XDIST_WORKER"])
    time.sleep(0.2)  # both workers busy: a test not kept in its group would go to either


@pytest.fixture(scope="module")
def per_module():
    return object()


@pytest.mark.parametrize("i", range(8))
def test_uses_a_module_fixture(per_module, i):
    record("module", i)


@pytest.mark.xdist_group(name="one-daemon")
@pytest.mark.parametrize("i", range(4))
def test_in_a_group(i):
    record("group", i)


@pytest.mark.parametrize("i", range(8))
def test_free(i):
    record("free", i)
"""


def test_groups_and_module_fixtures_each_run_on_one_worker(tmp_path: Path) -> None:
    project, out = tmp_path / "project", tmp_path / "out"
    project.mkdir()
    out.mkdir()
    (project / "conftest.py").write_text(CONFTEST)
    (project / "test_suite.py").write_text(SUITE)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_XDIST_")}
    pythonpath = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    done = subprocess.run(
        [*PYTEST, f"--basetemp={tmp_path / 'basetemp'}", str(project)],
        cwd=project,
        env={**env, "PYTHONPATH": pythonpath, "GROUPS_OUT": str(out)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    workers: dict[str, set[str]] = defaultdict(set)
    for ran in out.iterdir():
        workers[ran.name.split("-")[0]].add(ran.read_text())
    assert len(list(out.iterdir())) == 20  # every test ran, once
    assert len(workers["module"]) == 1, workers  # the module's fixture on one worker
    assert len(workers["group"]) == 1, workers  # the group on one worker
    assert set().union(*workers.values()) == {"gw0", "gw1"}, workers  # and two workers ran
