"""The docker runner: the evaluator in a container whose image is pinned by digest.

Before starting, the engine's image is looked up by the lockfile's digest (the image ID), so
no other image can stand in for it; a tag that now names another image is reported as such.
The container gets the model and dataset files read-only, one writable output folder, no
network, a read-only root filesystem, a non-root user, no capabilities, no new privileges,
and the lockfile's memory / CPU / time limits. What it writes is validated by the host.
"""

from __future__ import annotations

import contextlib
import time
from pathlib import Path
from typing import Any

from docker.errors import APIError, ImageNotFound
from docker.types import Mount
from requests.exceptions import ConnectionError as RequestsConnectionError
from requests.exceptions import ReadTimeout

from pinbench.artifacts.scratch import scratch_directory
from pinbench.chains.spec import ChainRefused
from pinbench.errors import UserError
from pinbench.evaluator.job import ROLES, Evidence, Say
from pinbench.evaluator.model_folder import link_or_copy
from pinbench.evaluator.runners.local import model_folder, stage_folders, store_paths
from pinbench.evaluator.runners.process import (
    Relay,
    RunTimedOut,
    WorkerCrashed,
    collect,
    write_job,
)
from pinbench.evaluator.stop import Stop
from pinbench.evaluator.timing_checks import check_timings
from pinbench.evaluator.warm import ENDED, WarmEvaluator, WarmPool, run_warm
from pinbench.images.engine import connect
from pinbench.registry.lockfile import LockedImage, Lockfile
from pinbench.trace.levels import TraceUnsupported
from pinbench.workspace import Workspace

IN = "/pinbench"
NOBODY = "65534:65534"
TMPFS = "rw,nosuid,nodev,size=256m,mode=1777"
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


class OutOfMemory(UserError):
    def __init__(self, *, memory_mb: int) -> None:
        super().__init__(
            f"the container exceeded its memory limit ({memory_mb} MiB, limits.memory_mb in the "
            "lockfile) and was killed"
        )
        self.memory_mb = memory_mb


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


Inside = dict[str, dict[str, str]]


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
    return mounts, _link_files(ws, lock, files, f"{IN}/files")


def _link_files(ws: Workspace, lock: Lockfile, files: Path, inside_at: str) -> Inside:
    """Link the pinned files into ``files`` (seen in the container at ``inside_at``): the
    model's at their artifact paths in a folder of their own (``files/model``, where it is
    loaded from), the datasets' as numbered files."""
    inside: Inside = {}
    for role in ROLES:
        folder = files / role
        if role == "model":
            placed = model_folder(ws, lock, folder)
            inside[role] = {path: f"{inside_at}/{role}/{path}" for path in placed}
            continue
        inside[role] = {}
        folder.mkdir(parents=True)
        for i, (path, host) in enumerate(sorted(store_paths(ws, lock, role).items())):
            link_or_copy(host, folder / str(i))
            inside[role][path] = f"{inside_at}/{role}/{i}"
        folder.chmod(0o755)
    files.chmod(0o755)
    return inside


