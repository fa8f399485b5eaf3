"""The web UI in a real browser: Debian's Chromium, headless, driven by Playwright, against a
real ``pinbench serve``. The catalog is published through the API; a run is started from the
page; the comparison and its plots are checked; the HTML report is downloaded and opened with
the network cut off. Screenshots go to test-artifacts/screenshots (or $PINBENCH_ARTIFACTS).

Chromium comes from Debian (``scripts/install-system-deps.sh``); Playwright's own browser
download is not used. Without Chromium these tests fail, never skip.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import Browser, Page, expect, sync_playwright

from pinbench.remote import Remote
from tests.apiserver import Server, api_server
from tests.services import unavailable

ARTIFACTS = Path(os.environ.get("PINBENCH_ARTIFACTS", Path(__file__).parents[1] / "test-artifacts"))
SHOTS = ARTIFACTS / "screenshots"
MODELS = ["vision/digits-cnn-onnx@^1", "vision/digits-cnn-torch@^1"]
DATASET = "sklearn-digits-test@^1"
RUN_TIMEOUT_MS = 240_000


def chromium() -> str:
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    unavailable("Debian's chromium is not installed")


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium(), args=["--no-sandbox"])
        yield b
        b.close()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, cnn_catalog_dir: Path) -> Iterator[Server]:
    """A server whose catalog was published through its API (multipart uploads); one
    logistic-regression version yanked through it too."""
    root = tmp_path_factory.mktemp("web")
    with api_server(root / "home", f"sqlite:///{root}/db") as srv:
        remote = Remote(srv.url, srv.tokens["admin"])
        try:
            for manifest in sorted(cnn_catalog_dir.glob("*.yaml")):
                remote.publish(manifest)
            remote.yank("model/vision/digits-logreg@1.0.0", "bad export (test)")
        finally:
            remote.close()
        yield srv


def shot(page: Page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


def login(page: Page, server: Server, who: str) -> None:
    page.goto(f"{server.url}/")
    page.click("text=log in")
    page.fill("input[name=token]", server.tokens[who])
    page.click("#login")
    expect(page.locator("header .who")).to_contain_text(who)


def fill_evaluation(page: Page, models: list[str], **fields: str) -> None:
    page.goto(page.url.split("/ui/")[0] + "/ui/evaluate")
    page.fill("#models", "\n".join(models))
    page.fill("#dataset", DATASET)
    values = {"min_duration_ms": "300", "min_query_count": "50", "threads": "1", **fields}
    for name, value in values.items():
        page.fill(f"#{name}", value)
    page.select_option("#runner", "local")


def rendered_charts(page: Page) -> list[str]:
    """Keys of the plots drawn: each has an SVG with marks, none failed."""
    specs = page.locator("script.chart-spec")
    keys = [specs.nth(i).get_attribute("data-chart") or "" for i in range(specs.count())]
    for key in keys:
        chart = page.locator(f'div.chart[data-chart="{key}"]')
        expect(chart).to_have_attribute("data-rendered", "true", timeout=20_000)
        assert chart.locator("svg .mark-line, svg .mark-rect, svg .mark-symbol").count() > 0
    return keys


def test_new_user_evaluates_two_frameworks_compares_and_downloads_the_report(
    browser: Browser, server: Server, tmp_path: Path
) -> None:
    context = browser.new_context(accept_downloads=True, viewport={"width": 1400, "height": 900})
    page = context.new_page()
    login(page, server, "owner")

    # Browse the registry: names, versions, the yanked mark, files with digests.
    page.click("header >> text=Registry")
    table = page.locator("#artifacts-table")
    expect(table).to_contain_text("vision/digits-cnn-torch")
    expect(table.locator("a.yanked")).to_have_text("1.0.0 (yanked)")
    page.click("text=vision/digits-cnn-onnx >> xpath=../td[3]/a")
    expect(page.locator("h1")).to_have_text("model/vision/digits-cnn-onnx@1.0.0")
    digest = page.locator("#files-table td.mono a").first.inner_text()
    assert re.fullmatch(r"[0-9a-f]{64}", digest)
    expect(page.locator("#manifest")).to_contain_text('"name": "vision/digits-cnn-onnx"')
    shot(page, "artifact")

    # Start the evaluation: resolve first, then run both models.
    fill_evaluation(page, MODELS)
    page.click("#resolve")
    resolution = page.locator("#resolution")
    expect(resolution).to_contain_text("framework/onnxruntime@1.31.0")
    expect(resolution).to_contain_text("framework/torch@2.13.0")
    shot(page, "resolution")
    page.click("#run")
    expect(page.locator("h1")).to_have_text("Comparing 2 runs")
    shot(page, "progress")
    page.wait_for_selector("#downloads", timeout=RUN_TIMEOUT_MS)  # the page refreshes itself

    # The comparison: both succeeded, metrics side by side, what differs named, plots drawn.
    statuses = page.locator("#runs td.status-succeeded")
    expect(statuses).to_have_count(2)
    p50 = page.locator("#metrics-table tr", has_text="latency_p50").locator("td.num")
    expect(p50).to_have_count(2)
    assert all(float(v.replace(",", "")) > 0 for v in p50.all_inner_texts())
    expect(page.locator("#differs")).to_contain_text("model, framework")
    expect(page.locator("#diff-table")).to_contain_text("lockfile.environment.framework")
    assert rendered_charts(page) == ["cdf", "histogram"]
    expect(page.locator("#chart-sweep")).to_contain_text("no batch-size sweep here")
    shot(page, "compare")
    compare_url = page.url

    # Each run's lockfile, as pinned.
    page.locator("#downloads a", has_text="lockfile").first.click()
    expect(page.locator("#lockfile-summary")).to_contain_text("vision/digits-cnn-onnx@1.0.0")
    expect(page.locator("#lockfile-summary")).to_contain_text("onnxruntime@1.31.0")
    page.goto(compare_url)

    # The HTML report, downloaded and opened with no network.
    with page.expect_download() as download:
        page.click("#download-html")
    report = tmp_path / "report.html"
    download.value.save_as(report)
    offline = browser.new_context(offline=True)
    requests: list[str] = []
    offline.on("request", lambda r: requests.append(r.url))
    opened = offline.new_page()
    opened.goto(report.as_uri())
    assert rendered_charts(opened) == ["cdf", "histogram"]
    expect(opened.locator("#metrics-table")).to_contain_text("latency_p50")
    shot(opened, "report-offline")
    assert requests == [report.as_uri()]  # nothing else was asked for
    offline.close()
    context.close()


def test_sweep_and_accuracy_plots_from_the_page(browser: Browser, server: Server) -> None:
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    login(page, server, "owner")
    fill_evaluation(page, MODELS[:1], batch_sizes="1, 8")
    page.select_option("#scenario", "Offline")
    page.click("#resolve")
    expect(page.locator("#resolution")).to_contain_text("1, 8")
    page.click("#run")
    page.wait_for_selector("#downloads", timeout=RUN_TIMEOUT_MS)
    assert "sweep" in rendered_charts(page)
    shot(page, "sweep")
    page.close()


BAD_FORMS: list[tuple[str, dict[str, Any], int, str]] = [
    ("unparsable range", {"models": ["vision/digits-cnn-onnx@^^1"]}, 400,
     "model: invalid version range '^^1'"),
    ("no model", {"models": []}, 400, "models: name at least one model"),
    ("bad batch size", {"batch_sizes": "1, x"}, 400, "batch sizes: 'x' is not a whole number"),
    ("no such model", {"models": ["vision/nothing@^1"]}, 400, "vision/nothing"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("label", "change", "status", "message"), BAD_FORMS, ids=[b[0] for b in BAD_FORMS]
)
def test_a_bad_form_says_what_is_wrong(
    browser: Browser, server: Server, label: str, change: dict[str, Any], status: int, message: str
) -> None:
    page = browser.new_page()
    login(page, server, "owner")
    models = change.pop("models", MODELS[:1])
    fill_evaluation(page, models, **{k: v for k, v in change.items() if k != "models"})
    if not models:
        page.fill("#models", "")
    with page.expect_response(lambda r: r.url.endswith("/ui/evaluate")) as answer:
        page.click("#resolve")
    assert answer.value.status == status
    expect(page.locator("#problem")).to_contain_text(message)
    assert "Traceback" not in page.content()
    expect(page.locator("#models")).to_have_value("\n".join(models))  # the form is kept
    page.close()


@pytest.mark.parametrize(
    ("path", "status", "message"),
    [
        ("/ui/runs/no-such-run", 404, "no run 'no-such-run'"),
        ("/ui/compare", 400, "a report needs at least one run"),
        ("/ui/report?run=no-such-run&format=html", 404, "no run 'no-such-run'"),
        ("/ui/lockfiles/0000", 404, "no lockfile 0000"),
        ("/ui/artifacts/model/vision/nothing@1.0.0", 404, "vision/nothing"),
    ],
)
def test_bad_addresses_are_pages_naming_the_problem(
    browser: Browser, server: Server, path: str, status: int, message: str
) -> None:
    page = browser.new_page()
    response = page.goto(server.url + path)
    assert response is not None and response.status == status
    expect(page.locator("#problem")).to_contain_text(message)
    assert "Traceback" not in page.content()
    page.close()


def test_running_needs_a_token_and_changes_nothing(browser: Browser, server: Server) -> None:
    with server.client("admin") as c:
        before = len(c.get("/api/v1/runs").json())
    page = browser.new_page()
    page.goto(server.url + "/ui/evaluate")
    fill_evaluation(page, MODELS[:1])
    page.click("#resolve")  # reading is public
    expect(page.locator("#resolution")).to_contain_text("model/vision/digits-cnn-onnx@1.0.0")
    page.click("#run")
    expect(page.locator("#problem")).to_contain_text("needs a token with the 'run' scope")
    expect(page.locator("text=Log in with an API token")).to_be_visible()
    page.close()
    with server.client("admin") as c:
        assert len(c.get("/api/v1/runs").json()) == before


def test_a_form_from_another_site_is_refused(server: Server) -> None:
    response = httpx.post(
        f"{server.url}/ui/evaluate",
        data={"models": MODELS[0], "dataset": DATASET, "action": "run"},
        headers={
            "Origin": "http://evil.example",
            "Authorization": f"Bearer {server.tokens['owner']}",
        },
    )
    assert response.status_code == 403
    assert "a form from http://evil.example may not act on this server" in response.text
