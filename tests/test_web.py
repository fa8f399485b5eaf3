"""The web UI in a real browser: Debian's Chromium, headless, driven by Playwright, against a
real ``pinbench serve``. The catalog is published through the API; a run is started from the
page; the comparison and its plots are checked; the HTML report is downloaded and opened with
the network cut off; the cluster's systems and a comparison across them are shown, their
agents' facts as text. Screenshots go to test-artifacts/screenshots (or $PINBENCH_ARTIFACTS).

Chromium comes from Debian (``scripts/install-system-deps.sh``); Playwright's own browser
download is not used. Without Chromium these tests fail, never skip.
"""

from __future__ import annotations

import html
import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import Browser, ConsoleMessage, Page, expect, sync_playwright

from pinbench.api.hosts import AllowedHosts
from pinbench.remote import Remote
from pinbench.reports.render import policy as report_policy
from tests.apiserver import Server, api_server
from tests.helpers import Cli
from tests.services import unavailable
from tests.test_cross_system import HOSTILE_CPU, HOSTILE_LIBRARY, cross_system_runs

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


def watch_policy(page: Page) -> list[str]:
    """What the browser reports against the page's Content-Security-Policy (it logs each
    refusal to the console), and any script error: the caller asserts it stays empty."""
    seen: list[str] = []

    def console(message: ConsoleMessage) -> None:
        if "Content Security Policy" in message.text or "Refused to" in message.text:
            seen.append(message.text)

    page.on("console", console)
    page.on("pageerror", lambda error: seen.append(f"script error: {error}"))
    return seen


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
    violations = watch_policy(page)
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
    p50 = page.locator(
        "#metrics-table tr",
        has=page.locator("th", has_text=re.compile(r"^p50 latency, LoadGen \(latency_p50_ns\)$")),
    ).locator("td.num")
    expect(p50).to_have_count(2)
    assert all(float(v.replace(",", "")) > 0 for v in p50.all_inner_texts())
    # LoadGen's latencies and the framework call's, each under its own name, both defined
    framework = page.locator(
        "#metrics-table tr",
        has=page.locator(
            "th", has_text=re.compile(r"^p50 latency, framework call \(framework_latency_p50_ns\)$")
        ),
    ).locator("td.num")
    expect(framework).to_have_count(2)
    expect(page.locator("#latency-definitions")).to_contain_text("LoadGen's percentile")
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
    violations += watch_policy(opened)
    opened.goto(report.as_uri())
    assert rendered_charts(opened) == ["cdf", "histogram"]
    expect(opened.locator("#metrics-table")).to_contain_text(
        "p50 latency, LoadGen (latency_p50_ns)"
    )
    shot(opened, "report-offline")
    assert requests == [report.as_uri()]  # nothing else was asked for
    offline.close()
    context.close()
    assert violations == []  # the UI, the plots and the report run under their policies


def test_sweep_and_accuracy_plots_from_the_page(browser: Browser, server: Server) -> None:
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    violations = watch_policy(page)
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
    assert violations == []


@pytest.fixture(scope="module")
def systems(server: Server) -> Iterator[dict[str, str]]:
    """lab-a and lab-b registered (lab-a's facts carry HTML) and one run of the digits
    logistic regression on each, plus one on the server's own machine (``local``): recorded
    in the server's database as the server records runs on agents, with no Ray cluster."""
    ws = server.workspace()
    try:
        yield cross_system_runs(ws)
    finally:
        ws.close()


def watch_dialogs(page: Page) -> list[str]:
    """Alerts the page opened (an injected script would): the caller asserts none."""
    seen: list[str] = []

    def dialog(d: Any) -> None:
        seen.append(d.message)
        d.dismiss()

    page.on("dialog", dialog)
    return seen


