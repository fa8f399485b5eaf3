"""The base image, built here: Debian bookworm by ``debootstrap`` (minbase, python3 and its venv
module), then ``docker import``. No image registry is needed; the root filesystem tarball is
cached, so a new engine gets the base without running debootstrap again.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from docker.errors import ImageNotFound

from pinbench.errors import UserError
from pinbench.images.retried import TRIES, run_retried

BASE_REPOSITORY = "pinbench/base"
SUITE = "bookworm"
PACKAGES = ("python3", "python3-venv")
MIRROR = os.environ.get("PINBENCH_DEBIAN_MIRROR", "http://deb.debian.org/debian")
Say = Callable[[str], None]


class BaseImageFailed(UserError):
    def __init__(self, *, reason: str) -> None:
        super().__init__(
            f"could not build the base image: {reason}; or name one that has Python 3.11 "
            "with --base (e.g. python:3.11-slim@sha256:...)"
        )
        self.reason = reason


def base_tag() -> str:
    return f"{BASE_REPOSITORY}:{SUITE}"


def ensure_base(client: Any, cache: Path, say: Say) -> str:
    """The base image's ID, importing (and if need be debootstrapping) it first."""
    try:
        image: Any = client.images.get(base_tag())
        return str(image.id)
    except ImageNotFound:
        pass
    tarball = cache / f"rootfs-{SUITE}.tar"
    if not tarball.exists():
        _debootstrap(tarball, say)
    say(f"importing {tarball.name} as {base_tag()}")
    client.api.import_image_from_file(
        str(tarball), repository=BASE_REPOSITORY, tag=SUITE, changes=["ENV LANG=C.UTF-8"]
    )
    return str(client.images.get(base_tag()).id)


PROXIES = ("http_proxy", "https_proxy", "no_proxy", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY")
"""What of the caller's environment debootstrap is given besides the system's PATH: the network's
proxies (never ``DEBOOTSTRAP_DIR``, ``TAR_OPTIONS`` or a PATH of the caller's)."""


def _debootstrap(
    tarball: Path, say: Say, *, tries: int = TRIES, sleep: Callable[[float], None] = time.sleep
) -> None:
    """Debootstrap into a fresh folder per try (``images.retried``: a mirror's transient
    failure is tried again), clear the caches out, tar it as ``tarball``."""
    from pinbench.programs import ProgramUnavailable, clean_environment, system_program

    try:
        debootstrap = str(system_program("debootstrap"))
    except ProgramUnavailable as exc:
        raise BaseImageFailed(
            reason=f"debootstrap is {exc.reason} (apt-get install debootstrap)"
        ) from None
    if os.geteuid() != 0:
        raise BaseImageFailed(reason="debootstrap needs root")
    tarball.parent.mkdir(parents=True, exist_ok=True)
    say(f"debootstrap {SUITE} (minbase + {', '.join(PACKAGES)}) from {MIRROR}")
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="rootfs-", dir=tarball.parent) as tmp:
        argv = [debootstrap, "--variant=minbase", f"--include={','.join(PACKAGES)}"]

        def command(attempt: int) -> list[str]:
            return [*argv, SUITE, str(Path(tmp) / f"root-{attempt}"), MIRROR]

        env = clean_environment(*PROXIES)  # debootstrap finds dpkg, chroot and wget on PATH
        done = run_retried(command, what="debootstrap", say=say, tries=tries, sleep=sleep, env=env)
        proc = done.process
        if proc.returncode != 0:
            tail = " | ".join(
                proc.stdout.strip().splitlines()[-3:] + proc.stderr.strip().splitlines()[-3:]
            )
            why = (
                f"still failing after {done.tries} tries ({done.transient})"
                if done.transient is not None
                else "not tried again (not a transient mirror error)"
            )
            raise BaseImageFailed(reason=f"debootstrap failed, {why}: {tail}")
        root = Path(tmp) / f"root-{done.tries}"
        for junk in ("var/cache/apt/archives", "var/lib/apt/lists", "var/log", "usr/share/doc",
                     "usr/share/man", "usr/share/locale"):  # fmt: skip
            shutil.rmtree(root / junk, ignore_errors=True)
            (root / junk).mkdir(parents=True, exist_ok=True)
        partial = tarball.with_suffix(".tar.tmp")
        subprocess.run(
            [
                str(system_program("tar")),
                "--numeric-owner",
                "--sort=name",
                "-C",
                str(root),
                "-cf",
                str(partial),
                ".",
            ],
            check=True,
            env=clean_environment(),
        )
        partial.replace(tarball)
    mib = tarball.stat().st_size >> 20
    say(f"root filesystem ready in {time.monotonic() - started:.0f} s ({mib} MiB)")
