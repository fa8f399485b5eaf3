"""What a server refuses before it runs a study on its agents (``api.study_runs``; decision
304): a study of this machine's configurations; one that a process runs already (it holds the
study's lock: 409, the message naming no path of the server's); and more studies at once than
it runs (429, ``Retry-After``). Nothing is recorded and no thread starts for a refused post."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from pinbench.accounts import Principal
from pinbench.api import study_runs
from pinbench.api.problems import StudiesBusy, retry_after_s, status_of
from pinbench.api.run_placement import Cluster
from pinbench.api.runpool import RunPool
from pinbench.api.study_runs import Drivers, NotOnAgents, StudyRunningElsewhere
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
