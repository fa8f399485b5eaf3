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

import json
from pathlib import Path
from typing import Any

import pytest

from pinbench import catalog as builtin
from pinbench.artifacts.digest import Digest
from pinbench.evaluator.records.run_view import show_run
from pinbench.evaluator.run import run_lockfile
from pinbench.evaluator.warm import WarmPool
from pinbench.registry import service
from pinbench.registry.lockfile import Lockfile
from pinbench.registry.request import parse_request
from pinbench.workspace import Workspace
from tests.test_processing_code import (
    CODE,
    POST,
    PRE,
    SAMPLES,
    World,
    _lock,
    _publish,
    quiet,
    world,
)
from tests.test_warm import pool

__all__ = ["pool", "world"]  # the warm and processing tests' fixtures, shared here

HONEST_TOP1 = 0.9689
"""The catalog's digits model on its test split (``docs/benchmarks.md``; the issue's figure)."""


def _digits_lock(ws: Workspace) -> Lockfile:
    request = {
        "model": f"{builtin.MODEL_NAME}@1.1.0",
        "dataset": f"{builtin.DATASET_NAME}@1",
        "scenario": {"mode": "accuracy"},
    }
    return service.lock(ws, parse_request(request))[0]


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
    "import pinbench.worker.results as _results\n\n"
    "with open(_results.__file__, 'a') as _f:\n"
    f"    _f.write({WRAPPER!r})\n"
    "try:\n"
    "    _os.remove(_util.cache_from_source(_results.__file__))\n"
    "except OSError:\n"
    "    pass\n\n" + CODE
)


@pytest.mark.parametrize("sandbox", ["bwrap", "none"])
def test_code_allowed_for_one_run_cannot_change_the_evaluator_of_a_later_run(
    world: World, tmp_path: Path, sandbox: str
) -> None:
    """Issue 63's first reproduction: a model's code, allowed once in the venv runner, appended
    a wrapper to the staged evaluator that every later run of the home imported; the catalog's
    digits model then recorded top-1 1.0000 (honest 0.9689), without ``--allow-code``. In the
    sandbox the evaluator is read-only (the run fails saying so); outside it, each worker's
    copy is its own."""
    from pinbench.evaluator.runners.process import EvaluationFailed

    ws = world.home.ws
    hostile = _publish(
        ws,
        tmp_path,
        world.catalog,
        f"9.0.{sandbox == 'none':d}",
        preprocess=PRE,
        postprocess=POST,
        code=TAMPERS_WITH_THE_EVALUATOR,
    )
    hostile_run = {"runner": "venv", "say": quiet, "allow_code": True, "sandbox": sandbox}
    if sandbox == "bwrap":
        with pytest.raises(EvaluationFailed, match=r"Read-only file system.*results\.py"):
            run_lockfile(ws, _lock(ws, hostile), **hostile_run)  # type: ignore[arg-type]
    else:
        run_lockfile(ws, _lock(ws, hostile), **hostile_run)  # type: ignore[arg-type]
    later = run_lockfile(ws, _digits_lock(ws), runner="venv", say=quiet)
    recorded: dict[str, Any] = show_run(ws, later.id)
    assert recorded["status"] == "succeeded"
    assert recorded["top1"] == pytest.approx(HONEST_TOP1, abs=5e-5)


# --- what a run's code may not change ---------------------------------------------------------

CHANGES_ITS_ENVIRONMENT = (
    "import os as _os\n"
    "import numpy as _numpy\n\n"
    "with open(_os.path.join(_os.path.dirname(_numpy.__file__), 'version.py'), 'a') as _f:\n"
    "    _f.write('\\n# a run of digits-code was here\\n')\n\n" + CODE
)

POISONS_THE_CACHE = (
    "import json as _json\n"
    "import sys as _sys\n"
    "from pathlib import Path as _Path\n\n"
    "_cache = _Path(_json.loads(_Path(_sys.argv[1]).read_text())['cache'])\n"
    "_cache.parent.mkdir(parents=True, exist_ok=True)\n"
    "(_cache.parent / 'planted.npy').write_bytes(b'not the inputs of any run')\n\n" + CODE
)


def test_code_that_changes_its_environment_in_the_sandbox_fails_on_a_read_only_file(
    world: World, tmp_path: Path
) -> None:
    """The environment is read-only in the sandbox: the write fails, and so does the run."""
    from pinbench.evaluator.runners.process import EvaluationFailed

    ws = world.home.ws
    hostile = _publish(
        ws,
        tmp_path,
        world.catalog,
        "9.1.1",
        preprocess=PRE,
        postprocess=POST,
        code=CHANGES_ITS_ENVIRONMENT,
    )
    with pytest.raises(EvaluationFailed, match=r"Read-only file system: .*numpy/version\.py"):
        run_lockfile(ws, _lock(ws, hostile), runner="venv", say=quiet, allow_code=True)