def _link_stages(ws: Workspace, lock: Lockfile, files: Path, inside_at: str) -> Inside:
    """A chain's stages' files (``stage_folders``), each stage's in ``files/stages/<name>``;
    where each file is seen in the container, by stage name. None without a chain."""
    placed = stage_folders(ws, lock, files / "stages")
    if placed:
        (files / "stages").chmod(0o755)
    return {
        name: {path: f"{inside_at}/stages/{name}/{path}" for path in paths}
        for name, paths in placed.items()
    }


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
    whatever is asked. ``audit`` is refused before a docker run starts (``run.check_audit``)."""
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
    if warm is not None:

        def write(n: int, job: Path, out: Path, _: WarmEvaluator) -> None:
            inside = _link_files(ws, lock, job / "files", f"{IN}/jobs/{n}/files")
            stages = _link_stages(ws, lock, job / "files", f"{IN}/jobs/{n}/files")
            write_job(
                job / "job.json",
                lock,
                inside["model"],
                inside["dataset"],
                None,
                trace,
                allow_pickle,
                inside["validation"],
                allow_code=allow_code,
                stages=stages,
            )
            job.chmod(0o755)
            (job / "job.json").chmod(0o644)
            out.chmod(0o777)

        label = f"image/{pinned.name}@{pinned.version}"

        def start(root: Path, idle_s: float) -> WarmEvaluator:
            return DockerWarm(root, client, image.id, lock, idle_s, label)

        key = ("docker", image.id, str(limits.memory_mb), str(limits.cpus))
        if run_warm(warm, key, start, lock, evidence, say, stop, write):
            return
    with scratch_directory(ws.store.tmp, "run") as tmp:
        job_dir, out = tmp / "job", tmp / "out"
        job_dir.mkdir()
        out.mkdir()
        mounts, inside = _mounts(ws, lock, job_dir, out)
        write_job(
            job_dir / "job.json",
            lock,
            inside["model"],
            inside["dataset"],
            trace=trace,
            allow_pickle=allow_pickle,
            validation=inside["validation"],
            allow_code=allow_code,
            stages=_link_stages(ws, lock, job_dir.parent / "files", f"{IN}/files"),
        )
        tmp.chmod(0o755)
        job_dir.chmod(0o755)
        (job_dir / "job.json").chmod(0o644)
        out.chmod(0o777)  # the container's user (nobody) writes here
        container = client.containers.create(
            image.id,
            command=[f"{IN}/job/job.json", f"{IN}/out"],
            mounts=mounts,
            labels={"org.pinbench.lockfile": lock.digest.hex},
            **_confined(lock),
        )
        try:
            evidence.environment["container"] = container.id[:12]
            say(f"container {container.id[:12]} from {image.id[7:19]} (no network, read-only)")
            started = time.monotonic_ns()
            try:
                status, tail = _execute(container, limits.timeout_s, limits.memory_mb, say, stop)
            except WorkerCrashed as exc:
                if exc.status == 2 and trace != "none":  # the job has a field it cannot read
                    raise TraceUnsupported(
                        framework=pinned.name,
                        level=trace,
                        offers=["none"],
                        reason=f"the evaluator inside image/{pinned.name}@{pinned.version} "
                        "predates tracing; rebuild the image (`pinbench images build`)",
                    ) from None
                if exc.status == 2 and lock.body.chain is not None:  # nor can it a chain's
                    raise ChainRefused(
                        stage=lock.body.chain.stages[-1].name,
                        reason=f"the evaluator inside image/{pinned.name}@{pinned.version} "
                        "predates chains in containers; rebuild the image "
                        "(`pinbench images build`)",
                    ) from None
                raise
            wall_ns = time.monotonic_ns() - started  # the container's start and end within it
            collect("docker", out, lock, evidence, status=status, tail=tail)
            check_timings(
                lock.body.scenario.name,
                evidence.latencies,
                wall_ns,
                evidence.details.get("loadgen"),
            )
        finally:
            with contextlib.suppress(APIError):
                container.remove(force=True)


def _confined(lock: Lockfile) -> dict[str, Any]:
    """What every evaluator container gets: no network, a read-only root, nobody, no
    capabilities, no new privileges, and the lockfile's memory and CPU limits."""
    limits = lock.body.limits
    return {
        "network_mode": "none",
        "read_only": True,
        "user": NOBODY,
        "cap_drop": ["ALL"],
        "security_opt": ["no-new-privileges"],
        "tmpfs": {"/tmp": TMPFS},
        "mem_limit": f"{limits.memory_mb}m",
        "memswap_limit": f"{limits.memory_mb}m",
        "nano_cpus": int(limits.cpus * 1e9) if limits.cpus else None,
        "pids_limit": 512,
    }


class DockerWarm(WarmEvaluator):
    """A warm evaluator in one long-lived container (``pinbench.evaluator.warm``), confined as
    a cold one is; its jobs folder is mounted read-only, its answers folder writable."""

    runner = "docker"

    def __init__(
        self, root: Path, client: Any, image_id: str, lock: Lockfile, idle_s: float, label: str
    ) -> None:
        super().__init__(root)
        self.memory_mb = lock.body.limits.memory_mb
        self.label = label
        root.chmod(0o755)
        self.jobs.chmod(0o755)
        self.out.chmod(0o777)  # the container's user (nobody) writes here
        self.container = client.containers.create(
            image_id,
            command=["--serve", f"{IN}/jobs", f"{IN}/out", f"{idle_s:g}"],
            mounts=[
                Mount(f"{IN}/jobs", str(self.jobs), type="bind", read_only=True),
                Mount(f"{IN}/out", str(self.out), type="bind", read_only=False),
            ],
            labels={"org.pinbench.warm": "1"},
            **_confined(lock),
        )
        try:
            self.container.start()
            self.relay = Relay(self.container.logs(stream=True, follow=True), self.route)
        except BaseException:
            self.kill()
            raise

    @property
    def ident(self) -> str:
        return f"container {self.container.id[:12]}"

    def recorded(self) -> dict[str, str]:
        return {**super().recorded(), "container": self.container.id[:12]}

    def alive(self) -> bool:
        try:
            self.container.reload()
        except APIError:
            return False
        return bool(self.container.status == "running")

    def kill(self) -> None:
        with contextlib.suppress(APIError, RequestsConnectionError, ReadTimeout):
            self.container.remove(force=True)

    def died(self, tail: list[str]) -> Exception:
        state: dict[str, Any] = {}
        with contextlib.suppress(APIError):
            self.container.reload()
            state = self.container.attrs.get("State") or {}
        if state.get("OOMKilled"):
            return OutOfMemory(memory_mb=self.memory_mb)
        code = int(state.get("ExitCode", -1))
        if code == 2 and self.served == 0 and any("usage:" in line for line in tail):
            return UserError(
                f"the evaluator inside {self.label} predates warm evaluators: rebuild the "
                "image (`pinbench images build`), or run without --warm"
            )
        return self.crashed(code, ENDED, tail)


def _execute(
    container: Any, timeout_s: int, memory_mb: int, say: Say, stop: Stop
) -> tuple[int, list[str]]:
    """Run the container to its end: its exit status (0 or 1: results written) and its last
    output lines; raise past the time limit, on a stop request, or when it died."""
    container.start()
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
