"""Faults under a real ``pinbench serve`` (issue 38: 6,224 log lines in 50 s, a traceback a
second, and health said ok with the database down and the disk full): a real PostgreSQL
server stopped mid-test, one whose processes hang (SIGSTOP), a blob store on a full disk.

Before decision 145 the run pool's heartbeat logged SQLAlchemy's and psycopg's chained
traceback (about 120 lines) at every beat while the database was down (its lease renewal is
retried each second until it succeeds), and every failing request wrote its error line: 1,939
lines and 16 tracebacks in 20 s down with a client polling twice a second. Now each distinct
failure is one line (its cause, no traceback), repeats are held back, readiness says 503
naming the database, and liveness still answers.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import httpx

from tests.apiserver import seed_home, serve_process
from tests.pg import postgres_instance

DOWN_S = 8.0


def test_a_database_outage_logs_each_failure_once_and_readiness_says_so(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with postgres_instance() as pg:
        seed_home(home, pg.url)
        env = {"PINBENCH_SERVER_LEASE_S": "6"}  # the heartbeat renews every second
        with serve_process(home, pg.url, env=env) as (url, _proc):
            log = home / "serve.log"
            with httpx.Client(base_url=url, timeout=10) as c:
                assert c.get("/api/v1/ready").status_code == 200
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
                pg.start()
                deadline = time.monotonic() + 30
                while c.get("/api/v1/ready").status_code != 200:
                    assert time.monotonic() < deadline, "not ready again after the database"
                    time.sleep(0.25)
                assert c.get("/api/v1/runs").status_code == 200
    assert set(answers) == {(200, 503, 503)}, answers  # alive, not ready, refusing clearly
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
    while the first check's thread still waits, says so at once instead of adding another."""
    home = tmp_path / "home"
    with postgres_instance() as pg:
        seed_home(home, pg.url)
        with serve_process(home, pg.url) as (url, _proc), httpx.Client(base_url=url) as c:
            assert c.get("/api/v1/ready").status_code == 200
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
        "free_space": "0 MiB free, below 1 MiB",
    }
    assert after == before  # the write check's file is gone
    assert again.status_code == 200, again.text