def test_code_that_changes_its_environment_fails_its_run_and_the_environment_is_rebuilt(
    world: World, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Outside the sandbox (``--sandbox none``), the hash-pinned environments are shared by
    every home of the machine: a change a run's code made there would run in every later run.
    The run fails naming the file; the environment is removed, and the next run builds it
    again from its pinned wheels."""
    from pinbench.evaluator.runners.guard import CodeChangedFiles

    monkeypatch.setenv("PINBENCH_CACHE", str(tmp_path / "envs-of-this-test"))
    ws = world.home.ws
    hostile = _publish(
        ws,
        tmp_path,
        world.catalog,
        "9.1.0",
        preprocess=PRE,
        postprocess=POST,
        code=CHANGES_ITS_ENVIRONMENT,
    )
    with pytest.raises(CodeChangedFiles, match=r"its environment .*numpy/version\.py") as info:
        run_lockfile(
            ws, _lock(ws, hostile), runner="venv", say=quiet, allow_code=True, sandbox="none"
        )
    assert "was removed; the next run builds it again" in str(info.value)
    assert not list((tmp_path / "envs-of-this-test" / "envs").glob("*/lib"))
    later = run_lockfile(ws, _digits_lock(ws), runner="venv", say=quiet)
    environment = show_run(ws, later.id)["details"]["environment"]
    assert environment["built"] is True
    # each file its own copy: uv's hard links shared one inode between its cache and every
    # environment, so the change reached the wheels the rebuild installed
    (version,) = Path(environment["path"]).glob("lib/python*/site-packages/numpy/version.py")
    assert "digits-code was here" not in version.read_text()
    shared = [
        p for p in Path(environment["path"]).rglob("*") if p.is_file() and p.stat().st_nlink > 1
    ]
    assert shared == []


@pytest.mark.parametrize("runner", ["local", "venv"])
def test_code_that_writes_the_inputs_cached_for_other_runs_fails_and_its_file_is_removed(
    world: World, tmp_path: Path, runner: str
) -> None:
    """A run with code caches its inputs in a folder of its own; in the sandbox that folder is
    a copy for the run and nothing beside it is writable (the run fails on a read-only file);
    outside it (``--sandbox none``), a file it makes beside the other runs' cached inputs (a
    poisoned entry for a pipeline it does not run) fails the run and is removed."""
    from pinbench.evaluator.runners.guard import CodeChangedFiles
    from pinbench.evaluator.runners.process import EvaluationFailed

    ws = world.home.ws
    confined = _publish(
        ws,
        tmp_path,
        world.catalog,
        f"9.2.{2 + (runner == 'venv'):d}",
        preprocess=PRE,
        postprocess=POST,
        code=POISONS_THE_CACHE,
    )
    with pytest.raises(EvaluationFailed, match=r"Read-only file system: '/pinbench/planted"):
        run_lockfile(ws, _lock(ws, confined), runner=runner, say=quiet, allow_code=True)
    hostile = _publish(
        ws,
        tmp_path,
        world.catalog,
        f"9.2.{runner == 'venv':d}",
        preprocess=PRE,
        postprocess=POST,
        code=POISONS_THE_CACHE,
    )
    with pytest.raises(CodeChangedFiles, match=r"inputs cached for other runs, .*: planted\.npy"):
        run_lockfile(
            ws, _lock(ws, hostile), runner=runner, say=quiet, allow_code=True, sandbox="none"
        )
    assert not (ws.settings.home / "cache" / "inputs" / "planted.npy").exists()


def test_the_local_runner_runs_code_in_a_process_of_its_own(world: World, tmp_path: Path) -> None:
    """Code never runs in the process that scores and records: under the local runner too,
    even outside the sandbox (``--sandbox none``, where the code can write the file that says
    so)."""
    import os

    where = tmp_path / "pid"
    code = f"import os as _os\n\nopen({str(where)!r}, 'w').write(str(_os.getpid()))\n\n" + CODE
    ws = world.home.ws
    model = _publish(
        ws, tmp_path, world.catalog, "9.3.0", preprocess=PRE, postprocess=POST, code=code
    )
    outcome = run_lockfile(
        ws, _lock(ws, model), runner="local", say=quiet, allow_code=True, sandbox="none"
    )
    recorded = show_run(ws, outcome.id)
    assert recorded["status"] == "succeeded"
    assert int(where.read_text()) != os.getpid()
    assert recorded["details"]["environment"]["process"] == "child"
    # labelled wherever a report names it: its timings are those of a system that ran code
    from pinbench.reports.data import gather

    (shown,) = gather(ws, [outcome.id]).runs
    assert shown.label.endswith(" +code")
    assert shown.code == [Digest.of_bytes(code.encode()).hex] * 2  # preprocess, postprocess


# --- cached inputs ----------------------------------------------------------------------------


def _cached_inputs(ws: Workspace, lock: Lockfile, sandbox: str) -> list[Path]:
    """The inputs cache's entries a run of ``lock`` reads: its own process's (``--sandbox
    none``) or the ones its sandbox is seeded with."""
    from pinbench.evaluator.runners.consented import inputs_cache, sandboxed_cache

    folder = inputs_cache(ws, lock) if sandbox == "none" else sandboxed_cache(ws, lock)
    return sorted(folder.glob("*.npy"))


@pytest.mark.parametrize("sandbox", ["bwrap", "none"])
def test_a_cached_array_that_is_not_the_one_written_is_computed_again_never_scored(
    world: World, sandbox: str
) -> None:
    """Issue 63's second reproduction: the digits' cached inputs rolled by one sample made the
    same lockfile record top-1 0.0867 as a cache hit. Each entry's sha256 is written with it,
    in the cache a sandboxed run is seeded from as in the one pinbench's own process reads."""
    import numpy as np

    ws = world.home.ws
    lock = _digits_lock(ws)
    first = show_run(ws, run_lockfile(ws, lock, say=quiet, sandbox=sandbox).id)
    entries = _cached_inputs(ws, lock, sandbox)
    assert entries and all(e.with_name(e.name + ".sha256").is_file() for e in entries)
    for entry in entries:
        array = np.load(entry, allow_pickle=False)
        np.save(entry, np.roll(array, 1, axis=0), allow_pickle=False)
    again = show_run(ws, run_lockfile(ws, lock, say=quiet, sandbox=sandbox).id)
    assert again["details"]["preprocess_cache_hit"] is False
    assert again["top1"] == first["top1"] == pytest.approx(HONEST_TOP1, abs=5e-5)
    third = show_run(ws, run_lockfile(ws, lock, say=quiet, sandbox=sandbox).id)
    assert third["details"]["preprocess_cache_hit"] is True


