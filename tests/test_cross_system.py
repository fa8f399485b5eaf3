"""Cross-system reports, built without a Ray cluster: real runs of one model whose recorded
system (``runs.system``) and host facts are set in the database, and systems registered
with ``pinbench.cluster.systems.record``, as the server records them for runs on agents.

A report over runs on several systems names each run's system (a cluster system by name, a
run made outside a cluster as ``HOST (local)``), plots one model's latency and throughput per
system, and names the hardware facts that differ. Facts come from agents: shown as text, never
as markup. (The web UI's systems pages and the compare page across systems are checked in a
real browser by tests/test_web.py.)
"""

from __future__ import annotations

import json
import platform
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pinbench import catalog as builtin
from pinbench import reports
from pinbench.cluster.systems import record
from pinbench.db.models import Run
from pinbench.evaluator.records.run_view import show_run
from pinbench.evaluator.run import run_lockfile
from pinbench.registry import service
from pinbench.registry.request import parse_request
from pinbench.reports.data import Report, RunData
from pinbench.reports.hardware import hardware, system_label
from pinbench.reports.render import md_text
from pinbench.reports.report_charts import charts
from pinbench.reports.systems_chart import system_points
from pinbench.workspace import Workspace
from tests.helpers import Cli, published_workspace

GIB = 2**30
HOSTILE_CPU = 'Xeon <script>alert("cpu")</script>'
HOSTILE_LIBRARY = "<img src=x onerror=alert(1)>"
A100 = {"name": "NVIDIA A100-SXM4-80GB", "driver": "535.104.05", "memory": "81920 MiB"}
LAB_A_HOST = {
    "cpu": HOSTILE_CPU, "cores": 64, "memory_bytes": 256 * GIB, "gpus": [A100, A100],
    "os": "Linux-6.1-x86_64", "arch": "x86_64", "python": "3.12.3", "hostname": "node-a",
    "frameworks": {},
}  # fmt: skip
LAB_B_HOST = {
    "cpu": "AMD EPYC 7763", "cores": 128, "memory_bytes": 512 * GIB, "gpus": [],
    "os": "Linux-6.8-x86_64", "arch": "x86_64", "python": "3.12.3", "hostname": "node-b",
    "frameworks": {},
}  # fmt: skip
SYSTEM_FACTS = {
    "lab-a": {**LAB_A_HOST, "cpu_flags": ["avx2", "avx512f"], "kernel": "6.1",
              "accelerator_libraries": ["cuda", HOSTILE_LIBRARY]},
    "lab-b": {**LAB_B_HOST, "cpu_flags": ["avx2"], "kernel": "6.8", "accelerator_libraries": []},
}  # fmt: skip
HOSTS = {"lab-a": LAB_A_HOST, "lab-b": LAB_B_HOST}
QUICK = {"name": "Offline", "min_duration_ms": 200, "min_query_count": 30}


def place(ws: Workspace, run_id: str, system: str) -> None:
    """Record ``run_id`` as run on ``system`` with that system's host facts, as the server
    records a run an agent made."""
    with ws.transaction() as session:
        run = session.get(Run, run_id)
        assert run is not None
        run.system, run.host = system, HOSTS[system]


def cross_system_runs(ws: Workspace) -> dict[str, str]:
    """Three runs of one lockfile (the digits logistic regression, Offline, batch 1): on
    lab-a, on lab-b, and one made here (no system). ``ws`` has the digits catalog published."""
    for name, facts in SYSTEM_FACTS.items():
        record(ws, name, facts, node_id=f"node-{name}")
    request = {"model": f"{builtin.MODEL_NAME}@^1", "dataset": f"{builtin.DATASET_NAME}@^1"}
    ((lock, _),) = service.lock_points(ws, parse_request({**request, "scenario": QUICK}))
    ids = {where: run_lockfile(ws, lock, say=lambda _: None).id for where in (*HOSTS, "local")}
    for system in HOSTS:
        place(ws, ids[system], system)
    return ids


@dataclass
class Setup:
    ws: Workspace
    root: Path
    ids: dict[str, str]
    """lab-a, lab-b, local -> run id."""

    def report(self, *where: str) -> Report:
        return reports.gather(self.ws, [self.ids[w] for w in where])

    def render(self, fmt: str, *where: str) -> str:
        return reports.render(self.report(*where), fmt)[1].decode()


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory, catalog_dir: Path) -> Iterator[Setup]:
    root = tmp_path_factory.mktemp("cross-system")
    ws = published_workspace(root, catalog_dir)
    yield Setup(ws, root, cross_system_runs(ws))
    ws.close()


