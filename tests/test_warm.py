"""Warm evaluators (``pinbench serve --warm``, ``pinbench agent start --warm``): one evaluator
process per environment serves run after run; each run records whether it was warm, and its
results are those of a cold run. A pickled model never shares a process; a run stopped or
past its time limit takes its process with it."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pinbench import catalog as builtin
from pinbench.evaluator.records.run_list import list_runs
from pinbench.evaluator.records.run_view import show_run
from pinbench.evaluator.run import run_lockfile
from pinbench.evaluator.runners.process import RunTimedOut
from pinbench.evaluator.warm import (
    BUSY_REASON,
    PICKLE_REASON,
    WarmPool,
    format_reason,
    read_exit,
    run_warm,
)
from pinbench.registry import service
from pinbench.registry.lockfile import Lockfile
from pinbench.registry.request import parse_request
from pinbench.worker.main import main as worker_main
from pinbench.workspace import Workspace
from tests.apiserver import wait_for_status

NEVER_DONE = {"name": "Server", "target_qps": 20, "min_duration_ms": 600_000, "min_query_count": 1}
"""A scenario that runs ten minutes whatever the model's speed (20 queries/s), and plans few
samples: a SingleStream of ten minutes plans 2 x 600 s x the model's rate, past LoadGen's
10M-sample bound for a microsecond model, and is refused before it starts."""


def quiet(text: str) -> None:
    pass


def _lock(ws: Workspace, **extra: Any) -> Lockfile:
    data = {
        "model": f"{builtin.MODEL_NAME}@1.1.0",
        "dataset": f"{builtin.DATASET_NAME}@1",
        "scenario": {"min_duration_ms": 0, "min_query_count": 64, "max_query_count": 64},
        **extra,
    }
    return service.lock(ws, parse_request(data))[0]


@pytest.fixture
def pool(tmp_path: Path) -> Iterator[WarmPool]:
    warm = WarmPool(tmp_path / "warm")
    yield warm
    warm.close()


def _environment(ws: Workspace, run_id: str) -> dict[str, Any]:
    env: dict[str, Any] = show_run(ws, run_id)["details"]["environment"]
    return env


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    return state != "Z"


def test_the_second_run_in_a_warm_venv_evaluator_is_warm_and_measures_what_a_cold_run_does(
    digits: Workspace, pool: WarmPool
) -> None:
    lock = _lock(digits, scenario={"mode": "accuracy"})
    cold = run_lockfile(digits, lock, runner="venv", say=quiet)
    first = run_lockfile(digits, lock, runner="venv", say=quiet, warm=pool)
    second = run_lockfile(digits, lock, runner="venv", say=quiet, warm=pool)

    assert "warm" not in _environment(digits, cold.id)  # cold runs are as they were
    one, two = _environment(digits, first.id), _environment(digits, second.id)
    assert (one["warm"], one["warm_served_before"]) == (False, 0)  # it started the process
    assert (two["warm"], two["warm_served_before"]) == (True, 1)
    assert one["warm_process"] == two["warm_process"]
    assert one["digest"] == two["digest"] == _environment(digits, cold.id)["digest"]

    runs = [show_run(digits, r.id) for r in (cold, first, second)]
    assert {r["status"] for r in runs} == {"succeeded"}
    accuracy = [
        {k: v for k, v in r.metrics.items() if k.startswith("top")} for r in (cold, first, second)
    ]
    assert accuracy[0] and accuracy[0] == accuracy[1] == accuracy[2]
    assert len({r["details"]["outputs_sha256"] for r in runs}) == 1

    pid = int(two["warm_process"].removeprefix("pid "))
    assert _alive(pid)
    pool.close()
    assert not _alive(pid)
    assert not any((pool.root).iterdir())  # its jobs folder went with it


def test_a_warm_process_serves_one_models_runs(digits: Workspace, pool: WarmPool) -> None:
    """Decision 310's review: a warm evaluator served every ONNX model of its environment, so a
    parser's bug one model's bytes reached kept its hold on other models' runs. Another model
    starts a process of its own; the first model's next run finds its own again."""
    first = run_lockfile(digits, _lock(digits), runner="venv", say=quiet, warm=pool)
    other_lock = _lock(digits, model=f"{builtin.MODEL_NAME}@1.2.0")
    other = run_lockfile(digits, other_lock, runner="venv", say=quiet, warm=pool)
    again = run_lockfile(digits, _lock(digits), runner="venv", say=quiet, warm=pool)
    one, two, three = (_environment(digits, r.id) for r in (first, other, again))
    assert two["warm_process"] != one["warm_process"] and two["warm_served_before"] == 0
    assert three["warm_process"] == one["warm_process"] and three["warm"] is True


