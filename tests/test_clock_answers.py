"""LoadGen's callbacks in a host-timed test (``runners.clock_answers``): a query of a
SingleStream test is sent, answered and completed on LoadGen's own thread, the answer read in
place (the hot path); whatever the worker sends instead, the query is completed once, without
it, and the run's reason says what the worker did."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator

import pytest

from pinbench.evaluator.runners.clock_answers import ASKED_NOT, Answers
from pinbench.worker import clock_ring as r
from pinbench.worker import clock_wire as w
from tests.test_clock_ring import Pair


class Recorder:
    """LoadGen's two names ``Answers`` calls, recording what was completed."""

    def __init__(self) -> None:
        self.completed: list[int] = []

    @staticmethod
    def QuerySampleResponse(ident: int, data: int, size: int) -> int:  # LoadGen's name
        return ident

    def QuerySamplesComplete(self, responses: list[int]) -> None:  # LoadGen's name
        self.completed += responses


class Query:
    def __init__(self, ident: int, index: int) -> None:
        self.id, self.index = ident, index


SEAL = bytes(range(16))


def _right(worker: r.Ring, ident: int) -> None:
    worker.put(w.ANSWER_FRAME, b"C", 1, ident, SEAL)


def _other_id(worker: r.Ring, ident: int) -> None:
    worker.put(w.ANSWER_FRAME, b"C", 1, ident + 1, SEAL)


def _twice_in_one_frame(worker: r.Ring, ident: int) -> None:
    worker.send(w.answered([(ident, SEAL), (ident, SEAL)]))


def _through_send(worker: r.Ring, ident: int) -> None:
    worker.send(w.answered([(ident, SEAL)]))  # the general path's frame: the same bytes


def _a_ping(worker: r.Ring, ident: int) -> None:
    worker.send(w.frame(b"P", 0))


def _gone(worker: r.Ring, ident: int) -> None:
    raise SystemExit  # the worker's ends closed below


WORKERS: dict[str, tuple[Callable[[r.Ring, int], None], str, bool]] = {
    # what the worker does: the run's reason (none: answered), read in place by the host
    "answers in place": (_right, "", True),
    "answers through send": (_through_send, "", True),
    "answers another query": (_other_id, ASKED_NOT, True),
    "answers twice in one frame": (_twice_in_one_frame, ASKED_NOT, False),
    "sends a ping": (_a_ping, "b'P' frame of 0 entries during the test", False),
    "goes away": (_gone, "closed", False),
    "answers across the ring's end": (_right, "", False),
}
ACROSS_THE_END = "answers across the ring's end"


@pytest.fixture
def pair() -> Iterator[Pair]:
    made = Pair()
    yield made
    made.close()


def _to_the_rings_end(pair: Pair, frames: w.Frames) -> None:
    """The worker's ring filled to a few bytes short of its end (one frame of answers the host
    reads): its next answer's frame lies across the end."""
    entries = (r.CAPACITY - w.HEAD.size - 1) // w.ANSWER.size
    pair.worker.send(w.answered([(i, SEAL) for i in range(entries)]))
    assert frames.next()[1] == entries
    assert 0 < r.CAPACITY - (w.HEAD.size + entries * w.ANSWER.size) < w.ANSWER_FRAME.size


@pytest.mark.parametrize("behaviour", WORKERS, ids=list(WORKERS))
def test_a_query_is_completed_once_whatever_the_worker_answers(
    pair: Pair, behaviour: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    act, broken, in_place = WORKERS[behaviour]
    frames = w.Frames(pair.host, b"HPC")
    if behaviour == ACROSS_THE_END:
        _to_the_rings_end(pair, frames)
    answers = Answers(pair.host, frames, inline=True)
    lg = answers._lg = Recorder()
    general: list[int] = []  # the host's reads the general way (``Frames.next``)
    read = frames.next

    def counted() -> w.Frame:
        general.append(1)
        return read()

    monkeypatch.setattr(frames, "next", counted)
    failed: list[BaseException] = []

    def worker() -> None:
        try:
            fields = w.Frames(pair.worker, b"PIE").one(w.QUERY_FRAME, b"I")
            assert fields is not None and fields[2:] == (41, 7)
            act(pair.worker, 41)
        except BaseException as exc:  # gone (``_gone``), or failed: the host's wait ends
            if not isinstance(exc, SystemExit):
                failed.append(exc)
            for fd in pair.worker_ends:
                os.close(fd)
            pair.fds = [fd for fd in pair.fds if fd not in pair.worker_ends]

    side = threading.Thread(target=worker)
    side.start()
    answers.issue([Query(41, 7)])
    side.join(timeout=30)
    assert not failed
    assert lg.completed == [41]  # once, answered or not
    assert (not general) == in_place
    if broken:
        assert broken in answers.broken
        assert answers.samples == 0 and not answers.seals
    else:
        assert answers.broken == ""
        assert answers.samples == 1 and answers.seals == {7: SEAL} and len(answers.calls) == 1
