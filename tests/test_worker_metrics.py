"""How a server's workers share their ``/metrics`` numbers (``pinbench/api/worker_metrics.py``,
decision 157): a snapshot is never read half-written, misshapen ones are left out, sums are
the workers' own, and each server has a folder of its own."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx

from pinbench.api.observe import RequestStats, render
from pinbench.api.worker_metrics import prepare, read, well_formed, write
from pinbench.tls import http_client
from tests.apiserver import seed_home, serve_process


def _numbers(stats: RequestStats, pool: tuple[int, int, int] = (0, 1, 17)) -> dict[str, object]:
    return {"requests": stats.snapshot(), "pool": list(pool), "db_pool": [1, 5]}


def test_a_snapshot_is_never_read_half_written_while_two_threads_write_it(tmp_path: Path) -> None:
    stats = RequestStats()
    for i in range(300):
        stats.observe("GET", f"/route/{i}", 200, 0.01)
    done = threading.Event()

    def writing() -> None:
        while not done.is_set():
            write(tmp_path, _numbers(stats))

    writers = [threading.Thread(target=writing) for _ in range(2)]
    for t in writers:
        t.start()
    try:
        target = tmp_path / f"{os.getpid()}.json"
        reads = 0
        while reads < 300:
            if target.exists():
                assert well_formed(json.loads(target.read_text()))
                reads += 1
    finally:
        done.set()
        for t in writers:
            t.join()
    assert [p.name for p in tmp_path.iterdir()] == [target.name], "no temp file left"


WORKER = """
import sys
from pathlib import Path
from pinbench.api.observe import RequestStats
from pinbench.api.worker_metrics import write
stats = RequestStats()
for _ in range(int(sys.argv[2])):
    stats.observe("GET", "/api/v1/artifacts", 200, 0.02)
write(Path(sys.argv[1]), {"requests": stats.snapshot(), "pool": [1, 0, 17], "db_pool": None})
"""


def test_the_other_workers_snapshots_sum_with_this_ones_and_misshapen_ones_are_skipped(
    tmp_path: Path,
) -> None:
    for sent in (7, 11):  # two other workers, each its own process
        subprocess.run([sys.executable, "-c", WORKER, str(tmp_path), str(sent)], check=True)
    (tmp_path / "999999.json").write_text('{"requests": {"counts": [["GET", 1]]}}')
    (tmp_path / "999998.json").write_text("{not json")
    others = read(tmp_path)
    assert len(others) == 2 and all(s.pid != os.getpid() for s in others)
    mine = RequestStats()
    mine.observe("GET", "/api/v1/artifacts", 200, 0.5)
    lines = render([mine.snapshot(), *(s.numbers["requests"] for s in others)])
    assert (
        'pinbench_http_requests_total{method="GET",route="/api/v1/artifacts",status="200"} 19'
        in lines
    )
    count = 'pinbench_http_request_duration_seconds_count{method="GET",route="/api/v1/artifacts"}'
    assert f"{count} 19" in lines
    summed = 'pinbench_http_request_duration_seconds_sum{method="GET",route="/api/v1/artifacts"}'
    (total,) = [float(x.split()[-1]) for x in lines if x.startswith(summed)]
    assert abs(total - (0.5 + 18 * 0.02)) < 1e-9


def test_each_server_has_its_own_folder_and_gone_servers_folders_are_removed(
    tmp_path: Path,
) -> None:
    host = socket.gethostname()
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip
    live = tmp_path / "metrics-workers" / f"{host}-1"  # pid 1 lives
    dead = tmp_path / "metrics-workers" / f"{host}-{gone}"
    other_host = tmp_path / "metrics-workers" / "elsewhere-12345"
    for folder in (live, dead, other_host):
        folder.mkdir(parents=True)
        (folder / "7.json").write_text("{}")
    mine = prepare(tmp_path)
    assert mine == tmp_path / "metrics-workers" / f"{host}-{os.getpid()}"
    assert mine.is_dir() and not any(mine.iterdir())
    assert live.is_dir() and other_host.is_dir() and not dead.exists()
    assert oct((tmp_path / "metrics-workers").stat().st_mode & 0o777) == "0o700"


def _workers_gauge(client: httpx.Client) -> int:
    text = client.get("/metrics").text
    line = next(x for x in text.splitlines() if x.startswith("pinbench_server_workers "))
    return int(float(line.split()[1]))


def _until(client: httpx.Client, want: int, within_s: float) -> list[int]:
    """The gauge read every half second until it reads ``want`` (or ``within_s`` passed)."""
    seen = [_workers_gauge(client)]
    deadline = time.monotonic() + within_s
    while seen[-1] != want and time.monotonic() < deadline:
        time.sleep(0.5)
        seen.append(_workers_gauge(client))
    return seen


def test_the_workers_gauge_counts_a_stopped_worker_out_once_its_lease_lapses(
    tmp_path: Path,
) -> None:
    """A worker whose process lives but does nothing (SIGSTOP: hung) is counted out once its
    heartbeat is a lease old, the age at which other servers mark its runs interrupted (the
    gauge read 2 for as long as its process existed), and counted in again once it beats."""
    home, url = tmp_path / "home", f"sqlite:///{tmp_path / 'db.sqlite'}"
    tokens, _ = seed_home(home, url)
    env = {"PINBENCH_SERVER_LEASE_S": "2"}
    with serve_process(home, url, "--workers", "2", env=env) as (address, _proc):
        folder = next((home / "metrics-workers").iterdir())
        deadline = time.monotonic() + 60
        while len(list(folder.glob("*.json"))) < 2 and time.monotonic() < deadline:
            time.sleep(0.2)  # each worker has written its first snapshot
        stopped = min(int(p.stem) for p in folder.glob("*.json"))
        with http_client(
            address, {"Authorization": f"Bearer {tokens['reader']}", "Connection": "close"}, 30
        ) as c:
            assert _until(c, 2, 30)[-1] == 2
            os.kill(stopped, signal.SIGSTOP)
            try:
                out = _until(c, 1, 30)
            finally:
                os.kill(stopped, signal.SIGCONT)
            back = _until(c, 2, 30)
    assert out[-1] == 1, out
    assert back[-1] == 2, back
