"""What runs besides the CPU: the container engine (the docker runner) and GPUs (NVML)."""

from __future__ import annotations

import subprocess

from pinbench.doctor.findings import Finding, Place

DOCKER_FIX = (
    "install Docker Engine (Debian: apt-get install -y docker.io) and start it, or run with "
    "--runner local or --runner venv"
)


def docker(place: Place) -> Finding:
    """``warn`` where the docker runner cannot run: only that runner needs the engine."""
    from pinbench.programs import ProgramUnavailable, system_program

    try:
        cli = str(system_program("docker"))
    except ProgramUnavailable as exc:
        said = f"the docker CLI (the docker runner) is {exc.reason}"
        return Finding("docker", "warn", said, DOCKER_FIX)
    command = [cli, "version", "--format", "{{.Server.Version}}"]
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=15, env=dict(place.environ)
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Finding("docker", "warn", f"{cli} did not answer: {exc}", DOCKER_FIX)
    if done.returncode != 0:
        said = (done.stderr.strip().splitlines() or ["no output"])[-1]
        where = place.environ.get("DOCKER_HOST", "the default socket")
        fix = "start the Docker Engine (systemctl start docker, or dockerd), or run with "
        fix += "--runner local or --runner venv"
        return Finding("docker", "warn", f"no Docker Engine answers at {where}: {said}", fix)
    return Finding("docker", "ok", f"Docker Engine {done.stdout.strip()} ({cli})")


def gpus(place: Place) -> Finding:
    """The GPUs NVML reports; none is not a fault (runs use the CPU)."""
    from pinbench.trace.system import Nvml

    try:
        nvml = Nvml()
    except OSError as exc:
        return Finding("gpus", "ok", f"no GPU through NVML ({exc}): runs use the CPU")
    try:
        count = len(nvml.handles)
    finally:
        nvml.close()
    from pinbench.hardware import gpus as described

    names = ", ".join(f"{g['name']} (driver {g['driver']})" for g in described()) or "unnamed"
    return Finding("gpus", "ok", f"{count} GPU(s) through NVML: {names}")


def check(place: Place) -> list[Finding]:
    return [docker(place), gpus(place)]
