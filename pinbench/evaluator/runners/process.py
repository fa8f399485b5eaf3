"""What the runners that start a worker process share: the job file they hand it, how it is
started (``worker_start``: its own copy of the evaluator, an empty working directory, a chosen
environment), a child process whose progress is relayed and whose time is limited, and the
results it leaves."""

from __future__ import annotations

import os
import re
import threading
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from pinbench.errors import UserError
from pinbench.registry.lockfile import Lockfile
from pinbench.worker.job import Evidence, Say
from pinbench.worker.results import RESULT, JobFile, adopt, read_results
from pinbench.worker.source import copy_evaluator

if TYPE_CHECKING:
    from pinbench.evaluator.runners.sandbox import Confinement

TAIL_LINES = 20
TAIL_BYTES = 4096
"""A dead evaluator's last output kept in the run's error: at most this many lines and bytes."""
TAIL_LINE_CHARS = 1000
"""One line of that tail is cut to this many characters."""
LINE_CHARS = 4096
"""A longer output line is cut to this many characters as it is read (memory stays bounded)."""
POLL_S = 0.2
"""How often a child's wait looks at the run's stop request."""


class EvaluationFailed(UserError):
    """The evaluator ran and failed; its own message is the run's error."""

    def __init__(self, *, runner: str, error: str) -> None:
        super().__init__(error)
        self.runner = runner
        self.error = error


STOPPED_S = 2.0
"""How long a worker's process may stay stopped (SIGSTOP, or held by ptrace) before its run
fails: nothing a run does stops its own processes, and one that is stopped would hold the run
until its time limit (issue 84, item 6)."""


class WorkerStopped(UserError):
    """A process of the worker was stopped (a signal or a tracer) for ``STOPPED_S``."""

    def __init__(self, *, runner: str, pid: int, state: str, seconds: float) -> None:
        how = "held by a tracer (ptrace)" if state == "t" else "stopped by a signal (SIGSTOP)"
        super().__init__(
            f"the worker's process {pid} was {how} for {seconds:.1f} s: a run's processes are "
            f"never stopped, so the run was ended rather than left to wait for its time limit "
            f"({runner} runner)"
        )
        self.runner = runner
        self.pid = pid
        self.state = state
        self.seconds = seconds


class Held:
    """Whether a process of a worker's tree has stayed stopped (``proc_tree.stopped``) for
    ``STOPPED_S``: then ``WorkerStopped``, naming it (a cold worker's wait, ``child``, and a
    warm one's, ``warm``, both ask)."""

    def __init__(self, runner: str) -> None:
        self.runner = runner
        self.since: dict[tuple[int, str], float] = {}

    def check(self, pid: int) -> None:
        from pinbench.evaluator.proc_tree import stopped

        now = time.monotonic()
        found = stopped(pid)
        self.since = {p: self.since.get(p, now) for p in found}
        for (process, state), since in self.since.items():
            if now - since >= STOPPED_S:
                raise WorkerStopped(
                    runner=self.runner, pid=process, state=state, seconds=now - since
                )


class RunTimedOut(UserError):
    def __init__(self, *, runner: str, timeout_s: float) -> None:
        super().__init__(
            f"the evaluation exceeded its time limit ({timeout_s:g} s, limits.timeout_s in the "
            f"lockfile) and was stopped ({runner} runner)"
        )
        self.runner = runner
        self.timeout_s = timeout_s


_ESCAPES = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[@-Z\\-_])")
"""ANSI escape sequences: CSI (colours, cursor moves), OSC (titles, links), and the two-byte
ones."""
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_MISSING_MODULE = re.compile(r"ModuleNotFoundError: No module named '([\w.]+)'")


def clean_tail(lines: list[str]) -> list[str]:
    """A child's last output lines as plain text for a run's error: escape sequences and
    control characters removed, blank lines dropped, at most ``TAIL_LINES`` lines and
    ``TAIL_BYTES`` bytes (the last ones: an exception ends with its message)."""
    out: list[str] = []
    size = 0
    for line in reversed(lines):
        text = _CONTROLS.sub("", _ESCAPES.sub("", line.replace("\t", "    "))).rstrip()
        if not text.strip():
            continue
        if len(text) > TAIL_LINE_CHARS:
            text = text[:TAIL_LINE_CHARS] + " [cut]"
        size += len(text.encode("utf-8")) + 1
        if len(out) == TAIL_LINES or size > TAIL_BYTES:
            break
        out.append(text)
    return out[::-1]


