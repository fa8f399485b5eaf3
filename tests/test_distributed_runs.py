"""Distributed training runs end to end (issue 39): a request's ``distributed`` section locked
with the rest of the request, run by the local runner with two worker processes, recorded
(scheme, workers, bytes per step, throughput per worker, the final weights), rerun with the
same weights; bad input refused before anything is locked or recorded."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from sqlalchemy import func, select

from pinbench.db.models import Lockfile as LockfileRow
from pinbench.db.models import Run
from pinbench.evaluator.records.run_view import show_run
from pinbench.evaluator.run import queue_run, run_lockfile
from pinbench.evaluator.verdicts.rerun import rerun
from pinbench.registry import service
from pinbench.registry.lockfile import Lockfile
from pinbench.registry.request import parse_request
from pinbench.specs.distributed import RanksOnSystems, TooManyWorkers, available_here
from pinbench.workspace import Workspace
from tests.helpers import Cli, Home, in_process_cli, published_home

pytestmark = pytest.mark.usefixtures("two_cores")  # with CI=true a failure, never a skip

REQUEST: dict[str, Any] = {
    "model": "vision/digits-cnn-torch@^1",
    "dataset": "sklearn-digits-train@^1",
    "framework": "torch@*",
    "training": {
        "validation": "sklearn-digits-test@^1",
        "learning_rate": 0.01,
        "batch_size": 32,
        "epochs": 10,
        "target_top1": 0.9,
    },
}


def quiet(_: str) -> None:
    pass


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory, cnn_catalog_dir: Path) -> Iterator[Home]:
    root = tmp_path_factory.mktemp("distributed-runs")
    with published_home(root, cnn_catalog_dir) as home:
        yield home


@pytest.fixture
def cli(home: Home, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Cli:
    return in_process_cli(monkeypatch, capsys, home.home, home.db)


def _lock(ws: Workspace, **distributed: Any) -> Lockfile:
    request = {**REQUEST, "distributed": {"scheme": "allreduce", "workers": 2, **distributed}}
    return service.lock(ws, parse_request(request))[0]


def _counts(ws: Workspace) -> tuple[int, int]:
    with ws.transaction() as session:
        runs = session.scalar(select(func.count()).select_from(Run))
        locks = session.scalar(select(func.count()).select_from(LockfileRow))
    return int(runs or 0), int(locks or 0)


@pytest.fixture(scope="module")
def allreduce_run(home: Home) -> dict[str, Any]:
    outcome = run_lockfile(home.ws, _lock(home.ws), runner="local", say=quiet)
    return show_run(home.ws, outcome.id, nested=True)


def test_a_two_worker_run_records_scheme_bytes_and_throughput(
    allreduce_run: dict[str, Any],
) -> None:
    info = allreduce_run
    assert info["status"] == "succeeded", info["error"]
    record, metrics = info["details"]["distributed"], info["metrics"]
    assert record["scheme"] == "allreduce" and record["workers"] == 2
    assert record["global_batch_size"] == 64 and record["batch_size_per_worker"] == 32
    assert record["bytes_per_step"] == record["parameter_bytes"] == 24_360
    assert len(record["throughput_sps_per_worker"]) == 2
    assert metrics["workers"] == 2.0 and metrics["bytes_per_step"] == 24_360
    assert metrics["throughput_sps_per_worker"] == pytest.approx(
        sum(record["throughput_sps_per_worker"]) / 2
    )
    training = info["details"]["training"]
    assert training["reached_epoch"] is not None
    assert metrics["time_to_accuracy_s"] == pytest.approx(
        sum(e["train_s"] for e in training["epochs"][: training["reached_epoch"]])
    )
    assert len(training["weights_sha256"]) == 64


def test_runs_show_and_list_name_the_scheme_in_text_json_and_the_api(
    cli: Cli, allreduce_run: dict[str, Any]
) -> None:
    """Only the lockfile said which scheme a distributed run trained with."""
    from pinbench.api.controllers.runs import run_view

    run_id = allreduce_run["id"]
    pinned = {"scheme": "allreduce", "workers": 2, "average_every": None, "systems": 1}
    shown = cli("runs", "show", run_id)
    assert shown.code == 0, shown.err
    assert ", distributed: allreduce, 2 workers: target reached at epoch" in shown.out
    listed = cli("runs", "list")
    (row,) = [line for line in listed.out.splitlines() if line.strip().startswith(run_id[:8])]
    assert "training (allreduce, 2 workers)" in row
    assert json.loads(cli("runs", "show", run_id, "--json").out)["distributed"] == pinned
    rows = json.loads(cli("runs", "list", "--json").out)
    assert next(r for r in rows if r["id"] == run_id)["distributed"] == pinned
    for full in (True, False):  # GET /api/v1/runs/{id} and the listing
        view = run_view(allreduce_run, full=full).distributed
        assert view is not None and (view.scheme, view.workers) == ("allreduce", 2)


def test_the_lockfile_pins_the_distributed_section(home: Home) -> None:
    lock = _lock(home.ws, scheme="mavg", average_every=4)
    assert b'"distributed":{"average_every":4,"scheme":"mavg","workers":2}' in lock.canonical
    again = Lockfile.from_bytes(lock.canonical)
    assert again.digest == lock.digest and again.body.request.distributed == (
        lock.body.request.distributed
    )
    plain = service.lock(home.ws, parse_request(REQUEST))[0]
    assert b"distributed" not in plain.canonical


def test_a_rerun_has_identical_final_weights(home: Home, allreduce_run: dict[str, Any]) -> None:
    verdict = rerun(home.ws, allreduce_run["id"], repeat=1, say=quiet)
    want = allreduce_run["details"]["training"]["weights_sha256"]
    assert f"final weights identical (sha256 {want[:12]}) in every rerun" in verdict.lines


@pytest.mark.parametrize(
    ("distributed", "refusal", "message"),
    [
        (
            {"workers": available_here() + 1},
            TooManyWorkers,
            r"distributed.workers = \d+, but this machine",
        ),
        # ranks placed on several systems of a cluster (decision 317): saying how to run it
        ({"systems": 2}, RanksOnSystems, r"--on SYSTEM_1 \.\.\. --on SYSTEM_2"),
    ],
)
def test_workers_this_machine_cannot_host_are_refused_and_nothing_recorded(
    home: Home, distributed: dict[str, Any], refusal: type[Exception], message: str
) -> None:
    """By ``pinbench run`` here and by a server's queue for this machine alike."""
    lock = _lock(home.ws, **distributed)
    before = _counts(home.ws)
    with pytest.raises(refusal, match=message):
        run_lockfile(home.ws, lock, runner="local", say=quiet)
    with pytest.raises(refusal, match=message):
        queue_run(home.ws, lock, runner="local", run_id="r-refused")
    assert _counts(home.ws) == before


