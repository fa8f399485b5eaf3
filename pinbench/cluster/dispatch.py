"""The server's side of a run on an agent: send the lockfile, relay progress, take the results.

``OnSystem`` stands where a runner stands in ``run_lockfile``: it asks the system's actor to
run the lockfile (the agent fetches and checks every pinned byte itself, ``agent_run``),
relays its progress lines, and turns what comes back into evidence through
``worker.results.read_results``, the validation an isolated evaluator's output gets: only
the result files by name, each within its size cap, the JSON strict and for this lockfile,
the arrays without pickle. The run record is then written by the server alone.

The agent answers with plain data (``answer``): an error it states fails the run as that
agent's, with its message; only Ray's word that the agent's actor, worker or node is gone
makes the system lost (``SystemLost``), the one failure the server retries elsewhere.
"""

from __future__ import annotations

import contextlib
import json
import time
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pinbench.cluster.answer import lost_errors, printable, read_error, read_ok
from pinbench.cluster.ray_agent import NAMESPACE, actor_name, connect, ray_module
from pinbench.errors import PinbenchError, SystemFailure, UserError
from pinbench.registry.lockfile import Lockfile
from pinbench.worker.job import Evidence, Say
from pinbench.worker.stop import Stop
from pinbench.workspace import Workspace

if TYPE_CHECKING:
    from pinbench.evaluator.warm import WarmPool

POLL_S = 0.5
MAX_ENVIRONMENT_BYTES = 64 * 1024
FETCH_ALLOWANCE_S = 1800.0
"""Time an agent may take, beyond the lockfile's ``limits.timeout_s``, to fetch its blobs."""
CANCEL_S = 5.0
"""How long a run that stops waits for its agent to take the cancel (the server may be
stopping: its process must not end with the agent still measuring, unknowing)."""
PEER_GRACE_S = 10.0
"""How long a spread run whose other system failed waits for rank 0's system to say why."""


class SystemLost(SystemFailure):
    def __init__(self, system: str, reason: str) -> None:
        self.system = system
        self.reason = reason
        super().__init__(f"system {system} lost during the run: {reason}")


class AgentFailed(UserError):
    """The agent answered that the evaluation failed (``agent``: the error's class name there);
    its exit code is the agent's error's (1 the input's fault, 3 the system's)."""

    def __init__(self, *, system: str, reason: str, agent: str, exit_code: int = 1) -> None:
        self.system = system
        self.reason = reason
        self.agent = agent
        self.exit_code = exit_code
        super().__init__(f"on system {system}: {reason}")


class AgentTimedOut(SystemFailure):
    def __init__(self, system: str, timeout_s: int) -> None:
        self.system = system
        self.timeout_s = timeout_s
        super().__init__(
            f"system {system} gave no result within the lockfile's limits.timeout_s "
            f"({timeout_s} s) and {FETCH_ALLOWANCE_S:.0f} s for fetching: stopped"
        )


class AgentAnswerRefused(UserError):
    def __init__(self, system: str, reason: str) -> None:
        self.system = system
        self.reason = reason
        super().__init__(f"the results system {system} sent were refused: {reason}")