def test_systems_pages_show_each_systems_hardware_and_runs(
    browser: Browser, server: Server, systems: dict[str, str]
) -> None:
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    violations, dialogs = watch_policy(page), watch_dialogs(page)
    page.goto(f"{server.url}/ui/")
    page.click("header >> text=Systems")
    rows = page.locator("#systems-table tbody tr")
    expect(rows).to_have_count(2)
    for row, name, cpu, runs in ((0, "lab-a", HOSTILE_CPU, "1"), (1, "lab-b", "AMD EPYC", "1")):
        cells = rows.nth(row).locator("td")
        expect(cells.nth(0)).to_have_text(name)
        expect(cells.nth(1)).to_have_text("unknown")  # this server has no cluster to ask
        expect(cells.nth(3)).to_contain_text(cpu)  # shown as text, never run
        expect(rows.nth(row).locator("td.num")).to_have_text(runs)
    expect(rows.nth(0)).to_contain_text(f"cuda, {HOSTILE_LIBRARY}")
    expect(rows.nth(0)).to_contain_text("NVIDIA A100-SXM4-80GB")
    assert page.locator("main script, main img").count() == 0
    shot(page, "systems")

    page.click("#systems-table >> text=lab-a")
    expect(page.locator("h1")).to_have_text("System lab-a")
    expect(page.locator("#system-alive")).to_have_text("unknown")
    expect(page.locator("#system-summary")).to_contain_text("node-lab-a")
    expect(page.locator("#system-facts")).to_contain_text("avx2, avx512f")
    expect(page.locator("#system-facts")).to_contain_text(HOSTILE_CPU)
    recent = page.locator("#runs-table")
    expect(recent.locator("tbody tr")).to_have_count(1)
    expect(recent).to_contain_text(systems["lab-a"][:8])
    shot(page, "system")
    # a run's id is never broken inside, however narrow the window (it wrapped mid-id)
    page.set_viewport_size({"width": 360, "height": 900})
    run_link = recent.locator("td a[href^='/ui/runs/']").first
    expect(run_link).to_have_text(systems["lab-a"][:8])
    assert run_link.evaluate("e => e.getClientRects().length") == 1
    page.close()
    assert dialogs == [] and violations == []


def test_comparing_runs_across_systems(
    browser: Browser, server: Server, systems: dict[str, str]
) -> None:
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    violations, dialogs = watch_policy(page), watch_dialogs(page)
    query = "&".join(f"run={systems[w]}" for w in ("lab-a", "lab-b", "local"))
    page.goto(f"{server.url}/ui/compare?{query}")
    expect(page.locator("#downloads")).to_be_visible()
    differ = page.locator("#systems-differ")
    expect(differ).to_contain_text("These runs ran on 3 systems (lab-a, lab-b, ")
    expect(differ).to_contain_text("whose hardware differs in CPU model, cores, memory, GPU model")
    system_row = page.locator("#runs td.system")
    expect(system_row).to_have_count(3)
    expect(system_row.nth(2)).to_have_text(re.compile(r".+ \(local\)$"))
    expect(system_row.locator("a")).to_have_count(2)  # the cluster systems link to their page
    expect(page.locator("#hardware-table tr.hardware-differs")).to_have_count(7)
    expect(page.locator("#hardware-table")).to_contain_text(HOSTILE_CPU)
    assert "systems" in rendered_charts(page)
    shot(page, "compare-systems")
    system_row.locator("a", has_text="lab-b").click()
    expect(page.locator("h1")).to_have_text("System lab-b")
    page.close()
    assert dialogs == [] and violations == []


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
        ("/ui/systems/lab-z", 404, "no system named 'lab-z'"),
        ("/ui/systems/Not%20A%20Name", 404, "no system named 'Not A Name'"),
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
    expect(page.locator("#run")).to_have_count(0)  # no button that could only answer 401
    expect(page.locator("#run-needs-scope")).to_contain_text("needs a token with the 'run' scope")
    page.close()
    posted = httpx.post(  # the form posted anyway (a stale page): refused, nothing queued
        f"{server.url}/ui/evaluate",
        data={"models": MODELS[0], "dataset": DATASET, "action": "run", "runner": "local"},
        headers={"Origin": server.url},
    )
    assert posted.status_code == 401
    assert "needs a token with the 'run' scope" in html.unescape(posted.text)
    with server.client("admin") as c:
        assert len(c.get("/api/v1/runs").json()) == before


