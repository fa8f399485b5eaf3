"""A real PostgreSQL server for the tests: ``initdb`` + ``pg_ctl`` on a free loopback port.

PostgreSQL refuses to run as root, so as root the server runs as the ``postgres`` user that
Debian's package creates. With ``CI=true`` a missing server is a failure, never a skip.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pytest


class PostgresUnavailable(RuntimeError):
    pass


def _bindir() -> Path:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"))
    if found:
        return Path(found[-1]).parent
    which = shutil.which("pg_ctl")
    if which:
        return Path(which).resolve().parent
    raise PostgresUnavailable("pg_ctl not found: install Debian's postgresql package")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def closed_port(request: pytest.FixtureRequest) -> int:
    """A loopback port that refuses connections for the rest of the test: held bound and not
    listening, so that no server another test starts meanwhile can take it (a port found free
    and let go was once taken by another test's S3 server while a test counted on it)."""
    held = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    request.addfinalizer(held.close)
    held.bind(("127.0.0.1", 0))
    return int(held.getsockname()[1])


@dataclass(frozen=True)
class Postgres:
    """A running throwaway server (``postgres_instance``): its URL, and ``stop``/``start`` for
    tests of a database outage."""

    url: str
    ctl: Callable[[str], None]
    data: Path
    """Its data folder (``postmaster.pid`` names the server's process)."""

    def stop(self) -> None:
        """Stop it at once (``pg_ctl -m immediate``): clients see connections refused."""
        self.ctl("stop")

    def start(self) -> None:
        self.ctl("start")

    def processes(self) -> list[int]:
        """The server's process and its children (backends, background workers)."""
        main = int((self.data / "postmaster.pid").read_text().split()[0])
        children = Path(f"/proc/{main}/task/{main}/children").read_text().split()
        return [main, *map(int, children)]


@contextmanager
def postgres_server(password: str | None = None) -> Iterator[str]:
    """Start a throwaway server; yield a SQLAlchemy URL of its ``postgres`` database. With a
    ``password``, TCP connections must give it (SCRAM); without, they are trusted."""
    with postgres_instance(password) as pg:
        yield pg.url


@contextmanager
def postgres_instance(password: str | None = None) -> Iterator[Postgres]:
    """``postgres_server``, yielding the server's handle."""
    bindir = _bindir()
    root = Path(tempfile.mkdtemp(prefix="pinbench-pg-"))
    data, sock = root / "data", root / "sock"
    sock.mkdir()
    prefix: list[str] = []
    if os.geteuid() == 0:
        shutil.chown(root, "postgres")
        shutil.chown(sock, "postgres")
        root.chmod(0o755)
        prefix = ["runuser", "-u", "postgres", "--"]
    port = free_port()

    def run(*cmd: str) -> None:
        subprocess.run([*prefix, *cmd], check=True, capture_output=True, timeout=120)

    auth = ["--auth=trust"]
    if password is not None:
        pwfile = root / "pw"
        pwfile.write_text(password + "\n")
        if prefix:
            shutil.chown(pwfile, "postgres")
        auth = ["--auth-local=trust", "--auth-host=scram-sha-256", f"--pwfile={pwfile}"]
    opts = f"-p {port} -k {sock} -c listen_addresses=127.0.0.1 -c fsync=off"

    def ctl(action: str) -> None:
        pg_ctl = [str(bindir / "pg_ctl"), "-D", str(data)]
        if action == "start":
            run(*pg_ctl, "-o", opts, "-l", str(root / "log"), "-w", "start")
        else:
            run(*pg_ctl, "-m", "immediate", "-w", "stop")

    try:
        run(str(bindir / "initdb"), "-D", str(data), "-U", "pinbench", *auth, "-E", "UTF8")
        ctl("start")
    except (subprocess.CalledProcessError, OSError) as exc:
        detail = getattr(exc, "stderr", b"") or b""
        shutil.rmtree(root, ignore_errors=True)
        raise PostgresUnavailable(f"could not start PostgreSQL: {exc} {detail!r}") from exc
    try:
        user = "pinbench" if password is None else f"pinbench:{password}"
        yield Postgres(f"postgresql+psycopg://{user}@127.0.0.1:{port}/postgres", ctl, data)
    finally:
        subprocess.run(
            [*prefix, str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"],
            capture_output=True,
            timeout=60,
            check=False,
        )
        shutil.rmtree(root, ignore_errors=True)
