"""An agent's answer to the server's ``run``, as plain data: never an exception object.

Ray would pickle an exception raised in the agent's actor and unpickle it on the server: a
class the server cannot rebuild (a keyword-only constructor, a class it does not have, one
from another pinbench version) came back as ``UnserializableException`` and its run was
recorded as a lost system, then retried on every other one. So the actor catches every error
of the evaluation and answers with what the server needs to record it, as dicts, strings and
ints; the server treats only Ray's own "that node or actor is gone" errors as a lost system
(``dispatch``), and everything an agent answers as that agent's word.

    {"ok": PACKED}            the packed results (``agent_run.run_here``)
    {"error": {"type": NAME, "message": TEXT, "exit_code": 1 | 3, "stopped": BOOL}}
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from pinbench.errors import PinbenchError
from pinbench.worker.stop import RunStopped

MAX_TEXT = 2000
log = logging.getLogger("pinbench.agent")


@dataclass(frozen=True)
class AgentError:
    """The error an agent's evaluation ended with, as the agent stated it."""

    type: str
    """The error's class name (``ChecksumMismatch``)."""
    message: str
    """A pinbench error's own message; for any other exception only its class name (its text
    may hold the agent's paths; the agent's log has the traceback)."""
    exit_code: int
    """1: the input's fault (a user error); 3: the agent's or its system's."""
    stopped: bool
    """The evaluation stopped because the server asked it to (a cancel, a shutdown)."""


def answer_ok(packed: dict[str, Any]) -> dict[str, Any]:
    return {"ok": packed}


def answer_error(exc: Exception) -> dict[str, Any]:
    """What the agent answers when its evaluation raised ``exc``."""
    if isinstance(exc, PinbenchError):
        message, exit_code = str(exc), exc.exit_code
    else:
        log.error("the evaluation failed on this agent", exc_info=exc)
        message, exit_code = f"{type(exc).__name__} on the agent (its log has the details)", 3
    return {
        "error": {
            "type": type(exc).__name__[:200],
            "message": message[:MAX_TEXT],
            "exit_code": 1 if exit_code == 1 else 3,
            "stopped": isinstance(exc, RunStopped),
        }
    }


def read_error(answer: Any) -> AgentError | None:
    """The agent's error if ``answer`` is a well-formed error answer, else None."""
    if not isinstance(answer, dict) or set(answer) != {"error"}:
        return None
    error = answer["error"]
    if not isinstance(error, dict) or set(error) != {"type", "message", "exit_code", "stopped"}:
        return None
    kind, message, exit_code, stopped = (
        error["type"],
        error["message"],
        error["exit_code"],
        error["stopped"],
    )
    if not (isinstance(kind, str) and isinstance(message, str) and isinstance(stopped, bool)):
        return None
    if type(exit_code) is not int or exit_code not in (1, 3):
        return None
    return AgentError(kind[:200], message[:MAX_TEXT], exit_code, stopped)


def read_ok(answer: Any) -> Any:
    """The packed results of a success answer (checked by the caller), else None."""
    if isinstance(answer, dict) and set(answer) == {"ok"}:
        return answer["ok"]
    return None


def lost_errors(ray: Any) -> tuple[type[BaseException], ...]:
    """Ray's errors that mean the agent's actor, its worker process or its node is gone (or
    the answer with it): the only ones that make a system lost, and a run worth retrying."""
    e = ray.exceptions
    return (
        e.RayActorError,  # ActorDiedError, ActorUnavailableError
        e.NodeDiedError,
        e.WorkerCrashedError,
        e.LocalRayletDiedError,
        e.ObjectLostError,  # OwnerDiedError, ObjectFetchTimedOutError, ...
    )


def printable(text: str) -> str:
    """An agent's text as the server logs and records it: one line, at most MAX_TEXT chars."""
    line = "".join(c if c.isprintable() else " " for c in text)
    return line[:MAX_TEXT]
