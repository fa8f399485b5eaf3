"""Studies (issue 74): a study file's cells each locked and run on this machine's
configurations, recorded, resumed, shown as a matrix and reported with the case-study analyses.

The end-to-end study is the digits logistic regressions (two versions) on two configurations
and one that names a CPU this machine lacks: accuracy, SingleStream and an Offline batch sweep.
The analyses are checked against direct computations on the matrix's own figures.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from pinbench.sdk.registry import Registry
from pinbench.sdk.values import Stop
from pinbench.studies.analyses import analyse, tukey
from pinbench.workspace import Workspace
from tests.helpers import Cli, in_process_cli

CPU = min(os.sched_getaffinity(0))
ABSENT_CPU = 4095  # within the bound, on no machine this runs on
MODELS = ("vision/digits-logreg@1.0.0", "vision/digits-logreg@1.1.0")


def study_data(name: str = "tiny") -> dict[str, Any]:
    return {
        "name": name,
        "description": "two logistic regressions on two configurations",
        "models": [
            {
                "model": MODELS[0],
                "framework": "onnxruntime@*",
                "dataset": "sklearn-digits-test@1",
                "family": "logreg",
                "batch_sizes": [1, 4],
            },
            {"model": MODELS[1], "framework": "onnxruntime@*", "dataset": "sklearn-digits-test@1"},
        ],
        "scenarios": {
            "accuracy": {"name": "SingleStream", "mode": "accuracy"},
            "SingleStream": {"name": "SingleStream", "min_duration_ms": 0, "min_query_count": 64},
            "Offline": {"name": "Offline", "min_duration_ms": 0},
        },
        "systems": [
            {"name": "one-cpu", "threads": 1, "cpus": [CPU]},
            {"name": "two-threads", "threads": 2},
            {"name": "absent-cpu", "threads": 1, "cpus": [ABSENT_CPU]},
        ],
    }


def write(path: Path, data: Any) -> Path:
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


@pytest.fixture
def cli_on(
    digits: Workspace, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> Cli:
    return in_process_cli(monkeypatch, capsys, digits.settings.home, digits.settings.database_url)


@pytest.fixture
def reg(digits: Workspace) -> Iterator[Registry]:
    with Registry.over(digits) as registry:
        yield registry


def test_a_study_runs_every_cell_resumes_and_reports_what_it_measured(
    cli_on: Cli, reg: Registry, tmp_path: Path
) -> None:
    study = write(tmp_path / "tiny.yaml", study_data())
    planned = json.loads(cli_on("study", "show", str(study), "--json").out)
    assert {c["state"] for c in planned["cells"]} == {"planned"} and planned["created_at"] is None
    # 2 models x 3 systems x (accuracy, SingleStream, Offline) + the first model's batch 4
    assert len(planned["cells"]) == 2 * 3 * 3 + 3

    before = os.sched_getaffinity(0)
    ran = cli_on("study", "run", str(study))
    assert ran.code == 1, ran.err  # cells were refused: the study is not complete
    assert os.sched_getaffinity(0) == before  # a system's CPUs are given back
    assert "[ 1/21] vision/digits-logreg@1.0.0 onnxruntime@* accuracy on one-cpu: done" in ran.err
    assert "14 ran, 0 done before, 0 failed, 7 refused" in ran.out

    matrix = json.loads(cli_on("study", "show", "tiny", "--json").out)
    cells = matrix["cells"]
    assert [c["key"] for c in cells] == [c["key"] for c in planned["cells"]]
    for cell in cells:
        if cell["system"] == "absent-cpu":  # refused, saying why; never a blank
            assert cell["state"] == "refused" and cell["run"] is None
            assert (
                f"cpus [{ABSENT_CPU}] are not among the CPUs this process may use"
                in (cell["reason"])
            )
            continue
        assert cell["state"] == "done" and cell["status"] == "succeeded", cell
        run = reg.run(cell["run"])
        lockfile = run.lockfile()
        assert lockfile.digest == cell["lockfile"]
        assert lockfile.verify()  # every pinned byte of every cell's lockfile
        assert run.info["model"] == cell["model"] and run.info["batch_size"] == cell["batch_size"]
        threads = {"one-cpu": 1, "two-threads": 2}[cell["system"]]
        assert run.info["threads"] == threads
        if cell["mode"] == "accuracy":
            assert cell["accuracy"] == run.metrics["top1"] and cell["accuracy_metric"] == "top1"
        else:
            assert cell["latency_p90_ns"] == run.metrics["latency_p90_ns"]
            assert cell["throughput_sps"] == run.metrics["throughput_sps"]
            # the system's CPUs were the run's: LoadGen's region read them as its own
            if cell["system"] == "one-cpu":
                assert run.info["details"]["machine"]["cpus"] == 1

    again = cli_on("study", "run", str(study))
    assert again.code == 1 and "0 ran, 14 done before, 0 failed, 7 refused" in again.out
    assert len(reg.runs()) == 14  # nothing ran twice

    text = cli_on("study", "show", "tiny")
    assert text.code == 0
    assert "one-cpu (threads 1, cpus " in text.out and "refused [1]" in text.out
    assert f"[1] system absent-cpu: cpus [{ABSENT_CPU}]" in text.out

    listed = json.loads(cli_on("study", "list", "--json").out)
    assert [(s["name"], s["cells"]) for s in listed] == [("tiny", {"done": 14, "refused": 7})]

    page = tmp_path / "tiny.html"
    made = cli_on("study", "report", "tiny", "--html", str(page))
    assert made.code == 0, made.err
    html = page.read_text()
    for cell in cells:
        if cell["run"]:
            assert cell["run"][:8] in html
    _the_report_draws_its_plots(page)


def _the_report_draws_its_plots(page_file: Path) -> None:
    from playwright.sync_api import sync_playwright

    from tests.test_web import chromium, rendered_charts, watch_policy

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium(), args=["--no-sandbox"])
        try:
            page = browser.new_page()
            violations = watch_policy(page)
            page.goto(page_file.as_uri())
            assert rendered_charts(page) == ["pareto", "speedups", "streams", "batches"]
            assert violations == []
        finally:
            browser.close()


def test_the_analyses_are_what_their_definitions_compute(reg: Registry, tmp_path: Path) -> None:
    """Each analysis recomputed here from the matrix's own figures: the Pareto front by
    brute force, speed-ups over the family's slowest, each system's ratio to the first, the
    Offline gain; outliers by Tukey's fences with NumPy's quantiles."""
    study = write(tmp_path / "tiny.yaml", study_data())
    reg.studies().run(str(study))
    matrix = reg.studies().show("tiny")
    found = analyse(matrix)
    done = [c for c in matrix["cells"] if c["state"] == "done"]

    def single(model: str, system: str) -> dict[str, Any]:
        (c,) = [
            c for c in done
            if (c["model"], c["system"], c["scenario"]) == (model, system, "SingleStream")
        ]  # fmt: skip
        return dict(c)

    for p in found["pareto"]:
        model = p["model"].split(" ")[0]
        assert p["latency_p90_ms"] == single(model, p["system"])["latency_p90_ns"] / 1e6
    for system in ("one-cpu", "two-threads"):
        points = [p for p in found["pareto"] if p["system"] == system]
        assert len(points) == 2
        a, b = points
        beats = (
            a["accuracy"] >= b["accuracy"] and a["latency_p90_ms"] <= b["latency_p90_ms"]
        ) and (a["accuracy"] > b["accuracy"] or a["latency_p90_ms"] < b["latency_p90_ms"])
        beaten = (
            b["accuracy"] >= a["accuracy"] and b["latency_p90_ms"] <= a["latency_p90_ms"]
        ) and (b["accuracy"] > a["accuracy"] or b["latency_p90_ms"] < a["latency_p90_ms"])
        assert (a["front"], b["front"]) == (not beaten, not beats)
        assert a["front"] or b["front"]  # a front is never empty
    families = {"logreg": [MODELS[0]], MODELS[1].split("@")[0]: [MODELS[1]]}
    for row in found["speedups"]:  # over the family's slowest on the same system
        members = [single(m, row["system"])["latency_p90_ns"] for m in families[row["family"]]]
        assert row["speedup"] == pytest.approx(max(members) / (row["latency_p90_ms"] * 1e6))
    for row in found["systems"]["rows"]:
        model = row["model"].split(" ")[0]
        assert row["against"] == "one-cpu" and row["system"] == "two-threads"
        expected = (
            single(model, "two-threads")["latency_p90_ns"]
            / single(model, "one-cpu")["latency_p90_ns"]
        )
        assert row["ratio"] == pytest.approx(expected)
    for row in found["streams"]["rows"]:
        model = row["model"].split(" ")[0]
        (offline,) = [
            c for c in done
            if (c["model"], c["system"], c["scenario"], c["batch_size"])
            == (model, row["system"], "Offline", 1)
        ]  # fmt: skip
        p50 = single(model, row["system"])["latency_p50_ns"]
        assert row["offline_gain"] == pytest.approx(offline["throughput_sps"] * p50 / 1e9)
    assert [(b["system"], b["batch_size"]) for b in found["batches"]] == [
        ("one-cpu", 1), ("one-cpu", 4), ("two-threads", 1), ("two-threads", 4)
    ]  # fmt: skip


def test_tukeys_fences_flag_what_lies_beyond_one_and_a_half_iqr() -> None:
    values = {"a": 1.0, "b": 1.1, "c": 0.9, "d": 1.05, "e": 9.0}
    q1, q3 = np.percentile(list(values.values()), [25, 75])
    low, high = q1 - 1.5 * (q3 - q1), q3 + 1.5 * (q3 - q1)
    flagged = tukey(values)
    assert flagged["outliers"] == ["e"] and flagged["fences"] == pytest.approx([low, high])
    too_few = tukey({"a": 1.0, "b": 50.0, "c": 1.0})
    assert too_few["outliers"] == [] and "3 values: the fences need 4" in too_few["reason"]


def test_a_stopped_study_resumes_where_it_stopped(reg: Registry, tmp_path: Path) -> None:
    data = study_data("stopped")
    data["systems"] = data["systems"][:1]
    study = write(tmp_path / "stopped.yaml", data)
    stop = Stop()
    said: list[str] = []

    def say(line: str) -> None:
        said.append(line)
        if len(said) == 2:  # Ctrl-C while the second cell's outcome is printed
            from pinbench.worker.stop import interrupted_by

            stop.request(interrupted_by(2))

    with pytest.raises(Exception, match="interrupted by SIGINT"):
        reg.studies().run(str(study), say=say, stop=stop)
    assert "stopped: run it again to resume" in said[-1]
    states = [c["state"] for c in reg.studies().show("stopped")["cells"]]
    assert states[:2] == ["done", "done"] and set(states[2:]) == {"planned"}
    ran = reg.studies().run(str(study))
    assert (ran["ran"], ran["skipped"]) == (len(states) - 2, 2)
    assert {c["state"] for c in reg.studies().show("stopped")["cells"]} == {"done"}


def test_a_study_rerun_gives_each_cell_its_verdict(cli_on: Cli, tmp_path: Path) -> None:
    data = study_data("again")
    data["scenarios"] = {"accuracy": data["scenarios"]["accuracy"]}
    data["models"][0].pop("batch_sizes")
    data["systems"] = data["systems"][1:]  # two-threads, and the absent CPU's
    assert cli_on("study", "run", str(write(tmp_path / "again.yaml", data))).code == 1  # refused
    found = cli_on("study", "rerun", "again", "--json")
    assert found.code == 0, found.err
    verdicts = json.loads(found.out)
    assert [v["outcome"] for v in verdicts] == ["reproduced", "not run"] * 2
    assert all(len(v["reruns"]) == 1 for v in verdicts if v["outcome"] == "reproduced")
    assert verdicts[1]["reason"] == "the cell is refused"
    text = cli_on("study", "rerun", "again")  # each verdict with its reasons, once
    assert text.code == 0
    lines = text.out.splitlines()
    first = lines.index(f"reproduced     {verdicts[0]['label']}")
    assert lines[first + 1 : first + 1 + len(verdicts[0]["lines"])] == [
        f"  {line}" for line in verdicts[0]["lines"]
    ]
    assert "  the cell is refused" in lines and text.err == ""


def test_a_changed_study_under_the_same_name_is_refused_and_changes_nothing(
    cli_on: Cli, reg: Registry, tmp_path: Path
) -> None:
    data = study_data("named")
    data["scenarios"] = {"accuracy": data["scenarios"]["accuracy"]}
    data["models"][0].pop("batch_sizes")
    data["systems"] = data["systems"][1:2]
    assert cli_on("study", "run", str(write(tmp_path / "a.yaml", data))).code == 0
    runs = len(reg.runs())
    data["systems"][0]["threads"] = 1
    refused = cli_on("study", "run", str(write(tmp_path / "b.yaml", data)))
    assert refused.code == 1
    assert "study 'named' was run from another definition" in refused.err
    assert "give this one another name" in refused.err
    assert "or `pinbench study forget named` first" in refused.err
    assert len(reg.runs()) == runs
    assert reg.studies().show("named")["systems"][0]["threads"] == 2
    # forgotten, the name runs the new definition; the old study's runs stay recorded
    forgot = cli_on("study", "forget", "named")
    assert forgot.code == 0 and "forgot study named (2 cells)" in forgot.out
    assert cli_on("study", "run", str(tmp_path / "b.yaml")).code == 0
    assert reg.studies().show("named")["systems"][0]["threads"] == 1
    assert len(reg.runs()) == runs + 2
    gone = cli_on("study", "forget", "nothing")
    assert gone.code == 1 and "no study 'nothing'" in gone.err


def _with(change: Any) -> dict[str, Any]:
    data = study_data()
    change(data)
    return data


BAD_STUDIES = [
    # (case, the study's data, what the refusal says)
    ("unknown key", _with(lambda d: d["models"][0].update(runs=3)),
     "unknown field `runs` - at `$.models[0]`"),
    ("a model twice", _with(lambda d: d["models"].append(dict(d["models"][1]))),
     "models[2] repeats models[1]"),
    ("a system twice", _with(lambda d: d["systems"].append(dict(d["systems"][0]))),
     "systems[3] repeats the name 'one-cpu'"),
    ("a system's name", _with(lambda d: d["systems"][0].update(name="One CPU")),
     "systems[0].name 'One CPU'"),
    ("threads 0", _with(lambda d: d["systems"][0].update(threads=0)),
     "systems[0].threads must be between 1 and 1024, got 0"),
    ("a CPU twice", _with(lambda d: d["systems"][0].update(cpus=[0, 0])),
     "systems[0].cpus repeats a CPU"),
    ("a CPU past the bound", _with(lambda d: d["systems"][0].update(cpus=[4096])),
     "systems[0].cpus[0]"),
    ("an agent with CPUs", _with(lambda d: d["systems"][0].update(agent="lab-a")),
     "systems[0]: cpus are this machine's, and an agent runs on its own"),
    ("agents beside configurations", _with(lambda d: d["systems"][1].update(agent="lab-b")),
     "systems: all this machine's configurations or all a cluster's agents"),
    ("an agent's name", _with(lambda d: d.update(systems=[{"name": "a", "agent": "lab a"}])),
     "systems[0].agent 'lab a': a cluster system's name"),
    ("a scenario the study lacks", _with(lambda d: d["models"][1].update(scenarios=["Server"])),
     "models[1].scenarios names 'Server', which the study's scenarios do not"),
    ("a sweep without Offline", _with(lambda d: d["models"][0].update(scenarios=["accuracy"])),
     "models[0].batch_sizes: the model runs in no Offline scenario"),
    ("a batch size twice", _with(lambda d: d["models"][0].update(batch_sizes=[4, 4])),
     "models[0].batch_sizes repeats a size"),
    ("a bad scenario", _with(lambda d: d["scenarios"].update(bad={"name": "Bogus"})),
     "invalid request models[0] in scenario 'bad' on one-cpu"),
    ("a bad name", _with(lambda d: d.update(name="Tiny Study")), "name 'Tiny Study'"),
    ("a scenario's name", _with(lambda d: d["scenarios"].update({"\x1b[31mred": {}})),
     "scenarios: the name '\\x1b[31mred' is letters, digits and _.@/-"),
    ("a family's name", _with(lambda d: d["models"][0].update(family="a b")),
     "models[0].family 'a b'"),
    ("a control character", _with(lambda d: d.update(description="ok\x1b]0;pwned\x07")),
     "description holds a control character"),
    ("no systems", _with(lambda d: d.update(systems=[])), "systems"),
    ("the runner", _with(lambda d: d.update(runner="docker")), "runner"),
]  # fmt: skip


@pytest.mark.parametrize(("case", "data", "said"), BAD_STUDIES, ids=[c[0] for c in BAD_STUDIES])
def test_a_bad_study_is_refused_naming_what_is_wrong_and_changes_nothing(
    cli_on: Cli, tmp_path: Path, case: str, data: dict[str, Any], said: str
) -> None:
    refused = cli_on("study", "run", str(write(tmp_path / "bad.yaml", data)))
    assert refused.code == 1, refused.err
    assert "invalid study" in refused.err and said in refused.err, refused.err
    assert "Traceback" not in refused.err
    assert json.loads(cli_on("study", "list", "--json").out) == []
    assert cli_on("study", "list").out.startswith("no studies recorded (built-in: seed,")
    assert json.loads(cli_on("runs", "list", "--json").out) == []


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (("study", "run", "no-such-study"), "no such file, and no built-in study of that name"),
        (("study", "show", "never-run"), "no study 'never-run'"),
        (("study", "rerun", "never-run"), "no study 'never-run'"),
        (("study", "report", "never-run", "--html", "x.html"), "no study 'never-run'"),
    ],
)
def test_a_study_that_is_not_there_is_named(
    cli_on: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: tuple[str, ...], said: str
) -> None:
    monkeypatch.chdir(tmp_path)
    refused = cli_on(*args)
    assert refused.code == 1 and said in refused.err, refused.err
    assert not (tmp_path / "x.html").exists()


def test_the_built_in_studies_parse_and_plan_at_least_four_systems(cli_on: Cli) -> None:
    for name, models in (("seed-quick", 4), ("seed", 37)):
        planned = json.loads(cli_on("study", "show", name, "--json").out)
        assert planned["name"] == name and len(planned["models"]) == models
        assert len(planned["systems"]) >= 4
        assert {c["state"] for c in planned["cells"]} == {"planned"}


def test_a_studys_requests_are_its_planned_cells_and_lock(reg: Registry, tmp_path: Path) -> None:
    """``studies().requests``: each cell's request in the plan's order, read from the
    definition alone, locking as ``study run`` locks it (the demo runs a line of the built-in
    ``engines`` study from these)."""
    study = write(tmp_path / "tiny.yaml", study_data())
    planned = reg.studies().show(str(study))["cells"]
    found = reg.studies().requests(str(study), files=True)
    where = ("model", "framework", "scenario", "system")
    assert [[c[k] for k in where] for c in found] == [[c[k] for k in where] for c in planned]
    first = found[0]["request"]
    assert first["model"] == planned[0]["model"] and first["scenario"]["seed"] == 0
    lockfile = reg.lock(first)[0]
    assert lockfile.to_json()["scenario"]["mode"] == planned[0]["mode"] == "accuracy"
    engines = reg.studies().requests("engines")  # a built-in study by default: no file opened
    assert len(engines) == 20 and {c["request"]["threads"] for c in engines} == {1}
    from pinbench.studies.errors import StudyNotFound

    with pytest.raises(StudyNotFound):  # a file only where the caller says files=True
        reg.studies().requests(str(study))


def test_a_built_in_studys_plan_shows_before_any_home_exists(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A newcomer's first look (`study show seed`) needs no `pinbench init`: nothing ran
    there, so the plan is what there is; a name that is no built-in study still says to
    init, and nothing is created."""
    home = tmp_path / "none"
    cli = in_process_cli(monkeypatch, capsys, home, f"sqlite:///{home}/pinbench.db")
    shown = cli("study", "show", "seed-quick", "--json")
    assert shown.code == 0, shown.err
    planned = json.loads(shown.out)
    assert len(planned["cells"]) == 64 and {c["state"] for c in planned["cells"]} == {"planned"}
    other = cli("study", "show", "mine")
    assert other.code == 1 and "run `pinbench init`" in other.err
    assert not home.exists()