def test_a_run_past_its_time_limit_takes_its_warm_process_and_the_next_starts_another(
    digits: Workspace, pool: WarmPool
) -> None:
    slow = _lock(
        digits,
        scenario=NEVER_DONE,
        limits={"timeout_s": 3},
    )
    with pytest.raises(RunTimedOut):
        run_lockfile(digits, slow, runner="venv", say=quiet, warm=pool)
    runs = [r for r in show_runs(digits) if r["status"] == "failed"]
    assert len(runs) == 1 and "time limit (3 s" in runs[0]["error"]
    killed = _environment(digits, runs[0]["id"])["warm_process"]
    assert not _alive(int(killed.removeprefix("pid ")))

    after = run_lockfile(digits, _lock(digits), runner="venv", say=quiet, warm=pool)
    env = _environment(digits, after.id)
    assert env["warm_process"] != killed and env["warm_served_before"] == 0


def show_runs(ws: Workspace) -> list[dict[str, Any]]:
    return [show_run(ws, r["id"]) for r in list_runs(ws)]


def test_a_run_that_finds_the_warm_evaluator_busy_runs_cold_and_says_why(
    digits: Workspace, pool: WarmPool
) -> None:
    long = _lock(digits, scenario={"min_duration_ms": 4000, "min_query_count": 1})
    evaluating = threading.Event()
    ids: list[str] = []

    def said(line: str) -> None:
        if line.startswith("running "):  # said by the worker: the warm evaluator is busy
            evaluating.set()

    def first() -> None:
        ids.append(run_lockfile(digits, long, runner="venv", say=said, warm=pool).id)

    thread = threading.Thread(target=first)
    thread.start()
    assert evaluating.wait(120)
    other = run_lockfile(digits, _lock(digits), runner="venv", say=quiet, warm=pool)
    thread.join()
    busy = _environment(digits, other.id)
    assert (busy["warm"], busy["warm_cold_because"]) == (False, BUSY_REASON)
    assert "warm_process" in _environment(digits, ids[0])


def test_a_pickled_model_never_uses_a_warm_evaluator(digits: Workspace, pool: WarmPool) -> None:
    lock = _lock(digits)
    assert lock.body.model is not None and lock.body.model.format != "torch-pickle"
    pickled = _with_model_format(lock, "torch-pickle")
    from pinbench.worker.job import Evidence
    from pinbench.worker.stop import Stop

    def refuse_to_start(root: Path, idle_s: float) -> Any:
        raise AssertionError("a warm evaluator was started for a pickle")

    evidence = Evidence()
    used = run_warm(
        pool, ("venv", "x"), refuse_to_start, pickled, evidence, quiet, Stop(), lambda *_: None
    )
    assert used is False
    assert evidence.environment == {"warm": False, "warm_cold_because": PICKLE_REASON}


def _with_model_format(lock: Lockfile, fmt: str) -> Lockfile:
    import msgspec

    assert lock.body.model is not None
    model = msgspec.structs.replace(lock.body.model, format=fmt)
    return Lockfile(msgspec.structs.replace(lock.body, model=model))


