"""The worker's side of a test the host times (``runners.host_clock``): the system under test
answers queries that LoadGen, in the host, issued across a pipe (``clock_wire``). The worker
never sees LoadGen, its log or its clock; what it says of its own timings is not recorded."""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

from pinbench.worker import clock_wire as w


class Query:
    """What ``scenarios``' answering functions read of a LoadGen query."""

    __slots__ = ("id", "index")

    def __init__(self, ident: int, index: int) -> None:
        self.id = ident
        self.index = index


def connected(path: str) -> list[int]:
    """The descriptors of a connection to the host's socket at ``path`` (a container's clock:
    ``runners.clock_link``), read from and written to alike; open until the process ends."""
    import socket

    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(path)
    fd = sock.detach()
    return [fd, fd]


class RemoteTest:
    """A test run over the pipes ``read_fd`` (from the host) and ``write_fd`` (to it)."""

    def __init__(self, read_fd: int, write_fd: int) -> None:
        self._frames = w.Frames(read_fd, b"PIE", w.SPIN_NS)
        self._write = write_fd
        self._as: Callable[[Any], Any] | None = None

    def answers_as(self, shape: Callable[[Any], Any]) -> None:
        """Seal each answer as ``shape`` makes it: as the worker hands it back to be scored
        (a transpose step's applied), so that the host can check a seal against it."""
        self._as = shape

    def seal(self, out: Any) -> bytes:
        """One sample's answer sealed (``answer_seal``), as ``answers_as`` shapes it."""
        from pinbench.worker.answer_seal import seal

        return seal(out if out is None or self._as is None else self._as(out))

    @staticmethod
    def response(ident: int, sealed: bytes, _size: int) -> tuple[int, bytes]:
        """``lg.QuerySampleResponse``'s stand-in: the query's id and its answer's seal
        (``answer_seal``)."""
        return ident, sealed

    def complete(self, answers: list[tuple[int, bytes]]) -> None:
        """``lg.QuerySamplesComplete``'s stand-in: the ids and seals go to the host."""
        w.send(self._write, w.answered(answers))

    def run(self, issue: Callable[[list[Any]], None], count: int, expected_ns: int) -> None:
        """Say the worker is ready (``count`` samples, ``expected_ns`` per call), then answer
        what the host sends until it says the test ended."""
        w.send(self._write, w.frame(b"H", 0, w.HELLO.pack(count, max(1, expected_ns))))
        while True:
            kind, _, body = self._frames.next()
            if kind == b"E":
                return
            if kind == b"P":
                w.send(self._write, w.frame(b"P", 0))
                continue
            pairs = struct.iter_unpack("<QI", body)
            issue([Query(ident, index) for ident, index in pairs])