class WorkerCrashed(UserError):
    """The evaluator process ended without results (it died, was killed, or failed before it
    could write them); its last output lines (``tail``, cleaned) are part of the message."""

    def __init__(self, *, runner: str, status: int, reason: str, tail: list[str]) -> None:
        tail = clean_tail(tail)
        text = f"the evaluator ({runner} runner) {reason} (exit status {status})"
        missing = next((m.group(1) for t in tail if (m := _MISSING_MODULE.search(t))), None)
        if missing is not None:
            text += (
                f". Its environment lacks the module {missing!r}: a framework manifest's "
                "requirements must pin the evaluator's own dependencies (msgspec, numpy, pyyaml, "
                "pillow, semver, mlcommons-loadgen) besides the framework; a package the "
                "model's own code imports goes in the model's `requirements` (venv runner)"
            )
        if tail:
            text += ". Its last output:\n  " + "\n  ".join(tail)
        super().__init__(text)
        self.runner = runner
        self.status = status
        self.tail = tail
        self.missing_module = missing


JOB = "job.json"
"""The job file's name in its folder (``write_job``)."""
PASSED_ENV = ("PATH", "LANG", "LC_ALL", "TZ", "TMPDIR", "OMP_NUM_THREADS")
"""The host's environment variables a worker sees; every other one is left out."""


class WorkerStart(msgspec.Struct, frozen=True, kw_only=True):
    """How a worker process is started: ``argv``, ``env`` and ``cwd`` for ``subprocess``."""

    argv: list[str]
    env: dict[str, str]
    cwd: str


def worker_start(
    python: Path | str,
    root: Path,
    args: Sequence[str],
    *,
    inherit: bool = False,
    confine: Confinement | None = None,
    hidden: Sequence[Path] = (),
) -> WorkerStart:
    """The one way a worker process is started on this machine (the venv runner, cold and warm,
    and the local runner's child): ``python -s -m pinbench.worker.main ARGS``,
    importing pinbench from a new copy of the evaluator in ``root/evaluator`` (its own: what a
    run's code writes there is never imported by another worker, and it is removed with
    ``root``), run in ``root/cwd``, a new empty folder (``-m`` puts the working directory first
    on ``sys.path``: started in the caller's folder, a ``pinbench/`` package there was imported
    instead of the evaluator; issue 63), with only ``PASSED_ENV`` of the host's environment
    (``inherit``: all of it, the copy first on ``PYTHONPATH``: the local runner's child runs
    where the host runs, as an in-process run would), no user site-packages and no bytecode
    written.

    ``confine``: in that sandbox (``sandbox.wrap``; ``root`` under its folder, ``ARGS`` host
    paths under it, translated), with the sandbox's environment whatever ``inherit`` says, the
    worker's side of the host's package bound read-only at ``root/evaluator`` instead of a copy
    (``evaluator_copy``); ``hidden``: what the interpreter's folders may not hold (the home,
    the blob store)."""
    source = root / "evaluator"
    cwd = root / "cwd"
    cwd.mkdir(parents=True)
    if confine is not None:
        from pinbench.evaluator.runners.evaluator_copy import side_binds
        from pinbench.evaluator.runners.sandbox import wrap

        made = side_binds(source, hidden)
        if made is None:  # the side's folders hold more than its files: a copy of them
            copy_evaluator(source)
        binds = [(host, confine.inside(entry)) for host, entry in made or []]
        inside = [confine.inside(a) if Path(a).is_relative_to(confine.root) else a for a in args]
        argv, env = wrap(
            confine,
            python,
            [str(python), "-s", "-m", "pinbench.worker.main", *inside],
            hidden=list(hidden),
            pythonpath=confine.inside(source),
            cwd=confine.inside(cwd),
            binds=binds,
        )
        return WorkerStart(argv=argv, env=env, cwd=str(cwd))
    copy_evaluator(source)
    if inherit:
        env = dict(os.environ)
        path = os.pathsep.join(p for p in (str(source), env.get("PYTHONPATH", "")) if p)
    else:
        env = {k: os.environ[k] for k in PASSED_ENV if k in os.environ}
        path = str(source)
    env.update(PYTHONPATH=path, PYTHONNOUSERSITE="1", PYTHONDONTWRITEBYTECODE="1")
    env["NUMBA_CACHE_DIR"] = str(root / "numba")  # numba writes beside its sources otherwise
    env["TF_CPP_MIN_LOG_LEVEL"] = "2"
    argv = [str(python), "-s", "-m", "pinbench.worker.main", *args]
    return WorkerStart(argv=argv, env=env, cwd=str(cwd))