@dataclass
class OnSystem:
    """Run on ``system`` of the cluster at ``address``; the agent fetches blobs from ``server``
    with ``token``. After the run: the runner the agent chose and the agent's host facts."""

    address: str
    system: str
    server: str
    token: str = field(repr=False)
    runner: str = "auto"
    allowed: tuple[str, ...] = ("local", "venv", "docker")
    """The runners the server allows (``serve --runners``): ``auto`` picks among them only."""
    host: dict[str, Any] = field(default_factory=dict)
    peers: tuple[str, ...] = ()
    """A training run's other systems, whose ranks meet this one's rank 0 (``spread``)."""

    def __call__(
        self,
        ws: Workspace,
        lock: Lockfile,
        evidence: Evidence,
        say: Say,
        trace: str,
        *,
        allow_pickle: bool = False,
        allow_code: bool = False,
        stop: Stop | None = None,
        warm: WarmPool | None = None,
        sandbox: str = "bwrap",
        audit: bool = False,
    ) -> None:
        """``warm`` is the server's: an agent keeps warm evaluators of its own (``pinbench agent
        start --warm``), so it is not used here; nor is ``sandbox``: an agent runs every worker
        in its sandbox. ``audit``: the agent audits the run as its host (``host_word``)."""
        stop = stop or Stop()
        ray = ray_module()
        connect(self.address)
        try:
            actor = ray.get_actor(actor_name(self.system), namespace=NAMESPACE)
        except ValueError:
            raise SystemLost(self.system, "its agent is not in the cluster") from None
        args: tuple[Any, ...] = (lock.canonical, self.server, self.token, self.runner, trace)
        args += (allow_pickle, self.allowed, allow_code)
        ranks, peers = None, None
        try:
            if self.peers:
                from pinbench.cluster.spread import Peers, rendezvous

                systems = (self.system, *self.peers)
                placements = rendezvous(ray, actor, systems, lock)
                ranks, peers = placements[0], Peers(ray, self.peers)
                actors = {s: self._actor(ray, s) for s in self.peers}
                peers.start(actors, args, placements[1:])
                say(f"ranks spread over systems {', '.join(systems)}")
            say(f"sent to system {self.system}")
            ticket = uuid.uuid4().hex  # names this evaluation to the agent: progress, cancel
            done = actor.run.remote(*args, audit, ticket, ranks)
            if peers is not None:
                peers.leader(self.system, actor, ticket)
            self._wait(ray, actor, done, ticket, lock, stop, say, peers)
            packed = self._answer(ray, done, stop)
            if peers is not None:
                peers.finish(stop)
        except BaseException as exc:
            if peers is not None:
                peers.cancel(str(exc) or type(exc).__name__)
            raise
        self._take(ws, lock, evidence, packed)

    def _actor(self, ray: Any, system: str) -> Any:
        try:
            return ray.get_actor(actor_name(system), namespace=NAMESPACE)
        except ValueError:
            raise SystemLost(system, "its agent is not in the cluster") from None

    def _wait(
        self,
        ray: Any,
        actor: Any,
        done: Any,
        ticket: str,
        lock: Lockfile,
        stop: Stop,
        say: Say,
        peers: Any,
    ) -> None:
        """Until the agent answers: its progress relayed, the stop and deadline watched, and
        a spread run's other systems (``peers``) checked."""
        shown = ""
        deadline = time.monotonic() + lock.body.limits.timeout_s + FETCH_ALLOWANCE_S
        while not ray.wait([done], timeout=POLL_S)[0]:
            try:
                stop.check()
                if time.monotonic() > deadline:
                    raise AgentTimedOut(self.system, lock.body.limits.timeout_s)
                if peers is not None:
                    self._check_peers(ray, done, stop, peers)
            except PinbenchError as exc:  # a cancel, the server stopping, the deadline
                with contextlib.suppress(Exception):  # the agent stops its evaluation too
                    ray.get(actor.cancel.remote(str(exc), ticket), timeout=CANCEL_S)  # and says so
                raise
            try:
                text = ray.get(actor.progress.remote(ticket), timeout=10)
            except ray.exceptions.RayError:
                continue  # the result tells whether the agent is gone
            if isinstance(text, str) and text and text != shown:
                shown = text
                say(f"{self.system}: {printable(text)}")

    def _check_peers(self, ray: Any, done: Any, stop: Stop, peers: Any) -> None:
        """A spread run's other system that failed fails it; but rank 0's own error, where
        its system answers within ``PEER_GRACE_S``, is the one the run records (a peer's ranks
        mostly fail because rank 0's did)."""
        try:
            peers.check()
        except PinbenchError as failed:
            if ray.wait([done], timeout=PEER_GRACE_S)[0]:
                self._answer(ray, done, stop)
            raise failed from None

    def _answer(self, ray: Any, done: Any, stop: Stop) -> Any:
        """The agent's packed results; its error raised as the run's."""
        try:
            answer = ray.get(done)
        except lost_errors(ray) as exc:  # the actor, its worker or its node is gone
            raise SystemLost(self.system, type(exc).__name__) from None
        except ray.exceptions.RayTaskError as exc:  # not an answer: raised past ``Agent.run``
            cause = exc.cause if isinstance(exc.cause, BaseException) else exc
            raise AgentFailed(
                system=self.system, reason=type(cause).__name__, agent=type(cause).__name__
            ) from None
        except ray.exceptions.RayError as exc:  # Ray could not deliver it: not a lost machine
            raise AgentFailed(
                system=self.system, reason=f"Ray: {type(exc).__name__}", agent="RayError"
            ) from None
        error = read_error(answer)
        if error is not None:
            if error.stopped:
                stop.check()  # the server's own stop (cancel, shutdown) is what it records
            raise AgentFailed(
                system=self.system,
                reason=printable(error.message),
                agent=printable(error.type),
                exit_code=error.exit_code,
            )
        return read_ok(answer)

    def _take(self, ws: Workspace, lock: Lockfile, evidence: Evidence, packed: Any) -> None:
        from pinbench.artifacts.scratch import scratch_directory
        from pinbench.cluster import host_word
        from pinbench.evaluator.runners.process import EvaluationFailed
        from pinbench.worker.results import CAPS as caps
        from pinbench.worker.results import adopt, read_results

        if not isinstance(packed, dict) or not isinstance(packed.get("files"), dict):
            raise AgentAnswerRefused(self.system, "not a packed result")
        files = packed["files"]
        for name, data in files.items():
            if name not in caps or not isinstance(data, bytes) or len(data) > caps[name]:
                raise AgentAnswerRefused(self.system, f"unexpected result file {name!r}")
        environment, host, runner = (
            packed.get("environment"),
            packed.get("host"),
            packed.get("runner"),
        )
        for what, value in (("environment", environment), ("host", host)):
            if not isinstance(value, dict):
                raise AgentAnswerRefused(self.system, f"{what} is not a mapping")
            try:
                size = len(json.dumps(value, allow_nan=False))
            except (TypeError, ValueError, RecursionError):  # as ``host_word.adopt`` reads
                raise AgentAnswerRefused(self.system, f"{what} is not plain JSON") from None
            if size > MAX_ENVIRONMENT_BYTES:
                raise AgentAnswerRefused(self.system, f"{what} is over {MAX_ENVIRONMENT_BYTES} B")
        if runner not in self.allowed:
            raise AgentAnswerRefused(self.system, f"runner {runner!r}")
        assert isinstance(environment, dict) and isinstance(host, dict)
        self.runner, self.host = str(runner), host
        with scratch_directory(ws.store.tmp, "run") as folder:
            for name, data in files.items():
                (folder / name).write_bytes(data)
            result, got = read_results(folder, lock.digest.hex)
            with scratch_directory(ws.store.tmp, "run") as scratch:
                try:
                    host_word.adopt(got, packed.get("word"), scratch)
                except host_word.Refused as exc:
                    raise AgentAnswerRefused(self.system, exc.reason) from None
        adopt(evidence, got)
        evidence.environment.update(environment)
        if result.status == "failed":
            raise EvaluationFailed(
                runner=self.runner, error=result.error or "failed without a reason"
            )
