"""The host's clock's frames (``clock_wire``) through shared memory: two rings, one each way,
in a sealed memory file the host makes and the worker inherits (or receives over its socket).
A side that waits polls its ring for ``SPIN_NS``, then says so in the memory and sleeps on its
pipe (or socket), which the other side writes one byte to once it has published; that pipe's
end is also how either side learns the other has gone.

A query's round trip through the rings is a few memory writes and reads on each side (about
1 µs on this project's 2-core machine, quiet or beside two busy loops, where the pipes' took
9-12 µs, and one woken from a blocking read 80 µs: docs/benchmarks.md §34).

The worker can write anything anywhere in the memory, at any time. The host therefore keeps
its own positions (its ring's tail, the other ring's head) and never reads them back; reads
the worker's positions once per use and refuses any that do not fit the ring; copies a
frame's bytes out before it parses them; and writes its wake-ups without waiting (a worker
that never reads its pipe cannot stall the host). The file is sealed against growing and
shrinking before the worker gets it: a worker cannot make the host's mapping fault.

Only where the processor keeps stores in order (x86-64): Python has no memory barrier, and a
ring read on a weaker order could see a position before the bytes it covers. Elsewhere the
frames go through the pipes themselves (``clock_wire.PipeChannel``).
"""

from __future__ import annotations

import contextlib
import mmap
import os
import platform
import select
import struct
import time
from collections.abc import Callable, Sequence
from typing import Any

from pinbench.worker.clock_wire import HEAD, Frame, PipeChannel, WireError

LINE = 8  # words between two positions: each on a cache line of its own (64 bytes)
CAPACITY = 1 << 20
"""Bytes each way. A frame larger than a ring goes through in parts."""
DATA = 4096
"""Where the rings' bytes begin; the positions and flags are in the first page."""
SIZE = DATA + 2 * CAPACITY
# word indexes: (tail, head) of each ring, then each side's "I sleep on my pipe" flag
_TO_WORKER, _TO_HOST = (0, LINE), (2 * LINE, 3 * LINE)
_HOST_WAITS, _WORKER_WAITS = 4 * LINE, 5 * LINE
_HOST_CPU, _WORKER_CPU = 6 * LINE, 7 * LINE  # the CPU each side last waited on, plus one
FIRST_WAIT_MS = 1
"""A sleeping side looks again after this long, then after twice as long at each wait that
timed out, up to ``LAST_WAIT_MS``, and after this long again once woken: a wake-up lost between
its flag and the other's publishing (no barrier orders them) costs at most the wait it fell in
(the first, where the other side answers within it)."""
LAST_WAIT_MS = 100
POLLS_PER_LOOK = 16
"""Reads of the other side's position between two readings of the clock while a side polls."""
_POLLS = range(POLLS_PER_LOOK)


class RingError(WireError):
    """The other side wrote a position its ring cannot have, or went away."""


def available() -> bool:
    """Whether this machine takes the rings (``memfd_create`` and a processor that keeps
    stores in order)."""
    return hasattr(os, "memfd_create") and platform.machine().lower() in {"x86_64", "amd64"}


