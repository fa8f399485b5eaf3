"""The fork server that distributed ranks fork from (decision 268), kept to what a rank would
have inherited from its launcher under spawn.

``multiprocessing`` starts its fork server once per process with ``python -c``: the current
folder first on the server's ``sys.path`` (a ``torch/`` or a ``numpy.py`` there would be what
it preloads, where the launcher, a console script, would never import them), and the server
keeps the environment, umask, resource limits and CPU affinity of the moment it started for
every later rank (an ``OMP_NUM_THREADS`` or ``ONEDNN_MAX_CPU_ISA`` set afterwards would not
reach a rank). So ``rank_context`` starts the server itself (``_start``: ``ForkServer``'s own
start, with ``-P`` and the launcher's ``sys.path`` set before anything is imported, neither
of which the standard library passes on), and starts it again whenever what a rank would
inherit from it no longer matches the launcher (``inherited``), it died, or its socket file
is gone (a ``/tmp`` cleaner); the server it replaces is given up, not waited for (``_detach``:
it ends with the last rank it forked, another thread's training perhaps). That uses
``ForkServer``'s private state, the same from CPython 3.11.1 to 3.13 (``launch.start_method``
spawns elsewhere).
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

NOT_COMPARED = frozenset({"PYTEST_CURRENT_TEST"})
"""Variables whose change does not start a new server: pytest's note of the test phase running,
changed at every one, which no rank reads (a server per test would import PyTorch per test)."""

_lock = threading.Lock()
_started: tuple[tuple[object, ...], int | None] | None = None
"""What ``inherited`` said when this module last started the server, and its process ID."""


def inherited() -> tuple[object, ...]:
    """What a process forked from the server takes from it and not from its launcher: the
    environment, ``sys.path`` (and the folder its relative entries mean), the umask, the
    resource limits and the CPU affinity."""
    import resource

    path = _path()
    relative = any(not os.path.isabs(entry) for entry in path)
    limits = tuple(
        (name, resource.getrlimit(getattr(resource, name)))
        for name in sorted(dir(resource))
        if name.startswith("RLIMIT_")
    )
    return (
        tuple(sorted((k, v) for k, v in os.environ.items() if k not in NOT_COMPARED)),
        tuple(path),
        os.getcwd() if relative else None,
        _umask(),
        limits,
        tuple(sorted(os.sched_getaffinity(0))) if hasattr(os, "sched_getaffinity") else None,
    )


def _umask() -> str | None:
    """This process's umask, read without setting it (``os.umask`` would change it for every
    thread for a moment); None where ``/proc`` does not say."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return line.split()[1]
    except OSError:
        pass
    return None


@contextmanager
def rank_context(method: str, preload: Sequence[str]) -> Iterator[Any]:
    """Within: the ``multiprocessing`` context to start ranks with; start them here. For
    ``forkserver``, the fork server runs with what this process would hand a spawned rank now,
    preloading ``preload``: started if none runs (or the one running is not the one started
    here), started again if it was started under other conditions or lost its socket file.
    Spawn's context where ``sys.path`` is too long to pass on a command line."""
    import multiprocessing

    if method != "forkserver" or len(repr(_path())) > MAX_PATH_CHARS:
        yield multiprocessing.get_context("spawn" if method == "forkserver" else method)
        return
    from multiprocessing import forkserver

    server: Any = forkserver._forkserver
    with _lock:  # held while the ranks start: no other thread starts a server meanwhile
        with server._lock:  # not while they start: each start takes it (ensure_running)
            _ensure(server, preload)
        yield multiprocessing.get_context("forkserver")


MAX_PATH_CHARS = 65_536
"""The longest ``sys.path`` (its repr) passed to the server, half of Linux's limit on one
command-line argument (``MAX_ARG_STRLEN``, 128 KiB)."""


def _path() -> list[str]:
    """``sys.path``'s entries as plain strings (a path object as its string; anything else,
    which the import system ignores too, left out)."""
    return [
        os.fsdecode(os.fspath(entry)) for entry in sys.path if isinstance(entry, str | os.PathLike)
    ]


def _ensure(server: Any, preload: Sequence[str]) -> None:
    global _started
    _reap()
    now = inherited()
    pid, address = server._forkserver_pid, server._forkserver_address
    if pid is not None:
        if _started == (now, pid) and address and os.path.exists(address) and _alive(pid):
            return
        _detach(server)
    _start(server, preload)
    _started = (now, server._forkserver_pid)


def _alive(pid: int) -> bool:
    try:
        return os.waitpid(pid, os.WNOHANG)[0] == 0
    except ChildProcessError:
        return False


_detached: list[int] = []
"""Servers given up (``_detach``), reaped once they have ended (``_reap``)."""


def _detach(server: Any) -> None:
    """Give the running server up without waiting for it (a restart must not wait for another
    thread's training): close this process's end of its lifeline, so that it ends once the
    ranks it forked have; remove its socket file, so that nothing else connects to it."""
    from multiprocessing import util

    pid, alive, address = (
        server._forkserver_pid, server._forkserver_alive_fd, server._forkserver_address
    )  # fmt: skip
    server._forkserver_pid = server._forkserver_alive_fd = server._forkserver_address = None
    if alive is not None:
        with contextlib.suppress(OSError):
            os.close(alive)
    if address and not util.is_abstract_socket_namespace(address):
        with contextlib.suppress(OSError):
            os.unlink(address)
    if pid is not None:
        _detached.append(pid)


def _reap() -> None:
    for pid in list(_detached):
        try:
            ended = os.waitpid(pid, os.WNOHANG)[0] != 0
        except ChildProcessError:
            ended = True
        if ended:
            _detached.remove(pid)


def _start(server: Any, preload: Sequence[str]) -> None:
    """``ForkServer.ensure_running``'s start, but with ``-P`` (no current folder on the path)
    and this process's ``sys.path`` set before the server imports anything."""
    import socket
    from multiprocessing import connection, process, resource_tracker, spawn, util

    resource_tracker.ensure_running()
    folder = util.get_temp_dir()  # private (0700), for the socket; a /tmp cleaner may remove it
    if not os.path.isdir(folder):
        try:
            os.mkdir(folder, 0o700)  # again: ours, or it fails
        except FileExistsError:  # another's, made meanwhile: a new folder
            process.current_process()._config.pop("tempdir", None)  # type: ignore[attr-defined]
    with socket.socket(socket.AF_UNIX) as listener:
        address = connection.arbitrary_address("AF_UNIX")  # type: ignore[attr-defined]
        if util.is_abstract_socket_namespace(address):  # any local user could connect
            raise RuntimeError(f"the fork server's socket would be abstract: {address!r}")
        listener.bind(address)
        os.chmod(address, 0o600)
        listener.listen()
        alive_r, alive_w = os.pipe()
        try:
            command = (
                f"import sys; sys.path[:] = {_path()!r}; "
                "from multiprocessing.forkserver import main; "
                f"main({listener.fileno()}, {alive_r}, {list(preload)!r})"
            )
            exe = spawn.get_executable()
            flags = util._args_from_interpreter_flags()  # type: ignore[attr-defined]
            argv = [exe, *flags, "-P", "-c", command]
            pid = util.spawnv_passfds(os.fsencode(exe), argv, [listener.fileno(), alive_r])
        except BaseException:
            os.close(alive_w)
            raise
        finally:
            os.close(alive_r)
    server._forkserver_address = address
    server._forkserver_alive_fd = alive_w
    server._forkserver_pid = pid
