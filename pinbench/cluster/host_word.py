"""What an agent says as the host of its run, beside its evaluator's results (decision 312).

On an agent, the agent's pinbench process is the host: it keeps the clock of a host-timed
run and runs MLPerf's audits (TEST04's unique test, TEST01's accuracy pass) in sandboxed
workers, as a server does for a run on its own machine. Its evaluator's results cross to the
server as a worker's do (``worker.results``), and the server drops from them whatever only a
host writes (``HOST_DETAILS``, ``HOST_ONLY``): a worker's word on its own audits counts for
nothing. The agent's word on them crosses here instead, apart from the worker's files:

- ``details``: the audits' verdicts and whose clock timed the run (``audits``, ``clock``);
- ``metrics``: the audits' figures (``audit_*``);
- ``unscored``: TEST01's verdicts before any timed answer is scored in the accuracy pass's
  place (``test01.Unscored``), with the answers that scoring needs as ``answers.npz`` files.
  The agent is never handed the dataset's ground truth (``agent_run.handed``): the server
  finishes TEST01 where the truth is (``test01_scoring.settle``, before ``scoring.judge``).

``pack`` is the agent's side, ``adopt`` the server's: plain JSON within ``MAX_JSON_BYTES``,
metric names and values checked, each answers file within its cap and read without pickle
(``answers.read_answers``); anything else is refused (``Refused``) and the run fails naming it.
"""

from __future__ import annotations

import json
import math
import re
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pinbench.errors import UserError

if TYPE_CHECKING:
    from pinbench.evaluator.runners.test01 import Unscored
    from pinbench.worker.job import Evidence

DETAILS = ("audits", "clock", "dropped_metrics")
"""The details only the host of a run writes that an agent hands over (``HOST_DETAILS``): the
audits' verdicts, whose clock timed the run, and the figures its worker wrote that only a host
writes (dropped and named)."""
MAX_JSON_BYTES = 1024 * 1024
"""Cap on the word's plain data (verdicts, names), as JSON."""
_METRIC = re.compile(r"audit_[a-z0-9_]{1,96}")
_ACCURACY, _TIMED = "accuracy", "timed-{}"
MAX_TIMED = 2
"""Timed workers TEST01 compares at most: the run's and TEST04's."""


class Refused(UserError):
    """The agent's word as its run's host is not what an agent writes: ``reason`` says how."""

    def __init__(self, *, reason: str) -> None:
        super().__init__(f"the agent's audits were refused: {reason}")
        self.reason = reason


def pack(evidence: Evidence) -> dict[str, Any]:
    """The agent's side: its word as the host of the run in ``evidence``, as plain data."""
    from pinbench.worker.answers import write_answers

    host_free = without_host_only(evidence.metrics)
    word: dict[str, Any] = {
        "details": {k: evidence.details[k] for k in DETAILS if k in evidence.details},
        "metrics": {k: v for k, v in evidence.metrics.items() if k not in host_free},
        "unscored": None,
    }
    unscored = evidence.unscored
    if unscored is None:
        return word
    files: dict[str, bytes] = {}
    names: dict[str, list[list[str]]] = {}
    with tempfile.TemporaryDirectory(prefix="pinbench-word-") as out:
        parts: list[tuple[str, Any, Any]] = [(_ACCURACY, unscored.accuracy, unscored.inputs)]
        parts += [(_TIMED.format(k), d, None) for k, d in enumerate(unscored.differing)]
        for name, answers, inputs in parts:
            if answers is None:
                continue
            path = Path(out) / f"{name}.npz"
            outputs, given = write_answers(path, answers, inputs)
            files[name], names[name] = path.read_bytes(), [outputs, given]
    word["unscored"] = {
        "found": unscored.found,
        "labels_checked": unscored.labels_checked,
        "names": names,
        "files": files,
    }
    return word


def without_host_only(metrics: dict[str, float]) -> dict[str, float]:
    """``metrics`` without those only a host writes (``HOST_ONLY``): what an agent's evaluator
    files carry, its audits' figures crossing in its word instead."""
    from pinbench.worker.results import HOST_ONLY

    return {k: v for k, v in metrics.items() if not k.startswith(HOST_ONLY)}


