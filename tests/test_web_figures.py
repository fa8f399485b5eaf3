"""What the web UI's figures say (issue 64, items 6, 9 and 10): a column of figures in one unit
at ``runs list``'s precision (``0.04057`` stood beside ``0.03`` in one "p50 (ms)" column where
the CLI said 34.8 µs), every metric's name in words with its key beside, whose figure it is
(LoadGen's or the framework call's), a run LoadGen called INVALID marked wherever its numbers
show, and the series page's runs with their settings and the runs a gate compares, their
timestamps never broken. Runs are recorded straight into a real server's database
(``tests/series_data.py``); pages are read as HTML and, for layout, in Chromium. Screenshots
go to test-artifacts/screenshots (or $PINBENCH_ARTIFACTS)."""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest
from playwright.sync_api import Browser, Page, expect

from pinbench.metric_names import in_unit, named, ns_unit, words
from pinbench.run_figures import fmt_ns
from tests.apiserver import Server, api_server
from tests.series_data import SERIES, latencies, lock, record
from tests.test_web import browser, shot  # noqa: F401  (the module's browser fixture)

REASON = (
    "min_queries not met: fewer queries than scenario.min_query_count were issued "
    "(a max_query_count below it stops the run first)"
)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, catalog_dir: Path) -> Iterator[Server]:
    root = tmp_path_factory.mktemp("web-figures")
    with api_server(root / "home", f"sqlite:///{root}/db.sqlite", catalog_dir=catalog_dir) as srv:
        yield srv


@pytest.fixture(scope="module")
def runs(server: Server) -> dict[str, str]:
    """One series of the digits logreg, oldest first: ``slow`` (1.2 ms at min_duration_ms
    8,000), ``invalid`` (34.8 µs, LoadGen INVALID at 100 ms), ``fast`` (40.57 µs at 100 ms),
    ``docker`` (another runner: another baseline) and ``regressed`` (a gate found it so)."""
    import numpy as np
    from sqlalchemy import update

    from pinbench.db.models import Run as RunRow
    from pinbench.series.alerts import raise_alert

    rng = np.random.default_rng(64)
    long, short = ({"scenario": {"min_duration_ms": ms}} for ms in (8000, 100))
    plan = [
        ("slow", long, 1_234_000.0, 1.0),
        ("invalid", short, 34_800.0, 0.0),
        ("fast", short, 40_570.0, 1.0),
        ("docker", short, 41_000.0, 1.0),
        ("regressed", short, 52_000.0, 1.0),
    ]
    ws = server.workspace()
    out: dict[str, str] = {}
    try:
        for minute, (name, extra, p50, valid) in enumerate(plan):
            figures = {"latency_p50_ns": p50, "loadgen_valid_bool": valid}
            if name == "docker":  # timed while other work took the machine (item 7)
                figures |= {"contended_bool": 1.0, "machine_others_cpu_ratio": 0.37}
            run_id = record(
                ws, lock(ws, "1.0.0", **extra), minute, latencies(rng, p50), extra=figures
            )
            out[name] = run_id
            with ws.transaction() as session:
                if valid == 0.0:
                    loadgen = {"result_validity": "INVALID", "invalid_reasons": [REASON]}
                    session.execute(
                        update(RunRow)
                        .where(RunRow.id == run_id)
                        .values(details={"loadgen": loadgen})
                    )
                if name == "docker":
                    session.execute(
                        update(RunRow).where(RunRow.id == run_id).values(runner="docker")
                    )
        detail = {"reason": "p50 up 28 %", "runs": [out["regressed"]]}
        raise_alert(
            ws,
            series=SERIES,
            metric="latency_p50_ns",
            kind="regression",
            run_id=out["regressed"],
            detail=detail,
        )
    finally:
        ws.close()
    return out


def _rows(text: str, table: str) -> dict[str, str]:
    """The rows of ``<table id=TABLE>`` by the full run id each links to."""
    body = text.split(f'id="{table}"', 1)[1].split("</table>", 1)[0]
    return {
        found.group(1): row
        for row in body.split("<tr")[2:]
        if (found := re.search(r'href="/ui/runs/([0-9a-f-]{36})"', row))
    }


def _cells(row: str) -> list[str]:
    return [html.unescape(c) for c in re.findall(r'<td class="num[^"]*">([^<]*)</td>', row)]


