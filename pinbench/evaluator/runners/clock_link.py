"""How the host's clock reaches its worker (``host_clock``): two pipes a worker on this machine
inherits (the local and venv runners' sandboxes), or a Unix socket a container connects to
(the docker runner: a container inherits no descriptor, but sees a folder bound into it);
with either, the rings' memory (``clock_ring``) the frames go through where this machine
takes them, the pipes or the socket then carrying wake-ups alone.

Which runs the host times is ``keeps_clock``'s to say (``host_clock.for_run`` makes a run's
clock). A link gives the host its descriptors, one it reads answers (or wake-ups) from, one
it writes queries (or wake-ups) to, and the memory, once the worker is there (``connect``);
it closes what it opened, once (``close``)."""

from __future__ import annotations

import contextlib
import os
import select
import socket
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from pinbench.evaluator.proc_tree import tree

if TYPE_CHECKING:
    from pinbench.registry.lockfile import Lockfile

SOCKET = "clock.sock"
"""The socket's name in the folder the container sees."""
ACCEPT_SLICE_S = 0.2
"""How often a socket link waiting for its worker looks whether the worker has ended."""
REFUSED_KEPT = 16
"""The refused peers a socket link remembers, at most."""


def _memory() -> list[int]:
    """The rings' memory file where this machine takes them (``clock_ring``), else none."""
    from pinbench.worker import clock_ring

    return [clock_ring.memory()] if clock_ring.available() else []


class PipeLink:
    """Two pipes and the rings' memory: the worker's ends (``worker_fds``) are inherited by its
    process, then closed here (``started``); a worker that ends closes its ends, which the host
    reads as the end."""

    def __init__(self, rings: bool = True) -> None:
        self._to_worker, self._to_host = os.pipe(), os.pipe()
        self._memory = _memory() if rings else []
        """``rings``: False sends the frames through the pipes themselves, as a machine
        without the rings does (``bench/bench_overhead.py`` measures both)."""
        self._started = False

    def worker_fds(self) -> tuple[int, ...]:
        """The descriptors the worker reads queries (or wake-ups) from, writes answers (or
        wake-ups) to, and maps the rings from."""
        return self._to_worker[0], self._to_host[1], *self._memory

    def started(self, pid: int) -> None:
        del pid
        self._started = True
        os.close(self._to_worker[0])
        os.close(self._to_host[1])

    def connect(self, gone: threading.Event) -> tuple[int, ...] | None:
        """The host's ends: where it reads answers, where it writes queries, and the rings'
        memory (``clock_ring.channel``)."""
        del gone
        return self._to_host[0], self._to_worker[1], *self._memory

    def close(self) -> None:
        ours = [self._to_worker[1], self._to_host[0], *self._memory]
        if not self._started:  # never started: the worker's ends are still open here
            ours += [self._to_worker[0], self._to_host[1]]
        for fd in ours:
            with contextlib.suppress(OSError):
                os.close(fd)


class SocketLink:
    """A Unix socket in ``folder`` (bound into the container), listening for one connection:
    the first whose peer is the worker's process or one of its descendants, of the worker's
    user (``SO_PEERCRED``, checked against the host's ``/proc``: ``_worker``), accepted once
    the worker has started; any other peer is refused, and the socket is removed once the
    worker is there."""

    def __init__(self, folder: Path) -> None:
        self.path = folder / SOCKET
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        # bound through the folder's descriptor: a socket's path is at most 107 bytes, which a
        # long PINBENCH_HOME's run folders pass
        where = os.open(folder, os.O_PATH | os.O_DIRECTORY)
        try:
            self._listener.bind(f"/proc/self/fd/{where}/{SOCKET}")
        finally:
            os.close(where)
        self.path.chmod(0o666)  # the container's user (nobody) connects
        self._listener.listen(4)
        self._conn: socket.socket | None = None
        self._memory: list[int] = []
        self._pid = 0
        self.refused: list[int] = []
        """The peers that connected and were not the worker (their process ids)."""

    def worker_fds(self) -> tuple[int, ...]:
        """None: the worker connects to ``path``."""
        return ()

    def started(self, pid: int) -> None:
        self._pid = pid

    def connect(self, gone: threading.Event) -> tuple[int, ...] | None:
        """Wait for the worker's connection; None once ``gone`` is set without one. The
        worker is sent the rings' memory with the first byte (``R``), or told the frames go
        through the socket (``S``: ``remote_test.connected``)."""
        from pinbench.worker.clock_wire import wait_for

        while not gone.is_set():
            if not wait_for(self._listener.fileno(), select.POLLIN, int(ACCEPT_SLICE_S * 1000)):
                continue
            conn, _ = self._listener.accept()
            creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12)
            peer = int.from_bytes(creds[:4], "little", signed=True)
            uid = int.from_bytes(creds[4:8], "little")
            if not self._worker(peer, uid):
                if len(self.refused) < REFUSED_KEPT:
                    self.refused.append(peer)
                conn.close()
                continue
            self._conn = conn
            self._listener.close()
            with contextlib.suppress(OSError):
                self.path.unlink()
            memory = _memory()
            self._memory = memory
            socket.send_fds(conn, [b"R" if memory else b"S"], memory)
            return conn.fileno(), conn.fileno(), *memory
        return None

    def _worker(self, peer: int, uid: int) -> bool:
        """Whether a peer (its process and user when it connected) is the worker: a process of
        the container's first process's tree, of that process's user (the user is fixed at
        connect time, so a process id reused since cannot pass for another user's)."""
        if not self._pid:
            return False
        try:
            owner = os.stat(f"/proc/{self._pid}").st_uid
        except OSError:
            return False
        return uid == owner and peer in tree(self._pid)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._listener.close()
        if self._conn is not None:
            with contextlib.suppress(OSError):
                self._conn.close()
        for fd in self._memory:
            with contextlib.suppress(OSError):
                os.close(fd)
        with contextlib.suppress(OSError):
            self.path.unlink()


def keeps_clock(lock: Lockfile, *, code: bool, allow_pickle: bool, traced: bool = False) -> bool:
    """Whether the host keeps the clock of ``lock``'s run in a worker: its system under test runs
    what its publisher wrote — Python (``code``: processing code it may run; a builder; a pickle
    it may unpickle) or operations of its own (a TorchScript or torch.export program, a
    SavedModel's or GraphDef's file operations, Keras layers: ``sandbox.runs_its_own_operations``)
    — in one model's or chain's LoadGen test (``clock_wire.fits``). A ``traced`` run of a model
    whose only own work is its format's operations keeps LoadGen beside it: its trace's spans
    are then the latencies it records, and a traced run is never a series' member or a gate's
    baseline (Python code is host-timed traced or not)."""
    from pinbench.evaluator.runners.sandbox import runs_its_own_operations
    from pinbench.worker.clock_wire import fits

    model = lock.body.model
    if model is None or not fits(lock.body):
        return False
    if code or model.builder is not None or (allow_pickle and model.trusted):
        return True
    return not traced and runs_its_own_operations(lock, allow_pickle=allow_pickle)
