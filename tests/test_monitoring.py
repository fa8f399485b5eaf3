"""Readiness, metrics and the server's logs, on a real ``pinbench serve`` (decision 145).

``/api/v1/health`` is liveness; ``/api/v1/ready`` checks the database, the blob store and its
free space (503 naming each failed check); ``/metrics`` is Prometheus text with bounded labels;
the logs are text or JSON lines with an access log and events that never carry a token's
secret. The database outage is tests/test_monitoring_outage.py.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.apiserver import Server, api_server, seed_home, serve_process, token_secret
from tests.test_api import manifest_text, multipart

SAMPLE = re.compile(
    r"^(?P<name>[a-z_]+)(\{(?P<labels>[a-z_]+=\"[^\"\\\n]*\"(,[a-z_]+=\"[^\"\\\n]*\")*)\})? "
    r"(?P<value>[-+0-9.e]+|\+Inf|NaN)$"
)


def parse_metrics(text: str) -> dict[str, list[tuple[dict[str, str], float]]]:
    """Prometheus text format 0.0.4, strictly: every line a HELP, a TYPE or a sample; every
    sample's family declared before it."""
    families: dict[str, list[tuple[dict[str, str], float]]] = {}
    typed: set[str] = set()
    for line in text.splitlines():
        if line.startswith("# HELP "):
            continue
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ")
            assert kind in ("counter", "gauge", "histogram"), line
            typed.add(name)
            continue
        m = SAMPLE.match(line)
        assert m, f"not a sample line: {line!r}"
        name = m["name"]
        family = re.sub(r"_(bucket|sum|count)$", "", name)
        assert name in typed or family in typed, f"{name} has no TYPE line"
        labels = dict(re.findall(r'([a-z_]+)="([^"]*)"', m["labels"] or ""))
        families.setdefault(name, []).append((labels, float(m["value"])))
    return families


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, catalog_dir: Path) -> Iterator[Server]:
    root = tmp_path_factory.mktemp("monitoring")
    with api_server(root / "home", f"sqlite:///{root}/db.sqlite", catalog_dir=catalog_dir) as srv:
        yield srv


def test_health_is_liveness_and_ready_checks_each_thing_serving_needs(server: Server) -> None:
    with server.client() as c:
        health = c.get("/api/v1/health")
        ready = c.get("/api/v1/ready")
    assert health.status_code == 200 and health.json()["status"] == "ok"
    assert ready.status_code == 200, ready.text
    assert ready.json() == {
        "status": "ready",
        "checks": [
            {"name": "database", "ok": True, "cause": None},
            {"name": "database_file", "ok": True, "cause": None},
            {"name": "blob_store", "ok": True, "cause": None},
            {"name": "free_space", "ok": True, "cause": None},
        ],
    }
    ws = server.workspace()
    try:  # the write check leaves nothing behind
        assert not list(ws.store.tmp.glob("ready-*"))
    finally:
        ws.close()


def test_ready_says_503_naming_a_blob_store_it_cannot_write(server: Server) -> None:
    """The store's scratch is a file, not a folder (a broken mount, a bad restore): the check
    fails, says why without naming the path, and the others still pass."""
    ws = server.workspace()
    tmp, away = ws.store.tmp, ws.store.tmp.with_name("tmp.away")
    tmp.rename(away)
    try:
        tmp.write_text("not a folder")
        with server.client() as c:
            ready = c.get("/api/v1/ready")
    finally:
        tmp.unlink()
        away.rename(tmp)
        ws.close()
    assert ready.status_code == 503
    body = ready.json()
    assert body["status"] == "not ready"
    failed = {c["name"]: c["cause"] for c in body["checks"] if not c["ok"]}
    assert failed == {"blob_store": "not writable: File exists (EEXIST)"}
    assert str(server.home) not in ready.text


def _count(
    families: dict[str, list[tuple[dict[str, str], float]]], name: str, **want: str
) -> float:
    return sum(v for labels, v in families.get(name, []) if want.items() <= labels.items())


