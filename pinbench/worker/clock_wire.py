"""The frames a sandboxed worker and the host exchange when the host keeps the clock
(``runners.host_clock``; the worker's side is ``remote_test``): LoadGen runs in the host, the
model answers across shared memory (``clock_ring``) or two pipes (``PipeChannel``).

Every frame is a kind byte and a count (``<cI``), then its body:

- ``H`` (worker → host, once): the samples it holds and its expected latency (``<QQ``), sent
  when its model is loaded and warmed up;
- ``P`` (host → worker, answered with ``P``): a ping, to measure the crossing;
- ``I`` (host → worker): ``n`` queries, each its id and sample index (``<QI``);
- ``C`` (worker → host): ``n`` samples answered, each its query's id and its answer's seal
  (``<Q16s``: ``answer_seal``), one frame per model call;
- ``E`` (host → worker): the test has ended.
"""

from __future__ import annotations

import os
import select
import struct
import time
from collections.abc import Callable
from typing import Any, ClassVar, Protocol

HEAD = struct.Struct("<cI")
HELLO = struct.Struct("<QQ")
QUERY = struct.Struct("<QI")
ANSWER = struct.Struct("<Q16s")
QUERY_FRAME = struct.Struct("<cIQI")
"""A frame of one query (the hot path's: SingleStream's, Server's)."""
ANSWER_FRAME = struct.Struct("<cIQ16s")
"""A frame of one answer."""

Frame = tuple[bytes, int, bytes]
"""A frame's kind, count and body."""

SPIN_NS = 200_000
"""How long a side polls for the other's next frame before it waits (``Frames``)."""

MAX_FRAME = 1 << 22
"""The most entries one frame may carry (a reader refuses a larger count before reading)."""


class WireError(Exception):
    """The other side sent what the protocol does not allow, or went away."""


def frame(kind: bytes, count: int, body: bytes = b"") -> bytes:
    return HEAD.pack(kind, count) + body


def queries(pairs: list[tuple[int, int]]) -> bytes:
    if len(pairs) == 1:
        return QUERY_FRAME.pack(b"I", 1, *pairs[0])
    return frame(b"I", len(pairs), b"".join(QUERY.pack(i, x) for i, x in pairs))


def answered(answers: list[tuple[int, bytes]]) -> bytes:
    if len(answers) == 1:
        return ANSWER_FRAME.pack(b"C", 1, *answers[0])
    return frame(b"C", len(answers), b"".join(ANSWER.pack(i, s) for i, s in answers))


def send(fd: int, data: bytes) -> None:
    """All of ``data`` to ``fd``; a socket whose reads poll (``Frames``) writes without waiting
    too, so a full buffer is waited out here."""
    view = memoryview(data)
    while view:
        try:
            view = view[os.write(fd, view) :]
        except BlockingIOError:
            wait_for(fd, select.POLLOUT)


def wait_for(fd: int, events: int, timeout_ms: int | None = None) -> bool:
    """Wait until ``fd`` is ready for ``events`` (``select.POLLIN``/``POLLOUT``); whether it is.
    ``poll``, not ``select``: a descriptor numbered 1024 or more is refused by ``select``."""
    poller = select.poll()
    poller.register(fd, events)
    return bool(poller.poll(timeout_ms))


class Channel(Protocol):
    """Where frames' bytes go each way: ``PipeChannel``, or shared memory
    (``clock_ring.Ring``)."""

    def read(self, size: int) -> bytes:
        """At least one byte and at most ``size``; b"" once the other side has gone."""
        ...

    def send(self, data: bytes) -> None:
        """All of ``data``."""
        ...

    def put(self, shape: struct.Struct, *fields: Any) -> None:
        """One frame of ``fields`` packed by ``shape``."""
        ...


class PipeChannel:
    """The frames through the descriptors themselves: ``read_fd`` polled for ``spin_ns`` before
    each wait (a process woken from a blocking read took 80 µs a round trip where one polling
    took 4.5 µs), written to ``write_fd`` (the same socket for both, a container's)."""

    def __init__(self, read_fd: int, write_fd: int, spin_ns: int = 0) -> None:
        self._fd, self._write = read_fd, write_fd
        self._spin_ns = spin_ns
        if spin_ns:
            os.set_blocking(read_fd, False)

    def read(self, size: int) -> bytes:
        if not self._spin_ns:
            return os.read(self._fd, size)
        end = time.perf_counter_ns() + self._spin_ns
        while True:
            try:
                return os.read(self._fd, size)
            except BlockingIOError:
                if time.perf_counter_ns() > end:
                    wait_for(self._fd, select.POLLIN)

    def send(self, data: bytes) -> None:
        send(self._write, data)

    def put(self, shape: struct.Struct, *fields: Any) -> None:
        send(self._write, shape.pack(*fields))


class Frames:
    """Frames read from ``channel``: ``next`` returns a kind, a count and the body's bytes."""

    SIZES: ClassVar[dict[bytes, int]] = {
        b"H": HELLO.size,
        b"P": 0,
        b"I": QUERY.size,
        b"C": ANSWER.size,
        b"E": 0,
    }
    FIXED: ClassVar[frozenset[bytes]] = frozenset({b"H", b"P", b"E"})

    def __init__(self, channel: Channel, kinds: bytes) -> None:
        self._read = channel.read
        self._kinds = {kinds[i : i + 1] for i in range(len(kinds))}
        self._buffer = bytearray()
        self._direct: Callable[[Callable[[bytes, int], int]], Frame | None] | None = getattr(
            channel, "frame", None
        )
        """A channel that parses a whole frame where it lies in one piece (``clock_ring``)."""
        self._one: Callable[[struct.Struct, bytes], tuple[Any, ...] | None] | None = getattr(
            channel, "one", None
        )

    def _exactly(self, size: int) -> bytes:
        while len(self._buffer) < size:
            chunk = self._read(max(65536, size - len(self._buffer)))
            if not chunk:
                raise WireError("the other side closed its pipe")
            self._buffer += chunk
        out = bytes(self._buffer[:size])
        del self._buffer[:size]
        return out

    def body_size(self, kind: bytes, count: int) -> int:
        """The size of a frame's body after its head, or why the frame is refused (before its
        body is read)."""
        if kind not in self._kinds:
            raise WireError(f"a frame of kind {kind!r} where {sorted(self._kinds)} are allowed")
        if kind in self.FIXED:
            return self.SIZES[kind]
        if count > MAX_FRAME:
            raise WireError(f"a frame of {count} entries (at most {MAX_FRAME})")
        return count * self.SIZES[kind]

    def one(self, shape: struct.Struct, kind: bytes) -> tuple[Any, ...] | None:
        """The next frame's fields where it is one entry of ``kind`` (``shape``: the whole
        frame's) and the channel reads it in place (the hot path: one query, one answer); None
        otherwise, the frame left for ``next``."""
        if self._one is None or self._buffer:
            return None
        return self._one(shape, kind)

    def next(self) -> Frame:
        if self._direct is not None and not self._buffer:
            whole = self._direct(self.body_size)
            if whole is not None:
                return whole
        kind, count = HEAD.unpack(self._exactly(HEAD.size))
        return kind, count, self._exactly(self.body_size(kind, count))


def fits(body: Any) -> bool:
    """Whether the host can keep the clock of a lockfile's run (its ``LockBody``): one model's
    LoadGen test, or one chain's (its stages and the code between them answer each query as
    one system); a generation's, an operator's or a training run's keep LoadGen beside the
    model (docs/security.md)."""
    return (
        body.model is not None
        and body.request.generation is None
        and body.operator is None
        and body.training is None
    )