def adopt(evidence: Evidence, word: Any, scratch: Path) -> None:
    """The server's side: the agent's ``word`` into ``evidence`` (after its worker's results
    were read: ``read_results`` dropped what only a host writes), checked first; ``Refused``
    naming what is wrong, ``evidence`` then unchanged. ``scratch``: an empty folder of the
    server's, for the answers files as they are read."""
    if not isinstance(word, dict) or set(word) != {"details", "metrics", "unscored"}:
        raise Refused(reason="not the details, metrics and unscored verdicts an agent writes")
    details, metrics, unscored = word["details"], word["metrics"], word["unscored"]
    if not isinstance(details, dict) or not set(details) <= set(DETAILS):
        raise Refused(reason=f"details other than {', '.join(DETAILS)}")
    if not isinstance(metrics, dict) or not all(
        isinstance(k, str) and _METRIC.fullmatch(k) for k in metrics
    ):
        raise Refused(reason="a metric not named audit_[a-z0-9_]")
    if not all(isinstance(v, float) and math.isfinite(v) for v in metrics.values()):
        raise Refused(reason="a metric that is not a finite number")
    plain = {"details": details, "metrics": metrics, "unscored": _plain_part(unscored)}
    try:
        size = len(json.dumps(plain, allow_nan=False))
    except (TypeError, ValueError, RecursionError):
        raise Refused(reason="its details or verdicts are not plain JSON") from None
    if size > MAX_JSON_BYTES:
        raise Refused(reason=f"its details, figures and verdicts are over {MAX_JSON_BYTES} B")
    found = _unscored(unscored, scratch) if unscored is not None else None
    evidence.details.update(details)
    evidence.metrics.update(metrics)
    evidence.unscored = found


def _plain_part(unscored: Any) -> Any:
    if unscored is None:
        return None
    if not isinstance(unscored, dict):
        raise Refused(reason="its unscored verdicts are not a mapping")
    return {k: v for k, v in unscored.items() if k != "files"}


def _unscored(data: dict[str, Any], scratch: Path) -> Unscored:
    """TEST01's verdicts as the agent left them, their answers read from its files."""
    from pinbench.evaluator.runners.test01 import Unscored
    from pinbench.worker.answers import MAX_BYTES, AnswersUnreadable, read_answers

    if set(data) != {"found", "labels_checked", "names", "files"}:
        raise Refused(reason="its unscored verdicts are not found, labels_checked, names, files")
    found, checked, names, files = (data[k] for k in ("found", "labels_checked", "names", "files"))
    if not isinstance(found, list) or not 1 <= len(found) <= MAX_TIMED:
        raise Refused(reason=f"not one to {MAX_TIMED} TEST01 verdicts")
    if not all(isinstance(f, dict) and isinstance(f.get("passed"), bool) for f in found):
        raise Refused(reason="a TEST01 verdict that says not whether it passed")
    if not all(f["passed"] or isinstance(f.get("reason"), str) for f in found):
        raise Refused(reason="a failed TEST01 verdict without its reason")
    if not isinstance(checked, bool):
        raise Refused(reason="labels_checked is not true or false")
    allowed = {_ACCURACY, *(_TIMED.format(k) for k in range(len(found)))}
    if not isinstance(files, dict) or not isinstance(names, dict) or set(files) != set(names):
        raise Refused(reason="its answers files are not named beside their outputs")
    if not set(files) <= allowed:
        raise Refused(reason=f"an answers file other than {', '.join(sorted(allowed))}")
    read: dict[str, tuple[Any, Any]] = {}
    for name, data_bytes in files.items():
        listed = names[name]
        if not (
            isinstance(data_bytes, bytes)
            and len(data_bytes) <= MAX_BYTES
            and isinstance(listed, list)
            and len(listed) == 2
            and all(isinstance(n, list) and all(isinstance(x, str) for x in n) for n in listed)
        ):
            raise Refused(reason=f"answers file {name!r} is not bytes beside its names")
        path = scratch / f"{name}.npz"
        path.write_bytes(data_bytes)
        try:
            read[name] = read_answers(path, listed[0], listed[1])
        except AnswersUnreadable as exc:
            raise Refused(reason=f"answers file {name!r}: {exc}") from None
        finally:
            path.unlink()
    differing = [
        read[_TIMED.format(k)][0] if _TIMED.format(k) in read else None for k in range(len(found))
    ]
    if any(d is not None and f["passed"] for d, f in zip(differing, found, strict=True)):
        raise Refused(reason="timed answers to score beside a verdict that passed")
    if any(d is not None for d in differing) and _ACCURACY not in read:
        raise Refused(reason="timed answers to score without the accuracy pass's")
    accuracy = read.get(_ACCURACY)
    return Unscored(
        found=found,
        differing=differing,
        accuracy=accuracy[0] if accuracy is not None else None,
        inputs=(accuracy[1] or None) if accuracy is not None else None,
        labels_checked=checked,
    )
