"""Faults under a real ``pinbench serve`` (issue 38: 6,224 log lines in 50 s, a traceback a
second, and health said ok with the database down and the disk full): a real PostgreSQL
server stopped mid-test, one whose processes hang (SIGSTOP), a blob store on a full disk;
(issue 48) a SeaweedFS bucket stopped, an SQLite file removed and replaced.

Before decision 145 the run pool's heartbeat logged SQLAlchemy's and psycopg's chained
traceback (about 120 lines) at every beat while the database was down (its lease renewal is
retried each second until it succeeds), and every failing request wrote its error line: 1,939
lines and 16 tracebacks in 20 s down with a client polling twice a second. Now each distinct
failure is one line (its cause, no traceback), repeats are held back, readiness says 503
naming the database, and liveness still answers.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import time
from pathlib import Path

import httpx

from pinbench.db.identity import REMOVED, REPLACED
from tests.apiserver import seed_home, serve_process
from tests.pg import postgres_instance
from tests.s3server import weed_mini

DOWN_S = 8.0


def _database_up(scrape: httpx.Response) -> int:
    assert scrape.status_code == 200, scrape.text
    lines = [x for x in scrape.text.splitlines() if x.startswith("pinbench_database_up ")]
    return int(lines[0].split()[1])


def test_a_database_outage_logs_each_failure_once_and_readiness_says_so(tmp_path: Path) -> None:
    """And (issue 48, item 6) ``/metrics`` on a private server answers while the database is
    down, to the token it accepted before (``pinbench_database_up 0``), not to anyone else."""
    home = tmp_path / "home"
    with postgres_instance() as pg:
        tokens, _ = seed_home(home, pg.url)
        env = {"PINBENCH_SERVER_LEASE_S": "6"}  # the heartbeat renews every second
        reader = {"Authorization": f"Bearer {tokens['reader']}"}
        stranger = {"Authorization": f"Bearer pbt_{'0' * 16}_{'x' * 43}"}
        with serve_process(home, pg.url, "--private", env=env) as (url, _proc):
            log = home / "serve.log"
            with httpx.Client(base_url=url, timeout=10, headers=reader) as c:
                assert c.get("/api/v1/ready").status_code == 200
                assert _database_up(c.get("/metrics")) == 1  # the token is looked up
                before = len(log.read_text().splitlines())
                pg.stop()
                answers: list[tuple[int, int, int]] = []
                t0 = time.monotonic()
                while time.monotonic() - t0 < DOWN_S:
                    ready = c.get("/api/v1/ready")
                    runs = c.get("/api/v1/runs")
                    answers.append(
                        (c.get("/api/v1/health").status_code, ready.status_code, runs.status_code)
                    )
                    time.sleep(0.25)
                failed = [k for k in ready.json()["checks"] if not k["ok"]]
                lines = log.read_text().splitlines()[before:]
                scrapes = [c.get("/metrics") for _ in range(3)]  # the database still down
                anonymous = httpx.get(f"{url}/metrics", timeout=10)
                unknown = c.get("/metrics", headers=stranger)
                pg.start()
                deadline = time.monotonic() + 30
                while c.get("/api/v1/ready").status_code != 200:
                    assert time.monotonic() < deadline, "not ready again after the database"
                    time.sleep(0.25)
                assert c.get("/api/v1/runs").status_code == 200
    assert set(answers) == {(200, 503, 503)}, answers  # alive, not ready, refusing clearly
    assert [_database_up(s) for s in scrapes] == [0, 0, 0]
    assert anonymous.status_code == 401  # private: no token, no metrics, database or not
    assert unknown.status_code == 503  # a token never accepted is not let in
    assert [k["name"] for k in failed] == ["database"]
    assert failed[0]["cause"] == "unreachable (DatabaseUnavailable)"
    assert not any("Traceback" in line for line in lines), "\n".join(lines)
    problems = [line for line in lines if " WARNING " in line or " ERROR " in line]
    # one line per distinct failure, not one per beat or per request: the heartbeat's, the
    # readiness probe's, and GET /api/v1/runs's (a probe's and a scrape's each at most once)
    assert sum("heartbeat of server instance" in line for line in problems) == 1
    assert sum("GET /api/v1/runs failed" in line for line in problems) == 1
    assert sum("readiness: the database failed" in line for line in problems) == 1
    # and the access log: a line per GET /api/v1/runs (the probes' lines are at DEBUG)
    assert len(lines) <= len(answers) + 5, "\n".join(lines)


def test_a_database_that_hangs_is_not_ready_within_the_probes_timeout(tmp_path: Path) -> None:
    """Every PostgreSQL process stopped (SIGSTOP: connections neither refused nor answered):
    readiness answers 503 after its 2 s, not when the database's TCP gives up; the next probe,
    while the first check's thread still waits, says so at once instead of adding another. A
    scrape with a token accepted before answers within its two waits (the token's lookup, the
    count of runs), ``pinbench_database_up 0``."""
    home = tmp_path / "home"
    with postgres_instance() as pg:
        tokens, _ = seed_home(home, pg.url)
        reader = {"Authorization": f"Bearer {tokens['reader']}"}
        with serve_process(home, pg.url) as (url, _proc), httpx.Client(base_url=url) as c:
            assert c.get("/api/v1/ready").status_code == 200
            assert _database_up(c.get("/metrics", headers=reader, timeout=30)) == 1
            stopped = pg.processes()
            for pid in stopped:
                os.kill(pid, signal.SIGSTOP)
            try:
                t0 = time.monotonic()
                first = c.get("/api/v1/ready", timeout=30)
                took = time.monotonic() - t0
                t1 = time.monotonic()
                second = c.get("/api/v1/ready", timeout=30)
                took_second = time.monotonic() - t1
                alive = c.get("/api/v1/health", timeout=30).status_code
                t2 = time.monotonic()
                scrape = c.get("/metrics", headers=reader, timeout=30)
                took_scrape = time.monotonic() - t2
            finally:
                for pid in stopped:
                    os.kill(pid, signal.SIGCONT)
            deadline = time.monotonic() + 60
            while c.get("/api/v1/ready", timeout=30).status_code != 200:
                assert time.monotonic() < deadline, "not ready again after the database"
                time.sleep(0.25)
    assert alive == 200
    assert (first.status_code, second.status_code) == (503, 503)
    cause = {k["name"]: k["cause"] for k in first.json()["checks"] if not k["ok"]}
    assert cause == {"database": "no answer within 2.0 s"}
    assert 2.0 <= took < 6.0, took
    cause = {k["name"]: k["cause"] for k in second.json()["checks"] if not k["ok"]}
    assert cause == {"database": "an earlier call still waits (> 2.0 s)"}
    assert took_second < 1.5, took_second
    assert _database_up(scrape) == 0
    assert took_scrape < 8.0, took_scrape


def test_a_full_disk_is_not_ready_and_says_so(tmp_path: Path) -> None:
    """The blob store's disk filled to the last byte (a 16 MiB tmpfs, the database elsewhere):
    readiness names both failures, ENOSPC and the free space, leaves no file of its own, and
    is ready again once room is made. Needs root (mount), as the cluster tests do."""
    import subprocess

    assert os.geteuid() == 0, "mounting the small disk needs root"
    home = tmp_path / "home"
    home.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(home)], check=True)
    try:
        url = f"sqlite:///{tmp_path / 'db.sqlite'}"
        seed_home(home, url)
        serving = serve_process(home, url, "--ready-min-free-mb", "1")
        with serving as (address, _proc), httpx.Client(base_url=address, timeout=10) as c:
            assert c.get("/api/v1/ready").status_code == 200
            filler = home / "filler"
            with filler.open("wb") as out:
                try:
                    while True:
                        out.write(b"\0" * (1 << 16))
                        out.flush()
                except OSError:
                    pass
            before = sorted(p.name for p in (home / "tmp").iterdir())
            full = c.get("/api/v1/ready")
            after = sorted(p.name for p in (home / "tmp").iterdir())
            filler.unlink()
            again = c.get("/api/v1/ready")
    finally:
        subprocess.run(["umount", "-l", str(home)], check=False)
    assert full.status_code == 503
    causes = {k["name"]: k["cause"] for k in full.json()["checks"] if not k["ok"]}
    assert causes == {
        "blob_store": "not writable: No space left on device (ENOSPC)",
        "free_space": "blobs, home: 0 KiB free, below 1 MiB",  # the database elsewhere
    }
    assert after == before  # the write check's file is gone
    assert again.status_code == 200, again.text


def _note(version: str) -> bytes:
    return f"a note for {version}\n".encode()


def _publish(c: httpx.Client, version: str) -> httpx.Response:
    """Publish dataset ``vision/notes@VERSION``: one text line of its own (a blob of its own)."""
    data = _note(version)
    manifest = (
        f"kind: dataset\nname: vision/notes\nversion: {version}\n"
        "data: {format: text-lines, path: notes.txt}\nlabels: {format: class-index-npy}\n"
        f"files:\n- {{path: notes.txt, sha256: {hashlib.sha256(data).hexdigest()}, "
        f"size: {len(data)}}}\nsamples: 1\n"
    )
    parts = [("manifest", ("manifest.yaml", manifest.encode())), ("file", ("notes.txt", data))]
    return c.post("/api/v1/artifacts", files=parts)


def _failed(ready: httpx.Response) -> dict[str, str]:
    return {k["name"]: k["cause"] for k in ready.json()["checks"] if not k["ok"]}


def _until_ready(
    c: httpx.Client, within_s: float = 60
) -> tuple[list[dict[str, str]], httpx.Response]:
    """Readiness asked until it is 200 (``within_s`` at most): the failed checks of each earlier
    answer, and the last answer. A probe made while the machine is loaded may pass its own
    deadline (READY_TIMEOUT_S) though the store is back; that answer is a true "not yet"."""
    deadline, failed = time.monotonic() + within_s, list[dict[str, str]]()
    while True:
        answer = c.get("/api/v1/ready")
        if answer.status_code == 200 or time.monotonic() > deadline:
            return failed, answer
        failed.append(_failed(answer))
        time.sleep(0.5)


def test_an_object_store_outage_and_a_replaced_sqlite_file_are_said_not_ready(
    tmp_path: Path,
) -> None:
    """Issue 48, items 5 and 9, on one server (SQLite, blobs in a SeaweedFS bucket): with
    SeaweedFS stopped, readiness said 200 and publishes got 500; now readiness names the
    object store, a publish and a blob download are 503 with ``Retry-After``, and all is well
    once it is back. The SQLite file removed, or replaced, under the server: readiness said
    200 while it wrote to a deleted file; now it names the file's fate."""
    home, db = tmp_path / "home", tmp_path / "pinbench.db"
    url = f"sqlite:///{db}"
    tokens, _ = seed_home(home, url)
    with weed_mini() as (s3, weed):
        env = s3.env("pinbench", "outage")
        with (
            serve_process(home, url, env=env) as (address, _proc),
            httpx.Client(
                base_url=address, timeout=30, headers={"Authorization": f"Bearer {tokens['owner']}"}
            ) as c,
        ):
            ready = c.get("/api/v1/ready")
            assert ready.status_code == 200, ready.text
            names = [k["name"] for k in ready.json()["checks"]]
            first = _publish(c, "1.0.0")
            assert first.status_code == 201, first.text
            digest = hashlib.sha256(_note("1.0.0")).hexdigest()
            assert c.get(f"/api/v1/blobs/{digest}").status_code == 307  # to the bucket

            weed.stop()
            down = c.get("/api/v1/ready")
            refused = _publish(c, "1.0.1")
            blob = c.get(f"/api/v1/blobs/{digest}")
            weed.start()
            on_the_way, again = _until_ready(c)
            after = _publish(c, "1.0.1")

            db.rename(tmp_path / "moved.db")
            removed = c.get("/api/v1/ready")
            (tmp_path / "moved.db").rename(db)  # the same file back: ready again
            back = c.get("/api/v1/ready")
            shutil.copy(db, tmp_path / "copy.db")
            os.replace(tmp_path / "copy.db", db)  # a restore's copy renamed over it
            replaced = c.get("/api/v1/ready")
        log = (home / "serve.log").read_text()
    assert down.status_code == 503, down.text  # it was 200
    # the store does not answer: its client says so, or (on a loaded machine, the probe's HEAD,
    # PUT and DELETE together past READY_TIMEOUT_S) the readiness's own deadline does
    assert _failed(down) in (
        {"object_store": "unreachable (EndpointConnectionError)"},
        {"object_store": "no answer within 2.0 s"},
    )
    assert "127.0.0.1" not in down.text and "outage" not in down.text  # no host, no prefix
    for answer in (refused, blob):
        assert answer.status_code == 503, answer.text
        assert answer.headers["retry-after"] == "5"
        assert answer.json()["error"] == "ObjectStoreUnavailable"  # an outage (decision 284)
        assert "object storage s3://pinbench/outage" in answer.json()["detail"]
    assert again.status_code == 200, (on_the_way, again.text)
    for failed in on_the_way:  # only the store, and only its deadline, while it comes back
        assert set(failed) == {"object_store"}, on_the_way
    assert after.status_code == 201, after.text
    assert "Traceback" not in log
    assert removed.status_code == 503
    assert _failed(removed) == {"database_file": REMOVED}
    assert back.status_code == 200, back.text
    assert replaced.status_code == 503
    assert _failed(replaced) == {"database_file": REPLACED}
    assert names == ["database", "database_file", "blob_store", "object_store", "free_space"]
