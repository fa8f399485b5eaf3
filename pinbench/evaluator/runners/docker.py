"""The docker runner: the evaluator in a container whose image is pinned by digest (looked up
by the image ID, so no other image stands in for it; a tag that now names another is reported).
The container gets the model's and dataset's files read-only, one writable output folder, no
network, a read-only root, a non-root user, no capabilities, no new privileges and the
lockfile's memory / CPU / time limits; what it writes is validated by the host."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from docker.errors import APIError, ImageNotFound
from docker.types import Mount
from requests.exceptions import ConnectionError as RequestsConnectionError
from requests.exceptions import ReadTimeout

from pinbench.artifacts.scratch import scratch_directory
from pinbench.errors import UserError
from pinbench.evaluator.runners.clock_link import SOCKET
from pinbench.evaluator.runners.docker_parts import IN, Inside, confined, link_files, link_stages
from pinbench.evaluator.runners.docker_parts import OutOfMemory as OutOfMemory
from pinbench.evaluator.runners.process import (
    Relay,
    RunTimedOut,
    WorkerCrashed,
    collect,
    host_memory,
    write_job,
)
from pinbench.evaluator.timing_checks import check_timings
from pinbench.images.engine import connect
from pinbench.processing.consent import needs_code
from pinbench.registry.chain_spec import ChainRefused
from pinbench.registry.lockfile import LockedImage, Lockfile
from pinbench.trace.levels import TraceUnsupported
from pinbench.worker.job import Evidence, Say
from pinbench.worker.stop import Stop
from pinbench.workspace import Workspace

if TYPE_CHECKING:
    from pinbench.evaluator.runners.test01 import Seals
    from pinbench.evaluator.warm import WarmPool

WAIT_SLICE_S = 2


class NoImagePinned(UserError):
    def __init__(self, *, framework: str, version: str) -> None:
        super().__init__(
            f"the lockfile pins no image for {framework}@{version}: build one with "
            f"`pinbench images build {framework}`, then lock the request again"
        )
        self.framework = framework
        self.version = version


class ImageMissing(UserError):
    def __init__(self, *, image: str, digest: str, tagged: str | None) -> None:
        text = f"image {image} ({digest}) is not in this Docker Engine"
        if tagged is not None:
            text += f"; its tag there names another image, {tagged}, which is refused"
        super().__init__(
            text + f": `pinbench images pull {image} --registry HOST:PORT`, or build it"
        )
        self.image = image
        self.digest = digest
        self.tagged = tagged


def pinned_image(lock: Lockfile) -> LockedImage:
    env = lock.body.environment
    if env is None:
        raise UserError("the lockfile pins no framework environment for its platform")
    if env.image is None:
        raise NoImagePinned(framework=env.framework, version=env.version)
    return env.image


def verified_image(client: Any, image: LockedImage) -> Any:
    """The engine's image with exactly the pinned ID; refuse anything else."""
    label = f"image/{image.name}@{image.version}"
    try:
        found = client.images.get(image.digest)
    except ImageNotFound:
        found = None
    if found is None or found.id != image.digest:
        try:
            tagged = client.images.get(f"{image.name}:{image.version}").id
        except ImageNotFound:
            tagged = None
        raise ImageMissing(image=label, digest=image.digest, tagged=tagged)
    return found


def _mounts(ws: Workspace, lock: Lockfile, job_dir: Path, out: Path) -> tuple[list[Any], Inside]:
    """Bind mounts (job and files read-only, output writable) and where each file appears.

    The model's and dataset's blobs are hard-linked (copied across filesystems) into one
    folder beside the job and mounted once: a dataset of many files is one mount, not one per
    file (a kernel caps mounts per namespace, and each costs container creation time)."""
    files = job_dir.parent / "files"
    mounts = [
        Mount(f"{IN}/job", str(job_dir), type="bind", read_only=True),
        Mount(f"{IN}/out", str(out), type="bind", read_only=False),
        Mount(f"{IN}/files", str(files), type="bind", read_only=True),
    ]
    return mounts, link_files(ws, lock, files, f"{IN}/files")