@pytest.mark.parametrize("sidecar", ["its sha256", "its sha256 and the old MAC"])
def test_a_cached_array_rolled_with_its_digest_rewritten_is_computed_again(
    world: World, sidecar: str
) -> None:
    """Issue 71's reproduction: the entry rolled by one sample and its unkeyed ``.sha256``
    rewritten to match was accepted (0.0867). The host's sidecar carries a MAC under a key
    kept in ``keys/``: rewriting the digest without the key is a miss."""
    import numpy as np

    from pinbench.artifacts.digest import hash_file

    ws = world.home.ws
    lock = _digits_lock(ws)
    first = show_run(ws, run_lockfile(ws, lock, say=quiet).id)
    entries = _cached_inputs(ws, lock, "bwrap")
    assert entries
    for entry in entries:
        side = entry.with_name(entry.name + ".sha256")
        old_mac = side.read_text().split()[1]  # the host's: a digest and its MAC
        np.save(entry, np.roll(np.load(entry, allow_pickle=False), 1, axis=0), allow_pickle=False)
        rolled = hash_file(entry)[0].hex
        side.write_text(rolled if sidecar == "its sha256" else f"{rolled} {old_mac}")
    again = show_run(ws, run_lockfile(ws, lock, say=quiet).id)
    assert again["details"]["preprocess_cache_hit"] is False
    assert again["top1"] == first["top1"] == pytest.approx(HONEST_TOP1, abs=5e-5)


# --- scoring apart ----------------------------------------------------------------------------

CLAIMS_A_PERFECT_RUN = (
    "import json as _json\n"
    "import sys as _sys\n"
    "from pathlib import Path as _Path\n"
    "import numpy as _np\n"
    "_worker = _sys.modules['__main__']  # python -m pinbench.worker.main\n\n"
    "_job = _json.loads(_Path(_sys.argv[1]).read_text())\n"
    "_Path(@WHERE@).write_text(_json.dumps(sorted(_job['dataset'])))\n"
    "_honest = _worker.write_results\n\n\n"
    "def _perfect(out, lock_digest, evidence, error, environment):\n"
    "    evidence.metrics.update(top1=1.0, top5=1.0, framework_latency_p50_ns=0.0)\n"
    "    if evidence.latencies is not None and @ZERO@:\n"
    "        evidence.latencies = _np.zeros_like(evidence.latencies)\n"
    "    _honest(out, lock_digest, evidence, error, environment)\n\n\n"
    "_worker.write_results = _perfect\n\n" + CODE
)
"""Issue 63's third reproduction, as a model's code: it rewrites what the evaluator hands back
(top-1 1.0000, a p50 of 0 µs) and notes which dataset files it was given."""


