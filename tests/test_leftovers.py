"""Leftovers: scratch of dead processes reclaimed (never a live one's), a server marks only
runs of expired instances interrupted, Ctrl-C / SIGTERM of a CLI run recorded without a
crash, the local runner's time limit."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pinbench import catalog as builtin
from pinbench.artifacts.scratch import owners_of, reclaim, scratch_file
from pinbench.db.models import Lockfile as LockfileRow
from pinbench.db.models import Run, ServerInstance
from pinbench.evaluator import instances
from pinbench.evaluator.records.run_list import list_runs
from pinbench.registry import service
from pinbench.registry.request import Scenario, parse_request
from pinbench.worker import loadgen_thread
from pinbench.worker.scenarios import run_scenario
from pinbench.worker.stop import RunStopped, Stop, interrupted_by
from pinbench.workspace import Workspace
from tests.helpers import dump, in_process_cli, model_manifest, write_files

# `pinbench publish` whose copy into the store pauses after its first MiB: a publish of a
# large file caught mid-stage, deterministically (no timing).
PAUSED_PUBLISH = textwrap.dedent(
    """
    import os, sys, time
    from pathlib import Path
    import pinbench.artifacts.store as store

    def paused(src, fd, progress=None):
        os.write(fd, src.read(1 << 20))
        Path(sys.argv[1]).write_text("staging")
        time.sleep(3600)

    store.copy_hashing = paused
    from pinbench.cli import main
    sys.exit(main(sys.argv[2:]))
    """
)


def _env(home: Path, database_url: str | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PINBENCH_")}
    env["PINBENCH_HOME"] = str(home)
    if database_url:
        env["PINBENCH_DATABASE_URL"] = database_url
    return env


def _wait_for(path: Path, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 120
    while not path.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.05)


def _stages(tmp: Path) -> set[str]:
    return {p.name for p in tmp.glob("stage-*")}


@pytest.fixture
def paused_publishes(tmp_path: Path) -> Iterator[tuple[Path, list[subprocess.Popen[bytes]]]]:
    home = tmp_path / "home"
    procs: list[subprocess.Popen[bytes]] = []
    yield home, procs
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
        proc.wait()


def test_gc_reclaims_a_killed_publish_and_never_a_live_ones(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    paused_publishes: tuple[Path, list[subprocess.Popen[bytes]]],
) -> None:
    home, procs = paused_publishes
    cli = in_process_cli(monkeypatch, capsys, home)
    assert cli("init").code == 0
    src = tmp_path / "src"
    files = write_files(src, {"big.bin": os.urandom(3 << 20)})
    manifest = dump(src / "model.yaml", model_manifest("vision/big", "1.0.0", files))
    tmp = home / "tmp"
    owned: list[set[str]] = []
    for who in ("killed", "alive"):
        before = _stages(tmp)
        marker = tmp_path / f"{who}.staging"
        cmd = [sys.executable, "-c", PAUSED_PUBLISH, str(marker), "publish", str(manifest)]
        procs.append(subprocess.Popen(cmd, env=_env(home), stderr=subprocess.PIPE))
        _wait_for(marker, procs[-1])
        owned.append(_stages(tmp) - before)
    killed, alive = owned
    assert len(killed) == len(alive) == 1
    procs[0].send_signal(signal.SIGKILL)
    procs[0].wait()
    # and scratch from before owners existed: old is reclaimed, recent kept, unknown untouched
    (tmp / "stage-abc123old").write_bytes(b"x" * 10)
    os.utime(tmp / "stage-abc123old", (time.time() - 3 * 86400,) * 2)
    (tmp / "stage-abc123new").write_bytes(b"y")
    (tmp / "notes.txt").write_text("mine")
    # scratch of this very process is live too
    fd, own = scratch_file(tmp, "bytes")
    os.close(fd)

    ran = cli("gc", "--json")

    assert ran.code == 0, ran.err
    report = json.loads(ran.out)
    removed = {r["name"]: r["bytes"] for r in report["removed"]}
    assert removed == {next(iter(killed)): 1 << 20, "stage-abc123old": 10}
    assert report["bytes"] == (1 << 20) + 10
    assert report["kept"] == 2  # the live publish's stage, this process's scratch
    assert _stages(tmp) == alive | {"stage-abc123new"}
    assert own.exists() and (tmp / "notes.txt").exists()
    assert len(list(owners_of(tmp).glob("*.lock"))) == 2  # the dead owner's lock is gone

    procs[1].send_signal(signal.SIGKILL)
    procs[1].wait()
    text = cli("gc")
    assert text.code == 0
    assert f"removed {next(iter(alive))} (1,048,576 bytes)" in text.out
    assert "reclaimed 1 scratch entry, 1,048,576 bytes; left 1 of live processes" in text.out
    assert _stages(tmp) == {"stage-abc123new"}
    assert reclaim(tmp).removed == []  # nothing left to reclaim, nothing of ours touched
    assert own.exists()


def _run_row(session: Any, run_id: str, status: str, instance: str | None) -> None:
    session.add(
        Run(
            id=run_id,
            lockfile_digest="a" * 64,
            status=status,
            runner="local",
            started_at=datetime.now(UTC),
            host={},
            instance_id=instance,
        )
    )


def test_a_starting_server_interrupts_only_runs_of_expired_instances(ws_any: Workspace) -> None:
    live = instances.register(ws_any)
    gone = instances.register(ws_any, lease_s=-60)  # its lease ran out a minute ago
    with ws_any.transaction() as session:
        session.add(LockfileRow(digest="a" * 64, body="{}", created_at=datetime.now(UTC)))
        _run_row(session, "live-running", "running", live)
        _run_row(session, "live-queued", "queued", live)
        _run_row(session, "gone-running", "running", gone)
        _run_row(session, "nobody-queued", "queued", None)
        _run_row(session, "gone-finished", "succeeded", gone)

    assert instances.abandon_expired(ws_any, "its server stopped") == 2

    with ws_any.transaction() as session:
        status = {r.id: (r.status, r.error) for r in session.query(Run)}
        assert set(session.scalars(session.query(ServerInstance.id).statement)) == {live}
    assert status == {
        "live-running": ("running", None),
        "live-queued": ("queued", None),
        "gone-running": ("interrupted", "its server stopped"),
        "nobody-queued": ("interrupted", "its server stopped"),
        "gone-finished": ("succeeded", None),
    }
    instances.renew(ws_any, gone)  # a stalled instance that comes back is alive again
    assert instances.abandon_expired(ws_any, "x") == 0


# ------------------------------------------------------------------ signals and time limits

# A long run that costs little: LoadGen's Server scenario at 20 queries/s for up to 10 min.
LONG = {"name": "Server", "target_qps": 20, "min_duration_ms": 600_000, "min_query_count": 1}


@pytest.fixture
def long_lock(digits: Workspace, tmp_path: Path) -> Path:
    def write(**extra: Any) -> Path:
        data = {
            "model": f"{builtin.MODEL_NAME}@1.1.0",
            "dataset": f"{builtin.DATASET_NAME}@1",
            "scenario": LONG,
            **extra,
        }
        lock, _ = service.lock(digits, parse_request(data))
        path = tmp_path / f"{lock.digest.short}.lock"
        lock.write(path)
        return path

    return write()


def _cli_run(
    ws: Workspace, lock: Path, *, sig: int | None
) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    """``pinbench run LOCK --runner local`` in a subprocess; ``sig`` once LoadGen runs."""
    env = _env(ws.settings.home, ws.settings.database_url)
    cmd = [sys.executable, "-m", "pinbench", "run", str(lock), "--runner", "local"]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    lines = []
    if sig is not None:
        for line in proc.stderr:
            lines.append(line)
            if line.startswith("running Server"):
                break
        proc.send_signal(sig)
    out, err = proc.communicate(timeout=120)
    done = subprocess.CompletedProcess(cmd, proc.returncode, out, "".join(lines) + err)
    runs = list_runs(ws)
    assert len(runs) == 1, done
    return done, runs[0]


@pytest.mark.parametrize(
    ("sig", "code", "name"),
    [(signal.SIGINT, 130, "SIGINT"), (signal.SIGTERM, 143, "SIGTERM")],
)
def test_a_signal_to_a_cli_run_records_it_interrupted(
    digits: Workspace, long_lock: Path, sig: int, code: int, name: str
) -> None:
    """It used to end in SIGSEGV (Ctrl-C) or leave no record (SIGTERM)."""
    done, run = _cli_run(digits, long_lock, sig=sig)
    assert done.returncode == code, done.stderr
    assert f"error: interrupted by {name}" in done.stderr
    assert "Segmentation fault" not in done.stderr and "Traceback" not in done.stderr
    assert run["status"] == "interrupted"
    assert run["error"] == f"interrupted by {name}"
    assert "latency_p50_ns" not in run  # nothing measured is passed off as a result


def test_the_local_runner_honours_the_lockfiles_timeout(digits: Workspace, tmp_path: Path) -> None:
    data = {
        "model": f"{builtin.MODEL_NAME}@1.1.0",
        "dataset": f"{builtin.DATASET_NAME}@1",
        "scenario": LONG,
        "limits": {"timeout_s": 1},
    }
    lock, _ = service.lock(digits, parse_request(data))
    path = tmp_path / "short.lock"
    lock.write(path)
    done, run = _cli_run(digits, path, sig=None)
    assert done.returncode == 1, done.stderr
    message = "the evaluation exceeded its time limit (1 s, limits.timeout_s in the lockfile)"
    assert message in done.stderr
    assert run["status"] == "failed"
    assert run["error"].startswith(message) and "(local runner)" in run["error"]


@pytest.mark.parametrize("on_caller", [False, True], ids=["loadgen-thread", "handed-over"])
def test_a_stop_ends_a_long_scenario_within_its_grace(tmp_path: Path, on_caller: bool) -> None:
    """Also when predictions are handed over to the calling thread (a profiler that records
    one thread): the stop is raised after the grace, and LoadGen's thread, left running,
    answers its own queries (without the model) until it ends."""
    calls: list[int] = []

    def predict(batch: Any) -> Any:
        calls.append(threading.get_ident())
        return batch

    stop = Stop()
    threading.Timer(0.3, stop.request, args=(interrupted_by(signal.SIGINT),)).start()
    scenario = Scenario(name="Server", target_qps=200, min_duration_ms=4_000, min_query_count=1)
    with pytest.raises(RunStopped, match="interrupted by SIGINT"):
        run_scenario(
            predict,
            np.zeros((4, 1), dtype=np.float32),
            scenario,
            batch_size=1,
            expected_latency_ns=1_000,
            log_dir=tmp_path,
            stop=stop,
            on_caller=on_caller,
        )
    assert stop.left_running and calls
    assert (set(calls) == {threading.get_ident()}) == on_caller
    # the test left running answers alone and ends; the process's LoadGen thread is then free
    assert loadgen_thread.wait_idle(timeout=60)


def test_a_full_disk_leaves_no_owner_lock_half_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 72, item 2: on a full blob disk each scratch a worker tried to make left an empty
    ``owners/.new-<id>`` file, its lock held by the live worker (``gc`` could not reclaim it).
    The write that fails now takes the file and its descriptor with it."""
    import errno

    from pinbench.artifacts import scratch

    tmp = tmp_path / "blobs" / "tmp"
    tmp.mkdir(parents=True)
    real = os.write

    def full(fd: int, data: Any) -> int:
        if os.readlink(f"/proc/self/fd/{fd}").split("/")[-1].startswith(".new-"):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(fd, data)

    monkeypatch.setattr(os, "write", full)
    before = set(os.listdir("/proc/self/fd"))
    for _ in range(3):
        with pytest.raises(OSError, match="No space left"):
            scratch._take(owners_of(tmp))
    assert list(owners_of(tmp).iterdir()) == []
    assert set(os.listdir("/proc/self/fd")) <= before  # no descriptor kept either