def run(
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
    """``sandbox``: the container is the sandbox (no network, read-only files, ``nobody``),
    whatever is asked. The host keeps the clock (``host_clock``, across a socket bound into
    the container: ``clock_link``) of a run whose model carries code, and of any run with
    ``audit``, and audits it as the local and venv runners do (TEST04, TEST01's twin)."""
    from pinbench.evaluator.runners.clock_link import keeps_clock
    from pinbench.training.distributed.placement import current

    if current() is not None:
        raise UserError(
            "the docker runner does not start ranks that meet other systems' (its container "
            "has no network): an agent runs a training spread over systems in its sandbox "
            "(--runner local or venv)"
        )
    pinned = pinned_image(lock)
    client = connect()
    image = verified_image(client, pinned)
    limits = lock.body.limits
    evidence.environment = {
        "runner": "docker",
        "digest": image.id,
        "image": f"image/{pinned.name}@{pinned.version}",
        "engine": str(client.version().get("Version")),
        "limits": {
            "memory_mb": limits.memory_mb,
            "cpus": limits.cpus,
            "timeout_s": limits.timeout_s,
        },
        "sandbox": "container",
    }
    stop = stop or Stop()
    code = allow_code and needs_code(lock)
    timed = audit or keeps_clock(lock, code=code, allow_pickle=allow_pickle, traced=trace != "none")
    if warm is not None and not timed:
        from pinbench.evaluator.runners.docker_warm import warm_run

        if warm_run(ws, lock, evidence, say, stop, warm, client, image.id, pinned, trace,
                    allow_pickle, allow_code):  # fmt: skip
            return
    cold = _Cold(ws, client, image.id, pinned, say, stop, trace, allow_pickle, allow_code)
    if not timed:
        cold.run(lock, evidence, False)
        return
    from pinbench.evaluator.runners.audited_run import run_and_audit

    run_and_audit(
        ws,
        lock,
        evidence,
        say,
        lambda lk, ev, turn: cold.run(lk, ev, True, unique=turn.unique),
        lambda: cold.answered,
    )


@dataclass
class _Cold:
    """One container for one job: the run's, or its TEST01 twin's."""

    ws: Workspace
    client: Any
    image_id: str
    pinned: LockedImage
    say: Say
    stop: Stop
    trace: str
    allow_pickle: bool
    allow_code: bool
    answered: int = 0
    """The samples the last host-timed container answered (counted when it failed too)."""

    def run(
        self, lock: Lockfile, evidence: Evidence, timed: bool, unique: bool = False
    ) -> Seals | None:
        """Run ``lock`` in a new container into ``evidence``; with ``timed``, across the host's
        clock (TEST04's unique test with ``unique``), returning the seals of its answers (and
        the samples answered twice, otherwise)."""
        from pinbench.evaluator.runners.host_clock import for_run

        ws = self.ws
        self.answered = 0
        with (
            scratch_directory(ws.store.tmp, "run") as tmp,
            scratch_directory(ws.store.tmp, "run") as logs,
            contextlib.ExitStack() as ending,
        ):
            job_dir, out = tmp / "job", tmp / "out"
            job_dir.mkdir()
            out.mkdir()
            mounts, inside = _mounts(ws, lock, job_dir, out)
            clock = None
            if timed:
                (tmp / "clock").mkdir()  # 0755 whatever the umask: the container traverses it
                (tmp / "clock").chmod(0o755)
                clock = for_run(lock, Path(logs), self.stop, tmp / "clock", unique)
                ending.callback(clock.close)
                socket_dir = str(tmp / "clock")
                mounts.append(Mount(f"{IN}/clock", socket_dir, type="bind", read_only=True))
            write_job(
                job_dir / "job.json",
                lock,
                inside["model"],
                inside["dataset"],
                trace=self.trace,
                allow_pickle=self.allow_pickle,
                validation=inside["validation"],
                allow_code=self.allow_code,
                stages=link_stages(ws, lock, job_dir.parent / "files", f"{IN}/files"),
                clock_socket=f"{IN}/clock/{SOCKET}" if timed else "",
            )
            tmp.chmod(0o755)
            job_dir.chmod(0o755)
            (job_dir / "job.json").chmod(0o644)
            out.chmod(0o777)  # the container's user (nobody) writes here
            container = self.client.containers.create(
                self.image_id,
                command=[f"{IN}/job/job.json", f"{IN}/out"],
                mounts=mounts,
                labels={"org.pinbench.lockfile": lock.digest.hex},
                **confined(lock),
            )
            try:
                self._in(container, lock, evidence, out, clock)
            finally:
                if clock is not None:
                    self.answered = len(clock.seals)
                with contextlib.suppress(APIError):
                    container.remove(force=True)
            return (clock.seals, clock.unsteady) if clock is not None else None

    def _in(
        self, container: Any, lock: Lockfile, evidence: Evidence, out: Path, clock: Any
    ) -> None:
        from pinbench.evaluator.proc_tree import PeakReader

        limits, pinned = lock.body.limits, self.pinned
        evidence.environment["container"] = container.id[:12]
        self.say(
            f"container {container.id[:12]} from {self.image_id[7:19]} (no network, read-only)"
        )
        peak = PeakReader()

        def begun(pid: int) -> None:
            peak.start(pid)
            if clock is not None:
                clock.start(pid)

        started = time.monotonic_ns()
        try:
            status, tail = _execute(
                container, limits.timeout_s, limits.memory_mb, self.say, self.stop, begun
            )
        except WorkerCrashed as exc:
            if exc.status == 2 and self.trace != "none":  # the job has a field it cannot read
                raise TraceUnsupported(
                    framework=pinned.name,
                    level=self.trace,
                    offers=["none"],
                    reason=f"the evaluator inside image/{pinned.name}@{pinned.version} "
                    "predates tracing; rebuild the image (`pinbench images build`)",
                ) from None
            if exc.status == 2 and lock.body.chain is not None:  # nor can it a chain's
                raise ChainRefused(
                    stage=lock.body.chain.stages[-1].name,
                    reason=f"the evaluator inside image/{pinned.name}@{pinned.version} "
                    "predates chains in containers; rebuild the image (`pinbench images build`)",
                ) from None
            raise
        finally:
            peak.stop()
        wall_ns = time.monotonic_ns() - started  # the container's start and end within it
        if clock is not None:
            clock.settle()
        collect("docker", out, lock, evidence, status=status, tail=tail)
        if clock is not None:
            clock.apply(evidence)
            host_memory(evidence, peak.bytes)
        check_timings(
            lock.body.scenario.name, evidence.latencies, wall_ns, evidence.details.get("loadgen")
        )


def _execute(
    container: Any,
    timeout_s: int,
    memory_mb: int,
    say: Say,
    stop: Stop,
    on_start: Callable[[int], None] | None = None,
) -> tuple[int, list[str]]:
    """Run the container to its end: its exit status (0 or 1: results written) and its last
    output lines; raise past the time limit, on a stop request, or when it died. ``on_start``:
    called with the container's first process's id as the host sees it, once started."""
    container.start()
    if on_start is not None:
        container.reload()
        on_start(int(container.attrs.get("State", {}).get("Pid") or 0))
    relay = Relay(container.logs(stream=True, follow=True), say)
    deadline = time.monotonic() + timeout_s
    while True:  # wait in slices, so a stop request (a signal, a cancel) is seen
        if stop.is_set():
            with contextlib.suppress(APIError):
                container.kill()
            stop.check()
        left = deadline - time.monotonic()
        if left <= 0:
            container.kill()
            raise RunTimedOut(runner="docker", timeout_s=timeout_s)
        try:
            status = int(container.wait(timeout=max(1, min(WAIT_SLICE_S, left)))["StatusCode"])
            break
        except (ReadTimeout, RequestsConnectionError):
            continue
    stop.check()
    tail = relay.join()
    container.reload()
    if container.attrs["State"].get("OOMKilled"):
        raise OutOfMemory(memory_mb=memory_mb)
    if status not in (0, 1):
        reason = "was killed" if status >= 128 else "stopped"
        raise WorkerCrashed(runner="docker", status=status, reason=reason, tail=tail)
    return status, tail