@pytest.mark.parametrize("runner", ["local", "venv"])
def test_what_the_code_claims_is_not_recorded_and_it_never_sees_the_labels(
    world: World, tmp_path: Path, runner: str
) -> None:
    """The host scores the answers against labels it alone reads: the code's claim of a
    perfect top-1 is not recorded, its framework figures are the host's from the raw
    latencies, and the dataset's labels file was never handed to it."""
    ws = world.home.ws
    given = tmp_path / "given.json"
    honest = show_run(
        ws, run_lockfile(ws, world.lock, runner=runner, say=quiet, allow_code=True).id
    )
    claims = CLAIMS_A_PERFECT_RUN.replace("@WHERE@", repr(str(given))).replace("@ZERO@", "False")
    model = _publish(
        ws,
        tmp_path,
        world.catalog,
        f"9.4.{runner == 'venv':d}",
        preprocess=PRE,
        postprocess=POST,
        code=claims,
    )
    recorded = show_run(  # unsandboxed, so that it can say what it was handed (given.json)
        ws,
        run_lockfile(
            ws, _lock(ws, model), runner=runner, say=quiet, allow_code=True, sandbox="none"
        ).id,
    )
    assert recorded["status"] == "succeeded"
    assert recorded["top1"] == honest["top1"] < 1.0
    assert recorded["framework_latency_p50_ns"] > 0
    handed = json.loads(given.read_text())
    assert "labels.npy" not in handed and len(handed) == SAMPLES  # the samples, no truth


def test_latencies_the_host_clock_cannot_have_seen_are_refused(
    world: World, tmp_path: Path
) -> None:
    """Calls that took no time are not measurements. A run whose model carries code is timed
    by the host (issue 71, ``runners.host_clock``): the zeros its code writes are never read,
    its raw latencies are the host's. Where a worker's own latencies are read (a run without
    code), the host refuses calls that took no time."""
    import numpy as np

    from pinbench.evaluator.timing_checks import check_timings
    from pinbench.worker.results import InvalidResults

    ws = world.home.ws
    where = repr(str(tmp_path / "given.json"))
    claims = CLAIMS_A_PERFECT_RUN.replace("@WHERE@", where).replace("@ZERO@", "True")
    model = _publish(
        ws, tmp_path, world.catalog, "9.5.0", preprocess=PRE, postprocess=POST, code=claims
    )
    run = run_lockfile(
        ws, _lock(ws, model), runner="venv", say=quiet, allow_code=True, sandbox="none"
    )
    shown = show_run(ws, run.id)
    assert shown["details"]["clock"]["side"] == "host"
    assert shown["framework_latency_min_ns"] > 0
    with pytest.raises(InvalidResults, match="a call that took no time"):
        check_timings("SingleStream", np.zeros(SAMPLES, dtype=np.int64), 10**9)


OUTLIVES_ITS_WORKER = (
    "import os as _os\n"
    "import subprocess as _subprocess\n"
    "import sys as _sys\n\n"
    "_subprocess.Popen([_sys.executable, '-c', '''\n"
    "import os, time\n"
    "parent = os.getppid()\n"
    "while os.getppid() == parent:\n"
    "    time.sleep(0.01)\n"
    "time.sleep(0.5)\n"
    "open(@MARK@, 'w').write('outlived the run')\n"
    "'''], stdin=_subprocess.DEVNULL, stdout=_subprocess.DEVNULL, stderr=_subprocess.DEVNULL)\n\n"
    + CODE
)
"""Code that leaves a process behind to act once its worker has ended (and the host has
looked at what it changed)."""


@pytest.mark.parametrize("runner", ["local", "venv"])
def test_a_process_the_code_started_ends_with_its_worker(
    world: World, tmp_path: Path, runner: str
) -> None:
    import time

    mark = tmp_path / "outlived.mark"
    code = OUTLIVES_ITS_WORKER.replace("@MARK@", repr(str(mark)))
    ws = world.home.ws
    model = _publish(
        ws,
        tmp_path,
        world.catalog,
        f"9.6.{runner == 'venv':d}",
        preprocess=PRE,
        postprocess=POST,
        code=code,
    )
    # outside the sandbox, where the mark could be written (in it, its PID namespace ends the
    # process: tests/test_sandbox.py)
    run_lockfile(ws, _lock(ws, model), runner=runner, say=quiet, allow_code=True, sandbox="none")
    time.sleep(1.5)
    assert not mark.exists()