def test_metrics_count_requests_by_route_template_with_histograms(server: Server) -> None:
    ref = "model/vision/digits-logreg@1.0.0"
    with server.client() as c:
        before = parse_metrics(c.get("/metrics").text)
        for _ in range(3):
            assert c.get("/api/v1/runs").status_code == 200
        assert c.get(f"/api/v1/artifacts/{ref}").status_code == 200
        assert c.get("/no/such/path/x1y2z3").status_code == 404
        response = c.get("/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/plain; version=0.0.4; charset=utf-8"
    text = response.text
    after = parse_metrics(text)
    total = "pinbench_http_requests_total"
    runs = {"method": "GET", "route": "/api/v1/runs", "status": "200"}
    assert _count(after, total, **runs) - _count(before, total, **runs) == 3
    # raw paths never become label values: the artifact's route is its template
    assert "digits-logreg" not in text and "x1y2z3" not in text
    routes = {labels["route"] for labels, _ in after[total]}
    assert "unmatched" in routes
    assert any(r.startswith("/api/v1/artifacts/{") for r in routes), routes
    # a histogram's buckets are cumulative and end at its count
    hist = "pinbench_http_request_duration_seconds"
    where = {"method": "GET", "route": "/api/v1/runs"}
    buckets = [(lab["le"], v) for lab, v in after[f"{hist}_bucket"] if where.items() <= lab.items()]
    assert buckets[-1][0] == "+Inf"
    assert [v for _, v in buckets] == sorted(v for _, v in buckets)
    assert buckets[-1][1] == _count(after, f"{hist}_count", **where) >= 3
    assert _count(after, f"{hist}_sum", **where) > 0
    assert _count(after, "pinbench_run_pool_runs", state="queued") == 0
    assert _count(after, "pinbench_run_pool_capacity") == 1 + 16
    assert _count(after, "pinbench_database_up") == 1
    assert "pinbench_db_pool_size" in after and "pinbench_db_pool_checked_out" in after


def test_metrics_count_the_blob_store_in_the_background(server: Server) -> None:
    """The first scrape starts the count; a later one shows it (equal to the store's files),
    and the count is reused, not redone, by the scrapes that follow."""
    ws = server.workspace()
    try:
        files = [p for p in ws.store.blobs.rglob("*") if p.is_file()]
    finally:
        ws.close()
    assert files
    deadline = time.monotonic() + 30
    with server.client() as c:
        while True:
            found = parse_metrics(c.get("/metrics").text)
            if "pinbench_blob_store_bytes" in found or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        again = parse_metrics(c.get("/metrics").text)
    assert _count(found, "pinbench_blob_store_blobs") == len(files)
    assert _count(found, "pinbench_blob_store_bytes") == sum(p.stat().st_size for p in files)
    stamp = "pinbench_blob_store_counted_timestamp_seconds"
    assert _count(again, stamp) == _count(found, stamp)


def test_runs_by_status_come_from_the_database(server: Server) -> None:
    ws = server.workspace()
    try:
        from sqlalchemy import func, select

        from pinbench.db.models import Run

        with ws.transaction() as session:
            want = dict(
                session.execute(select(Run.status, func.count()).group_by(Run.status)).all()
            )
    finally:
        ws.close()
    with server.client() as c:
        found = parse_metrics(c.get("/metrics").text)
    shown = {labels["status"]: v for labels, v in found.get("pinbench_runs", [])}
    assert shown == {k: float(v) for k, v in want.items()}


@pytest.fixture(scope="module")
def private_json_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """--private, JSON logs chosen by the environment, debug level, a free-space threshold of
    16 TiB (no test disk has it)."""
    root = tmp_path_factory.mktemp("private")
    home, url = root / "home", f"sqlite:///{root}/db.sqlite"
    tokens, ids = seed_home(home, url)
    env = {"PINBENCH_LOG_FORMAT": "json", "PINBENCH_LOG_LEVEL": "debug"}
    args = ("--private", "--ready-min-free-mb", str(1 << 24))
    with serve_process(home, url, *args, env=env) as (address, _proc):
        yield Server(address, home, url, tokens, ids)


def test_metrics_need_the_read_scope_when_reads_do(private_json_server: Server) -> None:
    srv = private_json_server
    with srv.client() as anonymous, srv.client("reader") as reader:
        assert anonymous.get("/metrics").status_code == 401
        assert reader.get("/metrics").status_code == 200
        # readiness stays open to probes, and names the failed check
        ready = anonymous.get("/api/v1/ready")
    assert ready.status_code == 503
    failed = [c for c in ready.json()["checks"] if not c["ok"]]
    assert [c["name"] for c in failed] == ["free_space"]
    cause = r"blobs, home, database: \d+ MiB free, below 16777216 MiB"  # one disk holds all
    assert re.fullmatch(cause, failed[0]["cause"])


def _json_lines(home: Path) -> list[dict[str, Any]]:
    lines = (home / "serve.log").read_text().splitlines()
    return [json.loads(line) for line in lines if line.startswith("{")]


def test_json_logs_carry_access_lines_and_events_but_no_secret(private_json_server: Server) -> None:
    srv = private_json_server
    owner = srv.tokens["owner"]
    data = b"weights"
    body = multipart([("manifest", None, manifest_text("1.0.0", "w.bin", data, "vision/logged")),
                      ("file", "w.bin", data)])  # fmt: skip
    forged = "pbt_0123456789abcdef_" + "s" * 43
    with srv.client("owner") as c:
        published = c.post(
            "/api/v1/artifacts",
            content=body,
            headers={"content-type": "multipart/form-data; boundary=XyZ"},
        )
        assert published.status_code == 201, published.text
        assert c.get("/api/v1/runs").status_code == 200
    bad = httpx.get(f"{srv.url}/api/v1/runs", headers={"Authorization": f"Bearer {forged}"})
    assert bad.status_code == 401
    time.sleep(0.5)  # the log is the child's stderr: give it a moment to flush
    records = _json_lines(srv.home)
    text = (srv.home / "serve.log").read_text()
    assert token_secret(owner) not in text and "s" * 43 not in text  # no secret, ever
    for r in records:
        assert {"ts", "level", "logger", "msg"} <= r.keys()
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", r["ts"])
    access = [r for r in records if r["logger"] == "pinbench.api.access"]
    runs = [r for r in access if r["route"] == "/api/v1/runs" and r["status"] == 200]
    assert runs and runs[0]["user"] == "owner" and runs[0]["token_id"] == srv.token_ids["owner"]
    assert runs[0]["method"] == "GET" and runs[0]["duration_ms"] > 0
    assert any(r["route"] == "/api/v1/runs" and r["status"] == 401 for r in access)
    publish = [r for r in records if r["logger"] == "pinbench.api.publish"]
    assert [(r["msg"], r["user"], r["created"]) for r in publish] == [
        ("published model/vision/logged@1.0.0", "owner", True)
    ]
    assert publish[0]["digest"] == published.json()["manifest_digest"]
    failed = [r for r in records if r["msg"].startswith("authentication failed")]
    assert len(failed) == 1 and failed[0]["level"] == "warning"
    assert failed[0]["token_id"] == "0123456789abcdef"
    assert failed[0]["client"] == "127.0.0.1"
    used = [r for r in records if r["msg"] == "token used" and r["user"] == "owner"]
    assert used and used[0]["level"] == "debug"
    assert used[0]["token_id"] == srv.token_ids["owner"]


@pytest.mark.parametrize(
    ("args", "env", "says"),
    [
        (["--log-level", "loud"], {}, "'loud' is not one of 'debug', 'info', 'warning', 'error'"),
        (["--log-format", "xml"], {}, "'xml' is not one of 'text', 'json'"),
        ([], {"PINBENCH_LOG_FORMAT": "yaml"}, "'yaml' is not one of 'text', 'json'"),
        (["--ready-min-free-mb", "-1"], {}, "-1 is not in the range 0<=x<=16777216"),
    ],
)
def test_bad_log_and_readiness_options_are_refused_before_serving(
    args: list[str], env: dict[str, str], says: str, tmp_path: Path
) -> None:
    import os
    import subprocess
    import sys

    environ = os.environ | env | {"PINBENCH_HOME": str(tmp_path / "home")}
    done = subprocess.run(
        [sys.executable, "-m", "pinbench", "serve", "--port", "1", *args],
        env=environ,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2, done.stderr
    assert says in " ".join(done.stderr.split())
    assert not (tmp_path / "home").exists()  # nothing created


OPERATIONS = Path(__file__).resolve().parent.parent / "docs" / "operations.md"


def _section(title: str) -> str:
    return OPERATIONS.read_text().split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]


def test_the_operations_page_commands_work_and_its_metrics_are_the_servers(server: Server) -> None:
    """docs/operations.md's "Health, readiness and metrics": its ``pinbench serve`` line parses
    (every option exists, every value is accepted), each ``curl`` gets its answer from a real
    server (on the test's port), and its table names every metric the server writes."""
    import shlex

    from pinbench.cli import load

    page = _section("Health, readiness and metrics")
    block = page.split("```sh\n", 1)[1].split("```", 1)[0]
    lines = [line.rstrip(" &") for line in block.strip().splitlines()]
    serve = shlex.split(lines[0])
    assert serve[:2] == ["pinbench", "serve"]
    command = load("serve")
    command.make_context("serve", serve[2:])  # raises on an unknown option or a bad value
    with server.client() as c:
        for line in lines[1:]:
            words = shlex.split(line)
            assert words[:2] == ["curl", "-sS"]
            path = words[-1].removeprefix("http://127.0.0.1:8000")
            assert c.get(path).status_code == 200, line
        deadline = time.monotonic() + 30
        while "pinbench_blob_store_bytes" not in (text := c.get("/metrics").text):
            assert time.monotonic() < deadline
            time.sleep(0.2)
    written = set(re.findall(r"^# TYPE (\S+) ", text, re.M))
    table = page.split("| metric |", 1)[1].split("\n\n", 1)[0]
    assert written == set(re.findall(r"`(pinbench_[a-z_]+)`", table))


def test_metrics_of_a_server_with_workers_count_every_workers_requests(
    tmp_path: Path, catalog_dir: Path
) -> None:
    """With ``--workers 2`` a scrape reaches one worker; it answers with both workers'
    counts (each writes its numbers where the other reads them), so every scrape shows all
    the requests sent, whichever worker answers it."""
    sent = 60
    with api_server(
        tmp_path / "home", f"sqlite:///{tmp_path / 'home' / 'pinbench.db'}", "--workers", "2",
        catalog_dir=catalog_dir,
    ) as srv:  # fmt: skip
        with httpx.Client(base_url=srv.url) as client:
            for _ in range(sent):
                # a fresh connection each time: uvicorn's workers share the listening socket
                r = httpx.get(f"{srv.url}/api/v1/artifacts", headers={"Connection": "close"})
                assert r.status_code == 200
            time.sleep(2.5)  # past the workers' snapshot interval
            for _ in range(8):
                text = client.get("/metrics", headers={"Connection": "close"}).text
                count = re.search(
                    r'^pinbench_http_requests_total\{method="GET",route="/api/v1/artifacts",'
                    r'status="200"\} (\d+)$',
                    text,
                    re.M,
                )
                assert count is not None and int(count[1]) == sent, text
                workers = re.search(r"^pinbench_server_workers (\d+)$", text, re.M)
                assert workers is not None and workers[1] == "2"
                hist = re.search(
                    r'^pinbench_http_request_duration_seconds_count\{method="GET",'
                    r'route="/api/v1/artifacts"\} (\d+)$',
                    text,
                    re.M,
                )
                assert hist is not None and int(hist[1]) == sent
        (folder,) = (tmp_path / "home" / "metrics-workers").iterdir()  # this server's own
        assert len(list(folder.glob("*.json"))) == 2
