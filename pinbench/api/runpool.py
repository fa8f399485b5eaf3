"""The server's bounded run queue: fixed worker threads and queue length. A run is recorded
``queued`` at once, run by a worker (``run_lockfile``; then ``series.watch``); a full queue
refuses (503). Runs left at a stop are ``interrupted`` with their reasons; without a database
they wait (decision 190). Each pool has a heartbeat (``api/heartbeat.py``), a fair queue
(``api/fairshare.py``, ``runs_per_user``) and ``drain`` (SIGTERM, ``api/drain.py``)."""

from __future__ import annotations

import logging
import threading
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from pinbench.api import heartbeat, outage, progress
from pinbench.api.fairshare import RUNS_PER_USER, FairQueue
from pinbench.api.lost_runs import LostRuns
from pinbench.api.outage import DRAINED, NOT_STARTED, STOPPED
from pinbench.api.problems import Draining, QueueFull, UserQueueFull
from pinbench.api.sandbox_check import SandboxCheck
from pinbench.api.watchers import Watchers
from pinbench.db import pending
from pinbench.errors import PinbenchError
from pinbench.evaluator import instances
from pinbench.evaluator.policy import check_server_policy, needs_pickle
from pinbench.evaluator.records.recording import RecordWaiting
from pinbench.evaluator.run import queue_run, run_lockfile
from pinbench.evaluator.server_runner import check_server_runner, choose_server_runner
from pinbench.registry.lockfile import Lockfile
from pinbench.series.watch import watch_quietly
from pinbench.worker.stop import RunStopped, Stop
from pinbench.workspace import Workspace

if TYPE_CHECKING:
    from pinbench.cluster.dispatch import OnSystem
    from pinbench.evaluator.warm import WarmPool

from pinbench.api.run_placement import Cluster, NoCluster, other_systems, submitter, systems_of

log = logging.getLogger("pinbench.api.runs")
CLOSE_GRACE_S = 30.0
"""How long a stopping server waits for its stopped runs to record themselves."""