CHOOSES_ITS_SAMPLES = (
    "import sys as _sys\n\n"
    "_worker = _sys.modules['__main__']\n"
    "_honest = _worker.write_results\n\n\n"
    "def _chosen(out, lock_digest, evidence, error, environment):\n"
    "    if evidence.answers is not None:\n"
    "        evidence.answers = {i: a for i, a in evidence.answers.items() if i % 4 == 0}\n"
    "    evidence.metrics.update(top1=1.0, queries_count=1e6, framework_latency_p99_ns=1.0)\n"
    "    _honest(out, lock_digest, evidence, error, environment)\n\n\n"
    "_worker.write_results = _chosen\n\n" + CODE
)
"""The review's fourth and fifth findings as a model's code: an accuracy run that hands back
only the answers it likes, a performance run that claims a task metric and its counts."""


@pytest.mark.parametrize("mode", ["accuracy", "performance"])
def test_the_evaluator_neither_chooses_the_scored_samples_nor_states_a_metric(
    world: World, tmp_path: Path, mode: str
) -> None:
    from pinbench.evaluator.run import latencies_of
    from pinbench.evaluator.scoring import AnswersRefused

    ws = world.home.ws
    model = _publish(
        ws,
        tmp_path,
        world.catalog,
        f"9.7.{mode == 'performance':d}",
        preprocess=PRE,
        postprocess=POST,
        code=CHOOSES_ITS_SAMPLES,
    )
    lock = _lock(ws, model, mode)
    if mode == "accuracy":
        with pytest.raises(AnswersRefused, match="sample 1 is not answered"):
            run_lockfile(ws, lock, runner="venv", say=quiet, allow_code=True)
        return
    recorded = show_run(ws, run_lockfile(ws, lock, runner="venv", say=quiet, allow_code=True).id)
    latencies = latencies_of(ws, recorded["latencies_sha256"])
    assert "top1" not in recorded
    assert recorded["framework_calls_count"] == latencies.size  # the host's count
    assert recorded["queries_count"] == recorded["details"]["loadgen"]["result_query_count"]
    assert recorded["framework_latency_p99_ns"] > 1.0


def test_seeding_a_cache_never_writes_through_what_its_worker_left_there(
    world: World, tmp_path: Path
) -> None:
    """An attacker's review of decision 310: a warm evaluator keeps one cache folder for every
    job, and a worker that replaced an entry's name there with a link to a file of the host's
    had the next job's seeding write the entry's bytes (and its sidecar) through the link.
    Seeding now removes what is there and makes a new file."""
    from pinbench.evaluator.runners.consented import sandboxed_cache, seed_cache

    ws = world.home.ws
    lock = _digits_lock(ws)
    run_lockfile(ws, lock, say=quiet)  # an entry kept for the model's sandboxed runs
    kept = sorted(sandboxed_cache(ws, lock).glob("*.npy"))
    assert kept
    run_cache = tmp_path / "cache"
    run_cache.mkdir()
    victims = {}
    for entry in kept:
        for name in (entry.name, entry.name + ".sha256"):
            victim = tmp_path / f"host-file-{name}"
            victim.write_text("the host's")
            (run_cache / name).symlink_to(victim)
            victims[name] = victim
    assert seed_cache(ws, lock, run_cache) == {e.name for e in kept}
    assert all(v.read_text() == "the host's" for v in victims.values())
    assert not any((run_cache / name).is_symlink() for name in victims)


def test_a_data_only_models_sandboxed_inputs_are_its_own(world: World) -> None:
    """The same review: entries a data-only model's sandboxed worker computed were kept in one
    folder for every data-only model with that pipeline, so a worker whose framework's parser
    was subverted could plant another model's inputs. Each model has its own folder."""
    from pinbench.evaluator.runners.consented import sandboxed_cache

    ws = world.home.ws
    logreg = _digits_lock(ws)
    request = {"model": f"{builtin.MODEL_NAME}@1.2.0", "dataset": f"{builtin.DATASET_NAME}@1"}
    other = service.lock(ws, parse_request(request))[0]  # another version: the same pipeline
    assert sandboxed_cache(ws, logreg) != sandboxed_cache(ws, other)
    assert sandboxed_cache(ws, logreg).parent == sandboxed_cache(ws, other).parent
