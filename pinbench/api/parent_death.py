"""``serve --workers N``'s workers end with their parent (issue 85, item 4).

uvicorn's supervisor starts each worker as a child process and stops them when it is asked to
stop. Killed with ``kill -9``, it stops nothing: its workers went on serving (health 200, a
200 MB publish acknowledged, a sandboxed run measuring) on the socket they inherited, and a
restart failed with ``Address already in use``. Here each worker asks the kernel for a SIGINT
when its parent dies (``prctl(PR_SET_PDEATHSIG)``): uvicorn's own stop, at once (the drain is
SIGTERM's, for a parent that asks): the socket closed, its running runs stopped and recorded
interrupted (``RunPool.close``). The parent names itself in ``PARENT_ENV`` before it starts
them; a worker whose parent is already gone when it asks stops at once."""

from __future__ import annotations

import os
import signal

PARENT_ENV = "PINBENCH_SERVE_PARENT"
"""The supervisor's process id, set by it for the workers it starts."""
PR_SET_PDEATHSIG = 1
"""``prctl``'s option: the signal this process gets when its parent thread ends."""


def name_parent() -> None:
    """In the supervisor, before it starts its workers."""
    os.environ[PARENT_ENV] = str(os.getpid())


def die_with_parent() -> bool:
    """In a worker started by ``name_parent``'s process: SIGINT to this process when that
    process dies, or now if it already has; False where this process is no such worker or the
    kernel offers no ``prctl``."""
    from pinbench.libc import libc_function

    raw = os.environ.get(PARENT_ENV, "")
    if not raw.isdigit():
        return False
    prctl = libc_function("prctl", "c_int", "c_ulong", "c_ulong", "c_ulong", "c_ulong")
    if prctl is None or prctl(PR_SET_PDEATHSIG, signal.SIGINT, 0, 0, 0) != 0:
        return False
    if os.getppid() != int(raw):  # gone before the request was in place
        os.kill(os.getpid(), signal.SIGINT)
    return True