LOCAL = f"{platform.node()} (local)"


# ---------------------------------------------------------------- the system column


def test_each_run_names_its_system(setup: Setup) -> None:
    report = setup.report("lab-a", "lab-b", "local")
    assert [r.system for r in report.runs] == ["lab-a", "lab-b", LOCAL]
    page = setup.render("html", "lab-a", "lab-b", "local")
    row = re.search(r"<tr><th>system</th>(.*?)</tr>", page, re.S)
    assert row is not None
    assert re.findall(r'<td class="system">(.*?)</td>', row.group(1)) == [
        "lab-a",
        "lab-b",
        LOCAL,
    ]
    text = setup.render("md", "lab-a", "lab-b", "local")
    assert f"| system | lab-a | lab-b | {md_text(LOCAL)} |" in text


SYSTEM_LABELS: list[tuple[dict[str, Any], str, str]] = [
    ({"system": "lab-a", "host": {"hostname": "node-a"}}, "lab-a", "a cluster system: its name"),
    ({"system": None, "host": {"hostname": "laptop"}}, "laptop (local)", "outside a cluster"),
    ({"system": None, "host": None}, "local", "queued: no host recorded yet"),
    ({"system": None, "host": {"hostname": "a\nb <i>"}}, "a b <i> (local)", "one line of text"),
]  # fmt: skip


@pytest.mark.parametrize(("info", "label", "why"), SYSTEM_LABELS, ids=[s[2] for s in SYSTEM_LABELS])
def test_system_labels(info: dict[str, Any], label: str, why: str) -> None:
    assert system_label(info) == label


# ---------------------------------------------------------------- one model across systems


def test_the_plot_shows_one_model_per_system(setup: Setup) -> None:
    report = setup.report("lab-a", "lab-b", "local")
    chart = next(c for c in charts(report) if c.key == "systems")
    assert chart.spec is not None
    (panel,) = chart.spec["vconcat"]  # one model, so one row of panels
    titles = [p["encoding"]["y"]["title"] for p in panel["hconcat"]]
    assert titles == ["latency, LoadGen (ms)", "throughput, LoadGen (samples/s)"]
    rows = chart.spec["data"]["values"]
    assert [r["system"] for r in rows if r["measure"] == "throughput"] == ["lab-a", "lab-b", LOCAL]
    for where in ("lab-a", "lab-b", "local"):
        run = show_run(setup.ws, setup.ids[where])
        system = "lab-a" if where == "lab-a" else "lab-b" if where == "lab-b" else LOCAL
        mine = {r["measure"]: r["value"] for r in rows if r["system"] == system}
        assert mine == {
            "p50": pytest.approx(run["latency_p50_ns"] / 1e6, abs=1e-6),
            "p90": pytest.approx(run["latency_p90_ns"] / 1e6, abs=1e-6),
            "p99": pytest.approx(run["latency_p99_ns"] / 1e6, abs=1e-6),
            "throughput": run["throughput_sps"],
        }
    page = setup.render("html", "lab-a", "lab-b")
    assert 'data-chart="systems"' in page
    text = setup.render("md", "lab-a", "lab-b")
    assert "## One model across systems" in text
    number = r"[\d.,]+(e[+-]\d+)?"
    assert re.search(rf"\| [^|]+ \| lab-a \| 1 \|( {number} \|){{4}}$", text, re.M)


def test_runs_on_one_system_do_not_mention_systems(setup: Setup) -> None:
    report = setup.report("lab-a")
    assert "systems" not in [c.key for c in charts(report)]
    page = setup.render("html", "lab-a")
    assert 'id="systems-differ"' not in page and 'data-chart="systems"' not in page
    assert "across systems" not in setup.render("md", "lab-a")


def _run(system: str | None, batch: int = 1, trace: str = "none", **metrics: float) -> RunData:
    info = {
        "id": f"{system}-{batch}-{trace}", "model": "vision/m@1.0.0", "framework": "onnxruntime@1",
        "dataset": "d@1", "scenario": "Offline", "mode": "performance", "batch_size": batch,
        "trace": trace, "system": system, "host": {"hostname": "here"}, "metrics": metrics,
    }  # fmt: skip
    return RunData(info, None)


