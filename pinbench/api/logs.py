"""The server's logs: a level, a format (text or JSON lines), and repeated failures held back.

``pinbench serve --log-level --log-format`` (or ``PINBENCH_LOG_LEVEL``/``PINBENCH_LOG_FORMAT``)
picks them; ``configure`` installs one handler on the root logger, in the serving process
and in each uvicorn worker. A record's structured fields travel as ``extra={"fields": {...}}``
(``event`` below): JSON lines carry them as keys beside ``ts``, ``level``, ``logger`` and
``msg``, text lines as ``key=value`` after the message.

A failure that repeats (the database down: every heartbeat and every request fails the same
way) is logged once; the same warning or error again within ``REPEAT_WINDOW_S`` is counted,
not written, and the next one written after the window says how many were held back:
``... (41 more in the last 60 s)``. Records below WARNING and events (a failed
authentication: each is kept, the server's throttle bounds how many) are never held back.
"""

from __future__ import annotations

import json
import logging
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any, Final

LEVELS: Final = ("debug", "info", "warning", "error")
FORMATS: Final = ("text", "json")
LEVEL_ENV: Final = "PINBENCH_LOG_LEVEL"
FORMAT_ENV: Final = "PINBENCH_LOG_FORMAT"
REPEAT_WINDOW_S: Final = 60.0
"""How long the same warning or error is held back after it was written."""
REPEAT_KEYS: Final = 512
"""Distinct repeated messages remembered at once (the oldest forgotten first)."""


def event(
    logger: logging.Logger,
    level: int,
    msg: str,
    /,
    *,
    in_msg: tuple[str, ...] = (),
    **fields: Any,
) -> None:
    """Log ``msg`` with structured ``fields`` (JSON keys; ``key=value`` in text, but for
    those ``in_msg`` names as already written in the message)."""
    logger.log(level, msg, extra={"fields": fields, "fields_in_msg": in_msg})


def _fields(record: logging.LogRecord) -> Mapping[str, Any]:
    fields = getattr(record, "fields", None)
    return fields if isinstance(fields, Mapping) else {}


class JsonFormatter(logging.Formatter):
    """One JSON object a line: ``ts`` (UTC, ISO 8601, ms), ``level``, ``logger``, ``msg``,
    the record's fields, and ``exc`` (the traceback) when it has one."""

    def format(self, record: logging.LogRecord) -> str:
        ts = datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds")
        body: dict[str, Any] = {
            "ts": ts.replace("+00:00", "Z"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        for key, value in _fields(record).items():
            body.setdefault(key, value)
        if record.exc_info:
            body["exc"] = self.formatException(record.exc_info)
        return json.dumps(body, default=str, ensure_ascii=False)


class TextFormatter(logging.Formatter):
    """``2026-01-02 03:04:05,678 INFO pinbench.api.access: GET /api/v1/runs 200 3.1 ms
    user=owner``."""

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s: %(message)s")

    def formatMessage(self, record: logging.LogRecord) -> str:
        line = super().formatMessage(record)
        said = getattr(record, "fields_in_msg", ())
        fields = _fields(record).items()
        extra = " ".join(f"{k}={v}" for k, v in fields if v is not None and k not in said)
        return f"{line} {extra}" if extra else line


class RepeatFilter(logging.Filter):
    """Hold back a warning or error written less than ``window_s`` ago (same logger, level
    and message; not an ``event``); the next one written says how many were held back.
    ``clock``: for tests."""

    def __init__(
        self, window_s: float = REPEAT_WINDOW_S, clock: Callable[[], float] = time.monotonic
    ) -> None:
        super().__init__()
        self.window_s = window_s
        self._clock = clock
        self._lock = threading.Lock()
        self._seen: OrderedDict[tuple[str, int, str], tuple[float, int]] = OrderedDict()
        """Per message: when it was last written, and how many were held back since."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.WARNING or hasattr(record, "fields"):
            return True  # the access log and events (each failed login) are all kept
        key = (record.name, record.levelno, record.getMessage())
        now = self._clock()
        with self._lock:
            seen = self._seen.get(key)
            if seen is not None and now - seen[0] < self.window_s:
                self._seen[key] = (seen[0], seen[1] + 1)
                return False
            self._seen[key] = (now, 0)
            self._seen.move_to_end(key)
            while len(self._seen) > REPEAT_KEYS:
                self._seen.popitem(last=False)
        if seen is not None and seen[1]:
            record.msg = f"{record.getMessage()} ({seen[1]} more in the last {self.window_s:.0f} s)"
            record.args = None
            record.exc_info = None  # its traceback was written the first time
            record.exc_text = None
        return True


_HANDLER_NAME = "pinbench-serve"


def configure(level: str, fmt: str) -> None:
    """Send every log record at ``level`` or above to stderr in ``fmt`` (replacing what an
    earlier call installed)."""
    if level not in LEVELS:
        raise ValueError(f"log level must be one of {', '.join(LEVELS)}, got {level!r}")
    if fmt not in FORMATS:
        raise ValueError(f"log format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    root = logging.getLogger()
    for old in [h for h in root.handlers if h.get_name() == _HANDLER_NAME]:
        root.removeHandler(old)
    handler = logging.StreamHandler(sys.stderr)
    handler.set_name(_HANDLER_NAME)
    handler.setFormatter(JsonFormatter() if fmt == "json" else TextFormatter())
    handler.addFilter(RepeatFilter())
    root.addHandler(handler)
    root.setLevel(level.upper())
