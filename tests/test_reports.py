"""Reports over recorded runs: what the HTML and Markdown say, what the plots are drawn from,
the raw exports, the lockfile/environment diff, and refusals. (The HTML report is opened in a
real browser, offline, by tests/test_web.py.)"""

from __future__ import annotations

import base64
import csv
import hashlib
import html as html_lib
import io
import json
import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq
import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from pinbench import catalog as builtin
from pinbench import reports
from pinbench.artifacts.digest import Digest
from pinbench.artifacts.store import ChecksumMismatch
from pinbench.catalog import cnn
from pinbench.errors import UserError
from pinbench.evaluator.records.run_view import RunNotFound, show_run
from pinbench.evaluator.run import latencies_of, run_lockfile
from pinbench.registry import service
from pinbench.registry.manifest import load_manifest
from pinbench.registry.publish import publish
from pinbench.registry.request import parse_request
from pinbench.reports.charts import accuracy_points
from pinbench.reports.data import EmptyReport, RunData, TooManyRuns
from pinbench.reports.diff import MISSING, diff, flatten, run_diff
from pinbench.reports.export import COLUMNS_ALL, csv_cell
from pinbench.reports.render import md_text, policy
from pinbench.reports.report_charts import charts
from pinbench.reports.view import fmt
from pinbench.workspace import Workspace
from tests.helpers import Cli, published_workspace

QUICK = {"min_duration_ms": 200, "min_query_count": 30}


@dataclass
class Runs:
    ws: Workspace
    home: Path
    db: str
    acc: dict[str, str]
    """framework -> accuracy run of the digits CNN."""
    perf: dict[str, str]
    """framework -> SingleStream performance run of the digits CNN."""
    sweep: list[str]
    """Offline runs of the logistic regression at batch sizes 1 and 8 (one sweep)."""


def _run(ws: Workspace, **request: Any) -> list[str]:
    data = {"dataset": f"{builtin.DATASET_NAME}@1", "threads": 1, **request}
    return [
        run_lockfile(ws, lock, say=lambda _: None).id
        for lock, _ in service.lock_points(ws, parse_request(data))
    ]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory, cnn_catalog_dir: Path) -> Iterator[Runs]:
    root = tmp_path_factory.mktemp("reports")
    db = f"sqlite:///{root}/db"
    ws = published_workspace(root, cnn_catalog_dir)
    acc, perf = {}, {}
    for fw in ("onnxruntime", "torch"):
        model = f"{cnn.model_name(fw)}@^1"
        (acc[fw],) = _run(ws, model=model, scenario={"mode": "accuracy"})
        (perf[fw],) = _run(ws, model=model, scenario=QUICK)
    sweep = _run(
        ws,
        model=f"{builtin.MODEL_NAME}@^1",
        scenario={"name": "Offline", **QUICK},
        batch_size=[1, 8],
    )
    yield Runs(ws, root / "home", db, acc, perf, sweep)
    ws.close()


def _all(r: Runs) -> list[str]:
    return [*r.acc.values(), *r.perf.values(), *r.sweep]


def _specs(page: str) -> dict[str, dict[str, Any]]:
    found = re.findall(
        r'<script type="application/json" class="chart-spec" data-chart="(\w+)">(.*?)</script>',
        page,
        re.S,
    )
    return {key: json.loads(text) for key, text in found}


def test_html_report_holds_every_section_and_plot(runs: Runs) -> None:
    page = reports.render(reports.gather(runs.ws, _all(runs)), "html")[1].decode()
    for section in ("runs", "environment", "metrics", "plots", "diff"):
        assert f'id="{section}"' in page
    assert sorted(_specs(page)) == ["accuracy", "cdf", "histogram", "sweep"]
    # Runs of different models, frameworks, scenarios, modes and batch sizes: named.
    differs = re.search(r'id="differs">.*?<strong>(.*?)</strong>', page, re.S)
    assert differs is not None
    assert differs.group(1) == "model, framework, scenario, mode, batch_size"
    for run_id in _all(runs):
        assert run_id[:8] in page