def test_a_study_is_recorded_and_read_back_on_either_database(
    ws_any: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pinbench.studies.cells import cells
    from pinbench.studies.spec import parse_study
    from pinbench.studies.store import list_studies, open_study, read_study, record_cell

    study = parse_study(study_data(), source="test")
    planned = cells(study)
    sid = open_study(ws_any, study, "tiny.yaml", planned)
    assert open_study(ws_any, study, "tiny.yaml", planned) == sid  # again: the same study
    record_cell(ws_any, sid, planned[0].key, state="refused", reason="why")
    read = read_study(ws_any, "tiny")
    assert read["definition"] == study.to_data() and read["digest"] == study.digest
    assert read["cells"][planned[0].key] == {
        "position": 0, "state": "refused", "lockfile": None, "run": None, "reason": "why"
    }  # fmt: skip
    assert list_studies(ws_any)[0]["cells"] == {"planned": len(planned) - 1, "refused": 1}
    # a study of more cells than one statement inserts: every cell recorded, in its place
    from pinbench.studies import store

    monkeypatch.setattr(store, "CELLS_PER_STATEMENT", 100)
    entry = {**study_data()["models"][0], "batch_sizes": list(range(1, 17))}
    systems = [{"name": f"s{n}", "threads": 1} for n in range(16)]  # 16 x 16 x 3 scenarios
    wide = parse_study({**study_data("wide"), "models": [entry], "systems": systems}, source="test")
    planned = cells(wide)
    assert len(planned) > 2 * store.CELLS_PER_STATEMENT and len(planned) % 100
    open_study(ws_any, wide, "wide.yaml", planned)
    recorded = read_study(ws_any, "wide")["cells"]
    assert [recorded[c.key]["position"] for c in planned] == [c.position for c in planned]
    assert len(recorded) == len(planned)


def test_a_cells_state_is_its_runs_however_its_waiter_ended(ws_any: Workspace) -> None:
    """Issue 85, item 3: after a restart, ``study show`` kept a cell ``running`` whose run was
    already interrupted: a cell's record was written by the process waiting on its run, and a
    server that stopped waiting wrote nothing. What a cell shows is now its run's status
    (``store.from_run``), in ``read_study`` and ``list_studies`` alike, and a post writes it."""
    from datetime import UTC, datetime

    from pinbench.db.models import Lockfile as LockfileRow
    from pinbench.db.models import Run
    from pinbench.studies.cells import cells
    from pinbench.studies.spec import parse_study
    from pinbench.studies.store import (
        list_studies,
        open_study,
        read_study,
        record_cell,
        replan_cells,
        settle_cells,
    )

    study = parse_study(study_data("waited"), source="test")
    planned = cells(study)
    sid = open_study(ws_any, study, "waited.yaml", planned)
    outcomes = {  # a cell's run: (its status, its error) -> what the cell shows
        "ok": (("succeeded", None), ("done", None)),
        "cut": (("interrupted", "the server stopped before this run finished"),
                ("failed", "the server stopped before this run finished")),
        "bad": (("failed", "boom"), ("failed", "boom")),
        "on": (("running", None), ("running", None)),
    }  # fmt: skip
    keys = dict(zip(outcomes, (c.key for c in planned), strict=False))
    with ws_any.transaction() as session:
        session.add(LockfileRow(digest="a" * 64, body="{}", created_at=datetime.now(UTC)))
        session.flush()
        for name, ((status, error), _) in outcomes.items():
            session.add(
                Run(
                    id=f"run-{name}",
                    lockfile_digest="a" * 64,
                    status=status,
                    error=error,
                    runner="local",
                    started_at=datetime.now(UTC),
                    host={},
                )
            )
    for name, key in keys.items():
        record_cell(
            ws_any, sid, key, state="running", lockfile_digest="a" * 64, run_id=f"run-{name}"
        )

    def shown() -> dict[str, tuple[str, str | None]]:
        read = read_study(ws_any, "waited")["cells"]
        return {name: (read[key]["state"], read[key]["reason"]) for name, key in keys.items()}

    assert shown() == {name: expected for name, (_, expected) in outcomes.items()}
    counted = next(s for s in list_studies(ws_any) if s["name"] == "waited")["cells"]
    assert counted == {"done": 1, "failed": 2, "running": 1, "planned": len(planned) - 4}
    settle_cells(ws_any, sid)  # what a post writes: the records agree with what is shown
    with ws_any.reads() as rows:
        found = rows("SELECT key, state FROM study_cells WHERE study_id = :s", {"s": sid})
    written = {str(key): str(state) for key, state in found}
    assert {name: written[key] for name, key in keys.items()} == {
        name: expected[0] for name, (_, expected) in outcomes.items()
    }
    assert shown() == {name: expected for name, (_, expected) in outcomes.items()}
    # a post runs the failed cells again: until their new runs end, they show that they wait
    replan_cells(ws_any, sid, [keys["cut"], keys["bad"]])
    again = read_study(ws_any, "waited")["cells"]
    assert [again[keys[n]] for n in ("cut", "bad")] == [
        {"position": again[keys[n]]["position"], "state": "planned", "lockfile": "a" * 64,
         "run": None, "reason": None}
        for n in ("cut", "bad")
    ]  # fmt: skip
    assert shown()["ok"] == ("done", None) and shown()["on"] == ("running", None)


def _cell(model: str, system: str, scenario: str, mode: str, **figures: Any) -> dict[str, Any]:
    return {
        "key": f"{model}|{system}|{scenario}|{mode}", "model": model, "framework": "f@*",
        "family": model, "dataset": "d@1", "dataset_resolved": "d@1.0.0",
        "scenario": scenario, "scenario_name": scenario, "mode": mode, "system": system,
        "batch_size": 1, "status": "succeeded", "run": f"run-{model}-{scenario}-{mode}",
        "framework_resolved": "f@1.0.0", **figures,
    }  # fmt: skip


def _matrix(cells: list[dict[str, Any]]) -> dict[str, Any]:
    return {"systems": [{"name": "one"}], "cells": cells}


def _valid(p50: float, p90: float, tps: float) -> dict[str, Any]:
    return {"latency_p50_ns": p50, "latency_p90_ns": p90, "throughput_sps": tps,
            "loadgen_valid_bool": 1.0}  # fmt: skip


def test_the_pareto_front_follows_each_metrics_direction_and_group() -> None:
    """WER is better lower: A (WER 0.1 at 10 ms) beats B (WER 0.5 at 20 ms), never both on
    the front; C, scored by top-1 on the same dataset, is a front of its own metric."""
    wer = {"accuracy_metric": "wer", "task": "speech-recognition"}
    cells = [
        _cell("a", "one", "accuracy", "accuracy", accuracy=0.1, **wer),
        _cell("a", "one", "SingleStream", "performance", **_valid(9e6, 10e6, 100.0)),
        _cell("b", "one", "accuracy", "accuracy", accuracy=0.5, **wer),
        _cell("b", "one", "SingleStream", "performance", **_valid(19e6, 20e6, 50.0)),
        _cell(
            "c",
            "one",
            "accuracy",
            "accuracy",
            accuracy=0.2,
            accuracy_metric="top1",
            task="classification",
        ),
        _cell("c", "one", "SingleStream", "performance", **_valid(29e6, 30e6, 30.0)),
    ]
    found = analyse(_matrix(cells))
    front = {p["model"].split(" ")[0]: p["front"] for p in found["pareto"]}
    assert front == {"a": True, "b": False, "c": True}
    from pinbench.studies.report import charts

    plot = charts(found)[0].spec  # a row per metric, each its own y axis: a WER is no top-1
    assert plot is not None and plot["facet"]["row"]["field"] == "metric"
    assert plot["resolve"]["scale"]["y"] == "independent"


def test_analyses_leave_out_accuracy_runs_and_runs_without_positive_figures() -> None:
    """An accuracy-mode Offline cell records LoadGen's throughput too: it is no Offline
    measurement. A VALID run whose p90 is 0 would divide by zero: it is left out, saying so."""
    cells = [
        _cell("a", "one", "SingleStream", "performance", **_valid(9e6, 10e6, 100.0)),
        _cell("a", "one", "Offline", "performance", **_valid(5e6, 8e6, 500.0)),
        _cell("a", "one", "Offline", "accuracy", throughput_sps=5.0),
        _cell("z", "one", "SingleStream", "performance", **_valid(0.0, 0.0, 10.0)),
    ]
    found = analyse(_matrix(cells))
    assert [r["throughput_sps"] for r in found["streams"]["rows"]] == [500.0]
    assert [r["model"] for r in found["speedups"]] == ["a"]  # z's p90 of 0 is left out
    (left,) = found["left_out"]
    assert left["reason"] == "its run recorded no positive latency_p50_ns, latency_p90_ns"


def test_an_unsandboxed_cell_is_left_out_of_every_analysis_and_named() -> None:
    """Issue 84, item 5: a cell whose run was UNSANDBOXED (its code could read its clock and
    the truth) is no measurement: left out of the analyses with the reason, in either mode,
    and marked where its figure is shown."""
    from pinbench.studies.figures import cell as shown

    loose = {"unsandboxed_bool": 1.0}
    cells = [
        _cell("a", "one", "SingleStream", "performance", **_valid(9e6, 10e6, 100.0)),
        _cell("b", "one", "SingleStream", "performance", **_valid(1e6, 2e6, 900.0), **loose),
        _cell("b", "one", "accuracy", "accuracy", accuracy=0.9, accuracy_metric="top1",
              task="classification", **loose),
    ]  # fmt: skip
    found = analyse(_matrix(cells))
    assert [r["model"] for r in found["speedups"]] == ["a"]
    assert found["pareto"] == []  # b's accuracy was its only one
    reason = "its run was UNSANDBOXED: its figures are its own word"
    assert found["left_out"] == [{"key": cells[1]["key"], "reason": reason},
                                 {"key": cells[2]["key"], "reason": reason}]  # fmt: skip
    assert (shown(cells[1]) or "").endswith(" UNSANDBOXED")
    assert (shown(cells[2]) or "").endswith(" UNSANDBOXED")
    assert "UNSANDBOXED" not in (shown(cells[0]) or "")


def _fast_study() -> dict[str, Any]:
    """Four models on two systems, each SingleStream p90 twice as long on the second but
    ``d``'s (five times), every throughput past 10,000 samples/s, ``a``'s p90 past 10 s."""
    cells = []
    for system, times in (("one", 1.0), ("two", 2.0)):
        for n, model in enumerate("abcd"):
            p90 = (12_345e6 if model == "a" else (n + 1) * 1e6) * (5.0 if model == "d" else times)
            if system == "one" and model == "d":
                p90 /= 5.0
            tps = 94_520.3 + n
            cells.append(
                _cell(model, system, "SingleStream", "performance", **_valid(p90, p90, tps))
            )
            cells.append(_cell(model, system, "Offline", "performance", **_valid(p90, p90, tps)))
        cells.append(
            _cell("a", system, "accuracy", "accuracy", accuracy=0.5, accuracy_metric="top1")
        )
    matrix = {"name": "fast", "description": "", "digest": "0" * 64, "source": "fast.yaml"}
    systems = [{"name": s, "threads": 1, "cpus": None} for s in ("one", "two")]
    marked = [c | {"state": "done", "lockfile": "0" * 64, "reason": None} for c in cells]
    return matrix | {"systems": systems, "cells": marked}


EXPONENT = re.compile(r"[0-9]e[+-][0-9]")


def test_study_show_and_the_report_state_the_ratios_across_systems_in_digits(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The report printed ``9.452e+04/s`` and named the across-systems outliers but none of
    the ratios: both faces state each ratio (``2x``), the outliers with their fences, and no
    number of either is an exponent (the report's plots' data aside: it is JSON, not text)."""
    from pinbench.cli.study import print_matrix
    from pinbench.studies.report import study_html

    matrix = _fast_study()
    print_matrix(matrix)
    shown = capsys.readouterr().out
    page = study_html(matrix)
    text = re.sub(r"<script.*?</script>", "", page, flags=re.S)
    for face in (shown, text):
        assert not EXPONENT.search(face), EXPONENT.findall(face)
        assert "94,520/s" in face and "12,345" in face
    assert re.search(r"│ a f@\* +│ base +│ 2x +│", shown)
    assert re.search(r"│ d f@\* +│ base +│ 5x outlier +│", shown)
    assert "outliers on two: d f@* (fences 0.875 to 3.875)" in shown
    assert '<td>a f@*</td><td class="num">base</td><td class="num">2x</td>' in text
    assert '<td class="num">5x outlier</td>' in text
    assert "p90 on two over the model's first system: d f@* (fences 0.875 to 3.875)" in text
    for found in re.findall(r'class="chart-spec" data-chart="\w+">(.*?)</script>', page):
        spec = json.loads(found)
        for tip in spec.get("spec", spec)["encoding"]["tooltip"]:  # a facet's marks in "spec"
            # a number in a tooltip is text the figure rule wrote, never the data's float
            assert tip["field"] in NAMES or tip["field"].startswith("shown_"), tip


NAMES = {"model", "system", "framework", "label", "batch_size"}
"""Tooltip fields that are no figure: names, and a batch size (a whole number under 10,000)."""


def test_a_systems_cpus_pin_every_thread_of_the_process_and_are_given_back() -> None:
    """A framework's thread pool made before a cell (or by an earlier cell) runs on the
    cell's CPUs too: on Linux each thread has its own affinity."""
    import threading

    from pinbench.studies.execute import affinity

    before = os.sched_getaffinity(0)
    seen: dict[str, set[int]] = {}
    go, done = threading.Event(), threading.Event()

    def pool() -> None:
        go.wait()
        seen["inside"] = os.sched_getaffinity(0)
        done.set()

    thread = threading.Thread(target=pool)
    thread.start()  # made before the cell, as a framework's pool
    with affinity([CPU]):
        go.set()
        done.wait(10)
    thread.join(10)
    assert seen["inside"] == {CPU}
    assert os.sched_getaffinity(0) == before


def test_a_study_running_elsewhere_is_refused_and_changes_nothing(
    cli_on: Cli, digits: Workspace, reg: Registry, tmp_path: Path
) -> None:
    from pinbench.studies.execute import study_lock

    study = write(tmp_path / "tiny.yaml", study_data())
    with study_lock(digits, "tiny"):  # another `study run` of it, holding the lock
        busy = cli_on("study", "run", str(study))
    assert busy.code == 1 and "study 'tiny' is running in another process" in busy.err
    assert reg.runs() == [] and json.loads(cli_on("study", "list", "--json").out) == []


def test_a_resumed_study_never_mixes_versions_in_a_row(reg: Registry, tmp_path: Path) -> None:
    """The range ^1 resolved to 1.2.0 for the cells that ran; 1.2.0 yanked since, the rest
    would run 1.1.0: they are refused, naming both."""
    data = study_data("ranged")
    data["models"] = [
        {"model": "vision/digits-logreg@^1", "framework": "onnxruntime@*",
         "dataset": "sklearn-digits-test@1"}
    ]  # fmt: skip
    data["systems"] = data["systems"][:1]
    study = write(tmp_path / "ranged.yaml", data)
    stop = Stop()

    def say(line: str) -> None:
        from pinbench.worker.stop import interrupted_by

        stop.request(interrupted_by(2))  # stopped after its first cell

    with pytest.raises(Exception, match="interrupted"):
        reg.studies().run(str(study), say=say, stop=stop)
    reg.yank("model/vision/digits-logreg@1.2.0", "test: a version gone since")
    ran = reg.studies().run(str(study))
    assert (ran["skipped"], ran["refused"]) == (1, 2)
    cells = reg.studies().show("ranged")["cells"]
    assert cells[0]["model_resolved"] == "vision/digits-logreg@1.2.0"
    for cell in cells[1:]:
        assert cell["state"] == "refused"
        assert "vision/digits-logreg@1.1.0" in cell["reason"]
        assert "this model's other cells ran vision/digits-logreg@1.2.0" in cell["reason"]


def test_a_name_both_built_in_and_a_file_is_refused_and_a_server_reads_no_file(
    cli_on: Cli, reg: Registry, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pinbench.studies.errors import StudyError, StudyNotFound

    monkeypatch.chdir(tmp_path)
    write(tmp_path / "seed-quick", study_data("secret") | {"description": "SECRET"})
    write(tmp_path / "mine", study_data("mine"))
    refused = cli_on("study", "run", "seed-quick")
    assert refused.code == 1 and "say ./seed-quick for the file" in refused.err
    with pytest.raises(StudyError, match="names both the built-in study and a file"):
        reg.studies().show("seed-quick")
    served = reg.studies().show("seed-quick", files=False)  # what a server answers
    assert served["name"] == "seed-quick" and "SECRET" not in json.dumps(served)
    assert served["source"] == "built-in seed-quick"
    assert reg.studies().show("./seed-quick")["name"] == "secret"
    assert reg.studies().show("mine")["source"] == "mine"
    with pytest.raises(StudyNotFound):
        reg.studies().show("mine", files=False)


def test_the_study_file_docs_study_md_shows_is_a_study() -> None:
    from pinbench.registry.yamlsafe import load_yaml
    from pinbench.studies.cells import cells
    from pinbench.studies.spec import parse_study

    page = (Path(__file__).parent.parent / "docs" / "study.md").read_text()
    block = page.split("## A study file", 1)[1].split("```yaml\n", 1)[1].split("```", 1)[0]
    study = parse_study(load_yaml(block), source="docs/study.md")
    assert study.name == "my-study" and len(study.systems) == 2
    # the CNN in ONNX sweeps 3 batch sizes; ResNet-50 runs in SingleStream only
    assert len(cells(study)) == 2 * (3 + 2) + 2 * 3 + 2 * 1
