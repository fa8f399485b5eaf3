"""Every LoadGen test of a process runs on one thread that never exits (decision 265): a
thread per test left LoadGen 6.0.17 an orphaned logger per test, and its IO thread crashed
the process destroying one (``TlsLogger::SwapBuffers``, a use after free;
``bench/loadgen_orphans.py`` reproduces it)."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any, Literal

import numpy as np

from pinbench.registry.request import Scenario
from pinbench.worker import loadgen_thread
from pinbench.worker.scenarios import run_scenario

Name = Literal["SingleStream", "Server"]
X = np.arange(32, dtype=np.float32).reshape(8, 4)


def _run(name: Name, log_dir: Path, seen: list[threading.Thread]) -> None:
    def predict(batch: Any) -> dict[str, Any]:
        seen.append(threading.current_thread())
        return {"y": np.asarray(batch) * 2}

    scenario = Scenario(name=name, min_duration_ms=10, min_query_count=16, target_qps=500)
    run_scenario(predict, X, scenario, batch_size=1, expected_latency_ns=10_000, log_dir=log_dir)


def test_every_scenario_of_a_process_runs_on_one_thread_that_lives_on(tmp_path: Path) -> None:
    seen: list[threading.Thread] = []
    names: list[Name] = ["SingleStream", "Server", "SingleStream"]
    for i, name in enumerate(names):
        _run(name, tmp_path / str(i), seen)
    assert seen and len(set(seen)) == 1
    (thread,) = set(seen)
    assert thread.name == "pinbench-loadgen" and thread.is_alive()
    assert thread is not threading.main_thread()
    assert [t for t in threading.enumerate() if t.name == "pinbench-loadgen"] == [thread]


def test_a_job_that_raises_leaves_the_thread_serving_the_next_test(tmp_path: Path) -> None:
    def broken() -> None:
        raise RuntimeError("a job that broke its promise not to raise")

    loadgen_thread.submit(broken)
    assert loadgen_thread.wait_idle(timeout=30)
    seen: list[threading.Thread] = []
    _run("SingleStream", tmp_path, seen)
    assert seen and seen[0].is_alive()


def test_a_forked_child_runs_its_tests_on_a_thread_of_its_own(tmp_path: Path) -> None:
    """The parent's thread does not exist in a forked child: the child starts its own
    rather than queueing its test for a thread that is not there (which would hang)."""
    _run("SingleStream", tmp_path / "parent", [])  # the parent has its thread
    pid = os.fork()
    if pid == 0:  # the child: exit 0 only if its test ran on a live thread of its own
        code = 1
        try:
            seen: list[threading.Thread] = []
            _run("SingleStream", tmp_path / "child", seen)
            code = 0 if seen and seen[0].is_alive() else 2
        finally:
            os._exit(code)
    deadline = time.monotonic() + 60
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            raise AssertionError("the forked child's test never ran (no LoadGen thread)")
        time.sleep(0.05)
    assert os.waitstatus_to_exitcode(status) == 0
    assert (tmp_path / "child" / "mlperf_log_summary.txt").is_file()