def test_html_report_needs_no_network(runs: Runs) -> None:
    """Nothing is loaded from elsewhere: no script, stylesheet or image by URL; the only
    URLs outside the inlined libraries are the Vega-Lite schema identifiers."""
    page = reports.render(reports.gather(runs.ws, list(runs.acc.values())), "html")[1].decode()
    outside = re.sub(r"<script>.*?</script>", "", page, flags=re.S)
    assert not re.search(r"<(script|img|iframe)[^>]*\ssrc=|<link\b|@import|url\(", outside)
    urls = set(re.findall(r"https?://[^\s\"'<>]+", outside))
    assert urls == {"https://vega.github.io/schema/vega-lite/v6.json"}
    assert page.count("<script>") == 4  # vega, vega-lite, vega-embed, the page's own


def test_cdf_and_histogram_are_drawn_from_the_raw_latencies(runs: Runs) -> None:
    ids = list(runs.perf.values())
    report = reports.gather(runs.ws, ids)
    by_key = {c.key: c for c in charts(report)}
    cdf, hist = by_key["cdf"].spec, by_key["histogram"].spec
    assert cdf is not None and hist is not None
    for run in report.runs:
        raw = latencies_of(runs.ws, show_run(runs.ws, run.id)["latencies_sha256"])
        points = [p for p in cdf["data"]["values"] if p["run"] == run.label]
        assert points[0]["fraction"] == 0.0 and points[-1]["fraction"] == 1.0
        assert points[0]["latency_ms"] == pytest.approx(raw.min() / 1e6, abs=1e-6)
        assert points[-1]["latency_ms"] == pytest.approx(raw.max() / 1e6, abs=1e-6)
        assert [p["latency_ms"] for p in points] == sorted(p["latency_ms"] for p in points)
        shares = [b["share"] for b in hist["data"]["values"] if b["run"] == run.label]
        assert sum(shares) == pytest.approx(1.0)  # every query in some bin


def test_sweep_plot_joins_one_model_at_several_batch_sizes(runs: Runs) -> None:
    chart = next(c for c in charts(reports.gather(runs.ws, _all(runs))) if c.key == "sweep")
    assert chart.spec is not None
    rows = chart.spec["data"]["values"]
    assert [r["batch_size"] for r in rows] == [1, 8]
    assert {r["group"] for r in rows} == {rows[0]["group"]}
    for row, run_id in zip(rows, runs.sweep, strict=True):
        metrics = show_run(runs.ws, run_id)
        assert row["throughput_sps"] == metrics["throughput_sps"]


@pytest.mark.parametrize(
    ("pick", "key", "reason"),
    [
        (lambda r: list(r.acc.values()), "sweep", "no batch-size sweep here"),
        (lambda r: list(r.perf.values()), "accuracy", "no run here measured accuracy"),
    ],
    ids=["no sweep", "no accuracy"],
)
def test_a_plot_the_runs_cannot_make_says_why(runs: Runs, pick: Any, key: str, reason: str) -> None:
    report = reports.gather(runs.ws, pick(runs))
    chart = next(c for c in charts(report) if c.key == key)
    assert chart.spec is None and chart.reason is not None and reason in chart.reason
    assert reason in reports.render(report, "html")[1].decode()


