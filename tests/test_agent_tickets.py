"""A cancel names its evaluation (issue 85, item 2's review): an agent runs one evaluation at a
time, and a server's second run on it waits; that run's deadline, a cancel or a drain used to
stop whatever evaluation held the agent, the other run's. Each evaluation now has a ticket (the
server's name for it, ``OnSystem``): ``cancel`` stops only that one (one still waiting never
starts), and ``progress`` tells a waiting run that it waits, not another run's lines. The
actor's class is plain Python: this drives it in threads, as Ray's threaded actor does."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from pinbench.cluster import agent_run, ray_agent
from pinbench.cluster.answer import read_error, read_ok
from pinbench.worker.stop import Stop


def _blocking(started: threading.Event) -> Any:
    def run_here(*args: Any, stop: Stop, say: Any, **kwargs: Any) -> dict[str, Any]:
        say("measuring")
        started.set()
        while True:
            stop.check()  # raises RunStopped once its ticket is cancelled
            stop.wait(0.01)

    return run_here


def _run(agent: ray_agent.Agent, ticket: str, out: dict[str, Any]) -> threading.Thread:
    def go() -> None:
        out[ticket] = agent.run(b"", "http://x", "t", "local", "none", False, ("local",),
                                ticket=ticket)  # fmt: skip

    thread = threading.Thread(target=go)
    thread.start()
    return thread


def test_a_cancel_stops_its_own_evaluation_and_never_anothers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    started = threading.Event()
    monkeypatch.setattr(agent_run, "run_here", _blocking(started))
    agent = ray_agent.Agent("lab-t", str(tmp_path))
    out: dict[str, Any] = {}
    first = _run(agent, "first", out)
    assert started.wait(10)
    second = _run(agent, "second", out)  # waits for the first
    assert agent.progress("first") == "measuring"
    assert agent.progress("second") == ray_agent.WAITING
    assert agent.cancel("its deadline passed", "second")  # the waiting one's
    second.join(10)
    assert not second.is_alive()
    error = read_error(out["second"])
    assert error is not None and error.stopped and "its deadline passed" in error.message
    assert first.is_alive() and agent.progress("first") == "measuring"  # untouched
    assert agent.cancel("the user cancelled it", "first")
    first.join(10)
    error = read_error(out["first"])
    assert error is not None and error.stopped and "the user cancelled it" in error.message


def test_an_evaluation_cancelled_before_it_came_never_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[str] = []

    def run_here(*args: Any, **kwargs: Any) -> dict[str, Any]:
        calls.append("ran")
        return {"files": {}}

    monkeypatch.setattr(agent_run, "run_here", run_here)
    agent = ray_agent.Agent("lab-t", str(tmp_path))
    assert agent.cancel("the server stopped", "late")
    out: dict[str, Any] = {}
    _run(agent, "late", out).join(10)
    error = read_error(out["late"])
    assert error is not None and error.stopped and calls == []
    _run(agent, "next", out).join(10)  # another ticket runs as ever
    assert calls == ["ran"] and read_ok(out["next"]) == {"files": {}}
