"""What a server refuses before it runs a study on its agents (``api.study_runs``; decision
304): a study of this machine's configurations; a built-in study's name; a runner the server
does not allow; one that a process runs already (it holds the study's lock: 409, the message
naming no path of the server's); and more studies at once than it runs (429, ``Retry-After``).
Nothing is recorded and no thread starts for a refused post. A cell left ``running`` when the
server closed is settled from its run when the study is posted again: a cancelled run is
finished too."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from pinbench.accounts import Principal
from pinbench.api import study_runs
from pinbench.api.problems import StudiesBusy, retry_after_s, status_of
from pinbench.api.run_placement import Cluster
from pinbench.api.runpool import RunPool
from pinbench.api.study_runs import (
    BuiltInName,
    Drivers,
    NotOnAgents,
    StudyRunningElsewhere,
    settle,
)
from pinbench.evaluator.server_runner import RunnerRefused
from pinbench.studies.execute import hold_study_lock, study_active
from pinbench.studies.spec import parse_study
from pinbench.studies.store import list_studies
from pinbench.workspace import Workspace

STUDY = {
    "name": "on-agents",
    "models": [
        {"model": "vision/digits-logreg@^1", "framework": "onnxruntime@*", "dataset": "d@1"}
    ],
    "scenarios": {"accuracy": {"mode": "accuracy"}},
    "systems": [{"name": "a", "agent": "lab-a"}],
}
OWNER = Principal(user="owner", scopes=frozenset({"read", "run"}), namespaces=frozenset())


@pytest.fixture
def drivers(ws: Workspace) -> Iterator[Drivers]:
    pool = RunPool(
        ws, workers=1, queue=1, cluster=Cluster("127.0.0.1:1", "http://127.0.0.1:1", "t")
    )
    try:
        yield Drivers(pool)
    finally:
        pool.close()


def test_a_study_of_this_machines_configurations_is_not_run_by_a_server(
    drivers: Drivers, ws: Workspace
) -> None:
    here = parse_study({**STUDY, "systems": [{"name": "x", "threads": 1}]}, source="t")
    with pytest.raises(NotOnAgents, match="a server runs a study on its cluster's agents only"):
        drivers.start(here, "t", OWNER)
    assert list_studies(ws) == []


def test_a_study_running_elsewhere_is_a_conflict_naming_no_path(
    drivers: Drivers, ws: Workspace
) -> None:
    study = parse_study(STUDY, source="t")
    with hold_study_lock(ws, study.name):  # a `study run`, or another worker of the server
        assert study_active(ws, study.name)
        with pytest.raises(StudyRunningElsewhere) as refused:
            drivers.start(study, "t", OWNER)
    assert status_of(refused.value) == 409 and str(ws.settings.home) not in str(refused.value)
    assert not study_active(ws, study.name) and list_studies(ws) == []


def test_more_studies_than_a_server_runs_at_once_are_refused_for_now(
    drivers: Drivers, ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(study_runs, "MAX_STUDIES", 0)
    with pytest.raises(StudiesBusy) as refused:
        drivers.start(parse_study(STUDY, source="t"), "t", OWNER)
    assert status_of(refused.value) == 429 and retry_after_s(refused.value) == 60
    assert list_studies(ws) == []


def test_a_built_in_name_or_a_runner_the_server_refuses_is_refused_first(
    drivers: Drivers, ws: Workspace
) -> None:
    with pytest.raises(BuiltInName, match="the name of a built-in study"):
        drivers.start(parse_study({**STUDY, "name": "seed"}, source="t"), "t", OWNER)
    drivers.pool.runners = ("docker",)
    with pytest.raises(RunnerRefused):
        drivers.start(parse_study(STUDY, source="t"), "t", OWNER)
    assert list_studies(ws) == [] and not study_active(ws, "on-agents")


def test_a_cell_left_running_is_settled_from_its_run_and_a_cancelled_run_has_ended(
    digits: Workspace,
) -> None:
    from sqlalchemy import update

    from pinbench.api.study_runs import _wait
    from pinbench.db.models import Run
    from pinbench.evaluator.run import run_lockfile
    from pinbench.registry import service
    from pinbench.registry.request import parse_request
    from pinbench.studies.cells import cells
    from pinbench.studies.store import open_study, read_study, record_cell

    request = {"model": "vision/digits-logreg@^1", "dataset": "sklearn-digits-test@^1",
               "scenario": {"mode": "accuracy"}}  # fmt: skip
    lock, _ = service.lock(digits, parse_request(request))
    run = run_lockfile(digits, lock, say=lambda _: None).id
    assert _wait(digits, run, lambda: False) == ("succeeded", None)
    with digits.transaction() as session:  # as DELETE /api/v1/runs/{id} leaves it
        session.execute(update(Run).where(Run.id == run).values(status="cancelled"))
    assert _wait(digits, run, lambda: False)[0] == "cancelled"  # ended: not waited on forever

    study = parse_study(STUDY, source="t")
    planned = cells(study)
    sid = open_study(digits, study, "t", planned)
    key = planned[0].key
    record_cell(digits, sid, key, state="running", lockfile_digest=lock.digest.hex, run_id=run)
    settled = settle(digits, sid, read_study(digits, study.name)["cells"])
    assert settled[key]["state"] == "failed"
    assert read_study(digits, study.name)["cells"][key]["state"] == "failed"