def test_accuracy_points_take_latency_from_the_performance_run(runs: Runs) -> None:
    points = accuracy_points(reports.gather(runs.ws, _all(runs)))
    assert sorted(p["framework"].split("@")[0] for p in points) == ["onnxruntime", "torch"]
    for p in points:
        fw = p["framework"].split("@")[0]
        perf = show_run(runs.ws, runs.perf[fw])
        assert p["latency_from"] == "SingleStream"
        assert p["latency_p50_ms"] == pytest.approx(perf["latency_p50_ns"] / 1e6, abs=1e-6)
        assert p["top1"] == show_run(runs.ws, runs.acc[fw])["top1"]
    alone = accuracy_points(reports.gather(runs.ws, [runs.acc["torch"]]))
    assert [p["latency_from"] for p in alone] == ["accuracy run (framework call)"]
    own = show_run(runs.ws, runs.acc["torch"])
    assert "latency_p50_ns" not in own  # LoadGen times no query in accuracy mode
    assert alone[0]["latency_p50_ms"] == pytest.approx(own["framework_latency_p50_ns"] / 1e6)


def test_diff_names_what_differs_between_two_frameworks(runs: Runs) -> None:
    infos = [show_run(runs.ws, runs.acc[fw], nested=True) for fw in ("onnxruntime", "torch")]
    paths = {row.path for row in run_diff(infos)}
    assert "lockfile.environment.framework" in paths
    assert "lockfile.model.name" in paths
    assert "lockfile.scenario.mode" not in paths  # both accuracy runs
    assert not any(p.startswith("details.loadgen") for p in paths)  # results, not inputs


def test_markdown_report_tables(runs: Runs) -> None:
    text = reports.render(reports.gather(runs.ws, list(runs.acc.values())), "md")[1].decode()
    assert "**These runs differ in model, framework.**" in text
    assert "## Accuracy vs latency" in text
    top1 = show_run(runs.ws, runs.acc["torch"])["top1"]
    cell = re.escape(f"{top1:,.4g}")
    # metric (its task's label beside the key), unit, runs
    assert re.search(rf"\| top-1 \(top1\) \| [^|]* \| {cell} \| {cell} \|", text)


def test_csv_and_parquet_hold_every_query(runs: Runs) -> None:
    ids = [runs.perf["torch"], *runs.sweep]
    report = reports.gather(runs.ws, ids)
    rows = list(csv.DictReader(io.StringIO(reports.render(report, "csv")[1].decode())))
    table = pq.read_table(io.BytesIO(reports.render(report, "parquet")[1]))
    assert table.num_rows == len(rows)
    assert table.column_names == list(rows[0])
    for run_id in ids:
        raw = latencies_of(runs.ws, show_run(runs.ws, run_id)["latencies_sha256"])
        mine = [r for r in rows if r["run"] == run_id]
        assert [int(r["latency_ns"]) for r in mine] == raw.tolist()
        assert [int(r["query"]) for r in mine] == list(range(raw.size))
    assert np.array_equal(
        table.column("latency_ns").to_numpy(), [int(r["latency_ns"]) for r in rows]
    )
    meta = json.loads(table.schema.metadata[b"pinbench.runs"])
    assert [m["id"] for m in meta] == ids
    assert meta[0]["metrics"] == show_run(runs.ws, ids[0], nested=True)["metrics"]


@pytest.mark.parametrize(
    ("run_ids", "fmt", "error", "message"),
    [
        ([], "html", EmptyReport, "a report needs at least one run"),
        (["no-such-run"], "html", RunNotFound, "no run 'no-such-run'"),
        (["x"] * 33, "html", TooManyRuns, "at most 32 runs, not 33"),
        (None, "pdf", reports.UnknownFormat, "unknown report format 'pdf'"),
    ],
    ids=["zero runs", "unknown run", "too many", "unknown format"],
)
def test_bad_report_requests_are_refused(
    runs: Runs, run_ids: list[str] | None, fmt: str, error: type[UserError], message: str
) -> None:
    with pytest.raises(error, match=re.escape(message)):
        ids = runs.sweep[:1] if run_ids is None else run_ids
        reports.render(reports.gather(runs.ws, ids), fmt)


