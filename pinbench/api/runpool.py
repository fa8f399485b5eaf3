"""The server's bounded run queue: a fixed number of worker threads, a fixed queue length.

A submitted run is recorded ``queued`` at once (so its status can be asked for), then run by
a worker with ``run_lockfile``, which records the outcome. When the queue is full a submit is
refused (HTTP 503). Runs still queued or running when the server stops are marked
``interrupted``.

Each pool is a server instance with a heartbeat (``api/heartbeat.py``): it touches only its
own runs, and those of servers whose lease expired. Runs wait in a fair queue (round robin
across users, ``api/fairshare.py``), at most ``runs_per_user`` of each user; ``drain``
(SIGTERM, ``api/drain.py``) takes no new run and lets the running ones finish.
"""

from __future__ import annotations

import logging
import threading
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from pinbench.api import heartbeat
from pinbench.api.fairshare import RUNS_PER_USER, FairQueue
from pinbench.api.problems import Draining, QueueFull, UserQueueFull
from pinbench.errors import PinbenchError
from pinbench.evaluator import instances
from pinbench.evaluator.policy import (
    check_server_pickle,
    check_server_runner,
    choose_server_runner,
    needs_pickle,
)
from pinbench.evaluator.run import abandon_unfinished, queue_run, run_lockfile
from pinbench.evaluator.stop import RunStopped, Stop
from pinbench.processing.consent import check_server_code
from pinbench.registry.lockfile import Lockfile
from pinbench.workspace import Workspace

if TYPE_CHECKING:
    from pinbench.cluster.dispatch import OnSystem
    from pinbench.evaluator.warm import WarmPool

from pinbench.api.run_placement import Cluster, NoCluster, cluster_candidates, submitter

