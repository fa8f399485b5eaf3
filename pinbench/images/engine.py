"""The Docker Engine, through the ``docker`` SDK (``DOCKER_HOST`` picks which one)."""

from __future__ import annotations

import os
from typing import Any

import docker
from docker.errors import DockerException

from pinbench.errors import UserError


class DockerUnavailable(UserError):
    def __init__(self, *, host: str, reason: str) -> None:
        super().__init__(
            f"no Docker Engine answers at {host} ({reason}); start one and set DOCKER_HOST, "
            "or use --runner venv"
        )
        self.host = host
        self.reason = reason


def connect(timeout: int = 120) -> Any:
    """A client for the engine at ``DOCKER_HOST`` (default: the local socket), checked alive."""
    host = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
    try:
        client = docker.from_env(timeout=timeout)
        client.ping()
    except DockerException as exc:
        raise DockerUnavailable(host=host, reason=str(exc).split("\n")[0][:200]) from None
    return client
