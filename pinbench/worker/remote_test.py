"""The worker's side of a test the host times (``runners.host_clock``): the system under test
answers queries that LoadGen, in the host, issued across a pipe (``clock_wire``). The worker
never sees LoadGen, its log or its clock; what it says of its own timings is not recorded."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

from pinbench.worker import clock_wire as w
from pinbench.worker.clock_ring import channel


class Query:
    """What ``scenarios``' answering functions read of a LoadGen query."""

    __slots__ = ("id", "index")

    def __init__(self, ident: int, index: int) -> None:
        self.id = ident
        self.index = index


def connected(path: str) -> list[int]:
    """The descriptors of a connection to the host's socket at ``path`` (a container's clock:
    ``runners.clock_link``), read from and written to alike, and the rings' memory where the
    host sends one with its first byte (``R``; ``S`` where the frames go through the socket);
    open until the process ends."""
    import socket

    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(path)
    first, fds, _, _ = socket.recv_fds(sock, 1, 1)
    fd = sock.detach()
    if first == b"R" and len(fds) == 1:
        return [fd, fd, fds[0]]
    for extra in fds:
        os.close(extra)
    if first != b"S":
        raise OSError(f"the host's clock began with {first!r}, not R or S")
    return [fd, fd]


class RemoteTest:
    """A test run over the host's link ``fds``: (from the host, to it) pipes or a socket twice,
    and the rings' memory where it gave one (``clock_ring.channel``)."""

    def __init__(self, fds: Sequence[int]) -> None:
        self._channel = channel(fds, host=False, spin_ns=w.SPIN_NS)
        self._frames = w.Frames(self._channel, b"PIE")
        self._as: Callable[[Any], Any] | None = None
        from pinbench.worker.answer_seal import seal

        self._seal = seal  # bound once: an import in the hot path costs a query

    def answers_as(self, shape: Callable[[Any], Any]) -> None:
        """Seal each answer as ``shape`` makes it: as the worker hands it back to be scored
        (a transpose step's applied), so that the host can check a seal against it."""
        self._as = shape

    def seal(self, out: Any) -> bytes:
        """One sample's answer sealed (``answer_seal``), as ``answers_as`` shapes it."""
        return self._seal(out if out is None or self._as is None else self._as(out))

    @staticmethod
    def response(ident: int, sealed: bytes, _size: int) -> tuple[int, bytes]:
        """``lg.QuerySampleResponse``'s stand-in: the query's id and its answer's seal
        (``answer_seal``)."""
        return ident, sealed

    def complete(self, answers: list[tuple[int, bytes]]) -> None:
        """``lg.QuerySamplesComplete``'s stand-in: the ids and seals go to the host."""
        self._channel.send(w.answered(answers))

    def run(
        self,
        issue: Callable[[list[Any]], None],
        count: int,
        expected_ns: int,
        answer: Callable[[int], Any] | None = None,
    ) -> None:
        """Say the worker is ready (``count`` samples, ``expected_ns`` per call), then answer
        what the host sends until it says the test ended. ``answer``: one sample's answer by
        its index (a batch of one), for a frame of one query, read and answered in place (the
        hot path); ``issue`` answers the rest."""
        channel, frames = self._channel, self._frames
        channel.send(w.frame(b"H", 0, w.HELLO.pack(count, max(1, expected_ns))))
        one, query, reply = frames.one, w.QUERY_FRAME, w.ANSWER_FRAME
        put, seal = channel.put, self.seal
        while True:
            if answer is not None:
                fields = one(query, b"I")
                if fields is not None:
                    put(reply, b"C", 1, fields[2], seal(answer(fields[3])))
                    continue
            kind, _, body = frames.next()
            if kind == b"E":
                return
            if kind == b"P":
                self._channel.send(w.frame(b"P", 0))
                continue
            if len(body) == w.QUERY.size:
                issue([Query(*w.QUERY.unpack(body))])
            else:
                issue([Query(ident, index) for ident, index in w.QUERY.iter_unpack(body)])
