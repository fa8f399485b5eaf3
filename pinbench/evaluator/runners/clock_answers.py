"""LoadGen's callbacks in a host-timed test (``host_clock``): each query sent to the worker
over the link's channel, each answer checked (a query asked, answered once), completed in
LoadGen, timed, and its seal kept. A worker that breaks the protocol, or leaves, has every
query still waiting completed without it (LoadGen ends its test) and the reason kept
(``broken``): the run fails with it."""

from __future__ import annotations

import threading
import time
from typing import Any

from pinbench.worker import clock_wire as w
from pinbench.worker.clock_ring import Ring

ASKED_NOT = "the worker answered a query it was not asked (or twice)"


class Answers:
    """One test's queries and answers over ``channel`` and its ``frames``. ``inline``: LoadGen's
    own thread waits for each query's answers (``issue``); else a reader thread takes them
    (``read``: Server's overlap)."""

    def __init__(self, channel: Ring | w.PipeChannel, frames: w.Frames, *, inline: bool) -> None:
        import mlperf_loadgen

        self._lg: Any = mlperf_loadgen  # imported once, off LoadGen's hot path
        self._channel, self._frames = channel, frames
        self.inline = inline
        self._guard = threading.Lock()
        self._waiting: dict[int, tuple[int, int]] = {}  # query id -> (issued when, sample)
        self.seals: dict[int, bytes] = {}
        """Each sample's answer, sealed by the worker (``answer_seal``): the first it gave."""
        self.unsteady: set[int] = set()
        """The samples the worker answered twice, differently."""
        self.broken = ""
        """Why the worker broke the test (or left mid-test); empty while it has not."""
        self.ended = False
        """The clock's test has ended (set by ``HostClock``): a reader then ends quietly."""
        self.calls: list[int] = []
        """Each model call's time: from the later of its first query's issue and the previous
        answer to its answer's arrival (ns)."""
        self.samples = 0
        self.first_issue = self.last_answer = self._previous = 0

    def issue(self, queries: list[Any]) -> None:
        if self.inline and len(queries) == 1 and not self.broken:
            self._issue_one(queries[0])
            return
        now = time.perf_counter_ns()
        with self._guard:  # decided under the lock: ``_break`` completes what waits, once
            taken = not self.broken
            if taken:
                if not self.first_issue:
                    self.first_issue = now
                for q in queries:
                    self._waiting[q.id] = (now, q.index)
        if not taken:
            lg = self._lg
            lg.QuerySamplesComplete([lg.QuerySampleResponse(q.id, 0, 0) for q in queries])
            return
        try:
            self._channel.send(w.queries([(q.id, q.index) for q in queries]))
        except OSError as exc:
            self._break(f"the worker's pipe: {exc.strerror or exc}")
            return
        except w.WireError as exc:
            self._break(str(exc))
            return
        if self.inline:  # LoadGen's thread takes the answers: nothing else is outstanding
            try:
                while self._waiting:
                    self._take()
            except BaseException as exc:  # never into LoadGen: the test ends, the run fails
                self._break(str(exc) or type(exc).__name__)

    def _issue_one(self, query: Any) -> None:
        """The hot path of a test whose answers LoadGen's own thread takes (``_inline``): one
        query, sent before anything is noted of it, and its answer's completion made ready
        while the worker answers, so that the crossing holds only what must be on it (the
        query packed into the ring, the answer read and checked, the completion). Only this
        thread reads or writes ``_waiting`` here: no other is outstanding."""
        now = time.perf_counter_ns()
        ident, index = query.id, query.index
        waiting = self._waiting
        try:
            self._channel.put(w.QUERY_FRAME, b"I", 1, ident, index)
        except OSError as exc:
            waiting[ident] = (now, index)
            self._break(f"the worker's pipe: {exc.strerror or exc}")
            return
        except w.WireError as exc:
            waiting[ident] = (now, index)
            self._break(str(exc))
            return
        waiting[ident] = (now, index)
        if not self.first_issue:
            self.first_issue = now
        lg = self._lg
        done = [lg.QuerySampleResponse(ident, 0, 0)]
        try:
            fields = self._frames.one(w.ANSWER_FRAME, b"C")
            arrived = time.perf_counter_ns()
            if fields is None:  # anything but one answer in place: the general path
                while waiting:
                    self._take()
                return
            if fields[2] != ident:
                raise w.WireError(ASKED_NOT)
            del waiting[ident]
            lg.QuerySamplesComplete(done)
            self._note(now, 1, arrived)
            if self.seals.setdefault(index, fields[3]) != fields[3]:
                self.unsteady.add(index)
        except BaseException as exc:  # never into LoadGen: the test ends, the run fails
            self._break(str(exc) or type(exc).__name__)

    def read(self) -> None:
        """Server's answers, on a thread of their own (its queries overlap)."""
        try:
            while True:
                self._take()
        except BaseException as exc:  # a reader that ends unbroken leaves LoadGen waiting
            if not (self.ended and not self._waiting):
                self._break(str(exc) or type(exc).__name__)

    def _take(self) -> None:
        """One frame of answers: checked, timed, completed in LoadGen, their seals kept."""
        fields = self._frames.one(w.ANSWER_FRAME, b"C")
        if fields is not None:  # the hot path: one answer, read in place
            self._answered([(fields[2], fields[3])], time.perf_counter_ns())
            return
        kind, n, body = self._frames.next()
        arrived = time.perf_counter_ns()
        if kind != b"C" or n == 0:
            raise w.WireError(f"a {kind!r} frame of {n} entries during the test")
        self._answered(list(w.ANSWER.iter_unpack(body)), arrived)

    def _answered(self, answers: list[tuple[int, bytes]], arrived: int) -> None:
        """One model call's answers (each its query's id and seal), arrived at ``arrived``:
        all checked before any is taken (every query still waiting, once; ``_break``
        completes the rest), then completed in LoadGen, timed and their seals kept."""
        lg, seals = self._lg, self.seals
        with self._guard:
            ids = [i for i, _ in answers]
            asked = len(set(ids)) == len(ids) and all(i in self._waiting for i in ids)
            issued = [self._waiting.pop(i) for i in ids] if asked else []
        if not asked:
            raise w.WireError(ASKED_NOT)
        lg.QuerySamplesComplete([lg.QuerySampleResponse(i, 0, 0) for i in ids])
        self._note(min(when for when, _ in issued), len(ids), arrived)
        for (_, index), (_, sealed) in zip(issued, answers, strict=True):
            if seals.setdefault(index, sealed) != sealed:
                self.unsteady.add(index)

    def _note(self, issued: int, samples: int, arrived: int) -> None:
        """A model call's time: from the later of its first query's issue and the previous
        answer to its answer's arrival."""
        self.calls.append(arrived - max(issued, self._previous))
        self._previous = self.last_answer = arrived
        self.samples += samples

    def _break(self, reason: str) -> None:
        """Every query waiting is answered without the worker (LoadGen ends its test) and the
        run fails with ``reason``."""
        lg = self._lg
        with self._guard:
            self.broken = self.broken or reason
            waiting = list(self._waiting)
            self._waiting.clear()
        if waiting:
            lg.QuerySamplesComplete([lg.QuerySampleResponse(i, 0, 0) for i in waiting])
