"""A client waits out a server's brief absence (issue 38 item 5): ``pinbench run`` waiting on a
server used to exit 3 on one 503 while the server went on to finish the run.

A real ``pinbench serve`` stands behind a small real HTTP proxy, started here, that answers
503 (with ``Retry-After``) to the requests the test picks, the way a load balancer does while
a server restarts; ``pinbench`` runs as a user runs it, in a subprocess, through the proxy."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest

from pinbench.bounds import RETRY_S
from pinbench.retrying import InvalidRetryTime, Retrying, retry_after
from tests.apiserver import Server, api_server
from tests.pg import closed_port
from tests.test_api import REQUEST

Pick = Callable[[str, str, int], bool]
"""(method, path, how many such requests came before) -> answer 503 instead of passing on."""


@dataclass
class Proxy:
    upstream: str
    fail: Pick = lambda method, path, n: False
    seen: list[tuple[str, str, int]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def count(self, method: str, path: str) -> int:
        with self.lock:
            return sum(1 for m, p, _ in self.seen if (m, p) == (method, path))


def _handler(proxy: Proxy) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:  # quiet
            pass

        def _forward(self) -> None:
            body = self.rfile.read(int(self.headers.get("content-length") or 0))
            path = self.path.split("?", 1)[0]
            with proxy.lock:
                before = sum(1 for m, p, _ in proxy.seen if (m, p) == (self.command, path))
                failing = proxy.fail(self.command, path, before)
                proxy.seen.append((self.command, path, 503 if failing else 0))
            if failing:
                self.send_response(503)
                self.send_header("Retry-After", "1")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            keep = ("authorization", "content-type")
            headers = {k: v for k, v in self.headers.items() if k.lower() in keep}
            answer = httpx.request(
                self.command, proxy.upstream + self.path, content=body, headers=headers, timeout=60
            )
            self.send_response(answer.status_code)
            for name in ("content-type", "retry-after"):
                if name in answer.headers:
                    self.send_header(name, answer.headers[name])
            self.send_header("Content-Length", str(len(answer.content)))
            self.end_headers()
            self.wfile.write(answer.content)

        do_GET = do_POST = do_PUT = do_DELETE = _forward

    return Handler


@dataclass
class World:
    server: Server
    proxy: Proxy
    url: str
    lockfile: Path


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory, catalog_dir: Path) -> Iterator[World]:
    root = tmp_path_factory.mktemp("retries")
    with api_server(root / "home", f"sqlite:///{root}/db", catalog_dir=catalog_dir) as server:
        with server.client("admin") as c:
            digest = c.post("/api/v1/lockfiles", json=REQUEST).json()["points"][0]["digest"]
            lockfile = root / "digits.lock"
            lockfile.write_bytes(c.get(f"/api/v1/lockfiles/{digest}").content)
        proxy = Proxy(server.url)
        httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(proxy))
        thread = threading.Thread(target=httpd.serve_forever, daemon=True)
        thread.start()
        try:
            yield World(server, proxy, f"http://127.0.0.1:{httpd.server_port}", lockfile)
        finally:
            httpd.shutdown()
            httpd.server_close()
            thread.join()


def _pinbench(
    world: World, *args: str, retry_s: str | None = None
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PINBENCH_")}
    env |= {"PINBENCH_URL": world.url, "PINBENCH_TOKEN": world.server.tokens["admin"]}
    if retry_s is not None:
        env["PINBENCH_RETRY_S"] = retry_s
    return subprocess.run(
        [sys.executable, "-m", "pinbench", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _is_poll(method: str, path: str) -> bool:
    return method == "GET" and path.startswith("/api/v1/runs/")


def test_a_run_waited_on_survives_503s_from_its_server(world: World) -> None:
    """The first three polls of the run meet a 503: the client says it retries, waits (the
    server asks 1 s), and reports the run the server finished."""
    world.proxy.seen.clear()
    world.proxy.fail = lambda method, path, n: _is_poll(method, path) and n < 3
    result = _pinbench(world, "run", str(world.lockfile), "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["status"] == "succeeded"
    retried = [line for line in result.stderr.splitlines() if "retrying GET /api/v1/runs/" in line]
    assert len(retried) == 3, result.stderr
    assert f"the server at {world.url} is away (it answered 503 Service Unavailable)" in retried[0]
    assert "in 1.0 s" in retried[0]  # Retry-After: 1 is longer than the first backoff
    polls = [s for m, p, s in world.proxy.seen if _is_poll(m, p)]
    assert polls[:3] == [503, 503, 503] and polls[3] == 0
    assert world.proxy.count("POST", "/api/v1/runs") == 1  # queued once


def test_a_server_away_too_long_gives_up_in_one_line(world: World) -> None:
    """Every poll meets a 503: after PINBENCH_RETRY_S the client gives up, one line, exit 3."""
    world.proxy.seen.clear()
    world.proxy.fail = lambda method, path, n: _is_poll(method, path)
    started = time.monotonic()
    result = _pinbench(world, "run", str(world.lockfile), retry_s="3")
    took = time.monotonic() - started
    assert result.returncode == 3, result.stderr
    assert "Traceback" not in result.stderr
    said = " ".join(result.stderr.split())
    assert "error: stopped waiting for run " in said  # decision 190: the run named
    assert f"gave up on the pinbench server at {world.url} after" in said
    assert "it answered 503 Service Unavailable" in said.rpartition("error: ")[2]
    assert "Check it later with `pinbench runs show " in said
    assert took < 60, took
    tries = world.proxy.count("GET", next(p for m, p, _ in world.proxy.seen if _is_poll(m, p)))
    assert 2 <= tries <= 5, tries  # 1 s apart (Retry-After), for at most 3 s


def test_a_post_is_never_sent_twice(world: World) -> None:
    """Queuing a run is a POST: a 503 to it is a failure at once, never a retry that might
    queue the run twice."""
    world.proxy.seen.clear()
    world.proxy.fail = lambda method, path, n: (method, path) == ("POST", "/api/v1/runs")
    result = _pinbench(world, "run", str(world.lockfile))
    assert result.returncode == 3, result.stderr
    assert "server error 503" in " ".join(result.stderr.split())
    assert "retrying" not in result.stderr
    assert world.proxy.count("POST", "/api/v1/runs") == 1


def test_a_server_not_listening_is_retried_then_given_up(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """A connection refused (nothing listens: the server is restarting) is retried like a
    503, each try said, until PINBENCH_RETRY_S is spent."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PINBENCH_")}
    env |= {"PINBENCH_URL": f"http://127.0.0.1:{closed_port(request)}", "PINBENCH_RETRY_S": "2"}
    refused = subprocess.run(
        [sys.executable, "-m", "pinbench", "list"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert refused.returncode == 3, refused.stderr
    assert "Traceback" not in refused.stderr
    assert "retrying GET /api/v1/artifacts" in refused.stderr
    message = " ".join(refused.stderr.split())
    assert "error: gave up on the pinbench server at" in message
    assert "cannot reach it:" in message


@pytest.mark.parametrize(
    ("header", "expected", "why"),
    [
        (None, None, "absent: the client's own backoff"),
        ("2", 2.0, "delta-seconds"),
        ("0", 0.0, "at once"),
        ("soon", None, "unreadable: ignored"),
        ("-5", None, "not delta-seconds"),
        ("99999999999999", 10.0**8, "huge: clamped while read (and to cap_s when waited)"),
    ],
)
def test_retry_after_is_read_and_bounded(
    header: str | None, expected: float | None, why: str
) -> None:
    assert retry_after(header) == expected, why


def test_retry_after_as_a_date() -> None:
    now = datetime(2026, 1, 1, tzinfo=UTC)
    assert retry_after(format_datetime(now + timedelta(seconds=30), usegmt=True), now) == 30.0
    assert retry_after(format_datetime(now - timedelta(seconds=30), usegmt=True), now) == 0.0


def test_waits_grow_with_jitter_and_are_capped() -> None:
    policy = Retrying(total_s=60, first_s=0.5, cap_s=15)
    assert [policy.delay(n, None, lambda: 0.999) for n in (1, 2, 3)] == pytest.approx(
        [0.4995, 0.999, 1.998]
    )
    assert policy.delay(40, None, lambda: 0.999) == pytest.approx(14.985)  # capped
    assert policy.delay(1, 3600.0, lambda: 0.0) == 15  # Retry-After, at most cap_s
    assert policy.delay(1, 2.0, lambda: 0.0) == 2.0
    assert not Retrying(total_s=0).retries("GET")
    assert [m for m in ("GET", "PUT", "POST", "DELETE") if policy.retries(m)] == ["GET", "PUT"]


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("soon", "not a number of seconds"),
        ("-1", RETRY_S.refusal("PINBENCH_RETRY_S", -1.0)),
        ("3601", RETRY_S.refusal("PINBENCH_RETRY_S", 3601.0)),
        ("nan", RETRY_S.refusal("PINBENCH_RETRY_S", float("nan"))),
    ],
)
def test_pinbench_retry_s_is_bounded(text: str, reason: str) -> None:
    with pytest.raises(InvalidRetryTime) as caught:
        Retrying.from_env({"PINBENCH_RETRY_S": text})
    assert caught.value.reason == reason
    assert Retrying.from_env({"PINBENCH_RETRY_S": "30"}).total_s == 30
    assert Retrying.from_env({}).total_s == Retrying().total_s