def run_count(server: Server) -> int:
    with server.client("admin") as c:
        return len(c.get("/api/v1/runs").json())


def post_run_form(server: Server, headers: dict[str, str]) -> httpx.Response:
    """The evaluation form, action "run", by a caller allowed to run (a bearer token: the
    origin check holds whatever the credentials)."""
    return httpx.post(
        f"{server.url}/ui/evaluate",
        data={"models": MODELS[0], "dataset": DATASET, "action": "run", "runner": "local"},
        headers={"Authorization": f"Bearer {server.tokens['owner']}", **headers},
    )


def own(server: Server) -> str:
    return server.url  # http://127.0.0.1:PORT


CROSS_ORIGIN: list[tuple[str, str | None, str]] = [
    ("another site", "http://evil.example", "a form from http://evil.example may not act"),
    ("opaque (sandboxed frame, file or data: page)", "null",
     "a form from an opaque origin (Origin: null) may not act"),
    ("no Origin header", None, "a form posted without an Origin header may not act"),
    ("same host, another port", "http://127.0.0.1:1", "a form from http://127.0.0.1:1 may not act"),
    ("same host, https", "https://127.0.0.1", "a form from https://127.0.0.1 may not act"),
    ("an origin with a path", "{own}/ui", "a form from {own}/ui may not act"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("label", "origin", "message"), CROSS_ORIGIN, ids=[c[0] for c in CROSS_ORIGIN]
)
def test_a_form_not_from_this_server_is_refused_and_queues_nothing(
    server: Server, label: str, origin: str | None, message: str
) -> None:
    before = run_count(server)
    headers = {} if origin is None else {"Origin": origin.format(own=own(server))}
    response = post_run_form(server, headers)
    assert response.status_code == 403
    expected = f"{message.format(own=own(server))} on this server (its own origin is {own(server)}"
    assert expected in response.text
    assert run_count(server) == before


def test_logging_in_and_out_need_this_server_as_origin(server: Server) -> None:
    for path, data in (("/ui/login", {"token": server.tokens["owner"]}), ("/ui/logout", {})):
        response = httpx.post(f"{server.url}{path}", data=data, headers={"Origin": "null"})
        assert response.status_code == 403, path
        assert "Origin: null" in response.text
        assert "set-cookie" not in response.headers  # no session given, none taken away


def test_a_form_from_this_server_is_accepted(server: Server) -> None:
    """The control: the same form, from the server's own origin, does reach the form (here
    with a model that does not resolve, so nothing runs)."""
    response = httpx.post(
        f"{server.url}/ui/evaluate",
        data={"models": "vision/nothing@^1", "dataset": DATASET, "action": "resolve"},
        headers={"Origin": own(server)},
    )
    assert response.status_code == 400
    assert "vision/nothing" in response.text


@pytest.mark.parametrize("path", ["/ui/", "/api/v1/health", "/api/v1/runs", "/schema/swagger"])
def test_a_request_naming_another_host_is_refused(server: Server, path: str) -> None:
    """DNS rebinding: a page on evil.example whose name resolves to the server's address
    reaches it with ``Host: evil.example``."""
    response = httpx.get(f"{server.url}{path}", headers={"Host": "evil.example:8000"})
    assert response.status_code == 400
    text = html.unescape(response.text)  # a problem+json, or the UI's error page
    assert "this server does not answer to the Host 'evil.example:8000'" in text
    assert "pinbench serve --allowed-host NAME" in text


def test_a_rebound_form_is_refused_by_its_host_and_queues_nothing(server: Server) -> None:
    """The rebinding page posts from its own origin, which then equals its Host: the Host
    check refuses it."""
    before = run_count(server)
    response = post_run_form(server, {"Host": "evil.example", "Origin": "http://evil.example"})
    assert response.status_code == 400
    assert "does not answer to the Host 'evil.example'" in html.unescape(response.text)
    assert run_count(server) == before


SERVER_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "font-src 'self'; connect-src 'self'; form-action 'self'; base-uri 'none'; "
    "frame-ancestors 'none'"
)


