"""The copy of the evaluator that sandboxed workers share: made once a process, read-only to
each of them.

A worker imports pinbench from a copy of the worker's side (``worker.source.copy_evaluator``:
about 760 files with their bytecode), never from the host's package. An unsandboxed worker
gets a copy of its own, since the code it may run can write there and must not reach the next
worker. A sandboxed worker cannot write it: its run's folder, and this copy bound over the
folder its copy would have been in, are read-only in the sandbox (``sandbox.wrap``). So they
share one, made the first time a process starts one in a scratch folder, and removed when the
process exits (``scratch.process_directory``; reclaimed once a killed process's owner lock is
gone). Copying it for each worker cost a run a third of a second to a second of the host's
time (``bench/bench_local_sandbox.py``)."""

from __future__ import annotations

import os
import threading
from pathlib import Path

_LOCK = threading.Lock()
_MADE: dict[tuple[int, Path], Path] = {}
"""(process id, scratch folder) -> the copy's folder (the one to put on ``PYTHONPATH``)."""


def shared_evaluator(tmp: Path) -> Path:
    """The folder holding this process's shared copy of the evaluator (``pinbench/``) in
    scratch folder ``tmp``; made again if it has gone."""
    from pinbench.artifacts.scratch import process_directory
    from pinbench.worker.source import copy_evaluator

    key = (os.getpid(), tmp.absolute())
    with _LOCK:
        made = _MADE.get(key)
        if made is None or not (made / "pinbench" / "__init__.py").is_file():
            made = copy_evaluator(process_directory(tmp, "evaluator") / "copy")
            _MADE[key] = made
        return made
