"""The clock is the host's (issue 71, item 2; decision 293): for a run whose system under test
carries Python code (its processing code, a builder, a pickle), LoadGen runs here, in the
process that records, and the sandboxed worker answers its queries through shared memory
(``clock_ring``) or two pipes (``clock_wire``; the worker's side is ``remote_test``): the code
cannot reach LoadGen's timer, its log or its reading of the machine.

The host records what it measured: LoadGen's figures from its own log; the machine's
contention with the worker's processes counted as the run's own; the energy its counters
read around the test; and, per model call, the time from the later of its queries' issue and
the previous answer to the answer's arrival (``framework_*``, the crossing included). Before
the test it measures the crossing itself: the median round trip of ``PINGS`` empty frames
(``details.clock.crossing_ns``). Whatever the worker sent under those names is dropped and
named (``details.dropped_metrics``).
"""

from __future__ import annotations

import contextlib
import statistics
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pinbench.errors import UserError
from pinbench.evaluator.runners.clock_answers import Answers
from pinbench.evaluator.runners.host_figures import LATENCIES
from pinbench.registry.request import Scenario
from pinbench.worker import clock_wire as w
from pinbench.worker.clock_ring import Ring, channel
from pinbench.worker.job import Evidence
from pinbench.worker.stop import Stop

if TYPE_CHECKING:
    from pinbench.evaluator.runners.clock_link import PipeLink, SocketLink
    from pinbench.registry.lockfile import Lockfile

PINGS = 200
"""Round trips measured before the test (the crossing's cost)."""
EXPECTED_MAX_NS = 600 * 10**9
"""The most a worker may say one call takes (LoadGen plans its queries from it)."""


class ClockBroken(UserError):
    """The worker broke the host's test: it answered what it was not asked, or left mid-test."""

    def __init__(self, *, reason: str) -> None:
        super().__init__(f"the host's timed test failed: {reason}")
        self.reason = reason


