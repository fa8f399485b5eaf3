"""A study on a cluster's agents, run by the server that has the cluster (``POST
/api/v1/studies``; decision 304).

The server records the study and its cells as ``study run`` does, then drives each system in a
thread of its own (the agents in parallel, each agent's cells in turn): a cell is locked by this
registry, queued on its agent through the server's run pool (``RunPool.submit_on``: the
server's own runner, pickle and code policy and its per-user cap apply, as to any run a user
queues there), recorded ``running`` with its run, then ``done`` or ``failed`` when that run
ends; a cell that cannot be locked or placed is ``refused`` with the reason. A cell done
before is not run again, so posting the study again resumes it. Nothing a caller sends is
executed or fetched: the study names published artifacts, as a request does.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import IO, TYPE_CHECKING, Any

from pinbench.api.agent_wait import AGENT_POLL_S, LOST_RUNS, WAITING, agent_wait_s
from pinbench.api.problems import StudiesBusy
from pinbench.db.errors import Conflict
from pinbench.db.run_record import FINISHED
from pinbench.errors import UserError
from pinbench.studies.execute import StudyBusy, done_run, hold_study_lock, pinned_of

if TYPE_CHECKING:
    from pinbench.accounts import Principal
    from pinbench.api.runpool import RunPool
    from pinbench.studies.cells import Cell
    from pinbench.studies.spec import Study

log = logging.getLogger(__name__)
POLL_S = 0.5
STUDIES_GRACE_S = 5.0
"""How long a closing server waits for its studies' threads (each looks every ``POLL_S``)."""


MAX_STUDIES = 4
"""Studies one server runs at once (each a thread per system, up to 16): more are refused
until one ends (``StudiesBusy``, 429)."""


class StudyRunningElsewhere(Conflict):
    """Another process (this server, another worker, a ``study run``) holds the study's lock
    (409): the message names no path of the server's."""

    def __init__(self, *, name: str) -> None:
        super().__init__(f"study {name} is running now: follow it with study show")
        self.name = name


class BuiltInName(UserError):
    """A posted study may not take a built-in study's name (``seed``): the server's page of
    that name is the built-in study's."""

    def __init__(self, *, name: str) -> None:
        super().__init__(f"study {name}: the name of a built-in study; give yours another")
        self.name = name


class NotOnAgents(UserError):
    def __init__(self, *, name: str) -> None:
        super().__init__(
            f"study {name}: a server runs a study on its cluster's agents only (systems with "
            "agent: NAME); a study of this machine's configurations runs with `pinbench study "
            "run` on a local registry"
        )
        self.name = name