def test_the_runs_list_shows_a_column_in_one_unit_and_marks_an_invalid_run(
    server: Server, runs: dict[str, str]
) -> None:
    with server.client("reader") as c:
        text = c.get("/ui/runs").text
    head = html.unescape(text.split('id="runs-table"', 1)[1].split("</thead>", 1)[0])
    # the column's name in words, whose figure it is, its unit, and its key beside
    assert '<th class="figure">p50 latency, LoadGen (µs)<span class="key">latency_p50_ns' in head
    assert "throughput, LoadGen (samples/s)" in head and ">throughput_sps<" in head
    assert "p50 (ms)" not in head
    rows = _rows(text, "runs-table")
    p50 = {name: _cells(rows[run_id])[1] for name, run_id in runs.items()}
    # one unit (µs: the column's smallest is under a millisecond), one decimal, as runs list
    assert p50["slow"] == "1,234.0" and p50["invalid"] == "34.8" and p50["fast"] == "40.6"
    marked = {name for name, run_id in runs.items() if ">INVALID</a>" in rows[run_id]}
    assert marked == {"invalid"}
    assert 'class="loadgen-invalid"' in rows[runs["invalid"]]
    assert {name for name, run_id in runs.items() if ">BUSY</a>" in rows[run_id]} == {"docker"}


def test_a_runs_page_names_loadgen_s_invalid_verdict_and_why_first(
    server: Server, runs: dict[str, str]
) -> None:
    with server.client("reader") as c:
        invalid = html.unescape(c.get(f"/ui/runs/{runs['invalid']}").text)
        valid = c.get(f"/ui/runs/{runs['fast']}").text
        both = html.unescape(c.get(f"/ui/compare?run={runs['fast']}&run={runs['invalid']}").text)
    banner = invalid.split('id="loadgen-invalid"', 1)[1].split("</div>", 1)[0]
    assert "INVALID" in banner and runs["invalid"][:8] in banner and REASON in banner
    assert 'id="loadgen-invalid"' not in valid
    banner = both.split('id="loadgen-invalid"', 1)[1].split("</div>", 1)[0]
    assert runs["invalid"][:8] in banner and runs["fast"][:8] not in banner
    with server.client("reader") as c:
        busy = html.unescape(c.get(f"/ui/runs/{runs['docker']}").text)
    banner = busy.split('id="machine-busy"', 1)[1].split("</div>", 1)[0]
    assert "BUSY" in banner and "other processes took 37% of the machine's CPU" in banner
    assert 'id="machine-busy"' not in valid


def test_the_series_page_names_its_metrics_settings_baseline_and_invalid_runs(
    server: Server, runs: dict[str, str]
) -> None:
    with server.client("reader") as c:
        text = c.get(f"/ui/series/{quote(SERIES, safe='/:')}").text
        listed = html.unescape(c.get("/ui/series").text)
    shown = html.unescape(text)
    plot = shown.split('id="metric-latency_p50_ns"', 1)[1].split("</h2>", 1)[0]
    assert plot == '>\n<h2>p50 latency, LoadGen (µs)<span class="key">latency_p50_ns</span>'
    assert "p50 latency, framework call (µs)" in shown  # whose each latency is
    assert "LoadGen verdict" in shown
    assert "loadgen_valid_bool over the series" not in shown  # the plot's title is words too
    # a flag's plot says what its 1 and 0 mean; a share has no unit (not a rate: "1/s")
    titles = dict(re.findall(r'id="metric-([a-z0-9_]+)">\s*<h2>([^<]*)<', shown))
    assert titles["loadgen_valid_bool"] == "LoadGen verdict (1 = VALID, 0 = INVALID)"
    assert titles["contended_bool"] == "timed on a busy machine (1 = yes, 0 = no)"
    assert titles["machine_others_cpu_ratio"] == (
        "other processes' share of the machine's CPU while timed"
    )
    assert titles["throughput_sps"] == "throughput, LoadGen (samples/s)"
    rows = _rows(text, "series-runs")
    assert list(rows) == list(runs.values())  # oldest first
    head = text.split('id="series-runs"', 1)[1].split("</thead>", 1)[0]
    assert '<th class="setting">min_duration_ms</th>' in head and ">runner<" in head
    least = [re.findall(r'<td class="setting">([^<]*)</td>', rows[r])[0] for r in runs.values()]
    assert least == ["8000", "100", "100", "100", "100"]
    baseline = {
        name: re.findall(r'<td class="baseline">([^<]*)</td>', rows[r])[0]
        for name, r in runs.items()
    }
    assert baseline == {
        "slow": "yes",
        "invalid": "no: LoadGen called it INVALID",
        "fast": "yes",
        "docker": "no: other settings",
        "regressed": "no: a gate found it regressed",
    }
    assert "share its runner, framework, threads, limits" in shown
    assert {n for n, r in runs.items() if ">INVALID</a>" in rows[r]} == {"invalid"}
    # what moved names the setting, not the scenario's whole JSON
    assert "scenario.min_duration_ms 8000 -&gt; 100" in rows[runs["invalid"]]
    assert '"max_query_count"' not in html.unescape(rows[runs["invalid"]])
    alert = shown.split('id="alerts"', 1)[1]
    assert 'p50 latency, LoadGen<span class="key">latency_p50_ns</span>' in alert
    assert "p50 latency, framework call <span" in listed  # series list: words, then key
    assert "LoadGen verdict <span" in listed