def memory() -> int:
    """A new memory file for one link's rings, zeroed and sealed at its size (its descriptor
    is not inherited unless passed)."""
    import fcntl

    fd = os.memfd_create("pinbench-clock", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    try:
        os.ftruncate(fd, SIZE)
        fcntl.fcntl(
            fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL
        )
    except BaseException:
        os.close(fd)
        raise
    return fd


def _sealed(fd: int) -> bool:
    import fcntl

    try:
        seals = fcntl.fcntl(fd, fcntl.F_GET_SEALS)
    except OSError:
        return False
    need = fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW
    return seals & need == need and os.fstat(fd).st_size == SIZE


class Ring:
    """One side's two rings over the memory file ``memory_fd``: it writes frames to one and
    reads the other's; it sleeps on ``wait_fd`` and wakes the other side through ``wake_fd``.
    ``host``: this is the host's side (it writes queries); a host checks the file is sealed
    before it maps it."""

    def __init__(self, memory_fd: int, wait_fd: int, wake_fd: int, *, host: bool, spin_ns: int):
        if host and not _sealed(memory_fd):
            raise RingError("the clock's memory is not sealed at its size")
        self._map = mmap.mmap(memory_fd, SIZE)
        self._bytes = memoryview(self._map)
        self._words = self._bytes[:DATA].cast("Q")
        self._wait_fd, self._wake_fd = wait_fd, wake_fd
        self.spin_ns = spin_ns
        out, inn = (_TO_WORKER, _TO_HOST) if host else (_TO_HOST, _TO_WORKER)
        self._out_tail, self._out_head = out
        self._in_tail, self._in_head = inn
        self._out_data = DATA if host else DATA + CAPACITY
        self._in_data = DATA + CAPACITY if host else DATA
        self._out_end, self._in_end = self._out_data + CAPACITY, self._in_data + CAPACITY
        ours = (_HOST_WAITS, _WORKER_WAITS)
        self._mine, self._theirs = ours if host else ours[::-1]
        cpus = (_HOST_CPU, _WORKER_CPU)
        self._my_cpu, self._their_cpu = cpus if host else cpus[::-1]
        self._cpu = _cpu_reader()
        self._moves = host
        """Whether this side moves off the other's CPU before it polls (``_move_from``): the
        host's only, so that the two never chase each other."""
        self._tail = 0  # what this side has written, kept here (never read back)
        self._head = 0  # what this side has read, kept here
        os.set_blocking(wait_fd, False)
        os.set_blocking(wake_fd, False)  # a wake-up is never waited for (``_wake``)

    # --- reading ---------------------------------------------------------------------------

    def frame(self, body_size: Callable[[bytes, int], int]) -> Frame | None:
        """The next frame whole, where its head and body lie in one piece of the ring and have
        all arrived (the hot path: ``Frames.next``); None where they do not (``read`` then
        takes its bytes) or the other side has gone. ``body_size`` refuses a frame by its
        head."""
        arrived = self._arrived()
        if arrived is None:
            return None
        have, start = arrived
        if have < HEAD.size or start + HEAD.size > self._in_end:
            return None
        kind, count = HEAD.unpack_from(self._bytes, start)
        size = body_size(kind, count)
        whole = HEAD.size + size
        if whole > have or start + whole > self._in_end:
            return None
        body = bytes(self._bytes[start + HEAD.size : start + whole]) if size else b""
        self._head += whole
        self._words[self._in_head] = self._head  # a writer waiting for room looks again itself
        return kind, count, body

    def one(self, shape: struct.Struct, kind: bytes) -> tuple[Any, ...] | None:
        """The next frame's fields where it is one entry of ``kind``, whole in one piece of the
        ring (``shape``: the whole frame's, its head included: ``clock_wire.QUERY_FRAME``,
        ``ANSWER_FRAME``), read in place (the hot path: ``Frames.one``); None where the next
        frame is anything else (left for ``frame`` or ``read``) or the other side has gone."""
        arrived = self._arrived()
        if arrived is None:
            return None
        (have, start), size = arrived, shape.size
        if have < size or start + size > self._in_end:
            return None
        fields = shape.unpack_from(self._bytes, start)
        if fields[0] != kind or fields[1] != 1:
            return None
        self._head += size
        self._words[self._in_head] = self._head  # a writer waiting for room looks again itself
        return fields

    def read(self, size: int) -> bytes:
        """At least one byte and at most ``size``, once the other side has written them; b""
        once it has gone."""
        arrived = self._arrived()
        if arrived is None:
            return b""
        n = min(arrived[0], size)
        start = self._head % CAPACITY
        first = min(n, CAPACITY - start)
        base = self._in_data
        out = bytes(self._bytes[base + start : base + start + first])
        if first < n:
            out += bytes(self._bytes[base : base + n - first])
        self._head += n
        self._words[self._in_head] = self._head  # a writer waiting for room looks again itself
        return out

    def _arrived(self) -> tuple[int, int] | None:
        """How many bytes the other side has written past what this side has read, and where
        in the memory they begin, once there are any (polled, then slept for: ``_moved``);
        None once the other side has gone. A count the ring cannot hold is refused."""
        at, head = self._in_tail, self._head
        tail = self._words[at]
        if tail == head:
            moved = self._moved(at, head)
            if moved is None:
                return None
            tail = moved
        have = tail - head
        if not 0 < have <= CAPACITY:
            raise RingError(f"the other side's ring says {have} bytes are waiting")
        return have, self._in_data + head % CAPACITY

    # --- writing ---------------------------------------------------------------------------

    def send(self, data: bytes) -> None:
        """All of ``data``, in parts where the ring has less room; waits for room."""
        n = len(data)
        start = self._out_data + self._tail % CAPACITY
        if start + n <= self._out_end and n <= self._room():  # the hot path: in one piece
            self._bytes[start : start + n] = data
            self._published(n)
            return
        view = memoryview(data)
        while view:
            room = self._room()
            if not room:
                if not self._await(lambda: self._room() > 0, quiet=True):
                    raise RingError("the other side went away")
                continue
            n = min(room, len(view))
            start = self._tail % CAPACITY
            first = min(n, CAPACITY - start)
            base = self._out_data
            self._bytes[base + start : base + start + first] = view[:first]
            if first < n:
                self._bytes[base : base + n - first] = view[first:n]
            self._published(n)
            view = view[n:]

    def put(self, shape: struct.Struct, *fields: Any) -> None:
        """One frame of ``fields`` packed in place where it fits in one piece of the ring (the
        hot path's query and answer); else through ``send``."""
        size = shape.size
        start = self._out_data + self._tail % CAPACITY
        if start + size > self._out_end or size > self._room():
            self.send(shape.pack(*fields))
            return
        shape.pack_into(self._bytes, start, *fields)
        self._published(size)

    def _published(self, size: int) -> None:
        """``size`` more bytes written at the tail: the tail moved past them, the other side
        woken if it sleeps."""
        self._tail += size
        words = self._words
        words[self._out_tail] = self._tail  # after the bytes: x86-64 keeps stores in order
        if words[self._theirs]:
            self._wake()

    def _room(self) -> int:
        head = self._words[self._out_head]
        used = self._tail - head
        if not 0 <= used <= CAPACITY:
            raise RingError(f"the other side's ring says it read {head} of {self._tail} bytes")
        return CAPACITY - used

    # --- waiting and waking ----------------------------------------------------------------

    def _wake(self) -> None:
        """One byte to the other side if it sleeps (never waited for: a full pipe already
        holds a wake-up)."""
        if self._words[self._theirs]:
            with contextlib.suppress(OSError):  # gone: its end is read as the end, not here
                os.write(self._wake_fd, b"w")

    def _moved(self, at: int, was: int) -> int | None:
        """The word at ``at`` once it is no longer ``was`` (``_await`` for the hot path: its
        poll reads the clock once every ``POLLS_PER_LOOK`` reads of the word); None once the
        other side has gone."""
        words = self._words
        if self.spin_ns and self._apart():
            clock = time.perf_counter_ns
            end = clock() + self.spin_ns
            polls = _POLLS
            while True:
                for _ in polls:
                    now = words[at]
                    if now != was:
                        return now
                if clock() > end:
                    break
        if not self._await(lambda: words[at] != was, spin=False):
            return None
        return int(words[at])

    def _await(self, check: Callable[[], bool], quiet: bool = False, spin: bool = True) -> bool:
        """Until ``check()``: polled for ``spin_ns``, then slept on the pipe (the flag set
        first, the condition looked at again after). False once the other side has gone.
        ``quiet``: a writer waiting for room sleeps without the flag and without taking the
        pipe's bytes (which are the reader's wake-ups), looking again each millisecond.
        ``spin``: False where the caller has polled already (``_moved``)."""
        if spin and self.spin_ns and self._apart():
            end = time.perf_counter_ns() + self.spin_ns
            clock = time.perf_counter_ns
            while not check():
                if clock() > end:
                    break
            else:
                return True
        words, wait = self._words, FIRST_WAIT_MS
        while True:
            if quiet:
                if check():
                    return True
                if self._gone():
                    return False
                time.sleep(FIRST_WAIT_MS / 1000)
                continue
            words[self._mine] = 1
            try:
                if check():
                    return True
                poller = select.poll()
                poller.register(self._wait_fd, select.POLLIN)
                if poller.poll(wait):
                    try:
                        got = os.read(self._wait_fd, 4096)
                    except BlockingIOError:
                        got = b"w"
                    if not got:
                        return False
                    wait = FIRST_WAIT_MS  # woken: the next wait is short again
                else:
                    wait = min(wait * 2, LAST_WAIT_MS)
            finally:
                words[self._mine] = 0

    def _apart(self) -> bool:
        """Whether the other side last waited on another CPU than this one's (or either is not
        known): two sides that poll on one CPU take turns at its slices, a round trip then
        costing both polls (460 µs here, where apart it cost 4 µs), so a side on the other's
        CPU sleeps at once and lets it run. Where each waits is written as it begins to."""
        if self._cpu is None:
            return True
        here = self._cpu() + 1
        words = self._words
        if here == words[self._their_cpu] and self._moves:
            here = self._move_from(here - 1) + 1
        words[self._my_cpu] = here
        return bool(here != words[self._their_cpu])

    def _move_from(self, cpu: int) -> int:
        """The host's side, about to wait on the CPU where the worker last waited: this thread
        moved to another CPU it may run on (its allowed CPUs set without ``cpu``, then set back
        at once, which moves it no further), so that both sides poll, each on its own CPU,
        rather than both sleeping. Where the two sides share a CPU beside other work, both
        slept on their pipes and a query crossed for 20-50 µs, where apart it crossed for 4-5
        (docs/benchmarks.md §38). The CPU it is on after."""
        assert self._cpu is not None  # only where the CPU can be read
        try:
            allowed = os.sched_getaffinity(0)
            others = allowed - {cpu}
            if not others:
                return cpu
            os.sched_setaffinity(0, others)
        except OSError:  # a CPU set that changed under the thread: left where it is
            return cpu
        try:
            return int(self._cpu())  # read where it cannot be ``cpu``
        finally:
            os.sched_setaffinity(0, allowed)

    def _gone(self) -> bool:
        poller = select.poll()
        poller.register(self._wait_fd, 0)
        return any(ev & (select.POLLHUP | select.POLLERR) for _, ev in poller.poll(0))

    def close(self) -> None:
        self._words.release()
        self._bytes.release()
        with contextlib.suppress(BufferError):
            self._map.close()


def channel(fds: Sequence[int], *, host: bool, spin_ns: int) -> Ring | PipeChannel:
    """The channel over a link's descriptors: (read, write) pipes or one socket twice, the
    frames through them; or (read, write, memory), the frames through the rings and the
    descriptors for waking alone. A process kept to one CPU does not poll: the other side
    could not run while it did."""
    if len(os.sched_getaffinity(0)) < 2:
        spin_ns = 0
    if len(fds) == 3:
        return Ring(fds[2], fds[0], fds[1], host=host, spin_ns=spin_ns)
    return PipeChannel(fds[0], fds[1], spin_ns)


def _cpu_reader() -> Callable[[], int] | None:
    """The C library's ``sched_getcpu`` (the CPU the calling thread is on, in about 150 ns), or
    None where there is none."""
    import ctypes

    try:
        read = ctypes.CDLL(None, use_errno=True).sched_getcpu
    except (OSError, AttributeError):
        return None
    read.restype = ctypes.c_int
    read.argtypes = []
    return read if read() >= 0 else None