class Drivers:
    """The studies this server is running, each a thread per system."""

    def __init__(self, pool: RunPool) -> None:
        self.pool = pool
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._starting: set[str] = set()
        """Studies being recorded (they count among the running ones)."""
        self._gone: dict[str, float] = {}
        """Agents a cell found gone, since when (``time.monotonic``): one wait per agent,
        shared by every cell that waits for it, until it takes a run again."""

    def start(self, study: Study, source: str, principal: Principal) -> dict[str, Any]:
        """Record ``study`` and start running its cells not done; what was started. The
        study's lock is held until every system's thread ends (``study_active``). Everything
        that can be refused is refused before anything is recorded."""
        from pinbench.api.problems import Draining
        from pinbench.evaluator.server_runner import check_server_runner

        if not study.on_agents:
            raise NotOnAgents(name=study.name)
        if self.pool.cluster is None:
            from pinbench.api.run_placement import NoCluster

            raise NoCluster()
        if self.pool.draining.is_set() or self._closed():
            raise Draining()
        if _builtin(study.name):
            raise BuiltInName(name=study.name)
        check_server_runner(study.runner, self.pool.runners)
        ws = self.pool.ws
        with self._lock:  # a place among the studies running here, and the study's lock
            self._threads = [t for t in self._threads if t.is_alive()]
            running = len({t.name.rsplit("|", 1)[0] for t in self._threads} | self._starting)
            if running >= MAX_STUDIES:
                raise StudiesBusy(running=running)
            try:
                handle = hold_study_lock(ws, study.name)
            except StudyBusy:
                raise StudyRunningElsewhere(name=study.name) from None
            self._starting.add(study.name)
        try:
            self._check_agents(study)
            return self._start(study, source, principal, handle)
        except BaseException:
            handle.close()
            raise
        finally:
            with self._lock:
                self._starting.discard(study.name)

    def _check_agents(self, study: Study) -> None:
        """Every agent the study names is a system of the cluster now."""
        from pinbench.api.run_placement import systems_of
        from pinbench.cluster.systems import UnknownSystem

        assert self.pool.cluster is not None
        known = sorted({c.name for c in systems_of(self.pool.ws, self.pool.cluster.address,
                                                    self.pool._facts)})  # fmt: skip
        for system in study.systems:
            if system.agent not in known:
                raise UnknownSystem(str(system.agent), known)

    def _start(
        self, study: Study, source: str, principal: Principal, handle: IO[str]
    ) -> dict[str, Any]:
        from pinbench.studies.cells import cells as cells_of
        from pinbench.studies.store import open_study, read_study, replan_cells

        ws = self.pool.ws
        cells = cells_of(study, source=source)
        study_id = open_study(ws, study, source, cells)
        recorded = settle(ws, study_id, read_study(ws, study.name)["cells"])
        done = {c.key: done_run(ws, recorded.get(c.key)) for c in cells}
        todo = [c for c in cells if done[c.key] is None]
        replan_cells(ws, study_id, [c.key for c in todo])  # what they show is their new run's
        pins: dict[str, str] = {}
        for cell in cells:  # a row compares one version: the one its done cells ran
            run = done[cell.key]
            if run is not None:
                pins.setdefault(cell.entry_key, pinned_of(run))
        shared = threading.Lock()
        threads = []
        for system in study.systems:
            mine = [c for c in todo if c.system == system]
            threads.append(
                threading.Thread(
                    target=self._drive,
                    args=(study, study_id, mine, principal, pins, shared),
                    name=f"pinbench-study-{study.name}|{system.name}",
                    daemon=True,
                )
            )
        for thread in threads:
            thread.start()
        threading.Thread(
            target=_release, args=(threads, handle), name=f"pinbench-study-{study.name}",
            daemon=True,
        ).start()  # fmt: skip
        self._threads += threads
        return {"name": study.name, "cells": len(cells), "to_run": [c.key for c in todo]}

    def stop(self, timeout_s: float) -> None:
        """Wait up to ``timeout_s`` for the drivers to see the pool stopping."""
        with self._lock:
            threads = list(self._threads)
        end = time.monotonic() + timeout_s
        for thread in threads:
            thread.join(max(0.0, end - time.monotonic()))

    def _drive(
        self,
        study: Study,
        study_id: int,
        cells: list[Cell],
        principal: Principal,
        pins: dict[str, str],
        shared: threading.Lock,
    ) -> None:
        for cell in cells:
            if self._stopping():
                return
            try:
                self._cell(study, study_id, cell, principal, pins, shared)
            except Exception:  # a cell's failure is recorded; the thread goes on
                log.exception("study %s: cell %s", study.name, cell.key)

    def _stopping(self) -> bool:
        """No new cell is queued once the server drains or closes."""
        return self.pool.draining.is_set() or self._closed()

    def _closed(self) -> bool:
        """The pool stopped its runs: waiting for one more is pointless."""
        return self.pool._closing.is_set()

    def _cell(
        self,
        study: Study,
        study_id: int,
        cell: Cell,
        principal: Principal,
        pins: dict[str, str],
        shared: threading.Lock,
    ) -> None:
        from pinbench.api.code_scope import check_stored_code
        from pinbench.errors import PinbenchError
        from pinbench.registry import service
        from pinbench.registry.request import parse_request
        from pinbench.studies.execute import resolved
        from pinbench.studies.store import record_cell

        ws = self.pool.ws

        def refused(reason: str, digest: str | None = None) -> None:
            record_cell(ws, study_id, cell.key, state="refused", lockfile_digest=digest,
                        reason=reason)  # fmt: skip

        try:
            lock, _ = service.lock(ws, parse_request(cell.request, source=cell.label))
            check_stored_code(principal, lock)
        except PinbenchError as exc:
            return refused(str(exc))
        digest = lock.digest.hex
        with shared:
            first = pins.setdefault(cell.entry_key, resolved(lock))
        if first != resolved(lock):
            return refused(
                f"its ranges resolve to {resolved(lock)} now, where this model's other cells "
                f"ran {first}: a row compares one version",
                digest,
            )
        agent = str(cell.system.agent)
        lost = 0
        while True:
            run_id = self._submit(lock, study, cell, agent, principal, study_id, digest, lost)
            if run_id is None:  # refused (recorded), or the server stops (the cell stays)
                return None
            record_cell(ws, study_id, cell.key, state="running", lockfile_digest=digest,
                        run_id=run_id)  # fmt: skip
            status, error = _wait(ws, run_id, self._closed)
            if status is None:  # the server closed: the run's record says so; the cell stays
                return None  # running until the study is posted again (``settle``)
            if status == "failed" and self._lost(run_id, agent) and lost < LOST_RUNS:
                lost += 1  # its agent went: the cell runs again when it is back
                record_cell(ws, study_id, cell.key, state="planned", lockfile_digest=digest,
                            reason=f"{WAITING.format(agent)}: its run {run_id[:8]} was "
                            f"lost ({error})")  # fmt: skip
                continue
            state = "done" if status == "succeeded" else "failed"
            record_cell(ws, study_id, cell.key, state=state, lockfile_digest=digest,
                        run_id=run_id,
                        reason=None if state == "done" else (error or status))  # fmt: skip
            return None

    def _lost(self, run_id: str, agent: str) -> bool:
        """Whether run ``run_id`` failed because this server lost its ``agent`` (the pool saw
        ``SystemLost``; a run's error text is not asked: a worker may write one that says so)."""
        return self.pool.lost.take(run_id) == agent

    def _submit(
        self,
        lock: Any,
        study: Study,
        cell: Cell,
        agent: str,
        principal: Principal,
        study_id: int,
        digest: str,
        lost: int = 0,
    ) -> str | None:
        """Queue ``cell``'s run on its ``agent``; its id. While the agent is gone from the
        cluster the cell waits for it to come back (``planned``, saying so, unless its run was
        just ``lost`` with it, which it says) up to ``agent_wait_s`` from when a cell first
        found it gone (one wait per agent: the cells after a refused one are refused at once),
        then is refused saying so; while the server's caps are full it waits for a place. None
        where it was refused (recorded) or the server stops (the cell stays as it is, to run
        when the study is posted again)."""
        from pinbench.api.problems import QueueFull, UserQueueFull
        from pinbench.cluster.placement import NoMatchingSystem
        from pinbench.errors import PinbenchError
        from pinbench.studies.store import record_cell

        ws, said = self.pool.ws, bool(lost)
        while True:
            try:
                (run_id,) = self.pool.submit_on(
                    lock, study.runner, "none", [agent], user=principal.user, retries=0
                )
                with self._lock:
                    self._gone.pop(agent, None)  # it is back: a later loss waits afresh
                return str(run_id)
            except (QueueFull, UserQueueFull):  # the server's caps hold: wait for a place
                pass
            except NoMatchingSystem as exc:  # a gone system's facts are unknown: it lacks all
                if [(n, why[:1]) for n, why in exc.systems] != [(agent, ["gone"])]:
                    self._refused(study_id, cell, agent, exc, digest)
                    return None
                now = time.monotonic()
                with self._lock:
                    gone_since = self._gone.setdefault(agent, now)
                if now - gone_since <= agent_wait_s() and not said:
                    said = True
                    record_cell(ws, study_id, cell.key, state="planned", lockfile_digest=digest,
                                reason=f"{WAITING.format(agent)}: it is gone")  # fmt: skip
                if now - gone_since > agent_wait_s():
                    self._refused(study_id, cell, agent, exc, digest, waited=now - gone_since)
                    return None
            except PinbenchError as exc:
                if not self._stopping():  # refused as the server drains: it stays planned
                    self._refused(study_id, cell, agent, exc, digest)
                return None
            if self._stopping():
                return None
            time.sleep(AGENT_POLL_S)

    def _refused(
        self,
        study_id: int,
        cell: Cell,
        agent: str,
        exc: Exception,
        digest: str,
        waited: float | None = None,
    ) -> None:
        from pinbench.studies.store import record_cell

        reason = f"system {cell.system.name} (agent {agent}): {exc}"
        if waited is not None:
            reason += f" (waited {waited:.0f} s for it to come back: post the study again then)"
        record_cell(self.pool.ws, study_id, cell.key, state="refused", lockfile_digest=digest,
                    reason=reason)  # fmt: skip


def settle(ws: Any, study_id: int, recorded: dict[str, Any]) -> dict[str, Any]:
    """The recorded cells (``read_study``'s, each as its run says it), those a server left
    ``running`` in the database (it stopped waiting: closed, killed) written as their runs
    ended (``store.settle_cells``); a cell whose run has not ended is left to run again."""
    from pinbench.studies.store import settle_cells

    settle_cells(ws, study_id)
    return dict(recorded)


def _builtin(name: str) -> bool:
    from pinbench.studies.spec import BUILTIN

    return (BUILTIN / f"{name}.yaml").is_file()


def _release(threads: list[threading.Thread], handle: IO[str]) -> None:
    """The study's lock, held until every system's thread has ended."""
    for thread in threads:
        thread.join()
    handle.close()


def _wait(ws: Any, run_id: str, stopping: Any) -> tuple[str | None, str | None]:
    """The run's final status and error, polled from its record; None when the server stops."""
    from pinbench.evaluator.records.run_view import show_run

    while True:
        run = show_run(ws, run_id)
        if run["status"] in FINISHED:
            return str(run["status"]), run.get("error")
        if stopping():
            return None, None
        time.sleep(POLL_S)