@pytest.mark.parametrize(
    ("path", "status"),
    [
        ("/ui/", 200),
        ("/ui/artifacts", 200),
        ("/ui/evaluate", 200),
        ("/ui/systems", 200),
        ("/ui/runs/no-such-run", 404),
        ("/api/v1/health", 200),
        ("/api/v1/artifacts", 200),
        ("/api/v1/runs/no-such-run", 404),
        ("/schema/swagger", 200),
        ("/schema/openapi.json", 200),
        ("/static/charts.js", 200),
        ("/no/such/page", 404),
    ],
)
def test_every_response_carries_the_security_headers(
    server: Server, path: str, status: int
) -> None:
    response = httpx.get(f"{server.url}{path}")
    assert response.status_code == status
    assert response.headers["content-security-policy"] == SERVER_POLICY
    assert response.headers["x-content-type-options"] == "nosniff"
    assert response.headers["x-frame-options"] == "DENY"
    assert response.headers["referrer-policy"] == "same-origin"


def test_a_served_html_report_carries_its_own_policy(server: Server) -> None:
    """The control of the origin tests too: the run form from the server's own origin queues."""
    before = run_count(server)
    queued = post_run_form(server, {"Origin": own(server)})
    assert queued.status_code == 302
    assert run_count(server) == before + 1
    run_id = queued.headers["location"].split("run=")[1]
    with server.client("owner") as c:
        response = c.get("/api/v1/reports", params={"run": run_id, "format": "html"})
    assert response.status_code == 200
    policy = response.headers["content-security-policy"]
    assert policy == f"{report_policy()}; frame-ancestors 'none'"
    assert "script-src 'sha256-" in policy and "'self'" not in policy
    assert response.headers["x-frame-options"] == "DENY"
    assert response.headers["x-content-type-options"] == "nosniff"


def test_the_docs_page_renders_under_the_policy(browser: Browser, server: Server) -> None:
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    violations = watch_policy(page)
    page.goto(f"{server.url}/schema/swagger")
    expect(page.locator(".swagger-ui .info .title")).to_contain_text("pinbench")
    expect(page.locator(".opblock-summary-path", has_text="/api/v1/health")).to_be_visible()
    shot(page, "swagger")
    page.close()
    assert violations == []


def test_the_ui_cannot_be_framed(browser: Browser, server: Server, tmp_path: Path) -> None:
    """A page elsewhere (here a file) that frames the UI gets an empty frame, and the browser
    names the policy that refused it."""
    framing = tmp_path / "frame.html"
    framing.write_text(f'<iframe id="f" src="{server.url}/ui/"></iframe>')
    page = browser.new_page()
    with page.expect_console_message(lambda m: "frame-ancestors 'none'" in m.text) as refused:
        page.goto(framing.as_uri())
    assert refused.value.text.startswith(f"Framing '{server.url}/' violates")
    assert "The request has been blocked" in refused.value.text
    expect(page.frame_locator("#f").locator("header .brand")).to_have_count(0)
    page.close()


HOSTS: list[tuple[list[str], str, bool, str]] = [
    (["127.0.0.1"], "127.0.0.1:8000", True, "the port is not part of the name"),
    (["localhost"], "LOCALHOST", True, "names are case-insensitive"),
    (["::1"], "[::1]:8000", True, "an IPv6 address, bare or bracketed"),
    (["bench.example.org"], "bench.example.org.", True, "a trailing dot is the same name"),
    (["bench.example.org"], "evil.example", False, "another name"),
    (["127.0.0.1"], "127.0.0.1.evil.example", False, "a name that starts like an allowed one"),
    (["*.example.org"], "a.b.example.org", True, "a subdomain"),
    (["*.example.org"], "example.org", False, "*. is subdomains only"),
    (["*.example.org"], "evilexample.org", False, "not a subdomain"),
    (["*"], "anything.test", True, "* allows any name"),
    (["localhost"], "", False, "no Host header"),
    (["localhost"], "localhost:http", False, "a bad port"),
]  # fmt: skip