def test_a_tampered_latencies_blob_stops_the_report(runs: Runs) -> None:
    path = runs.ws.store.path(Digest(show_run(runs.ws, runs.sweep[1])["latencies_sha256"]))
    original = path.read_bytes()
    path.chmod(0o644)
    path.write_bytes(original[:-8] + b"\x00" * 8)
    try:
        with pytest.raises(ChecksumMismatch, match="checksum mismatch for latencies"):
            reports.gather(runs.ws, [runs.sweep[1]])
    finally:
        path.write_bytes(original)


def test_cli_writes_each_format(runs: Runs, cli: Cli, tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.setenv("PINBENCH_HOME", str(runs.home))
    monkeypatch.setenv("PINBENCH_DATABASE_URL", runs.db)
    out = {f: tmp_path / f"r.{f}" for f in reports.FORMATS}
    args = [arg for f, p in out.items() for arg in (f"--{f}", str(p))]
    result = cli("runs", "report", runs.acc["torch"][:8], runs.perf["torch"][:8], *args)
    assert result.code == 0, result.err
    for kind, path in out.items():
        assert f"wrote {kind} report to {path}" in result.err
        assert path.stat().st_size > 0
    assert out["md"].read_text().startswith("# pinbench report: 2 run(s)")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["runs", "report", "--html", "r.html"], "a report needs at least one run"),
        (["runs", "report", "RUN"], "name at least one output: --html FILE"),
        (["runs", "report", "nope", "--md", "r.md"], "no run 'nope'"),
    ],
    ids=["zero runs", "no output", "unknown run"],
)
def test_cli_refusals(runs: Runs, cli: Cli, tmp_path: Path, monkeypatch: Any, args: list[str],
                      message: str) -> None:  # fmt: skip
    monkeypatch.setenv("PINBENCH_HOME", str(runs.home))
    monkeypatch.setenv("PINBENCH_DATABASE_URL", runs.db)
    monkeypatch.chdir(tmp_path)
    result = cli(*[runs.sweep[0] if a == "RUN" else a for a in args])
    assert result.code == 1
    assert message in result.err
    assert not list(tmp_path.iterdir())  # nothing written


# ---------------------------------------------------------------- the diff's laws

leaves = st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=5))
trees = st.recursive(
    leaves,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text("abc", max_size=3), inner, max_size=3)
    ),
    max_leaves=12,
)


@given(trees)
def test_a_tree_does_not_differ_from_itself(tree: Any) -> None:
    assert diff([flatten(tree), flatten(tree)]) == []


@given(trees, trees)
def test_diff_is_symmetric(a: Any, b: Any) -> None:
    forward = diff([flatten(a), flatten(b)])
    backward = diff([flatten(b), flatten(a)])
    assert [r.path for r in forward] == [r.path for r in backward]
    assert [r.values for r in forward] == [r.values[::-1] for r in backward]


@given(trees, trees)
def test_diff_rows_are_exactly_the_differing_leaves(a: Any, b: Any) -> None:
    fa, fb = flatten(a), flatten(b)
    expected = {p for p in fa.keys() | fb.keys() if fa.get(p, MISSING) != fb.get(p, MISSING)}
    assert {r.path for r in diff([fa, fb])} == expected


@pytest.mark.parametrize(
    ("value", "unit", "shown"),
    [
        (1_234_567.0, "ns", ("1.235", "ms")),
        (2830.0, "count", ("2,830", "count")),
        (0.986666, "ratio", ("0.9867", "ratio")),
        (67_680.5, "samples/s", ("67,680", "samples/s")),  # not 6.768e+04 beside a 4,114
        (9_999.6, "samples/s", ("10,000", "samples/s")),  # rounds up to 10**4: not 1e+04
        (12_345_678_901.0, "ns", ("12,346", "ms")),
        (0.000012345, "ratio", ("1.234e-05", "ratio")),
        (1.0, "bool", ("yes", "")),
        (0.0, "bool", ("no", "")),
        (None, "ns", ("", "ns")),
    ],
)
def test_metric_cells(value: float | None, unit: str, shown: tuple[str, str]) -> None:
    assert fmt(value, unit) == shown


