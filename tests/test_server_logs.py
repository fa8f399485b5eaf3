"""The server's log records (pinbench.api.logs): repeats held back and counted, JSON lines,
text lines, and a token's id as the only part of it ever logged. The real server's logs are
tests/test_monitoring.py and tests/test_monitoring_outage.py."""

from __future__ import annotations

import json
import logging
import sys

import pytest

from pinbench.api import logs
from pinbench.api.throttle import token_id_of


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def record(
    msg: str, *args: object, level: int = logging.ERROR, exc: bool = False
) -> logging.LogRecord:
    info = None
    if exc:
        try:
            raise OSError("disk gone")
        except OSError:
            info = sys.exc_info()
    return logging.LogRecord("pinbench.t", level, __file__, 1, msg, args or None, info)


def event(msg: str) -> logging.LogRecord:
    """A record as ``logs.event`` makes it: with its fields."""
    r = record(msg, level=logging.WARNING)
    r.fields = {"client": "10.0.0.9"}
    return r


def test_a_repeated_failure_is_written_once_then_counted() -> None:
    clock = Clock()
    f = logs.RepeatFilter(window_s=60, clock=clock)
    first = record("heartbeat failed: %s", "refused", exc=True)
    assert f.filter(first) and first.exc_info is not None  # the first keeps its traceback
    for _ in range(41):
        clock.now += 1
        assert not f.filter(record("heartbeat failed: %s", "refused", exc=True))
    clock.now += 30  # 71 s after the first: the window is over
    again = record("heartbeat failed: %s", "refused", exc=True)
    assert f.filter(again)
    assert again.getMessage() == "heartbeat failed: refused (41 more in the last 60 s)"
    assert again.exc_info is None
    clock.now += 1
    assert not f.filter(record("heartbeat failed: %s", "refused"))


@pytest.mark.parametrize(
    ("first", "second", "both", "why"),
    [
        (record("a"), record("b"), True, "another message is another failure"),
        (record("a"), record("a", level=logging.WARNING), True, "another level"),
        (record("a", level=logging.INFO), record("a", level=logging.INFO), True,
         "below WARNING (the access log, events) nothing is held back"),
        (record("a"), record("a"), False, "the same error again"),
        (event("a"), event("a"), True, "an event (a failed login) is each kept: audit"),
    ],
)  # fmt: skip
def test_what_counts_as_a_repeat(
    first: logging.LogRecord, second: logging.LogRecord, both: bool, why: str
) -> None:
    f = logs.RepeatFilter(window_s=60, clock=Clock())
    assert f.filter(first)
    assert f.filter(second) is both, why


def test_json_lines_carry_fields_and_tracebacks() -> None:
    r = record("published %s", "model/x@1.0.0", level=logging.INFO, exc=True)
    r.fields = {"user": "owner", "digest": "ab" * 32, "msg": "not over the message"}
    line = logs.JsonFormatter().format(r)
    assert "\n" not in line  # one record, one line, even with a traceback
    body = json.loads(line)
    assert body["msg"] == "published model/x@1.0.0" and body["level"] == "info"
    assert body["logger"] == "pinbench.t" and body["ts"].endswith("Z")
    assert body["user"] == "owner" and body["digest"] == "ab" * 32
    assert "OSError: disk gone" in body["exc"]


def test_text_lines_add_the_fields_the_message_does_not_say() -> None:
    r = record("GET /x 200 1.0 ms", level=logging.INFO)
    r.fields = {"route": "/x", "status": 200, "user": "owner", "token_id": None}
    r.fields_in_msg = ("route", "status")
    line = logs.TextFormatter().format(r)
    assert line.endswith(" INFO pinbench.t: GET /x 200 1.0 ms user=owner")


@pytest.mark.parametrize(
    ("level", "fmt", "says"),
    [("loud", "text", "log level must be one of debug, info, warning, error, got 'loud'"),
     ("info", "xml", "log format must be one of text, json, got 'xml'")],
)  # fmt: skip
def test_configure_refuses_what_it_does_not_know(level: str, fmt: str, says: str) -> None:
    root = logging.getLogger()
    handlers = list(root.handlers)
    with pytest.raises(ValueError, match=says):
        logs.configure(level, fmt)
    assert root.handlers == handlers  # nothing installed


@pytest.mark.parametrize(
    ("token", "logged"),
    [
        ("pbt_0123456789abcdef_" + "S" * 43, "0123456789abcdef"),
        ("pbt_0123456789abcdef", None),  # no secret part: not a token
        ("secret-without-shape", None),  # not a token's shape: nothing of it is logged
        ("", None),
    ],
)
def test_only_a_tokens_id_is_ever_logged(token: str, logged: str | None) -> None:
    assert token_id_of(token) == logged
