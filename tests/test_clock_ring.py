"""The host's clock through shared memory (``worker.clock_ring``): frames cross whole, in parts
and around the rings' ends; the worker, who can write anything in the memory, can neither make
the host's mapping fault, nor make it read or write past a ring, nor stall it."""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections.abc import Callable, Iterator

import pytest

from pinbench.worker import clock_ring as r
from pinbench.worker import clock_wire as w

# No skip: both sides run in this process, where Python's lock orders every store, so these
# hold on any Linux machine (``available`` is about two processes on a weaker memory order).


class Pair:
    """A host's and a worker's side over one memory and two pipes, in this process."""

    def __init__(self, spin_ns: int = w.SPIN_NS) -> None:
        self.memory = r.memory()
        to_worker, to_host = os.pipe(), os.pipe()
        self.fds = [*to_worker, *to_host]
        self.host = r.Ring(self.memory, to_host[0], to_worker[1], host=True, spin_ns=spin_ns)
        self.worker = r.Ring(self.memory, to_worker[0], to_host[1], host=False, spin_ns=spin_ns)
        self.worker_ends = (to_worker[0], to_host[1])

    def close(self) -> None:
        self.host.close()
        self.worker.close()
        for fd in [*self.fds, self.memory]:
            with contextlib.suppress(OSError):
                os.close(fd)


@pytest.fixture
def pair() -> Iterator[Pair]:
    made = Pair()
    yield made
    made.close()


def _echo(worker: r.Ring) -> None:
    """The worker's side: each frame of queries answered with one answer a query, its seal the
    query's sample index, until the host says the test ended."""
    frames = w.Frames(worker, b"PIE")
    while True:
        kind, _, body = frames.next()
        if kind == b"E":
            return
        pairs = list(w.QUERY.iter_unpack(body))
        worker.send(w.answered([(i, x.to_bytes(16, "little")) for i, x in pairs]))