HOST_PEAK = (
    "the host's reading: the largest peak resident size (VmHWM) among the worker's processes, "
    "read from /proc while they ran"
)


def host_memory(evidence: Evidence, peak_bytes: int) -> None:
    """The worker's peak resident size as the host read it (``child.run_child``'s ``peak``), in
    place of the worker's own; where the host read none, the worker's figure goes too."""
    memory = evidence.details.get("memory")
    memory = dict(memory) if isinstance(memory, dict) else {}
    if peak_bytes > 0:
        evidence.metrics["peak_rss_bytes"] = float(peak_bytes)
        memory["peak_rss"] = HOST_PEAK
    else:
        evidence.metrics.pop("peak_rss_bytes", None)
        memory["peak_rss"] = "unread: /proc did not show the worker's processes"
    evidence.details["memory"] = memory


def write_job(
    path: Path,
    lock: Lockfile,
    model: dict[str, str],
    dataset: dict[str, str],
    cache: str | None = None,
    trace: str = "none",
    allow_pickle: bool = False,
    validation: dict[str, str] | None = None,
    *,
    allow_code: bool = False,
    stages: dict[str, dict[str, str]] | None = None,
    clock: Sequence[int] = (),
    clock_socket: str = "",
    ranks: dict[str, Any] | None = None,
) -> None:
    job = JobFile(
        lockfile=lock.canonical.decode("utf-8"),
        model=model,
        dataset=dataset,
        validation=validation or {},
        cache=cache,
        trace=trace,
        allow_pickle=allow_pickle,
        allow_code=allow_code,
        stages=stages or {},
        clock=list(clock),
        clock_socket=clock_socket,
        ranks=ranks,
    )
    path.write_bytes(msgspec.json.encode(job))


def collect(
    runner: str, out: Path, lock: Lockfile, evidence: Evidence, *, status: int, tail: list[str]
) -> None:
    """Read the worker's results into ``evidence``; raise its error if the evaluation failed.
    A worker that ended (``status``) without writing them died before it could say why: its
    output's ``tail`` is the error (an import error, a crash in native code...)."""
    if not (out / RESULT).exists():
        raise WorkerCrashed(
            runner=runner, status=status, reason=f"ended without writing {RESULT}", tail=tail
        )
    result, got = read_results(out, lock.digest.hex)
    adopt(evidence, got)
    evidence.environment["inside"] = dict(result.environment)
    if result.status == "failed":
        raise EvaluationFailed(runner=runner, error=result.error or "failed without a reason")


class Relay:
    """Forward a byte stream's lines (a pipe, or the chunks of a container's log) to ``say`` on
    a thread, keeping the last few for errors. A line split across chunks is joined first."""

    def __init__(self, stream: Iterable[bytes], say: Say) -> None:
        self.tail: list[str] = []
        self._thread = threading.Thread(target=self._pump, args=(stream, say), daemon=True)
        self._thread.start()

    def _pump(self, stream: Iterable[bytes], say: Say) -> None:
        pending = b""
        for chunk in stream:
            *lines, pending = (pending + chunk).split(b"\n")
            if len(pending) > LINE_CHARS * 4:  # no newline in sight: pass it on as it is
                lines, pending = [*lines, pending], b""
            for line in lines:
                self._line(line, say)
        if pending:
            self._line(pending, say)

    def _line(self, raw: bytes, say: Say) -> None:
        line = raw.decode("utf-8", "replace").rstrip("\r")[:LINE_CHARS]
        self.tail = [*self.tail[-(TAIL_LINES - 1) :], line]
        say(line)

    def join(self) -> list[str]:
        self._thread.join(timeout=5)
        return self.tail