# ---------------------------------------------------------------- hostile text in reports

HOSTILE_INPUT = "<script>alert(1)</script> *x* [a](javascript:b) | `c` _d_ ~e~ \\ &amp;"


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("<script>alert(1)</script>", "&lt;script&gt;alert(1)&lt;/script&gt;"),  # no raw HTML
        ("&amp;", "&amp;amp;"),  # an entity stays text
        ("a | b", "a \\| b"),  # no new table cell
        ("*x* _y_ ~z~", "\\*x\\* \\_y\\_ \\~z\\~"),  # no emphasis, no strike-through
        ("[a](javascript:b)", "\\[a\\](javascript:b)"),  # no link
        ("![i](x.png)", "\\!\\[i\\](x.png)"),  # no image
        ("`code`", "\\`code\\`"),  # no code span
        ("a\\b", "a\\\\b"),  # a backslash is itself
        ("# h", "\\# h"),  # no heading
        ("one\ntwo\r", "one two "),  # one row
        ("vision/digits-cnn@1.0.0-rc.1+b.2", "vision/digits-cnn@1.0.0-rc.1+b.2"),  # kept readable
    ],
)
def test_markdown_text_is_shown_not_read_as_markup(text: str, shown: str) -> None:
    assert md_text(text) == shown


def _renamed_input(path: Path, name: str) -> bytes:
    """Rename the ONNX model's graph input (and its uses) to ``name``; return the new bytes."""
    import onnx

    model = onnx.load(str(path))
    old = model.graph.input[0].name
    model.graph.input[0].name = name
    for node in model.graph.node:
        node.input[:] = [name if i == old else i for i in node.input]
    data: bytes = model.SerializeToString()
    path.write_bytes(data)
    return data


def test_markdown_report_escapes_what_manifests_and_requests_carry(
    tmp_path: Path, catalog_dir: Path
) -> None:
    """Names (``_``), versions (prerelease, build), a model's input name (any text) and a
    request's range (``<``, ``>``, ``||``) reach the report's tables: shown as text."""
    ws = published_workspace(tmp_path, catalog_dir)
    try:
        evil = tmp_path / "evil"
        shutil.copytree(catalog_dir / "digits-logreg-1.2.0", evil / "digits-logreg-1.2.0")
        manifest = yaml.safe_load((catalog_dir / "model-digits-logreg-1.2.0.yaml").read_text())
        manifest |= {"name": "vision/digits_logreg_", "version": "1.0.0-x.y-z+b-1"}
        manifest["inputs"][0]["name"] = HOSTILE_INPUT
        entry = manifest["files"][0]  # the model's own input is renamed: the name is checked
        data = _renamed_input(evil / entry["source"].removeprefix("file:"), HOSTILE_INPUT)
        entry |= {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}
        (evil / "model.yaml").write_text(yaml.safe_dump(manifest))
        publish(ws, load_manifest(evil / "model.yaml"), manifest_dir=evil, publisher="test")
        offline = {"name": "Offline", **QUICK}
        ids = [
            *_run(ws, model="vision/digits_logreg_@1.0.0-x.y-z", scenario=offline),
            *_run(ws, model=f"{builtin.MODEL_NAME}@>=1.0.0 <2 || ^1", scenario=offline),
        ]
        text = reports.render(reports.gather(ws, ids), "md")[1].decode()
    finally:
        ws.close()
    shown = md_text(HOSTILE_INPUT)
    assert shown == (
        "&lt;script&gt;alert(1)&lt;/script&gt; \\*x\\* \\[a\\](javascript:b) \\| \\`c\\` "
        "\\_d\\_ \\~e\\~ \\\\ &amp;amp;"
    )
    as_json = md_text(json.dumps(HOSTILE_INPUT))  # the diff shows values as JSON
    assert f'| lockfile.model.inputs\\[0\\].name | {as_json} | "x" |' in text
    assert '| lockfile.model.name | "vision/digits\\_logreg\\_" | "vision/digits-logreg" |' in text
    assert '| lockfile.model.version | "1.0.0-x.y-z+b-1" | "1.2.0" |' in text
    assert '"vision/digits-logreg@&gt;=1.0.0 &lt;2 \\|\\| ^1" |' in text
    assert "<" not in text and ">" not in text  # no HTML at all
    for table in re.findall(r"(?:^\|.*\n)+", text, re.M):  # rows as wide as their head
        widths = {len(re.split(r"(?<!\\)\|", row)) for row in table.splitlines()}
        assert len(widths) == 1, table


