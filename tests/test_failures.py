"""Failures tell the truth: an evaluator process that dies leaves its last output (the
exception) in the run's error, shown by the CLI, the API and the web UI; a LoadGen INVALID
verdict is recorded with LoadGen's own reasons."""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import markupsafe
import pytest
import yaml

from pinbench import catalog as builtin
from pinbench.cli import main
from pinbench.evaluator.records.run_view import show_run
from pinbench.evaluator.run import run_lockfile
from pinbench.evaluator.runners.child import run_child
from pinbench.evaluator.runners.process import (
    TAIL_BYTES,
    TAIL_LINES,
    Relay,
    WorkerCrashed,
    clean_tail,
    collect,
)
from pinbench.registry import service
from pinbench.registry.request import parse_request
from pinbench.worker.job import Evidence
from pinbench.workspace import Workspace
from tests.apiserver import Server, api_server
from tests.helpers import Cli, in_process_cli

# ------------------------------------------------------------------ a dead evaluator's output


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, catalog_dir: Path) -> Iterator[Server]:
    """A server whose onnxruntime framework pins the framework's wheels but leaves out one
    of the evaluator's own dependencies (msgspec): what a hand-written manifest did."""
    root = tmp_path_factory.mktemp("failures")
    catalog = root / "catalog"
    shutil.copytree(catalog_dir, catalog)
    path = catalog / "framework-onnxruntime.yaml"
    doc = yaml.safe_load(path.read_text())
    for env in doc["environments"]:
        env["requirements"] = [r for r in env["requirements"] if r["name"] != "msgspec"]
        env.pop("image", None)
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    with api_server(root / "home", f"sqlite:///{root}/db.sqlite", catalog_dir=catalog) as s:
        yield s