@pytest.mark.parametrize(
    ("distributed", "message"),
    [
        ({"scheme": "dpsgd", "workers": 2}, "got 'dpsgd' - at `$.distributed.scheme`"),
        ({"scheme": "ddp", "workers": 0}, "distributed.workers must be between 1 and 64, got 0"),
        ({"scheme": "mavg", "workers": 2}, "scheme mavg needs average_every"),
        ({"scheme": "ddp", "workers": 3, "systems": 2}, "systems = 2 does not divide workers"),
        # one system is said by leaving it out: a lockfile's digest has one spelling
        ({"scheme": "ddp", "workers": 2, "systems": 1}, "distributed.systems must be between"),
        ({"scheme": "ddp", "workers": 2, "systems": 65}, "distributed.systems must be between"),
    ],
)
def test_lock_refuses_a_bad_distributed_section_and_records_nothing(
    home: Home, cli: Cli, tmp_path: Path, distributed: dict[str, Any], message: str
) -> None:
    path = tmp_path / "request.yaml"
    path.write_text(yaml.safe_dump({**REQUEST, "distributed": distributed}))
    before = _counts(home.ws)
    result = cli("lock", str(path), "-o", str(tmp_path / "out.lock"))
    assert result.code == 1, result.out
    assert message in result.err and "Traceback" not in result.err
    assert not (tmp_path / "out.lock").exists()
    assert _counts(home.ws) == before


# ---------------------------------------------------------------- the report


