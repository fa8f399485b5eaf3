"""A warm evaluator in one long-lived container (``pinbench.evaluator.warm``), confined as a
cold one is (``docker_parts.confined``)."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

from docker.errors import APIError
from docker.types import Mount
from requests.exceptions import ConnectionError as RequestsConnectionError
from requests.exceptions import ReadTimeout

from pinbench.errors import UserError
from pinbench.evaluator.runners.docker_parts import (
    IN,
    OutOfMemory,
    confined,
    link_files,
    link_stages,
)
from pinbench.evaluator.runners.process import Relay, write_job
from pinbench.evaluator.warm import ENDED, WarmEvaluator, WarmPool, run_warm
from pinbench.registry.lockfile import LockedImage, Lockfile
from pinbench.worker.job import Evidence, Say
from pinbench.worker.stop import Stop
from pinbench.workspace import Workspace


def warm_run(
    ws: Workspace,
    lock: Lockfile,
    evidence: Evidence,
    say: Say,
    stop: Stop,
    warm: WarmPool,
    client: Any,
    image_id: str,
    pinned: LockedImage,
    trace: str,
    allow_pickle: bool,
    allow_code: bool,
) -> bool:
    """Run ``lock`` on the pool's container for its image and limits (``run_warm``); False
    (recorded why) when it must run cold."""
    limits = lock.body.limits

    def write(n: int, job: Path, out: Path, _: WarmEvaluator) -> None:
        inside = link_files(ws, lock, job / "files", f"{IN}/jobs/{n}/files")
        stages = link_stages(ws, lock, job / "files", f"{IN}/jobs/{n}/files")
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
        return DockerWarm(root, client, image_id, lock, idle_s, label)

    key = ("docker", image_id, str(limits.memory_mb), str(limits.cpus))
    return run_warm(warm, key, start, lock, evidence, say, stop, write)


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
            **confined(lock),
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
