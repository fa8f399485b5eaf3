"""LoadGen's own logs are kept with the run (issue 72, item 9): ``mlperf_log_summary.txt``,
``mlperf_log_detail.txt`` and ``mlperf_log_accuracy.json`` are blobs of every run whose test was
LoadGen's, wherever LoadGen ran — in pinbench's process (the local runner, a model without
code), in an isolated worker (the venv runner), in the host beside a sandboxed worker (a code
run: the host's logs, never the worker's) — named in ``details.loadgen_logs``, attested, and
written out as LoadGen wrote them by ``pinbench runs outputs RUN --log NAME``. A worker that
hands back a log it should not (a link, an unknown name) is refused."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pinbench.artifacts.digest import Digest
from pinbench.evaluator.records.run_view import show_run
from pinbench.evaluator.run import run_lockfile
from pinbench.worker.job import Evidence
from pinbench.worker.loadgen_log import read_detail_log
from pinbench.worker.results import InvalidResults, read_results, write_results
from tests.helpers import in_process_cli, sha
from tests.test_host_clock import _without_code
from tests.test_processing_code import CODE, World, _lock, quiet, world
from tests.test_sandbox import _with_code

__all__ = ["world"]

WHERE = {
    "in pinbench's process": ("local", False),
    "in the venv runner's worker": ("venv", False),
    "in the host, a code run's clock": ("local", True),
}


@pytest.mark.parametrize("where", list(WHERE))
def test_a_runs_loadgen_logs_are_blobs_of_the_run_as_loadgen_wrote_them(
    world: World,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: Any,
    where: str,
) -> None:
    ws = world.home.ws
    runner, code = WHERE[where]
    if code:
        lock = _lock(ws, _with_code(world, tmp_path, "13.0.0", CODE), mode="performance")
    else:
        lock = _without_code(ws, "performance")
    run = run_lockfile(ws, lock, runner=runner, say=quiet, allow_code=code)
    shown = show_run(ws, run.id)
    logs = shown["details"]["loadgen_logs"]
    assert sorted(logs) == ["accuracy", "detail", "summary"]
    cli = in_process_cli(monkeypatch, capsys, world.home.home, world.home.db)
    got = {}
    for kind, digest in logs.items():
        out = tmp_path / kind
        done = cli("runs", "outputs", run.id[:8], "--log", kind, "-o", str(out), "--json")
        assert done.code == 0, done.err
        assert json.loads(done.out)["sha256"] == digest == sha(out.read_bytes())
        assert out.read_bytes() == ws.store.path(Digest(digest)).read_bytes()
        got[kind] = out
    # the detail log is the one the run's figures were read from: the run's own test
    detail = read_detail_log(got["detail"])
    loadgen = shown["details"]["loadgen"]
    for key in ("result_validity", "result_90.00_percentile_latency_ns", "effective_scenario"):
        assert detail[key] == loadgen[key], key
    text = got["detail"].read_text()
    assert '"key": "effective_performance_issue_unique", "value": false' in text  # not TEST04's
    summary = got["summary"].read_text()
    assert "Scenario : SingleStream" in summary and "Mode     : PerformanceOnly" in summary
    assert f"Result is : {loadgen['result_validity']}" in summary
    assert json.loads(got["accuracy"].read_text()) == []  # a performance test logs no answer


def test_a_run_without_a_log_is_refused_naming_why(
    world: World, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    from pinbench.evaluator.run import queue_run

    ws = world.home.ws
    queued = str(uuid.uuid4())
    queue_run(ws, _without_code(ws, "performance"), runner="local", run_id=queued)
    cli = in_process_cli(monkeypatch, capsys, world.home.home, world.home.db)
    done = cli("runs", "outputs", queued, "--log", "summary", "-o", str(tmp_path / "s.txt"))
    assert done.code == 1 and "Traceback" not in done.err
    assert "kept no LoadGen summary log: its status is queued" in done.err
    wrong = cli("runs", "outputs", queued, "--log", "trace", "-o", str(tmp_path / "s.txt"))
    assert wrong.code == 2 and "'trace' is not one of" in wrong.err
    assert list(tmp_path.iterdir()) == []


def _returned(tmp_path: Path, logs: dict[str, bytes]) -> Path:
    out = tmp_path / "out"
    out.mkdir()
    evidence = Evidence(latencies=np.array([5], dtype=np.int64), logs=logs)
    evidence.details["loadgen_logs"] = {"summary": "0" * 64}  # a digest the host never stored
    evidence.details["audits"] = {"TEST01": {"passed": True}}  # a verdict only the host gives
    evidence.details["clock"] = {"side": "host"}  # the host's clock, claimed
    write_results(out, "a" * 64, evidence, None, {})
    return out


def test_a_workers_logs_are_read_as_plain_files_and_the_hosts_details_dropped(
    tmp_path: Path,
) -> None:
    out = _returned(tmp_path, {"summary": b"Result is : VALID\n"})
    _, got = read_results(out, "a" * 64)
    assert got.logs == {"summary": b"Result is : VALID\n"}
    for key in ("loadgen_logs", "audits", "clock"):  # the host's alone (results.HOST_DETAILS)
        assert key not in got.details, key


@pytest.mark.parametrize(
    ("case", "said"),
    [
        ("a link", "mlperf_log_summary.txt cannot be read"),
        ("a folder", "mlperf_log_summary.txt is not a regular file"),
        ("an unknown log", "names LoadGen's log 'keys'"),
    ],
)
def test_a_log_a_worker_may_not_hand_back_is_refused(tmp_path: Path, case: str, said: str) -> None:
    out = _returned(tmp_path, {"summary": b"x"})
    log = out / "mlperf_log_summary.txt"
    log.unlink()
    if case == "a link":
        (tmp_path / "keys").write_bytes(b"secret")
        log.symlink_to(tmp_path / "keys")
    elif case == "a folder":
        log.mkdir()
    else:
        log.write_bytes(b"x")
        result = json.loads((out / "result.json").read_text())
        (out / "result.json").write_text(json.dumps({**result, "logs": ["keys"]}))
    with pytest.raises(InvalidResults, match=said):
        read_results(out, "a" * 64)
