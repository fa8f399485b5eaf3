"""A Docker Engine and an image registry, started by the tests themselves.

``dockerd`` runs on its own socket in a temporary folder (``--storage-driver=vfs
--iptables=false --bridge=none``) and is stopped afterwards; Debian's ``docker-registry``
listens on a free 127.0.0.1 port. Both need root and the Debian packages that
``scripts/install-system-deps.sh`` installs (``make test`` runs it); without them these tests
fail, as the PostgreSQL ones do, never skip.

Under pytest-xdist the tests that start a Docker Engine are in one group (``ONE_ENGINE``): one
dockerd at a time on this machine, and the images its module builds, built once.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import NoReturn

import pytest

from tests.pg import free_port

ONE_ENGINE = pytest.mark.xdist_group(name="docker")
"""``pytestmark`` of each module that starts a Docker Engine: they run on one worker."""


class ServiceUnavailable(RuntimeError):
    pass


def unavailable(reason: str) -> NoReturn:
    raise ServiceUnavailable(f"{reason}: run `make test` (scripts/install-system-deps.sh) as root")


@contextmanager
def docker_engine() -> Iterator[str]:
    """Start a private dockerd; yield its ``DOCKER_HOST``."""
    dockerd = shutil.which("dockerd")
    if dockerd is None or os.geteuid() != 0:
        unavailable("a Docker Engine needs root and Debian's docker.io (dockerd)")
    import docker

    root = Path(tempfile.mkdtemp(prefix="pb-dockerd-", dir="/tmp"))
    host = f"unix://{root / 'docker.sock'}"
    log = (root / "dockerd.log").open("wb")
    proc = subprocess.Popen(
        [str(dockerd), "--host", host, "--data-root", str(root / "data"),
         "--exec-root", str(root / "exec"), "--pidfile", str(root / "dockerd.pid"),
         "--storage-driver=vfs", "--iptables=false", "--bridge=none"],
        stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                docker.DockerClient(base_url=host, timeout=5).ping()
                break
            except Exception:
                if proc.poll() is not None or time.monotonic() > deadline:
                    tail = (root / "dockerd.log").read_text(errors="replace")[-2000:]
                    raise RuntimeError(f"dockerd did not start:\n{tail}") from None
                time.sleep(0.3)
        yield host
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
        subprocess.run(["umount", "-R", str(root / "exec")], capture_output=True, check=False)
        shutil.rmtree(root, ignore_errors=True)


@contextmanager
def image_registry() -> Iterator[str]:
    """Start Debian's docker-registry on 127.0.0.1; yield ``127.0.0.1:PORT``."""
    binary = shutil.which("docker-registry")
    if binary is None:
        unavailable("Debian's docker-registry is not installed")
    import urllib.request

    root = Path(tempfile.mkdtemp(prefix="pb-registry-"))
    port = free_port()
    config = root / "config.yml"
    config.write_text(
        "version: 0.1\nlog:\n  level: warn\nstorage:\n  filesystem:\n"
        f"    rootdirectory: {root / 'data'}\nhttp:\n  addr: 127.0.0.1:{port}\n"
    )
    proc = subprocess.Popen(
        [str(binary), "serve", str(config)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/v2/", timeout=2).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("docker-registry did not start") from None
                time.sleep(0.2)
        yield f"127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        shutil.rmtree(root, ignore_errors=True)
