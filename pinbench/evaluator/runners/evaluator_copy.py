"""The copy of the evaluator that sandboxed workers share: made once a process, read-only to
each of them.

A worker imports pinbench from a copy of the worker's side (``worker.source.copy_evaluator``:
about 760 files with their bytecode), never from the host's package. An unsandboxed worker
gets a copy of its own, since the code it may run can write there and must not reach the next
worker. A sandboxed worker cannot write it: its run's folder, and this copy bound over the
folder its copy would have been in, are read-only in the sandbox (``sandbox.wrap``). So they
share one, made the first time a process starts one in a scratch folder, of hard links to the
package's files where the filesystem allows (``copy_evaluator(link=True)``), and removed when
the process exits (``scratch.process_directory``; reclaimed once a killed process's owner lock
is gone). Copying the files took 0.34 s of every sandboxed worker's start on this project's
machine; linking them, once a process, 0.09 s (docs/benchmarks.md, section 33)."""

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
            made = copy_evaluator(process_directory(tmp, "evaluator") / "copy", link=True)
            _MADE[key] = made
        return made