def _lines(page: Page, selector: str) -> list[int]:
    """How many lines each element's text takes (a broken timestamp takes two)."""
    found: list[int] = page.eval_on_selector_all(
        selector,
        "els => els.map(e => { const r = document.createRange(); r.selectNodeContents(e);"
        " return new Set([...r.getClientRects()].map(x => Math.round(x.top))).size; })",
    )
    return found


def test_the_pages_as_a_browser_shows_them(
    browser: Browser,  # noqa: F811
    server: Server,
    runs: dict[str, str],
) -> None:
    """Timestamps stay whole on a narrow window (the series page broke one mid-digit); the
    INVALID badge is seen; screenshots of the three pages."""
    page = browser.new_page(viewport={"width": 900, "height": 900})
    page.goto(f"{server.url}/ui/runs")
    expect(page.locator("#runs-table a.badge.invalid")).to_have_count(1)
    expect(page.locator("#runs-table thead")).to_contain_text("p50 latency, LoadGen (µs)")
    assert _lines(page, "#runs-table td.when") == [1] * len(runs)
    shot(page, "issue64-runs")
    page.goto(f"{server.url}/ui/runs/{runs['invalid']}")
    expect(page.locator("#loadgen-invalid")).to_contain_text("LoadGen called this run INVALID")
    shot(page, "issue64-run-invalid")
    page.goto(f"{server.url}/ui/series/{quote(SERIES, safe='/:')}")
    expect(page.locator("#series-runs .badge.invalid")).to_have_count(1)
    assert _lines(page, "#series-runs td.when") == [1] * len(runs)
    assert _lines(page, "#alerts td.when") == [1]
    shot(page, "issue64-series")
    page.close()


WORDS: list[tuple[str, str, str | None, str]] = [
    ("latency_p50_ns", "p50 latency, LoadGen", None, "LoadGen's latency"),
    ("latency_p99_9_ns", "p99.9 latency, LoadGen", None, "a tag's underscore is its point"),
    ("framework_latency_mean_ns", "mean latency, framework call", None, "pinbench's own"),
    ("ttft_p90_ns", "p90 time to first token, LoadGen", None, "a generation run's"),
    ("framework_tpot_p50_ns", "p50 time per output token, framework call", None, "its own"),
    ("postprocess_latency_p50_ns", "p50 latency, post-processing call", None, "decision 220"),
    ("latency_p50_ns", "p50 latency, operator call", "operator", "an operator never ran LoadGen"),
    ("loadgen_valid_bool", "LoadGen verdict", None, "the raw key was shown"),
    ("throughput_sps", "throughput, LoadGen", None, "decision 275"),
    ("framework_throughput_sps", "throughput, framework calls", None, "decision 275"),
    ("queries_count", "queries, LoadGen", None, "decision 275"),
    ("queries_count", "operator calls", "operator", "an operator run's are its calls"),
    ("framework_calls_count", "framework calls", None, "decision 275"),
    ("throughput_sps", "throughput, training", "training", "the epochs' samples per second"),
    ("top1", "top-1", None, "a task's metric takes its task's label"),
    ("top1_logits", "top-1, logits", None, "one output's copy of a task's metric"),
    ("no_such_metric", "no_such_metric", None, "named nowhere: its key"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("key", "said", "kind", "why"), WORDS, ids=[f"{w[0]}-{w[3]}" for w in WORDS]
)
def test_a_metric_in_words(key: str, said: str, kind: str | None, why: str) -> None:
    assert words(key, kind=kind) == said
    assert named(key, kind=kind) == (key if said == key else f"{said} ({key})")


@pytest.mark.parametrize("value", [0.0, 34_800.0, 40_570.0, 999_949.0, 1e6, 1_234_000.0, 8.2e9])
def test_a_value_alone_in_its_column_reads_as_runs_show_prints_it(value: float) -> None:
    """``in_unit`` at ``ns_unit`` is ``run_figures.fmt_ns``, unit and digits alike."""
    unit = ns_unit([value])
    assert f"{in_unit(value, unit)} {unit}" == fmt_ns(value)