@pytest.mark.parametrize("idle", ["0", "-1", "soon", "nan"])
def test_a_warm_worker_refuses_a_wait_that_is_not_a_positive_number(
    tmp_path: Path, idle: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert worker_main(["--serve", str(tmp_path), str(tmp_path), idle]) == 2
    assert "IDLE_S must be above 0" in capsys.readouterr().err


def test_a_warm_worker_ends_after_its_idle_time(tmp_path: Path) -> None:
    assert worker_main(["--serve", str(tmp_path), str(tmp_path), "0.05"]) == 0


def test_each_worker_starts_with_a_copy_of_the_evaluator_of_its_own_and_an_empty_folder(
    tmp_path: Path,
) -> None:
    """Two workers never share the evaluator they import (what one run's code writes there no
    other run reads; issue 63); each copy has the host's bytecode (a worker that may not write
    ``.pyc`` files does not compile what it imports), holds the worker's side and never the
    host's (issue 71, item 6), and starts in an empty folder."""
    import sys

    from pinbench.evaluator.runners.process import worker_start

    first, second = (worker_start(sys.executable, tmp_path / n, ["JOB", "OUT"]) for n in "ab")
    assert first.env["PYTHONPATH"] != second.env["PYTHONPATH"]
    dest = Path(first.env["PYTHONPATH"])
    assert (dest / "pinbench" / "worker" / "main.py").is_file()
    compiled = dest / "pinbench" / "worker" / "__pycache__" / "main.cpython-311.pyc"
    assert compiled.is_file()
    host = ["evaluator", "db", "cli", "api", "provenance", "sdk", "workspace.py", "config.py"]
    assert [p for p in host if (dest / "pinbench" / p).exists()] == []
    assert list(Path(first.cwd).iterdir()) == [] and Path(first.cwd).parent == tmp_path / "a"
    assert first.argv == [sys.executable, "-s", "-m", "pinbench.worker.main", "JOB", "OUT"]
    assert first.env["PYTHONNOUSERSITE"] == "1" and "HOME" not in first.env


SHORT = {
    "model": f"{builtin.MODEL_NAME}@1.1.0",
    "dataset": f"{builtin.DATASET_NAME}@1",
    "scenario": {"min_duration_ms": 0, "min_query_count": 64, "max_query_count": 64},
}
LONG = {**SHORT, "scenario": NEVER_DONE}


def _submit(c: Any, request: dict[str, Any]) -> str:
    digest = c.post("/api/v1/lockfiles", json=request).json()["points"][0]["digest"]
    queued = c.post("/api/v1/runs", json={"lockfile": digest, "runner": "venv"})
    assert queued.status_code == 202, queued.text
    run_id: str = queued.json()["id"]
    return run_id


def _until(c: Any, run_id: str, *states: str) -> dict[str, Any]:
    return wait_for_status(c, run_id, states)


def test_serve_warm_runs_the_second_run_warm_a_cancel_ends_its_process_and_stopping_ends_all(
    tmp_path: Path, catalog_dir: Path
) -> None:
    from tests.apiserver import api_server

    url = f"sqlite:///{tmp_path}/db.sqlite"
    with (
        api_server(tmp_path / "home", url, "--warm", catalog_dir=catalog_dir) as server,
        server.client("owner") as c,
    ):
        ids = [_submit(c, SHORT) for _ in range(2)]
        envs = [_until(c, i, "succeeded")["details"]["environment"] for i in ids]
        assert [(e["warm"], e["warm_served_before"]) for e in envs] == [(False, 0), (True, 1)]
        process = envs[1]["warm_process"]

        long = _submit(c, LONG)
        _until(c, long, "running")
        while not list((tmp_path / "home" / "tmp").glob("warm-*/warm-*/jobs/3/go")):
            time.sleep(0.1)  # until the job is handed to the warm evaluator
        assert c.delete(f"/api/v1/runs/{long}").status_code == 202
        cancelled = _until(c, long, "cancelled")
        assert cancelled["details"]["environment"]["warm_process"] == process
        assert not _alive(int(process.removeprefix("pid ")))  # a stopped job takes its process

        after = _until(c, _submit(c, SHORT), "succeeded")["details"]["environment"]
        assert after["warm_process"] != process and after["warm_served_before"] == 0
        last = int(after["warm_process"].removeprefix("pid "))
        assert _alive(last)
    assert not _alive(last)  # the server's stop ended its warm evaluators
    leftovers = list((tmp_path / "home" / "tmp").glob("warm-*"))
    assert leftovers == []


@pytest.mark.parametrize("fmt", ["torchscript", "torch-export", "savedmodel", "keras"])
def test_a_model_format_that_can_carry_its_own_operations_runs_cold(
    digits: Workspace, pool: WarmPool, fmt: str
) -> None:
    """Review finding: a SavedModel's WriteFile op could forge a later job's answers in the
    shared folder; only onnx and safetensors models share an evaluator."""
    from pinbench.worker.job import Evidence
    from pinbench.worker.stop import Stop

    def refuse_to_start(root: Path, idle_s: float) -> Any:
        raise AssertionError(f"a warm evaluator was started for a {fmt} model")

    evidence = Evidence()
    lock = _with_model_format(_lock(digits), fmt)
    used = run_warm(
        pool, ("venv", "x"), refuse_to_start, lock, evidence, quiet, Stop(), lambda *_: None
    )
    assert used is False
    assert evidence.environment == {"warm": False, "warm_cold_because": format_reason(fmt)}
    assert fmt in format_reason(fmt) and "onnx and safetensors" in format_reason(fmt)


@pytest.mark.parametrize(
    ("fmt", "timed"),
    [
        ("onnx", False),
        ("safetensors", False),
        ("torchscript", True),
        ("torch-export", True),
        ("savedmodel", True),
        ("keras", True),
    ],
)
def test_a_model_format_that_can_carry_its_own_operations_is_timed_by_the_host(
    digits: Workspace, fmt: str, timed: bool
) -> None:
    """A SavedModel's WriteFile op (or any operation a model's file carries) could rewrite
    LoadGen's log beside it, as code could (issue 71): such a model's LoadGen runs in the host
    (``host_clock``), in every runner; a model that is data keeps LoadGen beside it."""
    from pinbench.evaluator.runners.clock_link import keeps_clock

    lock = _with_model_format(_lock(digits), fmt)
    assert keeps_clock(lock, code=False, allow_pickle=False) is timed
    # traced, the format's operations keep LoadGen beside them (the trace's spans are the
    # latencies recorded; a traced run is no series' member); Python code never does
    assert keeps_clock(lock, code=False, allow_pickle=False, traced=True) is False
    assert keeps_clock(lock, code=True, allow_pickle=False, traced=True) is True


def test_an_exit_file_is_read_without_trusting_it(tmp_path: Path) -> None:
    """Review finding: the answers folder is writable from inside the evaluator, so its exit
    file may be a link to a host file, a FIFO that blocks, or a huge file."""
    honest = tmp_path / "1.exit"
    honest.write_text("0")
    assert read_exit(honest) == 0
    secret = tmp_path / "secret"
    secret.write_text("7")
    (tmp_path / "2.exit").symlink_to(secret)
    os.mkfifo(tmp_path / "3.exit")
    (tmp_path / "4.exit").write_text("1" * 100)
    (tmp_path / "5.exit").write_text("zero")
    for n in range(2, 6):
        assert read_exit(tmp_path / f"{n}.exit") is None, n
    assert read_exit(tmp_path / "missing.exit") is None