log = logging.getLogger("pinbench.api.runs")
STOPPED = "the server stopped before this run finished"
DRAINED = "the server was stopping (SIGTERM) before this run started: submit it again"
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
        self.allow_pickle = allow_pickle
        """The operator's ``serve --allow-pickle``: pickled models may run, in docker only."""
        self.allow_code = allow_code
        """The operator's ``serve --allow-code``: a model's processing code may run."""
        self.runners = runners
        """The runners the operator allows (``serve --runners``)."""
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
        self.instance = instances.register(ws, lease_s=self.lease.lease_s)
        heartbeat.sweep(ws, STOPPED)
        self._closing = threading.Event()
        """Set by ``close``: no run starts any more."""
        self.draining = threading.Event()
        """Set by ``drain`` (SIGTERM): no run is taken, none queued starts."""
        self._quit = threading.Event()
        """Set by ``close`` once its runs ended: the heartbeat stops."""
        self._heartbeat = threading.Thread(
            target=heartbeat.beat,
            args=(self, self._quit, STOPPED),
            name="pinbench-heartbeat",
            daemon=True,
        )
        self._heartbeat.start()

    def submit(
        self, lock: Lockfile, runner: str, trace: str = "none", *, user: str | None = None
    ) -> str:
        """Queue a run (``user`` submitted it: they may cancel it); return its id."""
        runner = choose_server_runner(runner, lock, self.runners)  # once: 'auto' asks Docker
        check_server_pickle(lock, runner=runner, server_allows=self.allow_pickle)
        check_server_code(lock, server_allows=self.allow_code)
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
        system meeting the lockfile's placement); their ids. Nothing is queued unless every
        named system meets it."""
        from pinbench.cluster.dispatch import OnSystem
        from pinbench.cluster.placement import choose_for

        cluster = self.cluster
        if cluster is None:
            raise NoCluster()
        if runner != "auto":
            check_server_runner(runner, self.runners)
        check_server_pickle(lock, runner=runner, server_allows=self.allow_pickle)
        check_server_code(lock, server_allows=self.allow_code)
        candidates = cluster_candidates(self.ws, cluster.address, self._facts)
        systems = choose_for(lock.body, candidates, None if on == ["all"] else on)
        ids = [str(uuid.uuid4()) for _ in systems]
        self._take(ids, user)
        queued: list[str] = []
        try:
            for run_id, system in zip(ids, systems, strict=True):
                self._queue(lock, run_id, runner, trace, user, system=system)
                queued.append(run_id)
                where = OnSystem(
                    cluster.address,
                    system,
                    cluster.agent_url,
                    cluster.token,
                    allowed=self.runners,
                )
                named = None if on == ["all"] else systems  # a retry stays among these
                self._dispatch(user, (run_id, lock, runner, trace, where, retries, named))
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

        from pinbench.cluster.placement import Candidate, choose_for
        from pinbench.cluster.ray_agent import cluster_systems

        if self._closing.is_set() or self.draining.is_set():
            return None
        try:
            found = cluster_systems(on.address)
            candidates = [Candidate(c.name, c.facts or {}, c.alive) for c in found]
            meets = choose_for(lock.body, candidates, None)
            left = [s for s in meets if s not in tried and (named is None or s in named)]
        except PinbenchError as exc:
            log.info("run %s: no retry: %s", lost[:8], exc)
            return None
        if not left:
            log.info("run %s: no other system meets it: no retry", lost[:8])
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
        try:
            with self._lock:  # ``close`` stops every run registered here and waits for it
                closing = self._closing.is_set() or self.draining.is_set()
                if not closing:
                    self._stops[run_id] = stop
            if closing:  # ``drain`` marked it already, unless ``close`` came first
                abandon_unfinished(self.ws, STOPPED, only=[run_id])
                return False
            if not instances.begin(self.ws, run_id):
                return False  # cancelled while queued
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
        except SystemLost as exc:
            log.info("run %s failed: %s", run_id[:8], exc)
            abandon_unfinished(self.ws, str(exc), only=[run_id], status="failed")
            return True
        except PinbenchError as exc:
            log.info("run %s failed: %s", run_id[:8], exc)
            abandon_unfinished(self.ws, str(exc), only=[run_id], status="failed")
        except BaseException as exc:
            log.exception("run %s failed", run_id[:8])
            abandon_unfinished(self.ws, f"{type(exc).__name__}", only=[run_id], status="failed")
        finally:
            with self._lock:
                self._mine.pop(run_id, None)
                self._stops.pop(run_id, None)
                self.progress.pop(run_id, None)
                self._ended.notify_all()
        return False

    def _say(self, run_id: str, text: str) -> None:
        log.info("run %s: %s", run_id[:8], text)
        self.progress[run_id] = text

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
        caller told to submit it again); the running ones go on. How many were marked."""
        with self._lock:
            self.draining.set()
            waiting = [run_id for run_id in self._mine if run_id not in self._stops]
        return abandon_unfinished(self.ws, DRAINED, only=waiting) if waiting else 0

    def wait_running(self, timeout_s: float) -> bool:
        """Wait until no run runs here (True), or ``timeout_s`` passed (False)."""
        with self._ended:
            return self._ended.wait_for(lambda: not self._stops, timeout=timeout_s)

    def close(self) -> None:
        """Stop serving runs: none queued starts; each running one is asked to stop and given
        ``CLOSE_GRACE_S`` to record itself and remove its scratch (the process may end at
        once after: uvicorn re-raises the signal that stopped it); the rest are marked
        interrupted, and the instance retired."""
        self._closing.set()
        self._executor.shutdown(wait=False, cancel_futures=True)
        with self._lock:
            stops = list(self._stops.values())
        for stop in stops:  # kill their children; their records say the server stopped
            stop.request(RunStopped(status="interrupted", reason=STOPPED))
        with self._ended:
            if not self._ended.wait_for(lambda: not self._stops, timeout=CLOSE_GRACE_S):
                log.warning("%d run(s) did not stop within %.0f s", len(self._stops), CLOSE_GRACE_S)
            mine = sorted(self._mine)
        abandon_unfinished(self.ws, STOPPED, only=mine)
        self._quit.set()
        self._heartbeat.join(timeout=CLOSE_GRACE_S)  # no renewal after the retirement
        instances.retire(self.ws, self.instance)
        if self.warm is not None:
            self.warm.close()