@pytest.mark.parametrize(("patterns", "header", "allowed", "why"), HOSTS, ids=[h[3] for h in HOSTS])
def test_allowed_host_patterns(patterns: list[str], header: str, allowed: bool, why: str) -> None:
    assert AllowedHosts.of(patterns).allows(header) is allowed


@pytest.mark.parametrize("pattern", ["http://bench.example.org", "bench/x", "a*.example.org"])
def test_serve_refuses_a_bad_allowed_host(cli: Cli, pattern: str) -> None:
    result = cli("serve", "--allowed-host", pattern)
    assert result.code == 1
    assert f"invalid allowed host {pattern!r}: expected a host name" in result.err


def test_behind_a_reverse_proxy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A TLS-terminating proxy on the same machine forwards the public name in Host and the
    scheme in X-Forwarded-Proto; the operator names the public host (option or environment)
    and says to trust the scheme the proxy forwards (decision 150)."""
    monkeypatch.setenv("PINBENCH_ALLOWED_HOSTS", "*.proxy.test")
    monkeypatch.setenv("PINBENCH_TRUST_FORWARDED_PROTO", "1")
    with api_server(
        tmp_path / "home", f"sqlite:///{tmp_path}/db", "--allowed-host", "bench.example.org"
    ) as srv:
        for host in ("bench.example.org", "a.proxy.test", "127.0.0.1"):
            assert httpx.get(f"{srv.url}/api/v1/health", headers={"Host": host}).status_code == 200
        assert httpx.get(f"{srv.url}/api/v1/health", headers={"Host": "x.test"}).status_code == 400
        proxied = {"Host": "bench.example.org", "X-Forwarded-Proto": "https"}
        form = {"models": "vision/nothing@^1", "dataset": DATASET, "action": "resolve"}
        ok = httpx.post(
            f"{srv.url}/ui/evaluate",
            data=form,
            headers={**proxied, "Origin": "https://bench.example.org"},
        )
        assert ok.status_code == 400 and "vision/nothing" in ok.text  # the form was read
        plain = httpx.post(
            f"{srv.url}/ui/evaluate",
            data=form,
            headers={**proxied, "Origin": "http://bench.example.org"},
        )
        assert plain.status_code == 403
        assert "its own origin is https://bench.example.org" in plain.text


def test_run_lists_name_each_runs_kind_and_its_tasks_headline_metric(server: Server) -> None:
    """An operator run was listed as "SingleStream (performance)" (its lockfile's default
    scenario), and the list's accuracy column knew only top-1."""
    from pinbench.evaluator.records.run_view import show_run
    from pinbench.evaluator.run import run_lockfile
    from pinbench.registry import service
    from pinbench.registry.request import parse_request
    from tests.helpers import run_digits

    operator = {
        "operator": {"op": "matmul", "params": {"m": 8, "n": 8, "k": 8}, "samples": 3},
        "framework": "onnxruntime@*",
        "threads": 1,
    }
    ws = server.workspace()
    try:
        accuracy = run_digits(ws)
        top1 = show_run(ws, accuracy)["top1"]
        lock = service.lock(ws, parse_request(operator))[0]
        op_run = run_lockfile(ws, lock, say=lambda _: None).id
    finally:
        ws.close()
    with server.client("reader") as c:
        page = c.get("/ui/runs")
    assert page.status_code == 200
    table = page.text.split('id="runs-table"', 1)[1]
    assert "<th>kind</th>" in table and "<th>accuracy</th>" in table
    rows = {r.split("/ui/runs/", 1)[1][:36]: r for r in table.split("<tr>")[2:]}
    assert "<td>operator</td>" in rows[op_run]
    assert "SingleStream" not in rows[op_run]
    assert "<td>SingleStream accuracy</td>" in rows[accuracy]
    assert f'<td class="num">top-1 {top1:.4f}</td>' in rows[accuracy]


# ---------------------------------------------------------------- what the pages say (issue 48)


def _section(text: str, section: str) -> str:
    """The HTML of ``<section id=SECTION>`` of a page."""
    start = text.index(f'<section id="{section}">')
    return text[start : text.index("</section>", start)]


