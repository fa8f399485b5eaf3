"""What runs beside the model cannot change what pinbench records (issue 63, invariant 15).

Code a user allowed for one run (a manifest's processing code here) runs with the worker's
rights. Each test is a hostile author's attempt to make that consent outlive its run, or to
reach the worker from outside the folders the host chose, and what pinbench does instead:

- a worker imports the evaluator from a copy of its own, never from the folder it was started
  in, and a copy a run's code changed is never imported by a later run;
- a run's code that changes its environment, or the inputs cached for other runs, fails its
  run naming the file, and what it changed is removed (the next run rebuilds it);
- a cached array that is not the one written is rebuilt, never scored.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pinbench import catalog as builtin
from pinbench.evaluator.history import show_run
from pinbench.evaluator.run import run_lockfile
from pinbench.evaluator.warm import WarmPool
from pinbench.registry import service
from pinbench.registry.lockfile import Lockfile
from pinbench.registry.request import parse_request
from pinbench.workspace import Workspace
from tests.test_processing_code import CODE, POST, PRE, World, _lock, _publish, quiet, world

__all__ = ["world"]  # the processing tests' module fixture, shared here

HONEST_TOP1 = 0.9689
"""The catalog's digits model on its test split (``docs/benchmarks.md``; the issue's figure)."""


def _digits_lock(ws: Workspace) -> Lockfile:
    request = {
        "model": f"{builtin.MODEL_NAME}@1.1.0",
        "dataset": f"{builtin.DATASET_NAME}@1",
        "scenario": {"mode": "accuracy"},
    }
    return service.lock(ws, parse_request(request))[0]


@pytest.fixture
def pool(tmp_path: Path) -> Iterator[WarmPool]:
    warm = WarmPool(tmp_path / "warm")
    yield warm
    warm.close()


# --- where a worker imports pinbench from -----------------------------------------------------


@pytest.mark.parametrize("warm", [False, True], ids=["cold", "warm"])
def test_a_worker_imports_nothing_from_the_folder_it_was_started_in(
    world: World, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pool: WarmPool, warm: bool
) -> None:
    """``python -m`` puts the working directory first on ``sys.path``: started from a folder
    holding a ``pinbench/`` package (a clone of this repository, a model author's download),
    the worker ran that package instead of the evaluator, with no consent asked."""
    planted = tmp_path / "here" / "pinbench"
    planted.mkdir(parents=True)
    mark = tmp_path / "imported.mark"
    (planted / "__init__.py").write_text(f"open({str(mark)!r}, 'w').write('ran')\n")
    monkeypatch.chdir(planted.parent)
    outcome = run_lockfile(
        world.home.ws,
        _digits_lock(world.home.ws),
        runner="venv",
        say=quiet,
        warm=pool if warm else None,
    )
    assert not mark.exists()
    assert show_run(world.home.ws, outcome.id)["top1"] == pytest.approx(HONEST_TOP1, abs=5e-5)


# --- the evaluator a later run imports ---------------------------------------------------------

WRAPPER = """
_honest_write_results = write_results


def write_results(out, lock_digest, evidence, error, environment):
    if "top1" in evidence.metrics:
        evidence.metrics["top1"] = 1.0
    _honest_write_results(out, lock_digest, evidence, error, environment)
"""
"""What the issue's hostile ``proc.py`` appended to the evaluator's ``results.py``."""

TAMPERS_WITH_THE_EVALUATOR = (
    "import importlib.util as _util\n"
    "import os as _os\n"
    "import pinbench.evaluator.results as _results\n\n"
    "with open(_results.__file__, 'a') as _f:\n"
    f"    _f.write({WRAPPER!r})\n"
    "try:\n"
    "    _os.remove(_util.cache_from_source(_results.__file__))\n"
    "except OSError:\n"
    "    pass\n\n" + CODE
)


def test_code_allowed_for_one_run_cannot_change_the_evaluator_of_a_later_run(
    world: World, tmp_path: Path
) -> None:
    """Issue 63's first reproduction: a model's code, allowed once in the venv runner, appended
    a wrapper to the staged evaluator that every later run of the home imported; the catalog's
    digits model then recorded top-1 1.0000 (honest 0.9689), without ``--allow-code``."""
    ws = world.home.ws
    hostile = _publish(
        ws,
        tmp_path,
        world.catalog,
        "9.0.0",
        preprocess=PRE,
        postprocess=POST,
        code=TAMPERS_WITH_THE_EVALUATOR,
    )
    run_lockfile(ws, _lock(ws, hostile), runner="venv", say=quiet, allow_code=True)
    later = run_lockfile(ws, _digits_lock(ws), runner="venv", say=quiet)
    recorded: dict[str, Any] = show_run(ws, later.id)
    assert recorded["status"] == "succeeded"
    assert recorded["top1"] == pytest.approx(HONEST_TOP1, abs=5e-5)
