"""LoadGen's own logs, kept with the run (issue 72, item 9): ``mlperf_log_summary.txt``,
``mlperf_log_detail.txt`` and ``mlperf_log_accuracy.json``, what an MLPerf user reads and
checks, stored as blobs of the run (``run_blobs.save_logs``: ``details.loadgen_logs``, one
sha256 per log, subjects of the run's attestation) and written out by ``pinbench runs outputs
RUN --log summary``.

Whoever ran LoadGen reads them: the evaluator where LoadGen ran beside the model (``measure``;
an isolated worker returns them with its results, ``results.read_results``), the host where
it kept the clock (``runners.host_clock``: the worker's are never read). Only regular files
are read, each at most ``MAX_LOG_BYTES``.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from pinbench.errors import UserError

LOGS = {
    "summary": "mlperf_log_summary.txt",
    "detail": "mlperf_log_detail.txt",
    "accuracy": "mlperf_log_accuracy.json",
}
"""Each log a run keeps, by the name ``--log`` takes, and LoadGen's file name."""

MAX_LOG_BYTES = 64 * 1024 * 1024
"""Cap on one log (read into memory): a detail log is kilobytes; pinbench hands LoadGen no
response data, so an accuracy log is a line per sample."""


class LogUnreadable(UserError):
    """A log is not a regular file, or is over ``MAX_LOG_BYTES``; ``reason`` says which."""

    def __init__(self, *, reason: str) -> None:
        super().__init__(f"LoadGen's log refused: {reason}")
        self.reason = reason


def read_log(path: Path) -> bytes:
    """One log's bytes: a regular file (never a link), at most ``MAX_LOG_BYTES``."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        raise LogUnreadable(reason=f"{path.name} cannot be read ({exc.strerror})") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise LogUnreadable(reason=f"{path.name} is not a regular file")
    with os.fdopen(fd, "rb") as f:
        data = f.read(MAX_LOG_BYTES + 1)
    if len(data) > MAX_LOG_BYTES:
        raise LogUnreadable(reason=f"{path.name} is over {MAX_LOG_BYTES} bytes")
    return data


def read_logs(folder: Path) -> dict[str, bytes]:
    """The logs LoadGen wrote in ``folder`` (its ``log_output.outdir``), by ``LOGS``' names;
    a log it did not write is absent."""
    return {
        kind: read_log(folder / name)
        for kind, name in LOGS.items()
        if os.path.lexists(folder / name)
    }