def _remote(server: Server, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PINBENCH_URL", server.url)
    monkeypatch.setenv("PINBENCH_TOKEN", server.tokens["owner"])
    monkeypatch.setenv("PINBENCH_HOME", "/nonexistent/the-cli-must-not-use-a-local-home")
    monkeypatch.setenv("COLUMNS", "200")


def test_a_venv_evaluator_missing_a_dependency_records_its_exception(
    server: Server,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A real uv-built environment without msgspec: the worker dies on import, before it can
    write result.json; the run's error is its traceback's end, everywhere the run is shown."""
    _remote(server, monkeypatch)
    request = tmp_path / "request.yaml"
    request.write_text(
        yaml.safe_dump(
            {
                "model": f"{builtin.MODEL_NAME}@1.1.0",
                "dataset": f"{builtin.DATASET_NAME}@1",
                "scenario": {"mode": "accuracy"},
            }
        )
    )
    lock = tmp_path / "digits.lock"
    assert main(["lock", str(request), "-o", str(lock)]) == 0
    assert main(["run", str(lock), "--runner", "venv"]) == 1
    said = " ".join(capsys.readouterr().err.split())
    assert "No module named 'msgspec'" in said and "no result.json was written" not in said

    assert main(["runs", "list", "--json"]) == 0
    run = json.loads(capsys.readouterr().out)[0]
    assert (run["status"], run["runner"]) == ("failed", "venv")
    error = run["error"]
    assert "ended without writing result.json (exit status 1)" in error
    assert "lacks the module 'msgspec'" in error  # and says what to do
    assert error.rstrip().endswith("ModuleNotFoundError: No module named 'msgspec'")
    assert "\x1b" not in error and len(error.encode()) < TAIL_BYTES + 1000

    assert main(["runs", "show", run["id"]]) == 0
    shown = capsys.readouterr().out
    assert "error: the evaluator (venv runner) ended without writing result.json" in shown
    assert "ModuleNotFoundError: No module named 'msgspec'" in shown

    with server.client() as c:
        view = c.get(f"/api/v1/runs/{run['id']}").json()
        page = c.get(f"/ui/runs/{run['id']}").text
    assert view["error"] == error
    # the traceback's `File "<frozen runpy>"` lines are escaped, never markup
    assert "<frozen" in error and "<frozen" not in page and "&lt;frozen runpy&gt;" in page
    assert str(markupsafe.escape(error.splitlines()[-1].strip())) in page


TAILS: list[tuple[str, list[str], list[str]]] = [
    # (case, the child's last lines, what the run's error keeps)
    (
        "colours and cursor moves are stripped",
        ["\x1b[31mError\x1b[0m: \x1b[1mboom\x1b[K"],
        ["Error: boom"],
    ),
    ("a terminal title (OSC) is stripped", ["\x1b]0;title\x07after"], ["after"]),
    ("other control characters go, tabs become spaces", ["a\x00b\x07c\td\r"], ["abc    d"]),
    ("blank lines are dropped", ["one", "", "   ", "two"], ["one", "two"]),
    (
        "only the last lines are kept",
        [f"line {i}" for i in range(50)],
        [f"line {i}" for i in range(50 - TAIL_LINES, 50)],
    ),
    ("a very long line is cut", ["x" * 5000], ["x" * 1000 + " [cut]"]),
    ("the byte budget keeps the end", ["y" * 900] * 10, ["y" * 900] * (TAIL_BYTES // 901)),
]


@pytest.mark.parametrize(("case", "lines", "kept"), TAILS, ids=[t[0] for t in TAILS])
def test_clean_tail(case: str, lines: list[str], kept: list[str]) -> None:
    assert clean_tail(lines) == kept, case


def test_a_line_split_across_chunks_is_relayed_whole() -> None:
    said: list[str] = []
    relay = Relay(
        iter([b"Traceback (most", b" recent call last):\nValueE", b"rror: x"]), said.append
    )
    assert relay.join() == said == ["Traceback (most recent call last):", "ValueError: x"]


def test_a_real_child_that_dies_before_its_results_is_reported_by_its_output(
    digits: Workspace, tmp_path: Path
) -> None:
    """A child that fails on import (colours on, as a terminal's Python 3.13 prints them)
    and exits 1 without result.json: the evaluator's error is its cleaned output's end."""
    code = (
        "import sys; print('loading', flush=True); "
        "sys.stderr.write('\\x1b[35mTraceback\\x1b[0m\\n'); "
        "import no_such_module_for_pinbench"
    )
    status, tail = run_child(
        [sys.executable, "-c", code], env={}, timeout_s=60, say=lambda _: None, runner="venv"
    )
    with pytest.raises(WorkerCrashed) as info:
        collect("venv", tmp_path, _lock(digits, {}), Evidence(), status=status, tail=tail)
    assert info.value.status == 1
    assert info.value.tail[0] == "loading" and info.value.tail[1] == "Traceback"
    assert info.value.tail[-1] == (
        "ModuleNotFoundError: No module named 'no_such_module_for_pinbench'"
    )
    assert info.value.missing_module == "no_such_module_for_pinbench"
    assert str(info.value).startswith(
        "the evaluator (venv runner) ended without writing result.json (exit status 1)"
    )


# ------------------------------------------------------------------ LoadGen's INVALID verdict


def _lock(ws: Workspace, scenario: dict[str, Any]) -> Any:
    data = {
        "model": f"{builtin.MODEL_NAME}@1.1.0",
        "dataset": f"{builtin.DATASET_NAME}@1",
        "scenario": scenario,
    }
    return service.lock(ws, parse_request(data))[0]


SHORT_RUNS: list[tuple[str, dict[str, Any], list[str]]] = [
    # (case, scenario, what the recorded reasons say)
    (
        "10 queries: too few for a p90 estimate",
        {"min_duration_ms": 0, "min_query_count": 10, "max_query_count": 10},
        ["early stopping not met", "Need to process at least 64 queries"],
    ),
    (
        "max_query_count below min_query_count",
        {"min_duration_ms": 0, "min_query_count": 100, "max_query_count": 64},
        ["min_queries not met", "max_query_count below it"],
    ),
]


@pytest.mark.parametrize(
    ("case", "scenario", "reasons"), SHORT_RUNS, ids=[s[0] for s in SHORT_RUNS]
)
def test_a_short_run_records_why_loadgen_found_it_invalid(
    digits: Workspace,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    case: str,
    scenario: dict[str, Any],
    reasons: list[str],
) -> None:
    outcome = run_lockfile(digits, _lock(digits, scenario), say=lambda _: None)
    info = show_run(digits, outcome.id)
    assert info["status"] == "succeeded" and info["loadgen_valid_bool"] == 0.0
    recorded = info["details"]["loadgen"]["invalid_reasons"]
    assert all(any(r in got for got in recorded) for r in reasons), (case, recorded)

    cli: Cli = in_process_cli(
        monkeypatch, capsys, digits.settings.home, digits.settings.database_url
    )
    shown = " ".join(cli("runs", "show", outcome.id).out.split())
    assert "LoadGen verdict INVALID" in shown
    assert all(r in shown for r in reasons), shown
    # issue 64, item 6: marked wherever one of its figures is shown (the list's p50, the
    # report's label for its every table and plot)
    row = next(line for line in cli("runs", "list").out.splitlines() if outcome.id[:8] in line)
    assert "INVALID" in row, row
    import pinbench

    registry = pinbench.Registry(digits.settings.home, database_url=digits.settings.database_url)
    page = registry.report([outcome.id], ["md"])["md"].decode()
    labels = [line for line in page.splitlines() if f"{outcome.id[:8]} " in line]
    assert labels and all(" INVALID" in line for line in labels), labels


def test_a_long_enough_run_is_valid_with_no_reasons(digits: Workspace) -> None:
    """The docs' minimum (docs/running.md) for SingleStream at the 90th percentile: 64 queries."""
    scenario = {"min_duration_ms": 0, "min_query_count": 64, "max_query_count": 64}
    outcome = run_lockfile(digits, _lock(digits, scenario), say=lambda _: None)
    info = show_run(digits, outcome.id)
    assert info["loadgen_valid_bool"] == 1.0
    assert "invalid_reasons" not in info["details"]["loadgen"]