def _points(*runs: RunData) -> list[tuple[str, int, dict[str, float]]]:
    report = Report(list(runs), created_at="t")
    out = []
    for p in system_points(report):
        values = {k: v for k, v in p.items() if k.startswith(("latency", "throughput"))}
        out.append((p["system"], p["runs"], values))
    return out


MS = 1e6
POINTS: list[tuple[list[RunData], list[tuple[str, int, dict[str, float]]], str]] = [
    ([_run("a", latency_p50_ns=2 * MS, throughput_sps=10), _run("b", latency_p50_ns=4 * MS)],
     [("a", 1, {"latency_p50_ms": 2.0, "throughput_sps": 10}), ("b", 1, {"latency_p50_ms": 4.0})],
     "a figure a run lacks is left out, never zero"),
    ([_run("a", latency_p50_ns=1 * MS), _run("a", 1, "none", latency_p50_ns=3 * MS),
      _run("b", latency_p50_ns=5 * MS)],
     [("a", 2, {"latency_p50_ms": 2.0}), ("b", 1, {"latency_p50_ms": 5.0})],
     "several runs on one system: their median and how many"),
    ([_run("a", latency_p50_ns=MS), _run("b", 8, latency_p50_ns=MS)], [],
     "different batch sizes are different groups: none spans two systems"),
    ([_run("a", latency_p50_ns=MS), _run("b", trace="ops", latency_p50_ns=MS)], [],
     "a traced run is never drawn beside an untraced one"),
    ([_run(None, latency_p50_ns=MS), _run("b", latency_p50_ns=3 * MS)],
     [("here (local)", 1, {"latency_p50_ms": 1.0}), ("b", 1, {"latency_p50_ms": 3.0})],
     "a run made outside a cluster is a system of its own"),
    ([_run("a", top1=0.9), _run("b", top1=0.8)], [], "accuracy runs have nothing to draw"),
    ([_run("a", latency_p50_ns=MS, loadgen_valid_bool=1.0),
      _run("a", 1, "none", latency_p50_ns=9 * MS, loadgen_valid_bool=0.0),
      _run("b", latency_p50_ns=3 * MS, loadgen_valid_bool=0.0)],
     [("a", 1, {"latency_p50_ms": 1.0}), ("b", 1, {"latency_p50_ms": 3.0})],
     "an INVALID run is left out of a system's median where it has a valid one (issue 64)"),
]  # fmt: skip


@pytest.mark.parametrize(("runs", "expected", "why"), POINTS, ids=[p[2] for p in POINTS])
def test_system_points(
    runs: list[RunData], expected: list[tuple[str, int, dict[str, float]]], why: str
) -> None:
    assert _points(*runs) == expected


def test_runs_on_several_systems_with_no_model_in_common_say_why() -> None:
    report = Report([_run("a", latency_p50_ns=MS), _run("b", 8, latency_p50_ns=MS)], "t")
    chart = next(c for c in charts(report) if c.key == "systems")
    assert chart.spec is None and chart.reason is not None
    assert "no model here ran on two or more systems" in chart.reason


# ---------------------------------------------------------------- hardware differences


def test_the_hardware_that_differs_is_named(setup: Setup) -> None:
    text = setup.render("md", "lab-a", "lab-b")
    assert (
        "**These runs ran on 2 systems (lab-a, lab-b) whose hardware differs in CPU model, "
        "cores, memory, GPU model, GPU count, GPU driver, accelerator libraries.**"
    ) in text
    expected = [
        f"| CPU model (differs) | {md_text(HOSTILE_CPU)} | AMD EPYC 7763 |",
        "| cores (differs) | 64 | 128 |",
        "| memory (differs) | 256.0 GiB | 512.0 GiB |",
        "| GPU model (differs) | NVIDIA A100-SXM4-80GB | none |",
        "| GPU count (differs) | 2 | 0 |",
        "| GPU driver (differs) | 535.104.05 | none |",
        f"| accelerator libraries (differs) | cuda, {md_text(HOSTILE_LIBRARY)} | none |",
    ]
    for line in expected:
        assert line in text
    page = setup.render("html", "lab-a", "lab-b")
    differs = re.search(r'id="systems-differ">(.*?)</p>', page, re.S)
    assert differs is not None and "<strong>CPU model, cores, memory, GPU model" in differs.group(1)
    assert page.count('class="hardware-differs"') == 7