def test_the_report_has_a_scheme_table_and_a_scaling_plot(
    home: Home, allreduce_run: dict[str, Any]
) -> None:
    from pinbench import reports
    from pinbench.reports.distributed import distributed_table, scaling_chart

    ddp = run_lockfile(home.ws, _lock(home.ws, scheme="ddp"), runner="local", say=quiet)
    report = reports.gather(home.ws, [allreduce_run["id"], ddp.id])
    rows = distributed_table(report)
    assert [(r.scheme, r.workers, r.global_batch) for r in rows] == [
        ("allreduce", "2", "64"),
        ("ddp", "2", "64"),
    ]
    assert {r.bytes_per_step for r in rows} == {"24,360"}
    assert all(float(r.time_to_accuracy_s) > 0 for r in rows)
    share = allreduce_run["details"]["distributed"]["collective_share"]
    assert 0 < share < 1 and allreduce_run["metrics"]["collective_share"] == share
    assert [(r.collective_share, r.systems) for r in rows] == [
        (f"{share * 100:.1f}%", "one"),
        ("", "one"),  # DDP's all-reduces overlap its backward pass: not timed apart
    ]
    chart = scaling_chart(report)
    assert chart.spec is not None
    points = chart.spec["data"]["values"]
    assert {(p["scheme"], p["workers"]) for p in points} == {("allreduce", 2), ("ddp", 2)}
    assert {p["measure"] for p in points} == {
        "samples/s (all workers)",
        "samples/s per worker",
        "time to accuracy (s)",
    }
    page = reports.render(report, "html")[1].decode()
    assert 'id="distributed"' in page and 'id="chart-distributed"' in page
    text = reports.render(report, "md")[1].decode()
    assert "## Distributed training: schemes and workers" in text
    assert f"| ddp | 2 | {ddp.id[:8]} | 64 | 24,360 |" in text


def test_a_cluster_places_the_workers_on_a_system_with_a_core_each(home: Home) -> None:
    """On a cluster all of a run's workers start on the one system that runs it: a system
    with fewer cores is not a candidate, and when none is left nothing is queued."""
    from pinbench.cluster.placement import Candidate, NoMatchingSystem, choose_for

    facts = {"arch": "x86_64"}
    small = Candidate("small", {**facts, "cores": 1}, True)
    big = Candidate("big", {**facts, "cores": 4}, True)
    body = _lock(home.ws).body
    assert choose_for(body, [small, big], None) == ["big"]
    with pytest.raises(NoMatchingSystem, match=r"small: has 1 cores, fewer than distributed"):
        choose_for(body, [small, big], ["small"])
    with pytest.raises(NoMatchingSystem):
        choose_for(_lock(home.ws, workers=8).body, [small, big], None)
    single = service.lock(home.ws, parse_request(REQUEST))[0].body
    assert choose_for(single, [small, big], None) == ["big", "small"]


def test_systems_named_for_a_spread_run_are_one_run_rank_0_on_the_first(home: Home) -> None:
    from pinbench.cluster.spread import SpreadRefused, runs_of

    spread = _lock(home.ws, systems=2)
    assert runs_of(spread, ["b", "a"], named=True, allowed=True) == [["b", "a"]]
    assert runs_of(_lock(home.ws), ["a", "b"], named=True, allowed=False) == [["a"], ["b"]]
    # its ranks' sandboxes keep the agents' network: the server's operator decides
    with pytest.raises(SpreadRefused, match="pinbench serve --allow-spread"):
        runs_of(spread, ["b", "a"], named=True, allowed=False)


def test_every_system_of_a_spread_run_on_all_is_cut_into_runs_or_refused(home: Home) -> None:
    from pinbench.cluster.spread import SpreadRefused, runs_of

    lock, chosen = _lock(home.ws, systems=2), ["a", "b", "c", "d"]
    assert runs_of(lock, chosen, named=False, allowed=True) == [["a", "b"], ["c", "d"]]
    with pytest.raises(SpreadRefused, match="--on all found 3, not a multiple of 2"):
        runs_of(lock, chosen[:3], named=False, allowed=True)
    with pytest.raises(SpreadRefused, match="name exactly 2 systems with --on"):
        runs_of(lock, ["a"], named=True, allowed=True)