class HostClock:
    """One host-timed test over ``link`` (``clock_link``: its pipes' worker ends go to the
    worker, ``JobFile.clock``; or its socket, ``JobFile.clock_socket``), ``start`` once the
    worker is started, ``apply`` once it has ended and its results are read."""

    def __init__(
        self,
        scenario: Scenario,
        batch_size: int,
        samples: int | None,
        log_dir: Path,
        stop: Stop,
        link: PipeLink | SocketLink,
        unique: bool = False,
    ) -> None:
        self._scenario, self._batch, self._declared = scenario, batch_size, samples
        self._log_dir, self._stop = log_dir, stop
        self.link = link
        self.unique = unique
        """The test is TEST04's unique test (``audits.unique``), not the run's own."""
        self._gone = threading.Event()  # the worker has ended: a link waiting for it gives up
        self._channel: Ring | w.PipeChannel | None = None
        self._frames: w.Frames | None = None
        self._answers: Answers | None = None  # LoadGen's callbacks, once the link connected
        self._broken = ""  # before the test: the worker's hello or pings broke the protocol
        self._pid = 0
        self._closed = False
        self._link_left = False  # close() left the link to the thread, still in its test
        self._ending = threading.Lock()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._inline = scenario.name != "Server"
        """Whether LoadGen's own thread waits for each query's answers (``Answers.issue``):
        where it issues the next query only once the last is answered (SingleStream,
        MultiStream, and Offline's one query), no reader thread hands them over (a handover of
        Python's lock between two threads cost a query tens of µs here); Server's overlap."""
        self._tested: dict[str, Any] | None = None
        self._failed: BaseException | None = None

    @property
    def seals(self) -> dict[int, bytes]:
        """Each sample's answer, sealed by the worker (``answer_seal``): the first it gave."""
        return self._answers.seals if self._answers is not None else {}

    @property
    def unsteady(self) -> set[int]:
        """The samples the worker answered twice, differently."""
        return self._answers.unsteady if self._answers is not None else set()

    def _reason(self) -> str:
        """Why the worker broke the test (or left mid-test); empty where it did not."""
        return self._broken or (self._answers.broken if self._answers is not None else "")

    def worker_fds(self) -> tuple[int, ...]:
        """The pipes' descriptors the worker inherits (none: it connects to a socket)."""
        return self.link.worker_fds()

    def start(self, pid: int) -> None:
        """The worker (process ``pid``, its sandbox's or container's first process) has
        started."""
        self._pid = pid
        self.link.started(pid)
        self._thread.start()

    def close(self) -> None:
        """After the worker ended: the thread's end is waited for, the link closed (once); a
        thread still in its test then closes the link itself as it ends, and sends nothing more
        (its descriptors' numbers may be another's by then)."""
        with self._ending:
            if self._closed:
                return
            self._closed = True
        self._gone.set()
        if self._thread.is_alive():
            self._thread.join(timeout=10)
        with self._ending:
            if self._thread.is_alive():
                self._link_left = True
                return
        self._close_link()

    def _close_link(self) -> None:
        self.link.close()
        if isinstance(self._channel, Ring):
            self._channel.close()

    def settle(self) -> None:
        """Once the worker has ended, before its results are read: how the test went (the
        run fails here if the worker broke it, whatever its results say)."""
        self._gone.set()
        if self._thread.is_alive():
            self._thread.join(timeout=10)
        if self._failed is not None:
            raise self._failed
        if self._reason():
            raise ClockBroken(reason=self._reason())

    def apply(self, evidence: Evidence) -> None:
        """The host's figures in place of whatever the worker said of time and the machine."""
        self.settle()
        if self._tested is None:
            raise ClockBroken(reason="the worker ended its run without the host's test")
        from pinbench.evaluator.runners.host_figures import record

        t = self._tested
        clock = {
            "side": "host",
            "crossing_ns": t["crossing_ns"],
            "pings": PINGS,
            "through": "rings" if isinstance(self._channel, Ring) else "pipes",
            "samples": t["count"],
            "latencies": LATENCIES,
            "worker_cpu_s": t["worker_cpu_s"],
            **({"test": "TEST04 unique"} if self.unique else {}),
        }
        record(t, self._scenario, self._log_dir, evidence, clock)

    # --- the test, on the host's own thread -------------------------------------------

    def _run(self) -> None:
        try:
            try:
                fds = self.link.connect(self._gone)
                if fds is None:
                    return  # the worker ended before it connected: its own error is the run's
                self._channel = channel(fds, host=True, spin_ns=w.SPIN_NS)
                self._frames = frames = w.Frames(self._channel, b"HPC")
                self._answers = Answers(self._channel, frames, inline=self._inline)
                kind, _, body = frames.next()
            except (w.WireError, OSError):
                return  # the worker ended before its test: its own error is the run's
            if kind != b"H":
                raise w.WireError(f"a {kind!r} frame before the worker said it was ready")
            count, expected = w.HELLO.unpack(body)
            self._check(count, expected)
            crossing = self._ping()
            self._tested = self._test(count, expected, crossing)
        except w.WireError as exc:
            self._broken = self._broken or str(exc)
        except BaseException as exc:  # the stop's error, LoadGen's refusal: the run's
            self._failed = exc
        finally:
            if self._answers is not None:
                self._answers.ended = True
            with self._ending:
                if not self._closed and self._channel is not None:
                    with contextlib.suppress(OSError, w.WireError):
                        self._channel.send(w.frame(b"E", 0))
                if self._link_left:
                    self._close_link()

    def _check(self, count: int, expected: int) -> None:
        declared = self._declared
        wanted = self._scenario.sample_count
        if declared is not None:
            need = min(declared, wanted or declared)
            if count != need:
                raise w.WireError(f"the worker holds {count} samples where the run has {need}")
        if not 1 <= count <= 1_000_000_000:
            raise w.WireError(f"the worker holds {count} samples")
        if not 1 <= expected <= EXPECTED_MAX_NS:
            raise w.WireError(f"the worker expects {expected} ns per call")

    def _ping(self) -> int:
        times = []
        ping = w.frame(b"P", 0)
        for _ in range(PINGS):
            t0 = time.perf_counter_ns()
            self._send(ping)
            kind, _, _ = self._next()
            if kind != b"P":
                raise w.WireError(f"a {kind!r} frame where a ping's answer was due")
            times.append(time.perf_counter_ns() - t0)
        return int(statistics.median(times))

    def _test(self, count: int, expected: int, crossing: int) -> dict[str, Any]:
        """The run's own LoadGen test, or TEST04's unique test (``unique``: every sample once),
        with the worker's CPU seconds over it."""
        from pinbench.energy.meter import EnergyMeter
        from pinbench.evaluator.proc_tree import cpu_s
        from pinbench.worker.loadgen_test import metered_test
        from pinbench.worker.scenarios import settings_for

        scenario = self._scenario
        settings = settings_for(scenario, expected_latency_ns=expected, batch_size=self._batch)
        if self.unique:
            from pinbench.evaluator.runners.audits import unique

            per_query = scenario.samples_per_query if scenario.name == "MultiStream" else 1
            settings = unique(settings, count, per_query)
        answers = self._answers
        assert answers is not None  # made once the link connected, before any test
        if not self._inline:
            if isinstance(self._channel, Ring):  # Server's reader sleeps between answers: a
                self._channel.spin_ns = 0  # spin holding Python's lock would stall LoadGen's issues
            threading.Thread(target=answers.read, daemon=True).start()
        self._unbroken()
        with EnergyMeter.open() as meter:
            meter.start()
            before = cpu_s(self._pid)
            summary, machine = metered_test(
                answers.issue, count, settings, self._log_dir, self._stop, own_cpu=self._own_cpu
            )
            worker_cpu = cpu_s(self._pid) - before
            energy = meter.stop()
        return {
            "summary": summary,
            "machine": machine,
            "energy": energy,
            "crossing_ns": crossing,
            "count": count,
            "calls": answers.calls,
            "samples": answers.samples,
            "span_ns": answers.last_answer - answers.first_issue,
            "worker_cpu_s": worker_cpu,
        }

    def _unbroken(self) -> None:
        """Before each LoadGen test: a worker that broke the last one (or left) ends the run
        here, not after every test it has left has run its course unanswered."""
        if self._reason():
            raise w.WireError(self._reason())

    def _own_cpu(self) -> float:
        """The CPU time of this process and of the worker's processes (its sandbox's)."""
        import resource

        from pinbench.evaluator.proc_tree import cpu_s

        usage = resource.getrusage(resource.RUSAGE_SELF)
        return usage.ru_utime + usage.ru_stime + cpu_s(self._pid)

    def _send(self, data: bytes) -> None:
        assert self._channel is not None  # made once the link connected, before any test
        self._channel.send(data)

    def _next(self) -> tuple[bytes, int, bytes]:
        assert self._frames is not None  # made once the link connected, before any test
        return self._frames.next()


def for_run(
    lock: Lockfile,
    log_dir: Path,
    stop: Stop,
    socket_dir: Path | None = None,
    unique: bool = False,
) -> HostClock:
    """The host's clock for ``lock``'s test (its scenario, batch size, the dataset's samples),
    or with ``unique`` for TEST04's unique test of it: across pipes the worker inherits, or a
    socket in ``socket_dir`` (a container's)."""
    from pinbench.evaluator.runners.clock_link import PipeLink, SocketLink

    body = lock.body
    samples = body.dataset.samples if body.dataset is not None else None
    link = PipeLink() if socket_dir is None else SocketLink(socket_dir)
    return HostClock(body.scenario, body.batch_size, samples, log_dir, stop, link, unique)
