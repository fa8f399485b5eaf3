"""A Docker Engine and an image registry, started by the tests themselves.

``dockerd`` runs on its own socket in a temporary folder (``--iptables=false --bridge=none``,
the ``overlay2`` storage driver where the folder's file system takes an overlay mount, else
``vfs``) and is stopped afterwards; Debian's ``docker-registry``
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


def storage_driver(folder: Path) -> str:
    """``overlay2`` where ``folder``'s file system takes an overlay mount, else ``vfs``, which
    works everywhere but copies an image's whole file system for every layer and every
    container (issue 49: the onnxruntime and torch images built in 45 + 129 s on overlay2 and
    132 + 218 s on vfs here, and each container of the torch image took a gigabyte's copy)."""
    probe = Path(tempfile.mkdtemp(prefix="overlay-probe-", dir=folder))
    try:
        for name in ("lower", "upper", "work", "merged"):
            (probe / name).mkdir()
        options = f"lowerdir={probe / 'lower'},upperdir={probe / 'upper'},workdir={probe / 'work'}"
        mounted = subprocess.run(
            ["mount", "-t", "overlay", "overlay", "-o", options, str(probe / "merged")],
            capture_output=True, check=False,
        )  # fmt: skip
        if mounted.returncode != 0:
            return "vfs"
        subprocess.run(["umount", str(probe / "merged")], capture_output=True, check=False)
        return "overlay2"
    finally:
        shutil.rmtree(probe, ignore_errors=True)


@contextmanager
def docker_engine() -> Iterator[str]:
    """Start a private dockerd; yield its ``DOCKER_HOST``."""
    dockerd = shutil.which("dockerd")
    if dockerd is None or os.geteuid() != 0:
        unavailable("a Docker Engine needs root and Debian's docker.io (dockerd)")
    import docker

    root = Path(tempfile.mkdtemp(prefix="pb-dockerd-", dir="/tmp"))
    _memory_backed(root)
    host = f"unix://{root / 'docker.sock'}"
    log = (root / "dockerd.log").open("wb")
    proc = subprocess.Popen(
        [str(dockerd), "--host", host, "--data-root", str(root / "data"),
         "--exec-root", str(root / "exec"), "--pidfile", str(root / "dockerd.pid"),
         f"--storage-driver={storage_driver(root)}", "--iptables=false", "--bridge=none"],
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
        _unmount_below(root)
        shutil.rmtree(root, ignore_errors=True)


ENGINE_MEMORY = "12g"
"""The ceiling of the tmpfs an engine's images live in (the two images and their build stages
take about 4 GB; memory a tmpfs has not been written is not used)."""


def _memory_backed(folder: Path) -> None:
    """Mount a tmpfs on ``folder`` where one mounts (else leave it on disk). An engine's images
    are gigabytes of small files: on this machine's ext4, mounted with ``discard``, removing
    them afterwards took minutes (issue 49: a 184 s teardown, each unlink waiting on the
    block device); a tmpfs is gone with its unmount."""
    subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={ENGINE_MEMORY},mode=0700", "tmpfs", str(folder)],
        capture_output=True, check=False,
    )  # fmt: skip


def rootfs_cache() -> Path:
    """Where the tests keep the base image's debootstrapped root file system between runs, as
    pip keeps the wheels it downloads (``$PINBENCH_TEST_CACHE``, else
    ``~/.cache/pinbench-tests``): a run on a machine that has one imports it (seconds), the
    first run on a machine debootstraps it from the Debian mirror (72 s on a quiet machine,
    266 s on a loaded one, issue 49). Named by the suite and its packages, so that a change to
    either takes a new one; ``pinbench images build`` keeps its own in the home's cache."""
    from pinbench.images.base import PACKAGES, SUITE

    default = Path.home() / ".cache" / "pinbench-tests"
    root = Path(os.environ.get("PINBENCH_TEST_CACHE", default)) / "rootfs"
    folder = root / f"{SUITE}-{'-'.join(PACKAGES)}"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _unmount_below(root: Path) -> None:
    """Unmount what the engine left mounted under ``root`` (its exec root; an overlay of a
    container it could not remove), deepest first, so that the folder can be removed."""
    mounts = [line.split()[1] for line in Path("/proc/self/mounts").read_text().splitlines()]
    below = [m for m in mounts if m == str(root) or m.startswith(f"{root}/")]
    for mount in sorted(below, key=len, reverse=True):
        subprocess.run(["umount", "-l", mount], capture_output=True, check=False)


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