def test_the_same_hardware_on_two_systems_is_said_so(setup: Setup) -> None:
    """Two systems whose machines are alike: the systems are named, no hardware fact is."""
    (b,) = setup.report("lab-b").runs
    twin = RunData({**b.info, "id": "c" * 36, "system": "lab-c"}, b.latencies_ns, b.system_facts)
    text = reports.render(Report([b, twin], created_at="t"), "md")[1].decode()
    assert "**These runs ran on 2 systems (lab-b, lab-c) with the same recorded hardware.**" in text
    assert "(differs)" not in text


HARDWARE: list[tuple[dict[str, Any] | None, dict[str, Any] | None, dict[str, str], str]] = [
    ({"cpu": "X", "cores": 4, "memory_bytes": 8 * GIB, "gpus": []}, None,
     {"cpu": "X", "cores": "4", "memory": "8.0 GiB", "gpu": "none", "gpu_count": "0",
      "driver": "none", "accelerator_libraries": "unknown"},
     "a local run: no accelerator libraries recorded"),
    ({"cpu": "X", "gpus": [A100]}, {"cpu": "old X", "accelerator_libraries": ["cudnn"]},
     {"cpu": "X", "cores": "unknown", "memory": "unknown", "gpu": A100["name"], "gpu_count": "1",
      "driver": A100["driver"], "accelerator_libraries": "cudnn"},
     "the run's own facts first; the system's fill the rest"),
    (None, None,
     {"cpu": "unknown", "cores": "unknown", "memory": "unknown", "gpu": "unknown",
      "gpu_count": "unknown", "driver": "unknown", "accelerator_libraries": "unknown"},
     "nothing recorded: unknown, never none"),
    ({"gpus": "lots", "memory_bytes": "<b>", "cpu": ["a", {"b": 1}]}, None,
     {"cpu": "a, {'b': 1}", "cores": "unknown", "memory": "<b>", "gpu": "unknown",
      "gpu_count": "unknown", "driver": "unknown", "accelerator_libraries": "unknown"},
     "facts of the wrong shape are shown as text, never raise"),
]  # fmt: skip


@pytest.mark.parametrize(("host", "system", "shown", "why"), HARDWARE, ids=[h[3] for h in HARDWARE])
def test_hardware_facts_as_text(
    host: dict[str, Any] | None, system: dict[str, Any] | None, shown: dict[str, str], why: str
) -> None:
    assert hardware(host, system) == shown


# ---------------------------------------------------------------- facts are text, not markup


def test_facts_from_agents_are_escaped_in_the_html_report(setup: Setup) -> None:
    page = setup.render("html", "lab-a", "lab-b")
    body = re.sub(r"<script>.*?</script>", "", page, flags=re.S)  # the inlined libraries
    body = re.sub(r'<script type="application/json".*?</script>', "", body, flags=re.S)
    assert "<script>alert" not in body and "<img" not in body
    assert "Xeon &lt;script&gt;alert(&#34;cpu&#34;)&lt;/script&gt;" in body
    assert "cuda, &lt;img src=x onerror=alert(1)&gt;" in body
    specs = re.findall(r'<script type="application/json"[^>]*>(.*?)</script>', page, re.S)
    assert specs and all("</script" not in s.lower() for s in specs)
    for spec in specs:
        json.loads(spec)  # the plots' data stays valid JSON


def test_the_cli_report_holds_the_systems(setup: Setup, cli: Cli, monkeypatch: Any) -> None:
    monkeypatch.setenv("PINBENCH_HOME", str(setup.root / "home"))
    monkeypatch.setenv("PINBENCH_DATABASE_URL", f"sqlite:///{setup.root}/db")
    out = setup.root / "r.md"
    result = cli("runs", "report", setup.ids["lab-a"], setup.ids["lab-b"], "--md", str(out))
    assert result.code == 0, result.err
    text = out.read_text()
    assert "| system | lab-a | lab-b |" in text
    assert "## One model across systems" in text
    assert "| GPU model (differs) | NVIDIA A100-SXM4-80GB | none |" in text


def test_medians_are_of_the_runs_not_of_their_order() -> None:
    """The plot's figure for a system does not depend on the order its runs are named in."""
    runs = [_run("a", latency_p50_ns=v * MS) for v in (5, 1, 3)] + [_run("b", latency_p50_ns=MS)]
    forward, backward = _points(*runs), _points(*reversed(runs))
    assert {p[0]: p[2] for p in forward} == {p[0]: p[2] for p in backward}
    assert float(np.median([5, 1, 3])) == forward[0][2]["latency_p50_ms"]