@pytest.mark.parametrize("spin_ns", [w.SPIN_NS, 0])
def test_frames_cross_whole_in_parts_and_around_the_rings_end(spin_ns: int) -> None:
    """Small frames past the rings' ends many times over, and one frame larger than a ring (it
    goes in parts as the other side reads), arrive as they were sent, polling or sleeping."""
    made = Pair(spin_ns)
    echo = threading.Thread(target=_echo, args=(made.worker,))
    switching = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)  # two sides that poll in one process take turns at its lock
    echo.start()
    try:
        frames = w.Frames(made.host, b"HPC")
        sizes = [1, 300, 1, 800, 1] * 400 + [r.CAPACITY // w.QUERY.size * 2 + 5, 1, 2]
        sent = 0
        for n in sizes:
            pairs = [(sent + k, (sent + k) % 1_000_003) for k in range(n)]
            sent += n
            made.host.send(w.queries(pairs))
            kind, count, body = frames.next()
            assert (kind, count) == (b"C", n)
            assert list(w.ANSWER.iter_unpack(body)) == [
                (i, x.to_bytes(16, "little")) for i, x in pairs
            ]
        assert sent * w.QUERY.size > 4 * r.CAPACITY  # the rings wrapped around
        made.host.send(w.frame(b"E", 0))
        echo.join(timeout=30)
        assert not echo.is_alive()
    finally:
        sys.setswitchinterval(switching)
        made.close()


def test_one_entry_frames_cross_in_place_and_leave_the_rest_for_next(pair: Pair) -> None:
    """The hot path (``put``, ``one``): a frame of one query is packed and read in place, round
    the ring's end three times over; the frames that lie across its end, and any frame that is
    not one entry of the kind asked for, are left for ``Frames.next``, which reads them whole."""
    host, worker = pair.host, w.Frames(pair.worker, b"PIE")
    sent = 3 * r.CAPACITY // w.QUERY_FRAME.size
    in_place = 0
    for i in range(sent):
        host.put(w.QUERY_FRAME, b"I", 1, i, i % 1000)
        fields = worker.one(w.QUERY_FRAME, b"I")
        if fields is not None:
            in_place += 1
            assert fields == (b"I", 1, i, i % 1000)
        else:
            assert worker.next() == (b"I", 1, w.QUERY.pack(i, i % 1000))
    assert sent - 3 <= in_place < sent  # one frame across the end at each time round
    host.send(w.frame(b"P", 0))
    assert worker.one(w.QUERY_FRAME, b"I") is None
    assert worker.next() == (b"P", 0, b"")
    host.send(w.queries([(1, 2), (3, 4)]))
    assert worker.one(w.QUERY_FRAME, b"I") is None
    assert worker.next() == (b"I", 2, w.QUERY.pack(1, 2) + w.QUERY.pack(3, 4))


def test_the_memory_is_sealed_at_its_size_before_a_worker_gets_it(pair: Pair) -> None:
    """A worker that shrank the memory would make the host's next read of it a SIGBUS: the
    file is sealed, and a host refuses a memory that is not."""
    with pytest.raises(PermissionError):
        os.ftruncate(pair.memory, 0)
    with pytest.raises(PermissionError):
        os.ftruncate(pair.memory, r.SIZE * 2)
    unsealed = os.memfd_create("unsealed")
    os.ftruncate(unsealed, r.SIZE)
    a, b = os.pipe()
    try:
        with pytest.raises(r.RingError, match="not sealed"):
            r.Ring(unsealed, a, b, host=True, spin_ns=0)
    finally:
        for fd in (unsealed, a, b):
            os.close(fd)


@pytest.mark.parametrize(
    ("word", "value", "act", "said"),
    [
        # the worker's tail: more bytes waiting than a ring holds
        (r._TO_HOST[0], r.CAPACITY + 1, "read", f"says {r.CAPACITY + 1} bytes are waiting"),
        # the worker's tail behind what the host has read (wrapped to a huge count)
        (r._TO_HOST[0], 2**64 - 1, "read", "bytes are waiting"),
        # the same, met where a frame is read in place (the hot path)
        (r._TO_HOST[0], r.CAPACITY + 1, "one", f"says {r.CAPACITY + 1} bytes are waiting"),
        # the worker's head past what the host wrote
        (r._TO_WORKER[1], 7, "send", "says it read 7 of 0 bytes"),
        (r._TO_WORKER[1], 7, "put", "says it read 7 of 0 bytes"),
    ],
)
def test_a_position_a_ring_cannot_have_is_refused_naming_it(
    pair: Pair, word: int, value: int, act: str, said: str
) -> None:
    """The host reads the worker's positions and checks them against what its ring can hold
    before it reads or writes a byte by them."""
    words = memoryview(pair.worker._map)[: r.DATA].cast("Q")
    words[word] = value
    words.release()
    acts: dict[str, Callable[[], object]] = {
        "read": w.Frames(pair.host, b"HPC").next,
        "one": lambda: pair.host.one(w.ANSWER_FRAME, b"C"),
        "send": lambda: pair.host.send(w.frame(b"P", 0)),
        "put": lambda: pair.host.put(w.QUERY_FRAME, b"I", 1, 5, 3),
    }
    with pytest.raises(w.WireError, match=said):
        acts[act]()


def test_a_worker_that_has_gone_ends_the_hosts_wait(pair: Pair) -> None:
    """Its ends of the pipes closed (it exited): the host's wait for a frame ends, saying so."""
    for fd in pair.worker_ends:
        os.close(fd)
    pair.fds = [fd for fd in pair.fds if fd not in pair.worker_ends]
    with pytest.raises(w.WireError, match="closed"):
        w.Frames(pair.host, b"HPC").next()


def test_a_worker_that_never_reads_its_wake_ups_cannot_stall_the_host(pair: Pair) -> None:
    """A worker that says it sleeps and never reads its pipe: the host's wake-ups fill the
    pipe, and its sends go on (a full pipe already holds a wake-up)."""
    words = memoryview(pair.worker._map)[: r.DATA].cast("Q")
    words[r._WORKER_WAITS] = 1
    words.release()
    done = threading.Event()

    def send() -> None:
        for _ in range(100_000):  # 100,000 wake-ups, more than a pipe holds; 500 KB of frames
            pair.host.send(w.frame(b"P", 0))
        done.set()

    sender = threading.Thread(target=send, daemon=True)
    sender.start()
    sender.join(timeout=60)
    assert done.is_set()


def test_a_wake_up_to_a_worker_that_closed_its_pipe_is_not_the_hosts_error(pair: Pair) -> None:
    """The worker says it sleeps and closes the pipe its wake-ups come through: the host's
    sends go on (the worker's end is read as the end where the host waits, not here)."""
    words = memoryview(pair.worker._map)[: r.DATA].cast("Q")
    words[r._WORKER_WAITS] = 1
    words.release()
    os.close(pair.worker_ends[0])
    pair.fds.remove(pair.worker_ends[0])
    for _ in range(3):
        pair.host.send(w.frame(b"P", 0))


def test_the_host_moves_off_the_worker_s_cpu_and_the_worker_never_moves(
    pair: Pair, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two sides on one CPU would both sleep (``_apart``): the host's thread moves to another
    CPU it may run on before it polls, its set of CPUs as it was after; the worker's side,
    on the host's CPU, sleeps and does not move (only one side moves: they never chase each
    other)."""
    allowed = os.sched_getaffinity(0)
    calls: list[set[int]] = []
    real = os.sched_setaffinity

    def recorded(pid: int, cpus: set[int]) -> None:
        calls.append(set(cpus))
        real(pid, cpus)

    monkeypatch.setattr(os, "sched_setaffinity", recorded)
    words = memoryview(pair.worker._map)[: r.DATA].cast("Q")
    read_cpu = pair.host._cpu
    assert read_cpu is not None
    here = read_cpu()
    first = [here]  # the host's first reading is ``here`` whatever moved it since
    pair.host._cpu = lambda: first.pop() if first else read_cpu()
    words[r._WORKER_CPU] = here + 1  # the worker last waited on the host's CPU
    apart = pair.host._apart()
    assert os.sched_getaffinity(0) == allowed
    if len(allowed) > 1:
        assert calls == [allowed - {here}, allowed]
        assert apart and words[r._HOST_CPU] - 1 in allowed - {here}
    else:  # nowhere to go: the host sleeps, as a side kept to one CPU does
        assert not apart and not calls
    calls.clear()
    pair.worker._cpu = lambda: here
    words[r._HOST_CPU] = here + 1  # the host last waited on the worker's CPU
    assert not pair.worker._apart()
    assert not calls
    words.release()
