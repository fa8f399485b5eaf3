"""An agent answers the server's ``run`` with plain data (``pinbench.cluster.answer``): the
error its evaluation ended with is stated, never sent as an exception object, and the server
reads only a well-formed statement."""

from __future__ import annotations

import pickle
from typing import Any

import pytest

from pinbench.artifacts.digest import Digest
from pinbench.artifacts.store import ChecksumMismatch
from pinbench.cluster.answer import AgentError, answer_error, answer_ok, read_error, read_ok
from pinbench.errors import SystemFailure
from pinbench.evaluator.server_runner import RunnerRefused
from pinbench.worker.stop import RunStopped

EXPECTED, ACTUAL = Digest("ab" * 32), Digest("cd" * 32)


@pytest.mark.parametrize(
    ("error", "stated"),
    [
        (
            ChecksumMismatch(path="model/x@1.0.0:m.onnx", expected=EXPECTED, actual=ACTUAL),
            AgentError(
                "ChecksumMismatch",
                f"checksum mismatch for model/x@1.0.0:m.onnx: expected sha256 {EXPECTED.hex}, "
                f"got {ACTUAL.hex}",
                1,
                False,
            ),
        ),
        (
            RunnerRefused(runner="venv", allowed=("local",)),
            AgentError(
                "RunnerRefused",
                "this server does not run evaluations in the 'venv' runner; its operator "
                "allows: local (`pinbench serve --runners`)",
                1,
                False,
            ),
        ),
        (
            SystemFailure("disk full"),  # the system's fault: exit code 3
            AgentError("SystemFailure", "disk full", 3, False),
        ),
        (
            RunStopped(status="cancelled", reason="cancelled by owner"),
            AgentError("RunStopped", "cancelled by owner", 1, True),
        ),
        (  # not pinbench's: its text (the agent's paths) stays in the agent's log
            PermissionError(13, "Permission denied", "/srv/agent/cache/blobs/ab"),
            AgentError("PermissionError", "PermissionError on the agent (its log has the details)",
                       3, False),
        ),
    ],
    ids=["user error", "runner refused", "system failure", "stopped", "not pinbench's"],
)  # fmt: skip
def test_an_agents_error_is_stated_as_plain_data(error: Exception, stated: AgentError) -> None:
    answer = answer_error(error)
    again = pickle.loads(pickle.dumps(answer))  # what Ray does to it: plain data only
    assert read_error(again) == stated
    assert read_ok(again) is None


def test_a_success_carries_its_packed_results() -> None:
    answer = answer_ok({"files": {}, "runner": "local"})
    assert read_ok(answer) == {"files": {}, "runner": "local"}
    assert read_error(answer) is None


GOOD = {"type": "X", "message": "m", "exit_code": 1, "stopped": False}


@pytest.mark.parametrize(
    "answer",
    [
        None,
        "error",
        {"error": "boom"},
        {"error": GOOD, "ok": {}},  # both
        {"error": {**GOOD, "extra": 1}},
        {"error": {k: v for k, v in GOOD.items() if k != "stopped"}},
        {"error": {**GOOD, "exit_code": 0}},  # only 1 or 3
        {"error": {**GOOD, "exit_code": True}},
        {"error": {**GOOD, "message": b"bytes"}},
        {"error": {**GOOD, "stopped": "yes"}},
    ],
)
def test_a_malformed_error_answer_is_not_read_as_one(answer: Any) -> None:
    assert read_error(answer) is None


def test_a_long_message_is_cut() -> None:
    stated = read_error(answer_error(SystemFailure("x" * 10_000)))
    assert stated is not None and stated.message == "x" * 2000
