"""A real ``pinbench serve`` for the tests: a subprocess on a free loopback port, with users
and tokens seeded in its database, the built-in digits catalog published."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import select

from pinbench import accounts
from pinbench.api_tokens import create_token
from pinbench.config import Settings
from pinbench.db.models import ServerInstance
from pinbench.polling import intervals
from pinbench.registry.manifest import load_manifest
from pinbench.registry.publish import publish
from pinbench.tls import client_context, http_client
from pinbench.workspace import Workspace
from tests.pg import free_port

# Who calls: name -> (admin?, namespaces, scopes). "reader" can only read.
PEOPLE: dict[str, tuple[bool, list[str], list[str]]] = {
    "admin": (True, [], ["read", "publish", "run", "admin"]),
    "owner": (False, ["vision"], ["read", "publish", "run"]),
    "other": (False, ["audio"], ["read", "publish", "run"]),
    "reader": (False, [], ["read"]),
}


@dataclass
class Server:
    url: str
    home: Path
    database_url: str
    tokens: dict[str, str] = field(default_factory=dict)
    token_ids: dict[str, str] = field(default_factory=dict)

    def workspace(self) -> Workspace:
        return Workspace(Settings(home=self.home, database_url=self.database_url))

    def client(self, who: str | None = None) -> httpx.Client:
        headers = {"Authorization": f"Bearer {self.tokens[who]}"} if who else {}
        return http_client(self.url, headers, 60)


def seed(ws: Workspace, catalog_dir: Path | None) -> tuple[dict[str, str], dict[str, str]]:
    """Initialise the database, add PEOPLE with one token each, publish the catalog."""
    ws.init()
    tokens, ids = {}, {}
    with ws.writes() as rows:
        for name, (admin, namespaces, scopes) in PEOPLE.items():
            accounts.add_user(rows, name, admin=admin)
            for ns in namespaces:
                accounts.grant(rows, name, ns)
            token_id, _, text = create_token(rows, name, name="tests", scopes=scopes)
            tokens[name], ids[name] = text, token_id
    if catalog_dir is not None:
        for path in sorted(catalog_dir.glob("*.yaml")):
            publish(ws, load_manifest(path), manifest_dir=catalog_dir, publisher="admin")
    return tokens, ids


def seed_home(
    home: Path, database_url: str, catalog_dir: Path | None = None
) -> tuple[dict[str, str], dict[str, str]]:
    """``seed`` the workspace on ``home`` and ``database_url`` (closed afterwards)."""
    ws = Workspace(Settings(home=home, database_url=database_url))
    try:
        return seed(ws, catalog_dir)
    finally:
        ws.close()


@contextmanager
def api_server(
    home: Path,
    database_url: str,
    *args: str,
    catalog_dir: Path | None = None,
) -> Iterator[Server]:
    """Seed the database, start ``pinbench serve ARGS`` and wait until it answers."""
    tokens, ids = seed_home(home, database_url, catalog_dir)
    with serve(home, database_url, *args) as url:
        yield Server(url, home, database_url, tokens, ids)


@contextmanager
def serve(home: Path, database_url: str, *args: str) -> Iterator[str]:
    """Start ``pinbench serve ARGS`` on a database already seeded; yield its URL once it (and
    each of its ``--workers``) answers; stop it."""
    with serve_process(home, database_url, *args) as (url, proc):
        _wait_for_workers(home, database_url, proc, _workers(args))
        yield url


@contextmanager
def serve_process(
    home: Path,
    database_url: str,
    *args: str,
    env: dict[str, str] | None = None,
    prefix: Sequence[str] = (),
) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """``pinbench serve ARGS`` on a free loopback port, in a session of its own, with ``env``
    added to its environment (``PINBENCH_DRAIN_S`` 0 unless ``env`` sets it: SIGTERM stops it
    at once): its URL and process once it answers. On the way out, unless the test has ended
    it: SIGTERM to its group, SIGKILL after 20 s. ``prefix``: a command that execs the server
    (``nsenter -t PID -m --``: in another mount namespace)."""
    port = free_port()
    environ = {k: v for k, v in os.environ.items() if k not in ("PINBENCH_URL", "PINBENCH_TOKEN")}
    environ |= {"PINBENCH_HOME": str(home), "PINBENCH_DATABASE_URL": database_url}
    environ |= {"PINBENCH_DRAIN_S": "0", **(env or {})}  # tests that drain say so
    log = home / "serve.log"
    if log.exists():  # a second server on the same home keeps its own log
        log = home / f"serve-{port}.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [*prefix, sys.executable, "-m", "pinbench", "serve", "--port", str(port), *args],
            env=environ,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        _wait(url, proc, log)
        yield url, proc
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


def _workers(args: tuple[str, ...]) -> int:
    for i, arg in enumerate(args):
        if arg == "--workers":
            return int(args[i + 1])
        if arg.startswith("--workers="):
            return int(arg.partition("=")[2])
    return 1


def _wait_for_workers(
    home: Path, database_url: str, proc: subprocess.Popen[bytes], workers: int
) -> None:
    """With ``--workers N``, one worker answering is not the server being up: wait until
    each of uvicorn's worker processes has registered its run pool (after which it
    accepts), so a test's first burst never meets a worker still starting."""
    if workers < 2:
        return
    ws = Workspace(Settings(home=home, database_url=database_url))
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            children = _children(proc.pid)
            with ws.transaction() as session:
                pids = set(session.scalars(select(ServerInstance.pid)))
            if len(pids & children) >= workers:
                time.sleep(0.5)  # registered in startup; accepting follows at once
                return
            time.sleep(0.2)
    finally:
        ws.close()
    raise RuntimeError(f"pinbench serve: not all {workers} workers started within 60 s")


def _children(pid: int) -> set[int]:
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except OSError:
        return set()
    return {int(p) for p in text.split()}


def _wait(url: str, proc: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 60
    pauses = intervals(0.2)
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"pinbench serve exited {proc.returncode}: {log.read_text()}")
        try:
            health = httpx.get(f"{url}/api/v1/health", timeout=2, verify=client_context())
            if health.status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(next(pauses))
    raise RuntimeError(f"pinbench serve did not answer within 60 s: {log.read_text()}")


def wait_for_status(
    c: httpx.Client, run_id: str, until: tuple[str, ...], timeout_s: float = 180
) -> dict[str, Any]:
    """The run (``GET /api/v1/runs/ID``) once its status is one of ``until``."""
    deadline = time.monotonic() + timeout_s
    pauses = intervals(0.2)  # soon, then every 0.2 s, as a client waits (issue 49)
    while True:
        info: dict[str, Any] = c.get(f"/api/v1/runs/{run_id}").json()
        if info["status"] in until:
            return info
        assert time.monotonic() < deadline, info
        time.sleep(next(pauses))


def token_secret(token: str) -> str:
    """The whole secret of a token as the server reads it: a urlsafe secret may itself hold
    underscores, so a split on ``_`` may give a two-letter piece found anywhere in a log."""
    from pinbench.api_tokens import split_token

    parts = split_token(token)
    assert parts is not None, "not a pinbench token"
    return parts[1]