class RunPool:
    def __init__(
        self,
        ws: Workspace,
        *,
        workers: int,
        queue: int,
        allow_pickle: bool = False,
        allow_code: bool = False,
        runners: tuple[str, ...] = ("local", "venv", "docker"),
        cluster: Cluster | None = None,
        warm: bool = False,
        lease: instances.Lease | None = None,
        runs_per_user: int = RUNS_PER_USER,
    ) -> None:
        """``lease``: this instance's timing (default: ``PINBENCH_SERVER_LEASE_S``);
        ``runs_per_user``: runs one user may have queued or running here."""
        self.ws = ws
        self.lease = lease or instances.lease_from_env()
        self.cluster = cluster
        """Where runs placed ``on`` systems go (``serve --cluster``); None: nowhere."""
        self.allow_pickle, self.allow_code = allow_pickle, allow_code
        """The operator's ``serve --allow-pickle`` (pickled models may run) and
        ``--allow-code`` (a model's processing code may run), each in its runner's sandbox."""
        self.runners = runners
        """The runners the operator allows (``serve --runners``)."""
        self.sandbox = SandboxCheck(ws)
        """Whether the sandbox starts here: a run that needs it is refused at submission."""
        self._facts: dict[tuple[str, str], dict[str, Any]] = {}
        """Each cluster system's facts by (name, Ray node id), asked and recorded once."""
        self.warm: WarmPool | None = None
        """``serve --warm``: evaluators kept between runs (``pinbench.evaluator.warm``)."""
        if warm:
            from pinbench.evaluator.warm import WarmPool

            self.warm = WarmPool.in_scratch(ws.store.tmp)
        self.capacity = workers + queue
        self.runs_per_user = runs_per_user
        self._waiting: FairQueue[tuple[Any, ...]] = FairQueue()
        """What each executor task runs: the next user's oldest run (``api/fairshare.py``)."""
        self._executor = ThreadPoolExecutor(workers, thread_name_prefix="pinbench-run")
        self._lock = threading.Lock()
        self._ended = threading.Condition(self._lock)
        """Notified when a run ends here (``close`` waits for the runs it stopped)."""
        self._mine: dict[str, str] = {}
        """Runs submitted here and not finished (queued or running): who submitted each."""
        self.progress: dict[str, str] = {}
        """A running run's latest progress line (what ``pinbench run`` would print)."""
        self._stops: dict[str, Stop] = {}
        """Runs running here: how to stop each."""
        self.watchers = Watchers()
        """Runs a client waits on: a drain lets them read how the ones held here ended."""
        self.instance = instances.register(ws, lease_s=self.lease.lease_s)
        heartbeat.sweep(ws, STOPPED, NOT_STARTED)
        self._closing = threading.Event()
        """Set by ``close``: no run starts any more."""
        self.lost = LostRuns()  # runs whose system it saw lost: a study's driver asks
        self.draining = threading.Event()
        """Set by ``drain`` (SIGTERM): no run is taken, none queued starts."""
        self._quit = threading.Event()
        """Set by ``close`` once its runs ended: the heartbeat stops."""
        self.heartbeat = heartbeat.Heartbeat(self, self._quit, STOPPED, NOT_STARTED)
        """Its thread, and when it last beat (``/metrics`` counts live workers by it)."""
        self.heartbeat.start()

    def submit(
        self, lock: Lockfile, runner: str, trace: str = "none", *, user: str | None = None
    ) -> str:
        """Queue a run (``user`` submitted it: they may cancel it); return its id."""
        runner = choose_server_runner(runner, lock, self.runners)  # once: 'auto' asks Docker
        check_server_policy(lock, self.allow_pickle, self.allow_code)
        self.sandbox.check(lock, runner, allow_code=self.allow_code)  # 503 before it is queued
        run_id = str(uuid.uuid4())
        self._take([run_id], user)
        try:
            self._queue(lock, run_id, runner, trace, user)
            self._dispatch(user, (run_id, lock, runner, trace))
        except BaseException:
            with self._lock:
                self._mine.pop(run_id, None)
            raise
        return run_id

    def _take(self, ids: list[str], user: str | None) -> None:
        """Hold places for runs ``ids`` of ``user``: refused while draining, when the queue
        is full, or past the user's share."""
        with self._lock:
            if self.draining.is_set() or self._closing.is_set():
                raise Draining()
            if len(self._mine) + len(ids) > self.capacity:
                raise QueueFull(queued=len(self._mine))
            held = sum(1 for who in self._mine.values() if who == (user or ""))
            if held + len(ids) > self.runs_per_user:
                raise UserQueueFull(user=user or "anonymous", cap=self.runs_per_user)
            self._mine.update(dict.fromkeys(ids, user or ""))

    def _dispatch(self, user: str | None, args: tuple[Any, ...]) -> None:
        """Queue a run's ``_execute`` arguments; a free worker takes the next user's turn."""
        self._waiting.put(user or "", args)
        self._executor.submit(self._next)

    def _next(self) -> None:
        args = self._waiting.take()
        if args is not None:
            self._execute(*args)

    def submit_on(
        self,
        lock: Lockfile,
        runner: str,
        trace: str,
        on: list[str],
        *,
        user: str | None = None,
        retries: int = 1,
    ) -> list[str]:
        """Queue one run per system of the cluster that ``on`` names (``all``: every live
        system meeting the lockfile's placement), or per group of systems a training's ranks
        are spread over (``spread.runs_of``); their ids. Nothing is queued unless every named
        system meets it."""
        from pinbench.cluster.placement import choose_for
        from pinbench.cluster.spread import runs_of

        cluster = self.cluster
        if cluster is None:
            raise NoCluster()
        if runner != "auto":
            check_server_runner(runner, self.runners)
        check_server_policy(lock, self.allow_pickle, self.allow_code)
        candidates = systems_of(self.ws, cluster.address, self._facts)
        systems = choose_for(lock.body, candidates, None if on == ["all"] else on)
        runs = runs_of(lock, systems, named=on != ["all"], allowed=cluster.spread)
        ids = [str(uuid.uuid4()) for _ in runs]
        self._take(ids, user)
        queued: list[str] = []
        try:
            for run_id, (system, *peers) in zip(ids, runs, strict=True):
                self._queue(lock, run_id, runner, trace, user, system=system)
                queued.append(run_id)
                where = cluster.on(system, peers, self.runners)
                named = None if on == ["all"] else systems  # a retry stays among these
                again = 0 if peers else retries  # a spread run is not retried (decision 317)
                self._dispatch(user, (run_id, lock, runner, trace, where, again, named))
        except BaseException:
            with self._lock:
                for run_id in set(ids) - set(queued):
                    self._mine.pop(run_id, None)
            raise
        return ids

    def _queue(
        self,
        lock: Lockfile,
        run_id: str,
        runner: str,
        trace: str,
        user: str | None,
        *,
        system: str | None = None,
        retry_of: str | None = None,
    ) -> None:
        """Record a run ``queued`` by this server instance (``queue_run``)."""
        queue_run(
            self.ws,
            lock,
            runner=runner,
            run_id=run_id,
            trace=trace,
            instance=self.instance,
            submitted_by=user,
            system=system,
            retry_of=retry_of,
        )

    def _execute(
        self,
        run_id: str,
        lock: Lockfile,
        runner: str,
        trace: str,
        on: OnSystem | None = None,
        retries: int = 0,
        named: list[str] | None = None,
    ) -> None:
        """Run it; when its system is lost, retry up to ``retries`` times, each attempt a run
        of its own (``retry_of``) on another live system that meets the placement (and is
        one of ``named``, when the caller named systems)."""
        tried: list[str] = []
        while True:
            lost = self._attempt(run_id, lock, runner, trace, on)
            if not lost or on is None or retries <= 0:
                return
            tried.append(on.system)
            again = self._retry(run_id, lock, runner, trace, on, tried, named)
            if again is None:
                return
            run_id, on = again
            retries -= 1

    def _retry(
        self,
        lost: str,
        lock: Lockfile,
        runner: str,
        trace: str,
        on: OnSystem,
        tried: list[str],
        named: list[str] | None,
    ) -> tuple[str, OnSystem] | None:
        """Queue the next attempt of run ``lost`` on a system not ``tried``; None: none left."""
        from dataclasses import replace

        if self._stopping():
            return None
        left = other_systems(on.address, lock, lost, tried, named)
        if not left:
            return None
        run_id = str(uuid.uuid4())
        user = submitter(self.ws, lost)
        with self._lock:
            self._mine[run_id] = user or ""
        try:
            self._queue(lock, run_id, runner, trace, user, system=left[0], retry_of=lost)
        except BaseException:
            with self._lock:
                self._mine.pop(run_id, None)
            raise
        log.info("run %s retried as %s on system %s", lost[:8], run_id[:8], left[0])
        return run_id, replace(on, system=left[0], host={}, runner=runner)

    def _attempt(
        self, run_id: str, lock: Lockfile, runner: str, trace: str, on: OnSystem | None
    ) -> bool:
        """One run to its end (recorded whatever happens); True when its system was lost."""
        from pinbench.cluster.dispatch import SystemLost

        stop = Stop()
        recorded = False
        try:
            with self._lock:  # ``close`` stops every run registered here and waits for it
                closing = self._closing.is_set() or self.draining.is_set()
                if not closing:
                    self._stops[run_id] = stop
            if closing:  # ``drain`` marked it already, unless ``close`` came first
                outage.mark(self.ws, run_id, NOT_STARTED, "interrupted", give_up=self._stopping)
                return False
            if not outage.begin(self.ws, run_id, give_up=self._stopping):
                return False  # cancelled while queued, or stopping while the database is away
            run_lockfile(
                self.ws,
                lock,
                runner=runner,
                run_id=run_id,
                trace=trace,
                say=lambda text: self._say(run_id, text),
                fetch=False,  # a server never fetches: publishers upload every byte
                allow_pickle=needs_pickle(lock),  # submit checked the server's policy
                allow_code=self.allow_code,  # the operator's decision (submit refused without)
                stop=stop,
                on=on,
                warm=self.warm,
            )
            recorded = True
        except RecordWaiting as exc:  # its record waits in the home for the next server
            log.warning("run %s: %s", run_id[:8], exc)
        except PinbenchError as exc:
            log.info("run %s failed: %s", run_id[:8], exc)
            outage.mark(self.ws, run_id, str(exc), "failed", give_up=self._closing.is_set)
            if isinstance(exc, SystemLost):  # retried elsewhere; a study asks (``lost``)
                self.lost.add(run_id, exc.system)
                return True
        except BaseException as exc:
            log.exception("run %s failed", run_id[:8])
            why = type(exc).__name__
            outage.mark(self.ws, run_id, why, "failed", give_up=self._closing.is_set)
        finally:
            with self._lock:
                self._mine.pop(run_id, None)
                self._stops.pop(run_id, None)
                self.progress.pop(run_id, None)
                self._ended.notify_all()
            progress.forget(self.ws.settings.home, run_id)
        if recorded and not self._closing.is_set():  # released: close and drain never wait on it
            watch_quietly(self.ws, run_id)  # bounded by WATCH_S, failures logged
        return False

    def _stopping(self) -> bool:
        return self._closing.is_set() or self.draining.is_set()

    def _say(self, run_id: str, text: str) -> None:
        log.info("run %s: %s", run_id[:8], text)
        self.progress[run_id] = text
        progress.said(self.ws.settings.home, run_id, text)  # for a poll any process answers

    def stop_run(self, run_id: str, reason: str) -> bool:
        """Stop a run running here (``cancelled`` with ``reason``); False if none is."""
        with self._lock:
            stop = self._stops.get(run_id)
        if stop is None:
            return False
        if stop.request(RunStopped(status="cancelled", reason=reason)):
            log.info("run %s: %s", run_id[:8], reason)
        return True

    def counts(self) -> tuple[int, int]:
        """Runs held here: (queued, running); the heartbeat's and ``/metrics``' question."""
        with self._lock:
            return len(self._mine) - len(self._stops), len(self._stops)

    def drain(self) -> int:
        """Take no new run and start none of those queued (each is marked interrupted, its
        caller told to submit it again); the running ones go on. The runs held here that a
        client waits on are awaited (``watchers``). How many were marked."""
        with self._lock:
            self.draining.set()
            waiting = [run_id for run_id in self._mine if run_id not in self._stops]
            self.watchers.expect(self._mine)
        return outage.mark_drained(self.ws, waiting, DRAINED)

    def wait_running(self, timeout_s: float) -> bool:
        """Wait until no run runs here (True), or ``timeout_s`` passed (False)."""
        with self._ended:
            return self._ended.wait_for(lambda: not self._stops, timeout=timeout_s)

    def stop_running(self, reason: str = STOPPED) -> None:
        """Ask each running run to stop (recorded ``interrupted`` with ``reason``: the server
        stopped) and give them ``CLOSE_GRACE_S`` to record themselves and remove their
        scratch; a run on an agent tells the agent first (``OnSystem``)."""
        with self._lock:
            stops = list(self._stops.values())
        for stop in stops:  # kill their children; their records say the server stopped
            stop.request(RunStopped(status="interrupted", reason=reason))
        with self._ended:
            if not self._ended.wait_for(lambda: not self._stops, timeout=CLOSE_GRACE_S):
                log.warning("%d run(s) did not stop within %.0f s", len(self._stops), CLOSE_GRACE_S)

    def close(self) -> None:
        """Stop serving runs: none queued starts, the running ones are stopped
        (``stop_running``; the process may end at once after), the rest are marked
        interrupted with their reasons, and the instance retired."""
        self._closing.set()
        self._executor.shutdown(wait=False, cancel_futures=True)
        self.stop_running()
        with self._lock:
            mine, running = set(self._mine), set(self._stops)
        mine -= {k.record.id for k in pending.kept(self.ws)}  # their records wait: kept
        self._quit.set()
        self.heartbeat.join(timeout=CLOSE_GRACE_S)  # no renewal after the retirement
        outage.mark_left(
            self.ws, {NOT_STARTED: mine - running, STOPPED: mine & running}, self.instance
        )
        if self.warm is not None:
            self.warm.close()