def _shown_ns(value: float) -> str:
    """A latency as ``runs show`` prints it: microseconds below a millisecond, else ms."""
    return f"{value / 1e3:,.1f} µs" if value < 1e6 else f"{value / 1e6:,.2f} ms"


def test_a_runs_page_labels_its_figures_as_runs_show_does(
    server: Server,
    systems: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """It showed the keys (``loadgen_valid_bool``, ``latency_p99_9``) and ``0.005458 ms``
    where ``runs show`` says ``LoadGen verdict VALID``, ``p99.9`` and ``5.5 µs``."""
    from pinbench.evaluator.records.run_view import show_run
    from tests.helpers import in_process_cli

    run_id = systems["local"]  # an Offline performance run recorded by this server's code
    ws = server.workspace()
    try:
        info = show_run(ws, run_id)
    finally:
        ws.close()
    with server.client("reader") as c:
        answer = c.get(f"/ui/runs/{run_id}")
    assert answer.status_code == 200
    metrics = html.unescape(_section(answer.text, "metrics"))
    for key in ("latency_p50_ns", "latency_p99_9_ns", "latency_max_ns"):
        label = key.removeprefix("latency_").removesuffix("_ns").replace("p99_9", "p99.9")
        framework = info.get(f"framework_{key}")
        expected = f'<td class="num">{_shown_ns(info[key])}</td>'
        expected += f'<td class="num">{"" if framework is None else _shown_ns(framework)}</td>'
        assert f"<tr><th>{label}</th>{expected}</tr>" in metrics
    verdict = "VALID" if info["loadgen_valid_bool"] else "INVALID"
    assert f'<tr><th>LoadGen verdict</th><td class="num">{verdict}</td></tr>' in metrics
    throughput = f"{info['throughput_sps']:,.0f} samples/s"
    # LoadGen's throughput, named so (decision 275): the framework calls' has its own row
    assert f'<tr><th>throughput, LoadGen</th><td class="num">{throughput}</td></tr>' in metrics
    for raw in ("loadgen_valid_bool", "latency_p99_9", "throughput_sps", "_ns", "<td>ms</td>"):
        assert raw not in metrics

    # every row the page shows is a line `runs show` prints, label and value alike
    cli = in_process_cli(monkeypatch, capsys, server.home, server.database_url)
    shown = cli("runs", "show", run_id)
    assert shown.code == 0, shown.err
    printed = " ".join(shown.out.split())  # a long value wraps onto the next line there
    rows = re.findall(r"<tr><th>([^<]*)</th>((?:<td[^>]*>[^<]*</td>)+)</tr>", metrics)
    assert len(rows) > 10
    for label, cells in rows:
        values = tuple(v.strip() for v in re.findall(r"<td[^>]*>([^<]*)</td>", cells) if v)
        assert " ".join([label, *values]) in printed, f"{label} {values} not in:\n{shown.out}"


def _add_run(server: Server, status: str, error: str) -> str:
    """A run row of the digits model with ``status`` and ``error``, started now, written as
    the server writes one (its lockfile stored, its listing columns filled)."""
    import uuid
    from datetime import UTC, datetime

    from pinbench.db.models import Run as RunRow
    from pinbench.evaluator.records.run_filter import listing_columns
    from pinbench.registry import service
    from pinbench.registry.request import parse_request

    run_id = str(uuid.uuid4())
    ws = server.workspace()
    try:
        request = {"model": MODELS[0], "dataset": DATASET}
        lock = service.lock(ws, parse_request(request))[0]
        now = datetime.now(UTC)
        with ws.transaction() as session:  # the lockfile is stored by lock()
            session.add(
                RunRow(
                    id=run_id,
                    lockfile_digest=lock.digest.hex,
                    status=status,
                    runner="local",
                    started_at=now,
                    finished_at=now,
                    host={},
                    error=error,
                    **listing_columns(lock),
                )
            )
    finally:
        ws.close()
    return run_id


def test_the_runs_list_says_why_a_run_ended_in_short(server: Server) -> None:
    """The list said ``failed`` or ``interrupted`` and nothing more: now the reason's first
    line (escaped), cut, with the whole of it on the run's page."""
    tail = 'Traceback (most recent call last):\n  File "<frozen runpy>", line 198\nBoom'
    failed = _add_run(server, "failed", f"the evaluator <b>died</b> on import\n{tail}")
    long = "the server stopped before this run finished; " + "x" * 400
    interrupted = _add_run(server, "interrupted", long)
    cancelled = _add_run(server, "cancelled", "cancelled by owner")
    with server.client("reader") as c:
        listing = c.get("/ui/runs").text
        page = c.get(f"/ui/runs/{failed}").text
    table = listing.split('id="runs-table"', 1)[1]
    rows = {r.split("/ui/runs/", 1)[1][:36]: r for r in table.split("<tr>")[2:]}
    row = rows[failed]
    assert "the evaluator &lt;b&gt;died&lt;/b&gt; on import …" in row  # escaped, never markup
    assert "<b>died" not in row and "Traceback" not in row and "frozen" not in row
    assert f'<a href="/ui/runs/{failed}#runs">(full reason)</a>' in row
    assert "&lt;frozen runpy&gt;" in page and "Boom" in page  # the run's page has it all
    cut = html.unescape(rows[interrupted].split('class="reason">', 1)[1].split(" <a", 1)[0])
    assert cut == long[:159] + "…"
    assert "cancelled by owner</div>" in rows[cancelled]  # short: whole, no link
    assert "(full reason)" not in rows[cancelled]


def test_the_registry_page_is_paged_by_names(server: Server) -> None:
    """3,203 datasets were one page of 590 KB: a page holds NAMES_PAGE names, "more names"
    goes on past the last one, and every name is on exactly one page."""
    from datetime import UTC, datetime

    from sqlalchemy import delete

    from pinbench.db.models import Artifact
    from pinbench.registry.catalog import list_artifacts
    from pinbench.registry.names import Kind
    from pinbench.web.pages import NAMES_PAGE

    assert NAMES_PAGE == 100  # as many as runs on a page of /ui/runs
    added = [f"paging/ds-{i:03d}" for i in range(2 * NAMES_PAGE + 17)]
    ws = server.workspace()
    try:
        with ws.transaction() as session:
            for name in added:
                session.add(
                    Artifact(
                        kind="dataset",
                        name=name,
                        namespace="paging",
                        version="1.0.0",
                        manifest={},
                        manifest_digest="0" * 64,
                        requires=[],
                        publisher="test",
                        published_at=datetime.now(UTC),
                    )
                )
        expected = sorted({s.name for s in list_artifacts(ws, Kind.DATASET)})
        assert len(expected) > 2 * NAMES_PAGE
        seen: list[str] = []
        url: str | None = "/ui/artifacts?kind=dataset"
        pages = 0
        with server.client("reader") as c:
            while url is not None:
                answer = c.get(html.unescape(url))
                assert answer.status_code == 200
                names = re.findall(r"<tr><td>dataset</td><td>([^<]+)</td>", answer.text)
                assert len(names) <= NAMES_PAGE
                seen += names
                pages += 1
                more = re.search(r'<a href="([^"]+)" id="more-names">', answer.text)
                url = more.group(1) if more else None
            assert pages == 3 and sorted(seen) == expected and len(seen) == len(expected)
            found = c.get("/ui/artifacts", params={"kind": "dataset", "q": "ds-01"}).text
            assert re.findall(r"<td>(paging/ds-01\d)</td>", found) == [
                f"paging/ds-01{i}" for i in range(10)
            ]
            assert 'id="more-names"' not in found
            literal = c.get("/ui/artifacts", params={"q": "ds_0"}).text  # "_" is no wildcard
            assert "paging/" not in literal and "Nothing published matches" in literal
            bad = c.get("/ui/artifacts", params={"after": "widget/x"})
            assert bad.status_code == 400 and "unknown kind" in html.unescape(bad.text)
    finally:
        with ws.transaction() as session:
            session.execute(delete(Artifact).where(Artifact.namespace == "paging"))
        ws.close()