CSV_CELLS: list[tuple[Any, Any, str]] = [
    ("=HYPERLINK(\"http://x\")", "'=HYPERLINK(\"http://x\")", "a formula"),
    ("+1+cmd|' /C calc'!A0", "'+1+cmd|' /C calc'!A0", "a formula after a sign"),
    ("-2+3", "'-2+3", "arithmetic, not a number"),
    ("@SUM(A1)", "'@SUM(A1)", "Lotus-style function"),
    ("\t=1", "'\t=1", "a tab first"),
    ("\r=1", "'\r=1", "a carriage return first"),
    ("-1.5", "-1.5", "a negative number stays a number"),
    ("+2e-3", "+2e-3", "a signed exponent number too"),
    (-7, -7, "an integer cell is a number"),
    ("vision/digits-cnn@1.0.0", "vision/digits-cnn@1.0.0", "a name: '@' and '-' inside"),
]  # fmt: skip


@pytest.mark.parametrize(("value", "written", "why"), CSV_CELLS, ids=[c[2] for c in CSV_CELLS])
def test_csv_cells_a_spreadsheet_would_run_are_neutralised(
    value: Any, written: Any, why: str
) -> None:
    assert csv_cell(value) == written


def test_csv_export_neutralises_formula_cells_and_keeps_numbers_numeric() -> None:
    """No recorded field starts with a formula character today (names begin with a letter or
    digit, scenario and mode are closed sets): the export guards anyway, cell by cell."""
    info = {
        "id": "=1+1", "model": "@SUM(A1)", "framework": "+x", "dataset": "-y",
        "scenario": "Offline", "mode": "performance", "batch_size": 4,
    }  # fmt: skip
    report = reports.Report([RunData(info, np.array([5, -3], dtype=np.int64))], created_at="t")
    rows = list(csv.reader(io.StringIO(reports.render(report, "csv")[1].decode())))
    assert rows == [
        list(COLUMNS_ALL),
        ["'=1+1", "'@SUM(A1)", "'+x", "'-y", "Offline", "performance", "4", "0", "5"],
        ["'=1+1", "'@SUM(A1)", "'+x", "'-y", "Offline", "performance", "4", "1", "-3"],
    ]


def test_html_report_policy_allows_exactly_its_inline_scripts_and_style(runs: Runs) -> None:
    page = reports.render(reports.gather(runs.ws, runs.sweep), "html")[1].decode()
    meta = re.search(r'<meta http-equiv="Content-Security-Policy" content="([^"]+)">', page)
    assert meta is not None
    content = html_lib.unescape(meta.group(1))
    assert content == policy()

    def sha(text: str) -> str:
        return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"

    scripts = re.findall(r"<script>(.*?)</script>", page, re.S)
    styles = re.findall(r"<style>(.*?)</style>", page, re.S)
    assert len(scripts) == 4 and len(styles) == 1
    assert content == "; ".join(
        [
            "default-src 'none'",
            "script-src " + " ".join(sha(s) for s in scripts),
            f"style-src {sha(styles[0])}",
            "img-src data:",
            "base-uri 'none'",
            "form-action 'none'",
        ]
    )
